/* fuzz_resp.c - origin/respcheck.c, validator.c, retry.c: what xfer.c
 * makes of an HTTP answer's header lines (status line, Content-Range,
 * ETag, Last-Modified, Retry-After) and its verdict on a ranged GET.
 *
 * Input: "SIZE OFF LEN GOT PINNED\n" (decimal numbers; PINNED a validator
 * or "-" for none; a first line that does not read so means a 1000-byte
 * object, range 0-99, 100 bytes received, nothing pinned), then header
 * lines as curl delivers them, each handed over in an exact-size buffer
 * with its '\n'. The status curl reports is the last status line's.
 *
 * Invariants: the verdict is one of 0, -EAGAIN, -ESTALE, -ENOENT,
 * -EACCES, -EIO; 0 only for a 200 or 206 with every byte asked for and a
 * well-formed validator equal to the pinned one (a 200 is the whole
 * object, whatever the range); -ESTALE for a length other than the listed
 * size names that length (Content-Range's total, or a 200's Content-Length); a validator made from any
 * ETag and Last-Modified is pfs_validator_valid() and gives a condition
 * that fits; Retry-After is -1 or a delay >= 0, and backoff stays in
 * [0, PFS_RETRY_CAP].
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "fuzz.h"
#include "catalog/listing.h"
#include "origin/respcheck.h"
#include "origin/retry.h"
#include "origin/validator.h"

static void check_validator(const char *etag, const char *lm)
{
	char v[PFS_ETAG_MAX], cond[PFS_ETAG_MAX + 32];

	if (pfs_validator_make(etag, lm, v, sizeof(v)) < 0)
		return;
	FUZZ_CHECK(pfs_validator_valid(v));
	int c = pfs_validator_condition(v, cond, sizeof(cond));
	FUZZ_CHECK(c == 0 || c == 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *p = (const char *)data, *end = p + size;
	uint64_t osize = 1000, off = 0;
	size_t len = 100, got = 100;
	char pinned[PFS_ETAG_MAX] = "", first[256];

	const char *nl = memchr(p, '\n', size);
	if (nl && (size_t)(nl - p) < sizeof(first)) {
		uint64_t a, b, c, d;
		char v[PFS_ETAG_MAX];
		memcpy(first, p, (size_t)(nl - p));
		first[nl - p] = '\0';
		if (sscanf(first, "%" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %127s",
			   &a, &b, &c, &d, v) == 5 && a <= PFS_FILE_SIZE_MAX && b < a && c > 0 &&
		    c <= (1u << 20) && c <= a - b && d <= c + 1) {
			osize = a;
			off = b;
			len = (size_t)c;
			got = (size_t)d;
			if (strcmp(v, "-") && pfs_validator_valid(v))
				snprintf(pinned, sizeof(pinned), "%s", v);
			p = nl + 1;
		}
	}

	struct pfs_resp r;
	pfs_resp_init(&r);
	while (p < end) {
		nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) + 1 : (size_t)(end - p);
		char *line = malloc(n ? n : 1); /* exact size: no NUL after it */
		if (!line)
			abort();
		memcpy(line, p, n);
		pfs_resp_header(&r, line, n);
		free(line);
		p += n;
	}
	FUZZ_CHECK(strlen(r.content_range) < sizeof(r.content_range));
	FUZZ_CHECK(strlen(r.etag) < sizeof(r.etag));
	FUZZ_CHECK(strlen(r.last_modified) < sizeof(r.last_modified));
	FUZZ_CHECK(r.retry_after == -1 || r.retry_after >= 0);
	double d = pfs_retry_delay(3, r.retry_after, 0.5);
	FUZZ_CHECK(d >= 0 && d <= PFS_RETRY_CAP);

	char v[PFS_ETAG_MAX] = "";
	uint64_t total = 0;
	int rc = pfs_resp_check_range(&r, r.status, osize, off, len, got, pinned, v, &total);
	FUZZ_CHECK(rc == 0 || rc == -EAGAIN || rc == -ESTALE || rc == -ENOENT ||
		   rc == -EACCES || rc == -EIO);
	if (rc == 0) {
		FUZZ_CHECK(r.status == 200 || r.status == 206);
		FUZZ_CHECK(got == len && !r.etag_bad && pfs_validator_valid(v));
		FUZZ_CHECK(!pinned[0] || !strcmp(pinned, v));
		FUZZ_CHECK(total == osize);
	}
	if (rc == -ESTALE && total != osize) /* a 200 says it by Content-Length */
		FUZZ_CHECK(r.status == 206 || r.status == 416 ||
			   (r.status == 200 && r.content_length >= 0 &&
			    (uint64_t)r.content_length == total));

	check_validator(r.etag, r.last_modified);
	/* The raw input as an ETag and as a date, up to its first NUL. */
	char raw[512];
	size_t rn = size < sizeof(raw) - 1 ? size : sizeof(raw) - 1;
	memcpy(raw, data, rn);
	raw[rn] = '\0';
	check_validator(raw, NULL);
	check_validator(NULL, raw);
	double ra = pfs_retry_after_parse(raw);
	FUZZ_CHECK(ra == -1 || ra >= 0);
	return 0;
}
