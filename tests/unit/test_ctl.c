/* test_ctl.c - the control tree (fs/ctl.h): names and inodes, attributes,
 * snapshots (a read sees what the getattr before it sized, even when the
 * values change in between), padding, stats sources. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "fs/ctl.h"
#include "origin/counters.h"
#include "util/stats.h"

static double value = 1; /* what the test source reports */

static void source(void *ctx, struct pfs_stat_list *l)
{
	assert_ptr_equal(ctx, &value);
	pfs_stat_list_add(l, "zz_test.value", *(double *)ctx, 1);
}

static int setup(void **state)
{
	(void)state;
	static int added;
	if (!added++) {
		assert_int_equal(pfs_ctl_add_stats_source(source, &value), 0);
		/* a module's own source, as the daemon registers it */
		assert_int_equal(pfs_ctl_add_stats_source(pfs_origin_collect, NULL), 0);
	}
	return 0;
}

/* The whole snapshot of a file as the kernel would read it: getattr for
 * the size, then reads of `chunk` bytes up to it. */
static char *read_all(uint64_t ino, size_t chunk, size_t *len)
{
	struct stat st;
	assert_int_equal(pfs_ctl_getattr(ino, &st), 0);
	size_t size = (size_t)st.st_size;
	char *buf = calloc(1, size + chunk + 1);
	assert_non_null(buf);
	size_t off = 0, got;
	do {
		assert_int_equal(pfs_ctl_read(ino, off, chunk, buf + off, &got), 0);
		off += got;
	} while (got && off < size + chunk);
	*len = off;
	return buf;
}

static void test_names(void **state)
{
	(void)state;
	uint64_t ino, seen[8];
	const char *names[] = {"stats", "metrics", "order", "views", "warm"};
	uint32_t n = pfs_ctl_nchildren(PFS_CTL_INO_DIR);
	assert_int_equal(n, 5);
	for (uint32_t k = 0; k < n; k++) {
		const char *name = pfs_ctl_child(PFS_CTL_INO_DIR, k, &seen[k]);
		assert_non_null(name);
		assert_string_equal(name, names[k]);
		assert_true(pfs_ctl_is(seen[k]));
		assert_int_equal(pfs_ctl_lookup(PFS_CTL_INO_DIR, name, &ino), 0);
		assert_int_equal(ino, seen[k]);
	}
	assert_null(pfs_ctl_child(PFS_CTL_INO_DIR, n, &ino));
	assert_int_equal(seen[2], PFS_CTL_INO_ORDER);
	assert_int_equal(seen[3], PFS_CTL_INO_VIEWS);
	assert_int_equal(seen[4], PFS_CTL_INO_WARM);
	assert_int_equal(pfs_ctl_lookup(PFS_CTL_INO_DIR, "nope", &ino), -ENOENT);
	assert_int_equal(pfs_ctl_lookup(PFS_CTL_INO_DIR, "", &ino), -ENOENT);
	assert_int_equal(pfs_ctl_lookup(PFS_CTL_INO_DIR, "stats/", &ino), -ENOENT);
	/* Only the control directory has entries. */
	assert_int_equal(pfs_ctl_lookup(PFS_CTL_INO_VIEWS, "stats", &ino), -ENOENT);
	assert_int_equal(pfs_ctl_lookup(seen[0], "stats", &ino), -ENOENT);
	assert_int_equal(pfs_ctl_nchildren(PFS_CTL_INO_VIEWS), 0);
	assert_int_equal(pfs_ctl_nchildren(seen[0]), 0);
	assert_null(pfs_ctl_child(seen[0], 0, &ino));
	/* The range of control inodes, and nothing of the dataset's. */
	assert_false(pfs_ctl_is(1));
	assert_false(pfs_ctl_is(PFS_CTL_INO_BASE - 1));
	assert_false(pfs_ctl_is(PFS_CTL_INO_BASE + 64));
}

