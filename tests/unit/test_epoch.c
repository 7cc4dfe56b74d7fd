/* test_epoch.c - cache/epoch.h: the epoch advances when a file already
 * read in the current epoch is read again and the epoch has read at least
 * 5/8 of the files seen (earlier repeats are re-reads); files_read counts
 * the distinct files of the current epoch, files_seen those ever read;
 * full passes make exactly one epoch each, also with many readers, while
 * random re-reads make about one epoch per N reads, not one per repeat;
 * and with several threads reading disjoint parts of each epoch's
 * permutation, every read is attributed to its own epoch. */
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
	const uint32_t k = N / PFS_EPOCH_CONFIRM_PER; /* repeats that end an epoch */
	assert_true(k > 1 && k < PFS_EPOCH_CONFIRM_MAX);
	for (uint64_t ep = 1; ep <= 6; ep++) {
		shuffle(perm, N, &seed);
		for (uint32_t i = 0; i < N; i++) {
			/* The boundary shows at the k-th read of a pass; the reads
			 * before it then count in the new epoch too. */
			uint64_t e = ep > 1 && i + 1 < k ? ep - 1 : ep;
			assert_int_equal(pfs_epoch_note_read(t, perm[i]), e);
			assert_int_equal(pfs_epoch_current(t), e);
			assert_int_equal(pfs_epoch_files_read(t), e == ep ? i + 1 : N);
			assert_true(pfs_epoch_is_read(t, perm[i]));
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
	assert_int_equal(pfs_epoch_files_seen(t), 3);
	/* In epoch 1 every file seen was read in it: a repeat ends it, even
	 * before all files were read. */
	assert_int_equal(pfs_epoch_note_read(t, 1), 2);
	assert_int_equal(pfs_epoch_current(t), 2);
	assert_int_equal(pfs_epoch_files_read(t), 1);
	/* Files of the old epoch are new in this one. */
	assert_int_equal(pfs_epoch_note_read(t, 0), 2);
	assert_int_equal(pfs_epoch_note_read(t, 4), 2);
	assert_int_equal(pfs_epoch_files_read(t), 3);
	assert_int_equal(pfs_epoch_files_seen(t), 4);
	/* 3 of 4 seen >= 5/8: a repeat is a boundary. */
	assert_int_equal(pfs_epoch_note_read(t, 4), 3);
	assert_int_equal(pfs_epoch_files_read(t), 1);
	/* 1 of 4 < 5/8: an immediate repeat is a re-read, no boundary. */
	assert_int_equal(pfs_epoch_note_read(t, 4), 3);
	assert_int_equal(pfs_epoch_note_read(t, 4), 3);
	assert_int_equal(pfs_epoch_files_read(t), 1);
	assert_int_equal(pfs_epoch_note_read(t, 2), 3);
	assert_int_equal(pfs_epoch_note_read(t, 2), 3); /* 2 of 4 */
	assert_int_equal(pfs_epoch_note_read(t, 3), 3); /* 3 of 5 < 5/8 */
	assert_int_equal(pfs_epoch_files_seen(t), 5);
	assert_int_equal(pfs_epoch_note_read(t, 4), 3);
	assert_int_equal(pfs_epoch_note_read(t, 1), 3); /* 4 of 5 */
	assert_true(pfs_epoch_is_read(t, 1));
	assert_false(pfs_epoch_is_read(t, 0));
	assert_int_equal(pfs_epoch_note_read(t, 3), 4);
	assert_int_equal(pfs_epoch_files_read(t), 1);
	/* Out of range: no change. */
	assert_int_equal(pfs_epoch_note_read(t, 5), 4);
	assert_int_equal(pfs_epoch_note_read(t, UINT32_MAX), 4);
	assert_int_equal(pfs_epoch_files_read(t), 1);
	assert_int_equal(pfs_epoch_current(t), 4);
	assert_false(pfs_epoch_is_read(t, 5));
	pfs_epoch_destroy(t);
}

/* A full sequential pass, then another: epoch 2 begins at the first read
 * of the second pass (the first epoch knows no total); a file read twice
 * in a row in the first 5/8 of an epoch is a re-read, and a partial pass does not
 * end the epoch before 5/8 of the files. */
static void test_passes_and_rereads(void **state)
{
	(void)state;
	enum { N = 100 };
	struct pfs_epoch *t = new_tracker(N);
	for (uint32_t i = 0; i < N; i++)
		assert_int_equal(pfs_epoch_note_read(t, i), 1);
	assert_int_equal(pfs_epoch_note_read(t, 0), 2);
	for (uint32_t i = 1; i < N; i++) {
		assert_int_equal(pfs_epoch_note_read(t, i), 2);
		if (i < 62) /* header, then body: a re-read below 5/8 */
			assert_int_equal(pfs_epoch_note_read(t, i), 2);
	}
	assert_int_equal(pfs_epoch_files_read(t), N);
	/* Epoch 3: the first 62 files, each read twice, then file 0 again. */
	assert_int_equal(pfs_epoch_note_read(t, 0), 3);
	for (uint32_t i = 1; i < 62; i++) {
		assert_int_equal(pfs_epoch_note_read(t, i), 3);
		assert_int_equal(pfs_epoch_note_read(t, 0), 3);
	}
	assert_int_equal(pfs_epoch_files_read(t), 62);
	assert_int_equal(pfs_epoch_note_read(t, 62), 3); /* 63 >= 62.5 */
	assert_int_equal(pfs_epoch_note_read(t, 0), 4);
	assert_int_equal(pfs_epoch_files_seen(t), N);
	pfs_epoch_destroy(t);
}
/* DistributedSampler's shards: R ranks read one permutation padded to a
 * multiple of R with its first samples (rank r: entries r, r + R, ...),
 * interleaved. The padding repeats files late in the epoch; it must not
 * open an epoch: after each pass the epoch is that pass's number, and the
 * next pass opens the next one. Also at the limit of epoch.h: R = 32, the
 * largest padding (31 files), K = 64. */
static void ddp_passes(uint32_t n, uint32_t ranks)
{
	uint32_t total = (n + ranks - 1) / ranks * ranks;
	uint32_t *perm = malloc(total * sizeof(*perm));
	assert_non_null(perm);
	unsigned seed = 3;
	struct pfs_epoch *t = new_tracker(n);
	for (uint64_t ep = 1; ep <= 4; ep++) {
		shuffle(perm, n, &seed);
		for (uint32_t i = n; i < total; i++)
			perm[i] = perm[i - n]; /* the padding */
		for (uint32_t j = 0; j < total / ranks; j++)
			for (uint32_t r = 0; r < ranks; r++)
				pfs_epoch_note_read(t, perm[j * ranks + r]);
		assert_int_equal(pfs_epoch_current(t), ep);
		assert_int_equal(pfs_epoch_files_read(t), n);
	}
	pfs_epoch_destroy(t);
	free(perm);
}

static void test_ddp_padding(void **state)
{
	(void)state;
	ddp_passes(1001, 4);          /* 3 padded samples, K = 15 */
	ddp_passes(4001, 8);          /* 7, K = 62 */
	ddp_passes(128 * 32 + 1, 32); /* 31 padded, K = 64: the limit */
}

/* ---- threads ---------------------------------------------------------- */

enum { NT = 64, TN = 20000, TEPOCHS = 5 };

struct shared {
	struct pfs_epoch *t;
	uint32_t perm[TEPOCHS][TN];
	pthread_barrier_t bar;
	uint64_t files_after[TEPOCHS];
	int bad;   /* atomic */
	int early; /* atomic */
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
		for (uint32_t i = (uint32_t)w->id; i < TN; i += NT) {
			uint64_t e = pfs_epoch_note_read(sh->t, sh->perm[ep][i]);
			/* Before the boundary is seen (K repeats): the old one. */
			if (e == (uint64_t)ep && ep > 0)
				__atomic_add_fetch(&sh->early, 1, __ATOMIC_RELAXED);
			else if (e != (uint64_t)ep + 1)
				__atomic_add_fetch(&sh->bad, 1, __ATOMIC_RELAXED);
		}
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
	uint32_t k = TN / PFS_EPOCH_CONFIRM_PER;
	if (k < 1)
		k = 1;
	if (k > PFS_EPOCH_CONFIRM_MAX)
		k = PFS_EPOCH_CONFIRM_MAX;
	assert_int_equal(sh->early, (TEPOCHS - 1) * (k - 1));
	for (int ep = 0; ep < TEPOCHS; ep++)
		assert_int_equal(sh->files_after[ep], TN);
	assert_int_equal(pfs_epoch_current(sh->t), TEPOCHS);
	pthread_barrier_destroy(&sh->bar);
	pfs_epoch_destroy(sh->t);
	free(sh);
}

/* 64 readers re-reading random files (with replacement): an epoch about
 * every N reads (N draws touch 63% of N files; the rule wants 5/8), not
 * one per repeat, which the birthday bound makes every ~sqrt(N) reads. */
enum { RT = 64, RN = 1000, RREADS = 100000 };

struct rshared {
	struct pfs_epoch *t;
	pthread_barrier_t bar;
	uint64_t last[RT];
	int backwards; /* atomic: a reader saw its epoch go down */
};

struct rworker {
	struct rshared *sh;
	unsigned id;
};

static void *random_reader(void *arg)
{
	struct rworker *w = arg;
	unsigned seed = 1234u + w->id;
	uint64_t last = 0;
	pthread_barrier_wait(&w->sh->bar);
	for (unsigned i = 0; i < RREADS / RT; i++) {
		uint64_t e = pfs_epoch_note_read(w->sh->t, (uint32_t)rand_r(&seed) % RN);
		if (e < last)
			__atomic_add_fetch(&w->sh->backwards, 1, __ATOMIC_RELAXED);
		last = e;
	}
	w->sh->last[w->id] = last;
	return NULL;
}

static void test_random_rereads(void **state)
{
	(void)state;
	struct rshared sh = {.t = new_tracker(RN)};
	pthread_t th[RT];
	struct rworker w[RT];
	pthread_barrier_init(&sh.bar, NULL, RT);
	for (unsigned i = 0; i < RT; i++) {
		w[i] = (struct rworker){&sh, i};
		assert_int_equal(pthread_create(&th[i], NULL, random_reader, &w[i]), 0);
	}
	for (unsigned i = 0; i < RT; i++)
		assert_int_equal(pthread_join(th[i], NULL), 0);
	uint64_t epochs = pfs_epoch_current(sh.t);
	print_message("%u random reads of %u files by %u readers: %llu epochs\n",
		      (unsigned)(RREADS / RT * RT), (unsigned)RN, (unsigned)RT,
		      (unsigned long long)epochs);
	/* About RREADS / RN = 100 (107 expected: the first epochs are short),
	 * where ending an epoch on every repeat gave about 2,500. */
	assert_true(epochs >= RREADS / RN / 2);
	assert_true(epochs <= RREADS / RN * 5 / 4);
	assert_int_equal(sh.backwards, 0);
	assert_int_equal(pfs_epoch_files_seen(sh.t), RN); /* all drawn by now */
	for (unsigned i = 0; i < RT; i++)
		assert_true(sh.last[i] <= epochs);
	pthread_barrier_destroy(&sh.bar);
	pfs_epoch_destroy(sh.t);
}

/* The same pattern from one thread, with a fixed seed: exactly reproducible
 * (107 epochs: 100,000 draws over 1,000 files). */
static void test_random_rereads_one_reader(void **state)
{
	(void)state;
	struct pfs_epoch *t = new_tracker(RN);
	unsigned seed = 5;
	uint64_t boundaries = 0, prev = 1;
	for (unsigned i = 0; i < RREADS; i++) {
		uint64_t e = pfs_epoch_note_read(t, (uint32_t)rand_r(&seed) % RN);
		boundaries += e != prev;
		prev = e;
	}
	assert_int_equal(boundaries + 1, pfs_epoch_current(t));
	assert_true(pfs_epoch_current(t) >= RREADS / RN * 9 / 10);
	assert_true(pfs_epoch_current(t) <= RREADS / RN * 5 / 4);
	/* Then full passes. The random epoch in progress ends somewhere in
	 * the first ones (the files it read are repeats there); once a pass
	 * begins an epoch at its k-th read (k repeats end an epoch), every
	 * pass is exactly one. */
	uint32_t perm[RN];
	const uint32_t k = RN / PFS_EPOCH_CONFIRM_PER;
	int aligned = 0;
	for (int pass = 0; pass < 8; pass++) {
		shuffle(perm, RN, &seed);
		uint64_t before = pfs_epoch_current(t);
		uint64_t first = 0;
		for (uint32_t i = 0; i < RN; i++) {
			uint64_t e = pfs_epoch_note_read(t, perm[i]);
			if (i == k - 1)
				first = e;
			if (aligned)
				assert_int_equal(e, i + 1 < k ? before : before + 1);
		}
		if (aligned) {
			assert_int_equal(first, before + 1);
			assert_int_equal(pfs_epoch_current(t), before + 1);
			assert_int_equal(pfs_epoch_files_read(t), RN);
		}
		aligned += pfs_epoch_current(t) == first && first == before + 1 &&
			   pfs_epoch_files_read(t) == RN;
	}
	assert_true(aligned >= 5);
	pfs_epoch_destroy(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fresh),
		cmocka_unit_test(test_permutations),
		cmocka_unit_test(test_transitions),
		cmocka_unit_test(test_passes_and_rereads),
		cmocka_unit_test(test_ddp_padding),
		cmocka_unit_test(test_threads),
		cmocka_unit_test(test_random_rereads),
		cmocka_unit_test(test_random_rereads_one_reader),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
