/* test_views.c - fs/views: spec interning and the transform pool, from
 * many threads at once (scripts/test runs it under ThreadSanitizer too).
 * Every thread interns the same spellings (each meaning gets one index),
 * runs transforms through the pool and asks for output sizes; the bytes
 * and sizes must equal the transform run directly (transform/view.h). */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
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

static void make_jpeg(void)
{
	int w = 21, h = 13;
	unsigned char rgb[21 * 13 * 3];
	for (int i = 0; i < w * h * 3; i++)
		rgb[i] = (unsigned char)(i * 7);
	tjhandle tj = tjInitCompress();
	assert_non_null(tj);
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
			if (pfs_views_size(views, i, 1000 + i, jpeg, jpeg_len, &size) != 0 ||
			    size != out_len)
				abort();
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
	assert_int_equal(pfs_views_create(&(struct pfs_views_opts){3, 1u << 20, 0}, &views), 0);
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_threads),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
