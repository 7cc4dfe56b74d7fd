/* bcache.h - the RAM block cache: fixed-size blocks of files, keyed by
 * (inode, block index), with a byte budget and fetch coalescing.
 *
 * A miss calls the caller's fill function exactly once, whatever the
 * number of concurrent readers of that block: the others wait for it
 * (that is the "two readers, one origin request" rule). Blocks are handed
 * out reference-counted, so a reply can be sent straight from cache memory
 * without a copy. Evicted in LRU order when the budget is exceeded; blocks
 * still referenced are never freed under a reader.
 *
 * Thread-safe; sharded so concurrent readers rarely share a lock. No lock
 * is held while fill runs.
 */
#ifndef PFS_BCACHE_H
#define PFS_BCACHE_H

#include <stddef.h>
#include <stdint.h>

struct pfs_bcache;
struct pfs_block;

/* Fills buf with exactly len bytes; returns 0 or a negative errno. */
typedef int (*pfs_bcache_fill_fn)(void *ctx, void *buf, size_t len);

/* budget: bytes of block data held at most (blocks pinned by readers may
 * briefly exceed it). block_size: the largest block. */
int pfs_bcache_create(uint64_t budget, size_t block_size, struct pfs_bcache **out);
void pfs_bcache_destroy(struct pfs_bcache *c);

/* Returns block (ino, idx) of length len in *out, filling it on a miss.
 * The caller releases it with pfs_bcache_put(). On failure returns the
 * fill's error (the failed block is not cached). */
int pfs_bcache_get(struct pfs_bcache *c, uint64_t ino, uint64_t idx, size_t len,
		   pfs_bcache_fill_fn fill, void *ctx, struct pfs_block **out);
void pfs_bcache_put(struct pfs_bcache *c, struct pfs_block *b);

/* Data of a block held by the caller; valid until pfs_bcache_put(). */
const void *pfs_block_data(const struct pfs_block *b);
size_t pfs_block_len(const struct pfs_block *b);

#endif
