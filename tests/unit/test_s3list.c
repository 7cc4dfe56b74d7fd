/* test_s3list.c - ListObjectsV2 page parser. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "../../origin/s3/s3list.h"

#define HEAD "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n" \
	"<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
#define TAIL "</ListBucketResult>"

/* Parses doc in chunks of `chunk` bytes (0: all at once). */
static int parse(const char *doc, size_t chunk, struct pfs_s3list **out)
{
	struct pfs_s3list *p;
	size_t len = strlen(doc), off = 0;
	int rc;

	assert_int_equal(pfs_s3list_create(&p), 0);
	if (!chunk)
		chunk = len;
	do {
		size_t n = len - off < chunk ? len - off : chunk;
		rc = pfs_s3list_feed(p, doc + off, n, off + n == len);
		off += n;
	} while (rc == 0 && off < len);
	*out = p;
	return rc;
}

static const char normal[] = HEAD
	"<Name>bkt</Name><Prefix>data/</Prefix><KeyCount>2</KeyCount>"
	"<MaxKeys>1000</MaxKeys><IsTruncated>false</IsTruncated>"
	"<Contents><Key>data/a.bin</Key>"
	"<LastModified>2009-10-12T17:50:30.000Z</LastModified>"
	"<ETag>&quot;fba9dede5f27731c9771645a39863328&quot;</ETag>"
	"<Size>434234</Size><StorageClass>STANDARD</StorageClass>"
	"<Owner><ID>x</ID><DisplayName>Key</DisplayName></Owner></Contents>"
	"<Contents><Key>data/b/c.txt</Key>"
	"<LastModified>1970-01-01T00:00:00Z</LastModified>"
	"<ETag>\"abc-2\"</ETag><Size>18446744073709551615</Size></Contents>"
	TAIL;

static void check_normal(struct pfs_s3list *p)
{
	const struct pfs_s3list_entry *e;

	assert_int_equal(pfs_s3list_count(p), 2);
	e = pfs_s3list_get(p, 0);
	assert_string_equal(e->key, "data/a.bin");
	assert_int_equal(e->size, 434234);
	assert_int_equal(e->mtime, 1255369830);
	assert_string_equal(e->etag, "\"fba9dede5f27731c9771645a39863328\"");
	e = pfs_s3list_get(p, 1);
	assert_string_equal(e->key, "data/b/c.txt");
	assert_true(e->size == UINT64_MAX);
	assert_int_equal(e->mtime, 0);
	assert_string_equal(e->etag, "\"abc-2\"");
	assert_null(pfs_s3list_get(p, 2));
	assert_false(pfs_s3list_truncated(p));
	assert_null(pfs_s3list_next_token(p));
	assert_int_equal(pfs_s3list_prefix_count(p), 0);
}

static void test_normal(void **state)
{
	struct pfs_s3list *p;

	(void)state;
	assert_int_equal(parse(normal, 0, &p), 0);
	check_normal(p);
	pfs_s3list_destroy(p);
}

static void test_chunked(void **state)
{
	struct pfs_s3list *p;

	(void)state;
	/* One byte at a time: element text split across callbacks. */
	assert_int_equal(parse(normal, 1, &p), 0);
	check_normal(p);
	pfs_s3list_destroy(p);
	assert_int_equal(parse(normal, 7, &p), 0);
	check_normal(p);
	pfs_s3list_destroy(p);
}

static void test_truncated(void **state)
{
	struct pfs_s3list *p;

	(void)state;
	assert_int_equal(parse(HEAD "<IsTruncated>true</IsTruncated>"
			       "<Contents><Key>k</Key><Size>1</Size></Contents>"
			       "<NextContinuationToken>1ueGcxLPRx1Tr/XYExHnhbYLgv"
			       "eDs2J/wm36Hy4vbOwM=</NextContinuationToken>"
			       TAIL, 0, &p), 0);
	assert_true(pfs_s3list_truncated(p));
	assert_string_equal(pfs_s3list_next_token(p),
			    "1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=");
	assert_int_equal(pfs_s3list_count(p), 1);
	/* No LastModified, no ETag. */
	assert_int_equal(pfs_s3list_get(p, 0)->mtime, -1);
	assert_null(pfs_s3list_get(p, 0)->etag);
	pfs_s3list_destroy(p);
}

