/* test_manifest.c - origin/manifest.h: path validation, the format-1
 * parser (every rejection names its line), and writer round trips. The
 * duplicate and file-as-parent checks go through the real file table, as
 * they do at mount. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "../../origin/manifest.h"
#include "../../catalog/ftable.h"

#define MAGIC PFS_MANIFEST_MAGIC "\n"

/* ---- pfs_path_valid ------------------------------------------------- */

static void test_path_valid(void **state)
{
	(void)state;
	static const char *const good[] = {
		"a", "a/b", "a/b/c.txt", "...", ".a", "a.", "..a", "a..", "a/.b/c",
		"with space", "x-y_z+w=v", "caf\xc3\xa9", "a\\b", "a:b",
	};
	static const char *const bad[] = {
		"", "/", "/a", "a/", "a//b", "//", ".", "..", "./a", "a/.",
		"a/./b", "../a", "a/..", "a/../b", "a\x01", "a\nb", "a\tb",
		"a\rb", "a\x1f", "a\x7f", "\x7f", "a/b\x01/c",
	};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		if (!pfs_path_valid(good[i]))
			fail_msg("path '%s' should be valid", good[i]);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (pfs_path_valid(bad[i]))
			fail_msg("path #%zu ('%s') should be invalid", i, bad[i]);
}

static void test_path_limits(void **state)
{
	(void)state;
	char p[5000];
	/* A component of 255 bytes is fine, 256 is not. */
	memset(p, 'c', 255);
	p[255] = '\0';
	assert_true(pfs_path_valid(p));
	memset(p, 'c', 256);
	p[256] = '\0';
	assert_false(pfs_path_valid(p));
	/* ... also when it is not the first component. */
	memcpy(p, "d/", 2);
	memset(p + 2, 'c', 256);
	p[258] = '\0';
	assert_false(pfs_path_valid(p));
	/* A whole path of 4095 bytes is fine, 4096 is not. */
	size_t n = 0;
	while (n < 4095) {
		size_t k = 4095 - n < 100 ? 4095 - n : 100;
		if (n) {
			p[n++] = '/';
			k = k > 1 ? k - 1 : 1;
		}
		memset(p + n, 'x', k);
		n += k;
	}
	p[n] = '\0';
	assert_int_equal(strlen(p), 4095);
	assert_true(pfs_path_valid(p));
	p[4095] = 'y';
	p[4096] = '\0';
	assert_false(pfs_path_valid(p));
}

/* ---- parsing into a recorder ---------------------------------------- */

struct entry {
	char path[4096];
	int is_dir;
	uint64_t size;
	int64_t mtime;
	char etag[PFS_ETAG_MAX];
	int has_etag;
};

struct rec {
	struct entry e[64];
	int n;
	int fail_at;   /* 1-based entry index whose callback fails, 0: none */
	int fail_rc;
};

static int record(void *ctx, const char *path, int is_dir, uint64_t size,
		  int64_t mtime, const char *etag)
{
	struct rec *r = ctx;
	assert_true(r->n < 64);
	/* The contract: paths reaching the callback are already valid. */
	assert_true(pfs_path_valid(path));
	struct entry *e = &r->e[r->n++];
	if (r->fail_at == r->n)
		return r->fail_rc;
	snprintf(e->path, sizeof(e->path), "%s", path);
	e->is_dir = is_dir;
	e->size = size;
	e->mtime = mtime;
	e->has_etag = etag != NULL;
	snprintf(e->etag, sizeof(e->etag), "%s", etag ? etag : "");
	return 0;
}

static int parse_str(const char *s, struct rec *r, char *err, size_t cap)
{
	return pfs_manifest_parse(s, strlen(s), record, r, err, cap);
}

