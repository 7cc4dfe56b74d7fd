/* prefetch_int.h - private to prefetch/: the prefetcher's state, its three
 * sources of work and the scheduler that asks them (prefetch.h says what
 * each does for a user).
 *
 * Files, each with one prefix, calls pointing down this list only:
 *   prefetch.c    pfs_prefetch_  the scheduler: workers, the step that takes
 *                                an item and fetches it, the current
 *                                object, error backoff, counters; the API
 *   readahead.c   pf_ra_         readahead: a queue of blocks ahead of each
 *                                sequential reader of a large file
 *   orders.c      pf_ord_        order streams: each stream's order, its
 *                                position, its window ahead of its reader
 *   background.c  pf_bg_         background fill: the unread files of the
 *                                subtree being read, in a random order
 *   prefetch_int.h               this header, and its inline helpers
 * The scheduler asks the sources in that priority (next_item): readahead
 * yields blocks; orders and background yield objects, whose blocks the
 * scheduler then takes one by one as "the current object".
 *
 * Words: a "reader" (readahead) is a sequential reader of one file, matched
 * by the offset it reads next; a "stream" is only ever an order stream
 * (prefetch.h); an "object" is a file or a view (PFS_PREFETCH_OBJ); an
 * "item" is one block of an object to fetch.
 *
 * The current object (struct pf_cur; prefetch.c):
 *
 *   NONE --an order or background object--> ISSUING (blk < nblk)
 *   ISSUING --block 0 of a multi-block object taken--> PROBING
 *   PROBING --block 0 fetched, or found cached--> ISSUING
 *   ISSUING --its last block taken--> NONE
 *   any --a fetch of it failed, it was skipped whole, or an order
 *         began--> NONE (cur_drop)
 * While PROBING no other block of it is taken (a file the origin cannot
 * serve costs one request, not one per worker).
 *
 * Idle: `idle_empty` is set by a scan that found no item at all (not "no
 * room"); while set, a read wakes no worker unless it made new work
 * (pf_wake). Worker 0 polls every 100 ms, so nothing waits longer.
 *
 * Locking: one mutex, `lock`, guards everything below it in struct
 * pfs_prefetch, all sources included; every pf_ function is called with
 * it held, and none blocks or calls out except pfs_prefetch_opts.cached
 * (which must not call back). It is dropped only around a fetch.
 */
#ifndef PFS_PREFETCH_INT_H
#define PFS_PREFETCH_INT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "prefetch.h"
#include "../catalog/ftable.h"

/* ---- readahead.c --------------------------------------------------------- */

#define PF_RA_QUEUE 1024   /* blocks queued ahead, at most */
#define PF_RA_READERS 64   /* sequential readers tracked at once */

struct pf_ra_item {
	uint32_t node;
	uint64_t blk;
};

/* A sequential reader of one file, matched by the offset it reads next. */
struct pf_reader {
	uint32_t node;
	uint64_t next_off;  /* where its next read should start */
	uint64_t queued_to; /* blocks below this are queued or read */
	unsigned window;    /* blocks ahead, doubling; 0: a free slot */
	uint64_t last_use;  /* for replacement */
};

struct pf_readahead {
	struct pf_ra_item q[PF_RA_QUEUE];
	size_t head, n;
	struct pf_reader readers[PF_RA_READERS];
	uint64_t clock;
};

/* ---- orders.c -------------------------------------------------------------- */

/* An order stream (prefetch.h): its order, and where its files are in it
 * (an open-addressing hash of node + 1 -> first index + 1). id 0: a free
 * slot. */
struct pf_stream {
	uint64_t id;
	char name[PFS_PREFETCH_STREAM_NAME_MAX + 1];
	uint64_t *order;        /* objects, in order */
	size_t n, cap, next;    /* next: the next entry to prefetch */
	uint32_t *keys, *vals;  /* hcap slots each; 0: empty */
	size_t hcap, hused;
	uint64_t pos;           /* highest index read + 1 */
	uint64_t unknown;
	double last_use;        /* CLOCK_MONOTONIC s of its last read or write */
	uint64_t hits, misses, stall_ns;
	uint64_t shortfall;     /* misses while the cache had no room ahead */
	double last_start;      /* when a file of it was last read from 0 */
	double gap_avg;         /* s between such reads (EWMA) */
	double size_avg;        /* bytes of those files (EWMA) */
	uint64_t starts;        /* such reads */
};

struct pf_orders {
	struct pf_stream s[PFS_PREFETCH_STREAMS_MAX];
	unsigned live;          /* streams with id != 0 */
	unsigned rr;            /* ties are taken in turn from here */
	uint64_t ids;           /* the last id given */
	double expired;         /* when idle streams were last looked for */
	int warned_short;       /* the shortfall was said */
};

/* ---- background.c ---------------------------------------------------------- */

#define PF_NO_SCOPE UINT32_MAX

struct pf_background {
	uint32_t *perm;         /* a random permutation of the scope's files */
	size_t n, next;
	uint64_t epoch;         /* the epoch it was made for */
	double made;            /* when (CLOCK_MONOTONIC s) */
	uint32_t scope;         /* subtree root being read; PF_NO_SCOPE: none */
	int scope_changed;      /* the permutation is of another scope */
	uint64_t rng;
};

