/* ctl.h - the hidden control tree MOUNT/.prestofs/ (like ZFS's .zfs):
 * `stats` (JSON) and `metrics` (Prometheus text) render the same values;
 * `order` takes order hints (order.h); `views` is the root of the views
 * tree (its entries are node_view.c's); `warm` takes warm-up jobs and
 * shows their progress (warm.h). Never listed in the mount root,
 * reachable by path; a dataset entry named ".prestofs" in the root is
 * shadowed by it.
 *
 * This module owns the tree's names and inodes and the content of the
 * rendered files; fs/node_ctl.c answers FUSE with them. Control inodes
 * live above PFS_CTL_INO_BASE, far from dataset inodes.
 *
 * State is process-wide (one mount per process). Threads: sources are
 * added on the mounting thread before the mount; every other function may
 * run on any FUSE worker at once. Rendering holds one internal lock (the
 * snapshot lock) while it calls every stats source: a source must not
 * call back into this module and must not block on I/O.
 */
#ifndef PFS_CTL_H
#define PFS_CTL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "../util/stats.h"

#define PFS_CTL_NAME ".prestofs"
#define PFS_CTL_INO_BASE (1ull << 40)
#define PFS_CTL_INO_DIR PFS_CTL_INO_BASE
#define PFS_CTL_INO_ORDER (PFS_CTL_INO_BASE + 3) /* written by loaders */
#define PFS_CTL_INO_VIEWS (PFS_CTL_INO_BASE + 4) /* its entries: fs.c */
#define PFS_CTL_INO_WARM (PFS_CTL_INO_BASE + 5)  /* warm-up jobs (warm.h) */

static inline int pfs_ctl_is(uint64_t ino)
{
	return ino >= PFS_CTL_INO_BASE && ino < PFS_CTL_INO_BASE + 64;
}

/* Adds a module's metrics (its pfs_stats_fn, util/stats.h) to the stats
 * and metrics files. Returns 0, or -ENOSPC past PFS_CTL_MAX_SOURCES. ctx
 * is borrowed and must outlive the mount. Call before mounting; fn runs on
 * FUSE threads, at every render, under the snapshot lock. */
#define PFS_CTL_MAX_SOURCES 16
int pfs_ctl_add_stats_source(pfs_stats_fn fn, void *ctx);

/* The renderer of the `warm` file (writable, like `order`; its content is
 * the status of warm-up jobs, warm.h). Until one is set the file is empty.
 * Call before mounting; render runs on FUSE threads under the snapshot
 * lock. */
void pfs_ctl_set_warm(size_t (*render)(void *ctx, char *buf, size_t cap), void *ctx);

/* Entry `name` in control directory `dir_ino`: 0 and its inode, or -ENOENT
 * (also when dir_ino is no control directory). */
int pfs_ctl_lookup(uint64_t dir_ino, const char *name, uint64_t *ino);
/* Attributes of a control inode: 0, or -ENOENT for a number that is none.
 * A rendered file's size is that of its content snapshot, taken now (so a
 * read after stat sees that length), padded with newlines to a multiple
 * of 4 KiB; mtime is now. The order file is writable (0666), size 0; the
 * warm file is writable (0666) and rendered. */
int pfs_ctl_getattr(uint64_t ino, struct stat *st);
/* Copies up to `size` bytes at `off` of a control file's latest snapshot
 * (taken now if none was) into buf (the caller's, `size` bytes); *got is
 * the count, 0 at or past the end and for the order file. Returns 0, or
 * -EISDIR for a directory or a number that is no control file. */
int pfs_ctl_read(uint64_t ino, uint64_t off, size_t size, char *buf, size_t *got);
/* Number of entries of a control directory (0 for anything else), and the
 * k-th name (static storage) and inode, or NULL past the end. */
uint32_t pfs_ctl_nchildren(uint64_t dir_ino);
const char *pfs_ctl_child(uint64_t dir_ino, uint32_t k, uint64_t *ino);

#endif
