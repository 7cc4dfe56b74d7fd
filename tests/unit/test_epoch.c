/* test_epoch.c - cache/epoch.h: the epoch advances exactly when a file
 * already read in the current epoch is read again; files_read counts the
 * distinct files of the current epoch; and with several threads reading
 * disjoint parts of each epoch's permutation, every read is attributed to
 * its own epoch. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "../../cache/epoch.h"

static struct pfs_epoch *new_tracker(uint32_t n)
{
	struct pfs_epoch *t = NULL;
	assert_int_equal(pfs_epoch_create(n, &t), 0);
	assert_non_null(t);
	return t;
}

static void shuffle(uint32_t *v, uint32_t n, unsigned *seed)
{
	for (uint32_t i = 0; i < n; i++)
		v[i] = i;
	for (uint32_t i = n - 1; i > 0; i--) {
		uint32_t j = (uint32_t)rand_r(seed) % (i + 1), x = v[i];
		v[i] = v[j];
		v[j] = x;
	}
}

static void test_fresh(void **state)
{
	(void)state;
	struct pfs_epoch *t = new_tracker(10);
	assert_int_equal(pfs_epoch_current(t), 1);
	assert_int_equal(pfs_epoch_files_read(t), 0);
	pfs_epoch_destroy(t);
	pfs_epoch_destroy(NULL);
	t = new_tracker(0);
	assert_int_equal(pfs_epoch_note_read(t, 0), 1); /* out of range */
	assert_int_equal(pfs_epoch_files_read(t), 0);
	pfs_epoch_destroy(t);
}

static void test_permutations(void **state)
{
	(void)state;
	enum { N = 1000 };
	uint32_t perm[N];
	unsigned seed = 7;
	struct pfs_epoch *t = new_tracker(N);
	for (uint64_t ep = 1; ep <= 6; ep++) {
		shuffle(perm, N, &seed);
		for (uint32_t i = 0; i < N; i++) {
			assert_int_equal(pfs_epoch_note_read(t, perm[i]), ep);
			assert_int_equal(pfs_epoch_current(t), ep);
			assert_int_equal(pfs_epoch_files_read(t), i + 1);
		}
	}
	pfs_epoch_destroy(t);
}

static void test_transitions(void **state)
{
	(void)state;
	struct pfs_epoch *t = new_tracker(5);
	assert_int_equal(pfs_epoch_note_read(t, 0), 1);
	assert_int_equal(pfs_epoch_note_read(t, 1), 1);
	assert_int_equal(pfs_epoch_note_read(t, 2), 1);
	assert_int_equal(pfs_epoch_files_read(t), 3);
	/* A repeat ends the epoch before all files were read. */
	assert_int_equal(pfs_epoch_note_read(t, 1), 2);
	assert_int_equal(pfs_epoch_current(t), 2);
	assert_int_equal(pfs_epoch_files_read(t), 1);
	/* Files of the old epoch are new in this one. */
	assert_int_equal(pfs_epoch_note_read(t, 0), 2);
	assert_int_equal(pfs_epoch_note_read(t, 4), 2);
	assert_int_equal(pfs_epoch_files_read(t), 3);
	/* An immediate repeat (a file read twice in a row) is a boundary too. */
	assert_int_equal(pfs_epoch_note_read(t, 4), 3);
	assert_int_equal(pfs_epoch_note_read(t, 4), 4);
	assert_int_equal(pfs_epoch_files_read(t), 1);
	/* Out of range: no change. */
	assert_int_equal(pfs_epoch_note_read(t, 5), 4);
	assert_int_equal(pfs_epoch_note_read(t, UINT32_MAX), 4);
	assert_int_equal(pfs_epoch_files_read(t), 1);
	assert_int_equal(pfs_epoch_current(t), 4);
	pfs_epoch_destroy(t);
}

/* ---- threads ---------------------------------------------------------- */

enum { NT = 4, TN = 20000, TEPOCHS = 5 };

struct shared {
	struct pfs_epoch *t;
	uint32_t perm[TEPOCHS][TN];
	pthread_barrier_t bar;
	uint64_t files_after[TEPOCHS];
	int bad; /* atomic */
};

struct worker {
	struct shared *sh;
	int id;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct shared *sh = w->sh;
	for (int ep = 0; ep < TEPOCHS; ep++) {
		pthread_barrier_wait(&sh->bar);
		for (uint32_t i = (uint32_t)w->id; i < TN; i += NT)
			if (pfs_epoch_note_read(sh->t, sh->perm[ep][i]) != (uint64_t)ep + 1)
				__atomic_add_fetch(&sh->bad, 1, __ATOMIC_RELAXED);
		pthread_barrier_wait(&sh->bar);
		if (w->id == 0)
			sh->files_after[ep] = pfs_epoch_files_read(sh->t);
	}
	return NULL;
}

static void test_threads(void **state)
{
	(void)state;
	struct shared *sh = calloc(1, sizeof(*sh));
	assert_non_null(sh);
	unsigned seed = 99;
	for (int ep = 0; ep < TEPOCHS; ep++)
		shuffle(sh->perm[ep], TN, &seed);
	sh->t = new_tracker(TN);
	pthread_barrier_init(&sh->bar, NULL, NT);
	pthread_t th[NT];
	struct worker w[NT];
	for (int i = 0; i < NT; i++) {
		w[i] = (struct worker){sh, i};
		assert_int_equal(pthread_create(&th[i], NULL, worker_main, &w[i]), 0);
	}
	for (int i = 0; i < NT; i++)
		assert_int_equal(pthread_join(th[i], NULL), 0);
	assert_int_equal(sh->bad, 0);
	for (int ep = 0; ep < TEPOCHS; ep++)
		assert_int_equal(sh->files_after[ep], TN);
	assert_int_equal(pfs_epoch_current(sh->t), TEPOCHS);
	pthread_barrier_destroy(&sh->bar);
	pfs_epoch_destroy(sh->t);
	free(sh);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fresh),
		cmocka_unit_test(test_permutations),
		cmocka_unit_test(test_transitions),
		cmocka_unit_test(test_threads),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
