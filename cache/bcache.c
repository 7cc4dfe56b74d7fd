/* bcache.c - see bcache.h.
 *
 * Each shard has its own lock, hash chains, a list of its resident blocks
 * (in LRU order under lru), a FIFO of its staged blocks, and for
 * resident=small/large a heap of its resident blocks with the one to
 * replace first on top. A key always maps to the same shard.
 *
 * Entry states and places (both guarded by the shard lock):
 *   FILLING, in the table, NOWHERE -> the fill runs, unlocked; waiters
 *                                     sleep on the shard's condition
 *   -> READY and RESIDENT or STAGED  (admitted: counted, in a list)
 *   -> READY and NOWHERE             (not admitted: out of the table,
 *                                     freed at the last put)
 *   -> FAILED                        (out of the table; waiters get err)
 * A RESIDENT or STAGED block leaves the table only with refs == 0 (LRU or
 * small/large replacement, a staged block after its read, a stale staged
 * block), so nobody ever holds a freed block.
 *
 * The budget is global: admission reserves the block's bytes on one atomic
 * counter (c->bytes, c->staged) with a compare-and-swap that never passes
 * the cap, so the total is never exceeded whatever the shards do. When the
 * reservation fails the policy may free bytes by evicting from the same
 * shard only (one lock at a time, no lock order to get wrong): a shard's
 * share of the budget is thus fixed once the cache is full, which is why
 * shards hold at least MIN_SHARD_BLOCKS blocks.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "bcache.h"
#include "bufpool.h"
#include "../util/atomic.h"
#include "../util/stats.h"

/* The process-wide counters (bcache.h), atomic. */
static struct pfs_ram_counters ram;

#define MIN_SHARD_BLOCKS 128
#define MAX_SHARDS 64

enum state { FILLING, READY, FAILED };
enum place { NOWHERE, RESIDENT, STAGED };

struct pfs_block {
	uint64_t ino, idx, obj_size;
	size_t len;
	char *data;
	int refs;             /* guarded by the shard lock */
	enum state state;     /* guarded by the shard lock */
	enum place place;     /* guarded by the shard lock */
	int err;              /* FAILED: the fill's error */
	int in_table;         /* guarded by the shard lock */
	int demand;           /* a reader (not a prefetch) got it; shard lock */
	int pf;               /* filled by a prefetch, no reader yet; shard lock */
	size_t read_bytes;    /* bytes of it readers reported reading
			       * (pfs_bcache_put_read), at most len; shard lock */
	int holders;          /* atomic: 1 for the cache, + 1 per pfs_bcache_hold:
			       * the data and struct are freed at 0 */
	uint64_t stage_epoch; /* STAGED: epoch it was staged in */
	size_t heap_pos;      /* RESIDENT, small/large: index in the heap */
	struct pfs_block *hnext;      /* hash chain */
	struct pfs_block *prev, *next; /* RESIDENT: lru list; STAGED: staged list */
};

struct shard {
	pthread_mutex_t lock;
	pthread_cond_t filled;   /* broadcast when any fill ends */
	struct pfs_block **table; /* guarded by lock, as all below */
	size_t nbuckets;
	struct pfs_block lru;    /* sentinel: lru.next is the most recent */
	struct pfs_block staged; /* sentinel: staged.next is the newest */
	struct pfs_block **heap; /* small/large: heap[0] is replaced first */
	size_t heap_len, heap_cap;
	/* The last fills, direct-mapped by key hash: the hash's high bits and
	 * the epoch of the fill (ram.refetched: a block filled twice in one
	 * epoch). nfills is a power of two. */
	uint64_t *fills;
	size_t nfills;
};

struct counters {                /* all atomic */
	uint64_t admitted, replaced, refused, staged, stage_used, stage_stale;
	uint64_t staged_partial, stage_reclaimed, refetched;
	uint64_t prefetch_fills, resident_blocks, staged_blocks;
	uint64_t pf_used_bytes, pf_wasted_bytes;
};

struct pfs_bcache {
	struct shard *shards;
	unsigned nshards;
	enum pfs_policy policy;
	enum pfs_resident resident;
	uint64_t budget, stage_budget;
	uint64_t bytes;          /* atomic: resident bytes reserved */
	uint64_t staged_bytes;   /* atomic: staged bytes reserved */
	uint64_t epoch;          /* atomic */
	int full;                /* atomic: a resident reservation has failed */
	struct counters n;
};