static void test_parse_basic(void **state)
{
	(void)state;
	struct rec r = {0};
	char err[256] = "junk";
	const char *m = MAGIC
		"a.txt\t5\t1700000000\t\"abc\"\n"
		"dir/\t0\t1600000000\t-\n"
		"dir/sub/f\t4611686018427387904\t-5\tW/\"x y\"\n"
		"z\t0\t0\t-\n";
	assert_int_equal(parse_str(m, &r, err, sizeof(err)), 0);
	assert_string_equal(err, "");
	assert_int_equal(r.n, 4);
	assert_string_equal(r.e[0].path, "a.txt");
	assert_int_equal(r.e[0].is_dir, 0);
	assert_int_equal(r.e[0].size, 5);
	assert_int_equal(r.e[0].mtime, 1700000000);
	assert_true(r.e[0].has_etag);
	assert_string_equal(r.e[0].etag, "\"abc\"");
	/* Directories lose their '/' and come with is_dir. */
	assert_string_equal(r.e[1].path, "dir");
	assert_int_equal(r.e[1].is_dir, 1);
	assert_int_equal(r.e[1].size, 0);
	assert_false(r.e[1].has_etag); /* "-" means none */
	assert_string_equal(r.e[2].path, "dir/sub/f");
	assert_true(r.e[2].size == PFS_FILE_SIZE_MAX);
	assert_true(r.e[2].mtime == -5);
	assert_string_equal(r.e[2].etag, "W/\"x y\"");
	assert_string_equal(r.e[3].path, "z");
	assert_false(r.e[3].has_etag);
}

static void test_parse_magic_only(void **state)
{
	(void)state;
	struct rec r = {0};
	char err[128];
	assert_int_equal(parse_str(MAGIC, &r, err, sizeof(err)), 0);
	assert_int_equal(r.n, 0);
	assert_int_equal(parse_str(PFS_MANIFEST_MAGIC, &r, err, sizeof(err)), 0);
	assert_int_equal(parse_str(PFS_MANIFEST_MAGIC "\r\n", &r, err, sizeof(err)), 0);
	assert_int_equal(r.n, 0);
}

static void test_parse_crlf_and_no_final_newline(void **state)
{
	(void)state;
	struct rec r = {0};
	char err[128];
	const char *m = PFS_MANIFEST_MAGIC "\r\n"
		"a\t1\t2\tE1\r\n"
		"b/\t0\t3\t-\r\n"
		"c\t4\t5\tE3";  /* last line, no newline */
	assert_int_equal(parse_str(m, &r, err, sizeof(err)), 0);
	assert_int_equal(r.n, 3);
	/* The CR is not part of the etag (nor of a directory's name). */
	assert_string_equal(r.e[0].etag, "E1");
	assert_string_equal(r.e[1].path, "b");
	assert_int_equal(r.e[1].is_dir, 1);
	assert_false(r.e[1].has_etag);
	assert_string_equal(r.e[2].path, "c");
	assert_int_equal(r.e[2].size, 4);
	assert_string_equal(r.e[2].etag, "E3");

	/* Mixed endings, last line without newline but with CR. */
	memset(&r, 0, sizeof(r));
	m = MAGIC "a\t1\t2\tE1\r\nb\t1\t2\tE2\nc\t1\t2\tE3\r";
	assert_int_equal(parse_str(m, &r, err, sizeof(err)), 0);
	assert_int_equal(r.n, 3);
	assert_string_equal(r.e[2].etag, "E3");
}

/* Expects a failure with rc, a message mentioning "line N" and `what`, and
 * no entry reaching the callback from the failing line on. */
static void expect_fail(const char *m, size_t len, int rc_want, unsigned line,
			const char *what, int entries_before)
{
	struct rec r = {0};
	char err[256] = "";
	int rc = pfs_manifest_parse(m, len, record, &r, err, sizeof(err));
	if (rc != rc_want)
		fail_msg("parse of %.60s...: rc %d, want %d (err '%s')", m, rc, rc_want, err);
	char needle[32];
	snprintf(needle, sizeof(needle), "line %u:", line);
	if (!strstr(err, needle))
		fail_msg("error '%s' does not name '%s'", err, needle);
	if (what && !strstr(err, what))
		fail_msg("error '%s' does not mention '%s'", err, what);
	if (r.n != entries_before)
		fail_msg("%d entries reached the callback, want %d", r.n, entries_before);
}

