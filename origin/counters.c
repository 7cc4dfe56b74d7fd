/* counters.c - see counters.h. */
#include "counters.h"
#include "../util/stats.h"

struct pfs_origin_counters pfs_origin_ctr;

void pfs_origin_inflight_begin(void)
{
	uint64_t now = pfs_origin_count(inflight, 1);
	pfs_store_max(&pfs_origin_ctr.inflight_max, now);
}

void pfs_origin_inflight_end(void)
{
	pfs_sub(&pfs_origin_ctr.inflight, 1);
}

#define ROW(name, member, gauge) PFS_STAT_ROW(struct pfs_origin_counters, name, member, gauge)
static const struct pfs_stat_row metrics[] = {
	ROW("origin.requests", requests, 0),
	ROW("origin.bytes", bytes, 0),
	ROW("origin.errors", errors, 0),
	ROW("origin.retries", retries, 0),
	ROW("origin.inflight", inflight, 1),
	ROW("origin.inflight_max", inflight_max, 1),
	ROW("origin.range_ignored", range_ignored, 0),
	ROW("origin.range_ignored_bytes", range_ignored_bytes, 0),
	ROW("origin.range_ignored_kept", range_ignored_kept, 0),
	ROW("origin.deadline_cut", deadline_cut, 0),
};
#undef ROW

void pfs_origin_collect(void *ctx, struct pfs_stat_list *l)
{
	(void)ctx;
	pfs_stat_list_add_live(l, metrics, sizeof(metrics) / sizeof(metrics[0]), &pfs_origin_ctr);
}