static uint64_t mix(uint64_t ino, uint64_t idx)
{
	uint64_t h = ino * 0x9e3779b97f4a7c15ull ^ (idx + 0x632be59bd9b4e019ull);
	h ^= h >> 31;
	h *= 0xbf58476d1ce4e5b9ull;
	return h ^ (h >> 29);
}

static void list_init(struct pfs_block *sentinel)
{
	sentinel->next = sentinel->prev = sentinel;
}

static void list_unlink(struct pfs_block *e)
{
	e->prev->next = e->next;
	e->next->prev = e->prev;
}

static void list_push(struct pfs_block *sentinel, struct pfs_block *e)
{
	e->next = sentinel->next;
	e->prev = sentinel;
	sentinel->next->prev = e;
	sentinel->next = e;
}

int pfs_bcache_create(const struct pfs_bcache_opts *o, struct pfs_bcache **out)
{
	if ((unsigned)o->policy > PFS_POLICY_EPOCH || (unsigned)o->resident > PFS_RESIDENT_LARGE)
		return -EINVAL;
	struct pfs_bcache *c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->policy = o->policy;
	c->resident = o->policy == PFS_POLICY_LRU ? PFS_RESIDENT_ANY : o->resident;
	c->budget = o->budget;
	c->stage_budget = o->stage_budget;
	c->epoch = 1;
	uint64_t bs = o->block_size ? o->block_size : 1;
	uint64_t blocks = o->budget / bs;
	uint64_t n = blocks / MIN_SHARD_BLOCKS;
	c->nshards = n < 1 ? 1 : n > MAX_SHARDS ? MAX_SHARDS : (unsigned)n;
	/* About one entry per bucket when full, within [256, 1M]. */
	uint64_t want = (blocks + c->stage_budget / bs) / c->nshards, nb = 256;
	while (nb < want && nb < (1u << 20))
		nb <<= 1;
	c->shards = calloc(c->nshards, sizeof(*c->shards));
	if (!c->shards) {
		free(c);
		return -ENOMEM;
	}
	for (unsigned i = 0; i < c->nshards; i++) {
		struct shard *s = &c->shards[i];
		pthread_mutex_init(&s->lock, NULL);
		pthread_cond_init(&s->filled, NULL);
		list_init(&s->lru);
		list_init(&s->staged);
		s->nbuckets = (size_t)nb;
		s->table = calloc(s->nbuckets, sizeof(*s->table));
		/* About four fills per block the shard holds, 1K to 64K. */
		size_t nf = 1024;
		while (nf < 4 * blocks / c->nshards && nf < 65536)
			nf <<= 1;
		s->nfills = nf;
		s->fills = calloc(nf, sizeof(*s->fills));
		if (!s->table || !s->fills) {
			c->nshards = i + 1;
			pfs_bcache_destroy(c);
			return -ENOMEM;
		}
	}
	*out = c;
	return 0;
}

/* Drops one holder of e (the cache, or a pfs_bcache_hold); the last one
 * frees its data and the struct. */
static void block_unref(struct pfs_block *e)
{
	if (__atomic_sub_fetch(&e->holders, 1, __ATOMIC_ACQ_REL) == 0) {
		pfs_bufpool_free(e->data, e->len);
		free(e);
	}
}

void pfs_bcache_hold(struct pfs_block *b)
{
	__atomic_add_fetch(&b->holders, 1, __ATOMIC_RELAXED);
}

void pfs_bcache_release(void *b)
{
	block_unref(b);
}

void pfs_bcache_destroy(struct pfs_bcache *c)
{
	if (!c)
		return;
	for (unsigned i = 0; i < c->nshards; i++) {
		struct shard *s = &c->shards[i];
		for (size_t b = 0; s->table && b < s->nbuckets; b++) {
			struct pfs_block *e = s->table[b];
			while (e) {
				struct pfs_block *next = e->hnext;
				if (e->place != NOWHERE)
					pfs_sub(&ram.bytes, e->len);
				block_unref(e);
				e = next;
			}
		}
		free(s->table);
		free(s->fills);
		free(s->heap);
		pthread_mutex_destroy(&s->lock);
		pthread_cond_destroy(&s->filled);
	}
	free(c->shards);
	free(c);
}

static struct shard *shard_of(struct pfs_bcache *c, uint64_t h)
{
	return &c->shards[(h >> 48) % c->nshards];
}

static void unlink_table(struct shard *s, struct pfs_block *e)
{
	struct pfs_block **pp = &s->table[mix(e->ino, e->idx) % s->nbuckets];
	while (*pp != e)
		pp = &(*pp)->hnext;
	*pp = e->hnext;
	e->in_table = 0;
}