#define FAILS(m, line, what, before) expect_fail((m), strlen(m), -EINVAL, (line), (what), (before))

static void test_reject_magic(void **state)
{
	(void)state;
	FAILS("a\t1\t2\t-\n", 1, "expected", 0);
	FAILS("#prestofs-manifest 2\na\t1\t2\t-\n", 1, "expected", 0);
	FAILS("#prestofs-manifest 1 \n", 1, "expected", 0);
	FAILS(" #prestofs-manifest 1\n", 1, "expected", 0);
	FAILS("\n" MAGIC, 1, "expected", 0);
	/* Empty input has no line 1 at all. */
	struct rec r = {0};
	char err[128] = "";
	assert_int_equal(pfs_manifest_parse("", 0, record, &r, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "empty"));
}

static void test_reject_paths(void **state)
{
	(void)state;
	FAILS(MAGIC "ok\t1\t2\t-\n../etc/passwd\t1\t2\t-\n", 3, "invalid path", 1);
	FAILS(MAGIC "a/../b\t1\t2\t-\n", 2, "invalid path", 0);
	FAILS(MAGIC "..\t1\t2\t-\n", 2, "invalid path", 0);
	FAILS(MAGIC "../\t0\t2\t-\n", 2, "invalid path", 0);
	FAILS(MAGIC ".\t1\t2\t-\n", 2, "invalid path", 0);
	FAILS(MAGIC "a/./b\t1\t2\t-\n", 2, "invalid path", 0);
	FAILS(MAGIC "./\t0\t2\t-\n", 2, "invalid path", 0);
	FAILS(MAGIC "a//b\t1\t2\t-\n", 2, "invalid path", 0);
	FAILS(MAGIC "a//\t0\t2\t-\n", 2, "invalid path", 0);
	FAILS(MAGIC "/\t0\t2\t-\n", 2, "invalid path", 0);
	FAILS(MAGIC "\t1\t2\t-\n", 2, "invalid path", 0);
	FAILS(MAGIC "/abs\t1\t2\t-\n", 2, "invalid path", 0);
	FAILS(MAGIC "/abs/\t0\t2\t-\n", 2, "invalid path", 0);
	FAILS(MAGIC "a\x01\t1\t2\t-\n", 2, "invalid path", 0);
	FAILS(MAGIC "a\x1b[31m\t1\t2\t-\n", 2, "invalid path", 0);
	FAILS(MAGIC "del\x7f\t1\t2\t-\n", 2, "invalid path", 0);
	FAILS(MAGIC "a\rb\t1\t2\t-\n", 2, "invalid path", 0);
	/* Line numbers keep counting past good lines and CRLF endings. */
	FAILS(PFS_MANIFEST_MAGIC "\r\na\t1\t2\t-\r\nb\t1\t2\t-\r\n/c\t1\t2\t-\r\n", 4,
	      "invalid path", 2);
}

