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
 * The helpers fail the running cmocka test on a broken expectation. */
#ifndef PFS_TEST_BCACHE_FIXTURE_H
#define PFS_TEST_BCACHE_FIXTURE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "../../cache/bcache.h"

#define BFX_READERS 8 /* readers in bfx_run_readers() */

/* The byte at offset i of block (ino, idx): differs between neighbouring
 * inodes and blocks, so a block served under the wrong key is caught. */
unsigned char bfx_pattern(uint64_t ino, uint64_t idx, size_t i);

/* The context of bfx_fill_fn(). Zero-initialise, set ino and idx. */
struct bfx_fill {
	uint64_t ino, idx;
	int calls;               /* atomic: how many times the fill ran */
	int rc;                  /* what the fill returns; 0: fills the pattern */
	uint64_t wait_coalesced; /* spin until ram_ctr().coalesced >= this; 0: no wait */
	int timed_out;           /* atomic: the wait gave up after 30 s */
};

/* A pfs_bcache_fill_fn; ctx is a struct bfx_fill. */
int bfx_fill_fn(void *ctx, void *buf, size_t len);
/* f->calls, read atomically. */
int bfx_calls(struct bfx_fill *f);
/* 1 if b holds len bytes of the pattern of (ino, idx). */
int bfx_data_ok(const struct pfs_block *b, uint64_t ino, uint64_t idx, size_t len);
/* pfs_bcache_create(o), asserted to succeed. */
struct pfs_bcache *bfx_cache(const struct pfs_bcache_opts *o);

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
void bfx_run_readers(struct pfs_bcache *c, struct bfx_fill *f, struct bfx_reader *r,
		     size_t len, uint64_t obj_size, unsigned first_flags);

/* The process-wide counters now (bcache.h's pfs_bcache_counters). */
static inline struct pfs_ram_counters ram_ctr(void)
{
	struct pfs_ram_counters c;
	pfs_bcache_counters(&c);
	return c;
}

#endif
