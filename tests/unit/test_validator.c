/* Unit tests for origin/validator.h: one string per content version. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "origin/validator.h"

static const char *make(const char *etag, const char *lm)
{
	static char out[128];
	int rc = pfs_validator_make(etag, lm, out, sizeof(out));
	return rc == 0 ? out : "ERR";
}

static void test_etag_forms(void **state)
{
	(void)state;
	/* Quotes normalised: bare and quoted are the same version. */
	assert_string_equal(make("\"abc\"", NULL), "\"abc\"");
	assert_string_equal(make("abc", NULL), "\"abc\"");
	assert_string_equal(make("  \"abc\"\t", NULL), "\"abc\"");
	/* Weak ETags keep their W/ and differ from the strong one. */
	assert_string_equal(make("W/\"abc\"", NULL), "W/\"abc\"");
	assert_string_equal(make("W/abc", NULL), "W/\"abc\"");
	char weak[128];
	strcpy(weak, make("W/\"abc\"", NULL));
	assert_string_not_equal(weak, make("\"abc\"", NULL));
	/* An ETag wins over Last-Modified. */
	assert_string_equal(make("\"x\"", "Wed, 21 Oct 2015 07:28:00 GMT"), "\"x\"");
	/* Malformed ones are refused, not guessed at. */
	assert_string_equal(make("\"\"", NULL), "ERR");
	assert_string_equal(make("\"a\"b\"", NULL), "ERR");
	assert_string_equal(make("a\x01", NULL), "ERR");
	char big[300];
	memset(big, 'e', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	assert_string_equal(make(big, NULL), "ERR");
}

static void test_last_modified_and_none(void **state)
{
	(void)state;
	assert_string_equal(make(NULL, "Wed, 21 Oct 2015 07:28:00 GMT"), "lm:1445412480");
	assert_string_equal(make("", "Wed, 21 Oct 2015 07:28:01 GMT"), "lm:1445412481");
	/* Unparsable date: as if absent. */
	assert_string_equal(make(NULL, "yesterday-ish"), PFS_VALIDATOR_NONE);
	assert_string_equal(make(NULL, NULL), PFS_VALIDATOR_NONE);
	assert_string_equal(make("", ""), PFS_VALIDATOR_NONE);
}

static void test_condition(void **state)
{
	(void)state;
	char h[200];
	assert_int_equal(pfs_validator_condition("\"abc\"", h, sizeof(h)), 1);
	assert_string_equal(h, "If-Match: \"abc\"");
	assert_int_equal(pfs_validator_condition("lm:1445412480", h, sizeof(h)), 1);
	assert_string_equal(h, "If-Unmodified-Since: Wed, 21 Oct 2015 07:28:00 GMT");
	/* If-Match compares strongly: a weak ETag would always fail it. */
	assert_int_equal(pfs_validator_condition("W/\"abc\"", h, sizeof(h)), 0);
	assert_int_equal(pfs_validator_condition(PFS_VALIDATOR_NONE, h, sizeof(h)), 0);
	assert_int_equal(pfs_validator_condition("\"abc\"", h, 5), -ENOSPC);
}

static void test_valid(void **state)
{
	(void)state;
	assert_true(pfs_validator_valid("\"abc\""));
	assert_true(pfs_validator_valid("W/\"abc\""));
	assert_true(pfs_validator_valid("lm:12"));
	assert_true(pfs_validator_valid("-"));
	assert_false(pfs_validator_valid(""));
	assert_false(pfs_validator_valid("abc"));
	assert_false(pfs_validator_valid("lm:"));
	assert_false(pfs_validator_valid("lm:12x"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_etag_forms),
		cmocka_unit_test(test_last_modified_and_none),
		cmocka_unit_test(test_condition),
		cmocka_unit_test(test_valid),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
