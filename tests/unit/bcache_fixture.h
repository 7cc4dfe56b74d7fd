/* bcache_fixture.h - what test_bcache.c and test_policy.c share: a fill
 * function that writes a known pattern per (ino, idx) and counts its calls,
 * the check of a block against that pattern, and N concurrent readers of
 * one block that are all known to wait on a single fill.
 *
 * How the coalescing readers know every reader is waiting, without sleeps:
 * a reader that finds the block FILLING bumps the coalesced counter and
 * enters pthread_cond_wait() under the same hold of the shard lock. The
 * fill function spins (sched_yield, no sleep) until coalesced has grown by
 * N-1; the filler then needs that lock to publish the result, which it can
 * only take once the last reader is inside pthread_cond_wait(). So all N-1
 * are waiting on the fill, deterministically.
 *
 * The RAM counters are process-wide and outlive each cache: tests read deltas.
 * The helpers fail the running cmocka test on a broken expectation.
 *
 * Include after cmocka.h. Everything is static inline, as in every
 * fixture here (the tests/unit fixture headers): each test program uses what it
 * needs. The declarations first, with what each does; the code below. */
#ifndef PFS_TEST_BCACHE_FIXTURE_H
#define PFS_TEST_BCACHE_FIXTURE_H

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "../../cache/bcache.h"

#define BFX_READERS 8 /* readers in bfx_run_readers() */

/* The byte at offset i of block (ino, idx): differs between neighbouring
 * inodes and blocks, so a block served under the wrong key is caught. */
static inline unsigned char bfx_pattern(uint64_t ino, uint64_t idx, size_t i);

/* The context of bfx_fill_fn(). Zero-initialise, set ino and idx. */
struct bfx_fill {
	uint64_t ino, idx;
	int calls;               /* atomic: how many times the fill ran */
	int rc;                  /* what the fill returns; 0: fills the pattern */
	uint64_t wait_coalesced; /* spin until ram_ctr().coalesced >= this; 0: no wait */
	int timed_out;           /* atomic: the wait gave up after 30 s */
};

/* A pfs_bcache_fill_fn; ctx is a struct bfx_fill. */
static inline int bfx_fill_fn(void *ctx, void *buf, size_t len);
/* f->calls, read atomically. */
static inline int bfx_calls(struct bfx_fill *f);
/* 1 if b holds len bytes of the pattern of (ino, idx). */
static inline int bfx_data_ok(const struct pfs_block *b, uint64_t ino, uint64_t idx,
			      size_t len);
/* pfs_bcache_create(o), asserted to succeed. */
static inline struct pfs_bcache *bfx_cache(const struct pfs_bcache_opts *o);

/* One of the concurrent readers of bfx_run_readers(). */
struct bfx_reader {
	struct pfs_bcache *c;
	struct bfx_fill *f;
	pthread_barrier_t *start;
	size_t len;        /* block length asked for */
	uint64_t obj_size; /* passed to pfs_bcache_get */
	unsigned flags;    /* passed to pfs_bcache_get */
	int rc;            /* pfs_bcache_get's answer */
	int ok;            /* rc == 0 and the data checked out */
	struct pfs_block *b; /* held on success: the caller puts it */
};

/* BFX_READERS threads get block (f->ino, f->idx) of len bytes at once, the
 * first with first_flags, the others with none; returns when all are back,
 * having asserted that the other readers did wait on one fill (the fill did
 * not time out). Results in r[0..BFX_READERS). */
static inline void bfx_run_readers(struct pfs_bcache *c, struct bfx_fill *f,
				   struct bfx_reader *r, size_t len, uint64_t obj_size,
				   unsigned first_flags);

/* The process-wide counters now (bcache.h's pfs_bcache_counters). */
static inline struct pfs_ram_counters ram_ctr(void)
{
	struct pfs_ram_counters c;
	pfs_bcache_counters(&c);
	return c;
}

/* ---- the code ---------------------------------------------------------- */

static inline unsigned char bfx_pattern(uint64_t ino, uint64_t idx, size_t i)
{
	return (unsigned char)(ino * 131 + idx * 7 + i * 13 + (i >> 8));
}

static inline double bfx_now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static inline int bfx_fill_fn(void *ctx, void *buf, size_t len)
{
	struct bfx_fill *f = ctx;
	__atomic_add_fetch(&f->calls, 1, __ATOMIC_SEQ_CST);
	if (f->wait_coalesced) {
		double deadline = bfx_now_s() + 30;
		while (ram_ctr().coalesced < f->wait_coalesced) {
			if (bfx_now_s() > deadline) {
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
		p[i] = bfx_pattern(f->ino, f->idx, i);
	return 0;
}

static inline int bfx_calls(struct bfx_fill *f)
{
	return __atomic_load_n(&f->calls, __ATOMIC_SEQ_CST);
}

static inline int bfx_data_ok(const struct pfs_block *b, uint64_t ino, uint64_t idx, size_t len)
{
	if (pfs_block_len(b) != len)
		return 0;
	const unsigned char *p = pfs_block_data(b);
	for (size_t i = 0; i < len; i++)
		if (p[i] != bfx_pattern(ino, idx, i))
			return 0;
	return 1;
}

struct pfs_bcache *bfx_cache(const struct pfs_bcache_opts *o)
{
	struct pfs_bcache *c = NULL;
	assert_int_equal(pfs_bcache_create(o, &c), 0);
	assert_non_null(c);
	return c;
}

static inline void *bfx_reader_main(void *arg)
{
	struct bfx_reader *r = arg;
	pthread_barrier_wait(r->start);
	r->b = NULL;
	r->rc = pfs_bcache_get(r->c, r->f->ino, r->f->idx, r->len, r->obj_size, r->flags,
			       bfx_fill_fn, r->f, &r->b);
	r->ok = r->rc == 0 && bfx_data_ok(r->b, r->f->ino, r->f->idx, r->len);
	return NULL;
}

static inline void bfx_run_readers(struct pfs_bcache *c, struct bfx_fill *f, struct bfx_reader *r,
		     size_t len, uint64_t obj_size, unsigned first_flags)
{
	pthread_barrier_t start;
	pthread_t th[BFX_READERS];
	pthread_barrier_init(&start, NULL, BFX_READERS);
	f->wait_coalesced = ram_ctr().coalesced + BFX_READERS - 1;
	for (int i = 0; i < BFX_READERS; i++) {
		r[i] = (struct bfx_reader){.c = c, .f = f, .start = &start, .len = len,
					   .obj_size = obj_size, .rc = 1,
					   .flags = i == 0 ? first_flags : 0};
		assert_int_equal(pthread_create(&th[i], NULL, bfx_reader_main, &r[i]), 0);
	}
	for (int i = 0; i < BFX_READERS; i++)
		assert_int_equal(pthread_join(th[i], NULL), 0);
	pthread_barrier_destroy(&start);
	assert_false(__atomic_load_n(&f->timed_out, __ATOMIC_SEQ_CST));
}

#endif
