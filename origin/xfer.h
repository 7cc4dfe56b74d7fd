/* xfer.h - HTTP(S) transfers for the http and s3 backends, on libcurl.
 *
 * Owns a pool of curl easy handles sharing one connection cache, DNS cache
 * and TLS session cache, so any number of threads can transfer at once and
 * connections are reused. Every call retries per retry.h (timeouts, resets,
 * short bodies, 5xx, 429 with Retry-After), then fails with -EIO; it never
 * returns a short or unchecked body. Counts origin requests/bytes/errors in
 * pfs_stats. Never logs credentials or signed headers.
 * Thread-safe after creation.
 */
#ifndef PFS_XFER_H
#define PFS_XFER_H

#include <stddef.h>
#include <stdint.h>

#include "origin.h" /* struct pfs_origin_spill */

struct pfs_xfer_opts {
	double timeout; /* seconds per attempt */
	int retries;    /* attempts after the first */
	uint64_t bandwidth; /* bytes/s over all ranged GETs together; 0: no cap */
	/* S3 signing: all NULL for plain HTTP. Copied by pfs_xfer_create(). */
	const char *sigv4;         /* CURLOPT_AWS_SIGV4 value, "aws:amz:REGION:s3" */
	const char *userpwd;       /* "ACCESS_KEY:SECRET_KEY" */
	const char *session_token; /* sent as X-Amz-Security-Token */
	/* Read atomically; non-zero: the daemon is stopping, so transfers in
	 * flight end within about a second (libcurl's progress callback),
	 * nothing is retried, and every call fails (-EIO). NULL: never. Must
	 * outlive the xfer. */
	const int *stop;
};

struct pfs_xfer;

int pfs_xfer_create(const struct pfs_xfer_opts *opts, struct pfs_xfer **out);
void pfs_xfer_destroy(struct pfs_xfer *x);

/* GET bytes [off, off+len) of the object at url (already escaped), whose
 * size is `size`. Accepts 206 with a Content-Range naming exactly that
 * range and total `size`, or 200 with the whole object (a server that
 * ignores Range: the asked part is cut from it; see respcheck.h). `etag`
 * as in pfs_origin_read(). spill (may be NULL; zeroed by the caller): on
 * a 200, the bytes after the asked range are kept there as far as
 * PFS_ORIGIN_SPILL_MAX and the process-wide PFS_ORIGIN_SPILL_TOTAL allow;
 * on any error it is left empty. deadline_ns: as in struct pfs_origin_req
 * (0: none). */
int pfs_xfer_get_range(struct pfs_xfer *x, const char *url, uint64_t size,
		       uint64_t off, size_t len, void *buf, char *etag,
		       struct pfs_origin_spill *spill, uint64_t deadline_ns);
/* Frees a spill's bytes and gives them back to the process-wide bound;
 * leaves it empty. Any thread. */
void pfs_xfer_spill_release(struct pfs_origin_spill *spill);

/* GET a whole small resource (manifest, listing page, index page) into a
 * new NUL-terminated buffer the caller frees; at most `cap` bytes (more is
 * -EFBIG). 404 -> -ENOENT, 403 -> -EACCES. */
int pfs_xfer_get(struct pfs_xfer *x, const char *url, size_t cap,
		 char **body, size_t *len);

/* HEAD: Content-Length into *size, Last-Modified into *mtime (-1 if none),
 * ETag into etag (PFS_ETAG_MAX buffer, may be NULL). An answer without a
 * Content-Length is retried like a short body, then -EIO. */
int pfs_xfer_head(struct pfs_xfer *x, const char *url, uint64_t *size,
		  int64_t *mtime, char *etag);

/* Percent-encodes s as SigV4 and RFC 3986 want: every byte except
 * A-Z a-z 0-9 - . _ ~ (and '/' when keep_slash). Returns a new string the
 * caller frees, or NULL on ENOMEM. */
char *pfs_url_escape(const char *s, int keep_slash);

#endif