static void test_reject_fields(void **state)
{
	(void)state;
	/* Field count. */
	FAILS(MAGIC "a\t1\t2\n", 2, "expected PATH", 0);
	FAILS(MAGIC "a\n", 2, "expected PATH", 0);
	FAILS(MAGIC "a 1 2 -\n", 2, "expected PATH", 0);
	FAILS(MAGIC "a\t1\t2\t-\textra\n", 2, "more than 4 fields", 0);
	/* Empty lines are not allowed, not even at the end. */
	FAILS(MAGIC "a\t1\t2\t-\n\nb\t1\t2\t-\n", 3, NULL, 1);
	FAILS(MAGIC "a\t1\t2\t-\n\n", 3, NULL, 1);
	FAILS(MAGIC "a\t1\t2\t-\r\n\r\n", 3, NULL, 1);
	/* Size. */
	FAILS(MAGIC "a\t-1\t2\t-\n", 2, "invalid size", 0);
	FAILS(MAGIC "a\t+1\t2\t-\n", 2, "invalid size", 0);
	FAILS(MAGIC "a\t\t2\t-\n", 2, "invalid size", 0);
	FAILS(MAGIC "a\t 1\t2\t-\n", 2, "invalid size", 0);
	FAILS(MAGIC "a\t1 \t2\t-\n", 2, "invalid size", 0);
	FAILS(MAGIC "a\t1K\t2\t-\n", 2, "invalid size", 0);
	FAILS(MAGIC "a\t0x10\t2\t-\n", 2, "invalid size", 0);
	FAILS(MAGIC "a\t1.5\t2\t-\n", 2, "invalid size", 0);
	/* Past UINT64_MAX: too large, not merely invalid. */
	FAILS(MAGIC "a\t18446744073709551616\t2\t-\n", 2,
	      "size 18446744073709551616 too large (max 2^62)", 0);
	/* Mtime. */
	FAILS(MAGIC "a\t1\t\t-\n", 2, "invalid mtime", 0);
	FAILS(MAGIC "a\t1\t-\t-\n", 2, "invalid mtime", 0);
	FAILS(MAGIC "a\t1\t--5\t-\n", 2, "invalid mtime", 0);
	FAILS(MAGIC "a\t1\t+5\t-\n", 2, "invalid mtime", 0);
	FAILS(MAGIC "a\t1\t1.5\t-\n", 2, "invalid mtime", 0);
	FAILS(MAGIC "a\t1\tyesterday\t-\n", 2, "invalid mtime", 0);
	FAILS(MAGIC "a\t1\t9223372036854775808\t-\n", 2, "invalid mtime", 0);
	FAILS(MAGIC "a\t1\t-9223372036854775809\t-\n", 2, "invalid mtime", 0);
	/* Directories have no size. */
	FAILS(MAGIC "d/\t1\t2\t-\n", 2, "directory with non-zero size", 0);
	/* Etag: empty is rejected ('-' is the way to say none), as is one
	 * that does not fit PFS_ETAG_MAX. */
	FAILS(MAGIC "a\t1\t2\t\n", 2, "invalid etag", 0);
	FAILS(MAGIC "a\t1\t2\t\r\n", 2, "invalid etag", 0);
	/* Control characters: a CR before the CRLF (fuzz_manifest: the
	 * written-back listing lost it) or any other. */
	FAILS(MAGIC "a\t1\t2\t\"x\"\r\r\n", 2, "invalid etag", 0);
	FAILS(MAGIC "a\t1\t2\t\"x\x01y\"\n", 2, "invalid etag", 0);
	char m[512];
	int n = snprintf(m, sizeof(m), MAGIC "a\t1\t2\t");
	memset(m + n, 'e', PFS_ETAG_MAX);
	strcpy(m + n + PFS_ETAG_MAX, "\n");
	FAILS(m, 2, "invalid etag", 0);
	/* PFS_ETAG_MAX - 1 bytes still fits. */
	m[n + PFS_ETAG_MAX - 1] = '\n';
	m[n + PFS_ETAG_MAX] = '\0';
	struct rec r = {0};
	char err[128];
	assert_int_equal(parse_str(m, &r, err, sizeof(err)), 0);
	assert_int_equal(strlen(r.e[0].etag), PFS_ETAG_MAX - 1);
}

/* Sizes no origin can hold (above 2^62, see PFS_FILE_SIZE_MAX) are
 * refused with the line and the size named; 2^62 itself is accepted. */
