/* test_ssd.c - cache/ssd.h: byte-exact round trips, persistence, stale
 * and corrupt entries never served, a damaged index replaced by an empty
 * one, the byte budget under concurrent puts (LRU order, EVICT_NONE
 * refusals), the directory lock, the origin check, zstd and AUTO, the
 * listing, a disappearing directory, a kill -9 in mid-stream, and a full
 * disk (a tmpfs of the test's own: skipped where none can be mounted).
 *
 * No sleeps: pfs_ssd_flush() returns once everything queued is durable.
 * Each test works in its own mkdtemp() directory, removed at the end. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
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

_Static_assert(PFS_SSD_ETAG_MAX == PFS_ETAG_MAX, "etag buffers must agree");

#define BS 4096u

static unsigned char pattern(const char *path, uint64_t blk, size_t i)
{
	return (unsigned char)(path[0] * 31 + blk * 7 + i * 13 + (i >> 9));
}

static void fill(const char *path, uint64_t blk, unsigned char *buf, size_t len)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = pattern(path, blk, i);
}

static uint64_t rnd_state = 88172645463325252ull;
static void fill_random(unsigned char *buf, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		rnd_state ^= rnd_state << 13;
		rnd_state ^= rnd_state >> 7;
		rnd_state ^= rnd_state << 17;
		buf[i] = (unsigned char)rnd_state;
	}
}

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	return remove(p);
}

static void rm_rf(const char *dir)
{
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

struct fx {
	char dir[64];
	struct pfs_ssd_opts o;
	struct pfs_ssd *s;
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	strcpy(f->dir, "/tmp/pfs-ssd-XXXXXX");
	if (!mkdtemp(f->dir))
		return -1;
	f->o.dir = f->dir;
	f->o.size = 64 << 20;
	f->o.origin_id = "file:///data";
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	pfs_ssd_close(f->s);
	rm_rf(f->dir);
	free(f);
	return 0;
}

static void reopen(struct fx *f)
{
	pfs_ssd_close(f->s);
	f->s = NULL;
	assert_int_equal(pfs_ssd_open(&f->o, &f->s), 0);
}

static struct pfs_ssd_stats stats(struct fx *f)
{
	struct pfs_ssd_stats st;
	pfs_ssd_stats(f->s, &st);
	return st;
}

static void put_pattern(struct fx *f, const char *path, uint64_t blk, uint64_t fp, size_t len)
{
	unsigned char *buf = malloc(len);
	fill(path, blk, buf, len);
	assert_int_equal(pfs_ssd_put(f->s, path, blk, fp, "\"etag-1\"", buf, len), 0);
	free(buf);
}

/* 0 and byte-exact, or the get's error. */
static int get_check(struct fx *f, const char *path, uint64_t blk, uint64_t fp, size_t len)
{
	unsigned char *buf = malloc(len), *want = malloc(len);
	char etag[PFS_SSD_ETAG_MAX];
	int rc = pfs_ssd_get(f->s, path, blk, fp, buf, len, etag);
	if (rc == 0) {
		fill(path, blk, want, len);
		assert_memory_equal(buf, want, len);
		assert_string_equal(etag, "\"etag-1\"");
	}
	free(buf);
	free(want);
	return rc;
}

static int count_segments(const char *dir)
{
	char cmd[256];
	snprintf(cmd, sizeof(cmd), "exit $(ls %s | grep -c '^seg-')", dir);
	int rc = system(cmd);
	return WEXITSTATUS(rc);
}

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

static void flip_byte(const char *dir, int seg, off_t off)
{
	char path[128];
	unsigned char c;
	snprintf(path, sizeof(path), "%s/seg-%08x.dat", dir, seg);
	int fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &c, 1, off), 1);
	c ^= 0x5a;
	assert_int_equal(pwrite(fd, &c, 1, off), 1);
	close(fd);
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

static void write_garbage(const char *dir, const char *name, size_t len)
{
	char path[128];
	unsigned char *buf = malloc(len);
	fill_random(buf, len);
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	int fd = open(path, O_WRONLY | O_TRUNC);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, buf, len), (ssize_t)len);
	close(fd);
	free(buf);
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

static void test_queue_full(void **state)
{
	struct fx *f = *state;
	f->o.queue_bytes = 2 * BS;
	assert_int_equal(pfs_ssd_open(&f->o, &f->s), 0);
	unsigned char buf[4 * BS] = { 0 };
	assert_int_equal(pfs_ssd_put(f->s, "big", 0, 1, NULL, buf, sizeof(buf)), -EAGAIN);
	assert_int_equal(stats(f).dropped, 1);
}

