/* fuzz_s3list.c - origin/s3/s3list.c: one ListObjectsV2 answer page fed
 * to the expat parser in three chunks (cut at a third and two thirds of
 * the input, so element and character boundaries fall anywhere), then the
 * key-range helpers on what it returned.
 *
 * Invariants: the result is 0, -EINVAL or -ENOMEM, with a message on
 * error and nothing readable after it; a page that parsed has at most
 * PFS_S3LIST_MAX_ENTRIES entries and prefixes, every key a string; a later
 * feed fails; pfs_s3list_subdir() answers 0 or a length longer than its
 * dir that ends in '/'; pfs_s3list_pick_bounds() returns strictly
 * increasing bounds above `after`, at most `max`, all taken from the hints;
 * an entry's ETag, as the listing passes it on, reads back from the
 * manifest text the listing is kept as.
 */
#include <errno.h>
#include <string.h>

#include "fuzz.h"
#include "catalog/listing.h"
#include "origin/manifest.h"
#include "origin/s3/s3list.h"

static int got_etag(void *ctx, const char *path, int is_dir, uint64_t size, int64_t mtime,
		    const char *etag)
{
	(void)path; (void)is_dir; (void)size; (void)mtime;
	const char *want = ctx;
	FUZZ_CHECK((!want && !etag) || (want && etag && !strcmp(want, etag)));
	return 0;
}

/* The listing is kept as manifest text (the SSD tier's copy, `prestofs
 * index`): an ETag the S3 backend passes on must read back as itself. */
static void check_etag_listable(const char *etag)
{
	/* As pfs_origin_list() passes it on. */
	const char *listed = etag && pfs_etag_listable(etag) ? etag : NULL;
	char *text = NULL, err[256];
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	if (!f)
		abort();
	fprintf(f, "%s\n", PFS_MANIFEST_MAGIC);
	FUZZ_CHECK(pfs_manifest_write_entry(f, "k", 0, 1, 2, listed) == 0);
	fclose(f);
	int rc = pfs_manifest_parse(text, len, got_etag, (void *)listed, err, sizeof(err));
	if (rc)
		fprintf(stderr, "listed ETag does not read back: %s\n", err);
	FUZZ_CHECK(rc == 0);
	free(text);
}

static void check_bounds(const char **hints, size_t n, const char *after, size_t max)
{
	const char **copy = malloc((n ? n : 1) * sizeof(*copy));
	const char **out = malloc((max ? max : 1) * sizeof(*out));

	if (!copy || !out)
		abort();
	memcpy(copy, hints, n * sizeof(*copy));
	size_t k = pfs_s3list_pick_bounds(copy, n, after, max, out);
	FUZZ_CHECK(k <= max && k <= n);
	for (size_t i = 0; i < k; i++) {
		FUZZ_CHECK(!after || strcmp(out[i], after) > 0);
		FUZZ_CHECK(i == 0 || strcmp(out[i - 1], out[i]) < 0);
		int found = 0;
		for (size_t j = 0; j < n && !found; j++)
			found = out[i] == hints[j];
		FUZZ_CHECK(found);
	}
	/* Only moved: every hint is still there. */
	for (size_t j = 0; j < n; j++) {
		int found = 0;
		for (size_t i = 0; i < n && !found; i++)
			found = copy[i] == hints[j];
		FUZZ_CHECK(found);
	}
	free(copy);
	free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pfs_s3list *p;
	const char *buf = (const char *)data;
	size_t a = size / 3, b = 2 * size / 3;
	int rc;

	if (pfs_s3list_create(&p))
		abort();
	rc = pfs_s3list_feed(p, buf, a, 0);
	if (!rc)
		rc = pfs_s3list_feed(p, buf + a, b - a, 0);
	if (!rc)
		rc = pfs_s3list_feed(p, buf + b, size - b, 1);
	if (rc) {
		FUZZ_CHECK(rc == -EINVAL || rc == -ENOMEM);
		FUZZ_CHECK(pfs_s3list_error(p)[0] != '\0');
		FUZZ_CHECK(pfs_s3list_count(p) == 0 && pfs_s3list_prefix_count(p) == 0);
		FUZZ_CHECK(pfs_s3list_next_token(p) == NULL && !pfs_s3list_truncated(p));
		pfs_s3list_destroy(p);
		return 0;
	}
	size_t n = pfs_s3list_count(p), np = pfs_s3list_prefix_count(p);
	FUZZ_CHECK(n + np <= PFS_S3LIST_MAX_ENTRIES);
	FUZZ_CHECK(pfs_s3list_get(p, n) == NULL && pfs_s3list_prefix(p, np) == NULL);
	const char *tok = pfs_s3list_next_token(p);
	FUZZ_CHECK(!tok || (tok[0] && strlen(tok) <= PFS_S3LIST_TEXT_MAX));

	const char **hints = malloc((n + np + 1) * sizeof(*hints));
	if (!hints)
		abort();
	size_t nh = 0;
	for (size_t i = 0; i < n; i++) {
		const struct pfs_s3list_entry *e = pfs_s3list_get(p, i);
		FUZZ_CHECK(e && e->key && strlen(e->key) <= PFS_S3LIST_TEXT_MAX);
		FUZZ_CHECK(!e->etag || strlen(e->etag) <= PFS_S3LIST_TEXT_MAX);
		check_etag_listable(e->etag);
		hints[nh++] = e->key;
		const char *dirs[] = {"", "a/", e->key};
		for (size_t d = 0; d < 3; d++) {
			size_t l = pfs_s3list_subdir(dirs[d], e->key);
			FUZZ_CHECK(l == 0 || (l > strlen(dirs[d]) && l <= strlen(e->key) &&
					      e->key[l - 1] == '/'));
		}
	}
	for (size_t i = 0; i < np; i++) {
		const char *s = pfs_s3list_prefix(p, i);
		FUZZ_CHECK(s && strlen(s) <= PFS_S3LIST_TEXT_MAX);
		hints[nh++] = s;
	}
	check_bounds(hints, nh, NULL, 7);
	check_bounds(hints, nh, nh ? hints[0] : "m", 3);
	free(hints);

	FUZZ_CHECK(pfs_s3list_feed(p, "<x/>", 4, 1) == -EINVAL);
	pfs_s3list_destroy(p);
	return 0;
}