static void test_reject_huge_sizes(void **state)
{
	(void)state;
	assert_true(PFS_FILE_SIZE_MAX == 4611686018427387904ull);
	FAILS(MAGIC "a\t1\t2\t-\nbig\t18446744073709551615\t2\t-\n", 3,
	      "manifest line 3: size 18446744073709551615 too large (max 2^62)", 1);
	FAILS(MAGIC "big\t9223372036854775808\t2\t-\n", 2,
	      "manifest line 2: size 9223372036854775808 too large (max 2^62)", 0);
	FAILS(MAGIC "big\t9223372036854775807\t2\t-\n", 2, "too large", 0);
	FAILS(MAGIC "big\t4611686018427387905\t2\t-\n", 2, "too large", 0);
	FAILS(MAGIC "big\t99999999999999999999999\t2\t-\n", 2, "too large", 0);
	const char *edge = MAGIC "edge\t4611686018427387904\t2\t-\n";
	struct rec r = {0};
	char err[128] = "";
	assert_int_equal(parse_str(edge, &r, err, sizeof(err)), 0);
	assert_int_equal(r.n, 1);
	assert_true(r.e[0].size == PFS_FILE_SIZE_MAX);
	/* Through the file table too (it refuses the same sizes itself). */
	struct pfs_ftable *ft = pfs_ftable_create();
	assert_non_null(ft);
	assert_int_equal(pfs_manifest_parse(edge, strlen(edge), pfs_ftable_add, ft, err,
					    sizeof(err)), 0);
	assert_int_equal(pfs_ftable_finish(ft), 0);
	assert_true(pfs_ftable_total_bytes(ft) == PFS_FILE_SIZE_MAX);
	pfs_ftable_destroy(ft);
}

static void test_reject_nul_and_long_lines(void **state)
{
	(void)state;
	static const char nul[] = MAGIC "a\t1\t2\t-\nb\0c\t1\t2\t-\n";
	expect_fail(nul, sizeof(nul) - 1, -EINVAL, 3, "NUL", 1);
	/* A line longer than the parser's bound is refused, not truncated. */
	enum { BIG = 9000 };
	static char m[BIG + 64];
	size_t n = (size_t)snprintf(m, sizeof(m), MAGIC);
	memset(m + n, 'x', BIG);
	snprintf(m + n + BIG, sizeof(m) - n - BIG, "\t1\t2\t-\n");
	expect_fail(m, strlen(m), -EINVAL, 2, "longer than", 0);
	/* Just under the bound (8191 bytes) is still a line. */
	n = (size_t)snprintf(m, sizeof(m), MAGIC);
	size_t path = 8191 - strlen("\t1\t2\t-");
	for (size_t i = 0; i < path; i++)
		m[n + i] = i % 200 == 199 ? '/' : 'x';
	snprintf(m + n + path, sizeof(m) - n - path, "\t1\t2\t-\n");
	struct rec r = {0};
	char err[128] = "";
	int rc = parse_str(m, &r, err, sizeof(err));
	/* The path is over 4095 bytes, so the line is read whole and then
	 * refused for its path, not for its length. */
	assert_int_equal(rc, -EINVAL);
	assert_non_null(strstr(err, "line 2: invalid path"));
}

/* ---- through the real file table ------------------------------------- */

static int ft_parse(struct pfs_ftable *ft, const char *m, char *err, size_t cap)
{
	return pfs_manifest_parse(m, strlen(m), pfs_ftable_add, ft, err, cap);
}

static void ft_fails(const char *m, int rc_want, const char *needle)
{
	struct pfs_ftable *ft = pfs_ftable_create();
	assert_non_null(ft);
	char err[256] = "";
	int rc = ft_parse(ft, m, err, sizeof(err));
	if (rc != rc_want)
		fail_msg("rc %d, want %d (err '%s')", rc, rc_want, err);
	if (!strstr(err, needle))
		fail_msg("error '%s' does not contain '%s'", err, needle);
	pfs_ftable_destroy(ft);
}