static void test_attributes(void **state)
{
	(void)state;
	struct stat st;
	uint64_t stats, metrics;
	assert_int_equal(pfs_ctl_lookup(PFS_CTL_INO_DIR, "stats", &stats), 0);
	assert_int_equal(pfs_ctl_lookup(PFS_CTL_INO_DIR, "metrics", &metrics), 0);
	assert_int_equal(pfs_ctl_getattr(PFS_CTL_INO_DIR, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(st.st_ino, PFS_CTL_INO_DIR);
	assert_int_equal(pfs_ctl_getattr(PFS_CTL_INO_VIEWS, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(pfs_ctl_getattr(PFS_CTL_INO_ORDER, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_mode & 0777, 0666); /* loaders write it */
	assert_int_equal(st.st_size, 0);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(pfs_ctl_getattr(i ? metrics : stats, &st), 0);
		assert_true(S_ISREG(st.st_mode));
		assert_int_equal(st.st_mode & 0777, 0444);
		assert_true(st.st_size > 0);
		assert_int_equal(st.st_size % 4096, 0); /* padded */
	}
	assert_int_equal(pfs_ctl_getattr(PFS_CTL_INO_BASE + 63, &st), -ENOENT);
	assert_int_equal(pfs_ctl_getattr(1, &st), -ENOENT);
}

static void test_reads(void **state)
{
	(void)state;
	uint64_t stats, metrics;
	size_t len, got;
	char buf[64];
	assert_int_equal(pfs_ctl_lookup(PFS_CTL_INO_DIR, "stats", &stats), 0);
	assert_int_equal(pfs_ctl_lookup(PFS_CTL_INO_DIR, "metrics", &metrics), 0);
	value = 4242;
	char *json = read_all(stats, 1000, &len);
	struct stat st;
	assert_int_equal(pfs_ctl_getattr(stats, &st), 0);
	assert_int_equal(len, (size_t)st.st_size);
	assert_int_equal(json[0], '{');
	assert_non_null(strstr(json, "\"zz_test\": {\"value\": 4242}"));
	assert_non_null(strstr(json, "\"origin\""));
	/* The padding is newlines after the closing brace. */
	char *end = strrchr(json, '}');
	for (char *p = end + 1; p < json + len; p++)
		assert_int_equal(*p, '\n');
	free(json);

	char *prom = read_all(metrics, 4096, &len);
	assert_non_null(strstr(prom, "# TYPE prestofs_zz_test_value gauge\n"));
	assert_non_null(strstr(prom, "\nprestofs_zz_test_value 4242\n"));
	free(prom);

	/* Directories and unknown numbers are not files; the order file
	 * reads empty. */
	assert_int_equal(pfs_ctl_read(PFS_CTL_INO_DIR, 0, sizeof(buf), buf, &got), -EISDIR);
	assert_int_equal(pfs_ctl_read(PFS_CTL_INO_VIEWS, 0, sizeof(buf), buf, &got), -EISDIR);
	assert_int_equal(pfs_ctl_read(PFS_CTL_INO_BASE + 60, 0, sizeof(buf), buf, &got), -EISDIR);
	got = 99;
	assert_int_equal(pfs_ctl_read(PFS_CTL_INO_ORDER, 0, sizeof(buf), buf, &got), 0);
	assert_int_equal(got, 0);
}

/* A reader that started after a getattr reads that snapshot to its end,
 * whatever changes meanwhile; the next getattr takes a new one. */
static void test_snapshot_holds(void **state)
{
	(void)state;
	uint64_t stats;
	struct stat st;
	size_t got;
	assert_int_equal(pfs_ctl_lookup(PFS_CTL_INO_DIR, "stats", &stats), 0);
	value = 1111;
	assert_int_equal(pfs_ctl_getattr(stats, &st), 0);
	size_t size = (size_t)st.st_size;
	char *a = calloc(1, size + 1);
	assert_non_null(a);
	assert_int_equal(pfs_ctl_read(stats, 0, 10, a, &got), 0);
	assert_int_equal(got, 10);
	value = 98765432109.0; /* longer */
	assert_int_equal(pfs_ctl_read(stats, 10, size, a + 10, &got), 0);
	assert_int_equal(got, size - 10);
	assert_non_null(strstr(a, "\"value\": 1111}"));
	assert_null(strstr(a, "98765432109"));
	/* Past the end: EOF, not the tail of a newer rendering. */
	assert_int_equal(pfs_ctl_read(stats, size, 100, a, &got), 0);
	assert_int_equal(got, 0);
	free(a);
	size_t len;
	char *b = read_all(stats, 512, &len);
	assert_non_null(strstr(b, "\"value\": 98765432109}"));
	free(b);
}

static void nothing(void *ctx, struct pfs_stat_list *l)
{
	(void)ctx;
	(void)l;
}

/* Sources are bounded and the ones past the bound are refused, not
 * silently lost; rendering still works with the table full. */
static void test_sources_bounded(void **state)
{
	(void)state;
	int added = 2, rc;
	while ((rc = pfs_ctl_add_stats_source(nothing, NULL)) == 0)
		added++;
	assert_int_equal(rc, -ENOSPC);
	assert_int_equal(added, PFS_CTL_MAX_SOURCES);
	value = 7;
	size_t len;
	uint64_t stats;
	assert_int_equal(pfs_ctl_lookup(PFS_CTL_INO_DIR, "stats", &stats), 0);
	char *json = read_all(stats, 4096, &len);
	assert_non_null(strstr(json, "\"zz_test\": {\"value\": 7}"));
	free(json);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_names, setup),
		cmocka_unit_test_setup(test_attributes, setup),
		cmocka_unit_test_setup(test_reads, setup),
		cmocka_unit_test_setup(test_snapshot_holds, setup),
		cmocka_unit_test_setup(test_sources_bounded, setup), /* last: fills the table */
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
