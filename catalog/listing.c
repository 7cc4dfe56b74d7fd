/* listing.c - see listing.h. */
#include <string.h>

#include "listing.h"
#include "../util/atomic.h"
#include "../util/stats.h"

static uint64_t skipped; /* atomic */

void pfs_listing_note_skipped(uint64_t n)
{
	pfs_add(&skipped, n);
}

uint64_t pfs_listing_skipped(void)
{
	return pfs_load(&skipped);
}

void pfs_listing_collect(void *ctx, struct pfs_stat_list *l)
{
	(void)ctx;
	pfs_stat_list_add(l, "listing.skipped", (double)pfs_listing_skipped(), 0);
}

int pfs_path_valid(const char *path)
{
	size_t len = strlen(path);
	if (len == 0 || len > 4095 || path[0] == '/' || path[len - 1] == '/')
		return 0;
	const char *c = path;
	while (*c) {
		const char *slash = strchr(c, '/');
		size_t n = slash ? (size_t)(slash - c) : strlen(c);
		if (n == 0 || n > 255 || (n == 1 && c[0] == '.') ||
		    (n == 2 && c[0] == '.' && c[1] == '.'))
			return 0;
		for (size_t i = 0; i < n; i++) {
			unsigned char ch = (unsigned char)c[i];
			if (ch < 0x20 || ch == 0x7f)
				return 0;
		}
		c += n;
		if (*c == '/')
			c++;
	}
	return 1;
}

int pfs_etag_listable(const char *etag)
{
	size_t n = strlen(etag);
	if (n == 0 || n >= PFS_ETAG_MAX || !strcmp(etag, "-"))
		return 0;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)etag[i] < 0x20 || etag[i] == 0x7f)
			return 0;
	return 1;
}
