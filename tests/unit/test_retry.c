/* test_retry.c - origin/retry.h: backoff bounds, Retry-After, status
 * classification and errno mapping. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "../../origin/retry.h"

#define EPS 1e-9
#define RND_MAX_BELOW_1 0.999999999

static void near(double got, double want, const char *what)
{
	if (got < want - EPS || got > want + EPS)
		fail_msg("%s = %.12g, want %.12g", what, got, want);
}

/* Ceiling of the jitter window for retry n: min(cap, base * 2^(n-1)). */
static double window(int attempt)
{
	double w = PFS_RETRY_BASE;
	for (int i = 1; i < attempt; i++) {
		w *= 2;
		if (w > PFS_RETRY_CAP)
			return PFS_RETRY_CAP;
	}
	return w;
}

static void test_delay_bounds(void **state)
{
	(void)state;
	/* Full jitter: rnd 0 gives no wait, rnd -> 1 approaches the window
	 * and never reaches or passes it. */
	for (int a = 1; a <= 40; a++) {
		double w = window(a);
		near(pfs_retry_delay(a, -1, 0.0), 0.0, "delay(rnd=0)");
		double hi = pfs_retry_delay(a, -1, RND_MAX_BELOW_1);
		assert_true(hi < w + EPS);
		assert_true(hi > w * 0.999);
		for (int k = 0; k < 100; k++) {
			double rnd = k / 100.0;
			double d = pfs_retry_delay(a, -1, rnd);
			assert_true(d >= 0);
			assert_true(d <= PFS_RETRY_CAP);
			near(d, w * rnd, "delay");
		}
	}
	/* No retry before the first. */
	near(pfs_retry_delay(0, -1, 0.5), 0, "delay(attempt 0)");
	near(pfs_retry_delay(-3, 5, 0.5), 0, "delay(attempt -3)");
}

static void test_delay_doubling(void **state)
{
	(void)state;
	/* With rnd fixed, each retry's window doubles from the base. */
	near(pfs_retry_delay(1, -1, 0.5), 0.05, "delay(1)");
	near(pfs_retry_delay(2, -1, 0.5), 0.10, "delay(2)");
	near(pfs_retry_delay(3, -1, 0.5), 0.20, "delay(3)");
	near(pfs_retry_delay(4, -1, 0.5), 0.40, "delay(4)");
	near(pfs_retry_delay(5, -1, 0.5), 0.80, "delay(5)");
	for (int a = 1; a < 5; a++) {
		double d1 = pfs_retry_delay(a, -1, 0.5);
		double d2 = pfs_retry_delay(a + 1, -1, 0.5);
		near(d2, 2 * d1, "doubling");
	}
}

static void test_delay_cap(void **state)
{
	(void)state;
	/* 0.1 * 2^5 = 3.2 > cap: from retry 6 on the window is the cap. */
	near(pfs_retry_delay(6, -1, 0.5), PFS_RETRY_CAP * 0.5, "delay(6)");
	near(pfs_retry_delay(7, -1, 0.5), PFS_RETRY_CAP * 0.5, "delay(7)");
	near(pfs_retry_delay(1000, -1, 0.5), PFS_RETRY_CAP * 0.5, "delay(1000)");
	/* Must not loop 2^31 times or overflow. */
	double d = pfs_retry_delay(0x7fffffff, -1, RND_MAX_BELOW_1);
	assert_true(d <= PFS_RETRY_CAP);
	assert_true(d > PFS_RETRY_CAP * 0.999);
}

