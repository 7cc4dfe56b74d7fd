/* test_respcheck.c - origin/respcheck: header lines as curl delivers them
 * and the verdict on a ranged GET (what xfer.c retries, refuses or keeps). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "origin/respcheck.h"

/* Feeds "\n"-separated lines, each in an exact-size buffer with its "\n". */
static void feed(struct pfs_resp *r, const char *text)
{
	while (*text) {
		const char *nl = strchr(text, '\n');
		size_t n = nl ? (size_t)(nl - text) + 1 : strlen(text);
		char *line = malloc(n);
		assert_non_null(line);
		memcpy(line, text, n);
		pfs_resp_header(r, line, n);
		free(line);
		text += n;
	}
}

static void test_headers(void **state)
{
	(void)state;
	struct pfs_resp r;
	char v[16];
	pfs_resp_init(&r);
	assert_int_equal(r.status, 0);
	assert_true(r.retry_after == -1);
	/* A redirect's headers are forgotten at the next status line. */
	feed(&r, "HTTP/1.1 302 Found\r\nETag: \"old\"\r\nRetry-After: 9\r\n\r\n"
		 "HTTP/1.1 206 Partial Content\r\ncontent-range:  bytes 0-9/100 \r\n"
		 "etag:\t\"new\"\r\nLast-Modified: Tue, 12 Mar 2024 10:11:12 GMT\r\n");
	assert_int_equal(r.status, 206);
	assert_string_equal(r.content_range, "bytes 0-9/100");
	assert_string_equal(r.etag, "\"new\"");
	assert_string_equal(r.last_modified, "Tue, 12 Mar 2024 10:11:12 GMT");
	assert_true(r.retry_after == -1);
	feed(&r, "HTTP/1.1 503 Busy\r\nRetry-After: 3\r\n");
	assert_int_equal(r.status, 503);
	assert_true(r.retry_after == 3);
	assert_string_equal(r.etag, "");
	/* An ETag that does not fit is remembered as bad, not truncated. */
	char big[PFS_ETAG_MAX + 16] = "ETag: ";
	memset(big + 6, 'e', PFS_ETAG_MAX);
	feed(&r, big);
	assert_true(r.etag_bad);
	/* A status line without its end (fuzz_resp): read inside the line. */
	feed(&r, "HTTP/1.1 20");
	assert_int_equal(r.status, 20);
	assert_int_equal(pfs_resp_header_value("ETagX: 1", 8, "ETag", v, sizeof(v)), 0);
	assert_int_equal(pfs_resp_header_value("etag: 12345678901234567890", 26, "ETag", v,
					       sizeof(v)), -1);
}

static int verdict(const char *headers, long status, uint64_t size, uint64_t off, size_t len,
		   size_t got, const char *pinned, uint64_t *total)
{
	struct pfs_resp r;
	char v[PFS_ETAG_MAX];
	pfs_resp_init(&r);
	feed(&r, headers);
	return pfs_resp_check_range(&r, status, size, off, len, got, pinned, v, total);
}

static void test_range_verdict(void **state)
{
	(void)state;
	uint64_t t;
	const char *ok = "Content-Range: bytes 10-19/100\r\nETag: \"a\"\r\n";
	assert_int_equal(verdict(ok, 206, 100, 10, 10, 10, "", &t), 0);
	assert_int_equal(t, 100);
	assert_int_equal(verdict(ok, 206, 100, 10, 10, 10, "\"a\"", &t), 0);
	assert_int_equal(verdict(ok, 206, 100, 10, 10, 10, "\"b\"", &t), -ESTALE);
	assert_int_equal(verdict(ok, 206, 100, 10, 10, 9, "", &t), -EAGAIN);  /* short */
	assert_int_equal(verdict(ok, 206, 100, 0, 10, 10, "", &t), -EAGAIN);  /* other range */
	assert_int_equal(verdict(ok, 206, 101, 10, 10, 10, "", &t), -ESTALE); /* other size */
	assert_int_equal(t, 100);
	/* Total "*": only a validator tells another version. */
	assert_int_equal(verdict("Content-Range: bytes 10-19/*\r\n", 206, 100, 10, 10, 10, "",
				 &t), -EIO);
	assert_int_equal(verdict("Content-Range: bytes 10-19/*\r\nETag: \"a\"\r\n", 206, 100,
				 10, 10, 10, "", &t), 0);
	assert_int_equal(verdict("Content-Range: bytes 10-19/-1\r\n", 206, 100, 10, 10, 10, "",
				 &t), -EAGAIN);
	assert_int_equal(verdict("", 206, 100, 10, 10, 10, "", &t), -EAGAIN);
	/* A 200 is the whole object (Range ignored); xfer.c kept the part. */
	assert_int_equal(verdict("Content-Length: 100\r\n", 200, 100, 0, 100, 100, "", &t), 0);
	assert_int_equal(verdict("Content-Length: 100\r\n", 200, 100, 10, 10, 10, "", &t), 0);
	assert_int_equal(verdict("Content-Length: 100\r\n", 200, 100, 10, 10, 9, "", &t),
			 -EAGAIN);
	assert_int_equal(verdict("Content-Length: 90\r\n", 200, 100, 10, 10, 10, "", &t),
			 -ESTALE);
	assert_int_equal(t, 90);
	assert_int_equal(verdict("", 200, 100, 10, 10, 10, "", &t), -EIO); /* no length */
	assert_int_equal(verdict("Last-Modified: Wed, 21 Oct 2015 07:28:00 GMT\r\n", 200, 100,
				 10, 10, 10, "", &t), 0);
	assert_int_equal(verdict("Content-Range: bytes */90\r\n", 416, 100, 95, 5, 0, "", &t),
			 -ESTALE);
	assert_int_equal(t, 90);
	assert_int_equal(verdict("", 412, 100, 0, 10, 0, "\"a\"", &t), -ESTALE);
	assert_int_equal(verdict("", 503, 100, 0, 10, 0, "", &t), -EAGAIN);
	assert_int_equal(verdict("", 404, 100, 0, 10, 0, "", &t), -ENOENT);
	assert_int_equal(verdict("", 403, 100, 0, 10, 0, "", &t), -EACCES);
	/* A malformed ETag cannot be served. */
	assert_int_equal(verdict("Content-Range: bytes 0-9/100\r\nETag: \"a\"b\"\r\n", 206, 100,
				 0, 10, 10, "", &t), -EIO);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_headers),
		cmocka_unit_test(test_range_verdict),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