static void test_lock(void **state)
{
	struct fx *f = *state;
	struct pfs_ssd *s2 = NULL;
	char path[128], pid[32];
	assert_int_equal(pfs_ssd_open(&f->o, &f->s), 0);
	assert_int_equal(pfs_ssd_open(&f->o, &s2), -EBUSY);
	assert_null(s2);
	snprintf(path, sizeof(path), "%s/lock", f->dir);
	FILE *fp = fopen(path, "r");
	assert_non_null(fp);
	assert_non_null(fgets(pid, sizeof(pid), fp));
	fclose(fp);
	assert_int_equal(atol(pid), (long)getpid());
	pfs_ssd_close(f->s);
	f->s = NULL;
	assert_int_equal(pfs_ssd_open(&f->o, &f->s), 0); /* released by close */
}

static void test_origin_mismatch(void **state)
{
	struct fx *f = *state;
	struct pfs_ssd *s2 = NULL;
	assert_int_equal(pfs_ssd_open(&f->o, &f->s), 0);
	pfs_ssd_close(f->s);
	f->s = NULL;
	struct pfs_ssd_opts o = f->o;
	o.origin_id = "s3://other-bucket/";
	assert_int_equal(pfs_ssd_open(&o, &s2), -EINVAL);
	assert_null(s2);
	o.origin_id = NULL; /* not checked */
	assert_int_equal(pfs_ssd_open(&o, &s2), 0);
	pfs_ssd_close(s2);
	assert_int_equal(pfs_ssd_open(&f->o, &f->s), 0);
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

static void test_listing(void **state)
{
	struct fx *f = *state;
	char *buf;
	size_t len;
	const char *text = "prestofs-manifest 1\nfile a 10 0\n";
	assert_int_equal(pfs_ssd_open(&f->o, &f->s), 0);
	assert_int_equal(pfs_ssd_load_listing(f->s, &buf, &len), -ENOENT);
	assert_int_equal(pfs_ssd_save_listing(f->s, text, strlen(text)), 0);
	assert_int_equal(pfs_ssd_save_listing(f->s, text, strlen(text) - 3), 0);
	assert_int_equal(pfs_ssd_save_listing(f->s, text, strlen(text)), 0);
	reopen(f);
	assert_int_equal(pfs_ssd_load_listing(f->s, &buf, &len), 0);
	assert_int_equal(len, strlen(text));
	assert_string_equal(buf, text);
	free(buf);
	/* a damaged one is not served */
	char path[128];
	snprintf(path, sizeof(path), "%s/listing", f->dir);
	int fd = open(path, O_WRONLY);
	assert_int_equal(pwrite(fd, "X", 1, 30), 1);
	close(fd);
	assert_int_equal(pfs_ssd_load_listing(f->s, &buf, &len), -EIO);
	assert_null(buf);
}

static void test_dir_vanishes(void **state)
{
	struct fx *f = *state;
	f->o.segment_size = 2 * BS;
	assert_int_equal(pfs_ssd_open(&f->o, &f->s), 0);
	put_pattern(f, "a", 0, 1, BS);
	pfs_ssd_flush(f->s);
	rm_rf(f->dir);
	for (int i = 0; i < 4; i++)
		put_pattern(f, "b", (uint64_t)i, 1, BS);
	pfs_ssd_flush(f->s);
	struct pfs_ssd_stats st = stats(f);
	assert_int_equal(st.disabled, 1);
	assert_true(st.write_errors >= 1);
	unsigned char buf[BS] = { 0 };
	assert_int_equal(pfs_ssd_put(f->s, "c", 0, 1, NULL, buf, BS), -EAGAIN);
	/* what is still readable (open fds of unlinked files) is still served */
	assert_int_equal(get_check(f, "a", 0, 1, BS), 0);
	pfs_ssd_close(f->s);
	f->s = NULL;
	mkdir(f->dir, 0700);
}

/* A child puts blocks and is killed (SIGKILL) with writes in flight; every
 * entry the reopened tier has must be byte-exact, and what was flushed
 * before the kill must be there. */
static void test_crash(void **state)
{
	struct fx *f = *state;
	f->o.segment_size = 64 * BS;
	f->o.compress = PFS_SSD_COMPRESS_AUTO;
	for (int round = 0; round < 3; round++) {
		pid_t pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			struct pfs_ssd *s;
			unsigned char buf[3 * BS];
			if (pfs_ssd_open(&f->o, &s))
				_exit(2);
			for (int i = 0; i < 400; i++) {
				uint64_t blk = (uint64_t)(round * 1000 + i);
				fill("crash.bin", blk, buf, sizeof(buf));
				if (i % 3 == 0)
					memset(buf, i & 0xff, sizeof(buf)); /* compressible */
				while (pfs_ssd_put(s, "crash.bin", blk, 7, "\"etag-1\"", buf,
						   sizeof(buf)) == -EAGAIN)
					;
				if (i == 99)
					pfs_ssd_flush(s);
			}
			kill(getpid(), SIGKILL); /* the writer is mid-batch */
			_exit(3);
		}
		int st;
		assert_int_equal(waitpid(pid, &st, 0), pid);
		assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
		assert_int_equal(pfs_ssd_open(&f->o, &f->s), 0); /* the crashed lock is gone */
		int present = 0;
		unsigned char got[3 * BS], want[3 * BS];
		char etag[PFS_SSD_ETAG_MAX];
		for (int r = 0; r <= round; r++) {
			for (int i = 0; i < 400; i++) {
				uint64_t blk = (uint64_t)(r * 1000 + i);
				int rc = pfs_ssd_get(f->s, "crash.bin", blk, 7, got, sizeof(got), etag);
				if (rc == -ENOENT) {
					assert_true(i >= 100);
					continue;
				}
				assert_int_equal(rc, 0);
				fill("crash.bin", blk, want, sizeof(want));
				if (i % 3 == 0)
					memset(want, i & 0xff, sizeof(want));
				assert_memory_equal(got, want, sizeof(got));
				present++;
			}
		}
		struct pfs_ssd_stats s2 = stats(f);
		assert_int_equal(s2.checksum_failures, 0);
		assert_int_equal(s2.entries, (uint64_t)present);
		pfs_ssd_close(f->s);
		f->s = NULL;
	}
}

