/* prefetch.h - the epoch-aware prefetcher: background work that brings
 * blocks into the cache before readers ask for them.
 *
 * Three sources of work, in this priority:
 *  1. sequential readahead: a reader that reads a large file (bigger than a
 *     block) sequentially gets the next blocks fetched ahead, the window
 *     doubling up to PFS_PREFETCH_RA_MAX blocks. Streams are matched by
 *     offset (a read that starts where an earlier read of the file ended),
 *     so loader workers interleaving one file are not taken for random
 *     readers, and a random reader gets no readahead at all;
 *  2. order hints: the files of the epoch's order (pfs_prefetch_order_*),
 *     fetched in exactly that order, at most `window` files ahead of the
 *     reader's position (the highest order index read so far). There may
 *     be several orders at once, one per stream (a stream per DDP rank):
 *     each has its own position and window, and the workers take the next
 *     file of the stream least far ahead of its reader (ties in turn), so
 *     the rank about to run dry is served first when room is scarce;
 *     see "Order streams" below;
 *  3. background fill (no order this epoch): the files of the subtree being
 *     read that were not read yet this epoch, in a random order.
 * Work is taken only while the cache has room (the room callback), so
 * prefetching never pushes out what the epoch still needs; the cache's
 * policy decides where a prefetched block goes (resident set while it has
 * room, else the staging area).
 *
 * A file of several blocks starts with block 0 alone; its other blocks
 * follow once that succeeded. A failed fetch drops the rest of its file
 * and pauses all background work (50 ms, doubling to 5 s while failures
 * repeat), so a broken origin sees no more requests from an idle mount
 * than from a busy one.
 *
 * Demand reads never wait behind this queue: they are served on FUSE
 * threads; the prefetcher has its own `workers` threads, each with at most
 * one fetch in flight. Thread-safe.
 */
#ifndef PFS_PREFETCH_H
#define PFS_PREFETCH_H

#include <stddef.h>
#include <stdint.h>

#define PFS_PREFETCH_RA_MAX 16 /* blocks of sequential readahead, at most */

struct pfs_ftable;
struct pfs_epoch;
struct pfs_prefetch;

/* An object is a file (its table node) or a view of one: node |
 * (spec + 1) << 32 (see fs/views.h). Views are fetched whole, as one item. */
#define PFS_PREFETCH_OBJ(node, view) ((uint64_t)(node) | (uint64_t)(view) << 32)
#define PFS_PREFETCH_NODE(obj) ((uint32_t)(obj))
#define PFS_PREFETCH_VIEW(obj) ((uint32_t)((obj) >> 32)) /* 0: the file itself */

/* Brings block `blk` of object `obj` into the cache as a prefetch. Runs on
 * a prefetch worker. Returns 0 or a negative errno. */
typedef int (*pfs_prefetch_fetch_fn)(void *ctx, uint64_t obj, uint64_t blk, size_t len);
/* 1 if the cache has room for `len` more prefetched bytes, given that
 * `inflight` bytes of prefetches are being fetched now. */
typedef int (*pfs_prefetch_room_fn)(void *ctx, uint64_t len, uint64_t inflight);
/* 0 to fetch block `blk` of `obj`; PFS_PREFETCH_SKIP_BLOCK if it is
 * already in RAM (or being fetched): the scheduler skips it without
 * waking a worker; PFS_PREFETCH_SKIP_OBJECT to skip all of `obj` (the
 * origin just failed it). May be NULL. Called with the scheduler's lock
 * held: must not call back into the prefetcher. */
#define PFS_PREFETCH_SKIP_BLOCK 1
#define PFS_PREFETCH_SKIP_OBJECT 2
typedef int (*pfs_prefetch_cached_fn)(void *ctx, uint64_t obj, uint64_t blk);

struct pfs_prefetch_opts {
	const struct pfs_ftable *ft;   /* borrowed; immutable */
	struct pfs_epoch *epoch;       /* borrowed */
	size_t block_size;
	unsigned workers;              /* fetches in flight at most; 0: none,
					* see pfs_prefetch_run_once() */
	unsigned window;               /* order hints: files ahead of the reader */
	pfs_prefetch_fetch_fn fetch;
	pfs_prefetch_room_fn room;
	pfs_prefetch_cached_fn cached; /* optional */
	void *ctx;                     /* for fetch, room and cached */
};

struct pfs_prefetch_stats {
	uint64_t inflight;        /* fetches running now */
	uint64_t blocks, bytes;   /* prefetches completed */
	uint64_t errors;
	uint64_t readahead_blocks;
	/* Over all order streams (the one stream's values when there is one). */
	uint64_t order_entries, order_unknown;
	uint64_t order_position;  /* highest order index read + 1 */
	uint64_t order_streams;   /* live streams */
	uint64_t background_files;
	uint64_t skipped_cached;  /* items found in RAM already, not fetched */
	uint64_t order_shortfall; /* stream reads' misses while the cache had
				   * no room for what the streams wanted ahead */
};

