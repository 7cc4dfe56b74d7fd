/* Unit tests for cache/failmem.h: a file the origin failed for good fails
 * at once for a while and backs off; a transient failure answers the next
 * fill once; a success forgets. */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cache/failmem.h"

#define SEC 1000000000ull

/* -EIO: the next fill (the kernel's retry) fails at once, once; the
 * prefetcher skips the file until the deadline but never consumes it. */
static void test_transient_one_answer(void **state)
{
	(void)state;
	struct pfs_failmem *m;
	assert_int_equal(pfs_failmem_create(&m), 0);
	uint64_t t = 1000 * SEC, d = PFS_FAILMEM_TRANSIENT_S * SEC;
	assert_int_equal(pfs_failmem_take(m, 7, t), 0);
	pfs_failmem_note(m, 7, -EIO, t);
	assert_int_equal(pfs_failmem_check(m, 7, t + 1), -EIO);
	assert_int_equal(pfs_failmem_check(m, 7, t + 2), -EIO); /* a look consumes nothing */
	assert_int_equal(pfs_failmem_take(m, 8, t + 1), 0);     /* per file */
	assert_int_equal(pfs_failmem_take(m, 7, t + 3), -EIO);
	assert_int_equal(pfs_failmem_take(m, 7, t + 4), 0);     /* once */
	assert_int_equal(pfs_failmem_check(m, 7, t + 5), 0);
	/* Unconsumed, it ends at the deadline. */
	pfs_failmem_note(m, 7, -EIO, t + 10);
	assert_int_equal(pfs_failmem_check(m, 7, t + 10 + d - 1), -EIO);
	assert_int_equal(pfs_failmem_take(m, 7, t + 10 + d), 0);
	/* Repeated transient failures do not grow the deadline. */
	for (int i = 0; i < 20; i++)
		pfs_failmem_note(m, 7, -EIO, t + 100 * SEC * (uint64_t)(i + 1));
	uint64_t last = t + 2000 * SEC;
	assert_int_equal(pfs_failmem_check(m, 7, last + d), 0);
	/* Success forgets. */
	pfs_failmem_note(m, 7, -EIO, last);
	pfs_failmem_clear(m, 7);
	assert_int_equal(pfs_failmem_count(m), 0);
	assert_int_equal(pfs_failmem_take(m, 7, last + 1), 0);
	pfs_failmem_destroy(m);
}

static void test_permanent_backs_off(void **state)
{
	(void)state;
	struct pfs_failmem *m;
	assert_int_equal(pfs_failmem_create(&m), 0);
	uint64_t t = 5 * SEC, p = PFS_FAILMEM_PERMANENT_S * SEC;
	pfs_failmem_note(m, 1, -ESTALE, t);
	pfs_failmem_note(m, 2, -ENOENT, t);
	pfs_failmem_note(m, 3, -EACCES, t);
	pfs_failmem_note(m, 4, -ENOMEM, t); /* says nothing about the object */
	pfs_failmem_note(m, 5, -ENOSPC, t);
	for (int i = 0; i < 3; i++) /* every fill, not once */
		assert_int_equal(pfs_failmem_take(m, 1, t + p - 1), -ESTALE);
	assert_int_equal(pfs_failmem_take(m, 2, t + p - 1), -ENOENT);
	assert_int_equal(pfs_failmem_take(m, 3, t + p - 1), -EACCES);
	assert_int_equal(pfs_failmem_take(m, 4, t), 0);
	assert_int_equal(pfs_failmem_take(m, 5, t), 0);
	assert_int_equal(pfs_failmem_take(m, 1, t + p), 0);
	assert_int_equal(pfs_failmem_count(m), 3);
	/* Fails again after its deadline: twice as long. */
	t += p;
	pfs_failmem_note(m, 1, -ESTALE, t);
	assert_int_equal(pfs_failmem_check(m, 1, t + 2 * p - 1), -ESTALE);
	assert_int_equal(pfs_failmem_check(m, 1, t + 2 * p), 0);
	/* Parallel fills failing within one deadline add one step, not many. */
	t += 2 * p;
	for (int i = 0; i < 50; i++)
		pfs_failmem_note(m, 1, -ESTALE, t + (uint64_t)i);
	assert_int_equal(pfs_failmem_check(m, 1, t + 4 * p + 100), 0);
	/* Never longer than the maximum. */
	for (int i = 0; i < 40; i++) {
		t += (uint64_t)PFS_FAILMEM_MAX_S * SEC;
		pfs_failmem_note(m, 1, -ESTALE, t);
	}
	assert_int_equal(pfs_failmem_check(m, 1, t + (uint64_t)PFS_FAILMEM_MAX_S * SEC - 1), -ESTALE);
	assert_int_equal(pfs_failmem_check(m, 1, t + (uint64_t)PFS_FAILMEM_MAX_S * SEC), 0);
	pfs_failmem_destroy(m);
}

/* More failing files than slots: memory stays bounded, the newest are
 * remembered. */
static void test_bounded(void **state)
{
	(void)state;
	struct pfs_failmem *m;
	assert_int_equal(pfs_failmem_create(&m), 0);
	uint64_t t = SEC;
	for (uint64_t k = 0; k < 4 * PFS_FAILMEM_SLOTS; k++)
		pfs_failmem_note(m, k, -ENOENT, t + k);
	assert_true(pfs_failmem_count(m) <= PFS_FAILMEM_SLOTS);
	uint64_t last = 4 * PFS_FAILMEM_SLOTS - 1;
	assert_int_equal(pfs_failmem_check(m, last, t + last + 1), -ENOENT);
	pfs_failmem_destroy(m);
}

struct hammer {
	struct pfs_failmem *m;
	int id;
};

static void *hammer(void *arg)
{
	struct hammer *h = arg;
	for (uint64_t i = 0; i < 20000; i++) {
		uint64_t k = (i * 7 + (uint64_t)h->id) % 64;
		if (i % 4 == 0)
			pfs_failmem_note(h->m, k, i % 8 ? -EIO : -ESTALE, SEC + i);
		else if (i % 4 == 1)
			pfs_failmem_clear(h->m, k);
		else if (i % 4 == 2)
			(void)pfs_failmem_take(h->m, k, SEC + i);
		else
			(void)pfs_failmem_check(h->m, k, SEC + i);
	}
	return NULL;
}

static void test_threads(void **state)
{
	(void)state;
	struct pfs_failmem *m;
	assert_int_equal(pfs_failmem_create(&m), 0);
	pthread_t th[4];
	struct hammer h[4];
	for (int i = 0; i < 4; i++) {
		h[i] = (struct hammer){m, i};
		assert_int_equal(pthread_create(&th[i], NULL, hammer, &h[i]), 0);
	}
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	assert_true(pfs_failmem_count(m) <= 64);
	for (uint64_t k = 0; k < 64; k++)
		pfs_failmem_clear(m, k);
	assert_int_equal(pfs_failmem_count(m), 0);
	pfs_failmem_destroy(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_transient_one_answer),
		cmocka_unit_test(test_permanent_backs_off),
		cmocka_unit_test(test_bounded),
		cmocka_unit_test(test_threads),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