/* Takes every free block of the file system of dir with the file path. */
static void fill_disk(const char *path)
{
	static const unsigned char zero[BS];
	struct statvfs v;
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0644);
	assert_true(fd >= 0);
	while (write(fd, zero, sizeof(zero)) == (ssize_t)sizeof(zero))
		;
	assert_int_equal(errno, ENOSPC);
	close(fd);
	assert_int_equal(statvfs(path, &v), 0);
	assert_int_equal(v.f_bavail, 0);
}

static void tmpfs_path(struct fx *f, char *buf, const char *name)
{
	snprintf(buf, 128, "%s/tmpfs%s%s", f->dir, *name ? "/" : "", name);
}

static int teardown_tmpfs(void **state)
{
	struct fx *f = *state;
	char mnt[128];
	pfs_ssd_close(f->s);
	f->s = NULL;
	tmpfs_path(f, mnt, "");
	umount2(mnt, MNT_DETACH);
	return teardown(state);
}

/* The disk is full: when the tier opens (LMDB maps its lock file: an
 * unallocated page there would be a SIGBUS), and when the tier fills it
 * itself. Never a crash, never an open error, never a wrong byte; what is
 * stored stays readable on a full disk. */
static void test_full_disk(void **state)
{
	struct fx *f = *state;
	char mnt[128], ssd[128], filler[128];
	unsigned char buf[BS] = { 0 };
	struct pfs_ssd_stats st;
	int present = 0;

	tmpfs_path(f, mnt, "");
	tmpfs_path(f, ssd, "ssd");
	tmpfs_path(f, filler, "filler");
	assert_int_equal(mkdir(mnt, 0700), 0);
	if (mount("tmpfs", mnt, "tmpfs", 0, "size=1m,mode=0700"))
		skip(); /* not root */
	f->o.dir = ssd; /* the budget (64 MiB) is far over the disk */

	/* A new tier on a full disk: read-only and empty. */
	fill_disk(filler);
	assert_int_equal(pfs_ssd_open(&f->o, &f->s), 0);
	st = stats(f);
	assert_int_equal(st.disabled, 1);
	assert_int_equal(pfs_ssd_put(f->s, "a", 0, 1, NULL, buf, BS), -EAGAIN);
	assert_int_equal(get_check(f, "a", 0, 1, BS), -ENOENT);
	assert_int_equal(pfs_ssd_save_listing(f->s, "x", 1), -EROFS);

	/* Room again: it stores. Full again: what it holds is served. */
	assert_int_equal(unlink(filler), 0);
	reopen(f);
	assert_int_equal(stats(f).disabled, 0);
	for (int i = 0; i < 20; i++)
		put_pattern(f, "kept.bin", (uint64_t)i, 3, BS);
	pfs_ssd_flush(f->s);
	assert_int_equal(stats(f).entries, 20);
	pfs_ssd_close(f->s);
	f->s = NULL;
	/* Full, the lock file's blocks kept for the next open: read-write,
	 * and the first write turns writes off. */
	fill_disk(filler);
	assert_int_equal(pfs_ssd_open(&f->o, &f->s), 0);
	for (int i = 0; i < 20; i++)
		assert_int_equal(get_check(f, "kept.bin", (uint64_t)i, 3, BS), 0);
	pfs_ssd_put(f->s, "new", 0, 3, NULL, buf, BS);
	pfs_ssd_flush(f->s);
	st = stats(f);
	assert_int_equal(st.disabled, 1);
	assert_int_equal(st.entries, 20);
	pfs_ssd_close(f->s);
	f->s = NULL;
	/* Full, and not even room for the lock file: read-only. */
	assert_int_equal(unlink(filler), 0);
	tmpfs_path(f, filler, "ssd/index.mdb-lock");
	assert_int_equal(unlink(filler), 0);
	tmpfs_path(f, filler, "filler");
	fill_disk(filler);
	assert_int_equal(pfs_ssd_open(&f->o, &f->s), 0);
	st = stats(f);
	assert_int_equal(st.disabled, 1);
	assert_int_equal(st.entries, 20);
	for (int i = 0; i < 20; i++)
		assert_int_equal(get_check(f, "kept.bin", (uint64_t)i, 3, BS), 0);
	assert_int_equal(pfs_ssd_put(f->s, "new", 0, 3, NULL, buf, BS), -EAGAIN);
	assert_int_equal(stats(f).hits, 20);

	/* The tier fills the disk itself: one write error turns writes off;
	 * every entry is exact, now and after a reopen on the full disk. */
	pfs_ssd_close(f->s);
	f->s = NULL;
	assert_int_equal(unlink(filler), 0);
	assert_int_equal(pfs_ssd_open(&f->o, &f->s), 0);
	for (int i = 0; i < 400 && !stats(f).disabled; i++) {
		unsigned char blk[4 * BS];
		fill("fill.bin", (uint64_t)i, blk, sizeof(blk));
		pfs_ssd_put(f->s, "fill.bin", (uint64_t)i, 4, "\"etag-1\"", blk, sizeof(blk));
		if (i % 8 == 7)
			pfs_ssd_flush(f->s);
	}
	pfs_ssd_flush(f->s);
	st = stats(f);
	assert_int_equal(st.disabled, 1);
	assert_true(st.write_errors >= 1);
	for (int round = 0; round < 2; round++) {
		present = 0;
		for (int i = 0; i < 400; i++) {
			int rc = get_check(f, "fill.bin", (uint64_t)i, 4, 4 * BS);
			assert_true(rc == 0 || rc == -ENOENT);
			present += rc == 0;
		}
		st = stats(f);
		assert_true(present > 0);
		assert_int_equal(st.entries - 20, (uint64_t)present);
		assert_int_equal(st.checksum_failures, 0);
		reopen(f);
	}
}

