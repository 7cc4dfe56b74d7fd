/* test_ssd.c - cache/ssd.h, the data path: byte-exact round trips,
 * persistence, stale and corrupt entries never served, a damaged index
 * replaced by an empty one, the byte budget under concurrent puts (LRU
 * order, EVICT_NONE refusals), a full queue, zstd and AUTO. Failure modes
 * of the tier itself are in test_ssd_faults.c.
 *
 * No sleeps: pfs_ssd_flush() returns once everything queued is durable.
 * Each test works in its own mkdtemp() directory, removed at the end
 * (ssd_fixture.h). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "../../cache/ssd.h"
#include "../../origin/origin.h"
#include "../../util/log.h"
#include "ssd_fixture.h"

_Static_assert(PFS_SSD_ETAG_MAX == PFS_ETAG_MAX, "etag buffers must agree");

static void test_roundtrip(void **state)
{
	struct fx *f = *state;
	assert_int_equal(pfs_ssd_open(&f->o, &f->s), 0);
	put_pattern(f, "a/b.bin", 0, 11, BS);
	put_pattern(f, "a/b.bin", 1, 11, 1000); /* a short last block */
	put_pattern(f, "c.bin", 0, 12, 3 * BS);
	pfs_ssd_flush(f->s);
	assert_int_equal(get_check(f, "a/b.bin", 0, 11, BS), 0);
	assert_int_equal(get_check(f, "a/b.bin", 1, 11, 1000), 0);
	assert_int_equal(get_check(f, "c.bin", 0, 12, 3 * BS), 0);
	assert_int_equal(get_check(f, "a/b.bin", 2, 11, BS), -ENOENT);
	assert_int_equal(get_check(f, "zz", 0, 11, BS), -ENOENT);
	struct pfs_ssd_stats st = stats(f);
	assert_int_equal(st.entries, 3);
	assert_int_equal(st.hits, 3);
	assert_int_equal(st.misses, 2);
	assert_int_equal(st.raw_bytes, BS + 1000 + 3 * BS);
	assert_int_equal(st.bytes, BS + BS + 3 * BS);
	assert_int_equal(st.disabled, 0);
	/* the same block again: a no-op */
	put_pattern(f, "c.bin", 0, 12, 3 * BS);
	pfs_ssd_flush(f->s);
	assert_int_equal(stats(f).entries, 3);
	/* refused arguments */
	char longp[PFS_SSD_PATH_MAX + 2];
	memset(longp, 'x', sizeof(longp) - 1);
	longp[sizeof(longp) - 1] = 0;
	assert_int_equal(pfs_ssd_put(f->s, longp, 0, 1, NULL, "x", 1), -ENAMETOOLONG);
	assert_int_equal(pfs_ssd_put(f->s, "p", 0, 1, NULL, "x", 0), -EINVAL);
}

static void test_persist(void **state)
{
	struct fx *f = *state;
	assert_int_equal(pfs_ssd_open(&f->o, &f->s), 0);
	for (int i = 0; i < 50; i++)
		put_pattern(f, "dir/file.dat", (uint64_t)i, 5, BS);
	pfs_ssd_flush(f->s);
	reopen(f);
	assert_int_equal(stats(f).entries, 50);
	for (int i = 0; i < 50; i++)
		assert_int_equal(get_check(f, "dir/file.dat", (uint64_t)i, 5, BS), 0);
	/* close without flush: close waits for the writer */
	put_pattern(f, "late.dat", 0, 6, BS);
	reopen(f);
	assert_int_equal(get_check(f, "late.dat", 0, 6, BS), 0);
	assert_int_equal(stats(f).entries, 51);
}

static void test_stale(void **state)
{
	struct fx *f = *state;
	assert_int_equal(pfs_ssd_open(&f->o, &f->s), 0);
	put_pattern(f, "x.bin", 0, 100, BS);
	pfs_ssd_flush(f->s);
	assert_int_equal(get_check(f, "x.bin", 0, 101, BS), -ESTALE);
	assert_int_equal(get_check(f, "x.bin", 0, 100, 2 * BS), -ESTALE); /* length differs */
	pfs_ssd_flush(f->s);
	assert_int_equal(get_check(f, "x.bin", 0, 100, BS), -ENOENT);
	assert_int_equal(stats(f).entries, 0);
	assert_int_equal(stats(f).bytes, 0);
	/* a new version replaces the old one */
	put_pattern(f, "y.bin", 0, 1, BS);
	pfs_ssd_flush(f->s);
	put_pattern(f, "y.bin", 0, 2, BS);
	pfs_ssd_flush(f->s);
	assert_int_equal(get_check(f, "y.bin", 0, 2, BS), 0);
	assert_int_equal(stats(f).entries, 1);
	assert_int_equal(stats(f).bytes, BS);
}

