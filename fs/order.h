/* order.h - the order-hint control file MOUNT/.prestofs/order.
 *
 * A loader writes the paths of the epoch's samples, relative to the mount
 * root, one per line. A write at offset 0 starts a new order (so does the
 * next write after a truncation); complete lines (dataset paths, or view
 * paths .prestofs/views/SPEC/REL) are resolved against the file table and
 * handed to the prefetcher as they arrive, so the start of an epoch is
 * prefetched while the rest is still being written. Unknown paths are
 * counted and skipped.
 *
 * Streams (prefetch.h): if an order's first line is "#stream NAME", the
 * order replaces stream NAME's; otherwise the unnamed stream's. Several
 * writers (DDP ranks) may write at once: the kernel sends no opens here,
 * so a writer is told apart by the thread id of its write requests (the
 * writes of one order from one thread, as a loader writes it); at most 64
 * writers are tracked at once. Writes are serialised by an internal lock.
 */
#ifndef PFS_ORDER_H
#define PFS_ORDER_H

#include <stddef.h>
#include <stdint.h>

struct pfs_ftable;
struct pfs_prefetch;
struct pfs_views;
struct pfs_order;

/* All borrowed. prefetch may be NULL (prefetch=off): lines are parsed and
 * counted but go nowhere. views may be NULL: view paths
 * (.prestofs/views/SPEC/REL) are then unknown. */
int pfs_order_create(const struct pfs_ftable *ft, struct pfs_prefetch *prefetch,
		     struct pfs_views *views, struct pfs_order **out);
void pfs_order_destroy(struct pfs_order *o);

/* A write of buf[0..len) at offset off by thread tid. Returns 0 (always
 * accepted). */
int pfs_order_write(struct pfs_order *o, int32_t tid, uint64_t off, const char *buf,
		    size_t len);
/* Truncation to 0 by thread tid: its next write starts a new order. */
void pfs_order_reset(struct pfs_order *o, int32_t tid);

/* The stream name in a first line "#stream NAME" (a pointer into s), or
 * NULL when s is not such a line. Pure. */
const char *pfs_order_stream_line(const char *s);

/* What one line names; the pure part of pfs_order_write(). */
enum pfs_order_line {
	PFS_ORDER_LINE_EMPTY, /* nothing but '/' (allowed, not counted) */
	PFS_ORDER_LINE_FILE,  /* *path: a dataset path */
	PFS_ORDER_LINE_VIEW,  /* *spec and *path: .prestofs/views/SPEC/PATH */
	PFS_ORDER_LINE_BAD,   /* a views path without SPEC/: unknown */
};
/* Splits the line s[0..n) (without its '\n'; s has room for n + 1 bytes)
 * in place: a final '\r' and leading '/' are dropped, strings are
 * NUL-terminated inside s (the line ends at its first NUL byte). *spec and
 * *path point into s, set only for the kinds that name them. Pure. */
enum pfs_order_line pfs_order_parse_line(char *s, size_t n, char **spec, char **path);

#endif
