/* stats.h - process-wide counters, updated lock-free from any thread.
 *
 * One global instance (pfs_stats). Counters only ever grow, except the
 * gauges marked as such. Rendered as JSON by pfs_stats_json().
 */
#ifndef PFS_STATS_H
#define PFS_STATS_H

#include <stddef.h>
#include <stdint.h>

enum pfs_op {
	PFS_OP_LOOKUP, PFS_OP_GETATTR, PFS_OP_OPEN, PFS_OP_READ, PFS_OP_RELEASE,
	PFS_OP_OPENDIR, PFS_OP_READDIR, PFS_OP_READDIRPLUS, PFS_OP_RELEASEDIR,
	PFS_OP_STATFS, PFS_OP_GETXATTR, PFS_OP_LISTXATTR, PFS_OP_FORGET,
	PFS_OP_WRITE_DENIED, PFS_OP__COUNT
};

struct pfs_stats {
	uint64_t origin_requests;  /* HTTP requests or file preads sent */
	uint64_t origin_bytes;     /* payload bytes received */
	uint64_t origin_errors;    /* failed attempts (each retry counts) */
	uint64_t origin_retries;   /* attempts after the first */
	uint64_t origin_inflight;  /* gauge: requests now in flight */
	uint64_t origin_inflight_max; /* gauge: highest in-flight seen */
	uint64_t ram_hits;
	uint64_t ram_misses;
	uint64_t ram_bytes;        /* gauge: bytes held */
	uint64_t ram_evictions;
	uint64_t coalesced;        /* reads that waited on another's fetch */
	uint64_t ops[PFS_OP__COUNT];
};

extern struct pfs_stats pfs_stats;

#define pfs_stat_add(field, n) __atomic_add_fetch(&pfs_stats.field, (n), __ATOMIC_RELAXED)
#define pfs_stat_sub(field, n) __atomic_sub_fetch(&pfs_stats.field, (n), __ATOMIC_RELAXED)
#define pfs_stat_get(field) __atomic_load_n(&pfs_stats.field, __ATOMIC_RELAXED)
#define pfs_stat_op(op) pfs_stat_add(ops[(op)], 1)

/* Marks one origin request as started/finished (keeps the in-flight gauges). */
void pfs_stats_inflight_begin(void);
void pfs_stats_inflight_end(void);

/* Renders all counters as a JSON object into buf (NUL-terminated, truncated
 * to cap). Returns the length written. Nested members: origin.requests ... */
size_t pfs_stats_json(char *buf, size_t cap);

#endif