static void test_corrupt_data(void **state)
{
	struct fx *f = *state;
	assert_int_equal(pfs_ssd_open(&f->o, &f->s), 0);
	put_pattern(f, "a.bin", 0, 1, BS);
	put_pattern(f, "a.bin", 1, 1, BS);
	pfs_ssd_flush(f->s);
	flip_byte(f->dir, 1, 100); /* block 0 is the first in segment 1 */
	assert_int_equal(get_check(f, "a.bin", 0, 1, BS), -EIO);
	assert_int_equal(stats(f).checksum_failures, 1);
	pfs_ssd_flush(f->s);
	assert_int_equal(get_check(f, "a.bin", 0, 1, BS), -ENOENT);
	assert_int_equal(get_check(f, "a.bin", 1, 1, BS), 0);
	assert_int_equal(stats(f).entries, 1);

	/* the same for a compressed block (corrupt frame) */
	f->o.compress = PFS_SSD_COMPRESS_ZSTD;
	reopen(f);
	unsigned char *z = calloc(1, 16 * BS);
	assert_int_equal(pfs_ssd_put(f->s, "z.raw", 0, 1, NULL, z, 16 * BS), 0);
	pfs_ssd_flush(f->s);
	assert_int_equal(stats(f).compressed_blocks, 1);
	flip_byte(f->dir, 1, 2 * BS + 5);
	assert_int_equal(pfs_ssd_get(f->s, "z.raw", 0, 1, z, 16 * BS, (char[128]){0}), -EIO);
	free(z);
}

static void test_bad_index(void **state)
{
	struct fx *f = *state;
	char path[128];
	struct stat sb;

	assert_int_equal(pfs_ssd_open(&f->o, &f->s), 0);
	for (int i = 0; i < 2000; i++) /* enough for a multi-page index */
		put_pattern(f, "many/entries/here.bin", (uint64_t)i, 1, 1024);
	pfs_ssd_flush(f->s);
	pfs_ssd_close(f->s);
	f->s = NULL;

	/* truncated */
	snprintf(path, sizeof(path), "%s/index.mdb", f->dir);
	assert_int_equal(stat(path, &sb), 0);
	assert_true(sb.st_size > 64 * 1024);
	assert_int_equal(truncate(path, sb.st_size / 2), 0);
	reopen(f);
	assert_int_equal(stats(f).entries, 0);
	assert_int_equal(get_check(f, "many/entries/here.bin", 0, 1, 1024), -ENOENT);
	assert_int_equal(count_segments(f->dir), 0);
	snprintf(path, sizeof(path), "%s/index.mdb.corrupt", f->dir);
	assert_int_equal(stat(path, &sb), 0);
	put_pattern(f, "new.bin", 0, 1, BS); /* and it works */
	pfs_ssd_flush(f->s);
	assert_int_equal(get_check(f, "new.bin", 0, 1, BS), 0);
	pfs_ssd_close(f->s);
	f->s = NULL;

	/* garbage */
	write_garbage(f->dir, "index.mdb", 64 * 1024);
	reopen(f);
	assert_int_equal(stats(f).entries, 0);
	assert_int_equal(get_check(f, "new.bin", 0, 1, BS), -ENOENT);

	/* a garbage LMDB lock file (a crash, another build) costs nothing */
	put_pattern(f, "kept.bin", 0, 1, BS);
	pfs_ssd_close(f->s);
	f->s = NULL;
	write_garbage(f->dir, "index.mdb-lock", 8192);
	reopen(f);
	assert_int_equal(get_check(f, "kept.bin", 0, 1, BS), 0);
}

