/* test_bcache.c - cache/bcache.h: hits and misses, one fill per block
 * whatever the number of concurrent readers, fill errors reaching every
 * waiter, the hard byte budget, LRU order, and pinned blocks surviving
 * eviction (run under ASan to catch a block freed under its reader).
 *
 * pfs_stats is process-wide and outlives each cache, so every test reads
 * its counters as deltas from the test's start.
 *
 * How the coalescing tests know every reader is waiting, without sleeps:
 * a reader that finds the block FILLING bumps pfs_stats.coalesced and
 * enters pthread_cond_wait() under the same hold of the shard lock. The
 * fill function spins (sched_yield, no sleep) until coalesced has grown by
 * N-1; the filler then needs that lock to publish the result, which it can
 * only take once the last reader is inside pthread_cond_wait(). So all N-1
 * are waiting on the fill, deterministically. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "../../cache/bcache.h"
#include "../../util/stats.h"

#define BS 4096u

static unsigned char pattern(uint64_t ino, uint64_t idx, size_t i)
{
	return (unsigned char)(ino * 131 + idx * 7 + i * 13 + (i >> 8));
}

struct fill {
	uint64_t ino, idx;
	int calls;              /* atomic */
	int rc;                 /* what fill returns */
	uint64_t wait_coalesced; /* spin until pfs_stats.coalesced >= this; 0: no wait */
	int timed_out;          /* atomic */
};

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int fill_fn(void *ctx, void *buf, size_t len)
{
	struct fill *f = ctx;
	__atomic_add_fetch(&f->calls, 1, __ATOMIC_SEQ_CST);
	if (f->wait_coalesced) {
		double deadline = now_s() + 30;
		while (pfs_stat_get(coalesced) < f->wait_coalesced) {
			if (now_s() > deadline) {
				__atomic_store_n(&f->timed_out, 1, __ATOMIC_SEQ_CST);
				return -ETIMEDOUT;
			}
			sched_yield();
		}
	}
	if (f->rc)
		return f->rc;
	unsigned char *p = buf;
	for (size_t i = 0; i < len; i++)
		p[i] = pattern(f->ino, f->idx, i);
	return 0;
}

static int calls(struct fill *f)
{
	return __atomic_load_n(&f->calls, __ATOMIC_SEQ_CST);
}

static int data_ok(const struct pfs_block *b, uint64_t ino, uint64_t idx, size_t len)
{
	if (pfs_block_len(b) != len)
		return 0;
	const unsigned char *p = pfs_block_data(b);
	for (size_t i = 0; i < len; i++)
		if (p[i] != pattern(ino, idx, i))
			return 0;
	return 1;
}

static struct pfs_bcache *new_cache(uint64_t budget, size_t bs)
{
	/* LRU: these tests predate the other policies (see test_policy.c). */
	struct pfs_bcache_opts o = {.budget = budget, .block_size = bs,
				    .policy = PFS_POLICY_LRU};
	struct pfs_bcache *c = NULL;
	assert_int_equal(pfs_bcache_create(&o, &c), 0);
	assert_non_null(c);
	return c;
}

/* Gets (ino, idx) and checks the data; returns whether fill ran. */
static int get_check(struct pfs_bcache *c, uint64_t ino, uint64_t idx, size_t len,
		     struct pfs_block **out)
{
	struct fill f = {.ino = ino, .idx = idx};
	struct pfs_block *b = NULL;
	assert_int_equal(pfs_bcache_get(c, ino, idx, len, 0, 0, fill_fn, &f, &b), 0);
	assert_non_null(b);
	assert_true(data_ok(b, ino, idx, len));
	assert_in_range(calls(&f), 0, 1);
	if (out)
		*out = b;
	else
		pfs_bcache_put(c, b);
	return calls(&f);
}

static int64_t ram_delta(uint64_t base)
{
	return (int64_t)(pfs_stat_get(ram_bytes) - base);
}

