/* backend.h - private to origin/: the table each backend fills in.
 *
 * A backend embeds struct pfs_origin as its first member and casts back.
 */
#ifndef PFS_ORIGIN_BACKEND_H
#define PFS_ORIGIN_BACKEND_H

#include "origin.h"

struct pfs_origin_ops {
	int (*list)(struct pfs_origin *o, pfs_list_fn fn, void *ctx);
	int (*read)(struct pfs_origin *o, const char *path, uint64_t size,
		    uint64_t off, size_t len, void *buf, char *etag,
		    const struct pfs_origin_req *req); /* never NULL */
	void (*destroy)(struct pfs_origin *o);
};

struct pfs_origin {
	const struct pfs_origin_ops *ops;
	char *name; /* secret-free description, freed by pfs_origin_destroy() */
	int stopping; /* atomic: pfs_origin_stop() was called; backends hand
		       * it to their transfers (pfs_xfer_opts.stop) */
	uint64_t read_bound_ns; /* set by pfs_origin_create for the network
				 * backends (HTTP, S3), read-only after */
};

/* Each returns 0 and a new origin, or a negative errno after logging. */
int pfs_origin_file_create(const char *dir, const struct pfs_origin_opts *opts,
			   struct pfs_origin **out);
int pfs_origin_http_create(const char *url, const struct pfs_origin_opts *opts,
			   struct pfs_origin **out);
int pfs_origin_s3_create(const char *url, const struct pfs_origin_opts *opts,
			 struct pfs_origin **out);

#endif