static void test_duplicates_via_ftable(void **state)
{
	(void)state;
	ft_fails(MAGIC "a\t1\t2\t-\nb\t1\t2\t-\na\t3\t4\t-\n", -EINVAL,
		 "line 4: duplicate path 'a'");
	ft_fails(MAGIC "d/x\t1\t2\t-\nd/x\t1\t2\t-\n", -EINVAL,
		 "line 3: duplicate path 'd/x'");
	ft_fails(MAGIC "d/\t0\t2\t-\nd/\t0\t2\t-\n", -EINVAL,
		 "line 3: duplicate path 'd'");
}

/* A file and a directory of the same name, or a file used as a directory,
 * in either order, is no duplicate: the manifest loads, the directory
 * wins and the file is left out (catalog/ftable.h). Before, each of these
 * failed the mount ("duplicate path", "is below a file"). */
static void test_file_and_dir_clash_via_ftable(void **state)
{
	(void)state;
	static const char *const m[] = {
		MAGIC "a\t1\t2\t-\na/\t0\t2\t-\nd/x\t1\t2\t-\nd\t1\t2\t-\n",
		MAGIC "a/\t0\t2\t-\na\t1\t2\t-\nd\t1\t2\t-\nd/x\t1\t2\t-\n",
	};
	for (size_t i = 0; i < sizeof(m) / sizeof(*m); i++) {
		struct pfs_ftable *ft = pfs_ftable_create();
		assert_non_null(ft);
		char err[256] = "";
		uint32_t node;
		struct pfs_fnode info;
		if (ft_parse(ft, m[i], err, sizeof(err)) != 0)
			fail_msg("manifest %zu: %s", i, err);
		assert_int_equal(pfs_ftable_finish(ft), 0);
		assert_int_equal(pfs_ftable_count(ft), 4); /* root a d d/x */
		assert_int_equal(pfs_ftable_total_bytes(ft), 1);
		assert_int_equal(pfs_ftable_resolve(ft, "a", &node), 0);
		assert_int_equal(pfs_ftable_get(ft, node, &info), 0);
		assert_true(info.is_dir);
		assert_int_equal(pfs_ftable_resolve(ft, "d/x", &node), 0);
		pfs_ftable_destroy(ft);
	}
}

static void test_implicit_then_explicit_dir_via_ftable(void **state)
{
	(void)state;
	struct pfs_ftable *ft = pfs_ftable_create();
	assert_non_null(ft);
	char err[256] = "";
	/* A directory first seen as a parent may be declared afterwards. */
	assert_int_equal(ft_parse(ft, MAGIC "d/x\t1\t2\t-\nd/\t0\t7\t-\n", err, sizeof(err)), 0);
	assert_int_equal(pfs_ftable_finish(ft), 0);
	assert_int_equal(pfs_ftable_count(ft), 3);
	pfs_ftable_destroy(ft);
}

static void test_callback_error_propagates(void **state)
{
	(void)state;
	struct rec r = {.fail_at = 2, .fail_rc = -ENOMEM};
	char err[256] = "";
	const char *m = MAGIC "a\t1\t2\t-\nb\t1\t2\t-\nc\t1\t2\t-\n";
	assert_int_equal(parse_str(m, &r, err, sizeof(err)), -ENOMEM);
	assert_non_null(strstr(err, "line 3"));
	assert_int_equal(r.n, 2); /* stopped at b; c never seen */
}

static void test_err_buffer_bounds(void **state)
{
	(void)state;
	struct rec r = {0};
	char err[8];
	memset(err, 'Z', sizeof(err));
	assert_int_equal(parse_str(MAGIC "/x\t1\t2\t-\n", &r, err, sizeof(err)), -EINVAL);
	assert_int_equal(strlen(err), sizeof(err) - 1); /* truncated, terminated */
	/* errcap 0: err is not touched. */
	char guard = 'G';
	assert_int_equal(parse_str(MAGIC "/x\t1\t2\t-\n", &r, &guard, 0), -EINVAL);
	assert_int_equal(guard, 'G');
}

/* ---- round trip --------------------------------------------------- */