static void test_hit_miss(void **state)
{
	(void)state;
	uint64_t hits = pfs_stat_get(ram_hits), misses = pfs_stat_get(ram_misses);
	uint64_t ram = pfs_stat_get(ram_bytes);
	struct pfs_bcache *c = new_cache(64ull << 20, BS);
	assert_int_equal(get_check(c, 1, 0, BS, NULL), 1);  /* miss */
	assert_int_equal(get_check(c, 1, 0, BS, NULL), 0);  /* hit */
	assert_int_equal(get_check(c, 1, 0, BS, NULL), 0);
	assert_int_equal(get_check(c, 2, 0, BS, NULL), 1);  /* other inode */
	assert_int_equal(get_check(c, 1, 1, BS, NULL), 1);  /* other block */
	assert_int_equal(get_check(c, 0, 1, BS, NULL), 1);  /* keys are (ino, idx), */
	assert_int_equal(get_check(c, 1, 1, BS, NULL), 0);  /* not mixed up */
	/* A short last block keeps its own length. */
	assert_int_equal(get_check(c, 3, 9, 17, NULL), 1);
	assert_int_equal(get_check(c, 3, 9, 17, NULL), 0);
	assert_int_equal(pfs_stat_get(ram_hits) - hits, 4);
	assert_int_equal(pfs_stat_get(ram_misses) - misses, 5);
	assert_int_equal(ram_delta(ram), 4 * BS + 17);
	/* Two holders of one block share it. */
	struct pfs_block *a, *b;
	get_check(c, 7, 7, BS, &a);
	assert_int_equal(get_check(c, 7, 7, BS, &b), 0);
	assert_ptr_equal(a, b);
	pfs_bcache_put(c, a);
	assert_true(data_ok(b, 7, 7, BS));
	pfs_bcache_put(c, b);
	pfs_bcache_put(c, NULL); /* allowed */
	pfs_bcache_destroy(c);
	pfs_bcache_destroy(NULL);
}

/* ---- coalescing ----------------------------------------------------- */

enum { NTHREADS = 8 };

struct reader {
	struct pfs_bcache *c;
	struct fill *f;
	pthread_barrier_t *start;
	size_t len;
	int rc;
	struct pfs_block *b;
	int ok;
};

static void *reader_main(void *arg)
{
	struct reader *r = arg;
	pthread_barrier_wait(r->start);
	r->b = NULL;
	r->rc = pfs_bcache_get(r->c, r->f->ino, r->f->idx, r->len, 0, 0, fill_fn, r->f, &r->b);
	r->ok = r->rc == 0 && data_ok(r->b, r->f->ino, r->f->idx, r->len);
	return NULL;
}

/* N threads get the same block at once; returns when all are back. */
static void run_readers(struct pfs_bcache *c, struct fill *f, struct reader *r)
{
	pthread_barrier_t start;
	pthread_t th[NTHREADS];
	pthread_barrier_init(&start, NULL, NTHREADS);
	f->wait_coalesced = pfs_stat_get(coalesced) + NTHREADS - 1;
	for (int i = 0; i < NTHREADS; i++) {
		r[i] = (struct reader){.c = c, .f = f, .start = &start, .len = BS, .rc = 1};
		assert_int_equal(pthread_create(&th[i], NULL, reader_main, &r[i]), 0);
	}
	for (int i = 0; i < NTHREADS; i++)
		assert_int_equal(pthread_join(th[i], NULL), 0);
	pthread_barrier_destroy(&start);
	assert_false(__atomic_load_n(&f->timed_out, __ATOMIC_SEQ_CST));
}

static void test_coalescing(void **state)
{
	(void)state;
	uint64_t coal = pfs_stat_get(coalesced), misses = pfs_stat_get(ram_misses);
	uint64_t ram = pfs_stat_get(ram_bytes);
	struct pfs_bcache *c = new_cache(64ull << 20, BS);
	for (int round = 0; round < 20; round++) {
		struct fill f = {.ino = 42, .idx = (uint64_t)round};
		struct reader r[NTHREADS];
		run_readers(c, &f, r);
		/* "Two readers, one origin request". */
		assert_int_equal(calls(&f), 1);
		for (int i = 0; i < NTHREADS; i++) {
			assert_int_equal(r[i].rc, 0);
			assert_true(r[i].ok);
			assert_ptr_equal(r[i].b, r[0].b);
		}
		for (int i = 0; i < NTHREADS; i++)
			pfs_bcache_put(c, r[i].b);
		/* Cached now: a later reader does not fill. */
		assert_int_equal(get_check(c, 42, (uint64_t)round, BS, NULL), 0);
	}
	assert_int_equal(pfs_stat_get(coalesced) - coal, 20 * (NTHREADS - 1));
	assert_int_equal(pfs_stat_get(ram_misses) - misses, 20);
	assert_int_equal(ram_delta(ram), 20 * BS);
	pfs_bcache_destroy(c);
}

