/* bcache.c - see bcache.h.
 *
 * Each shard has its own lock, hash chain table, LRU list and share of the
 * budget; a key always maps to the same shard. Entry states:
 *   FILLING -> READY   (fill succeeded; now in the LRU and counted)
 *   FILLING -> removed (fill failed; waiters get the error)
 * An entry is freed when it is out of the table and its refcount is 0.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "bcache.h"
#include "../util/stats.h"

enum state { FILLING, READY, FAILED };

struct pfs_block {
	uint64_t ino, idx;
	size_t len;
	char *data;
	int refs;             /* guarded by the shard lock */
	enum state state;     /* guarded by the shard lock */
	int err;              /* FAILED: the fill's error */
	int in_table;
	struct pfs_block *hnext;             /* hash chain */
	struct pfs_block *lru_prev, *lru_next; /* READY entries only */
};

struct shard {
	pthread_mutex_t lock;
	pthread_cond_t filled; /* broadcast when any fill ends */
	struct pfs_block **table;
	size_t nbuckets;
	struct pfs_block lru;  /* sentinel: lru.lru_next is the most recent */
	uint64_t bytes, budget;
};

struct pfs_bcache {
	struct shard *shards;
	unsigned nshards;
};

static uint64_t mix(uint64_t ino, uint64_t idx)
{
	uint64_t h = ino * 0x9e3779b97f4a7c15ull ^ (idx + 0x632be59bd9b4e019ull);
	h ^= h >> 31;
	h *= 0xbf58476d1ce4e5b9ull;
	return h ^ (h >> 29);
}

int pfs_bcache_create(uint64_t budget, size_t block_size, struct pfs_bcache **out)
{
	struct pfs_bcache *c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	/* At least 16 blocks per shard, at most 64 shards. */
	uint64_t n = block_size ? budget / (16 * (uint64_t)block_size) : 1;
	c->nshards = n < 1 ? 1 : n > 64 ? 64 : (unsigned)n;
	c->shards = calloc(c->nshards, sizeof(*c->shards));
	if (!c->shards) {
		free(c);
		return -ENOMEM;
	}
	for (unsigned i = 0; i < c->nshards; i++) {
		struct shard *s = &c->shards[i];
		pthread_mutex_init(&s->lock, NULL);
		pthread_cond_init(&s->filled, NULL);
		s->nbuckets = 4096;
		s->table = calloc(s->nbuckets, sizeof(*s->table));
		s->lru.lru_next = s->lru.lru_prev = &s->lru;
		s->budget = budget / c->nshards;
		if (!s->table) {
			c->nshards = i + 1;
			pfs_bcache_destroy(c);
			return -ENOMEM;
		}
	}
	*out = c;
	return 0;
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
				if (e->state == READY)
					pfs_stat_sub(ram_bytes, e->len);
				free(e->data);
				free(e);
				e = next;
			}
		}
		free(s->table);
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

static void unlink_table(struct shard *s, struct pfs_block *e, uint64_t h)
{
	struct pfs_block **pp = &s->table[h % s->nbuckets];
	while (*pp != e)
		pp = &(*pp)->hnext;
	*pp = e->hnext;
	e->in_table = 0;
}

static void lru_unlink(struct pfs_block *e)
{
	e->lru_prev->lru_next = e->lru_next;
	e->lru_next->lru_prev = e->lru_prev;
}

static void lru_push(struct shard *s, struct pfs_block *e)
{
	e->lru_next = s->lru.lru_next;
	e->lru_prev = &s->lru;
	s->lru.lru_next->lru_prev = e;
	s->lru.lru_next = e;
}

/* Evicts unreferenced blocks from the cold end until within budget.
 * Returns blocks to free after unlocking (chained through hnext). */
static struct pfs_block *evict(struct shard *s)
{
	struct pfs_block *victims = NULL;
	struct pfs_block *e = s->lru.lru_prev;
	while (s->bytes > s->budget && e != &s->lru) {
		struct pfs_block *prev = e->lru_prev;
		if (e->refs == 0) {
			lru_unlink(e);
			unlink_table(s, e, mix(e->ino, e->idx));
			s->bytes -= e->len;
			pfs_stat_sub(ram_bytes, e->len);
			pfs_stat_add(ram_evictions, 1);
			e->hnext = victims;
			victims = e;
		}
		e = prev;
	}
	return victims;
}

static void free_chain(struct pfs_block *e)
{
	while (e) {
		struct pfs_block *next = e->hnext;
		free(e->data);
		free(e);
		e = next;
	}
}

int pfs_bcache_get(struct pfs_bcache *c, uint64_t ino, uint64_t idx, size_t len,
		   pfs_bcache_fill_fn fill, void *ctx, struct pfs_block **out)
{
	uint64_t h = mix(ino, idx);
	struct shard *s = shard_of(c, h);
	pthread_mutex_lock(&s->lock);
	struct pfs_block *e = s->table[h % s->nbuckets];
	while (e && !(e->ino == ino && e->idx == idx))
		e = e->hnext;
	if (e) {
		e->refs++;
		if (e->state == FILLING) {
			pfs_stat_add(coalesced, 1);
			while (e->state == FILLING)
				pthread_cond_wait(&s->filled, &s->lock);
		}
		if (e->state == READY) {
			lru_unlink(e);
			lru_push(s, e);
			pthread_mutex_unlock(&s->lock);
			pfs_stat_add(ram_hits, 1);
			*out = e;
			return 0;
		}
		int err = e->err;
		int last = --e->refs == 0;
		pthread_mutex_unlock(&s->lock);
		if (last) {
			free(e->data);
			free(e);
		}
		return err;
	}
	e = calloc(1, sizeof(*e));
	if (!e) {
		pthread_mutex_unlock(&s->lock);
		return -ENOMEM;
	}
	*e = (struct pfs_block){.ino = ino, .idx = idx, .len = len, .refs = 1,
				.state = FILLING, .in_table = 1};
	e->hnext = s->table[h % s->nbuckets];
	s->table[h % s->nbuckets] = e;
	pthread_mutex_unlock(&s->lock);
	pfs_stat_add(ram_misses, 1);

	int rc = (e->data = malloc(len ? len : 1)) ? fill(ctx, e->data, len) : -ENOMEM;

	struct pfs_block *victims = NULL;
	pthread_mutex_lock(&s->lock);
	if (rc == 0) {
		e->state = READY;
		lru_push(s, e);
		s->bytes += len;
		pfs_stat_add(ram_bytes, len);
		victims = evict(s);
	} else {
		e->state = FAILED;
		e->err = rc;
		unlink_table(s, e, h);
		e->refs--;
	}
	pthread_cond_broadcast(&s->filled);
	int free_now = rc < 0 && e->refs == 0;
	pthread_mutex_unlock(&s->lock);
	free_chain(victims);
	if (free_now) {
		free(e->data);
		free(e);
	}
	if (rc == 0)
		*out = e;
	return rc;
}

void pfs_bcache_put(struct pfs_bcache *c, struct pfs_block *b)
{
	if (!b)
		return;
	uint64_t h = mix(b->ino, b->idx);
	struct shard *s = shard_of(c, h);
	pthread_mutex_lock(&s->lock);
	b->refs--;
	/* Over budget only because readers held blocks: trim now. */
	struct pfs_block *victims = s->bytes > s->budget ? evict(s) : NULL;
	pthread_mutex_unlock(&s->lock);
	free_chain(victims);
}

const void *pfs_block_data(const struct pfs_block *b)
{
	return b->data;
}

size_t pfs_block_len(const struct pfs_block *b)
{
	return b->len;
}
