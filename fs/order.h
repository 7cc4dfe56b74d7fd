/* order.h - the order-hint control file MOUNT/.prestofs/order.
 *
 * A loader writes the paths of the epoch's samples, relative to the mount
 * root, one per line. A write at offset 0 (or a truncation) starts a new
 * order; complete lines (dataset paths, or view paths
 * .prestofs/views/SPEC/REL) are resolved against the file table and handed to
 * the prefetcher as they arrive, so the start of an epoch is prefetched
 * while the rest is still being written. Unknown paths are counted and
 * skipped. Writes are serialised by an internal lock.
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

/* A write of buf[0..len) at offset off. Returns 0 (always accepted). */
int pfs_order_write(struct pfs_order *o, uint64_t off, const char *buf, size_t len);
/* Truncation to 0: a new order. */
void pfs_order_reset(struct pfs_order *o);

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
