/* fs.h - the FUSE low-level operations over the file table, the block
 * cache and the origin.
 *
 * Inode numbers are file-table nodes + 1 (the root is FUSE_ROOT_ID);
 * control inodes are those of ctl.h; view inodes live above 2^48. The
 * dataset is immutable while mounted, so entries and attributes are cached
 * by the kernel for a long time, negative lookups too, and opens cost no
 * round trip where the kernel supports it. A read is answered straight
 * from cache blocks. Every request gets exactly one reply; errors that are
 * about fetching data (origin down, another version, a bad JPEG) reach the
 * application as EIO, never as a short or wrong read.
 *
 * Threads: create, set_prefetch and destroy run on the mounting thread,
 * before fuse_session_new and after the session ended. Everything else may
 * run on any number of threads at once: FUSE workers call the operations,
 * prefetch workers the prefetch callbacks, FUSE workers the stats source.
 * No lock of this module is held while any of them waits on the origin.
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
struct pfs_shared;

struct pfs_fs_conf {
	struct pfs_ftable *ft;
	struct pfs_origin *origin;
	struct pfs_bcache *cache;
	struct pfs_ssd *ssd;   /* NULL: no SSD tier */
	struct pfs_epoch *epoch;
	int policy;            /* enum pfs_policy */
	struct pfs_views *views; /* NULL: no views */
	size_t block_size;
	struct pfs_shared *shared; /* NULL: no shared tier (cache/shared.h) */
};

struct pfs_fs;

int pfs_fs_create(const struct pfs_fs_conf *conf, struct pfs_fs **out);
void pfs_fs_destroy(struct pfs_fs *fs);

/* Attaches the prefetcher (NULL: none) and creates the order control
 * file's parser. Call once, before mounting. */
struct pfs_prefetch;
int pfs_fs_set_prefetch(struct pfs_fs *fs, struct pfs_prefetch *p);

/* Callbacks for the prefetcher (prefetch.h's pfs_prefetch_*_fn; ctx: the
 * pfs_fs, which must outlive the prefetcher).
 *
 * pfs_fs_prefetch_block: brings block `blk` (len bytes) of object `obj`
 * into the RAM tier through the same path as a demand read (blocks.h: the
 * other tiers, then the origin under the file's pinned version; the block
 * goes to the SSD and shared tiers too). A view object is fetched whole (blk ignored). Runs on a
 * prefetch worker and waits for the origin; takes no lock of the
 * prefetcher. Returns 0 (the block may still not be kept: the cache's
 * policy decides); -ENOENT for a node that is no file; -ENOMEM; -ESTALE
 * when the object changed (another version is pinned); for a view, -EIO
 * or -E2BIG for a source that is no decodable JPEG or too many pixels; the
 * origin's error (-EIO, -ETIMEDOUT, -EACCES, ...) otherwise, also when it
 * failed the file moments ago (cache/failmem.h).
 *
 * pfs_fs_prefetch_room: 1 while the resident set, else the staging area,
 * has room for `len` more bytes beyond `inflight` (under lru: while under
 * a quarter of the budget is in flight), else 0. Called with the
 * prefetcher's lock held: reads counters of the cache only (its lock,
 * briefly), never calls the prefetcher.
 *
 * pfs_fs_prefetch_cached: PFS_PREFETCH_SKIP_OBJECT for a file the origin
 * just failed (cache/failmem.h), PFS_PREFETCH_SKIP_BLOCK for a block that
 * is in the RAM tier or being filled, else 0. Called with the prefetcher's
 * lock held; takes the cache's and failmem's locks briefly. */
int pfs_fs_prefetch_block(void *ctx, uint64_t obj, uint64_t blk, size_t len);
int pfs_fs_prefetch_room(void *ctx, uint64_t len, uint64_t inflight);
int pfs_fs_prefetch_cached(void *ctx, uint64_t obj, uint64_t blk);

/* Stats source (ctx: the pfs_fs): the requests (fuse.lookup, ...,
 * fuse.write_denied; served.reads and served.bytes, the reads of dataset
 * files and views and their bytes), failed_files (files whose reads fail
 * at once for a while, cache/failmem.h), log_lines_dropped (by the rate
 * limiter, util/log.h). */
struct pfs_stat_list;
void pfs_fs_collect(void *ctx, struct pfs_stat_list *l);

/* The operations table; pass the pfs_fs as userdata to fuse_session_new. */
const struct fuse_lowlevel_ops *pfs_fs_ops(void);

#endif