static void test_retry_after(void **state)
{
	(void)state;
	/* Honoured when the server asks for longer than the jitter gave. */
	near(pfs_retry_delay(1, 1.5, 0.0), 1.5, "Retry-After 1.5");
	near(pfs_retry_delay(1, 1.0, 0.5), 1.0, "Retry-After 1");
	near(pfs_retry_delay(3, 0.3, 0.1), 0.3, "Retry-After 0.3");
	/* ...but never beyond the cap. */
	near(pfs_retry_delay(1, 3600, 0.0), PFS_RETRY_CAP, "Retry-After 3600");
	near(pfs_retry_delay(1, 2.5, 0.9), PFS_RETRY_CAP, "Retry-After 2.5");
	near(pfs_retry_delay(10, 1e18, 0.3), PFS_RETRY_CAP, "Retry-After 1e18");
	/* A shorter Retry-After does not cut the backoff short. */
	near(pfs_retry_delay(5, 0.1, 0.5), 0.8, "short Retry-After");
	/* 0 and "none" (< 0) are plain backoff. */
	near(pfs_retry_delay(2, 0, 0.5), 0.1, "Retry-After 0");
	near(pfs_retry_delay(2, -1, 0.5), 0.1, "no Retry-After");
}

static void test_retry_status(void **state)
{
	(void)state;
	static const long yes[] = {500, 501, 502, 503, 504, 507, 599, 429, 408};
	static const long no[] = {0, 100, 200, 204, 206, 301, 304, 400, 401, 403,
				  404, 405, 409, 410, 412, 416, 428, 430, 499};
	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
		if (!pfs_retry_status(yes[i]))
			fail_msg("status %ld should be retried", yes[i]);
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		if (pfs_retry_status(no[i]))
			fail_msg("status %ld should not be retried", no[i]);
}

static void test_retry_errno(void **state)
{
	(void)state;
	assert_int_equal(pfs_retry_errno(404), -ENOENT);
	assert_int_equal(pfs_retry_errno(410), -ENOENT);
	assert_int_equal(pfs_retry_errno(401), -EACCES);
	assert_int_equal(pfs_retry_errno(403), -EACCES);
	assert_int_equal(pfs_retry_errno(500), -EIO);
	assert_int_equal(pfs_retry_errno(503), -EIO);
	assert_int_equal(pfs_retry_errno(429), -EIO);
	assert_int_equal(pfs_retry_errno(400), -EIO);
	assert_int_equal(pfs_retry_errno(200), -EIO);
	assert_int_equal(pfs_retry_errno(0), -EIO);
}

/* 416: the range lies past the end, so the object shrank (retry.h). */
static void test_retry_errno_416(void **state)
{
	(void)state;
	assert_int_equal(pfs_retry_errno(416), -ESTALE);
}

static void after_is(const char *v, double want)
{
	double got = pfs_retry_after_parse(v);
	if (got < want - EPS || got > want + EPS)
		fail_msg("pfs_retry_after_parse(\"%s\") = %g, want %g",
			 v ? v : "(null)", got, want);
}

static void test_retry_after_parse(void **state)
{
	(void)state;
	after_is("0", 0);
	after_is("1", 1);
	after_is("120", 120);
	after_is(" 120", 120);
	after_is("\t7", 7);
	after_is("5\r\n", 5);
	after_is("5 \t", 5);
	/* HTTP dates and garbage: no usable value. */
	after_is("Wed, 21 Oct 2015 07:28:00 GMT", -1);
	after_is("Fri, 31 Dec 1999 23:59:59 GMT", -1);
	after_is(NULL, -1);
	after_is("", -1);
	after_is("   ", -1);
	after_is("-5", -1);
	after_is("+5", -1);
	after_is("1.5", -1);
	after_is("12abc", -1);
	after_is("12 34", -1);
	/* A huge value parses to something large and positive, which the
	 * delay then caps. */
	double big = pfs_retry_after_parse("99999999999999999999999");
	assert_true(big > 1e6);
	near(pfs_retry_delay(1, big, 0.2), PFS_RETRY_CAP, "delay(huge Retry-After)");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_delay_bounds),
		cmocka_unit_test(test_delay_doubling),
		cmocka_unit_test(test_delay_cap),
		cmocka_unit_test(test_retry_after),
		cmocka_unit_test(test_retry_status),
		cmocka_unit_test(test_retry_errno),
		cmocka_unit_test(test_retry_errno_416),
		cmocka_unit_test(test_retry_after_parse),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
