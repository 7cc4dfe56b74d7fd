/* origin.h - where the dataset's bytes come from: a local directory, an
 * HTTP(S) server or an S3-compatible store, behind one interface.
 *
 * An origin lists the dataset once (at mount) and then serves byte ranges
 * of named objects. Every call is thread-safe: many threads may call
 * pfs_origin_read() at once, and that is how prestofs keeps many requests
 * in flight. Connections are reused between calls.
 *
 * Errors are negative errno values: -ENOENT (origin said 404), -EACCES
 * (403), -ESTALE (the object changed: its validator differs from the one
 * given), -EIO (retries exhausted, or a short/invalid answer), -EINVAL
 * (bad origin string or option: a message was logged).
 */
#ifndef PFS_ORIGIN_H
#define PFS_ORIGIN_H

#include <stddef.h>
#include <stdint.h>

#include "../catalog/listing.h"

struct pfs_origin_opts {
	const char *manifest; /* -o manifest=URL|PATH, NULL: default place */
	const char *endpoint; /* S3 endpoint URL, NULL: AWS */
	const char *region;   /* S3 region, NULL: us-east-1 */
	int s3_path_style;    /* S3: http://endpoint/bucket/key addressing */
	/* S3 identity (origin/s3/awscred.h): NULL, NULL: the usual chain. */
	const char *aws_profile, *aws_credentials_file;
	double timeout;       /* seconds per attempt, > 0 */
	int retries;          /* attempts after the first, >= 0 */
	uint64_t bandwidth;   /* HTTP/S3: bytes/s cap on data read, 0: none */
	int allow_empty;      /* S3: nothing under the prefix lists as empty
				 rather than failing with -ENOENT */
};

struct pfs_origin;

/* Picks the backend from the origin string: "s3://", "http://",
 * "https://", "file://" or a plain directory path. On error logs why
 * (without secrets) and returns -EINVAL (or the open error). The caller
 * owns *out and frees it with pfs_origin_destroy(). */
int pfs_origin_create(const char *origin, const struct pfs_origin_opts *opts,
		      struct pfs_origin **out);
void pfs_origin_destroy(struct pfs_origin *o);

/* Lists every entry (see pfs_list_fn). Returns 0 or a negative errno; a
 * malformed listing or manifest is logged with its location. */
int pfs_origin_list(struct pfs_origin *o, pfs_list_fn fn, void *ctx);

/* The rest of a whole-object answer to a ranged GET (a server that ignores
 * Range): bytes [off, off + len) of the object, of the same version as the
 * read that returned them (its validator and length were checked). Zero it
 * before use; data is NULL when there is none. Owned by the caller, who
 * frees it with pfs_origin_spill_free() (which also gives its bytes back
 * to the process-wide bound, PFS_ORIGIN_SPILL_TOTAL). */
struct pfs_origin_spill {
	uint64_t off;
	size_t len, cap;
	char *data;
};
#define PFS_ORIGIN_SPILL_MAX (16u << 20)   /* bytes kept after one read */
#define PFS_ORIGIN_SPILL_TOTAL (64u << 20) /* all spills held at once */
void pfs_origin_spill_free(struct pfs_origin_spill *s);

/* Reads exactly `len` bytes at `off` of object `path`, whose size from the
 * listing is `size` (off + len <= size, len > 0). `etag` is an in/out
 * buffer of PFS_ETAG_MAX bytes holding a validator (origin/validator.h):
 * when non-empty on entry, the answer must be of exactly that version, else
 * -ESTALE (HTTP: sent as If-Match / If-Unmodified-Since too); when empty,
 * it is filled with the answer's validator, never left empty
 * (PFS_VALIDATOR_NONE when the origin gives none). A total length other
 * than `size` is -ESTALE too. Never returns a short read. */
int pfs_origin_read(struct pfs_origin *o, const char *path, uint64_t size,
		    uint64_t off, size_t len, void *buf, char *etag);
/* What a read may ask beyond its bytes; zeroed, nothing. */
struct pfs_origin_req {
	/* When the server answers with the whole object, the bytes that
	 * follow the asked range (block-aligned when the range is, up to
	 * PFS_ORIGIN_SPILL_MAX, while the process-wide bound allows) are kept
	 * here rather than thrown away: the caller may cache them. NULL: not
	 * kept. Zeroed by the caller. */
	struct pfs_origin_spill *spill;
	/* pfs_clock_ns() time by which the read ends, retries included: an
	 * attempt gets at most what is left (its timeout cut short), and none
	 * starts after it (-EIO). 0: only the retries bound the read. */
	uint64_t deadline_ns;
};
/* As pfs_origin_read, with `req` (may be NULL). */
int pfs_origin_read_req(struct pfs_origin *o, const char *path, uint64_t size,
			uint64_t off, size_t len, void *buf, char *etag,
			const struct pfs_origin_req *req);
/* The longest one read can take with its retries, in ns: (retries + 1)
 * timeouts and `retries` of the longest backoff (prestofs(1), ERRORS AND
 * RETRIES). 0 for an origin without timeouts (a local directory). A
 * reader that waits for several reads in turn gives them one deadline of
 * this length, so that its own wait has this bound too. */
uint64_t pfs_origin_read_bound_ns(const struct pfs_origin *o);

/* The daemon is stopping (any thread, once its FUSE loop ended): requests
 * in flight end within about a second, nothing is retried, and reads fail
 * from now on, so that nothing waits for a slow or stalled origin on the
 * way out. */
void pfs_origin_stop(struct pfs_origin *o);

/* Human-readable, secret-free description ("http://host/set/"). Owned by o. */
const char *pfs_origin_name(const struct pfs_origin *o);

#endif