static void test_round_trip(void **state)
{
	(void)state;
	static const struct {
		const char *path;
		int is_dir;
		uint64_t size;
		int64_t mtime;
		const char *etag;   /* written */
		const char *back;   /* read back; NULL: none */
	} in[] = {
		{"a.bin", 0, 123456789, 1700000000, "\"0123abcd\"", "\"0123abcd\""},
		{"dir", 1, 0, 1600000000, NULL, NULL},
		{"dir/empty-etag", 0, 0, 0, "", NULL},
		{"dir/neg", 0, 1, -86400, "W/\"weak\"", "W/\"weak\""},
		{"dir/huge", 0, PFS_FILE_SIZE_MAX, INT64_MAX, "e", "e"},
		{"dir/old", 0, 7, INT64_MIN, "x", "x"},
		{"only/dir", 1, 99, 5, "ignored-etag", "ignored-etag"},
		{"sp ace/caf\xc3\xa9.txt", 0, 42, 42, "-", NULL},
	};
	size_t nin = sizeof(in) / sizeof(in[0]);
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_non_null(f);
	fputs(MAGIC, f);
	for (size_t i = 0; i < nin; i++)
		assert_int_equal(pfs_manifest_write_entry(f, in[i].path, in[i].is_dir,
							  in[i].size, in[i].mtime,
							  in[i].etag), 0);
	assert_int_equal(fclose(f), 0);

	/* Directories are written with their '/' and size 0. */
	assert_non_null(strstr(buf, "\ndir/\t0\t1600000000\t-\n"));
	assert_non_null(strstr(buf, "\nonly/dir/\t0\t5\t"));

	struct rec r = {0};
	char err[256] = "";
	assert_int_equal(pfs_manifest_parse(buf, len, record, &r, err, sizeof(err)), 0);
	assert_int_equal(r.n, nin);
	for (size_t i = 0; i < nin; i++) {
		assert_string_equal(r.e[i].path, in[i].path);
		assert_int_equal(r.e[i].is_dir, in[i].is_dir);
		assert_true(r.e[i].size == (in[i].is_dir ? 0 : in[i].size));
		assert_true(r.e[i].mtime == in[i].mtime);
		assert_int_equal(r.e[i].has_etag, in[i].back != NULL);
		if (in[i].back)
			assert_string_equal(r.e[i].etag, in[i].back);
	}

	/* And the same text builds a file table. */
	struct pfs_ftable *ft = pfs_ftable_create();
	assert_non_null(ft);
	assert_int_equal(pfs_manifest_parse(buf, len, pfs_ftable_add, ft, err, sizeof(err)), 0);
	assert_int_equal(pfs_ftable_finish(ft), 0);
	uint32_t d, node;
	assert_int_equal(pfs_ftable_lookup(ft, PFS_FTABLE_ROOT, "dir", &d), 0);
	assert_int_equal(pfs_ftable_lookup(ft, d, "huge", &node), 0);
	struct pfs_fnode info;
	assert_int_equal(pfs_ftable_get(ft, node, &info), 0);
	assert_true(info.size == PFS_FILE_SIZE_MAX);
	pfs_ftable_destroy(ft);
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_path_valid),
		cmocka_unit_test(test_path_limits),
		cmocka_unit_test(test_parse_basic),
		cmocka_unit_test(test_parse_magic_only),
		cmocka_unit_test(test_parse_crlf_and_no_final_newline),
		cmocka_unit_test(test_reject_magic),
		cmocka_unit_test(test_reject_paths),
		cmocka_unit_test(test_reject_fields),
		cmocka_unit_test(test_reject_huge_sizes),
		cmocka_unit_test(test_reject_nul_and_long_lines),
		cmocka_unit_test(test_duplicates_via_ftable),
		cmocka_unit_test(test_file_and_dir_clash_via_ftable),
		cmocka_unit_test(test_implicit_then_explicit_dir_via_ftable),
		cmocka_unit_test(test_callback_error_propagates),
		cmocka_unit_test(test_err_buffer_bounds),
		cmocka_unit_test(test_round_trip),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
