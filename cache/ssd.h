/* ssd.h - the persistent SSD cache tier: blocks of objects kept on a local
 * disk across mounts, under a byte budget, checksummed, optionally zstd
 * compressed, plus the last good listing for a remount while the origin is
 * down.
 *
 * Blocks are keyed by (object path, block index) and tagged with the
 * object's listing fingerprint: a block stored for another version of the
 * object is never served (-ESTALE). Every get verifies the stored bytes'
 * checksum; a bad block is dropped and reported as -EIO, never served.
 *
 * Writes are asynchronous: pfs_ssd_put() copies the block into a bounded
 * queue and returns; one background writer compresses, appends, syncs and
 * only then indexes it, so an entry exists only once its bytes are durable
 * (a kill -9 at any moment leaves no torn entry).
 *
 * Compression (zstd, per block, codec recorded per entry) runs in the
 * writer, never in a caller. AUTO samples the first 16 blocks of each kind
 * (the path's extension, lowercased) after each open and stores that kind
 * raw from then on when they shrank to more than 90%. A block is stored
 * compressed only when that saves at least one 4 KiB unit.
 *
 * Failure modes are soft: a full or failing disk (ENOSPC, EROFS, EIO, the
 * directory removed) disables writes once, with one log line, and gets keep
 * serving what is still readable. A disk already full at open gives a
 * read-only tier (a warning; stored blocks are served, puts refused). A
 * read-only directory at open gives a disabled tier (a warning; every get
 * misses), not an error: the mount keeps working from RAM and the origin.
 * A corrupt index is set aside and the tier starts empty.
 *
 * Threads: pfs_ssd_get, pfs_ssd_put, pfs_ssd_flush, pfs_ssd_stats, pfs_ssd_collect,
 * pfs_ssd_save_listing and pfs_ssd_load_listing may be called by any number
 * of threads at once. pfs_ssd_open and pfs_ssd_close are called once each,
 * by one thread, with no other call in progress on that tier.
 */
#ifndef PFS_SSD_H
#define PFS_SSD_H

#include <stddef.h>
#include <stdint.h>

#include "../catalog/listing.h"

/* Room for a block's content validator, NUL included: the one size of a
 * validator everywhere (catalog/listing.h). */
#define PFS_SSD_ETAG_MAX PFS_ETAG_MAX

/* Longest object path a key can hold (LMDB's 511-byte key limit, less the
 * NUL and the 8-byte block index). */
#define PFS_SSD_PATH_MAX 502

/* Largest listing blob pfs_ssd_save_listing() accepts and
 * pfs_ssd_load_listing() will read back. */
#define PFS_SSD_LISTING_MAX (1ull << 30)

enum pfs_ssd_compress { PFS_SSD_COMPRESS_OFF, PFS_SSD_COMPRESS_ZSTD, PFS_SSD_COMPRESS_AUTO };
enum pfs_ssd_evict {
	PFS_SSD_EVICT_LRU,  /* evict the least recently used blocks to make room */
	PFS_SSD_EVICT_NONE, /* minio/epoch: admit until full, never replace */
};

struct pfs_ssd_opts {
	const char *dir;        /* created if missing */
	uint64_t size;          /* byte budget of stored data; 0 = 90% of (the free
				 * space of dir + what the tier already holds) at open */
	enum pfs_ssd_compress compress;
	int zstd_level;         /* 0 = default 3; 1..19 */
	enum pfs_ssd_evict evict;
	const char *origin_id;  /* secret-free origin name; recorded at first use;
				 * NULL: not checked */
	uint64_t block_size;    /* the size blocks are cut by: part of every
				 * entry's identity, so an entry stored under
				 * another block size (another byte range for the
				 * same index) is never served: a get finds it
				 * stale and drops it. 0: not checked */
	/* Additions (0 = default); tests use small values. */
	uint64_t queue_bytes;   /* write queue bound; default 64 MiB */
	uint64_t segment_size;  /* data segment file size; default 256 MiB */
};

struct pfs_ssd_stats {
	uint64_t hits, misses;      /* gets answered 0 / -ENOENT */
	uint64_t bytes;             /* gauge: disk space held by entries (each
				     * entry's stored length rounded up to 4 KiB) */
	uint64_t raw_bytes;         /* gauge: uncompressed length of the entries */
	uint64_t entries;           /* gauge */
	uint64_t checksum_failures; /* gets that found a bad or unreadable block */
	uint64_t evictions;         /* entries evicted for room (LRU) */
	uint64_t write_errors;      /* failed writes (the first one disables) */
	uint64_t queued;            /* puts accepted into the write queue */
	uint64_t queue_bytes;       /* gauge: bytes now waiting in the queue */
	uint64_t dropped;           /* puts refused (-EAGAIN/-ENOSPC) or not
				     * admitted by the writer (full, disabled) */
	uint64_t compressed_blocks; /* blocks written zstd-compressed */
	uint64_t stale;             /* gets that found another fingerprint */
	uint64_t swept;             /* entries of another block size removed in
				     * the background after a layout change */
	uint64_t sweep_pending;     /* gauge: 1 while that sweep runs */
	uint64_t disabled;          /* 0/1 */
	uint64_t budget;            /* the byte budget in force */
};

struct pfs_ssd;

