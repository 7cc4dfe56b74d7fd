/* ctl.h - the hidden control tree MOUNT/.prestofs/ (like ZFS's .zfs):
 * `stats` (JSON) and `metrics` (Prometheus text) render the same values;
 * `order` takes order hints (order.h);
 * never listed in the mount root, reachable by path. A dataset entry named
 * ".prestofs" in the root is shadowed by it.
 *
 * Control inodes live above PFS_CTL_INO_BASE, far from dataset inodes.
 * Thread-safe.
 */
#ifndef PFS_CTL_H
#define PFS_CTL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#define PFS_CTL_NAME ".prestofs"
#define PFS_CTL_INO_BASE (1ull << 40)
#define PFS_CTL_INO_DIR PFS_CTL_INO_BASE
#define PFS_CTL_INO_ORDER (PFS_CTL_INO_BASE + 3) /* written by loaders */
#define PFS_CTL_INO_VIEWS (PFS_CTL_INO_BASE + 4) /* its entries: fs.c */

static inline int pfs_ctl_is(uint64_t ino)
{
	return ino >= PFS_CTL_INO_BASE && ino < PFS_CTL_INO_BASE + 64;
}

struct pfs_stat_list;
/* Adds the values of another module to the stats and metrics files. Call
 * before mounting; fn runs on FUSE threads, at every render. */
typedef void (*pfs_ctl_stats_fn)(void *ctx, struct pfs_stat_list *l);
void pfs_ctl_add_stats_source(pfs_ctl_stats_fn fn, void *ctx);

/* Entry `name` in control directory `dir_ino`: 0 and its inode, or -ENOENT. */
int pfs_ctl_lookup(uint64_t dir_ino, const char *name, uint64_t *ino);
/* Attributes of a control inode; a file's size is that of its current
 * content snapshot, taken now (so a read after stat sees that length). */
int pfs_ctl_getattr(uint64_t ino, struct stat *st);
/* Copies up to `size` bytes at `off` of a control file into buf; *got is
 * the count. */
int pfs_ctl_read(uint64_t ino, uint64_t off, size_t size, char *buf, size_t *got);
/* Number of entries of a control directory, and the k-th name and inode. */
uint32_t pfs_ctl_nchildren(uint64_t dir_ino);
const char *pfs_ctl_child(uint64_t dir_ino, uint32_t k, uint64_t *ino);

#endif
