/* test_bcache.c - cache/bcache.h: hits and misses, one fill per block
 * whatever the number of concurrent readers, fill errors reaching every
 * waiter, the hard byte budget, LRU order, and pinned blocks surviving
 * eviction (run under ASan to catch a block freed under its reader).
 *
 * The RAM counters (ram_ctr) are process-wide and outlive each cache, so every test reads
 * its counters as deltas from the test's start. The fill function and the
 * coalescing readers (how they know every reader waits, without sleeps)
 * are in bcache_fixture.h, shared with test_policy.c. */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "../../cache/bcache.h"
#include "../../util/stats.h"
#include "bcache_fixture.h"

#define BS 4096u

static struct pfs_bcache *new_cache(uint64_t budget, size_t bs)
{
	/* LRU: these tests predate the other policies (see test_policy.c). */
	struct pfs_bcache_opts o = {.budget = budget, .block_size = bs,
				    .policy = PFS_POLICY_LRU};
	return bfx_cache(&o);
}

/* Gets (ino, idx) and checks the data; returns whether fill ran. */
static int get_check(struct pfs_bcache *c, uint64_t ino, uint64_t idx, size_t len,
		     struct pfs_block **out)
{
	struct bfx_fill f = {.ino = ino, .idx = idx};
	struct pfs_block *b = NULL;
	assert_int_equal(pfs_bcache_get(c, ino, idx, len, 0, 0, bfx_fill_fn, &f, &b), 0);
	assert_non_null(b);
	assert_true(bfx_data_ok(b, ino, idx, len));
	assert_in_range(bfx_calls(&f), 0, 1);
	if (out)
		*out = b;
	else
		pfs_bcache_put(c, b);
	return bfx_calls(&f);
}

static int64_t ram_delta(uint64_t base)
{
	return (int64_t)(ram_ctr().bytes - base);
}

static void test_hit_miss(void **state)
{
	(void)state;
	uint64_t hits = ram_ctr().hits, misses = ram_ctr().misses;
	uint64_t ram = ram_ctr().bytes;
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
	assert_int_equal(ram_ctr().hits - hits, 4);
	assert_int_equal(ram_ctr().misses - misses, 5);
	assert_int_equal(ram_delta(ram), 4 * BS + 17);
	/* Two holders of one block share it. */
	struct pfs_block *a, *b;
	get_check(c, 7, 7, BS, &a);
	assert_int_equal(get_check(c, 7, 7, BS, &b), 0);
	assert_ptr_equal(a, b);
	pfs_bcache_put(c, a);
	assert_true(bfx_data_ok(b, 7, 7, BS));
	pfs_bcache_put(c, b);
	pfs_bcache_put(c, NULL); /* allowed */
	pfs_bcache_destroy(c);
	pfs_bcache_destroy(NULL);
}

/* ---- coalescing ----------------------------------------------------- */

static void test_coalescing(void **state)
{
	(void)state;
	uint64_t coal = ram_ctr().coalesced, misses = ram_ctr().misses;
	uint64_t ram = ram_ctr().bytes;
	struct pfs_bcache *c = new_cache(64ull << 20, BS);
	for (int round = 0; round < 20; round++) {
		struct bfx_fill f = {.ino = 42, .idx = (uint64_t)round};
		struct bfx_reader r[BFX_READERS];
		bfx_run_readers(c, &f, r, BS, 0, 0);
		/* "Two readers, one origin request". */
		assert_int_equal(bfx_calls(&f), 1);
		for (int i = 0; i < BFX_READERS; i++) {
			assert_int_equal(r[i].rc, 0);
			assert_true(r[i].ok);
			assert_ptr_equal(r[i].b, r[0].b);
		}
		for (int i = 0; i < BFX_READERS; i++)
			pfs_bcache_put(c, r[i].b);
		/* Cached now: a later reader does not fill. */
		assert_int_equal(get_check(c, 42, (uint64_t)round, BS, NULL), 0);
	}
	assert_int_equal(ram_ctr().coalesced - coal, 20 * (BFX_READERS - 1));
	assert_int_equal(ram_ctr().misses - misses, 20);
	assert_int_equal(ram_delta(ram), 20 * BS);
	pfs_bcache_destroy(c);
}

static void test_fill_error_to_all_waiters(void **state)
{
	(void)state;
	uint64_t ram = ram_ctr().bytes;
	struct pfs_bcache *c = new_cache(64ull << 20, BS);
	static const int errs[] = {-EIO, -ENOENT, -ESTALE};
	for (size_t k = 0; k < sizeof(errs) / sizeof(errs[0]); k++) {
		struct bfx_fill f = {.ino = 9, .idx = 3, .rc = errs[k]};
		struct bfx_reader r[BFX_READERS];
		bfx_run_readers(c, &f, r, BS, 0, 0);
		assert_int_equal(bfx_calls(&f), 1);
		for (int i = 0; i < BFX_READERS; i++) {
			assert_int_equal(r[i].rc, errs[k]);
			assert_null(r[i].b);
		}
		/* Nothing was cached or counted. */
		assert_int_equal(ram_delta(ram), 0);
	}
	/* The failure was not cached: the next reader fills again. */
	struct bfx_fill f = {.ino = 9, .idx = 3};
	struct pfs_block *b = NULL;
	assert_int_equal(pfs_bcache_get(c, 9, 3, BS, 0, 0, bfx_fill_fn, &f, &b), 0);
	assert_int_equal(bfx_calls(&f), 1);
	assert_true(bfx_data_ok(b, 9, 3, BS));
	pfs_bcache_put(c, b);
	assert_int_equal(get_check(c, 9, 3, BS, NULL), 0);
	assert_int_equal(ram_delta(ram), BS);
	pfs_bcache_destroy(c);
}