static void test_fill_error_to_all_waiters(void **state)
{
	(void)state;
	uint64_t ram = pfs_stat_get(ram_bytes);
	struct pfs_bcache *c = new_cache(64ull << 20, BS);
	static const int errs[] = {-EIO, -ENOENT, -ESTALE};
	for (size_t k = 0; k < sizeof(errs) / sizeof(errs[0]); k++) {
		struct fill f = {.ino = 9, .idx = 3, .rc = errs[k]};
		struct reader r[NTHREADS];
		run_readers(c, &f, r);
		assert_int_equal(calls(&f), 1);
		for (int i = 0; i < NTHREADS; i++) {
			assert_int_equal(r[i].rc, errs[k]);
			assert_null(r[i].b);
		}
		/* Nothing was cached or counted. */
		assert_int_equal(ram_delta(ram), 0);
	}
	/* The failure was not cached: the next reader fills again. */
	struct fill f = {.ino = 9, .idx = 3};
	struct pfs_block *b = NULL;
	assert_int_equal(pfs_bcache_get(c, 9, 3, BS, 0, 0, fill_fn, &f, &b), 0);
	assert_int_equal(calls(&f), 1);
	assert_true(data_ok(b, 9, 3, BS));
	pfs_bcache_put(c, b);
	assert_int_equal(get_check(c, 9, 3, BS, NULL), 0);
	assert_int_equal(ram_delta(ram), BS);
	pfs_bcache_destroy(c);
}

static void test_fill_error_single(void **state)
{
	(void)state;
	struct pfs_bcache *c = new_cache(1 << 20, BS);
	struct fill f = {.ino = 1, .idx = 1, .rc = -EACCES};
	struct pfs_block *b = (struct pfs_block *)0x1;
	assert_int_equal(pfs_bcache_get(c, 1, 1, BS, 0, 0, fill_fn, &f, &b), -EACCES);
	assert_int_equal(pfs_bcache_get(c, 1, 1, BS, 0, 0, fill_fn, &f, &b), -EACCES);
	assert_int_equal(calls(&f), 2);
	pfs_bcache_destroy(c);
}

/* ---- budget and eviction --------------------------------------------- */

static void test_budget_respected(void **state)
{
	(void)state;
	const uint64_t budget = 64 * BS;
	uint64_t ram = pfs_stat_get(ram_bytes), ev = pfs_stat_get(ram_evictions);
	struct pfs_bcache *c = new_cache(budget, BS);
	for (uint64_t i = 0; i < 3000; i++) {
		uint64_t ino = i % 37, idx = i / 37;
		size_t len = i % 5 ? BS : 1 + (size_t)(i % BS); /* some short blocks */
		get_check(c, ino, idx, len, NULL);
		int64_t held = ram_delta(ram);
		if (held < 0 || (uint64_t)held > budget)
			fail_msg("after %llu inserts: %lld bytes held, budget %llu",
				 (unsigned long long)i + 1, (long long)held,
				 (unsigned long long)budget);
	}
	/* The budget is used, not just respected. */
	assert_true(ram_delta(ram) >= (int64_t)budget / 2);
	assert_true(pfs_stat_get(ram_evictions) - ev > 2000);
	pfs_bcache_destroy(c);
}