static void test_empty(void **state)
{
	struct pfs_s3list *p;

	(void)state;
	assert_int_equal(parse(HEAD "<Name>b</Name><Prefix></Prefix>"
			       "<KeyCount>0</KeyCount><IsTruncated>false"
			       "</IsTruncated>" TAIL, 0, &p), 0);
	assert_int_equal(pfs_s3list_count(p), 0);
	assert_false(pfs_s3list_truncated(p));
	pfs_s3list_destroy(p);
	assert_int_equal(parse("<ListBucketResult/>", 0, &p), 0);
	assert_int_equal(pfs_s3list_count(p), 0);
	pfs_s3list_destroy(p);
}

static void expect_error(const char *doc, const char *msg_part)
{
	struct pfs_s3list *p;

	assert_int_equal(parse(doc, 0, &p), -EINVAL);
	if (!strstr(pfs_s3list_error(p), msg_part))
		fail_msg("error \"%s\" lacks \"%s\"", pfs_s3list_error(p),
			 msg_part);
	/* Sticky: a later feed fails too, and accessors return nothing. */
	assert_int_equal(pfs_s3list_feed(p, "", 0, 1), -EINVAL);
	assert_int_equal(pfs_s3list_count(p), 0);
	pfs_s3list_destroy(p);
}

static void test_malformed(void **state)
{
	(void)state;
	expect_error("", "no element found");
	expect_error(HEAD "<Contents><Key>a</Key>", "no element found");
	expect_error(HEAD "<Contents><Key>a</Size></Contents>" TAIL,
		     "mismatched tag");
	expect_error("<Error><Code>AccessDenied</Code></Error>",
		     "root element is <Error>");
	expect_error(HEAD "<Contents><Size>3</Size></Contents>" TAIL,
		     "without <Key>");
	expect_error(HEAD "<Contents><Key>a</Key></Contents>" TAIL,
		     "without <Size>");
	expect_error(HEAD "<Contents><Key>a</Key><Size>-1</Size></Contents>"
		     TAIL, "bad Size");
	expect_error(HEAD "<Contents><Key>a</Key><Size>18446744073709551616"
		     "</Size></Contents>" TAIL, "bad Size");
	expect_error(HEAD "<Contents><Key>a</Key><Size>1</Size><LastModified>"
		     "yesterday</LastModified></Contents>" TAIL,
		     "bad LastModified");
	expect_error(HEAD "<IsTruncated>maybe</IsTruncated>" TAIL,
		     "IsTruncated");
	expect_error(HEAD "<Contents><Key>a&#0;</Key><Size>1</Size>"
		     "</Contents>" TAIL, "reference to invalid character");
	expect_error(HEAD TAIL "<x/>", "junk after document element");
}

static void test_no_entities(void **state)
{
	(void)state;
	expect_error("<?xml version=\"1.0\"?>\n<!DOCTYPE lolz [<!ENTITY lol "
		     "\"lol\"><!ENTITY lol2 \"&lol;&lol;&lol;&lol;\">]>"
		     "<ListBucketResult><Contents><Key>&lol2;</Key>"
		     "</Contents></ListBucketResult>", "DOCTYPE");
}

