/* ssd_fixture.h - what test_ssd.c and test_ssd_faults.c share: a tier in
 * its own mkdtemp() directory (setup/teardown, removed at the end),
 * deterministic block contents, puts and byte-exact gets, and helpers
 * that damage a tier's files.
 *
 * Include after cmocka.h. Everything is static inline: each test program
 * uses what it needs.
 */
#ifndef PFS_TEST_SSD_FIXTURE_H
#define PFS_TEST_SSD_FIXTURE_H

#include <fcntl.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../cache/ssd.h"

#define BS 4096u

static inline unsigned char pattern(const char *path, uint64_t blk, size_t i)
{
	return (unsigned char)(path[0] * 31 + blk * 7 + i * 13 + (i >> 9));
}

static inline void fill(const char *path, uint64_t blk, unsigned char *buf, size_t len)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = pattern(path, blk, i);
}

static inline void fill_random(unsigned char *buf, size_t len)
{
	static uint64_t rnd_state = 88172645463325252ull;
	for (size_t i = 0; i < len; i++) {
		rnd_state ^= rnd_state << 13;
		rnd_state ^= rnd_state >> 7;
		rnd_state ^= rnd_state << 17;
		buf[i] = (unsigned char)rnd_state;
	}
}

static inline int ssd_fx_rm_one(const char *p, const struct stat *sb, int flag,
				struct FTW *ftw)
{
	return remove(p);
}

static inline void rm_rf(const char *dir)
{
	nftw(dir, ssd_fx_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

struct fx {
	char dir[64];
	struct pfs_ssd_opts o;
	struct pfs_ssd *s;
};

static inline int setup(void **state)
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

static inline int teardown(void **state)
{
	struct fx *f = *state;
	pfs_ssd_close(f->s);
	rm_rf(f->dir);
	free(f);
	return 0;
}

static inline void reopen(struct fx *f)
{
	pfs_ssd_close(f->s);
	f->s = NULL;
	assert_int_equal(pfs_ssd_open(&f->o, &f->s), 0);
}

static inline struct pfs_ssd_stats stats(struct fx *f)
{
	struct pfs_ssd_stats st;
	pfs_ssd_stats(f->s, &st);
	return st;
}

static inline void put_pattern(struct fx *f, const char *path, uint64_t blk, uint64_t fp,
			       size_t len)
{
	unsigned char *buf = malloc(len);
	fill(path, blk, buf, len);
	assert_int_equal(pfs_ssd_put(f->s, path, blk, fp, "\"etag-1\"", buf, len), 0);
	free(buf);
}

/* 0 and byte-exact, or the get's error. */
static inline int get_check(struct fx *f, const char *path, uint64_t blk, uint64_t fp,
			    size_t len)
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

static inline int count_segments(const char *dir)
{
	char cmd[256];
	snprintf(cmd, sizeof(cmd), "exit $(ls %s | grep -c '^seg-')", dir);
	int rc = system(cmd);
	return WEXITSTATUS(rc);
}

static inline void flip_byte(const char *dir, int seg, off_t off)
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

static inline void write_garbage(const char *dir, const char *name, size_t len)
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

#endif
