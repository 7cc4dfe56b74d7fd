/* counters.h - the origin's process-wide counters (origin.*), owned and
 * named here: every backend and the transfer layer count into them, and
 * pfs_origin_collect renders them. The bottom of origin/: it calls nothing
 * of the folder. Lock-free, any thread.
 */
#ifndef PFS_ORIGIN_COUNTERS_H
#define PFS_ORIGIN_COUNTERS_H

#include <stdint.h>

#include "../util/atomic.h"

struct pfs_origin_counters {
	uint64_t requests;            /* HTTP requests or file preads sent */
	uint64_t bytes;               /* payload bytes received */
	uint64_t errors;              /* failed attempts (each retry counts) */
	uint64_t retries;             /* attempts after the first */
	uint64_t inflight;            /* gauge: requests now in flight */
	uint64_t inflight_max;        /* gauge: highest in-flight seen */
	uint64_t range_ignored;       /* ranged GETs answered 200 with the
				       * whole object */
	uint64_t range_ignored_bytes; /* their bytes outside the asked range,
				       * not kept */
	uint64_t range_ignored_kept;  /* blocks of them kept in the RAM tier
				       * (counted by blocks/, which keeps them) */
	uint64_t deadline_cut;        /* reads ended by their reader's deadline */
};

/* Atomic members; read them with pfs_load. */
extern struct pfs_origin_counters pfs_origin_ctr;

#define pfs_origin_count(field, n) pfs_add(&pfs_origin_ctr.field, (n))

/* One request starts / ends: the in-flight gauges. */
void pfs_origin_inflight_begin(void);
void pfs_origin_inflight_end(void);

/* Appends origin.requests, ... (prestofs(1)) to l; ctx unused (NULL). A
 * pfs_stats_fn (util/stats.h). */
struct pfs_stat_list;
void pfs_origin_collect(void *ctx, struct pfs_stat_list *l);

#endif
