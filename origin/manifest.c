/* manifest.c - see manifest.h. The parser works in place on a read-only
 * buffer: each line is copied to a bounded scratch buffer, split, checked,
 * and handed to the callback. Any error aborts the whole parse: a
 * malformed manifest must never mount half a dataset. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "manifest.h"

#define LINE_MAX_BYTES 8192

/* Decimal digits only; -ERANGE past UINT64_MAX, -EINVAL otherwise. */
static int parse_u64(const char *s, uint64_t *out)
{
	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	if (*end)
		return -EINVAL;
	if (errno)
		return -ERANGE;
	*out = v;
	return 0;
}

static int parse_i64(const char *s, int64_t *out)
{
	const char *d = *s == '-' ? s + 1 : s;
	if (*d < '0' || *d > '9')
		return -1;
	errno = 0;
	char *end;
	long long v = strtoll(s, &end, 10);
	if (errno || *end)
		return -1;
	*out = v;
	return 0;
}

#define FAIL(...)                                                            \
	do {                                                                 \
		snprintf(err, errcap, __VA_ARGS__);                          \
		return -EINVAL;                                              \
	} while (0)

int pfs_manifest_parse(const char *buf, size_t len, pfs_list_fn fn, void *ctx,
		       char *err, size_t errcap)
{
	char line[LINE_MAX_BYTES];
	size_t pos = 0;
	unsigned long lineno = 0;

	if (errcap)
		err[0] = '\0';
	while (pos < len) {
		const char *start = buf + pos;
		const char *nl = memchr(start, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - start) : len - pos;
		pos += n + (nl ? 1 : 0);
		lineno++;
		if (n > 0 && start[n - 1] == '\r')
			n--;
		if (n >= sizeof(line))
			FAIL("manifest line %lu: longer than %d bytes", lineno,
			     LINE_MAX_BYTES - 1);
		if (memchr(start, '\0', n))
			FAIL("manifest line %lu: NUL byte", lineno);
		memcpy(line, start, n);
		line[n] = '\0';
		if (lineno == 1) {
			if (strcmp(line, PFS_MANIFEST_MAGIC) != 0)
				FAIL("manifest line 1: expected '%s'", PFS_MANIFEST_MAGIC);
			continue;
		}
		char *f[4];
		int nf = 0;
		char *p = line;
		f[nf++] = p;
		while ((p = strchr(p, '\t')) != NULL) {
			*p++ = '\0';
			if (nf == 4)
				FAIL("manifest line %lu: more than 4 fields", lineno);
			f[nf++] = p;
		}
		if (nf != 4)
			FAIL("manifest line %lu: expected PATH<TAB>SIZE<TAB>MTIME<TAB>ETAG",
			     lineno);
		size_t plen = strlen(f[0]);
		int is_dir = plen > 0 && f[0][plen - 1] == '/';
		if (is_dir)
			f[0][--plen] = '\0';
		if (!pfs_path_valid(f[0]))
			FAIL("manifest line %lu: invalid path", lineno);
		uint64_t size;
		int64_t mtime;
		int prc = parse_u64(f[1], &size);
		if (prc == -EINVAL)
			FAIL("manifest line %lu: invalid size '%.40s'", lineno, f[1]);
		/* Refused here, naming the line, rather than mounted and
		 * failing every stat with EIO (see PFS_FILE_SIZE_MAX). */
		if (prc == -ERANGE || size > PFS_FILE_SIZE_MAX)
			FAIL("manifest line %lu: size %.40s too large (max 2^62)", lineno,
			     f[1]);
		if (is_dir && size != 0)
			FAIL("manifest line %lu: directory with non-zero size", lineno);
		if (parse_i64(f[2], &mtime))
			FAIL("manifest line %lu: invalid mtime '%.40s'", lineno, f[2]);
		/* Control characters too: a listing is written back as a
		 * manifest (the SSD tier's copy) and must read back the same. */
		if (strcmp(f[3], "-") && !pfs_etag_listable(f[3]))
			FAIL("manifest line %lu: invalid etag (use '-' for none)", lineno);
		const char *etag = strcmp(f[3], "-") ? f[3] : NULL;
		int rc = fn(ctx, f[0], is_dir, size, mtime, etag);
		/* A file beside a directory of its name is no error: the
		 * file table keeps the directory (catalog/ftable.h). */
		if (rc == -EEXIST)
			FAIL("manifest line %lu: duplicate path '%.200s'", lineno, f[0]);
		if (rc < 0) {
			snprintf(err, errcap, "manifest line %lu: %s", lineno, strerror(-rc));
			return rc;
		}
	}
	if (lineno == 0)
		FAIL("manifest is empty (expected '%s')", PFS_MANIFEST_MAGIC);
	return 0;
}

int pfs_manifest_write_entry(FILE *out, const char *path, int is_dir,
			     uint64_t size, int64_t mtime, const char *etag)
{
	int n = fprintf(out, "%s%s\t%" PRIu64 "\t%" PRId64 "\t%s\n", path,
			is_dir ? "/" : "", is_dir ? 0 : size, mtime,
			etag && *etag ? etag : "-");
	return n < 0 ? -EIO : 0;
}
