/* origin.c - backend selection and dispatch; see origin.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "backend.h"
#include "retry.h"
#include "xfer.h"
#include "../util/atomic.h"
#include "../util/log.h"

/* The bound of one read under opts' timeout and retries. */
static uint64_t bound_of(const struct pfs_origin_opts *opts)
{
	double t = opts->timeout > 0 ? opts->timeout : 10;
	int r = opts->retries > 0 ? opts->retries : 0;
	return (uint64_t)(((r + 1) * t + r * PFS_RETRY_CAP) * 1e9);
}

/* A network backend's reads have timeouts, so a bound. */
static int networked(int rc, const struct pfs_origin_opts *opts, struct pfs_origin **out)
{
	if (rc == 0)
		(*out)->read_bound_ns = bound_of(opts);
	return rc;
}

int pfs_origin_create(const char *origin, const struct pfs_origin_opts *opts,
		      struct pfs_origin **out)
{
	*out = NULL;
	if (!strncasecmp(origin, "s3://", 5))
		return networked(pfs_origin_s3_create(origin, opts, out), opts, out);
	if (!strncasecmp(origin, "http://", 7) || !strncasecmp(origin, "https://", 8))
		return networked(pfs_origin_http_create(origin, opts, out), opts, out);
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

/* Every backend's entries pass here. An ETag a listing cannot carry is
 * dropped (an S3 page may hold a TAB or LF in one as an XML character
 * reference, a HEAD answer a raw TAB): the listing is kept as manifest
 * text (the SSD tier's copy, `prestofs index`), which must read back as
 * the same listing. The ETag of a listing only feeds the fingerprint; a
 * read pins the validator of its answer. */
struct list_filter {
	pfs_list_fn fn;
	void *ctx;
};

static int list_entry(void *p, const char *path, int is_dir, uint64_t size, int64_t mtime,
		      const char *etag)
{
	const struct list_filter *f = p;
	return f->fn(f->ctx, path, is_dir, size, mtime,
		     etag && pfs_etag_listable(etag) ? etag : NULL);
}

int pfs_origin_list(struct pfs_origin *o, pfs_list_fn fn, void *ctx)
{
	struct list_filter f = {fn, ctx};
	return o->ops->list(o, list_entry, &f);
}

int pfs_origin_read_req(struct pfs_origin *o, const char *path, uint64_t size,
			uint64_t off, size_t len, void *buf, char *etag,
			const struct pfs_origin_req *req)
{
	static const struct pfs_origin_req none;
	if (len == 0 || off > size || len > size - off)
		return -EINVAL;
	return o->ops->read(o, path, size, off, len, buf, etag, req ? req : &none);
}

int pfs_origin_read(struct pfs_origin *o, const char *path, uint64_t size,
		    uint64_t off, size_t len, void *buf, char *etag)
{
	return pfs_origin_read_req(o, path, size, off, len, buf, etag, NULL);
}

uint64_t pfs_origin_read_bound_ns(const struct pfs_origin *o)
{
	return o->read_bound_ns;
}

void pfs_origin_spill_free(struct pfs_origin_spill *s)
{
	pfs_xfer_spill_release(s);
}

void pfs_origin_stop(struct pfs_origin *o)
{
	if (o)
		pfs_store(&o->stopping, 1);
}

const char *pfs_origin_name(const struct pfs_origin *o)
{
	return o->name ? o->name : "origin";
}
