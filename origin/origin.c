/* origin.c - backend selection and dispatch; see origin.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "backend.h"
#include "../util/log.h"

int pfs_origin_create(const char *origin, const struct pfs_origin_opts *opts,
		      struct pfs_origin **out)
{
	*out = NULL;
	if (!strncasecmp(origin, "s3://", 5))
		return pfs_origin_s3_create(origin, opts, out);
	if (!strncasecmp(origin, "http://", 7) || !strncasecmp(origin, "https://", 8))
		return pfs_origin_http_create(origin, opts, out);
	if (!strncasecmp(origin, "file://", 7))
		return pfs_origin_file_create(origin + 7, opts, out);
	if (strstr(origin, "://")) {
		pfs_err("unsupported origin scheme in '%.*s' (use a directory, "
			"file://, http://, https:// or s3://)",
			(int)(strstr(origin, "://") - origin + 3), origin);
		return -EINVAL;
	}
	return pfs_origin_file_create(origin, opts, out);
}

void pfs_origin_destroy(struct pfs_origin *o)
{
	if (!o)
		return;
	char *name = o->name;
	o->ops->destroy(o);
	free(name);
}

int pfs_origin_list(struct pfs_origin *o, pfs_list_fn fn, void *ctx)
{
	return o->ops->list(o, fn, ctx);
}

int pfs_origin_read(struct pfs_origin *o, const char *path, uint64_t size,
		    uint64_t off, size_t len, void *buf, char *etag)
{
	if (len == 0 || off > size || len > size - off)
		return -EINVAL;
	return o->ops->read(o, path, size, off, len, buf, etag);
}

const char *pfs_origin_name(const struct pfs_origin *o)
{
	return o->name ? o->name : "origin";
}