static void test_lru_order(void **state)
{
	(void)state;
	/* Budget of 4 blocks: a single shard, so the order is global. */
	uint64_t ev = pfs_stat_get(ram_evictions);
	struct pfs_bcache *c = new_cache(4 * BS, BS);
	for (uint64_t i = 0; i < 4; i++)
		assert_int_equal(get_check(c, 5, i, BS, NULL), 1);
	assert_int_equal(pfs_stat_get(ram_evictions) - ev, 0);
	/* Touch 0: now 1 is the least recently used. */
	assert_int_equal(get_check(c, 5, 0, BS, NULL), 0);
	assert_int_equal(get_check(c, 5, 4, BS, NULL), 1);
	assert_int_equal(pfs_stat_get(ram_evictions) - ev, 1);
	/* Hits do not evict; check the survivors first (MRU order after:
	 * 4 3 2 0 -> touching 0 2 3 4 in turn leaves 0 as the LRU). */
	assert_int_equal(get_check(c, 5, 0, BS, NULL), 0);
	assert_int_equal(get_check(c, 5, 2, BS, NULL), 0);
	assert_int_equal(get_check(c, 5, 3, BS, NULL), 0);
	assert_int_equal(get_check(c, 5, 4, BS, NULL), 0);
	assert_int_equal(pfs_stat_get(ram_evictions) - ev, 1);
	/* 1 was evicted; bringing it back evicts the LRU, 0. */
	assert_int_equal(get_check(c, 5, 1, BS, NULL), 1);
	assert_int_equal(pfs_stat_get(ram_evictions) - ev, 2);
	assert_int_equal(get_check(c, 5, 2, BS, NULL), 0);
	assert_int_equal(get_check(c, 5, 3, BS, NULL), 0);
	assert_int_equal(get_check(c, 5, 4, BS, NULL), 0);
	assert_int_equal(get_check(c, 5, 1, BS, NULL), 0);
	assert_int_equal(get_check(c, 5, 0, BS, NULL), 1);
	pfs_bcache_destroy(c);
}

static void test_held_block_survives_eviction(void **state)
{
	(void)state;
	uint64_t ram = pfs_stat_get(ram_bytes);
	struct pfs_bcache *c = new_cache(4 * BS, BS);
	struct pfs_block *held = NULL;
	assert_int_equal(get_check(c, 100, 0, BS, &held), 1);
	const void *data = pfs_block_data(held);
	/* Churn through many other blocks: the held one is the LRU the whole
	 * time, yet must not be freed. ASan flags any use after free below. */
	for (uint64_t i = 1; i <= 50; i++) {
		get_check(c, 100, i, BS, NULL);
		assert_true(data_ok(held, 100, 0, BS));
		assert_true(ram_delta(ram) <= (int64_t)(4 * BS));
	}
	assert_ptr_equal(pfs_block_data(held), data);
	/* A second reader of the pinned block gets the same one, no fill. */
	struct pfs_block *again = NULL;
	assert_int_equal(get_check(c, 100, 0, BS, &again), 0);
	assert_ptr_equal(again, held);
	pfs_bcache_put(c, again);
	assert_true(data_ok(held, 100, 0, BS));
	pfs_bcache_put(c, held);
	assert_true(ram_delta(ram) <= (int64_t)(4 * BS));
	pfs_bcache_destroy(c);
}

/* The budget is hard: blocks that cannot be admitted because every cached
 * one is pinned are still served, then freed at their last put, never
 * counted. */
static void test_pinned_over_budget_not_admitted(void **state)
{
	(void)state;
	uint64_t ram = pfs_stat_get(ram_bytes);
	struct pfs_bcache *c = new_cache(2 * BS, BS);
	struct pfs_block *b[6];
	for (uint64_t i = 0; i < 6; i++) {
		assert_int_equal(get_check(c, 200, i, BS, &b[i]), 1);
		assert_true(ram_delta(ram) <= (int64_t)(2 * BS));
	}
	/* All six pinned, all intact; only the first two are cached. */
	assert_int_equal(ram_delta(ram), 2 * BS);
	for (uint64_t i = 0; i < 6; i++)
		assert_true(data_ok(b[i], 200, i, BS));
	for (uint64_t i = 0; i < 6; i++) {
		pfs_bcache_put(c, b[i]);
		for (uint64_t j = i + 1; j < 6; j++)
			assert_true(data_ok(b[j], 200, j, BS));
	}
	assert_int_equal(ram_delta(ram), 2 * BS);
	assert_int_equal(get_check(c, 200, 0, BS, NULL), 0);
	assert_int_equal(get_check(c, 200, 1, BS, NULL), 0);
	assert_int_equal(get_check(c, 200, 5, BS, NULL), 1); /* was not cached */
	assert_true(ram_delta(ram) <= (int64_t)(2 * BS));
	pfs_bcache_destroy(c);
}