static void test_bad_opts(void **state)
{
	struct fx *f = *state;
	struct pfs_ssd_opts o = f->o;
	o.zstd_level = 40;
	assert_int_equal(pfs_ssd_open(&o, &f->s), -EINVAL);
	o = f->o;
	o.dir = NULL;
	assert_int_equal(pfs_ssd_open(&o, &f->s), -EINVAL);
	pfs_ssd_close(NULL);
	/* a dir that cannot be one: a regular file in the way */
	char path[128];
	snprintf(path, sizeof(path), "%s/file", f->dir);
	close(open(path, O_CREAT | O_WRONLY, 0644));
	snprintf(path, sizeof(path), "%s/file/sub", f->dir);
	o = f->o;
	o.dir = path;
	assert_int_equal(pfs_ssd_open(&o, &f->s), -ENOTDIR);
	/* size 0: a share of the free space */
	o = f->o;
	o.size = 0;
	assert_int_equal(pfs_ssd_open(&o, &f->s), 0);
	assert_true(stats(f).budget > 0);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_roundtrip), T(test_persist), T(test_stale), T(test_corrupt_data),
		T(test_bad_index), T(test_lru_order), T(test_budget_lru_threads),
		T(test_budget_none_threads), T(test_evict_none), T(test_queue_full),
		T(test_lock), T(test_origin_mismatch), T(test_zstd), T(test_auto),
		T(test_listing), T(test_dir_vanishes), T(test_crash), T(test_bad_opts),
		cmocka_unit_test_setup_teardown(test_full_disk, setup, teardown_tmpfs),
	};
	pfs_log_set_level(PFS_LOG_ERR);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