static void test_huge_element(void **state)
{
	size_t n = PFS_S3LIST_TEXT_MAX + 1;
	char *doc = malloc(n + 256), *w;
	struct pfs_s3list *p;

	(void)state;
	if (!doc)
		abort(); /* assert_non_null() is not noreturn for gcc */
	/* Exactly at the limit: accepted. */
	w = doc + sprintf(doc, HEAD "<Contents><Key>");
	memset(w, 'k', n - 1);
	w += n - 1;
	sprintf(w, "</Key><Size>0</Size></Contents>" TAIL);
	assert_int_equal(parse(doc, 100, &p), 0);
	assert_int_equal(strlen(pfs_s3list_get(p, 0)->key), n - 1);
	pfs_s3list_destroy(p);
	/* One byte over: refused, whether or not the element is captured. */
	w = doc + sprintf(doc, HEAD "<Contents><Key>");
	memset(w, 'k', n);
	w += n;
	sprintf(w, "</Key><Size>0</Size></Contents>" TAIL);
	expect_error(doc, "longer than");
	/* Uncaptured elements may be long: their text is not kept. */
	w = doc + sprintf(doc, HEAD "<Name>");
	memset(w, 'n', n);
	w += n;
	sprintf(w, "</Name>" TAIL);
	assert_int_equal(parse(doc, 0, &p), 0);
	pfs_s3list_destroy(p);
	free(doc);
}

static void test_dir_markers_and_prefixes(void **state)
{
	struct pfs_s3list *p;

	(void)state;
	assert_int_equal(parse(HEAD "<Delimiter>/</Delimiter>"
			       "<Contents><Key>top/</Key><Size>0</Size></Contents>"
			       "<Contents><Key>f</Key><Size>5</Size></Contents>"
			       "<CommonPrefixes><Prefix>a/</Prefix></CommonPrefixes>"
			       "<CommonPrefixes><Prefix>b c/</Prefix>"
			       "</CommonPrefixes>"
			       "<IsTruncated>false</IsTruncated>" TAIL, 0, &p), 0);
	assert_int_equal(pfs_s3list_count(p), 2);
	assert_string_equal(pfs_s3list_get(p, 0)->key, "top/");
	assert_int_equal(pfs_s3list_get(p, 0)->size, 0);
	assert_int_equal(pfs_s3list_prefix_count(p), 2);
	assert_string_equal(pfs_s3list_prefix(p, 0), "a/");
	assert_string_equal(pfs_s3list_prefix(p, 1), "b c/");
	assert_null(pfs_s3list_prefix(p, 2));
	pfs_s3list_destroy(p);
}

static void test_special_chars(void **state)
{
	struct pfs_s3list *p;

	(void)state;
	/* Plain keys: XML entities and UTF-8 decoded, '+' and '%' kept. */
	assert_int_equal(parse(HEAD "<Contents><Key>a&amp;b &lt;c&gt; &apos;"
			       "&quot; &#x263A; \xc3\xa9+%41</Key><Size>1</Size>"
			       "</Contents>" TAIL, 0, &p), 0);
	assert_string_equal(pfs_s3list_get(p, 0)->key,
			    "a&b <c> '\" \xe2\x98\xba \xc3\xa9+%41");
	pfs_s3list_destroy(p);
	/* encoding-type=url, even when EncodingType comes after Contents:
	 * '+' is a space, %2B a plus, %00 becomes 0x7f, bad escapes kept. */
	assert_int_equal(parse(HEAD "<Contents><Key>a+b%2Bc%2Fd%C3%A9%00%zz%4"
			       "</Key><Size>1</Size></Contents>"
			       "<CommonPrefixes><Prefix>p%20q/</Prefix>"
			       "</CommonPrefixes>"
			       "<EncodingType>url</EncodingType>" TAIL, 0, &p), 0);
	assert_string_equal(pfs_s3list_get(p, 0)->key,
			    "a b+c/d\xc3\xa9\x7f%zz%4");
	assert_string_equal(pfs_s3list_prefix(p, 0), "p q/");
	pfs_s3list_destroy(p);
}

