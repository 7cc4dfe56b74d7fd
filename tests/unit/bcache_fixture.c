/* bcache_fixture.c - see bcache_fixture.h. */
#include <errno.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <time.h>
#include <cmocka.h>

#include "bcache_fixture.h"
#include "../../util/stats.h"

unsigned char bfx_pattern(uint64_t ino, uint64_t idx, size_t i)
{
	return (unsigned char)(ino * 131 + idx * 7 + i * 13 + (i >> 8));
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int bfx_fill_fn(void *ctx, void *buf, size_t len)
{
	struct bfx_fill *f = ctx;
	__atomic_add_fetch(&f->calls, 1, __ATOMIC_SEQ_CST);
	if (f->wait_coalesced) {
		double deadline = now_s() + 30;
		while (ram_ctr().coalesced < f->wait_coalesced) {
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
		p[i] = bfx_pattern(f->ino, f->idx, i);
	return 0;
}

int bfx_calls(struct bfx_fill *f)
{
	return __atomic_load_n(&f->calls, __ATOMIC_SEQ_CST);
}

int bfx_data_ok(const struct pfs_block *b, uint64_t ino, uint64_t idx, size_t len)
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

static void *reader_main(void *arg)
{
	struct bfx_reader *r = arg;
	pthread_barrier_wait(r->start);
	r->b = NULL;
	r->rc = pfs_bcache_get(r->c, r->f->ino, r->f->idx, r->len, r->obj_size, r->flags,
			       bfx_fill_fn, r->f, &r->b);
	r->ok = r->rc == 0 && bfx_data_ok(r->b, r->f->ino, r->f->idx, r->len);
	return NULL;
}

void bfx_run_readers(struct pfs_bcache *c, struct bfx_fill *f, struct bfx_reader *r,
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
		assert_int_equal(pthread_create(&th[i], NULL, reader_main, &r[i]), 0);
	}
	for (int i = 0; i < BFX_READERS; i++)
		assert_int_equal(pthread_join(th[i], NULL), 0);
	pthread_barrier_destroy(&start);
	assert_false(__atomic_load_n(&f->timed_out, __ATOMIC_SEQ_CST));
}