/* Adds n to *ctr unless that would pass cap. */
static int reserve(uint64_t *ctr, uint64_t n, uint64_t cap)
{
	uint64_t cur = pfs_load(ctr);
	do {
		if (n > cap || cur > cap - n)
			return 0;
	} while (!__atomic_compare_exchange_n(ctr, &cur, cur + n, 1, __ATOMIC_RELAXED,
					      __ATOMIC_RELAXED));
	return 1;
}

/* ---- the small/large heap: a max-heap on key() ------------------------- */

/* Higher keys are replaced first. */
static uint64_t key(const struct pfs_bcache *c, const struct pfs_block *e)
{
	return c->resident == PFS_RESIDENT_SMALL ? e->obj_size : UINT64_MAX - e->obj_size;
}

static void heap_set(struct shard *s, size_t i, struct pfs_block *e)
{
	s->heap[i] = e;
	e->heap_pos = i;
}

static void heap_fix(const struct pfs_bcache *c, struct shard *s, size_t i)
{
	struct pfs_block *e = s->heap[i];
	while (i > 0 && key(c, s->heap[(i - 1) / 2]) < key(c, e)) {
		heap_set(s, i, s->heap[(i - 1) / 2]);
		i = (i - 1) / 2;
	}
	for (;;) {
		size_t l = 2 * i + 1, big = i;
		uint64_t kbig = key(c, e);
		if (l < s->heap_len && key(c, s->heap[l]) > kbig)
			big = l, kbig = key(c, s->heap[l]);
		if (l + 1 < s->heap_len && key(c, s->heap[l + 1]) > kbig)
			big = l + 1;
		if (big == i)
			break;
		heap_set(s, i, s->heap[big]);
		i = big;
	}
	heap_set(s, i, e);
}

static int heap_push(const struct pfs_bcache *c, struct shard *s, struct pfs_block *e)
{
	if (s->heap_len == s->heap_cap) {
		size_t cap = s->heap_cap ? 2 * s->heap_cap : 64;
		struct pfs_block **h = realloc(s->heap, cap * sizeof(*h));
		if (!h)
			return -ENOMEM;
		s->heap = h;
		s->heap_cap = cap;
	}
	heap_set(s, s->heap_len++, e);
	heap_fix(c, s, e->heap_pos);
	return 0;
}

static void heap_remove(const struct pfs_bcache *c, struct shard *s, struct pfs_block *e)
{
	size_t i = e->heap_pos;
	struct pfs_block *last = s->heap[--s->heap_len];
	if (last != e) {
		heap_set(s, i, last);
		heap_fix(c, s, i);
	}
}

static int ranked(const struct pfs_bcache *c)
{
	return c->resident != PFS_RESIDENT_ANY;
}

/* ---- admission and dropping (shard lock held) ------------------------ */

/* Takes an admitted, unreferenced block out of the cache; chains it on
 * *victims to be freed once the lock is released. */
static void drop(struct pfs_bcache *c, struct shard *s, struct pfs_block *e,
		 struct pfs_block **victims)
{
	unlink_table(s, e);
	list_unlink(e);
	if (e->place == RESIDENT) {
		if (ranked(c))
			heap_remove(c, s, e);
		pfs_sub(&c->bytes, e->len);
		pfs_sub(&c->n.resident_blocks, 1);
	} else {
		pfs_sub(&c->staged_bytes, e->len);
		pfs_sub(&c->n.staged_blocks, 1);
	}
	pfs_sub(&ram.bytes, e->len);
	if (e->pf)
		pfs_add(&c->n.pf_wasted_bytes, e->len); /* prefetched, never read */
	e->place = NOWHERE;
	e->hnext = *victims;
	*victims = e;
}

/* The resident block to evict so that e may come in, or NULL. */
static struct pfs_block *resident_victim(struct pfs_bcache *c, struct shard *s,
					 const struct pfs_block *e)
{
	if (c->policy == PFS_POLICY_LRU) {
		for (struct pfs_block *v = s->lru.prev; v != &s->lru; v = v->prev)
			if (v->refs == 0)
				return v;
		return NULL;
	}
	/* minio and epoch: never replace, except to prefer smaller or larger
	 * objects; strictly, so the set converges and then stays. A pinned
	 * top is not worked around: the next block will try again. */
	if (!ranked(c) || s->heap_len == 0)
		return NULL;
	struct pfs_block *v = s->heap[0];
	return v->refs == 0 && key(c, v) > key(c, e) ? v : NULL;
}

