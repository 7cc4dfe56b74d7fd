/* test_ftable.c - catalog/ftable.h: building the namespace (implicit parents,
 * late directory declarations, duplicates, a file and a directory of one
 * name), queries after finish, path reconstruction, validators and the
 * memory bound per entry. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <cmocka.h>

#include "../../catalog/ftable.h"
#include "../../catalog/listing.h"
#include "../../origin/origin.h"
#include "../../util/stats.h"

static struct pfs_ftable *new_table(void)
{
	struct pfs_ftable *ft = pfs_ftable_create();
	assert_non_null(ft);
	return ft;
}

static void add_ok(struct pfs_ftable *ft, const char *path, int is_dir, uint64_t size,
		   int64_t mtime)
{
	int rc = pfs_ftable_add(ft, path, is_dir, size, mtime, NULL);
	if (rc != 0)
		fail_msg("add '%s' (dir %d): %d", path, is_dir, rc);
}

/* Node of a relative path, walking lookups from the root. */
static uint32_t node_of(const struct pfs_ftable *ft, const char *path)
{
	char buf[4096];
	snprintf(buf, sizeof(buf), "%s", path);
	uint32_t cur = PFS_FTABLE_ROOT;
	for (char *save = NULL, *c = strtok_r(buf, "/", &save); c;
	     c = strtok_r(NULL, "/", &save)) {
		uint32_t next;
		int rc = pfs_ftable_lookup(ft, cur, c, &next);
		if (rc != 0)
			fail_msg("lookup of '%s' in '%s': %d", c, path, rc);
		cur = next;
	}
	return cur;
}

static struct pfs_fnode info_of(const struct pfs_ftable *ft, uint32_t node)
{
	struct pfs_fnode info;
	assert_int_equal(pfs_ftable_get(ft, node, &info), 0);
	return info;
}

