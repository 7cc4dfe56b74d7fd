/* stats.h - named values and their rendering: each module counts in its
 * own counters and names them in its own stats function (a pfs_stats_fn);
 * the control files (fs/ctl.c) gather the registered functions' values
 * into one list and render it. This module knows no module's counters.
 */
#ifndef PFS_STATS_H
#define PFS_STATS_H

#include <stddef.h> /* offsetof */
#include <stdint.h>

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
/* The same, of live atomic counters (each read with pfs_load): a module's
 * process-wide counters, read while others count. */
void pfs_stat_list_add_live(struct pfs_stat_list *l, const struct pfs_stat_row *rows,
			    size_t nrows, const void *live);

/* Render a list sorted by name into buf (NUL-terminated, truncated to
 * cap); return the length written. JSON nests on the dots:
 * {"origin": {"requests": 1, ...}, ...}. Prometheus: prestofs_origin_requests. */
size_t pfs_stats_render_json(const struct pfs_stat_list *l, char *buf, size_t cap);
size_t pfs_stats_render_prometheus(const struct pfs_stat_list *l, char *buf, size_t cap);

#endif
