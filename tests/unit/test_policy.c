/* test_policy.c - cache/policy.h parsing, and the replacement policies of
 * cache/bcache.h: eviction order per policy, minio never replacing once
 * full, the epoch staging area (bounded, dropped after its read, stale
 * blocks reclaimed), resident=small/large replacement and convergence, the
 * hard budget under concurrent inserts, and coalescing of fills whose
 * block is not admitted.
 *
 * The RAM counters (ram_ctr) are process-wide: tests read deltas. The fill
 * function and the coalescing readers are bcache_fixture.h's, shared with
 * test_bcache.c: the fill spins until ram_ctr().coalesced shows every other
 * reader waiting. */
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
#include "../../cache/policy.h"
#include "../../util/stats.h"
#include "bcache_fixture.h"

#define BS 4096u

/* ---- parsing -------------------------------------------------------- */

static void test_parse(void **state)
{
	(void)state;
	enum pfs_policy p = PFS_POLICY_LRU;
	assert_int_equal(pfs_policy_parse("minio", &p), 0);
	assert_int_equal(p, PFS_POLICY_MINIO);
	assert_int_equal(pfs_policy_parse("epoch", &p), 0);
	assert_int_equal(p, PFS_POLICY_EPOCH);
	assert_int_equal(pfs_policy_parse("lru", &p), 0);
	assert_int_equal(p, PFS_POLICY_LRU);
	static const char *const bad[] = {"LRU", "", "lru ", "fifo", "epochs", "any"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(pfs_policy_parse(bad[i], &p), -EINVAL);
		assert_int_equal(p, PFS_POLICY_LRU); /* untouched */
	}
	assert_int_equal(pfs_policy_parse(NULL, &p), -EINVAL);
	enum pfs_resident r = PFS_RESIDENT_ANY;
	assert_int_equal(pfs_resident_parse("small", &r), 0);
	assert_int_equal(r, PFS_RESIDENT_SMALL);
	assert_int_equal(pfs_resident_parse("large", &r), 0);
	assert_int_equal(r, PFS_RESIDENT_LARGE);
	assert_int_equal(pfs_resident_parse("any", &r), 0);
	assert_int_equal(r, PFS_RESIDENT_ANY);
	assert_int_equal(pfs_resident_parse("Small", &r), -EINVAL);
	assert_int_equal(pfs_resident_parse("lru", &r), -EINVAL);
	for (int i = PFS_POLICY_LRU; i <= PFS_POLICY_EPOCH; i++) {
		assert_int_equal(pfs_policy_parse(pfs_policy_name((enum pfs_policy)i), &p), 0);
		assert_int_equal(p, i);
	}
	for (int i = PFS_RESIDENT_ANY; i <= PFS_RESIDENT_LARGE; i++) {
		assert_int_equal(pfs_resident_parse(pfs_resident_name((enum pfs_resident)i), &r), 0);
		assert_int_equal(r, i);
	}
	assert_string_equal(pfs_policy_name((enum pfs_policy)9), "?");
	assert_string_equal(pfs_resident_name((enum pfs_resident)-1), "?");
}

/* ---- helpers -------------------------------------------------------- */

static struct pfs_bcache *new_cache(enum pfs_policy p, enum pfs_resident r, uint64_t budget,
				    uint64_t stage_budget)
{
	struct pfs_bcache_opts o = {.budget = budget, .block_size = BS, .policy = p,
				    .resident = r, .stage_budget = stage_budget};
	return bfx_cache(&o);
}

/* Gets block 0 of object ino (of obj_size bytes) and checks it; returns
 * 1 if it was filled (a miss), 0 on a hit. Holds it in *out if given. */
static int get_obj(struct pfs_bcache *c, uint64_t ino, uint64_t obj_size, unsigned flags,
		   struct pfs_block **out)
{
	struct bfx_fill f = {.ino = ino};
	struct pfs_block *b = NULL;
	assert_int_equal(pfs_bcache_get(c, ino, 0, BS, obj_size, flags, bfx_fill_fn, &f, &b), 0);
	assert_non_null(b);
	assert_true(bfx_data_ok(b, ino, 0, BS));
	if (out)
		*out = b;
	else
		pfs_bcache_put(c, b);
	return bfx_calls(&f);
}