static void test_root_only(void **state)
{
	(void)state;
	struct pfs_ftable *ft = new_table();
	assert_int_equal(pfs_ftable_finish(ft), 0);
	assert_int_equal(pfs_ftable_count(ft), 1);
	assert_int_equal(pfs_ftable_total_bytes(ft), 0);
	struct pfs_fnode root = info_of(ft, PFS_FTABLE_ROOT);
	assert_true(root.is_dir);
	assert_int_equal(root.size, 0);
	assert_int_equal(root.mtime, 0);
	assert_string_equal(pfs_ftable_name(ft, PFS_FTABLE_ROOT), "");
	assert_int_equal(pfs_ftable_nchildren(ft, PFS_FTABLE_ROOT), 0);
	uint32_t out;
	assert_int_equal(pfs_ftable_lookup(ft, PFS_FTABLE_ROOT, "x", &out), -ENOENT);
	char buf[8] = "junk";
	assert_int_equal(pfs_ftable_path(ft, PFS_FTABLE_ROOT, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "");
	/* Even a one-byte buffer holds the root's "". */
	char one[1] = {'x'};
	assert_int_equal(pfs_ftable_path(ft, PFS_FTABLE_ROOT, one, 1), 0);
	assert_int_equal(one[0], '\0');
	/* Out of range. */
	struct pfs_fnode info;
	assert_int_equal(pfs_ftable_get(ft, 1, &info), -ENOENT);
	assert_int_equal(pfs_ftable_get(ft, UINT32_MAX, &info), -ENOENT);
	assert_int_equal(pfs_ftable_lookup(ft, 5, "x", &out), -ENOENT);
	assert_int_equal(pfs_ftable_path(ft, 5, buf, sizeof(buf)), -ENOENT);
	assert_string_equal(pfs_ftable_name(ft, 5), "");
	assert_int_equal(pfs_ftable_nchildren(ft, 5), 0);
	pfs_ftable_destroy(ft);
	pfs_ftable_destroy(NULL);
}

static void test_implicit_parents(void **state)
{
	(void)state;
	struct pfs_ftable *ft = new_table();
	add_ok(ft, "a/b/c/file", 0, 10, 100);
	add_ok(ft, "a/b/other", 0, 20, 300);
	add_ok(ft, "a/x", 0, 5, 200);
	assert_int_equal(pfs_ftable_finish(ft), 0);
	/* root, a, a/b, a/b/c, file, other, x */
	assert_int_equal(pfs_ftable_count(ft), 7);
	assert_int_equal(pfs_ftable_total_bytes(ft), 35);
	uint32_t a = node_of(ft, "a"), b = node_of(ft, "a/b"), c = node_of(ft, "a/b/c");
	uint32_t f = node_of(ft, "a/b/c/file");
	assert_true(info_of(ft, a).is_dir);
	assert_true(info_of(ft, b).is_dir);
	assert_true(info_of(ft, c).is_dir);
	assert_false(info_of(ft, f).is_dir);
	assert_int_equal(info_of(ft, f).size, 10);
	assert_int_equal(info_of(ft, a).size, 0);
	assert_int_equal(info_of(ft, f).parent, c);
	assert_int_equal(info_of(ft, c).parent, b);
	assert_int_equal(info_of(ft, b).parent, a);
	assert_int_equal(info_of(ft, a).parent, PFS_FTABLE_ROOT);
	assert_int_equal(pfs_ftable_nchildren(ft, PFS_FTABLE_ROOT), 1);
	assert_int_equal(pfs_ftable_nchildren(ft, a), 2);
	assert_int_equal(pfs_ftable_nchildren(ft, b), 2);
	assert_int_equal(pfs_ftable_nchildren(ft, c), 1);
	assert_int_equal(pfs_ftable_nchildren(ft, f), 0);
	/* Files have no children to look up. */
	uint32_t out;
	assert_int_equal(pfs_ftable_lookup(ft, f, "x", &out), -ENOTDIR);
	assert_int_equal(pfs_ftable_lookup(ft, a, "nope", &out), -ENOENT);
	assert_int_equal(pfs_ftable_lookup(ft, a, "", &out), -ENOENT);
	assert_int_equal(pfs_ftable_lookup(ft, a, "b/c", &out), -ENOENT);
	pfs_ftable_destroy(ft);
}

static void test_implicit_dir_mtime(void **state)
{
	(void)state;
	struct pfs_ftable *ft = new_table();
	add_ok(ft, "a/b/old", 0, 1, 100);
	add_ok(ft, "a/b/new", 0, 1, 500);
	add_ok(ft, "a/mid", 0, 1, 300);
	add_ok(ft, "e/explicit", 1, 0, 50);      /* explicit: keeps its own */
	add_ok(ft, "e/explicit/newer", 0, 1, 900);
	add_ok(ft, "neg/f", 0, 1, -7);           /* all children negative */
	add_ok(ft, "neg/g", 0, 1, -3);
	assert_int_equal(pfs_ftable_finish(ft), 0);
	/* An implicit directory's mtime is its newest child's, recursively:
	 * a/b gets 500 from new, a gets 500 from a/b (newer than mid). */
	assert_int_equal(info_of(ft, node_of(ft, "a/b")).mtime, 500);
	assert_int_equal(info_of(ft, node_of(ft, "a")).mtime, 500);
	assert_int_equal(info_of(ft, node_of(ft, "e/explicit")).mtime, 50);
	/* e is implicit: its newest child is the explicit dir (50), not the
	 * grandchild (900). */
	assert_int_equal(info_of(ft, node_of(ft, "e")).mtime, 50);
	assert_int_equal(info_of(ft, node_of(ft, "neg")).mtime, -3);
	/* The root is implicit too. */
	assert_int_equal(info_of(ft, PFS_FTABLE_ROOT).mtime, 500);
	pfs_ftable_destroy(ft);
}

static void test_explicit_dir_after_implicit(void **state)
{
	(void)state;
	struct pfs_ftable *ft = new_table();
	add_ok(ft, "d/sub/f", 0, 3, 1000);
	/* d and d/sub exist implicitly; declaring them is not a duplicate,
	 * and their declared mtime wins over the children's. */
	add_ok(ft, "d/sub", 1, 0, 10);
	add_ok(ft, "d", 1, 0, 20);
	/* Declared twice, though, is. */
	assert_int_equal(pfs_ftable_add(ft, "d", 1, 0, 20, NULL), -EEXIST);
	assert_int_equal(pfs_ftable_add(ft, "d/sub", 1, 0, 20, NULL), -EEXIST);
	/* A file of an implicit directory's name is left out (the directory
	 * wins; see test_clash_*), and adds nothing. */
	add_ok(ft, "d/sub", 0, 5, 20);
	add_ok(ft, "d/sub/g", 0, 4, 2000); /* still usable as a parent */
	assert_int_equal(pfs_ftable_finish(ft), 0);
	assert_int_equal(pfs_ftable_count(ft), 5);
	struct pfs_fnode d = info_of(ft, node_of(ft, "d"));
	struct pfs_fnode sub = info_of(ft, node_of(ft, "d/sub"));
	assert_true(d.is_dir);
	assert_true(sub.is_dir);
	assert_int_equal(d.mtime, 20);
	assert_int_equal(sub.mtime, 10);
	assert_int_equal(sub.size, 0);
	assert_int_equal(pfs_ftable_nchildren(ft, node_of(ft, "d/sub")), 2);
	assert_int_equal(pfs_ftable_total_bytes(ft), 7);
	pfs_ftable_destroy(ft);
}

static void test_duplicates(void **state)
{
	(void)state;
	struct pfs_ftable *ft = new_table();
	add_ok(ft, "f", 0, 1, 1);
	add_ok(ft, "dir/g", 0, 2, 1);
	add_ok(ft, "empty", 1, 0, 1);
	/* The same path twice as a file, or declared twice as a directory
	 * (a file beside a directory is no duplicate: see test_clash_*). */
	assert_int_equal(pfs_ftable_add(ft, "f", 0, 1, 1, NULL), -EEXIST);
	assert_int_equal(pfs_ftable_add(ft, "dir/g", 0, 9, 1, NULL), -EEXIST);
	assert_int_equal(pfs_ftable_add(ft, "empty", 1, 0, 1, NULL), -EEXIST);
	/* Invalid paths never get in. */
	assert_int_equal(pfs_ftable_add(ft, "", 0, 1, 1, NULL), -EINVAL);
	assert_int_equal(pfs_ftable_add(ft, "/abs", 0, 1, 1, NULL), -EINVAL);
	assert_int_equal(pfs_ftable_add(ft, "a/../b", 0, 1, 1, NULL), -EINVAL);
	assert_int_equal(pfs_ftable_add(ft, "a//b", 0, 1, 1, NULL), -EINVAL);
	/* Names are compared whole, not by prefix. */
	add_ok(ft, "ff", 0, 1, 1);
	add_ok(ft, "dir/g2", 0, 1, 1);
	add_ok(ft, "di", 0, 1, 1);
	assert_int_equal(pfs_ftable_finish(ft), 0);
	/* Failed adds left nothing behind: root f dir g empty ff g2 di. */
	assert_int_equal(pfs_ftable_count(ft), 8);
	assert_int_equal(pfs_ftable_total_bytes(ft), 1 + 2 + 1 + 1 + 1);
	uint32_t out;
	assert_int_equal(pfs_ftable_lookup(ft, node_of(ft, "f"), "x", &out), -ENOTDIR);
	assert_int_equal(pfs_ftable_nchildren(ft, node_of(ft, "empty")), 0);
	assert_true(info_of(ft, node_of(ft, "empty")).is_dir);
	/* After finish the table is closed to adds. */
	assert_int_equal(pfs_ftable_add(ft, "late", 0, 1, 1, NULL), -EINVAL);
	pfs_ftable_destroy(ft);
}

/* The table after either test_clash_* listing: every clashing name is a
 * directory holding what was listed below it; the files of those names
 * are left out (neither counted in total_bytes nor findable), and each is
 * counted once in listing.skipped, at finish. */
static void check_clash_table(struct pfs_ftable *ft, uint64_t skipped0)
{
	assert_int_equal(pfs_listing_skipped() - skipped0, 0); /* at finish */
	assert_int_equal(pfs_ftable_finish(ft), 0);
	assert_int_equal(pfs_listing_skipped() - skipped0, 3);
	/* root a a/b a/c x x/y x/y/z x/y/z/w.bin f keep */
	assert_int_equal(pfs_ftable_count(ft), 10);
	assert_int_equal(pfs_ftable_total_bytes(ft), 7 + 8 + 13 + 1);
	static const char *const dirs[] = {"a", "x", "x/y", "x/y/z", "f"};
	for (size_t i = 0; i < sizeof(dirs) / sizeof(*dirs); i++) {
		struct pfs_fnode d = info_of(ft, node_of(ft, dirs[i]));
		if (!d.is_dir || d.size != 0 || d.fp != 0)
			fail_msg("'%s': dir %d size %llu fp %llu", dirs[i], d.is_dir,
				 (unsigned long long)d.size, (unsigned long long)d.fp);
	}
	/* The directories' children survive, with their own sizes. */
	uint32_t a = node_of(ft, "a");
	assert_int_equal(pfs_ftable_nchildren(ft, a), 2);
	assert_string_equal(pfs_ftable_name(ft, pfs_ftable_child(ft, a, 0)), "b");
	assert_string_equal(pfs_ftable_name(ft, pfs_ftable_child(ft, a, 1)), "c");
	assert_int_equal(info_of(ft, node_of(ft, "a/b")).size, 7);
	assert_int_equal(info_of(ft, node_of(ft, "a/c")).size, 8);
	assert_false(info_of(ft, node_of(ft, "x/y/z/w.bin")).is_dir);
	assert_int_equal(info_of(ft, node_of(ft, "x/y/z/w.bin")).size, 13);
	assert_int_equal(pfs_ftable_nchildren(ft, node_of(ft, "x/y")), 1);
	assert_int_equal(pfs_ftable_nchildren(ft, node_of(ft, "f")), 0);
	assert_int_equal(info_of(ft, node_of(ft, "keep")).size, 1);
	/* mtimes: an implicit directory takes its newest child's, not the
	 * left-out file's; a declared one keeps its own. */
	assert_int_equal(info_of(ft, a).mtime, 300);
	assert_int_equal(info_of(ft, node_of(ft, "x/y")).mtime, 400);
	assert_int_equal(info_of(ft, node_of(ft, "f")).mtime, 50);
	char buf[64];
	assert_int_equal(pfs_ftable_path(ft, node_of(ft, "x/y/z/w.bin"), buf, sizeof(buf)), 0);
	assert_string_equal(buf, "x/y/z/w.bin");
	pfs_ftable_destroy(ft);
}

/* A file, then entries below a directory of its name (S3 keys "a" and
 * "a/b" in key order; "x/y" and "x/y/z/w.bin"; "f" and "f/"). Before,
 * the second add failed with -ENOTDIR or -EEXIST, and so the mount. */
static void test_clash_file_first(void **state)
{
	(void)state;
	uint64_t skipped0 = pfs_listing_skipped();
	struct pfs_ftable *ft = new_table();
	add_ok(ft, "a", 0, 5, 999);
	add_ok(ft, "a/b", 0, 7, 200);
	add_ok(ft, "a/c", 0, 8, 300);
	add_ok(ft, "x/y", 0, 11, 999);
	add_ok(ft, "x/y/z/w.bin", 0, 13, 400);
	add_ok(ft, "f", 0, 3, 999);
	add_ok(ft, "f", 1, 0, 50);
	add_ok(ft, "keep", 0, 1, 1);
	/* The directory that replaced a file is still declared once only. */
	assert_int_equal(pfs_ftable_add(ft, "f", 1, 0, 50, NULL), -EEXIST);
	check_clash_table(ft, skipped0);
}

/* The same listing with the directories first: the files arrive at a
 * directory and are left out. */
static void test_clash_dir_first(void **state)
{
	(void)state;
	uint64_t skipped0 = pfs_listing_skipped();
	struct pfs_ftable *ft = new_table();
	add_ok(ft, "a/b", 0, 7, 200);
	add_ok(ft, "a", 0, 5, 999);
	add_ok(ft, "x/y/z/w.bin", 0, 13, 400);
	add_ok(ft, "x/y", 0, 11, 999);
	add_ok(ft, "f", 1, 0, 50);
	add_ok(ft, "f", 0, 3, 999);
	add_ok(ft, "a/c", 0, 8, 300); /* the directory still takes children */
	add_ok(ft, "keep", 0, 1, 1);
	check_clash_table(ft, skipped0);
}

/* Many clashes: every one counted, the table still right. (The first
 * CLASH_WARN_MAX are named in the log, then one line with the count.) */
static void test_clash_warnings_bounded(void **state)
{
	(void)state;
	uint64_t skipped0 = pfs_listing_skipped();
	struct pfs_ftable *ft = new_table();
	char p[32];
	for (int i = 0; i < 50; i++) {
		snprintf(p, sizeof(p), "d%02d", i);
		add_ok(ft, p, 0, 1, 1);
		snprintf(p, sizeof(p), "d%02d/in", i);
		add_ok(ft, p, 0, 2, 1);
	}
	assert_int_equal(pfs_ftable_finish(ft), 0);
	assert_int_equal(pfs_listing_skipped() - skipped0, 50);
	assert_int_equal(pfs_ftable_count(ft), 101);
	assert_int_equal(pfs_ftable_total_bytes(ft), 100);
	pfs_ftable_destroy(ft);
}

static void test_directory_size_ignored(void **state)
{
	(void)state;
	struct pfs_ftable *ft = new_table();
	add_ok(ft, "d", 1, 12345, 1);
	assert_int_equal(pfs_ftable_finish(ft), 0);
	assert_int_equal(info_of(ft, node_of(ft, "d")).size, 0);
	assert_int_equal(pfs_ftable_total_bytes(ft), 0);
	pfs_ftable_destroy(ft);
}

/* Any listing's size above 2^62 (PFS_FILE_SIZE_MAX) is refused with
 * -EFBIG and adds nothing; 2^62 itself is a file; a directory's size is
 * ignored whatever it is. */
static void test_huge_size_refused(void **state)
{
	(void)state;
	struct pfs_ftable *ft = new_table();
	assert_int_equal(pfs_ftable_add(ft, "d/big", 0, UINT64_MAX, 1, NULL), -EFBIG);
	assert_int_equal(pfs_ftable_add(ft, "d/big", 0, 1ull << 63, 1, NULL), -EFBIG);
	assert_int_equal(pfs_ftable_add(ft, "d/big", 0, (1ull << 62) + 1, 1, "\"e\""),
			 -EFBIG);
	assert_int_equal(pfs_ftable_count(ft), 1); /* not even the parent "d" */
	add_ok(ft, "d/edge", 0, 1ull << 62, 1);
	add_ok(ft, "dir", 1, UINT64_MAX, 1);
	assert_int_equal(pfs_ftable_finish(ft), 0);
	assert_true(info_of(ft, node_of(ft, "d/edge")).size == 1ull << 62);
	assert_int_equal(info_of(ft, node_of(ft, "dir")).size, 0);
	assert_true(pfs_ftable_total_bytes(ft) == 1ull << 62);
	pfs_ftable_destroy(ft);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void test_sorted_children_and_lookup(void **state)
{
	(void)state;
	enum { N = 5000 };
	struct pfs_ftable *ft = new_table();
	char **names = calloc(N, sizeof(*names));
	assert_non_null(names);
	/* Added in a scrambled order, with names that sort differently as
	 * numbers and as bytes, and byte values >= 0x80. */
	for (unsigned i = 0; i < N; i++) {
		unsigned k = (i * 7919u) % N; /* a permutation: gcd(7919, N) = 1 */
		char nm[64], path[80];
		snprintf(nm, sizeof(nm), "%s%u%s", k % 3 ? "n" : "N", k, k % 7 ? "" : "\xc3\xa9");
		snprintf(path, sizeof(path), "big/%s", nm);
		names[i] = strdup(nm);
		add_ok(ft, path, k % 5 == 0, k, k);
	}
	add_ok(ft, "small/b", 0, 1, 1);
	add_ok(ft, "small/a", 0, 1, 1);
	add_ok(ft, "small/c", 0, 1, 1);
	assert_int_equal(pfs_ftable_finish(ft), 0);
	uint32_t big = node_of(ft, "big");
	assert_int_equal(pfs_ftable_nchildren(ft, big), N);
	qsort(names, N, sizeof(*names), cmp_str);
	for (uint32_t k = 0; k < N; k++) {
		uint32_t child = pfs_ftable_child(ft, big, k);
		/* readdir order: sorted by name (bytewise). */
		assert_string_equal(pfs_ftable_name(ft, child), names[k]);
		assert_int_equal(info_of(ft, child).parent, big);
		/* Binary search finds every one of them... */
		uint32_t found;
		assert_int_equal(pfs_ftable_lookup(ft, big, names[k], &found), 0);
		assert_int_equal(found, child);
	}
	/* ...and none of the near misses. */
	uint32_t out;
	static const char *const miss[] = {"", "n", "N", "n1x", "o", "A", "zzz", "\xff",
					   "n10000", "N3\xc3"};
	for (size_t i = 0; i < sizeof(miss) / sizeof(miss[0]); i++)
		assert_int_equal(pfs_ftable_lookup(ft, big, miss[i], &out), -ENOENT);
	uint32_t small = node_of(ft, "small");
	assert_string_equal(pfs_ftable_name(ft, pfs_ftable_child(ft, small, 0)), "a");
	assert_string_equal(pfs_ftable_name(ft, pfs_ftable_child(ft, small, 1)), "b");
	assert_string_equal(pfs_ftable_name(ft, pfs_ftable_child(ft, small, 2)), "c");
	/* The root's children are sorted too. */
	assert_string_equal(pfs_ftable_name(ft, pfs_ftable_child(ft, PFS_FTABLE_ROOT, 0)), "big");
	assert_string_equal(pfs_ftable_name(ft, pfs_ftable_child(ft, PFS_FTABLE_ROOT, 1)), "small");
	for (unsigned i = 0; i < N; i++)
		free(names[i]);
	free(names);
	pfs_ftable_destroy(ft);
}

static void test_same_name_different_parents(void **state)
{
	(void)state;
	struct pfs_ftable *ft = new_table();
	add_ok(ft, "x", 1, 0, 1);
	add_ok(ft, "x/x", 1, 0, 2);
	add_ok(ft, "x/x/x", 0, 3, 3);
	add_ok(ft, "y/x", 0, 4, 4);
	assert_int_equal(pfs_ftable_finish(ft), 0);
	uint32_t a = node_of(ft, "x"), b = node_of(ft, "x/x"), c = node_of(ft, "x/x/x");
	uint32_t d = node_of(ft, "y/x");
	assert_true(a != b && b != c && a != c && d != a && d != b && d != c);
	assert_int_equal(info_of(ft, c).size, 3);
	assert_int_equal(info_of(ft, d).size, 4);
	pfs_ftable_destroy(ft);
}

static void test_path_reconstruction(void **state)
{
	(void)state;
	struct pfs_ftable *ft = new_table();
	add_ok(ft, "top", 0, 1, 1);
	add_ok(ft, "aa/bbb/cccc", 0, 1, 1);
	assert_int_equal(pfs_ftable_finish(ft), 0);
	char buf[64];
	uint32_t top = node_of(ft, "top"), c = node_of(ft, "aa/bbb/cccc");
	assert_int_equal(pfs_ftable_path(ft, top, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "top");
	assert_int_equal(pfs_ftable_path(ft, c, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "aa/bbb/cccc");
	assert_int_equal(pfs_ftable_path(ft, node_of(ft, "aa/bbb"), buf, sizeof(buf)), 0);
	assert_string_equal(buf, "aa/bbb");
	/* "aa/bbb/cccc" is 11 bytes + NUL: 12 fits exactly, 11 does not,
	 * nor does anything smaller. */
	char exact[12];
	memset(exact, 'Z', sizeof(exact));
	assert_int_equal(pfs_ftable_path(ft, c, exact, sizeof(exact)), 0);
	assert_string_equal(exact, "aa/bbb/cccc");
	for (size_t cap = 1; cap < 12; cap++) {
		char small[12];
		int rc = pfs_ftable_path(ft, c, small, cap);
		if (rc != -ENAMETOOLONG)
			fail_msg("cap %zu: rc %d, want -ENAMETOOLONG", cap, rc);
	}
	char four[4];
	assert_int_equal(pfs_ftable_path(ft, top, four, sizeof(four)), 0);
	assert_string_equal(four, "top");
	assert_int_equal(pfs_ftable_path(ft, top, four, 3), -ENAMETOOLONG);
	/* A cap of 0 has no room for anything. */
	assert_true(pfs_ftable_path(ft, top, buf, 0) < 0);
	pfs_ftable_destroy(ft);
}

static void test_path_max_depth(void **state)
{
	(void)state;
	/* A 4095-byte path (the longest valid) comes back whole in a
	 * PATH_MAX buffer. */
	char p[4096];
	size_t n = 0;
	while (n + 101 <= 4095) {
		if (n)
			p[n++] = '/';
		memset(p + n, 'a' + (char)(n % 26), 100);
		n += 100;
	}
	if (n < 4095) {
		p[n++] = '/';
		memset(p + n, 'z', 4095 - n);
		n = 4095;
	}
	p[n] = '\0';
	assert_int_equal(strlen(p), 4095);
	struct pfs_ftable *ft = new_table();
	add_ok(ft, p, 0, 1, 1);
	assert_int_equal(pfs_ftable_finish(ft), 0);
	uint32_t leaf = node_of(ft, p);
	char out[4096];
	assert_int_equal(pfs_ftable_path(ft, leaf, out, sizeof(out)), 0);
	assert_string_equal(out, p);
	assert_int_equal(pfs_ftable_path(ft, leaf, out, 4095), -ENAMETOOLONG);
	pfs_ftable_destroy(ft);
}

static void test_etag_set_once(void **state)
{
	(void)state;
	struct pfs_ftable *ft = new_table();
	add_ok(ft, "f", 0, 1, 1);
	add_ok(ft, "g", 0, 1, 1);
	/* The listing's etag is informational; it never becomes the validator. */
	assert_int_equal(pfs_ftable_add(ft, "h", 0, 1, 1, "from-listing"), 0);
	assert_int_equal(pfs_ftable_finish(ft), 0);
	uint32_t f = node_of(ft, "f"), g = node_of(ft, "g"), h = node_of(ft, "h");
	char e[PFS_ETAG_MAX];
	memset(e, 'Z', sizeof(e));
	pfs_ftable_etag(ft, f, e);
	assert_string_equal(e, "");
	pfs_ftable_etag(ft, h, e);
	assert_string_equal(e, "");
	/* An empty validator does not count as the first. */
	assert_int_equal(pfs_ftable_set_etag(ft, f, ""), -EINVAL);
	pfs_ftable_etag(ft, f, e);
	assert_string_equal(e, "");
	assert_int_equal(pfs_ftable_set_etag(ft, f, "\"v1\""), 0);
	pfs_ftable_etag(ft, f, e);
	assert_string_equal(e, "\"v1\"");
	/* The same one again agrees; another is refused and changes nothing. */
	assert_int_equal(pfs_ftable_set_etag(ft, f, "\"v1\""), 0);
	assert_int_equal(pfs_ftable_set_etag(ft, f, "\"v2\""), -ESTALE);
	pfs_ftable_etag(ft, f, e);
	assert_string_equal(e, "\"v1\"");
	/* Per file. */
	pfs_ftable_etag(ft, g, e);
	assert_string_equal(e, "");
	/* The longest validator that fits. */
	char longest[PFS_ETAG_MAX];
	memset(longest, 'q', sizeof(longest) - 1);
	longest[sizeof(longest) - 1] = '\0';
	assert_int_equal(pfs_ftable_set_etag(ft, g, longest), 0);
	pfs_ftable_etag(ft, g, e);
	assert_string_equal(e, longest);
	/* Out of range: nothing set, "" back. */
	assert_int_equal(pfs_ftable_set_etag(ft, 1000, "x"), -EINVAL);
	memset(e, 'Z', sizeof(e));
	pfs_ftable_etag(ft, 1000, e);
	assert_string_equal(e, "");
	pfs_ftable_destroy(ft);
}

struct race {
	struct pfs_ftable *ft;
	uint32_t node;
	pthread_barrier_t *start;
	char mine[32];
	int rc;
};

static void *race_set(void *arg)
{
	struct race *r = arg;
	pthread_barrier_wait(r->start);
	r->rc = pfs_ftable_set_etag(r->ft, r->node, r->mine);
	return NULL;
}

static void test_etag_concurrent_first_wins(void **state)
{
	(void)state;
	enum { T = 8, ROUNDS = 200 };
	struct pfs_ftable *ft = new_table();
	for (int i = 0; i < ROUNDS; i++) {
		char p[32];
		snprintf(p, sizeof(p), "f%d", i);
		add_ok(ft, p, 0, 1, 1);
	}
	assert_int_equal(pfs_ftable_finish(ft), 0);
	for (int round = 0; round < ROUNDS; round++) {
		char p[32];
		snprintf(p, sizeof(p), "f%d", round);
		uint32_t node = node_of(ft, p);
		pthread_barrier_t start;
		pthread_barrier_init(&start, NULL, T);
		pthread_t th[T];
		struct race r[T];
		for (int t = 0; t < T; t++) {
			r[t] = (struct race){.ft = ft, .node = node, .start = &start};
			snprintf(r[t].mine, sizeof(r[t].mine), "etag-%d", t);
			assert_int_equal(pthread_create(&th[t], NULL, race_set, &r[t]), 0);
		}
		for (int t = 0; t < T; t++)
			pthread_join(th[t], NULL);
		pthread_barrier_destroy(&start);
		/* Exactly one of the candidates, whole, and it sticks. */
		char e[PFS_ETAG_MAX];
		pfs_ftable_etag(ft, node, e);
		assert_int_equal(strncmp(e, "etag-", 5), 0);
		int who = atoi(e + 5);
		assert_in_range(who, 0, T - 1);
		assert_string_equal(e, r[who].mine);
		/* The winner, and only the winner, was told it may serve. */
		for (int t = 0; t < T; t++)
			assert_int_equal(r[t].rc, t == who ? 0 : -ESTALE);
		assert_int_equal(pfs_ftable_set_etag(ft, node, "late"), -ESTALE);
		char again[PFS_ETAG_MAX];
		pfs_ftable_etag(ft, node, again);
		assert_string_equal(again, e);
	}
	/* Losers' copies must have been freed: ASan's leak check sees it. */
	pfs_ftable_destroy(ft);
}

static void test_100k_memory(void **state)
{
	(void)state;
	enum { FILES = 100000 };
	struct pfs_ftable *ft = new_table();
	/* A realistic shape: 100 directories of 1000 files with names of
	 * ~20 bytes, added in an order that is not sorted. */
	uint64_t want_bytes = 0;
	for (unsigned i = 0; i < FILES; i++) {
		unsigned k = (i * 7919u) % FILES;
		char p[64];
		snprintf(p, sizeof(p), "shard-%02u/sample-%08u.jpg", k % 100, k);
		add_ok(ft, p, 0, k + 1, (int64_t)k);
		want_bytes += k + 1;
	}
	assert_int_equal(pfs_ftable_finish(ft), 0);
	uint32_t n = pfs_ftable_count(ft);
	assert_int_equal(n, 1 + 100 + FILES);
	assert_true(pfs_ftable_total_bytes(ft) == want_bytes);
	size_t mem = pfs_ftable_memory(ft);
	/* The header's figure: 40 bytes per node + name + NUL; we allow up
	 * to 200 bytes per entry in all. */
	double per = (double)mem / n;
	print_message("ftable: %u nodes, %zu bytes, %.1f bytes/entry\n", n, mem, per);
	assert_true(per < 200.0);
	/* And memory() is not trivially small either: at least the names. */
	assert_true(mem > (size_t)FILES * 20);
	/* Spot checks across the table. */
	for (unsigned k = 0; k < FILES; k += 997) {
		char p[64];
		snprintf(p, sizeof(p), "shard-%02u/sample-%08u.jpg", k % 100, k);
		uint32_t node = node_of(ft, p);
		struct pfs_fnode info = info_of(ft, node);
		assert_int_equal(info.size, k + 1);
		assert_int_equal(info.mtime, k);
		char back[64];
		assert_int_equal(pfs_ftable_path(ft, node, back, sizeof(back)), 0);
		assert_string_equal(back, p);
	}
	uint32_t shard = node_of(ft, "shard-07");
	assert_int_equal(pfs_ftable_nchildren(ft, shard), FILES / 100);
	/* Newest child of shard-07 is sample 99907. */
	assert_int_equal(info_of(ft, shard).mtime, 99907);
	pfs_ftable_destroy(ft);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_root_only),
		cmocka_unit_test(test_implicit_parents),
		cmocka_unit_test(test_implicit_dir_mtime),
		cmocka_unit_test(test_explicit_dir_after_implicit),
		cmocka_unit_test(test_duplicates),
		cmocka_unit_test(test_clash_file_first),
		cmocka_unit_test(test_clash_dir_first),
		cmocka_unit_test(test_clash_warnings_bounded),
		cmocka_unit_test(test_directory_size_ignored),
		cmocka_unit_test(test_huge_size_refused),
		cmocka_unit_test(test_sorted_children_and_lookup),
		cmocka_unit_test(test_same_name_different_parents),
		cmocka_unit_test(test_path_reconstruction),
		cmocka_unit_test(test_path_max_depth),
		cmocka_unit_test(test_etag_set_once),
		cmocka_unit_test(test_etag_concurrent_first_wins),
		cmocka_unit_test(test_100k_memory),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
