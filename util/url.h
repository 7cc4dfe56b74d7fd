/* url.h - URLs as they may be shown: in logs, errors, stats and the
 * mount's fsname (/proc/mounts); a piece of decoding them. Pure, any
 * thread. */
#ifndef PFS_URL_H
#define PFS_URL_H

#include <stddef.h>

/* Copies url into out without its userinfo ("user:password@") and without
 * its query string and fragment (they may carry signatures), truncated to
 * cap - 1 bytes. Strings without "scheme://" are copied as they are, minus
 * any query. */
void pfs_url_redact(const char *url, char *out, size_t cap);

/* The value of one hex digit (either case), or -1: for percent-decoding. */
int pfs_url_hexval(int c);

#endif