/* ---- prefetch.c: the scheduler ----------------------------------------------- */

struct pf_cur {
	uint64_t obj;
	uint64_t blk, nblk;     /* the next block to take, and how many */
	int probing;            /* PROBING: block 0 in flight alone */
};

struct pf_worker {
	struct pfs_prefetch *p;
	unsigned id;
};

struct pfs_prefetch {
	struct pfs_prefetch_opts o;
	struct pf_worker *args;
	uint32_t nfiles;
	pthread_t *threads;
	unsigned nthreads;

	pthread_mutex_t lock;
	pthread_cond_t wake;
	/* Everything below is guarded by lock. */
	int stop;
	struct pf_readahead ra;
	struct pf_orders ord;
	struct pf_background bg;
	struct pf_cur cur;
	int idle_empty;         /* see "Idle" above */
	/* Errors back off: no work is taken before err_until (CLOCK_MONOTONIC
	 * s), which doubles with each consecutive error up to ERR_BACKOFF_MAX. */
	double err_until;
	unsigned err_streak;
	/* Room: when a step last found none while a stream had work within
	 * its window (CLOCK_MONOTONIC s; 0: never). */
	double no_room_at;
	double fetch_avg;       /* a prefetch's fetch, s (EWMA; 0: none yet) */
	double miss_avg;        /* a demand miss's wait per block, s (EWMA) */
	unsigned inflight;
	uint64_t inflight_bytes;
	struct pfs_prefetch_stats st;
};

/* ---- helpers every file uses (lock held or not: read-only inputs) --------- */

static inline size_t pf_block_len(const struct pfs_prefetch *p, uint64_t size, uint64_t blk)
{
	uint64_t off = blk * p->o.block_size;
	return (size_t)(size - off < p->o.block_size ? size - off : p->o.block_size);
}

/* A node's size; *is_dir 1 for a directory or a node not in the table. */
static inline uint64_t pf_file_size(const struct pfs_prefetch *p, uint32_t node, int *is_dir)
{
	struct pfs_fnode info;
	if (pfs_ftable_get(p->o.ft, node, &info) < 0) {
		*is_dir = 1;
		return 0;
	}
	*is_dir = info.is_dir;
	return info.size;
}

/* ---- readahead.c ------------------------------------------------------------- */

/* The next queued block: 1 and the item, 0 when none. */
int pf_ra_next(struct pfs_prefetch *p, uint64_t *obj, uint64_t *blk, size_t *len);
/* A demand read of [off, off+len) of file `node` (size bytes, more than
 * a block): 1 when it queued blocks (new work), else 0. */
int pf_ra_note(struct pfs_prefetch *p, uint32_t node, uint64_t size, uint64_t off, size_t len);

/* ---- orders.c ---------------------------------------------------------------- */

/* The next object of the streams' windows, from the stream least far
 * ahead of its reader (ties in turn): 1 and *obj, 0 when none. */
int pf_ord_next(struct pfs_prefetch *p, uint64_t *obj);
/* 1 when a stream has entries within its window not fetched yet. */
int pf_ord_want(const struct pfs_prefetch *p);
/* A demand read of `node` (size bytes) at off, costing d (may be NULL):
 * charged to the stream it belongs to (if any), whose position it moves.
 * 1 when that moved a window (new work), else 0. */
int pf_ord_note(struct pfs_prefetch *p, uint32_t node, uint64_t size, uint64_t off,
		const struct pfs_prefetch_demand *d);
/* The stream named `name` started anew (created, or the least recently
 * used one replaced): its id, or 0 for a bad name. */
uint64_t pf_ord_begin(struct pfs_prefetch *p, const char *name);
uint64_t pf_ord_find(const struct pfs_prefetch *p, const char *name);
/* Appends to stream `id`'s order: 1 when appended, 0 when the stream is
 * gone (or memory ran out: counted as unknown). */
int pf_ord_add(struct pfs_prefetch *p, uint64_t id, const uint64_t *objs, size_t n,
	       size_t unknown);
/* Ends the streams idle for PFS_PREFETCH_STREAM_IDLE_S (looked for at
 * most once a second). */
void pf_ord_expire(struct pfs_prefetch *p, double now);
/* Fills the order_* fields of out. */
void pf_ord_stats(const struct pfs_prefetch *p, struct pfs_prefetch_stats *out);
size_t pf_ord_streams(struct pfs_prefetch *p, struct pfs_prefetch_stream_stats *out,
		      size_t max, double now);
void pf_ord_free(struct pfs_prefetch *p);

/* ---- background.c ------------------------------------------------------------ */

/* The next file of the scope not read this epoch (the permutation made
 * anew for a new scope or epoch): 1 and *obj, 0 when none. */
int pf_bg_next(struct pfs_prefetch *p, uint64_t *obj);
/* A read at offset 0 of `node`, while no stream is live: the scope
 * widens to cover it. 1 when there is new work (a new scope or epoch). */
int pf_bg_note(struct pfs_prefetch *p, uint32_t node);
void pf_bg_free(struct pfs_prefetch *p);

#endif
