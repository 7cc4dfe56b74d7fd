/* view_stub.c - TEMPORARY: stands in for transform/ until it lands, so the
 * tree builds. Every transform fails with EIO. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include "../transform/view.h"

int pfs_view_parse(const char *spec, struct pfs_view_spec *out, char *canon,
		   size_t canon_cap, char *err, size_t errcap)
{
	memset(out, 0, sizeof(*out));
	snprintf(canon, canon_cap, "%s", spec);
	snprintf(err, errcap, "views are not built in");
	return -EINVAL;
}

int pfs_view_is_jpeg_name(const char *name)
{
	const char *dot = strrchr(name, '.');
	return dot && (!strcasecmp(dot, ".jpg") || !strcasecmp(dot, ".jpeg"));
}

int pfs_view_output_size(const struct pfs_view_spec *s, const void *jpeg, size_t len,
			 uint64_t max_pixels, uint64_t *size)
{
	(void)s; (void)jpeg; (void)len; (void)max_pixels; (void)size;
	return -EIO;
}

int pfs_view_apply(const struct pfs_view_spec *s, const void *jpeg, size_t len,
		   uint64_t max_pixels, void **out, size_t *out_len)
{
	(void)s; (void)jpeg; (void)len; (void)max_pixels; (void)out; (void)out_len;
	return -EIO;
}
