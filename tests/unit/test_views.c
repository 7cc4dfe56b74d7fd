/* test_views.c - fs/views: spec interning and the transform pool, from
 * many threads at once (scripts/test runs it under ThreadSanitizer too).
 * Every thread interns the same spellings (each meaning gets one index),
 * runs transforms through the pool and asks for output sizes; the bytes
 * and sizes must equal the transform run directly (transform/view.h). */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <turbojpeg.h>

#include "fs/views.h"
#include "transform/view.h"
#include "util/log.h"

#define NTHREADS 4
#define ROUNDS 12

static const char *const spellings[] = {
	"resize=8,crop=6", "crop=6x6,resize=8", "fmt=npy", "decode,fmt=npy",
	"resize=5x3,fmt=jpeg,q=40", "decode", "bad=spec",
};
#define NSPELL (sizeof(spellings) / sizeof(spellings[0]))

static unsigned char *jpeg;
static unsigned long jpeg_len;
static struct pfs_views *views;
static unsigned reads; /* atomic: source reads */

static int read_mem(void *ctx, void *buf, size_t len)
{
	(void)ctx;
	__atomic_add_fetch(&reads, 1, __ATOMIC_RELAXED);
	usleep(2000); /* a fetch: others arrive meanwhile */
	memcpy(buf, jpeg, len);
	return 0;
}

static void make_jpeg(void)
{
	int w = 21, h = 13;
	unsigned char rgb[21 * 13 * 3];
	for (int i = 0; i < w * h * 3; i++)
		rgb[i] = (unsigned char)(i * 7);
	tjhandle tj = tjInitCompress();
	assert_non_null(tj);
	jpeg = NULL; /* tjCompress2 allocates */
	jpeg_len = 0;
	assert_int_equal(tjCompress2(tj, rgb, w, 0, h, TJPF_RGB, &jpeg, &jpeg_len, TJSAMP_420,
				     80, 0), 0);
	tjDestroy(tj);
}

static void *thread_main(void *arg)
{
	uint32_t *idx = arg; /* per spelling, UINT32_MAX for a bad one */
	for (int r = 0; r < ROUNDS; r++) {
		for (size_t s = 0; s < NSPELL; s++) {
			size_t k = (s + (size_t)r) % NSPELL;
			uint32_t i;
			if (pfs_views_spec(views, spellings[k], &i) < 0) {
				idx[k] = UINT32_MAX;
				continue;
			}
			idx[k] = i;
			void *out;
			size_t out_len;
			uint64_t size;
			if (pfs_views_apply(views, i, jpeg, jpeg_len, &out, &out_len) != 0)
				abort();
			struct pfs_views_src src = {1000 + i, jpeg_len, read_mem, NULL};
			if (pfs_views_size(views, i, &src, &size) != 0 || size != out_len)
				abort();
			void *buf = malloc(out_len);
			if (!buf || pfs_views_output(views, i, &src, buf, out_len) != 0 ||
			    memcmp(buf, out, out_len))
				abort();
			free(buf);
			free(out);
		}
	}
	return NULL;
}

static void test_threads(void **state)
{
	(void)state;
	uint32_t idx[NTHREADS][NSPELL];
	pthread_t th[NTHREADS];
	pfs_log_set_level(PFS_LOG_ERR); /* the bad spelling is warned about */
	make_jpeg();
	assert_int_equal(pfs_views_create(&(struct pfs_views_opts){3, 1u << 20, 0, 0}, &views), 0);
	for (int t = 0; t < NTHREADS; t++)
		assert_int_equal(pthread_create(&th[t], NULL, thread_main, idx[t]), 0);
	for (int t = 0; t < NTHREADS; t++)
		assert_int_equal(pthread_join(th[t], NULL), 0);
	/* One index per meaning, the same in every thread. */
	for (int t = 1; t < NTHREADS; t++)
		assert_memory_equal(idx[t], idx[0], sizeof(idx[0]));
	assert_int_equal(idx[0][0], idx[0][1]);
	assert_int_equal(idx[0][2], idx[0][3]);
	assert_int_equal(idx[0][6], UINT32_MAX);
	assert_int_not_equal(idx[0][0], idx[0][2]);
	/* The pool's bytes are the transform's. */
	for (size_t k = 0; k < NSPELL - 1; k++) {
		struct pfs_view_spec s;
		void *a, *b;
		size_t al, bl;
		assert_int_equal(pfs_view_parse(spellings[k], &s, NULL, 0, NULL, 0), 0);
		assert_int_equal(pfs_view_apply(&s, jpeg, jpeg_len, 1u << 20, &a, &al), 0);
		assert_int_equal(pfs_views_apply(views, idx[0][k], jpeg, jpeg_len, &b, &bl), 0);
		assert_int_equal(al, bl);
		assert_memory_equal(a, b, al);
		free(a);
		free(b);
	}
	pfs_views_destroy(views);
	tjFree(jpeg);
}

/* Many lookups of one view at once share one size computation (one
 * source read for a ppm view: its header); a source over max_source is
 * refused without a read; outputs run within the budget. */
#define NSHARE 16
static uint32_t share_idx;
static void *share_main(void *arg)
{
	uint64_t *size = arg;
	struct pfs_views_src src = {77, jpeg_len, read_mem, NULL};
	if (pfs_views_size(views, share_idx, &src, size) != 0)
		abort();
	return NULL;
}

static void test_shared_size_and_limits(void **state)
{
	(void)state;
	pthread_t th[NSHARE];
	uint64_t sizes[NSHARE];
	make_jpeg();
	assert_int_equal(pfs_views_create(&(struct pfs_views_opts){2, 1u << 20, 4096, 0}, &views),
			 0);
	assert_int_equal(pfs_views_spec(views, "resize=8,fmt=npy", &share_idx), 0);
	reads = 0;
	for (int t = 0; t < NSHARE; t++)
		assert_int_equal(pthread_create(&th[t], NULL, share_main, &sizes[t]), 0);
	for (int t = 0; t < NSHARE; t++)
		assert_int_equal(pthread_join(th[t], NULL), 0);
	assert_int_equal(reads, 1);
	for (int t = 1; t < NSHARE; t++)
		assert_int_equal(sizes[t], sizes[0]);

	/* Over max_source (4096): EFBIG, nothing read. */
	struct pfs_views_src big = {78, 4097, read_mem, NULL};
	uint64_t size;
	char buf[16];
	reads = 0;
	assert_int_equal(pfs_views_size(views, share_idx, &big, &size), -EFBIG);
	assert_int_equal(pfs_views_output(views, share_idx, &big, buf, sizeof(buf)), -EFBIG);
	assert_int_equal(reads, 0);

	/* A wrong expected length is EIO, never a short copy. */
	struct pfs_views_src src = {77, jpeg_len, read_mem, NULL};
	assert_int_equal(pfs_views_output(views, share_idx, &src, buf, sizeof(buf)), -EIO);
	pfs_views_destroy(views);
	tjFree(jpeg);
	jpeg = NULL;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_threads),
		cmocka_unit_test(test_shared_size_and_limits),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
