/* stats.c - see stats.h. */
#include <stdio.h>

#include "stats.h"

struct pfs_stats pfs_stats;

static const char *const op_names[PFS_OP__COUNT] = {
	"lookup", "getattr", "open", "read", "release", "opendir", "readdir",
	"readdirplus", "releasedir", "statfs", "getxattr", "listxattr",
	"forget", "write_denied",
};

void pfs_stats_inflight_begin(void)
{
	uint64_t now = pfs_stat_add(origin_inflight, 1);
	uint64_t max = pfs_stat_get(origin_inflight_max);
	while (now > max && !__atomic_compare_exchange_n(&pfs_stats.origin_inflight_max,
			&max, now, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

void pfs_stats_inflight_end(void)
{
	pfs_stat_sub(origin_inflight, 1);
}

/* Appends to buf while keeping track of the would-be length. */
#define APPEND(...)                                                          \
	do {                                                                 \
		int n_ = snprintf(buf + (len < cap ? len : cap),             \
				  len < cap ? cap - len : 0, __VA_ARGS__);   \
		if (n_ > 0)                                                  \
			len += (size_t)n_;                                   \
	} while (0)

size_t pfs_stats_json(char *buf, size_t cap)
{
	size_t len = 0;
#define G(f) (unsigned long long)pfs_stat_get(f)
	APPEND("{\n  \"origin\": {\"requests\": %llu, \"bytes\": %llu, \"errors\": %llu, "
	       "\"retries\": %llu, \"inflight\": %llu, \"inflight_max\": %llu},\n",
	       G(origin_requests), G(origin_bytes), G(origin_errors),
	       G(origin_retries), G(origin_inflight), G(origin_inflight_max));
	APPEND("  \"ram\": {\"hits\": %llu, \"misses\": %llu, \"bytes\": %llu, "
	       "\"evictions\": %llu},\n",
	       G(ram_hits), G(ram_misses), G(ram_bytes), G(ram_evictions));
	APPEND("  \"coalesced\": %llu,\n  \"fuse\": {", G(coalesced));
	for (int i = 0; i < PFS_OP__COUNT; i++)
		APPEND("%s\"%s\": %llu", i ? ", " : "", op_names[i], G(ops[i]));
	APPEND("}\n}\n");
#undef G
	if (cap)
		buf[len < cap ? len : cap - 1] = '\0';
	return len < cap ? len : cap - 1;
}