int pfs_prefetch_create(const struct pfs_prefetch_opts *o, struct pfs_prefetch **out);
/* Stops the workers (waiting for fetches in flight). NULL allowed. */
void pfs_prefetch_destroy(struct pfs_prefetch *p);

/* What a demand read cost: blocks found in RAM (hits, including blocks a
 * fetch in flight delivered) and blocks it had to fill (misses), and how
 * long it waited for them when that was a stall. */
struct pfs_prefetch_demand {
	uint32_t hits, misses;
	uint64_t stall_ns;
};

/* A demand read of [off, off+len) of file `node` of `size` bytes; d (may
 * be NULL) is charged to the order stream the read belongs to. Cheap; any
 * thread (FUSE workers call it on every read). */
void pfs_prefetch_on_read(struct pfs_prefetch *p, uint32_t node, uint64_t size,
			  uint64_t off, size_t len, const struct pfs_prefetch_demand *d);

/* Order streams.
 *
 * A stream is a name and an order. pfs_prefetch_order_begin(p, NAME)
 * starts a new order in stream NAME, replacing that stream's order (a
 * rank's next epoch) and creating the stream when it is new; NULL (or
 * PFS_PREFETCH_DEFAULT_STREAM) is the unnamed stream of a single loader.
 * A read belongs to the stream whose order holds the file nearest to that
 * stream's position (ahead or just behind it: DataLoader workers finish
 * slightly out of order), and moves that stream's position; so ranks
 * with disjoint shards, or jobs reading the same files in different
 * orders, each move their own stream, and a shard's padding (a file of
 * another rank's shard, read again at the end of this one) is charged to
 * the stream where it is next.
 *
 * Limits: PFS_PREFETCH_STREAMS_MAX streams (a new one beyond that ends
 * the one read least recently); a stream neither read nor written for
 * PFS_PREFETCH_STREAM_IDLE_S ends; background fill runs only while no
 * stream is live. Memory: about 24 bytes per order entry (the order, 8,
 * and a hash of its files, 8 per slot at most 2/3 full). */
#define PFS_PREFETCH_STREAMS_MAX 64
#define PFS_PREFETCH_STREAM_NAME_MAX 48   /* bytes of a name, at most */
#define PFS_PREFETCH_STREAM_IDLE_S 600.0
#define PFS_PREFETCH_DEFAULT_STREAM "default"

/* 1 if `name` may name a stream: 1 to PFS_PREFETCH_STREAM_NAME_MAX bytes
 * of [A-Za-z0-9._:-]. Pure. */
int pfs_prefetch_stream_name_ok(const char *name);
/* Starts a new order in stream `name` (see above; the stream's counters
 * restart with it). Returns the stream's handle for
 * pfs_prefetch_order_add(), or 0 when the name is not valid or memory ran
 * out. */
uint64_t pfs_prefetch_order_begin(struct pfs_prefetch *p, const char *name);
/* The handle of stream `name`'s current order (NULL: the unnamed
 * stream), to append to it, or 0 when there is no such stream. */
uint64_t pfs_prefetch_order_find(struct pfs_prefetch *p, const char *name);
/* Appends objects (PFS_PREFETCH_OBJ) to the order of stream `stream` (a
 * handle from pfs_prefetch_order_begin; dropped if that order was replaced
 * or its stream ended since); `unknown` counts entries the caller could
 * not resolve. */
void pfs_prefetch_order_add(struct pfs_prefetch *p, uint64_t stream, const uint64_t *objs,
			    size_t n, size_t unknown);

/* One stream's counters, since its current order began. */
struct pfs_prefetch_stream_stats {
	char name[PFS_PREFETCH_STREAM_NAME_MAX + 1];
	uint64_t entries, unknown;
	uint64_t position;          /* highest order index read + 1 */
	uint64_t demand_hits, demand_misses; /* blocks, of its reads */
	uint64_t stall_ns;          /* its reads' stalls */
	uint64_t shortfall;         /* of its misses, those while the cache had
				     * no room for what the streams wanted */
	double idle_s;              /* since it was last read or written */
};
/* Up to max live streams into out, by name; returns how many. Any thread. */
size_t pfs_prefetch_streams(struct pfs_prefetch *p, struct pfs_prefetch_stream_stats *out,
			    size_t max);

/* A snapshot of the counters (one lock, briefly). Any thread. */
void pfs_prefetch_stats(struct pfs_prefetch *p, struct pfs_prefetch_stats *out);
/* Appends the prefetcher's metrics (prefetch.inflight, ...; prestofs(1)
 * lists them) and each stream's (stream.entries, ... labelled with its
 * name) to l; p is a struct pfs_prefetch. A pfs_stats_fn
 * (util/stats.h). Any thread. */
struct pfs_stat_list;
void pfs_prefetch_collect(void *p, struct pfs_stat_list *l);

/* Runs one scheduling step on the calling thread: takes the next item (if
 * the cache has room) and fetches it. Returns 1 if it fetched something, 0
 * if there was nothing to do. With workers = 0 nothing runs in the
 * background, so tests drive the scheduler deterministically with this. */
int pfs_prefetch_run_once(struct pfs_prefetch *p);

#endif