static int get(struct pfs_bcache *c, uint64_t ino)
{
	return get_obj(c, ino, BS, 0, NULL);
}

static int prefetch(struct pfs_bcache *c, uint64_t ino)
{
	return get_obj(c, ino, BS, PFS_BCACHE_PREFETCH, NULL);
}

static struct pfs_bcache_stats stats(struct pfs_bcache *c)
{
	struct pfs_bcache_stats st;
	pfs_bcache_stats(c, &st);
	return st;
}

static void test_create_rejects(void **state)
{
	(void)state;
	struct pfs_bcache *c = NULL;
	struct pfs_bcache_opts o = {.budget = 1 << 20, .block_size = BS,
				    .policy = (enum pfs_policy)3};
	assert_int_equal(pfs_bcache_create(&o, &c), -EINVAL);
	o.policy = PFS_POLICY_MINIO;
	o.resident = (enum pfs_resident)5;
	assert_int_equal(pfs_bcache_create(&o, &c), -EINVAL);
	assert_null(c);
}

/* ---- eviction order per policy ---------------------------------------- */

static void test_order_lru(void **state)
{
	(void)state;
	struct pfs_bcache *c = new_cache(PFS_POLICY_LRU, PFS_RESIDENT_ANY, 4 * BS, 0);
	for (uint64_t i = 0; i < 4; i++)
		assert_int_equal(get(c, i), 1);
	assert_int_equal(get(c, 0), 0);     /* order now 1 2 3 0 */
	assert_int_equal(get(c, 4), 1);     /* evicts 1 */
	assert_int_equal(get(c, 5), 1);     /* evicts 2 */
	assert_int_equal(stats(c).replaced, 2);
	assert_int_equal(get(c, 0), 0);
	assert_int_equal(get(c, 3), 0);
	assert_int_equal(get(c, 4), 0);
	assert_int_equal(get(c, 5), 0);
	assert_int_equal(get(c, 1), 1);     /* evicts 0, the LRU */
	assert_int_equal(get(c, 0), 1);
	assert_int_equal(stats(c).resident_blocks, 4);
	pfs_bcache_destroy(c);
}

/* A reader's block that the full resident set refuses stays (staged)
 * while it is read in pieces (in any order), and goes at the put that
 * makes its reads add up to the block; one read only in part is given
 * up, oldest first, when the room is wanted. Every policy with a staging
 * area. */
static void test_partial_read_kept(void **state)
{
	(void)state;
	static const enum pfs_policy pols[] = {PFS_POLICY_MINIO, PFS_POLICY_EPOCH,
					       PFS_POLICY_LRU};
	for (size_t p = 0; p < 3; p++) {
		/* The resident set holds one block: block 0 of ino 1. */
		struct pfs_bcache *c = new_cache(pols[p], PFS_RESIDENT_ANY, BS, 2 * BS);
		assert_int_equal(get(c, 1), 1);
		struct bfx_fill f = {.ino = 2};
		struct pfs_block *b;
		size_t piece = BS / 4;
		for (size_t k = 0; k < 4; k++) {
			assert_int_equal(pfs_bcache_get(c, 2, 0, BS, BS, 0, bfx_fill_fn, &f, &b),
					 0);
			assert_true(bfx_data_ok(b, 2, 0, BS));
			pfs_bcache_put_read(c, b, piece);
			struct pfs_bcache_stats st = stats(c);
			if (pols[p] == PFS_POLICY_LRU) /* lru admits it: resident */
				continue;
			/* One fill for four pieces; dropped after the last. */
			assert_int_equal(st.staged_partial, 1);
			assert_int_equal(st.staged_blocks, k < 3 ? 1 : 0);
		}
		if (pols[p] != PFS_POLICY_LRU) {
			/* Three blocks read only in part: the third takes the
			 * room of the oldest. */
			for (uint64_t ino = 3; ino <= 5; ino++) {
				f.ino = ino;
				assert_int_equal(pfs_bcache_get(c, ino, 0, BS, BS, 0, bfx_fill_fn,
								&f, &b), 0);
				pfs_bcache_put_read(c, b, piece);
			}
			struct pfs_bcache_stats st = stats(c);
			assert_int_equal(st.staged_blocks, 2);
			assert_int_equal(st.stage_reclaimed, 1);
			assert_true(st.staged_bytes <= st.stage_budget);
			assert_int_equal(get(c, 4), 0); /* kept */
			assert_int_equal(get(c, 3), 1); /* reclaimed: fetched again */
		}
		pfs_bcache_destroy(c);
	}
}