static void test_lru_order(void **state)
{
	struct fx *f = *state;
	f->o.size = 4 * BS;
	assert_int_equal(pfs_ssd_open(&f->o, &f->s), 0);
	put_pattern(f, "A", 0, 1, BS);
	put_pattern(f, "B", 0, 1, BS);
	put_pattern(f, "C", 0, 1, BS);
	put_pattern(f, "D", 0, 1, BS);
	pfs_ssd_flush(f->s);
	assert_int_equal(get_check(f, "A", 0, 1, BS), 0); /* A is now the most recent */
	put_pattern(f, "E", 0, 1, BS);
	pfs_ssd_flush(f->s);
	assert_int_equal(get_check(f, "B", 0, 1, BS), -ENOENT);
	assert_int_equal(get_check(f, "A", 0, 1, BS), 0);
	assert_int_equal(get_check(f, "E", 0, 1, BS), 0);
	put_pattern(f, "F", 0, 1, BS);
	pfs_ssd_flush(f->s);
	assert_int_equal(get_check(f, "C", 0, 1, BS), -ENOENT);
	assert_int_equal(get_check(f, "D", 0, 1, BS), 0);
	struct pfs_ssd_stats st = stats(f);
	assert_int_equal(st.evictions, 2);
	assert_int_equal(st.entries, 4);
	assert_true(st.bytes <= 4 * BS);
	/* the order survives a reopen */
	reopen(f);
	put_pattern(f, "G", 0, 1, BS);
	pfs_ssd_flush(f->s);
	assert_int_equal(get_check(f, "A", 0, 1, BS), -ENOENT);
	assert_int_equal(get_check(f, "G", 0, 1, BS), 0);
}

struct putter {
	struct fx *f;
	int id;
	uint64_t budget;
	int over;               /* budget seen exceeded */
};

static void *putter_main(void *arg)
{
	struct putter *p = arg;
	char path[32];
	unsigned char buf[2 * BS];
	struct pfs_ssd_stats st;

	snprintf(path, sizeof(path), "t%d/f.bin", p->id);
	for (int i = 0; i < 300; i++) {
		fill(path, (uint64_t)i, buf, sizeof(buf));
		int rc = pfs_ssd_put(p->f->s, path, (uint64_t)i, 9, "\"etag-1\"", buf, sizeof(buf));
		if (rc != 0 && rc != -EAGAIN && rc != -ENOSPC)
			p->over = 1000 + rc;
		if (i % 50 == 0)
			pfs_ssd_flush(p->f->s);
		pfs_ssd_stats(p->f->s, &st);
		if (st.bytes > p->budget)
			p->over = 1;
		int g = get_check(p->f, path, (uint64_t)(i / 2), 9, sizeof(buf));
		if (g != 0 && g != -ENOENT)
			p->over = 2000 + g;
	}
	return NULL;
}

