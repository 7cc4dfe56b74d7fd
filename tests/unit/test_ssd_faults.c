/* test_ssd_faults.c - cache/ssd.h, the tier's own failure modes: the
 * directory lock, the origin check, the saved listing, a disappearing
 * directory, a kill -9 in mid-stream, a full disk (a tmpfs of the test's
 * own: skipped where none can be mounted), bad options, a file system
 * that refuses O_DIRECT (at open: ramfs; at a write: pwrite64 below). The
 * data path is in test_ssd.c.
 *
 * No sleeps: pfs_ssd_flush() returns once everything queued is durable.
 * Each test works in its own mkdtemp() directory, removed at the end
 * (ssd_fixture.h). */
#include <dlfcn.h>
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
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "../../cache/ssd.h"
#include "../../origin/origin.h"
#include "../../util/log.h"
#include "ssd_fixture.h"

/* Every pwrite of this program (the tier's included) comes here: O_DIRECT
 * writes are counted, and refused with EINVAL while refuse_direct is set,
 * as some file systems do at the write rather than at the open. */
static int refuse_direct, direct_writes;

ssize_t pwrite64(int fd, const void *buf, size_t len, off_t off)
{
	static ssize_t (*real)(int, const void *, size_t, off_t);
	int fl = fcntl(fd, F_GETFL);
	if (!real)
		real = (ssize_t (*)(int, const void *, size_t, off_t))dlsym(RTLD_NEXT, "pwrite64");
	if (fl >= 0 && (fl & O_DIRECT)) {
		__atomic_add_fetch(&direct_writes, 1, __ATOMIC_RELAXED);
		if (__atomic_load_n(&refuse_direct, __ATOMIC_RELAXED)) {
			errno = EINVAL;
			return -1;
		}
	}
	return real(fd, buf, len, off);
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
	/* The first put is taken; the writer may fail on it and disable the
	 * tier before the next ones (so they may be refused: -EAGAIN). */
	unsigned char pat[BS];
	for (int i = 0; i < 4; i++) {
		fill("b", (uint64_t)i, pat, BS);
		int rc = pfs_ssd_put(f->s, "b", (uint64_t)i, 1, "\"etag-1\"", pat, BS);
		if (rc != 0 && (i == 0 || rc != -EAGAIN))
			fail_msg("put %d after the directory went: %d", i, rc);
	}
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

/* Sizes that cross the staging buffer's bounds (4 MiB): one larger than
 * it, and enough 100 KB blocks to fill it twice. */
static size_t dio_len(int i)
{
	static const size_t first[] = { 1, 1000, 4096, 4097, 100000, (4u << 20) + 1000, 8191 };
	return i < 7 ? first[i] : 100000;
}
#define DIO_BLOCKS 100

/* Pages of the segment in the page cache now (mincore). */
static size_t resident(const char *seg, size_t size)
{
	int fd = open(seg, O_RDONLY);
	size_t pages = (size + 4095) / 4096, n = 0;
	unsigned char *vec = malloc(pages);
	void *m;
	assert_true(fd >= 0);
	m = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
	assert_true(m != MAP_FAILED);
	assert_int_equal(mincore(m, size, vec), 0);
	for (size_t i = 0; i < pages; i++)
		n += vec[i] & 1;
	munmap(m, size);
	close(fd);
	free(vec);
	return n;
}

/* Stores DIO_BLOCKS blocks in one segment, then: the segment holds each
 * block's bytes and zeros up to the next 4 KiB bound, nothing else; every
 * get is byte-exact and writes len bytes, not one more; the same after a
 * reopen. direct: 1 the writes must bypass the page cache, 0 they must
 * not, -1 either. */
static void store_exact(struct fx *f, const char *dir, int direct)
{
	char seg[256];
	struct stat sb;
	size_t total = 0, off = 0;
	unsigned char *want, *got;
	int fd;

	f->o.dir = dir;
	f->o.size = 256 << 20;
	assert_int_equal(pfs_ssd_open(&f->o, &f->s), 0);
	for (int i = 0; i < DIO_BLOCKS; i++) {
		put_pattern(f, "dio.bin", (uint64_t)i, 7, dio_len(i));
		total += (dio_len(i) + 4095) & ~(size_t)4095;
		if (i % 10 == 9)
			pfs_ssd_flush(f->s); /* several batches */
	}
	pfs_ssd_flush(f->s);
	assert_int_equal(stats(f).entries, DIO_BLOCKS);
	assert_int_equal(stats(f).write_errors, 0);

	snprintf(seg, sizeof(seg), "%s/seg-%08x.dat", dir, 1);
	assert_int_equal(stat(seg, &sb), 0);
	assert_int_equal((size_t)sb.st_size, total);
	if (direct >= 0) {
		size_t n = resident(seg, total);
		if (direct)
			assert_int_equal(n, 0);
		else
			assert_true(n > 0);
	}
	want = calloc(1, total);
	got = malloc(total);
	for (int i = 0; i < DIO_BLOCKS; i++) {
		fill("dio.bin", (uint64_t)i, want + off, dio_len(i));
		off += (dio_len(i) + 4095) & ~(size_t)4095;
	}
	assert_true((fd = open(seg, O_RDONLY)) >= 0);
	assert_int_equal(pread(fd, got, total, 0), (ssize_t)total);
	close(fd);
	assert_memory_equal(got, want, total);
	for (int round = 0; round < 2; round++) {
		for (int i = 0; i < DIO_BLOCKS; i++) {
			size_t len = dio_len(i);
			char etag[PFS_SSD_ETAG_MAX];
			memset(got, 0xa5, len + 64);
			assert_int_equal(pfs_ssd_get(f->s, "dio.bin", (uint64_t)i, 7, got, len, etag), 0);
			fill("dio.bin", (uint64_t)i, want, len);
			assert_memory_equal(got, want, len);
			for (size_t j = len; j < len + 64; j++)
				assert_int_equal(got[j], 0xa5); /* no padding byte past len */
		}
		reopen(f);
	}
	assert_int_equal(stats(f).checksum_failures, 0);
	pfs_ssd_close(f->s);
	f->s = NULL;
	free(want);
	free(got);
}

/* File systems known to do O_DIRECT for real (tmpfs accepts it and
 * copies through its page cache anyway). */
static int real_direct(const char *dir)
{
	struct statfs v;
	return statfs(dir, &v) == 0 && (v.f_type == 0xEF53 || v.f_type == 0x58465342 ||
					 v.f_type == 0x9123683E);
}

static void test_direct_io(void **state)
{
	struct fx *f = *state;
	char dir[128];
	snprintf(dir, sizeof(dir), "%s/ssd", f->dir);
	direct_writes = 0;
	store_exact(f, dir, real_direct(f->dir) ? 1 : -1);
	if (real_direct(f->dir))
		assert_true(direct_writes > 0);
}

/* Refused at the write (after the open said yes): buffered from then on,
 * the batch written all the same. */
static void test_direct_io_refused_at_write(void **state)
{
	struct fx *f = *state;
	char dir[128];
	snprintf(dir, sizeof(dir), "%s/ssd", f->dir);
	direct_writes = 0;
	__atomic_store_n(&refuse_direct, 1, __ATOMIC_RELAXED);
	store_exact(f, dir, 0);
	__atomic_store_n(&refuse_direct, 0, __ATOMIC_RELAXED);
	assert_int_equal(direct_writes, 1); /* tried once per store, then buffered */
}

static void ramfs_path(struct fx *f, char *buf, const char *name)
{
	snprintf(buf, 128, "%s/ramfs%s%s", f->dir, *name ? "/" : "", name);
}

static int teardown_ramfs(void **state)
{
	struct fx *f = *state;
	char mnt[128];
	pfs_ssd_close(f->s);
	f->s = NULL;
	ramfs_path(f, mnt, "");
	umount2(mnt, MNT_DETACH);
	return teardown(state);
}

/* Refused at the open (ramfs says EINVAL): buffered writes. */
static void test_direct_io_refused_at_open(void **state)
{
	struct fx *f = *state;
	char mnt[128], dir[128];
	ramfs_path(f, mnt, "");
	ramfs_path(f, dir, "ssd");
	assert_int_equal(mkdir(mnt, 0700), 0);
	if (mount("ramfs", mnt, "ramfs", 0, "mode=0700"))
		skip(); /* not root */
	direct_writes = 0;
	store_exact(f, dir, -1);
	assert_int_equal(direct_writes, 0);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_lock), T(test_origin_mismatch), T(test_listing), T(test_dir_vanishes),
		T(test_crash), T(test_bad_opts),
		cmocka_unit_test_setup_teardown(test_full_disk, setup, teardown_tmpfs),
		T(test_direct_io), T(test_direct_io_refused_at_write),
		cmocka_unit_test_setup_teardown(test_direct_io_refused_at_open, setup,
						teardown_ramfs),
	};
	pfs_log_set_level(PFS_LOG_ERR);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