/* Where a freshly filled block goes; reserves its bytes there. */
static enum place admit(struct pfs_bcache *c, struct shard *s, struct pfs_block *e,
			unsigned flags, struct pfs_block **victims)
{
	/* Once the cache has filled up, a ranked set takes a block into the
	 * room left over by replacements only if it is no worse than the
	 * worst block kept: else that room would churn between blocks that
	 * are taken in, then replaced, every epoch. */
	int worse = ranked(c) && pfs_load(&c->full) &&
		    s->heap_len && key(c, e) > key(c, s->heap[0]);
	if (e->len <= c->budget && !worse) {
		for (;;) {
			if (reserve(&c->bytes, e->len, c->budget)) {
				if (ranked(c) && heap_push(c, s, e) < 0) {
					pfs_sub(&c->bytes, e->len);
					break;
				}
				list_push(&s->lru, e);
				pfs_add(&c->n.admitted, 1);
				pfs_add(&c->n.resident_blocks, 1);
				return RESIDENT;
			}
			/* A warm-up takes free room only: it never evicts what a
			 * job uses (and is never staged, below). */
			if (flags & PFS_BCACHE_WARM)
				break;
			pfs_store(&c->full, 1);
			struct pfs_block *v = resident_victim(c, s, e);
			if (!v)
				break;
			drop(c, s, v, victims);
			pfs_add(&c->n.replaced, 1);
			pfs_add(&ram.evictions, 1);
		}
	}
	/* Staged: a prefetch under the epoch policy (until its read), or a
	 * reader's block the resident set refused (for the rest of its read:
	 * else a reader that takes a block in small pieces, as the kernel does
	 * after an error or without readahead, fetches it once per piece). */
	int demand = !(flags & (PFS_BCACHE_PREFETCH | PFS_BCACHE_WARM));
	int prefetch = (flags & PFS_BCACHE_PREFETCH) && c->policy == PFS_POLICY_EPOCH;
	if (!(demand || prefetch) || e->len > c->stage_budget)
		return NOWHERE;
	uint64_t epoch = pfs_load(&c->epoch);
	for (;;) {
		if (reserve(&c->staged_bytes, e->len, c->stage_budget)) {
			e->stage_epoch = epoch;
			list_push(&s->staged, e);
			pfs_add(demand ? &c->n.staged_partial : &c->n.staged, 1);
			pfs_add(&c->n.staged_blocks, 1);
			return STAGED;
		}
		/* Room only from the oldest staged block, once a reader has had
		 * it (read in part), or staged two epochs ago and never read. */
		struct pfs_block *v = s->staged.prev;
		if (v == &s->staged || v->refs || (!v->demand && v->stage_epoch + 2 > epoch))
			return NOWHERE;
		drop(c, s, v, victims);
		pfs_add(v->demand ? &c->n.stage_reclaimed : &c->n.stage_stale, 1);
		pfs_add(&ram.evictions, 1);
	}
}

static void free_chain(struct pfs_block *e)
{
	while (e) {
		struct pfs_block *next = e->hnext;
		block_unref(e);
		e = next;
	}
}

/* ---- get and put ------------------------------------------------------ */

/* A reader found e in the table (lock held): wait for it, take it. */
static int get_found(struct pfs_bcache *c, struct shard *s, struct pfs_block *e,
		     unsigned flags, struct pfs_block **out)
{
	int demand = !(flags & (PFS_BCACHE_PREFETCH | PFS_BCACHE_WARM));
	e->refs++;
	if (demand)
		e->demand = 1;
	if (demand && e->pf) {
		e->pf = 0;
		pfs_add(&c->n.pf_used_bytes, e->len);
	}
	if (e->state == FILLING) {
		pfs_add(&ram.coalesced, 1);
		while (e->state == FILLING)
			pthread_cond_wait(&s->filled, &s->lock);
	}
	if (e->state == READY) {
		if (c->policy == PFS_POLICY_LRU && e->place == RESIDENT) {
			list_unlink(e);
			list_push(&s->lru, e);
		}
		pthread_mutex_unlock(&s->lock);
		if (demand)
			pfs_add(&ram.hits, 1);
		*out = e;
		return 0;
	}
	int err = e->err;
	int last = --e->refs == 0;
	pthread_mutex_unlock(&s->lock);
	if (last)
		block_unref(e);
	return err;
}

