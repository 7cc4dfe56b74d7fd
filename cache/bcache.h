/* bcache.h - the RAM block cache: fixed-size blocks of files, keyed by
 * (inode, block index), with a hard byte budget, a replacement policy and
 * fetch coalescing.
 *
 * A miss calls the caller's fill function exactly once, whatever the
 * number of concurrent readers of that block: the others wait for it
 * (that is the "two readers, one origin request" rule). Blocks are handed
 * out reference-counted, so a reply can be sent straight from cache memory
 * without a copy.
 *
 * Admission. A filled block is offered to the policy (policy.h):
 *  - lru: admitted, evicting least recently used blocks as needed;
 *  - minio: admitted while the resident set has room, then never replaced
 *    (resident=small/large: may replace a block of a larger/smaller
 *    object, see policy.h);
 *  - epoch: as minio; and a prefetch fill (PFS_BCACHE_PREFETCH) that finds
 *    the resident set full goes to the staging area instead, where it stays
 *    until demand reads have used it (dropped after the put that made its
 *    reads add up to the whole block), or until it is stale (staged two
 *    epochs ago or more, never read) and the space is wanted.
 * Under every policy, a reader's fill that the resident set refuses goes
 * to the staging area too (when it has one, stage_budget), so that the
 * rest of that block's read finds it: it is dropped at the put that makes
 * its reads add up to the whole block (pfs_bcache_put_read), or, read only
 * in part, when it is the oldest staged block and the space is wanted.
 * A block that is not admitted is still handed to its reader and to every
 * reader that waited for the same fill, then freed at the last put.
 *
 * Memory: resident (cached) bytes never exceed `budget`, staged bytes never
 * exceed `stage_budget`, both enforced globally by atomic reservation.
 * Blocks held by readers beyond that are only those not admitted, in flight.
 *
 * Thread-safe; sharded so concurrent readers rarely share a lock (fewer
 * shards for small budgets, at least 128 blocks each: replacement runs
 * within one shard, and a shard's share is then a stable fraction of the
 * budget). No lock is held while fill runs.
 */
#ifndef PFS_BCACHE_H
#define PFS_BCACHE_H

#include <stddef.h>
#include <stdint.h>

#include "policy.h"

struct pfs_bcache;
struct pfs_block;

struct pfs_bcache_opts {
	uint64_t budget;          /* resident bytes held at most */
	size_t block_size;        /* the largest block */
	enum pfs_policy policy;
	enum pfs_resident resident; /* minio and epoch only */
	uint64_t stage_budget;    /* staged bytes held at most (prefetches
				   * under epoch, blocks read in part);
				   * in addition to budget; 0: no staging */
};

/* Flags of pfs_bcache_get(). */
#define PFS_BCACHE_PREFETCH 0x1u /* a prefetch, not a reader: not a read of
				  * the block for the epoch rule, not counted
				  * in ram_hits/ram_misses; may be staged */
#define PFS_BCACHE_WARM 0x2u     /* a warm-up (prestofs warm), not a reader:
				  * not counted as a read or a prefetch;
				  * admitted only into free resident room,
				  * never evicting, never staged */

/* Fills buf with exactly len bytes; returns 0 or a negative errno. */
typedef int (*pfs_bcache_fill_fn)(void *ctx, void *buf, size_t len);

/* Copies what it needs of *opts. Returns 0, -EINVAL (unknown policy or
 * resident value) or -ENOMEM. */
int pfs_bcache_create(const struct pfs_bcache_opts *opts, struct pfs_bcache **out);
/* All blocks must have been put. NULL allowed. */
void pfs_bcache_destroy(struct pfs_bcache *c);

/* Returns block (ino, idx) of length len in *out, filling it on a miss.
 * obj_size: size of the object (file) the block belongs to, used by
 * resident=small/large. flags: 0, PFS_BCACHE_PREFETCH or PFS_BCACHE_WARM. The caller
 * releases the block with pfs_bcache_put() (a prefetcher may do so at
 * once). On failure returns the fill's error (the failed block is not
 * cached, and *out is not set). */
int pfs_bcache_get(struct pfs_bcache *c, uint64_t ino, uint64_t idx, size_t len,
		   uint64_t obj_size, unsigned flags, pfs_bcache_fill_fn fill, void *ctx,
		   struct pfs_block **out);