/* A prefetched block evicted before any read is wasted; a block filled
 * twice in one epoch is counted, and not across an epoch change. */
static void test_waste_and_refetch_counted(void **state)
{
	(void)state;
	struct pfs_bcache *c = new_cache(PFS_POLICY_LRU, PFS_RESIDENT_ANY, 2 * BS, 0);
	pfs_bcache_set_epoch(c, 1);
	assert_int_equal(prefetch(c, 10), 1);   /* resident, never read */
	assert_int_equal(get(c, 11), 1);
	assert_int_equal(get(c, 12), 1);        /* evicts 10, the LRU */
	struct pfs_bcache_stats st = stats(c);
	assert_int_equal(st.prefetch_wasted_bytes, BS);
	assert_int_equal(st.refetched, 0);
	assert_int_equal(get(c, 10), 1);        /* filled again, same epoch */
	assert_int_equal(stats(c).refetched, 1);
	assert_int_equal(stats(c).prefetch_wasted_bytes, BS); /* a read is no waste */
	pfs_bcache_set_epoch(c, 2);
	assert_int_equal(get(c, 11), 1);        /* evicted by 10; a new epoch */
	assert_int_equal(stats(c).refetched, 1);
	assert_int_equal(get(c, 12), 1);        /* evicted by 11: again new */
	assert_int_equal(get(c, 10), 1);        /* evicted by 12; filled in epoch 2 once */
	assert_int_equal(get(c, 11), 1);        /* its second fill in epoch 2 */
	assert_int_equal(stats(c).refetched, 2);
	pfs_bcache_destroy(c);
}

/* minio, and epoch without prefetching: the first blocks stay, the
 * others are served and dropped, whatever the access pattern. */
static void test_minio_never_replaces(void **state)
{
	(void)state;
	static const enum pfs_policy pols[] = {PFS_POLICY_MINIO, PFS_POLICY_EPOCH};
	for (size_t p = 0; p < 2; p++) {
		uint64_t ev = ram_ctr().evictions, ram = ram_ctr().bytes;
		struct pfs_bcache *c = new_cache(pols[p], PFS_RESIDENT_ANY, 4 * BS, 4 * BS);
		for (uint64_t i = 0; i < 4; i++)
			assert_int_equal(get(c, 10 + i), 1);
		unsigned seed = 5;
		for (int k = 0; k < 2000; k++) {
			uint64_t ino = 10 + (uint64_t)(rand_r(&seed) % 40);
			assert_int_equal(get(c, ino), ino >= 14);
			struct pfs_bcache_stats st = stats(c);
			assert_int_equal(st.resident_blocks, 4);
			assert_int_equal(st.resident_bytes, 4 * BS);
		}
		struct pfs_bcache_stats st = stats(c);
		assert_int_equal(st.replaced, 0);
		assert_int_equal(st.admitted, 4);
		/* Refused by the resident set: staged for the rest of the read
		 * (get() reads each block whole: dropped at its put). */
		assert_true(st.refused + st.staged_partial > 1000);
		assert_int_equal(st.staged_blocks, 0);
		assert_int_equal(ram_ctr().evictions, ev);
		assert_int_equal(ram_ctr().bytes - ram, 4 * BS);
		/* minio ignores the prefetch flag: nothing is staged. */
		if (pols[p] == PFS_POLICY_MINIO) {
			assert_int_equal(prefetch(c, 99), 1);
			assert_int_equal(stats(c).staged_blocks, 0);
			assert_int_equal(get(c, 99), 1);
		}
		pfs_bcache_destroy(c);
		assert_int_equal(ram_ctr().bytes, ram);
	}
}

