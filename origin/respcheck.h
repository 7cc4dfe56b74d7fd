/* respcheck.h - what an HTTP answer says, and whether a ranged GET's
 * answer may be served: the pure half of origin/xfer.c, apart from libcurl
 * so that it can be tested and fuzzed on bytes alone.
 *
 * xfer.c feeds each header line curl delivers to pfs_resp_header(), then
 * asks pfs_resp_check_range() for the verdict on a ranged GET. A status
 * line ("HTTP/...") starts a new header set, so only the headers of the
 * final answer count (not those of a redirect or a 100-continue).
 * Pure functions, any thread; a struct pfs_resp belongs to one transfer.
 */
#ifndef PFS_RESPCHECK_H
#define PFS_RESPCHECK_H

#include <stddef.h>
#include <stdint.h>

#include "../catalog/listing.h" /* PFS_ETAG_MAX */

struct pfs_resp {
	long status;              /* of the last status line seen; 0 before */
	char content_range[128];  /* "" when absent or too long */
	char etag[PFS_ETAG_MAX];  /* "" when absent */
	int etag_bad;             /* an ETag too long to keep: not servable */
	char last_modified[64];   /* "" when absent or too long */
	double retry_after;       /* seconds (Retry-After), or -1 */
	int64_t content_length;   /* Content-Length, or -1 when absent or bad */
};

/* Empties r for a new attempt: status 0, no headers, retry_after -1. */
void pfs_resp_init(struct pfs_resp *r);

/* Takes one header line line[0..n) as curl delivers it (CRLF included or
 * not, not NUL-terminated; never read past n). */
void pfs_resp_header(struct pfs_resp *r, const char *line, size_t n);

/* If line[0..n) is "Name: value" (name compared without case), copies the
 * value, blanks trimmed, into out (cap bytes, NUL-terminated). Returns 1,
 * 0 for another header (out untouched), -1 if the value does not fit. */
int pfs_resp_header_value(const char *line, size_t n, const char *name, char *out,
			  size_t cap);

/* The verdict on a finished ranged GET of [off, off + len) (len > 0) of an
 * object listed with `size` bytes: `status` as curl reports it, r's
 * headers, `got` body bytes received. Accepts 206 with a Content-Range
 * naming exactly that range and total `size` (or "*"), or 200: the whole
 * object (a server that ignores Range; the caller kept the asked part),
 * with Content-Length `size` or none; then the validator (origin/validator.h) must
 * be well formed and equal `pinned` unless that is "". Writes the answer's
 * validator into `validator` (PFS_ETAG_MAX bytes) when it got that far
 * (an answer that does not give the length, "*" or no Content-Length,
 * must carry a validator, else -EIO: nothing would tell another version),
 * and the object's length as answered into *total (`size` when the
 * answer does not say). Returns 0, -EAGAIN (worth another attempt), or a
 * final error: -ESTALE (another version: validator, 412, 416, or a length
 * other than `size`), -ENOENT, -EACCES, -EIO. */
int pfs_resp_check_range(const struct pfs_resp *r, long status, uint64_t size, uint64_t off,
			 size_t len, size_t got, const char *pinned, char *validator,
			 uint64_t *total);

#endif