/* Opens (creating if needed) the tier in o->dir and starts its writer.
 * Returns 0 and *out (freed by pfs_ssd_close), or: -EBUSY (another process
 * or another open holds dir/lock: logged with its pid), -EINVAL (bad
 * options, or dir caches another origin: logged), -ENOMEM, or another
 * negative errno for an unusable dir. A read-only dir is not an error (see
 * above). o's strings are copied. */
int pfs_ssd_open(const struct pfs_ssd_opts *o, struct pfs_ssd **out);
/* Waits for pending writes, stops the writer, releases the lock. NULL ok. */
void pfs_ssd_close(struct pfs_ssd *s);

/* Block `block` of object `path`. `fp` is the object's listing fingerprint
 * (64-bit hash of size, mtime, listing ETag, computed by the caller).
 * Returns 0 (buf filled with exactly len bytes, etag (PFS_SSD_ETAG_MAX
 * bytes) set to the content validator stored with the block, possibly ""),
 * -ENOENT (miss), -ESTALE (an entry exists but its fp or length differs:
 * the entry is dropped), -EIO (checksum/short read/decompress failure: the
 * entry is dropped, counted; the caller refetches). On error buf and etag
 * hold garbage. Never writes to the index: a hit's recency is recorded in
 * memory and applied by the writer. */
int pfs_ssd_get(struct pfs_ssd *s, const char *path, uint64_t block, uint64_t fp,
		void *buf, size_t len, char *etag);

/* Removes block `block` of object `path`, whatever entry is stored for it
 * (an obsolete version's), later, on the writer (best effort: queued
 * like a put, nothing on a disabled or full drop queue). s NULL ok. Any
 * thread. */
void pfs_ssd_drop(struct pfs_ssd *s, const char *path, uint64_t block);

/* 1 if block `block` of object `path` is stored for fingerprint fp with
 * raw length len (its bytes are not read nor verified: a later get still
 * may find them bad), etag (PFS_SSD_ETAG_MAX bytes, may be NULL) then
 * set to its validator; 0 if not (s NULL: 0). Counts no hit or miss and
 * records no use. Any thread. */
int pfs_ssd_has(struct pfs_ssd *s, const char *path, uint64_t block, uint64_t fp, size_t len,
		char *etag);
/* Queues a copy of the block (buf is not kept) and returns at once; never
 * waits for I/O. etag may be NULL (stored as ""). Returns 0, -ENOSPC when
 * the tier is full and the policy refuses (EVICT_NONE; it counts queued
 * blocks at their raw size, so near the limit a compressible block may be
 * refused until the queue drains), -EAGAIN when the
 * queue is full or the tier is disabled, -ENAMETOOLONG for a path longer
 * than PFS_SSD_PATH_MAX, -EINVAL for len 0 or an etag too long. A put of a
 * block already stored with the same fp is a no-op for the writer. */
int pfs_ssd_put(struct pfs_ssd *s, const char *path, uint64_t block, uint64_t fp,
		const char *etag, const void *buf, size_t len);

/* As pfs_ssd_put, without the copy: the writer reads buf itself later,
 * and release(arg) is called exactly once when it is done with it, or at
 * once when the put is refused (any return but 0), possibly on another
 * thread. buf must stay valid and unchanged until then. */
int pfs_ssd_put_ref(struct pfs_ssd *s, const char *path, uint64_t block, uint64_t fp,
		    const char *etag, const void *buf, size_t len, void (*release)(void *),
		    void *arg);
/* As pfs_ssd_put, but refused (-ENOSPC) unless the block fits the budget
 * without evicting anything, whatever the eviction policy (a warm-up
 * never pushes out what a job uses; queued blocks count at their raw
 * size, as under EVICT_NONE). */
int pfs_ssd_put_noevict(struct pfs_ssd *s, const char *path, uint64_t block, uint64_t fp,
			const char *etag, const void *buf, size_t len);
/* Bytes a pfs_ssd_put_noevict() may still add now (a snapshot; 0 for a
 * disabled or full tier, or s NULL). Any thread. */
uint64_t pfs_ssd_room(struct pfs_ssd *s);
/* Returns when every block queued before the call is durable (or dropped),
 * and recorded hits are applied to the LRU order. */
void pfs_ssd_flush(struct pfs_ssd *s);

/* The last good listing, an opaque blob (the caller stores a manifest
 * text), saved atomically (temp file, fsync, rename) with a checksum.
 * Load returns 0 and *buf (len bytes plus a NUL not counted; the caller
 * frees it with free()), -ENOENT if none, -EIO if damaged, -EFBIG over
 * PFS_SSD_LISTING_MAX. Load works on a disabled tier; save does not
 * (-EROFS). */
int pfs_ssd_save_listing(struct pfs_ssd *s, const void *buf, size_t len);
int pfs_ssd_load_listing(struct pfs_ssd *s, char **buf, size_t *len);

/* A snapshot of the counters; any thread, any time. s NULL: all 0. */
void pfs_ssd_stats(struct pfs_ssd *s, struct pfs_ssd_stats *out);

/* Appends the tier's metrics (ssd.hits, ..., ssd.budget; prestofs(1)
 * lists them) to l; s is a struct pfs_ssd, or NULL for a mount without
 * an SSD tier (the same names, all 0). A pfs_stats_fn (util/stats.h).
 * Any thread. */
struct pfs_stat_list;
void pfs_ssd_collect(void *s, struct pfs_stat_list *l);

#endif