/* A prefetch while the resident set has room is simply admitted. */
static void test_epoch_prefetch_fills_resident_first(void **state)
{
	(void)state;
	struct pfs_bcache *c = new_cache(PFS_POLICY_EPOCH, PFS_RESIDENT_ANY, 2 * BS, 2 * BS);
	assert_int_equal(prefetch(c, 1), 1);
	assert_int_equal(prefetch(c, 2), 1);
	assert_int_equal(prefetch(c, 3), 1);
	struct pfs_bcache_stats st = stats(c);
	assert_int_equal(st.resident_blocks, 2);
	assert_int_equal(st.staged_blocks, 1);
	for (int round = 0; round < 3; round++) {
		assert_int_equal(get(c, 1), 0);   /* resident: read many times */
		assert_int_equal(get(c, 2), 0);
	}
	assert_int_equal(get(c, 3), 0);       /* staged: one read, then gone */
	assert_int_equal(get(c, 3), 1);
	assert_int_equal(stats(c).staged_blocks, 0);
	pfs_bcache_destroy(c);
}

static void test_epoch_staging(void **state)
{
	(void)state;
	uint64_t ram = ram_ctr().bytes;
	struct pfs_bcache *c = new_cache(PFS_POLICY_EPOCH, PFS_RESIDENT_ANY, 2 * BS, 3 * BS);
	pfs_bcache_set_epoch(c, 1);
	assert_int_equal(get(c, 0), 1);
	assert_int_equal(get(c, 1), 1);       /* resident set full */
	for (uint64_t i = 2; i <= 4; i++)
		assert_int_equal(prefetch(c, i), 1);
	struct pfs_bcache_stats st = stats(c);
	assert_int_equal(st.staged_blocks, 3);
	assert_int_equal(st.staged_bytes, 3 * BS);
	assert_int_equal(ram_ctr().bytes - ram, 5 * BS);
	/* Staging full, nothing stale: a further prefetch is served, not kept. */
	assert_int_equal(prefetch(c, 5), 1);
	st = stats(c);
	assert_int_equal(st.staged_blocks, 3);
	assert_int_equal(st.refused, 1);
	assert_int_equal(prefetch(c, 5), 1);
	/* A prefetch of a staged block is no read of it. */
	assert_int_equal(prefetch(c, 2), 0);
	assert_int_equal(stats(c).staged_blocks, 3);
	/* The read hits, and drops it after its put. */
	assert_int_equal(get(c, 2), 0);
	st = stats(c);
	assert_int_equal(st.staged_blocks, 2);
	assert_int_equal(st.stage_used, 1);
	assert_int_equal(get(c, 2), 1);       /* not cached again: a demand miss */
	assert_int_equal(stats(c).staged_blocks, 2);
	/* Two readers of a staged block: it lives until the last put. */
	struct pfs_block *a, *b;
	assert_int_equal(get_obj(c, 3, BS, 0, &a), 0);
	assert_int_equal(get_obj(c, 3, BS, 0, &b), 0);
	assert_ptr_equal(a, b);
	pfs_bcache_put(c, a);
	assert_true(bfx_data_ok(b, 3, 0, BS));
	assert_int_equal(stats(c).staged_blocks, 2);
	pfs_bcache_put(c, b);
	assert_int_equal(stats(c).staged_blocks, 1);
	/* A prefetcher holding a staged block while it is read. */
	assert_int_equal(get_obj(c, 4, BS, PFS_BCACHE_PREFETCH, &a), 0);
	assert_int_equal(get(c, 4), 0);
	assert_int_equal(stats(c).staged_blocks, 1);
	pfs_bcache_put(c, a);
	assert_int_equal(stats(c).staged_blocks, 0);
	/* The resident set never moved. */
	assert_int_equal(get(c, 0), 0);
	assert_int_equal(get(c, 1), 0);
	st = stats(c);
	assert_int_equal(st.replaced, 0);
	assert_int_equal(st.resident_blocks, 2);
	/* Stale blocks: staged in epoch 1, unread in epoch 3, make room. */
	for (uint64_t i = 20; i < 23; i++)
		assert_int_equal(prefetch(c, i), 1);
	pfs_bcache_set_epoch(c, 2);
	assert_int_equal(prefetch(c, 23), 1);
	assert_int_equal(stats(c).stage_stale, 0); /* one epoch old: still wanted */
	pfs_bcache_set_epoch(c, 3);
	assert_int_equal(prefetch(c, 23), 1);
	assert_int_equal(prefetch(c, 24), 1);
	st = stats(c);
	assert_int_equal(st.stage_stale, 2);       /* 20 then 21, oldest first */
	assert_int_equal(st.staged_blocks, 3);
	assert_true(st.staged_bytes <= st.stage_budget);
	assert_int_equal(get(c, 22), 0);
	assert_int_equal(get(c, 23), 0);
	assert_int_equal(get(c, 24), 0);
	assert_int_equal(get(c, 20), 1);
	assert_int_equal(stats(c).epoch, 3);
	pfs_bcache_destroy(c);
	assert_int_equal(ram_ctr().bytes, ram);
}

