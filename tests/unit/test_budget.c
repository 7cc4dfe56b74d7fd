/* test_budget.c - util/budget: bytes held never pass the limit except by a
 * job alone, arrival order is kept (a large job is not passed over by a
 * small one that fits), a job over the whole limit runs once nothing else
 * is held, and many threads at once (scripts/test runs it under
 * ThreadSanitizer too). */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "util/budget.h"

static struct pfs_budget *b;

static void wait_waiting(uint64_t n)
{
	struct pfs_budget_stats s;
	for (int i = 0; i < 5000; i++) {
		pfs_budget_stats(b, &s);
		if (s.waiting == n)
			return;
		usleep(1000);
	}
	fail_msg("never %llu waiting", (unsigned long long)n);
}

static uint64_t used(void)
{
	struct pfs_budget_stats s;
	pfs_budget_stats(b, &s);
	return s.used;
}

struct job {
	uint64_t bytes;
	int id;
};

static void *taker(void *arg)
{
	struct job *j = arg;
	pfs_budget_take(b, j->bytes);
	return NULL;
}

static void test_fit_order_alone(void **state)
{
	(void)state;
	assert_int_equal(pfs_budget_create(100, &b), 0);
	assert_int_equal(pfs_budget_take(b, 60), 0);
	assert_int_equal(pfs_budget_take(b, 40), 0); /* fits exactly */
	pfs_budget_give(b, 40);
	assert_int_equal(used(), 60);

	/* A (90) waits; B (10) arrives after and would fit, but waits behind
	 * A. With 50 given back A fits (10 + 90) and B no longer does: had B
	 * gone first, 20 would be held and A still waiting. */
	struct job a = {90, 1}, c = {10, 2};
	pthread_t ta, tc;
	assert_int_equal(pthread_create(&ta, NULL, taker, &a), 0);
	wait_waiting(1);
	assert_int_equal(pthread_create(&tc, NULL, taker, &c), 0);
	wait_waiting(2);
	assert_int_equal(used(), 60);
	pfs_budget_give(b, 50);
	pthread_join(ta, NULL);
	wait_waiting(1);
	assert_int_equal(used(), 100);
	pfs_budget_give(b, 10);
	pthread_join(tc, NULL);
	assert_int_equal(used(), 100);
	pfs_budget_give(b, 90);
	pfs_budget_give(b, 10);

	/* Larger than the whole limit: waits for nothing held, then runs. */
	struct job big = {500, 3};
	pthread_t tb;
	pfs_budget_take(b, 1);
	assert_int_equal(pthread_create(&tb, NULL, taker, &big), 0);
	wait_waiting(1);
	pfs_budget_give(b, 1);
	pthread_join(tb, NULL);
	assert_int_equal(used(), 500);
	pfs_budget_give(b, 500);
	struct pfs_budget_stats s;
	pfs_budget_stats(b, &s);
	assert_int_equal(s.used, 0);
	assert_int_equal(s.peak, 500);
	assert_int_equal(s.waits, 3);
	pfs_budget_destroy(b);
}

/* Many threads: the bytes held (counted beside the budget) never pass the
 * limit, except by one job alone. */
#define NTHREADS 8
#define ROUNDS 400
static uint64_t held, worst;
static int over_alone_ok = 1;
static pthread_mutex_t held_lock = PTHREAD_MUTEX_INITIALIZER;

static void *stress(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg;
	for (int r = 0; r < ROUNDS; r++) {
		uint64_t bytes = (uint64_t)(rand_r(&seed) % 60) + (r % 50 == 0 ? 200 : 1);
		pfs_budget_take(b, bytes);
		pthread_mutex_lock(&held_lock);
		held += bytes;
		if (held > 100 && held != bytes)
			over_alone_ok = 0;
		if (held > worst)
			worst = held;
		pthread_mutex_unlock(&held_lock);
		if (r % 7 == 0)
			sched_yield();
		pthread_mutex_lock(&held_lock);
		held -= bytes;
		pthread_mutex_unlock(&held_lock);
		pfs_budget_give(b, bytes);
	}
	return NULL;
}

static void test_threads(void **state)
{
	(void)state;
	pthread_t th[NTHREADS];
	assert_int_equal(pfs_budget_create(100, &b), 0);
	for (uintptr_t t = 0; t < NTHREADS; t++)
		assert_int_equal(pthread_create(&th[t], NULL, stress, (void *)(t + 1)), 0);
	for (int t = 0; t < NTHREADS; t++)
		pthread_join(th[t], NULL);
	assert_true(over_alone_ok);
	assert_true(worst >= 200); /* the large jobs ran */
	struct pfs_budget_stats s;
	pfs_budget_stats(b, &s);
	assert_int_equal(s.used, 0);
	assert_int_equal(s.jobs, NTHREADS * ROUNDS);
	pfs_budget_destroy(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fit_order_alone),
		cmocka_unit_test(test_threads),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