static void test_fill_error_single(void **state)
{
	(void)state;
	struct pfs_bcache *c = new_cache(1 << 20, BS);
	struct bfx_fill f = {.ino = 1, .idx = 1, .rc = -EACCES};
	struct pfs_block *b = (struct pfs_block *)0x1;
	assert_int_equal(pfs_bcache_get(c, 1, 1, BS, 0, 0, bfx_fill_fn, &f, &b), -EACCES);
	assert_int_equal(pfs_bcache_get(c, 1, 1, BS, 0, 0, bfx_fill_fn, &f, &b), -EACCES);
	assert_int_equal(bfx_calls(&f), 2);
	pfs_bcache_destroy(c);
}

/* ---- budget and eviction --------------------------------------------- */

static void test_budget_respected(void **state)
{
	(void)state;
	const uint64_t budget = 64 * BS;
	uint64_t ram = ram_ctr().bytes, ev = ram_ctr().evictions;
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
	assert_true(ram_ctr().evictions - ev > 2000);
	pfs_bcache_destroy(c);
}

static void test_lru_order(void **state)
{
	(void)state;
	/* Budget of 4 blocks: a single shard, so the order is global. */
	uint64_t ev = ram_ctr().evictions;
	struct pfs_bcache *c = new_cache(4 * BS, BS);
	for (uint64_t i = 0; i < 4; i++)
		assert_int_equal(get_check(c, 5, i, BS, NULL), 1);
	assert_int_equal(ram_ctr().evictions - ev, 0);
	/* Touch 0: now 1 is the least recently used. */
	assert_int_equal(get_check(c, 5, 0, BS, NULL), 0);
	assert_int_equal(get_check(c, 5, 4, BS, NULL), 1);
	assert_int_equal(ram_ctr().evictions - ev, 1);
	/* Hits do not evict; check the survivors first (MRU order after:
	 * 4 3 2 0 -> touching 0 2 3 4 in turn leaves 0 as the LRU). */
	assert_int_equal(get_check(c, 5, 0, BS, NULL), 0);
	assert_int_equal(get_check(c, 5, 2, BS, NULL), 0);
	assert_int_equal(get_check(c, 5, 3, BS, NULL), 0);
	assert_int_equal(get_check(c, 5, 4, BS, NULL), 0);
	assert_int_equal(ram_ctr().evictions - ev, 1);
	/* 1 was evicted; bringing it back evicts the LRU, 0. */
	assert_int_equal(get_check(c, 5, 1, BS, NULL), 1);
	assert_int_equal(ram_ctr().evictions - ev, 2);
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
	uint64_t ram = ram_ctr().bytes;
	struct pfs_bcache *c = new_cache(4 * BS, BS);
	struct pfs_block *held = NULL;
	assert_int_equal(get_check(c, 100, 0, BS, &held), 1);
	const void *data = pfs_block_data(held);
	/* Churn through many other blocks: the held one is the LRU the whole
	 * time, yet must not be freed. ASan flags any use after free below. */
	for (uint64_t i = 1; i <= 50; i++) {
		get_check(c, 100, i, BS, NULL);
		assert_true(bfx_data_ok(held, 100, 0, BS));
		assert_true(ram_delta(ram) <= (int64_t)(4 * BS));
	}
	assert_ptr_equal(pfs_block_data(held), data);
	/* A second reader of the pinned block gets the same one, no fill. */
	struct pfs_block *again = NULL;
	assert_int_equal(get_check(c, 100, 0, BS, &again), 0);
	assert_ptr_equal(again, held);
	pfs_bcache_put(c, again);
	assert_true(bfx_data_ok(held, 100, 0, BS));
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
	uint64_t ram = ram_ctr().bytes;
	struct pfs_bcache *c = new_cache(2 * BS, BS);
	struct pfs_block *b[6];
	for (uint64_t i = 0; i < 6; i++) {
		assert_int_equal(get_check(c, 200, i, BS, &b[i]), 1);
		assert_true(ram_delta(ram) <= (int64_t)(2 * BS));
	}
	/* All six pinned, all intact; only the first two are cached. */
	assert_int_equal(ram_delta(ram), 2 * BS);
	for (uint64_t i = 0; i < 6; i++)
		assert_true(bfx_data_ok(b[i], 200, i, BS));
	for (uint64_t i = 0; i < 6; i++) {
		pfs_bcache_put(c, b[i]);
		for (uint64_t j = i + 1; j < 6; j++)
			assert_true(bfx_data_ok(b[j], 200, j, BS));
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
	uint64_t ram = ram_ctr().bytes;
	struct pfs_bcache *c = new_cache(BS, BS);
	struct pfs_block *b = NULL;
	/* Usable while held even though it can never stay cached. */
	assert_int_equal(get_check(c, 1, 0, 3 * BS, &b), 1);
	assert_true(bfx_data_ok(b, 1, 0, 3 * BS));
	pfs_bcache_put(c, b);
	assert_true(ram_delta(ram) <= (int64_t)BS);
	pfs_bcache_destroy(c);
}

/* ---- concurrency stress (meant for ASan/TSan runs) -------------------- */

enum { NTHREADS = 8 };

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
		struct bfx_fill f = {.ino = ino, .idx = idx, .rc = rand_r(&s->seed) % 50 ? 0 : -EIO};
		struct pfs_block *b = NULL;
		int rc = pfs_bcache_get(s->c, ino, idx, 1024, 0, 0, bfx_fill_fn, &f, &b);
		if (rc == -EIO)
			continue;
		if (rc != 0 || !bfx_data_ok(b, ino, idx, 1024)) {
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
			if (hold[k].b && !bfx_data_ok(hold[k].b, hold[k].ino, hold[k].idx, 1024))
				s->bad++;
	}
	for (int k = 0; k < 4; k++)
		pfs_bcache_put(s->c, hold[k].b);
	return NULL;
}