/* ---- resident = small / large ---------------------------------------- */

static void test_resident_small_large(void **state)
{
	(void)state;
	for (int large = 0; large <= 1; large++) {
		struct pfs_bcache *c = new_cache(PFS_POLICY_MINIO,
						 large ? PFS_RESIDENT_LARGE : PFS_RESIDENT_SMALL,
						 4 * BS, 0);
		/* Object sizes; with large, mirrored so the same steps apply. */
#define SZ(x) (large ? 1000 - (x) : (x))
		assert_int_equal(get_obj(c, 1, SZ(50), 0, NULL), 1);
		assert_int_equal(get_obj(c, 2, SZ(40), 0, NULL), 1);
		assert_int_equal(get_obj(c, 3, SZ(30), 0, NULL), 1);
		assert_int_equal(get_obj(c, 4, SZ(20), 0, NULL), 1);
		/* Not preferred over anything kept: not admitted. */
		assert_int_equal(get_obj(c, 5, SZ(60), 0, NULL), 1);
		assert_int_equal(get_obj(c, 5, SZ(60), 0, NULL), 1);
		/* As good as the worst kept: no replacement (strictly better
		 * only, so the set settles). */
		assert_int_equal(get_obj(c, 6, SZ(50), 0, NULL), 1);
		assert_int_equal(stats(c).replaced, 0);
		/* Better than the worst kept: replaces it (object 1). */
		assert_int_equal(get_obj(c, 7, SZ(10), 0, NULL), 1);
		assert_int_equal(stats(c).replaced, 1);
		assert_int_equal(get_obj(c, 7, SZ(10), 0, NULL), 0);
		assert_int_equal(get_obj(c, 2, SZ(40), 0, NULL), 0);
		assert_int_equal(get_obj(c, 3, SZ(30), 0, NULL), 0);
		assert_int_equal(get_obj(c, 4, SZ(20), 0, NULL), 0);
		assert_int_equal(get_obj(c, 1, SZ(50), 0, NULL), 1);
		/* The worst kept (object 2) is pinned: not replaced under its
		 * reader; the newcomer is served and dropped. */
		struct pfs_block *held;
		assert_int_equal(get_obj(c, 2, SZ(40), 0, &held), 0);
		assert_int_equal(get_obj(c, 8, SZ(5), 0, NULL), 1);
		assert_int_equal(stats(c).replaced, 1);
		pfs_bcache_put(c, held);
		assert_int_equal(get_obj(c, 8, SZ(5), 0, NULL), 1);
		assert_int_equal(stats(c).replaced, 2);
		assert_int_equal(get_obj(c, 8, SZ(5), 0, NULL), 0);
		assert_int_equal(get_obj(c, 2, SZ(40), 0, NULL), 1);
#undef SZ
		pfs_bcache_destroy(c);
	}
}

/* Replayed epochs of 64 objects of distinct sizes converge to the best 8,
 * after which nothing is replaced. */
static void test_resident_converges(void **state)
{
	(void)state;
	enum { N = 64, KEEP = 8 };
	for (int large = 0; large <= 1; large++) {
		struct pfs_bcache *c = new_cache(PFS_POLICY_EPOCH,
						 large ? PFS_RESIDENT_LARGE : PFS_RESIDENT_SMALL,
						 KEEP * BS, 0);
		unsigned seed = 11;
		uint32_t perm[N];
		uint64_t replaced_before = 0;
		for (int ep = 0; ep < 4; ep++) {
			for (uint32_t i = 0; i < N; i++)
				perm[i] = i;
			for (uint32_t i = N - 1; i > 0; i--) {
				uint32_t j = (uint32_t)rand_r(&seed) % (i + 1), x = perm[i];
				perm[i] = perm[j];
				perm[j] = x;
			}
			int hits = 0;
			for (uint32_t i = 0; i < N; i++) {
				uint64_t ino = perm[i];
				int miss = get_obj(c, ino, 100 + ino, 0, NULL);
				hits += !miss;
				if (ep >= 1) /* the best 8 hit, nothing else */
					assert_int_equal(!miss, large ? ino >= N - KEEP : ino < KEEP);
			}
			uint64_t r = stats(c).replaced;
			if (ep >= 1) {
				assert_int_equal(hits, KEEP);
				assert_int_equal(r, replaced_before);
			}
			replaced_before = r;
		}
		pfs_bcache_destroy(c);
	}
}

