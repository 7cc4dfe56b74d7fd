/* stats.h - process-wide counters, updated lock-free from any thread.
 *
 * One global instance (pfs_stats). Counters only ever grow, except the
 * gauges marked as such. Rendered by the control files (fs/ctl.c).
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
	uint64_t listing_skipped;  /* listed files left out of the mount (no usable size) */
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

/* A flat list of named values ("origin.requests"), gathered from several
 * modules and rendered as JSON (nested by the dots) or Prometheus text. */
struct pfs_stat_kv {
	const char *name; /* dotted; static storage */
	double value;
	int is_gauge;     /* Prometheus type: gauge, else counter */
};

struct pfs_stat_list {
	struct pfs_stat_kv kv[128];
	size_t n;
};

/* Appends one value (silently dropped when the list is full). */
void pfs_stat_list_add(struct pfs_stat_list *l, const char *name, double value,
		       int is_gauge);
/* Appends this module's counters (origin.*, ram.*, coalesced,
 * listing.*, fuse.*). */
void pfs_stats_collect(struct pfs_stat_list *l);

/* Render a list sorted by name into buf (NUL-terminated, truncated to
 * cap); return the length written. JSON nests on the dots:
 * {"origin": {"requests": 1, ...}, ...}. Prometheus: prestofs_origin_requests. */
size_t pfs_stats_render_json(const struct pfs_stat_list *l, char *buf, size_t cap);
size_t pfs_stats_render_prometheus(const struct pfs_stat_list *l, char *buf, size_t cap);

#endif
