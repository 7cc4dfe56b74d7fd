/* fuzz_htmlindex.c - origin/http/htmlindex.c: an HTML directory index page
 * and the resolution of its links against the page's URL.
 *
 * Input: the page; when its first line starts with "http://" or
 * "https://", that line is the page's URL and the page follows it, else
 * the URL is DEFAULT_URL. The page is parsed twice, with room for many
 * entries and for only 3.
 *
 * Invariants: the result is 0, -EINVAL (a bad URL only), -E2BIG or
 * -ENOMEM, with nothing to free on error; entries are sorted by name with
 * no repeats (but for a file and a directory of one name, in that order),
 * at most max_entries; a name is one path component: not
 * empty, no '/', not "." or ".."; a directory has no size; a size of kind
 * NONE is 0. pfs_htmlindex_parse_info() on the whole input gives a
 * consistent size and kind too.
 */
#include <errno.h>
#include <string.h>

#include "fuzz.h"
#include "origin/http/htmlindex.h"

#define DEFAULT_URL "http://127.0.0.1:8080/data/sub%20dir/"

static void check(const char *page, size_t len, const char *url, size_t max)
{
	struct pfs_htmlindex_entry *v = NULL;
	size_t n = 12345;
	int rc = pfs_htmlindex_parse(page, len, url, max, &v, &n);

	if (rc) {
		FUZZ_CHECK(rc == -EINVAL || rc == -E2BIG || rc == -ENOMEM);
		FUZZ_CHECK(v == NULL && n == 0);
		FUZZ_CHECK(rc != -EINVAL || strcmp(url, DEFAULT_URL));
		return;
	}
	FUZZ_CHECK(n <= max);
	for (size_t i = 0; i < n; i++) {
		const struct pfs_htmlindex_entry *e = &v[i];
		FUZZ_CHECK(e->name && e->name[0] && !strchr(e->name, '/'));
		FUZZ_CHECK(strcmp(e->name, ".") && strcmp(e->name, ".."));
		/* Sorted, no repeats; "x" (file) then "x" (directory) is allowed. */
		int c = i ? strcmp(v[i - 1].name, e->name) : -1;
		FUZZ_CHECK(c < 0 || (c == 0 && !v[i - 1].is_dir && e->is_dir));
		FUZZ_CHECK(!e->is_dir || (e->size_kind == PFS_HTMLINDEX_SIZE_NONE && !e->size));
		FUZZ_CHECK(e->size_kind != PFS_HTMLINDEX_SIZE_NONE || e->size == 0);
	}
	pfs_htmlindex_free(v, n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *page = (const char *)data;
	size_t len = size;
	char url[1024] = DEFAULT_URL;

	if ((size >= 7 && !memcmp(data, "http://", 7)) ||
	    (size >= 8 && !memcmp(data, "https://", 8))) {
		const char *nl = memchr(data, '\n', size);
		size_t ul = nl ? (size_t)(nl - page) : size;
		if (ul >= sizeof(url) || memchr(data, '\0', ul))
			return 0;
		memcpy(url, data, ul);
		url[ul] = '\0';
		page += ul + (nl ? 1 : 0);
		len -= ul + (nl ? 1 : 0);
	}
	check(page, len, url, 100000);
	check(page, len, url, 3);

	int64_t mtime;
	enum pfs_htmlindex_size kind;
	uint64_t sz;
	pfs_htmlindex_parse_info((const char *)data, size, &mtime, &kind, &sz);
	FUZZ_CHECK(kind == PFS_HTMLINDEX_SIZE_NONE || kind == PFS_HTMLINDEX_SIZE_ROUNDED ||
		   kind == PFS_HTMLINDEX_SIZE_EXACT);
	FUZZ_CHECK(kind != PFS_HTMLINDEX_SIZE_NONE || sz == 0);
	return 0;
}