static void test_raw_control_bytes(void **state)
{
	struct pfs_s3list *p;

	(void)state;
	/* A server ignoring encoding-type=url sends a key's control bytes raw
	 * (invalid XML): the page parses, the byte becomes 0x7f. */
	assert_int_equal(parse(HEAD "<Contents><Key>a\x01" "b\x1f</Key><Size>1</Size>"
			       "</Contents><Contents><Key>ok\tt</Key><Size>2"
			       "</Size></Contents>" TAIL, 3, &p), 0);
	assert_int_equal(pfs_s3list_count(p), 2);
	assert_string_equal(pfs_s3list_get(p, 0)->key, "a\x7f" "b\x7f");
	assert_string_equal(pfs_s3list_get(p, 1)->key, "ok\tt");
	pfs_s3list_destroy(p);
}

static void test_dates(void **state)
{
	int64_t t;

	(void)state;
	assert_int_equal(pfs_s3list_parse_time("1970-01-01T00:00:00Z", &t), 0);
	assert_int_equal(t, 0);
	assert_int_equal(pfs_s3list_parse_time("2009-10-12T17:50:30.000Z", &t), 0);
	assert_int_equal(t, 1255369830);
	assert_int_equal(pfs_s3list_parse_time("2000-02-29T23:59:59Z", &t), 0);
	assert_int_equal(t, 951868799);
	assert_int_equal(pfs_s3list_parse_time("2038-01-19T03:14:08Z", &t), 0);
	assert_int_equal(t, 2147483648LL); /* past 32-bit time_t */
	assert_int_equal(pfs_s3list_parse_time("1969-12-31T23:59:59Z", &t), 0);
	assert_int_equal(t, -1);
	assert_int_equal(pfs_s3list_parse_time("2024-03-01T02:00:00+02:00", &t), 0);
	assert_int_equal(t, 1709251200);
	assert_int_equal(pfs_s3list_parse_time("2024-02-29T19:00:00.123456-05:00",
					       &t), 0);
	assert_int_equal(t, 1709251200);
	assert_int_equal(pfs_s3list_parse_time("2023-02-29T00:00:00Z", &t), -EINVAL);
	assert_int_equal(pfs_s3list_parse_time("1900-02-29T00:00:00Z", &t), -EINVAL);
	assert_int_equal(pfs_s3list_parse_time("2024-13-01T00:00:00Z", &t), -EINVAL);
	assert_int_equal(pfs_s3list_parse_time("2024-01-01T24:00:00Z", &t), -EINVAL);
	assert_int_equal(pfs_s3list_parse_time("2024-01-01T00:00:00", &t), -EINVAL);
	assert_int_equal(pfs_s3list_parse_time("2024-01-01T00:00:00.Z", &t), -EINVAL);
	assert_int_equal(pfs_s3list_parse_time("2024-01-01T00:00:00Zx", &t), -EINVAL);
	assert_int_equal(pfs_s3list_parse_time("2024-1-01T00:00:00Z", &t), -EINVAL);
	assert_int_equal(pfs_s3list_parse_time("", &t), -EINVAL);
}

/* ---- key ranges ------------------------------------------------------- */

static void test_subdir(void **state)
{
	const char *key = "imagenet/train/c00/x.JPEG";

	(void)state;
	assert_int_equal(pfs_s3list_subdir("", key), strlen("imagenet/"));
	assert_int_equal(pfs_s3list_subdir("imagenet/", key),
			 strlen("imagenet/train/"));
	assert_int_equal(pfs_s3list_subdir("imagenet/train/", key),
			 strlen("imagenet/train/c00/"));
	assert_int_equal(pfs_s3list_subdir("imagenet/train/c00/", key), 0);
	assert_int_equal(pfs_s3list_subdir("other/", key), 0);
	assert_int_equal(pfs_s3list_subdir("", "x.bin"), 0);
	assert_int_equal(pfs_s3list_subdir("", "d/"), 2); /* a marker's dir */
	assert_int_equal(pfs_s3list_subdir("a/", "a//b"), 0); /* no progress */
	assert_int_equal(pfs_s3list_subdir("", "/a"), 0);
}

