/* validator.h - what identifies one version of an object's content.
 *
 * prestofs never serves a file assembled from two versions. Each response
 * from an origin yields a validator string; the first response for a file
 * pins it (fs/), and every later block must come with the same one. The
 * string forms, which never collide:
 *   "\"abc\"" or "W/\"abc\""  an ETag, quotes normalised (compared as is:
 *                             a weak ETag matches only the same weak ETag)
 *   "lm:1700000000"           no ETag: Last-Modified, in seconds
 *   "-"                       neither: only the size can be checked
 * The total length is checked beside it (Content-Range against the listed
 * size), so a validator always goes with that length.
 * Pure functions, any thread.
 */
#ifndef PFS_VALIDATOR_H
#define PFS_VALIDATOR_H

#include <stddef.h>

#define PFS_VALIDATOR_NONE "-"

/* Builds the validator of a response from its ETag and Last-Modified
 * header values ("" or NULL when absent) into out (cap bytes). Returns 0,
 * or -EINVAL for an ETag that is malformed (control characters, an
 * unbalanced quote) or does not fit. An unparsable Last-Modified counts as
 * absent. */
int pfs_validator_make(const char *etag, const char *last_modified, char *out, size_t cap);

/* The request header that makes the server refuse another version itself:
 * "If-Match: <etag>" for a strong ETag, "If-Unmodified-Since: <date>" for
 * a Last-Modified validator. Returns 1 with the header in out, 0 when none
 * applies (weak ETag, "-"), -ENOSPC when it does not fit. */
int pfs_validator_condition(const char *v, char *out, size_t cap);

/* 1 if v is a validator this module can produce, else 0. */
int pfs_validator_valid(const char *v);

#endif
