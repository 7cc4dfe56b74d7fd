/* Unit tests for the log rate limiter (util/log.h). */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>

#include "util/log.h"

#define SEC 1000000000ull

/* Same key: the first line is written, the rest of its window is counted,
 * the first line after the window reports the count. */
static void test_same_key_window(void **state)
{
	(void)state;
	uint64_t dk, da, t = 1000 * SEC;
	assert_int_equal(pfs_log_limit_check("stale:a", t, &dk, &da), 1);
	uint64_t before = pfs_log_limit_dropped();
	for (int i = 0; i < 1000; i++)
		assert_int_equal(pfs_log_limit_check("stale:a", t + (uint64_t)i * SEC / 100, &dk, &da), 0);
	assert_int_equal(pfs_log_limit_dropped() - before, 1000);
	t += PFS_LOG_LIMIT_WINDOW_S * SEC;
	assert_int_equal(pfs_log_limit_check("stale:a", t, &dk, &da), 1);
	assert_int_equal(dk, 1000);
	assert_int_equal(pfs_log_limit_check("stale:a", t + 1, &dk, &da), 0);
}

/* Many keys at once: no more than the burst per window in all, and the
 * next written line says how many others were dropped. */
static void test_storm_over_many_keys(void **state)
{
	(void)state;
	uint64_t dk, da, t = 100000 * SEC; /* a new budget window */
	int written = 0;
	char key[32];
	for (int i = 0; i < 5000; i++) {
		snprintf(key, sizeof(key), "storm:%d", i);
		written += pfs_log_limit_check(key, t + (uint64_t)i, &dk, &da);
	}
	assert_int_equal(written, PFS_LOG_LIMIT_BURST);
	t += PFS_LOG_LIMIT_WINDOW_S * SEC;
	assert_int_equal(pfs_log_limit_check("storm:new", t, &dk, &da), 1);
	assert_int_equal(da, 5000 - PFS_LOG_LIMIT_BURST);
}

/* Distinct keys are independent below the budget. */
static void test_keys_independent(void **state)
{
	(void)state;
	uint64_t dk, da, t = 200000 * SEC;
	assert_int_equal(pfs_log_limit_check("k:x", t, &dk, &da), 1);
	assert_int_equal(pfs_log_limit_check("k:y", t, &dk, &da), 1);
	assert_int_equal(pfs_log_limit_check("k:x", t + 1, &dk, &da), 0);
	assert_int_equal(pfs_log_limit_check("k:y", t + 1, &dk, &da), 0);
}

/* Threads: the limiter's table and budget are shared by every thread
 * that logs (run under ThreadSanitizer by scripts/test). Whatever the
 * interleaving, each key's first line of the window is the one written. */
#define NTHREADS 4
#define CALLS 4000
#define NKEYS 8

static void *storm_thread(void *arg)
{
	uint64_t t = *(const uint64_t *)arg, dk, da;
	long written = 0;
	char key[32];
	for (int i = 0; i < CALLS; i++) {
		snprintf(key, sizeof(key), "threads:%d", i % NKEYS);
		written += pfs_log_limit_check(key, t + (uint64_t)i, &dk, &da);
		if (i % 1000 == 0) /* the real clock and the writer, too */
			pfs_log_limited(PFS_LOG_WARN, "threads:real", "concurrent line %d", i);
	}
	return (void *)written;
}

static void test_threads(void **state)
{
	(void)state;
	uint64_t t = 300000 * SEC; /* a new budget window */
	uint64_t before = pfs_log_limit_dropped();
	pthread_t th[NTHREADS];
	long written = 0, real_written;
	for (int i = 0; i < NTHREADS; i++)
		assert_int_equal(pthread_create(&th[i], NULL, storm_thread, &t), 0);
	for (int i = 0; i < NTHREADS; i++) {
		void *w;
		assert_int_equal(pthread_join(th[i], &w), 0);
		written += (long)w;
	}
	assert_int_equal(written, NKEYS);
	/* The real-clock lines: one per call, written or dropped. */
	real_written = (long)(NTHREADS * (CALLS / 1000)) -
		       (long)(pfs_log_limit_dropped() - before - (NTHREADS * CALLS - NKEYS));
	assert_true(real_written >= 0 && real_written <= NTHREADS * (CALLS / 1000));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_same_key_window),
		cmocka_unit_test(test_storm_over_many_keys),
		cmocka_unit_test(test_keys_independent),
		cmocka_unit_test(test_threads),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
