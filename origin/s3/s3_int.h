/* s3_int.h - private to origin/s3/s3.c and origin/s3/s3scan.c: the
 * backend's struct, and the ListObjectsV2 listing that s3.c falls back to
 * when there is no manifest. Nothing outside origin/s3/ includes this. */
#ifndef PFS_S3_INT_H
#define PFS_S3_INT_H

#include "../backend.h"
#include "../xfer.h"

#define S3_LIST_THREADS_MAX 64 /* PRESTOFS_S3_LIST_THREADS, at most */

/* Set by pfs_origin_s3_create(), read-only afterwards: any thread may read
 * it without a lock. */
struct s3_origin {
	struct pfs_origin base;
	struct pfs_xfer *xfer; /* signed unless anonymous */
	struct pfs_xfer_opts plain_opts; /* for unsigned manifest URLs */
	char *url_base;        /* bucket URL, no trailing '/' */
	char *prefix;          /* "" or "dir/sub/" */
	char *manifest;        /* -o manifest= or NULL */
	char *endpoint, *region;
	int path_style;
	int max_keys;          /* 0: server default */
	int list_threads;      /* 1..S3_LIST_THREADS_MAX */
	int allow_empty;       /* no objects under prefix: mount empty */
};

/* Lists every object under s->prefix with ListObjectsV2 and hands each to
 * fn as a path relative to the prefix, one call at a time (serialized,
 * though from the listing's own threads). Skips, with a warning, keys that
 * cannot be shown as files, and the prefix's prestofs.manifest. Returns 0,
 * fn's first error, -ENOENT (logged) when nothing is under the prefix and
 * not s->allow_empty, or the first transfer or page error. */
int s3_list_objects(struct s3_origin *s, pfs_list_fn fn, void *ctx);

#endif