/* Following a key down from the bucket root ends, one level at a time. */
static void test_subdir_descent(void **state)
{
	const char *key = "a/b/c/d/e/f/x.bin";
	char dir[64] = "";
	size_t n, levels = 0;

	(void)state;
	while ((n = pfs_s3list_subdir(dir, key)) != 0) {
		assert_true(n > strlen(dir));
		memcpy(dir, key, n);
		dir[n] = '\0';
		levels++;
	}
	assert_int_equal(levels, 6);
	assert_string_equal(dir, "a/b/c/d/e/f/");
}

static int has_ptr(const char **v, size_t n, const char *p)
{
	for (size_t i = 0; i < n; i++)
		if (v[i] == p)
			return 1;
	return 0;
}

static void test_pick_bounds_basic(void **state)
{
	static const char *const src[] = {"d/", "b/", "a/", "c/", "b/", "a/"};
	const char *hints[6], *out[8];
	size_t n;

	(void)state;
	memcpy(hints, src, sizeof(src));
	n = pfs_s3list_pick_bounds(hints, 6, NULL, 8, out);
	assert_int_equal(n, 4); /* sorted, duplicates once */
	assert_string_equal(out[0], "a/");
	assert_string_equal(out[1], "b/");
	assert_string_equal(out[2], "c/");
	assert_string_equal(out[3], "d/");
	/* Only moved: every string is still in hints, for its owner to free. */
	for (size_t i = 0; i < 6; i++)
		assert_true(has_ptr(hints, 6, src[i]));

	/* Only those after `after` cut what is still to list. */
	memcpy(hints, src, sizeof(src));
	n = pfs_s3list_pick_bounds(hints, 6, "b/x.bin", 8, out);
	assert_int_equal(n, 2);
	assert_string_equal(out[0], "c/");
	assert_string_equal(out[1], "d/");
	memcpy(hints, src, sizeof(src));
	assert_int_equal(pfs_s3list_pick_bounds(hints, 6, "d/", 8, out), 0);
	assert_int_equal(pfs_s3list_pick_bounds(hints, 6, "zz", 8, out), 0);
	assert_int_equal(pfs_s3list_pick_bounds(hints, 0, NULL, 8, out), 0);
	assert_int_equal(pfs_s3list_pick_bounds(hints, 6, NULL, 0, out), 0);
}

/* The layout that s3rver hides: only the class directories are reported,
 * and the first page already covers part of c00/. */
static void test_pick_bounds_classes(void **state)
{
	char names[100][32];
	const char *hints[100], *out[9];
	size_t n;

	(void)state;
	for (int i = 0; i < 100; i++) {
		snprintf(names[99 - i], sizeof(names[0]), "imagenet/train/c%02d/",
			 i); /* given backwards */
		hints[i] = names[i];
	}
	n = pfs_s3list_pick_bounds(hints, 100, "imagenet/train/c00/x0999.JPEG",
				   9, out);
	assert_int_equal(n, 9); /* 10 ranges, evenly spread over c01..c99 */
	assert_true(strcmp(out[0], "imagenet/train/c00/x0999.JPEG") > 0);
	for (size_t i = 1; i < n; i++)
		assert_true(strcmp(out[i - 1], out[i]) < 0);
	assert_string_equal(out[0], "imagenet/train/c10/");
	assert_string_equal(out[8], "imagenet/train/c90/");
	for (int i = 0; i < 100; i++)
		assert_true(has_ptr(hints, 100, names[i]));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_normal),
		cmocka_unit_test(test_chunked),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_no_entities),
		cmocka_unit_test(test_huge_element),
		cmocka_unit_test(test_dir_markers_and_prefixes),
		cmocka_unit_test(test_special_chars),
		cmocka_unit_test(test_raw_control_bytes),
		cmocka_unit_test(test_dates),
		cmocka_unit_test(test_subdir),
		cmocka_unit_test(test_subdir_descent),
		cmocka_unit_test(test_pick_bounds_basic),
		cmocka_unit_test(test_pick_bounds_classes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