static void budget_threads(struct fx *f, enum pfs_ssd_evict ev)
{
	pthread_t th[4];
	struct putter p[4];
	f->o.size = 40 * 2 * BS;
	f->o.evict = ev;
	f->o.segment_size = 16 * BS; /* rotates and unlinks segments often */
	assert_int_equal(pfs_ssd_open(&f->o, &f->s), 0);
	for (int i = 0; i < 4; i++) {
		p[i] = (struct putter){ f, i, f->o.size, 0 };
		assert_int_equal(pthread_create(&th[i], NULL, putter_main, &p[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(p[i].over, 0);
	}
	pfs_ssd_flush(f->s);
	struct pfs_ssd_stats st = stats(f);
	assert_true(st.bytes <= f->o.size);
	assert_int_equal(st.bytes, st.entries * 2 * BS);
	/* segments are unlinked as they empty: at most what the budget holds, + current */
	assert_true(count_segments(f->dir) <= (int)(f->o.size / (16 * BS)) + 2);
	reopen(f);
	assert_int_equal(stats(f).bytes, st.bytes);
	assert_int_equal(stats(f).entries, st.entries);
	if (ev == PFS_SSD_EVICT_LRU) {
		assert_true(st.evictions > 0);
		assert_int_equal(st.entries, 40);
	} else {
		assert_int_equal(st.evictions, 0);
		assert_int_equal(st.entries, 40);
		assert_true(st.dropped > 0);
	}
}

static void test_budget_lru_threads(void **state)
{
	budget_threads(*state, PFS_SSD_EVICT_LRU);
}

static void test_budget_none_threads(void **state)
{
	budget_threads(*state, PFS_SSD_EVICT_NONE);
}

static void test_evict_none(void **state)
{
	struct fx *f = *state;
	f->o.size = 3 * BS;
	f->o.evict = PFS_SSD_EVICT_NONE;
	assert_int_equal(pfs_ssd_open(&f->o, &f->s), 0);
	put_pattern(f, "A", 0, 1, BS);
	put_pattern(f, "B", 0, 1, BS);
	put_pattern(f, "C", 0, 1, BS);
	unsigned char buf[BS] = { 0 };
	assert_int_equal(pfs_ssd_put(f->s, "D", 0, 1, NULL, buf, BS), -ENOSPC);
	pfs_ssd_flush(f->s);
	assert_int_equal(pfs_ssd_put(f->s, "D", 0, 1, NULL, buf, BS), -ENOSPC);
	assert_int_equal(get_check(f, "A", 0, 1, BS), 0);
	assert_int_equal(stats(f).entries, 3);
	/* a stale entry dropped makes room again */
	assert_int_equal(get_check(f, "B", 0, 2, BS), -ESTALE);
	pfs_ssd_flush(f->s);
	put_pattern(f, "D", 0, 1, BS);
	pfs_ssd_flush(f->s);
	assert_int_equal(get_check(f, "D", 0, 1, BS), 0);
	assert_int_equal(stats(f).evictions, 0);
}

/* Under LRU, a warm-up's put (noevict) is refused at the budget instead of
 * pushing out what is stored; has and room see what a get would. */
static void test_noevict_under_lru(void **state)
{
	struct fx *f = *state;
	char tag[PFS_SSD_ETAG_MAX];
	unsigned char buf[BS] = { 0 };
	f->o.size = 3 * BS;
	f->o.evict = PFS_SSD_EVICT_LRU;
	assert_int_equal(pfs_ssd_open(&f->o, &f->s), 0);
	assert_int_equal(pfs_ssd_room(f->s), 3 * BS);
	assert_int_equal(pfs_ssd_put_noevict(f->s, "A", 0, 1, "v1", buf, BS), 0);
	put_pattern(f, "B", 0, 1, BS);
	assert_int_equal(pfs_ssd_room(f->s), BS); /* queued blocks count */
	assert_int_equal(pfs_ssd_put_noevict(f->s, "C", 0, 1, NULL, buf, BS), 0);
	assert_int_equal(pfs_ssd_room(f->s), 0);
	assert_int_equal(pfs_ssd_put_noevict(f->s, "D", 0, 1, NULL, buf, BS), -ENOSPC);
	pfs_ssd_flush(f->s);
	assert_int_equal(pfs_ssd_put_noevict(f->s, "D", 0, 1, NULL, buf, BS), -ENOSPC);
	assert_int_equal(stats(f).entries, 3);
	assert_int_equal(stats(f).evictions, 0);
	assert_int_equal(pfs_ssd_has(f->s, "A", 0, 1, BS, tag), 1);
	assert_string_equal(tag, "v1");
	assert_int_equal(pfs_ssd_has(f->s, "A", 0, 2, BS, tag), 0);  /* another fp */
	assert_int_equal(pfs_ssd_has(f->s, "A", 0, 1, BS - 1, NULL), 0); /* length */
	assert_int_equal(pfs_ssd_has(f->s, "D", 0, 1, BS, NULL), 0);
	assert_int_equal(pfs_ssd_has(NULL, "A", 0, 1, BS, NULL), 0);
	/* A plain put still evicts under LRU. */
	put_pattern(f, "D", 0, 1, BS);
	pfs_ssd_flush(f->s);
	assert_int_equal(stats(f).evictions, 1);
}

static int released;
static void count_release(void *arg)
{
	assert_ptr_equal(arg, &released);
	released++;
}

/* A put by reference: the writer stores the caller's bytes, and the
 * release comes exactly once, after the write or at a refusal. */
static void test_put_ref(void **state)
{
	struct fx *f = *state;
	unsigned char buf[BS], out[BS];
	char tag[PFS_SSD_ETAG_MAX];
	for (size_t i = 0; i < BS; i++)
		buf[i] = (unsigned char)(i * 7 + 3);
	f->o.size = 2 * BS;
	f->o.evict = PFS_SSD_EVICT_NONE;
	assert_int_equal(pfs_ssd_open(&f->o, &f->s), 0);
	released = 0;
	assert_int_equal(pfs_ssd_put_ref(f->s, "R", 0, 1, "e", buf, BS, count_release,
					 &released), 0);
	pfs_ssd_flush(f->s);
	assert_int_equal(released, 1);
	assert_int_equal(pfs_ssd_get(f->s, "R", 0, 1, out, BS, tag), 0);
	assert_memory_equal(out, buf, BS);
	assert_string_equal(tag, "e");
	/* Refusals release at once: bad arguments, and a full tier. */
	assert_int_equal(pfs_ssd_put_ref(f->s, "R", 1, 1, NULL, buf, 0, count_release,
					 &released), -EINVAL);
	assert_int_equal(released, 2);
	put_pattern(f, "S", 0, 1, BS);
	assert_int_equal(pfs_ssd_put_ref(f->s, "T", 0, 1, NULL, buf, BS, count_release,
					 &released), -ENOSPC);
	assert_int_equal(released, 3);
	pfs_ssd_flush(f->s);
	assert_int_equal(released, 3);
}

static void test_queue_full(void **state)
{
	struct fx *f = *state;
	f->o.queue_bytes = 2 * BS;
	assert_int_equal(pfs_ssd_open(&f->o, &f->s), 0);
	unsigned char buf[4 * BS] = { 0 };
	assert_int_equal(pfs_ssd_put(f->s, "big", 0, 1, NULL, buf, sizeof(buf)), -EAGAIN);
	assert_int_equal(stats(f).dropped, 1);
}

static void test_zstd(void **state)
{
	struct fx *f = *state;
	size_t len = 64 * 1024;
	unsigned char *buf = malloc(len), *out = malloc(len);
	char etag[PFS_SSD_ETAG_MAX];
	f->o.compress = PFS_SSD_COMPRESS_ZSTD;
	assert_int_equal(pfs_ssd_open(&f->o, &f->s), 0);
	for (size_t i = 0; i < len; i++)
		buf[i] = "pixels of a decoded image, "[i % 27];
	assert_int_equal(pfs_ssd_put(f->s, "img.raw", 0, 1, "e", buf, len), 0);
	fill_random(buf + len / 2, len / 2);
	assert_int_equal(pfs_ssd_put(f->s, "img.raw", 1, 1, "e", buf, len), 0);
	pfs_ssd_flush(f->s);
	struct pfs_ssd_stats st = stats(f);
	assert_int_equal(st.compressed_blocks, 2);
	assert_true(st.bytes < st.raw_bytes);
	assert_int_equal(st.raw_bytes, 2 * len);
	reopen(f);
	assert_int_equal(pfs_ssd_get(f->s, "img.raw", 1, 1, out, len, etag), 0);
	assert_memory_equal(out, buf, len);
	assert_string_equal(etag, "e");
	free(buf);
	free(out);
}

static void test_auto(void **state)
{
	struct fx *f = *state;
	unsigned char buf[8 * BS], zeros[8 * BS] = { 0 };
	f->o.compress = PFS_SSD_COMPRESS_AUTO;
	assert_int_equal(pfs_ssd_open(&f->o, &f->s), 0);
	for (int i = 0; i < 16; i++) {
		fill_random(buf, sizeof(buf));
		assert_int_equal(pfs_ssd_put(f->s, "img/x.JPG", (uint64_t)i, 1, NULL, buf,
					     sizeof(buf)), 0);
	}
	pfs_ssd_flush(f->s);
	assert_int_equal(stats(f).compressed_blocks, 0);
	/* the kind is decided: even zeros in a .jpg are stored raw now */
	assert_int_equal(pfs_ssd_put(f->s, "img/y.jpg", 0, 1, NULL, zeros, sizeof(zeros)), 0);
	pfs_ssd_flush(f->s);
	assert_int_equal(stats(f).compressed_blocks, 0);
	/* another kind still compresses */
	assert_int_equal(pfs_ssd_put(f->s, "img/y.npy", 0, 1, NULL, zeros, sizeof(zeros)), 0);
	pfs_ssd_flush(f->s);
	assert_int_equal(stats(f).compressed_blocks, 1);
	assert_int_equal(pfs_ssd_get(f->s, "img/y.jpg", 0, 1, buf, sizeof(buf), (char[128]){0}), 0);
	assert_memory_equal(buf, zeros, sizeof(buf));
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_roundtrip), T(test_persist), T(test_stale), T(test_corrupt_data),
		T(test_bad_index), T(test_lru_order), T(test_budget_lru_threads),
		T(test_budget_none_threads), T(test_evict_none), T(test_noevict_under_lru), T(test_put_ref),
		T(test_queue_full),
		T(test_zstd), T(test_auto),
	};
	pfs_log_set_level(PFS_LOG_ERR);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
