/* Unit tests for cache/bufpool.h: reuse within a class, an idle cap that
 * holds (lent bytes included, trimmed when given back), small buffers
 * from malloc, many threads at once. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "cache/bufpool.h"

static void test_reuse_and_classes(void **state)
{
	(void)state;
#ifdef __SANITIZE_ADDRESS__
	skip(); /* everything comes from malloc there */
#endif
	uint64_t idle0 = pfs_bufpool_idle();
	char *a = pfs_bufpool_alloc(100 << 10);
	assert_non_null(a);
	memset(a, 1, 100 << 10); /* the whole length is usable */
	pfs_bufpool_free(a, 100 << 10);
	assert_int_equal(pfs_bufpool_idle() - idle0, 128 << 10); /* class of 128 KiB */
	/* Same class, another length: the same buffer comes back. */
	char *b = pfs_bufpool_alloc(120 << 10);
	assert_ptr_equal(a, b);
	assert_int_equal(pfs_bufpool_idle(), idle0);
	memset(b, 2, 120 << 10);
	pfs_bufpool_free(b, 120 << 10);
	/* Another class does not take it. */
	char *c = pfs_bufpool_alloc(200 << 10);
	assert_ptr_not_equal(c, a);
	pfs_bufpool_free(c, 200 << 10);
	/* Below the minimum, and 0: malloc. */
	char *d = pfs_bufpool_alloc(0), *e = pfs_bufpool_alloc(100);
	assert_non_null(d);
	assert_non_null(e);
	pfs_bufpool_free(d, 0);
	pfs_bufpool_free(e, 100);
	pfs_bufpool_free(NULL, 1 << 20);
}

static void test_idle_cap(void **state)
{
	(void)state;
#ifdef __SANITIZE_ADDRESS__
	skip();
#endif
	enum { N = 40 };
	void *p[N];
	for (int i = 0; i < N; i++) {
		p[i] = pfs_bufpool_alloc(1 << 20);
		assert_non_null(p[i]);
		memset(p[i], i, 1 << 20);
	}
	for (int i = 0; i < N; i++)
		pfs_bufpool_free(p[i], 1 << 20);
	/* 40 MiB freed, at most the cap kept. */
	assert_true(pfs_bufpool_idle() <= PFS_BUFPOOL_IDLE_MAX);
	assert_true(pfs_bufpool_idle() >= PFS_BUFPOOL_IDLE_MAX - (2u << 20));
}

/* Frees n buffers of 1 MiB at once (a burst, as the SSD writer's). */
static void burst(int n)
{
	void *p[64];
	for (int i = 0; i < n; i++) {
		p[i] = pfs_bufpool_alloc(1 << 20);
		assert_non_null(p[i]);
		memset(p[i], i, 1 << 20);
	}
	for (int i = 0; i < n; i++)
		pfs_bufpool_free(p[i], 1 << 20);
}

static void test_lend(void **state)
{
	(void)state;
#ifdef __SANITIZE_ADDRESS__
	skip();
#endif
	pfs_bufpool_lend(16u << 20);
	burst(40);
	/* the cap is 8 MiB + 16 lent */
	assert_true(pfs_bufpool_idle() <= PFS_BUFPOOL_IDLE_MAX + (16u << 20));
	assert_true(pfs_bufpool_idle() >= PFS_BUFPOOL_IDLE_MAX + (14u << 20));
	/* a second burst reuses them: no more is kept */
	burst(20);
	assert_true(pfs_bufpool_idle() <= PFS_BUFPOOL_IDLE_MAX + (16u << 20));
	/* given back: trimmed to the plain cap at once, and held there */
	pfs_bufpool_unlend(16u << 20);
	assert_true(pfs_bufpool_idle() <= PFS_BUFPOOL_IDLE_MAX);
	burst(40);
	assert_true(pfs_bufpool_idle() <= PFS_BUFPOOL_IDLE_MAX);
	pfs_bufpool_unlend(1u << 20); /* more than lent: nothing below the plain cap */
	assert_true(pfs_bufpool_idle() >= PFS_BUFPOOL_IDLE_MAX - (2u << 20));
}

static void *hammer(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg;
	for (int i = 0; i < 2000; i++) {
		seed = seed * 1103515245u + 12345u;
		size_t len = (size_t)(seed >> 8) % (3u << 20);
		unsigned char *b = pfs_bufpool_alloc(len);
		assert_non_null(b);
		if (len) {
			b[0] = (unsigned char)i;
			b[len - 1] = (unsigned char)i;
			assert_int_equal(b[0], b[len - 1]);
		}
		pfs_bufpool_free(b, len);
	}
	return NULL;
}

static void test_threads(void **state)
{
	(void)state;
	pthread_t t[4];
	for (uintptr_t i = 0; i < 4; i++)
		assert_int_equal(pthread_create(&t[i], NULL, hammer, (void *)(i + 1)), 0);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	assert_true(pfs_bufpool_idle() <= PFS_BUFPOOL_IDLE_MAX);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reuse_and_classes),
		cmocka_unit_test(test_idle_cap),
		cmocka_unit_test(test_lend),
		cmocka_unit_test(test_threads),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