int pfs_bcache_get(struct pfs_bcache *c, uint64_t ino, uint64_t idx, size_t len,
		   uint64_t obj_size, unsigned flags, pfs_bcache_fill_fn fill, void *ctx,
		   struct pfs_block **out)
{
	uint64_t h = mix(ino, idx);
	struct shard *s = shard_of(c, h);
	pthread_mutex_lock(&s->lock);
	struct pfs_block *e = s->table[h % s->nbuckets];
	while (e && !(e->ino == ino && e->idx == idx))
		e = e->hnext;
	if (e)
		return get_found(c, s, e, flags, out);
	e = calloc(1, sizeof(*e));
	if (!e) {
		pthread_mutex_unlock(&s->lock);
		return -ENOMEM;
	}
	*e = (struct pfs_block){.ino = ino, .idx = idx, .obj_size = obj_size, .len = len,
				.refs = 1, .holders = 1, .state = FILLING, .place = NOWHERE,
				.in_table = 1,
				.demand = !(flags & (PFS_BCACHE_PREFETCH | PFS_BCACHE_WARM))};
	e->hnext = s->table[h % s->nbuckets];
	s->table[h % s->nbuckets] = e;
	uint64_t tag = (h & ~0xfffffull) | (pfs_load(&c->epoch) & 0xfffff);
	uint64_t *slot = &s->fills[(h >> 7) & (s->nfills - 1)];
	if (*slot == tag)
		pfs_add(&c->n.refetched, 1);
	*slot = tag;
	pthread_mutex_unlock(&s->lock);
	if (flags & PFS_BCACHE_PREFETCH)
		pfs_add(&c->n.prefetch_fills, 1);
	else if (!(flags & PFS_BCACHE_WARM))
		pfs_add(&ram.misses, 1);

	int rc = (e->data = pfs_bufpool_alloc(len)) ? fill(ctx, e->data, len) : -ENOMEM;

	struct pfs_block *victims = NULL;
	pthread_mutex_lock(&s->lock);
	if (rc == 0) {
		e->state = READY;
		e->place = admit(c, s, e, flags, &victims);
		if (flags & PFS_BCACHE_PREFETCH) {
			if (e->demand) /* a reader waited for this prefetch */
				pfs_add(&c->n.pf_used_bytes, len);
			else if (e->place == NOWHERE)
				pfs_add(&c->n.pf_wasted_bytes, len);
			else
				e->pf = 1;
		}
		if (e->place == NOWHERE) {
			unlink_table(s, e);
			pfs_add(&c->n.refused, 1);
		} else {
			pfs_add(&ram.bytes, len);
		}
	} else {
		e->state = FAILED;
		e->err = rc;
		unlink_table(s, e);
		e->refs--;
	}
	pthread_cond_broadcast(&s->filled);
	int free_now = rc < 0 && e->refs == 0;
	pthread_mutex_unlock(&s->lock);
	free_chain(victims);
	if (free_now)
		block_unref(e);
	if (rc == 0)
		*out = e;
	return rc;
}

void pfs_bcache_put(struct pfs_bcache *c, struct pfs_block *b)
{
	pfs_bcache_put_read(c, b, b ? b->len : 0);
}

void pfs_bcache_put_read(struct pfs_bcache *c, struct pfs_block *b, size_t nread)
{
	if (!b)
		return;
	struct shard *s = shard_of(c, mix(b->ino, b->idx));
	struct pfs_block *victims = NULL;
	pthread_mutex_lock(&s->lock);
	/* Summed, not the furthest offset: the kernel's readahead may read a
	 * block's end before its start. */
	b->read_bytes = nread >= b->len - b->read_bytes ? b->len : b->read_bytes + nread;
	if (--b->refs == 0) {
		if (b->place == STAGED && b->demand && b->read_bytes >= b->len) {
			/* Read whole in this epoch: it will not be read again. */
			drop(c, s, b, &victims);
			pfs_add(&c->n.stage_used, 1);
		} else if (b->place == NOWHERE && !b->in_table) {
			b->hnext = NULL;
			victims = b;
		}
	}
	pthread_mutex_unlock(&s->lock);
	free_chain(victims);
}

void pfs_bcache_set_epoch(struct pfs_bcache *c, uint64_t epoch)
{
	pfs_store(&c->epoch, epoch);
}

const void *pfs_block_data(const struct pfs_block *b)
{
	return b->data;
}

size_t pfs_block_len(const struct pfs_block *b)
{
	return b->len;
}

