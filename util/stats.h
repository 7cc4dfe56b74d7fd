/* stats.h - process-wide counters, updated lock-free from any thread.
 *
 * One global instance (pfs_stats). Counters only ever grow, except the
 * gauges marked as such. Rendered by the control files (fs/ctl.c).
 */
#ifndef PFS_STATS_H
#define PFS_STATS_H

#include <stddef.h> /* offsetof */
#include <stdint.h>

#include "atomic.h"

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
	uint64_t origin_range_ignored; /* ranged GETs answered 200 with the whole object */
	uint64_t origin_range_ignored_bytes; /* their bytes outside the asked range, not kept */
	uint64_t origin_range_ignored_kept; /* blocks of them kept in the RAM tier */
	uint64_t origin_deadline_cut; /* reads ended by their reader's deadline */
	uint64_t ram_hits;
	uint64_t ram_misses;
	uint64_t ram_bytes;        /* gauge: bytes held */
	uint64_t ram_evictions;
	uint64_t coalesced;        /* reads that waited on another's fetch */
	uint64_t listing_skipped;  /* listed files left out of the mount (no usable
				    * size, or a directory of the same name) */
	uint64_t served_reads;     /* FUSE reads of dataset files and views */
	uint64_t served_bytes;     /* the bytes replied to them */
	uint64_t ops[PFS_OP__COUNT];
};

extern struct pfs_stats pfs_stats;

#define pfs_stat_add(field, n) pfs_add(&pfs_stats.field, (n))
#define pfs_stat_sub(field, n) pfs_sub(&pfs_stats.field, (n))
#define pfs_stat_get(field) pfs_load(&pfs_stats.field)
#define pfs_stat_op(op) pfs_stat_add(ops[(op)], 1)

/* Marks one origin request as started/finished (keeps the in-flight gauges). */
void pfs_stats_inflight_begin(void);
void pfs_stats_inflight_end(void);

/* A flat list of named values ("origin.requests"), gathered from several
 * modules and rendered as JSON (nested by the dots) or Prometheus text.
 *
 * Each module names its own metrics, in one place: its stats function
 * (pfs_stats_fn) appends them. Names are "group.member" or "member",
 * lowercase, [a-z0-9_] around the one dot, at most PFS_STAT_NAME_MAX bytes:
 * a group becomes a JSON object, a Prometheus name is prestofs_ + the name
 * with the dot as '_' (+ _total on counters). */
#define PFS_STAT_NAME_MAX 64

struct pfs_stat_kv {
	const char *name;  /* static storage */
	const char *label; /* NULL, or the instance (in the list's labels) */
	double value;
	int is_gauge;      /* Prometheus type: gauge, else counter */
};

/* Room for every metric of the daemon (about 90 today, plus 7 per order
 * stream, 64 streams at most; tests/unit/test_stats.c counts them). Lives
 * on the caller's stack: zero n and labels_used first (= {0}). */
#define PFS_STAT_LIST_MAX 768
#define PFS_STAT_LABELS_BYTES 4096 /* room for the labels' text */
#define PFS_STAT_LABEL_MAX 64      /* one label's length, at most */

struct pfs_stat_list {
	struct pfs_stat_kv kv[PFS_STAT_LIST_MAX];
	size_t n;
	char labels[PFS_STAT_LABELS_BYTES];
	size_t labels_used;
};

/* A module's stats function: appends the module's values to l. ctx is the
 * module's handle, as registered. Called on any thread, at every render of
 * the control files; takes at most the module's own locks, briefly. */
typedef void (*pfs_stats_fn)(void *ctx, struct pfs_stat_list *l);

/* Appends one value; name must outlive l (a string literal). Returns 0, or
 * -ENOSPC when the list is full: the value is dropped, and the first drop
 * of the process is logged as an error (a bug: raise PFS_STAT_LIST_MAX;
 * the integration tests fail on it). */
int pfs_stat_list_add(struct pfs_stat_list *l, const char *name, double value,
		      int is_gauge);

/* Appends one value of one instance of a family (an order stream): name
 * "group.field" as above, label the instance's name (copied; at most
 * PFS_STAT_LABEL_MAX - 1 bytes of [A-Za-z0-9._:-], which neither JSON nor
 * Prometheus must escape). JSON renders it as
 * {"group": {"LABEL": {"field": value}}}, Prometheus as
 * prestofs_group_field{group="LABEL"}. -ENOSPC as above (or when the labels
 * are full), -EINVAL for a label of other bytes. */
int pfs_stat_list_add_labeled(struct pfs_stat_list *l, const char *name, const char *label,
			      double value, int is_gauge);

/* One row of a module's table of metrics: a uint64_t member of the
 * module's snapshot struct (PFS_STAT_ROW(struct foo_stats, "foo.bar", bar, 0)). */
struct pfs_stat_row {
	const char *name;
	size_t offset;    /* of a uint64_t in the snapshot */
	int is_gauge;
};
#define PFS_STAT_ROW(type, name, member, is_gauge)                               \
	{ (name), offsetof(type, member), (is_gauge) }
/* Appends each row's member of *snapshot, in table order. */
void pfs_stat_list_add_rows(struct pfs_stat_list *l, const struct pfs_stat_row *rows,
			    size_t nrows, const void *snapshot);

/* Appends this module's values: the process-wide counters of struct
 * pfs_stats (origin.*, ram.hits, ram.misses, ram.bytes,
 * ram.evictions, coalesced, listing.skipped, served.reads, served.bytes,
 * fuse.*). */
void pfs_stats_collect(struct pfs_stat_list *l);

/* Render a list sorted by name into buf (NUL-terminated, truncated to
 * cap); return the length written. JSON nests on the dots:
 * {"origin": {"requests": 1, ...}, ...}. Prometheus: prestofs_origin_requests. */
size_t pfs_stats_render_json(const struct pfs_stat_list *l, char *buf, size_t cap);
size_t pfs_stats_render_prometheus(const struct pfs_stat_list *l, char *buf, size_t cap);

#endif