/* ---- the hard budget under concurrency -------------------------------- */

enum { NTHREADS = 8 };
/* Operations per thread: fewer under ThreadSanitizer (scripts/test runs
 * this suite under it), which needs interleavings, not volume, and runs
 * about 10 times slower: 20000 took minutes on a loaded 2-vCPU machine. */
#ifdef __SANITIZE_THREAD__
enum { STRESS_OPS = 5000 };
#else
enum { STRESS_OPS = 20000 };
#endif

struct stress {
	struct pfs_bcache *c;
	uint64_t budget, stage_budget;
	unsigned seed;
	int bad;
};

static void *stress_main(void *arg)
{
	struct stress *s = arg;
	struct pfs_block *hold[3] = {NULL};
	uint64_t hino[3] = {0};
	size_t hlen[3] = {0};
	for (int op = 0; op < STRESS_OPS; op++) {
		uint64_t ino = (uint64_t)(rand_r(&s->seed) % 300);
		size_t len = ino % 3 ? 1024 : 1 + ino * 7;
		unsigned flags = rand_r(&s->seed) % 3 ? 0 : PFS_BCACHE_PREFETCH;
		struct bfx_fill f = {.ino = ino};
		struct pfs_block *b = NULL;
		if (pfs_bcache_get(s->c, ino, 0, len, 100 + ino % 17, flags, bfx_fill_fn, &f, &b) < 0 ||
		    !bfx_data_ok(b, ino, 0, len)) {
			s->bad++;
			continue;
		}
		struct pfs_bcache_stats st;
		pfs_bcache_stats(s->c, &st);
		if (st.resident_bytes > s->budget || st.staged_bytes > s->stage_budget)
			s->bad++;
		int slot = op % 3;
		pfs_bcache_put(s->c, hold[slot]);
		hold[slot] = b;
		hino[slot] = ino;
		hlen[slot] = len;
		for (int k = 0; k < 3; k++)
			if (hold[k] && !bfx_data_ok(hold[k], hino[k], 0, hlen[k]))
				s->bad++;
		if (op % (STRESS_OPS / 4) == 0) /* four epochs: staged blocks go stale */
			pfs_bcache_set_epoch(s->c, 1 + (uint64_t)op / (STRESS_OPS / 4));
	}
	for (int k = 0; k < 3; k++)
		pfs_bcache_put(s->c, hold[k]);
	return NULL;
}

static void test_budget_under_threads(void **state)
{
	(void)state;
	static const struct {
		enum pfs_policy p;
		enum pfs_resident r;
	} cases[] = {
		{PFS_POLICY_LRU, PFS_RESIDENT_ANY}, {PFS_POLICY_MINIO, PFS_RESIDENT_ANY},
		{PFS_POLICY_EPOCH, PFS_RESIDENT_ANY}, {PFS_POLICY_EPOCH, PFS_RESIDENT_SMALL},
		{PFS_POLICY_MINIO, PFS_RESIDENT_LARGE},
	};
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		uint64_t ram = ram_ctr().bytes;
		/* 1024-byte blocks, a budget of 300 of them: 2 shards. */
		const uint64_t budget = 300 * 1024 - 100, stage = 40 * 1024;
		struct pfs_bcache_opts o = {.budget = budget, .block_size = 1024,
					    .policy = cases[k].p, .resident = cases[k].r,
					    .stage_budget = stage};
		struct pfs_bcache *c = NULL;
		assert_int_equal(pfs_bcache_create(&o, &c), 0);
		pthread_t th[NTHREADS];
		struct stress s[NTHREADS];
		for (int i = 0; i < NTHREADS; i++) {
			s[i] = (struct stress){.c = c, .budget = budget, .stage_budget = stage,
					       .seed = 77u + (unsigned)i};
			assert_int_equal(pthread_create(&th[i], NULL, stress_main, &s[i]), 0);
		}
		for (int i = 0; i < NTHREADS; i++) {
			assert_int_equal(pthread_join(th[i], NULL), 0);
			assert_int_equal(s[i].bad, 0);
		}
		struct pfs_bcache_stats st = stats(c);
		assert_true(st.resident_bytes <= budget);
		assert_true(st.resident_bytes >= budget / 2); /* and it is used */
		assert_true(st.staged_bytes <= stage);
		assert_int_equal(ram_ctr().bytes - ram, st.resident_bytes + st.staged_bytes);
		pfs_bcache_destroy(c);
		assert_int_equal(ram_ctr().bytes, ram);
	}
}

