/* Unit tests for the log rate limiter (util/log.h). */
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_same_key_window),
		cmocka_unit_test(test_storm_over_many_keys),
		cmocka_unit_test(test_keys_independent),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