static void test_block_bigger_than_budget(void **state)
{
	(void)state;
	uint64_t ram = pfs_stat_get(ram_bytes);
	struct pfs_bcache *c = new_cache(BS, BS);
	struct pfs_block *b = NULL;
	/* Usable while held even though it can never stay cached. */
	assert_int_equal(get_check(c, 1, 0, 3 * BS, &b), 1);
	assert_true(data_ok(b, 1, 0, 3 * BS));
	pfs_bcache_put(c, b);
	assert_true(ram_delta(ram) <= (int64_t)BS);
	pfs_bcache_destroy(c);
}

/* ---- concurrency stress (meant for ASan/TSan runs) -------------------- */

struct stress {
	struct pfs_bcache *c;
	unsigned seed;
	int bad;
};

static void *stress_main(void *arg)
{
	struct stress *s = arg;
	struct {
		struct pfs_block *b;
		uint64_t ino, idx;
	} hold[4] = {{0}};
	for (int op = 0; op < 20000; op++) {
		uint64_t ino = rand_r(&s->seed) % 4, idx = rand_r(&s->seed) % 24;
		struct fill f = {.ino = ino, .idx = idx, .rc = rand_r(&s->seed) % 50 ? 0 : -EIO};
		struct pfs_block *b = NULL;
		int rc = pfs_bcache_get(s->c, ino, idx, 1024, 0, 0, fill_fn, &f, &b);
		if (rc == -EIO)
			continue;
		if (rc != 0 || !data_ok(b, ino, idx, 1024)) {
			s->bad++;
			continue;
		}
		/* Keep a few blocks pinned for a while, and re-check them while
		 * other threads churn the cache. */
		int slot = op % 4;
		pfs_bcache_put(s->c, hold[slot].b);
		hold[slot].b = b;
		hold[slot].ino = ino;
		hold[slot].idx = idx;
		for (int k = 0; k < 4; k++)
			if (hold[k].b && !data_ok(hold[k].b, hold[k].ino, hold[k].idx, 1024))
				s->bad++;
	}
	for (int k = 0; k < 4; k++)
		pfs_bcache_put(s->c, hold[k].b);
	return NULL;
}

static void test_concurrent_stress(void **state)
{
	(void)state;
	uint64_t ram = pfs_stat_get(ram_bytes);
	const uint64_t budget = 64 * 1024;
	struct pfs_bcache *c = new_cache(budget, 1024);
	pthread_t th[NTHREADS];
	struct stress s[NTHREADS];
	for (int i = 0; i < NTHREADS; i++) {
		s[i] = (struct stress){.c = c, .seed = 1234u + (unsigned)i};
		assert_int_equal(pthread_create(&th[i], NULL, stress_main, &s[i]), 0);
	}
	for (int i = 0; i < NTHREADS; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(s[i].bad, 0);
	}
	assert_true(ram_delta(ram) <= (int64_t)budget);
	pfs_bcache_destroy(c);
}

/* Regression test (was a bug in bcache.c): pfs_stats.ram_bytes is documented as a gauge of
 * bytes held, but pfs_bcache_destroy() frees the cached blocks without
 * subtracting them, so the gauge stays up after the cache is gone (visible
 * to anything that creates a second cache in the same process, e.g. the
 * tests above, which therefore measure deltas). */
static void test_destroy_returns_gauge(void **state)
{
	(void)state;
	uint64_t ram = pfs_stat_get(ram_bytes);
	struct pfs_bcache *c = new_cache(1 << 20, BS);
	for (uint64_t i = 0; i < 8; i++)
		get_check(c, 300, i, BS, NULL);
	assert_int_equal(ram_delta(ram), 8 * BS);
	pfs_bcache_destroy(c);
	assert_int_equal(ram_delta(ram), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hit_miss),
		cmocka_unit_test(test_coalescing),
		cmocka_unit_test(test_fill_error_to_all_waiters),
		cmocka_unit_test(test_fill_error_single),
		cmocka_unit_test(test_budget_respected),
		cmocka_unit_test(test_lru_order),
		cmocka_unit_test(test_held_block_survives_eviction),
		cmocka_unit_test(test_pinned_over_budget_not_admitted),
		cmocka_unit_test(test_block_bigger_than_budget),
		cmocka_unit_test(test_concurrent_stress),
		cmocka_unit_test(test_destroy_returns_gauge),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