/* ---- coalescing when the block is not admitted ------------------------ */

/* BFX_READERS readers of block 0 of object f->ino (one block), the first
 * with first_flags: one fill, and every reader served the same block. */
static void run_readers(struct pfs_bcache *c, struct bfx_fill *f, struct bfx_reader *r,
			unsigned first_flags)
{
	bfx_run_readers(c, f, r, BS, BS, first_flags);
	assert_int_equal(bfx_calls(f), 1);
	for (int i = 0; i < BFX_READERS; i++) {
		assert_int_equal(r[i].rc, 0);
		assert_true(r[i].ok);
		assert_ptr_equal(r[i].b, r[0].b);
	}
}

static void test_coalescing_not_admitted(void **state)
{
	(void)state;
	uint64_t ram = ram_ctr().bytes;
	/* minio, full: eight readers of a new block share one fill. */
	struct pfs_bcache *c = new_cache(PFS_POLICY_MINIO, PFS_RESIDENT_ANY, BS, 0);
	assert_int_equal(get(c, 1), 1);
	for (uint64_t round = 0; round < 5; round++) {
		struct bfx_fill f = {.ino = 100 + round};
		struct bfx_reader r[BFX_READERS];
		run_readers(c, &f, r, 0);
		for (int i = 0; i < BFX_READERS; i++)
			pfs_bcache_put(c, r[i].b); /* the last put frees it (ASan) */
		assert_int_equal(ram_ctr().bytes - ram, BS);
		assert_int_equal(get(c, 100 + round), 1);
	}
	assert_int_equal(stats(c).refused, 10);
	pfs_bcache_destroy(c);
	/* epoch: a prefetch and seven readers share one fill; the block is
	 * staged, and it was read, so it goes with the last put. */
	c = new_cache(PFS_POLICY_EPOCH, PFS_RESIDENT_ANY, BS, 4 * BS);
	assert_int_equal(get(c, 1), 1);
	for (uint64_t round = 0; round < 5; round++) {
		struct bfx_fill f = {.ino = 200 + round};
		struct bfx_reader r[BFX_READERS];
		run_readers(c, &f, r, PFS_BCACHE_PREFETCH);
		struct pfs_bcache_stats st = stats(c);
		/* Staged if the prefetch ran the fill, else a demand miss. */
		assert_true(st.staged_blocks <= 1);
		for (int i = 0; i < BFX_READERS; i++)
			pfs_bcache_put(c, r[i].b);
		assert_int_equal(stats(c).staged_blocks, 0);
		assert_int_equal(ram_ctr().bytes - ram, BS);
	}
	pfs_bcache_destroy(c);
	assert_int_equal(ram_ctr().bytes, ram);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_create_rejects),
		cmocka_unit_test(test_order_lru),
		cmocka_unit_test(test_minio_never_replaces),
		cmocka_unit_test(test_partial_read_kept),
		cmocka_unit_test(test_waste_and_refetch_counted),
		cmocka_unit_test(test_epoch_prefetch_fills_resident_first),
		cmocka_unit_test(test_epoch_staging),
		cmocka_unit_test(test_resident_small_large),
		cmocka_unit_test(test_resident_converges),
		cmocka_unit_test(test_budget_under_threads),
		cmocka_unit_test(test_coalescing_not_admitted),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
