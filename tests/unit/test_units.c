/* test_units.c - util/units.h: sizes, seconds and bounded integers as
 * users write them in -o options and the config file. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "../../util/units.h"

static void size_ok(const char *s, uint64_t want)
{
	uint64_t v = 12345;
	if (pfs_parse_size(s, &v) != 0)
		fail_msg("pfs_parse_size(\"%s\") rejected", s);
	if (v != want)
		fail_msg("pfs_parse_size(\"%s\") = %llu, want %llu", s,
			 (unsigned long long)v, (unsigned long long)want);
}

static void size_bad(const char *s)
{
	uint64_t v = 12345;
	int rc = pfs_parse_size(s, &v);
	if (rc != -EINVAL)
		fail_msg("pfs_parse_size(\"%s\") = %d, want -EINVAL", s ? s : "(null)", rc);
	/* A rejected value never leaks a partial result. */
	assert_int_equal(v, 12345);
}

static void test_size_plain(void **state)
{
	(void)state;
	size_ok("0", 0);
	size_ok("1", 1);
	size_ok("4096", 4096);
	size_ok("18446744073709551615", UINT64_MAX);
}

static void test_size_suffixes(void **state)
{
	(void)state;
	size_ok("64K", 64ull << 10);
	size_ok("64k", 64ull << 10);
	size_ok("1M", 1ull << 20);
	size_ok("1m", 1ull << 20);
	size_ok("8G", 8ull << 30);
	size_ok("1T", 1ull << 40);
	size_ok("1KB", 1024);
	size_ok("1kb", 1024);
	size_ok("1KiB", 1024);
	size_ok("1kib", 1024);
	size_ok("2MiB", 2ull << 20);
	size_ok("3GB", 3ull << 30);
	size_ok("0K", 0);
	/* Largest value that still fits with a T suffix. */
	size_ok("16777215T", 16777215ull << 40);
}

static void test_size_rejects(void **state)
{
	(void)state;
	size_bad(NULL);
	size_bad("");
	size_bad("-1");
	size_bad("+1");
	size_bad(" 1");
	size_bad("1 ");
	size_bad("1 K");
	size_bad("K");
	size_bad("1X");
	size_bad("1P");
	size_bad("1KK");
	size_bad("1KBB");
	size_bad("1iB");   /* "iB" only after a multiple */
	size_bad("1Ki");
	size_bad("1K5");
	size_bad("1.5M");
	size_bad("0x10");
	size_bad("abc");
	/* Overflow: of the number itself and of the shift. */
	size_bad("18446744073709551616");
	size_bad("99999999999999999999999");
	size_bad("16777216T");
	size_bad("17179869184G");
	size_bad("17592186044416M");
	size_bad("18014398509481984K");
}

static void secs_ok(const char *s, double want)
{
	double v = -1;
	if (pfs_parse_seconds(s, &v) != 0)
		fail_msg("pfs_parse_seconds(\"%s\") rejected", s);
	if (v < want - 1e-9 || v > want + 1e-9)
		fail_msg("pfs_parse_seconds(\"%s\") = %g, want %g", s, v, want);
}

static void secs_bad(const char *s)
{
	double v = -1;
	int rc = pfs_parse_seconds(s, &v);
	if (rc != -EINVAL)
		fail_msg("pfs_parse_seconds(\"%s\") = %d (value %g), want -EINVAL",
			 s ? s : "(null)", rc, v);
	assert_true(v == -1);
}

static void test_seconds(void **state)
{
	(void)state;
	secs_ok("0", 0);
	secs_ok("10", 10);
	secs_ok("0.5", 0.5);
	secs_ok(".25", 0.25);
	secs_ok("1.", 1);
	secs_ok("31536000", 86400.0 * 365); /* one year: the upper bound */
	secs_bad(NULL);
	secs_bad("");
	secs_bad(".");
	secs_bad("-1");
	secs_bad("-0.5");
	secs_bad("+1");
	secs_bad(" 1");
	secs_bad("1 ");
	secs_bad("1s");
	secs_bad("inf");
	secs_bad("nan");
	secs_bad("1e400");      /* ERANGE */
	secs_bad("31536001");   /* more than a year */
}

/* Regression test (was a bug in units.c): units.h allows an optional trailing 'B' without a
 * multiple too ("4096B"), and units.c even has a branch for it
 * (`else if (!shift && !strcasecmp(end, "B"))`), but the switch on the
 * suffix sends 'B' to `default: return -EINVAL` first, so the branch is
 * dead and "-o block_size=4096B" was refused. */
static void test_size_plain_bytes_suffix(void **state)
{
	(void)state;
	size_ok("4096B", 4096);
	size_ok("4096b", 4096);
	size_ok("0B", 0);
}

/* Regression test (was a bug in units.c): the header promises "non-negative decimal seconds", but
 * pfs_parse_seconds() hands the string to strtod(), which also accepts C99
 * hexadecimal floats: "-o timeout=0x10" silently means 16 seconds and
 * "0x1p3" meant 8. */
static void test_seconds_rejects_hex(void **state)
{
	(void)state;
	secs_bad("0x10");
	secs_bad("0x1p3");
}

static void uint_ok(const char *s, uint64_t min, uint64_t max, uint64_t want)
{
	uint64_t v = 777;
	if (pfs_parse_uint(s, min, max, &v) != 0)
		fail_msg("pfs_parse_uint(\"%s\", %llu, %llu) rejected", s,
			 (unsigned long long)min, (unsigned long long)max);
	assert_int_equal(v, want);
}

static void uint_bad(const char *s, uint64_t min, uint64_t max)
{
	uint64_t v = 777;
	int rc = pfs_parse_uint(s, min, max, &v);
	if (rc != -EINVAL)
		fail_msg("pfs_parse_uint(\"%s\", %llu, %llu) = %d, want -EINVAL",
			 s ? s : "(null)", (unsigned long long)min,
			 (unsigned long long)max, rc);
	assert_int_equal(v, 777);
}

static void test_uint(void **state)
{
	(void)state;
	uint_ok("0", 0, 100, 0);
	uint_ok("100", 0, 100, 100);
	uint_ok("1", 1, 1, 1);
	uint_ok("007", 0, 10, 7);
	uint_ok("18446744073709551615", 0, UINT64_MAX, UINT64_MAX);
	uint_bad("101", 0, 100);
	uint_bad("0", 1, 100);
	uint_bad(NULL, 0, 100);
	uint_bad("", 0, 100);
	uint_bad("-1", 0, UINT64_MAX);
	uint_bad("+1", 0, 100);
	uint_bad(" 1", 0, 100);
	uint_bad("1 ", 0, 100);
	uint_bad("1K", 0, UINT64_MAX);
	uint_bad("1.0", 0, 100);
	uint_bad("0x1", 0, 100);
	uint_bad("18446744073709551616", 0, UINT64_MAX);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_size_plain),
		cmocka_unit_test(test_size_plain_bytes_suffix),
		cmocka_unit_test(test_size_suffixes),
		cmocka_unit_test(test_size_rejects),
		cmocka_unit_test(test_seconds),
		cmocka_unit_test(test_seconds_rejects_hex),
		cmocka_unit_test(test_uint),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