static void test_concurrent_stress(void **state)
{
	(void)state;
	uint64_t ram = ram_ctr().bytes;
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

/* Regression test (was a bug in bcache.c): the ram.bytes counter is documented as a gauge of
 * bytes held, but pfs_bcache_destroy() frees the cached blocks without
 * subtracting them, so the gauge stays up after the cache is gone (visible
 * to anything that creates a second cache in the same process, e.g. the
 * tests above, which therefore measure deltas). */
/* A warm-up fill takes free room only: it never evicts, is never counted
 * as a read, and is handed out (then freed) when it does not fit. */
static void test_warm_takes_free_room_only(void **state)
{
	(void)state;
	struct pfs_bcache *c = new_cache(4 * BS, BS);
	uint64_t hits = ram_ctr().hits, misses = ram_ctr().misses;
	struct pfs_bcache_stats st;
	for (uint64_t i = 0; i < 3; i++)
		get_check(c, 1, i, BS, NULL);       /* a job's blocks: 3 of 4 */
	assert_true(pfs_bcache_has_room(c, BS));
	assert_false(pfs_bcache_has_room(c, 2 * BS));
	for (uint64_t i = 0; i < 4; i++) {
		struct bfx_fill f = {.ino = 2, .idx = i};
		struct pfs_block *b = NULL;
		assert_int_equal(pfs_bcache_get(c, 2, i, BS, 0, PFS_BCACHE_WARM, bfx_fill_fn,
						&f, &b), 0);
		assert_true(bfx_data_ok(b, 2, i, BS));
		pfs_bcache_put(c, b);
	}
	pfs_bcache_stats(c, &st);
	assert_int_equal(st.replaced, 0);
	assert_int_equal(st.resident_bytes, 4 * BS);
	assert_false(pfs_bcache_has_room(c, 1));
	for (uint64_t i = 0; i < 3; i++)
		assert_true(pfs_bcache_contains(c, 1, i)); /* the job's blocks stayed */
	assert_true(pfs_bcache_contains(c, 2, 0));          /* the free room */
	for (uint64_t i = 1; i < 4; i++)
		assert_false(pfs_bcache_contains(c, 2, i)); /* no room: not kept */
	assert_int_equal(ram_ctr().misses - misses, 3); /* the job's only */
	assert_int_equal(ram_ctr().hits - hits, 0);
	pfs_bcache_destroy(c);
}

/* A held block's data outlives its eviction and the cache itself, until
 * released (the SSD writer reads it later without a copy). */
static void test_hold_outlives_eviction(void **state)
{
	(void)state;
	struct pfs_bcache *c = new_cache(BS, BS);
	struct pfs_block *b;
	get_check(c, 1, 0, BS, &b);
	pfs_bcache_hold(b);
	pfs_bcache_hold(b);
	const void *data = pfs_block_data(b);
	pfs_bcache_put(c, b);
	get_check(c, 2, 0, BS, NULL);         /* evicts (1, 0) */
	assert_false(pfs_bcache_contains(c, 1, 0));
	assert_true(bfx_data_ok(b, 1, 0, BS)); /* ASan: still mapped */
	pfs_bcache_release(b);
	pfs_bcache_destroy(c);
	assert_ptr_equal(pfs_block_data(b), data);
	assert_true(bfx_data_ok(b, 1, 0, BS));
	pfs_bcache_release(b);                 /* the last: freed now */
}

static void test_destroy_returns_gauge(void **state)
{
	(void)state;
	uint64_t ram = ram_ctr().bytes;
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
		cmocka_unit_test(test_warm_takes_free_room_only),
		cmocka_unit_test(test_hold_outlives_eviction),
		cmocka_unit_test(test_destroy_returns_gauge),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
