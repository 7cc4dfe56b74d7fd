/* fuzz_manifest.c - origin/manifest.c: pfs_manifest_parse() on arbitrary
 * bytes, each entry added to a file table (catalog/ftable) as at mount.
 *
 * Invariants: every entry handed out has a valid path, a directory has
 * size 0, a size is at most PFS_FILE_SIZE_MAX, an ETag is NULL or
 * pfs_etag_listable() (not "-", no control characters); a refusal names
 * its line; a manifest that parsed, written back with
 * pfs_manifest_write_entry(), parses to the same entries.
 */
#include <errno.h>
#include <string.h>

#include "fuzz.h"
#include "catalog/ftable.h"
#include "catalog/listing.h"
#include "origin/manifest.h"

#define MAX_SAVED 4096

struct saved {
	char *path;
	int is_dir;
	uint64_t size;
	int64_t mtime;
	char *etag;
};

struct ctx {
	struct pfs_ftable *ft; /* NULL on the second pass */
	struct saved *v;
	size_t n;
	size_t check;          /* second pass: the next entry to compare */
	int overflow;
};

static int on_entry(void *p, const char *path, int is_dir, uint64_t size, int64_t mtime,
		    const char *etag)
{
	struct ctx *c = p;

	FUZZ_CHECK(pfs_path_valid(path));
	FUZZ_CHECK(!is_dir || size == 0);
	FUZZ_CHECK(size <= PFS_FILE_SIZE_MAX);
	FUZZ_CHECK(!etag || pfs_etag_listable(etag));
	if (!c->ft) { /* the written-back manifest: the same entries */
		FUZZ_CHECK(c->check < c->n);
		const struct saved *s = &c->v[c->check++];
		FUZZ_CHECK(!strcmp(s->path, path) && s->is_dir == is_dir && s->size == size &&
			   s->mtime == mtime);
		FUZZ_CHECK((!s->etag && !etag) || (s->etag && etag && !strcmp(s->etag, etag)));
		return 0;
	}
	int rc = pfs_ftable_add(c->ft, path, is_dir, size, mtime, etag);
	if (rc < 0)
		return rc;
	if (c->n == MAX_SAVED) {
		c->overflow = 1;
		return 0;
	}
	struct saved *s = &c->v[c->n];
	s->path = strdup(path);
	s->etag = etag ? strdup(etag) : NULL;
	if (!s->path || (etag && !s->etag))
		abort();
	s->is_dir = is_dir;
	s->size = size;
	s->mtime = mtime;
	c->n++;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ctx c = {0};
	char err[512];

	c.ft = pfs_ftable_create();
	c.v = calloc(MAX_SAVED, sizeof(*c.v));
	if (!c.ft || !c.v)
		abort();
	int rc = pfs_manifest_parse((const char *)data, size, on_entry, &c, err, sizeof(err));
	if (rc) {
		FUZZ_CHECK(rc == -EINVAL || rc == -ENOMEM);
		FUZZ_CHECK(!strncmp(err, "manifest", 8));
	} else {
		FUZZ_CHECK(pfs_ftable_finish(c.ft) == 0);
	}
	if (rc == 0 && !c.overflow) {
		char *text = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&text, &len);
		if (!f)
			abort();
		fprintf(f, "%s\n", PFS_MANIFEST_MAGIC);
		for (size_t i = 0; i < c.n; i++)
			FUZZ_CHECK(pfs_manifest_write_entry(f, c.v[i].path, c.v[i].is_dir,
							    c.v[i].size, c.v[i].mtime,
							    c.v[i].etag) == 0);
		fclose(f);
		struct pfs_ftable *ft = c.ft;
		c.ft = NULL;
		rc = pfs_manifest_parse(text, len, on_entry, &c, err, sizeof(err));
		if (rc)
			fprintf(stderr, "written back: %s\n", err);
		FUZZ_CHECK(rc == 0 && c.check == c.n);
		c.ft = ft;
		free(text);
	}
	for (size_t i = 0; i < c.n; i++) {
		free(c.v[i].path);
		free(c.v[i].etag);
	}
	free(c.v);
	pfs_ftable_destroy(c.ft);
	return 0;
}
