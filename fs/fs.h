/* fs.h - the FUSE low-level operations over the file table, the block
 * cache and the origin.
 *
 * Inode numbers are file-table nodes + 1 (the root is FUSE_ROOT_ID);
 * control inodes are those of ctl.h. The dataset is immutable while
 * mounted, so entries and attributes are cached by the kernel for a long
 * time, negative lookups too, and opens cost no round trip where the
 * kernel supports it. A read is answered straight from cache blocks.
 */
#ifndef PFS_FS_H
#define PFS_FS_H

#include <stddef.h>
#include <stdint.h>

struct pfs_ftable;
struct pfs_origin;
struct pfs_bcache;
struct pfs_ssd;
struct pfs_epoch;
struct pfs_views;
struct fuse_lowlevel_ops;

/* Borrowed, not owned: all must outlive the fs. */
struct pfs_fs_conf {
	struct pfs_ftable *ft;
	struct pfs_origin *origin;
	struct pfs_bcache *cache;
	struct pfs_ssd *ssd;   /* NULL: no SSD tier */
	struct pfs_epoch *epoch;
	int policy;            /* enum pfs_policy */
	struct pfs_views *views; /* NULL: no views */
	size_t block_size;
};

struct pfs_fs;

int pfs_fs_create(const struct pfs_fs_conf *conf, struct pfs_fs **out);
void pfs_fs_destroy(struct pfs_fs *fs);

/* Attaches the prefetcher (NULL: none) and creates the order control
 * file's parser. Call once, before mounting. */
struct pfs_prefetch;
int pfs_fs_set_prefetch(struct pfs_fs *fs, struct pfs_prefetch *p);

/* Callbacks for the prefetcher (ctx: the pfs_fs). See prefetch.h. */
int pfs_fs_prefetch_block(void *ctx, uint64_t obj, uint64_t blk, size_t len);
int pfs_fs_prefetch_room(void *ctx, uint64_t len, uint64_t inflight);
int pfs_fs_prefetch_cached(void *ctx, uint64_t obj, uint64_t blk);

/* Stats source (ctx: the pfs_fs): epoch.demand_hits, epoch.demand_misses,
 * epoch.stall_seconds, stall_seconds, failed_files (files whose reads fail
 * at once for a while, cache/failmem.h), log_lines_dropped (by the rate
 * limiter, util/log.h). */
struct pfs_stat_list;
void pfs_fs_stats(void *ctx, struct pfs_stat_list *l);

/* The operations table; pass the pfs_fs as userdata to fuse_session_new. */
const struct fuse_lowlevel_ops *pfs_fs_ops(void);

#endif
