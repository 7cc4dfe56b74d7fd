/* test_s3url.c - s3:// parsing, bucket URLs, SigV4-ready listing queries. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "../../origin/s3/s3url.h"

static void check_parse(const char *url, const char *bucket,
			const char *prefix)
{
	char *b = NULL, *p = NULL, err[128];

	assert_int_equal(pfs_s3url_parse(url, &b, &p, err, sizeof(err)), 0);
	assert_string_equal(b, bucket);
	assert_string_equal(p, prefix);
	free(b);
	free(p);
}

static void check_parse_fails(const char *url)
{
	char *b = NULL, *p = NULL, err[128] = "";

	assert_int_equal(pfs_s3url_parse(url, &b, &p, err, sizeof(err)),
			 -EINVAL);
	assert_true(err[0] != '\0');
	assert_null(b);
}

static void test_parse(void **state)
{
	(void)state;
	check_parse("s3://bkt", "bkt", "");
	check_parse("s3://bkt/", "bkt", "");
	check_parse("S3://My_Bucket.1//", "My_Bucket.1", "");
	check_parse("s3://bkt/data", "bkt", "data/");
	check_parse("s3://bkt/data/", "bkt", "data/");
	check_parse("s3://bkt//a//b///", "bkt", "a/b/");
	check_parse("s3://bkt/a b/c+d", "bkt", "a b/c+d/");
	check_parse_fails("http://bkt/x");
	check_parse_fails("s3://");
	check_parse_fails("s3:///x");
	check_parse_fails("s3://b@d/x");
	check_parse_fails("s3://bkt/a/../b");
	check_parse_fails("s3://bkt/./b");
}

static void check_base(const char *endpoint, const char *region,
		       const char *bucket, int path_style, const char *want)
{
	char *out = NULL, err[128];

	assert_int_equal(pfs_s3url_base(endpoint, region, bucket, path_style,
					&out, err, sizeof(err)), 0);
	assert_string_equal(out, want);
	free(out);
}

static void test_base(void **state)
{
	char *out = NULL, err[128];

	(void)state;
	check_base(NULL, NULL, "bkt", 0, "https://bkt.s3.us-east-1.amazonaws.com");
	check_base(NULL, "eu-west-3", "bkt", 0,
		   "https://bkt.s3.eu-west-3.amazonaws.com");
	check_base(NULL, "eu-west-3", "bkt", 1,
		   "https://s3.eu-west-3.amazonaws.com/bkt");
	check_base("http://127.0.0.1:9000/", NULL, "bkt", 1,
		   "http://127.0.0.1:9000/bkt");
	check_base("http://minio.lan:9000//", NULL, "bkt", 0,
		   "http://bkt.minio.lan:9000");
	check_base("https://gw.example/s3", NULL, "b.c", 0,
		   "https://b.c.gw.example/s3");
	check_base("https://gw.example/s3/", NULL, "My_B", 1,
		   "https://gw.example/s3/My_B");
	/* Not DNS-safe for virtual-host style. */
	assert_int_equal(pfs_s3url_base(NULL, NULL, "My_B", 0, &out, err,
					sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "s3_path_style"));
	assert_int_equal(pfs_s3url_base("ftp://x", NULL, "b", 1, &out, err,
					sizeof(err)), -EINVAL);
	assert_int_equal(pfs_s3url_base("http://u:p@x", NULL, "b", 1, &out,
					err, sizeof(err)), -EINVAL);
	assert_int_equal(pfs_s3url_base("http://x/?a=b", NULL, "b", 1, &out,
					err, sizeof(err)), -EINVAL);
	assert_int_equal(pfs_s3url_base("http://", NULL, "b", 1, &out, err,
					sizeof(err)), -EINVAL);
	assert_int_equal(pfs_s3url_base(NULL, "us-east-1/x", "b", 1, &out,
					err, sizeof(err)), -EINVAL);
}

static void test_object(void **state)
{
	char *u;

	(void)state;
	u = pfs_s3url_object("http://h/b", "dir/a b+c%d~e_f.g-h/\xc3\xa9?#&=");
	assert_string_equal(u, "http://h/b/dir/a%20b%2Bc%25d~e_f.g-h/%C3%A9"
			       "%3F%23%26%3D");
	free(u);
}

static void test_list(void **state)
{
	char *u;

	(void)state;
	u = pfs_s3url_list("http://h/b", "", NULL, NULL, NULL, 0);
	assert_string_equal(u, "http://h/b?encoding-type=url&list-type=2");
	free(u);
	/* Parameters in SigV4 order; '/', '+', '=' and ' ' encoded. */
	u = pfs_s3url_list("https://b.h", "data set/x+y/", "/",
			   "1ueGcx/LPRx+1Tr==", NULL, 7);
	assert_string_equal(u, "https://b.h?continuation-token=1ueGcx%2FLPRx"
			       "%2B1Tr%3D%3D&delimiter=%2F&encoding-type=url&"
			       "list-type=2&max-keys=7&prefix=data%20set%2Fx"
			       "%2By%2F");
	free(u);
	u = pfs_s3url_list("http://h/b", "p/", NULL, NULL, "p/k~1 ", 0);
	assert_string_equal(u, "http://h/b?encoding-type=url&list-type=2&"
			       "prefix=p%2F&start-after=p%2Fk~1%20");
	free(u);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_base),
		cmocka_unit_test(test_object),
		cmocka_unit_test(test_list),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