void pfs_bcache_stats(struct pfs_bcache *c, struct pfs_bcache_stats *out)
{
	*out = (struct pfs_bcache_stats){
		.budget = c->budget,
		.resident_bytes = pfs_load(&c->bytes),
		.resident_blocks = pfs_load(&c->n.resident_blocks),
		.stage_budget = c->stage_budget,
		.staged_bytes = pfs_load(&c->staged_bytes),
		.staged_blocks = pfs_load(&c->n.staged_blocks),
		.admitted = pfs_load(&c->n.admitted),
		.replaced = pfs_load(&c->n.replaced),
		.refused = pfs_load(&c->n.refused),
		.staged = pfs_load(&c->n.staged),
		.stage_used = pfs_load(&c->n.stage_used),
		.stage_stale = pfs_load(&c->n.stage_stale),
		.staged_partial = pfs_load(&c->n.staged_partial),
		.stage_reclaimed = pfs_load(&c->n.stage_reclaimed),
		.refetched = pfs_load(&c->n.refetched),
		.prefetch_fills = pfs_load(&c->n.prefetch_fills),
		.prefetch_used_bytes = pfs_load(&c->n.pf_used_bytes),
		.prefetch_wasted_bytes = pfs_load(&c->n.pf_wasted_bytes),
		.epoch = pfs_load(&c->epoch),
	};
}

/* The names of this cache's metrics: here only. */
#define ROW(name, member, gauge) PFS_STAT_ROW(struct pfs_bcache_stats, name, member, gauge)
static const struct pfs_stat_row metrics[] = {
	ROW("ram.budget", budget, 1),
	ROW("ram.resident_bytes", resident_bytes, 1),
	ROW("ram.resident_blocks", resident_blocks, 1),
	ROW("ram.stage_budget", stage_budget, 1),
	ROW("ram.staged_bytes", staged_bytes, 1),
	ROW("ram.staged_blocks", staged_blocks, 1),
	ROW("ram.admitted", admitted, 0),
	ROW("ram.replaced", replaced, 0),
	ROW("ram.refused", refused, 0),
	ROW("ram.staged", staged, 0),
	ROW("ram.stage_used", stage_used, 0),
	ROW("ram.stage_stale", stage_stale, 0),
	ROW("ram.staged_partial", staged_partial, 0),
	ROW("ram.stage_reclaimed", stage_reclaimed, 0),
	ROW("ram.refetched", refetched, 0),
	ROW("ram.prefetch_fills", prefetch_fills, 0),
	ROW("prefetch.bytes_used", prefetch_used_bytes, 0),
	ROW("prefetch.bytes_wasted", prefetch_wasted_bytes, 0),
};
#undef ROW
#define ROW(name, member, gauge) PFS_STAT_ROW(struct pfs_ram_counters, name, member, gauge)
static const struct pfs_stat_row process_metrics[] = {
	ROW("ram.hits", hits, 0),
	ROW("ram.misses", misses, 0),
	ROW("ram.bytes", bytes, 1),
	ROW("ram.evictions", evictions, 0),
	ROW("coalesced", coalesced, 0),
};
#undef ROW

void pfs_bcache_counters(struct pfs_ram_counters *out)
{
	*out = (struct pfs_ram_counters){
		.hits = pfs_load(&ram.hits), .misses = pfs_load(&ram.misses),
		.bytes = pfs_load(&ram.bytes), .evictions = pfs_load(&ram.evictions),
		.coalesced = pfs_load(&ram.coalesced),
	};
}

void pfs_bcache_collect(void *c, struct pfs_stat_list *l)
{
	struct pfs_bcache_stats st;
	pfs_bcache_stats(c, &st);
	pfs_stat_list_add_rows(l, metrics, sizeof(metrics) / sizeof(metrics[0]), &st);
	pfs_stat_list_add_live(l, process_metrics,
			       sizeof(process_metrics) / sizeof(process_metrics[0]), &ram);
}

int pfs_bcache_has_room(struct pfs_bcache *c, size_t len)
{
	uint64_t used = pfs_load(&c->bytes);
	return len <= c->budget && used <= c->budget - len;
}

int pfs_bcache_contains(struct pfs_bcache *c, uint64_t ino, uint64_t idx)
{
	uint64_t h = mix(ino, idx);
	struct shard *s = shard_of(c, h);
	pthread_mutex_lock(&s->lock);
	struct pfs_block *e = s->table[h % s->nbuckets];
	while (e && !(e->ino == ino && e->idx == idx))
		e = e->hnext;
	int found = e && e->state != FAILED;
	pthread_mutex_unlock(&s->lock);
	return found;
}