/* NULL allowed. The block must not be used afterwards. The caller had
 * what it wanted of it (as a reader: up to its end). */
void pfs_bcache_put(struct pfs_bcache *c, struct pfs_block *b);
/* As pfs_bcache_put, by a reader that read `nread` bytes of the block, or
 * 0 by a caller that read none of it (a prefetcher): a staged block stays
 * until its readers have read as many bytes as it holds. */
void pfs_bcache_put_read(struct pfs_bcache *c, struct pfs_block *b, size_t nread);

/* Keeps b's data (pfs_block_data, pfs_block_len) valid after b is put,
 * and after the cache drops or is destroyed, until pfs_bcache_release(b):
 * for a reader of the bytes that runs later (the SSD tier's writer), so it
 * needs no copy. Call while holding b. The data never changes. Any thread;
 * release needs no cache (a pfs_ssd release callback). */
void pfs_bcache_hold(struct pfs_block *b);
void pfs_bcache_release(void *b);
/* 1 if block (ino, idx) is cached or being filled now: a prefetcher need
 * not ask for it. A snapshot; takes one shard lock. Any thread. */
int pfs_bcache_contains(struct pfs_bcache *c, uint64_t ino, uint64_t idx);

/* Tells the cache the current epoch (epoch.h numbering, from 1): staged
 * blocks record it and go stale two epochs later. Any thread. */
void pfs_bcache_set_epoch(struct pfs_bcache *c, uint64_t epoch);

/* Data of a block held by the caller; valid until pfs_bcache_put(). */
const void *pfs_block_data(const struct pfs_block *b);
size_t pfs_block_len(const struct pfs_block *b);

/* 1 if the resident set has room for len more bytes now, without
 * evicting (a snapshot). Any thread. */
int pfs_bcache_has_room(struct pfs_bcache *c, size_t len);
/* Counters of this cache (pfs_stats has the process-wide ram_* ones). */
struct pfs_bcache_stats {
	uint64_t budget, resident_bytes, resident_blocks;
	uint64_t stage_budget, staged_bytes, staged_blocks;
	uint64_t admitted;        /* blocks admitted to the resident set */
	uint64_t replaced;        /* resident blocks evicted to admit others */
	uint64_t refused;         /* fills served but not cached */
	uint64_t staged;          /* prefetch fills put in the staging area */
	uint64_t stage_used;      /* staged blocks dropped after their read */
	uint64_t stage_stale;     /* staged blocks dropped unread, stale */
	uint64_t staged_partial;  /* reader fills the resident set refused,
				   * staged for the rest of their read */
	uint64_t stage_reclaimed; /* staged blocks read in part, dropped
				   * (the oldest) for room */
	uint64_t refetched;       /* fills of a block already filled in the
				   * same epoch (a lower bound: the last ~4
				   * fills per block of the budget are kept) */
	uint64_t prefetch_fills;  /* fills run for PFS_BCACHE_PREFETCH gets */
	uint64_t prefetch_used_bytes;   /* prefetched bytes a reader then got */
	uint64_t prefetch_wasted_bytes; /* prefetched bytes dropped unread, or
					 * not kept and not waited for */
	uint64_t epoch;           /* as last set */
};

/* A snapshot (fields read one by one). Any thread. */
void pfs_bcache_stats(struct pfs_bcache *c, struct pfs_bcache_stats *out);

/* Counters of every cache of the process together (they outlive each
 * cache, so a test reads deltas): reader gets that found their block (or
 * waited for another's fill) and that filled it, bytes of blocks held (a
 * gauge), blocks evicted, and gets that waited for another's fill. */
struct pfs_ram_counters {
	uint64_t hits, misses;
	uint64_t bytes;
	uint64_t evictions;
	uint64_t coalesced;
};
void pfs_bcache_counters(struct pfs_ram_counters *out);

/* Appends this cache's metrics (ram.budget, ram.resident_bytes, ...,
 * prefetch.bytes_used, prefetch.bytes_wasted) and the process-wide ones
 * (ram.hits, ram.misses, ram.bytes, ram.evictions, coalesced) to
 * l; c is a struct pfs_bcache. A pfs_stats_fn (util/stats.h). Any thread. */
struct pfs_stat_list;
void pfs_bcache_collect(void *c, struct pfs_stat_list *l);

#endif
