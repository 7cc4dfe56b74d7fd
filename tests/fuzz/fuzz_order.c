/* fuzz_order.c - fs/order.c: what a loader writes to MOUNT/.prestofs/order,
 * in writes of any size, resolved against a small file table and a views
 * table and handed to a prefetcher (no workers: nothing is fetched).
 *
 * Input: the bytes written; the first write (at offset 0: a new order)
 * takes the first third, the rest goes in writes of 1 + size % 61 bytes.
 *
 * Invariants: pfs_order_parse_line() splits inside its buffer, a dataset
 * path never starts with '/', a spec holds no '/'; the prefetcher's order
 * streams count (entries + unknown) one per complete line that is not
 * empty, whatever the cuts between writes (a line of LINE_MAX bytes or
 * more counts once, as unknown), except a first line "#stream NAME" with
 * a valid NAME, which names the stream (one stream then, of that name).
 * A fresh prefetcher per input, so streams of earlier inputs do not count.
 */
#include <string.h>

#include "fuzz.h"
#include "cache/epoch.h"
#include "catalog/ftable.h"
#include "fs/order.h"
#include "fs/views.h"
#include "prefetch/prefetch.h"
#include "util/log.h"

#define LINE_MAX_BYTES 4096 /* as fs/order.c */

static int fetch(void *ctx, uint64_t obj, uint64_t blk, size_t len)
{
	(void)ctx; (void)obj; (void)blk; (void)len;
	return 0;
}

static int room(void *ctx, uint64_t len, uint64_t inflight)
{
	(void)ctx; (void)len; (void)inflight;
	return 0;
}

static struct pfs_ftable *ft;
static struct pfs_views *views;
static struct pfs_epoch *ep;

static void setup(void)
{
	static const char *const files[] = {
		"a/x.jpg", "a/y.txt", "b/c/d.JPEG", "train/n01/img 1.jpg", "top",
		".prestofs-like/f.jpg",
	};
	pfs_log_set_level(PFS_LOG_ERR); /* bad specs are warned about */
	ft = pfs_ftable_create();
	if (!ft)
		abort();
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
		if (pfs_ftable_add(ft, files[i], 0, 5000, 0, NULL))
			abort();
	if (pfs_ftable_add(ft, "empty", 1, 0, 0, NULL) || pfs_ftable_finish(ft) ||
	    pfs_epoch_create(pfs_ftable_count(ft), &ep) ||
	    pfs_views_create(&(struct pfs_views_opts){1, 1u << 20, 0, 0}, &views))
		abort();
	/* Kept for the process's life: libFuzzer runs inputs in one process. */
}

/* The stream a first line s[0..n) names, into name (NULL if none: not a
 * "#stream " line, or a name that is not valid). */
static const char *stream_of(const uint8_t *s, size_t n, char *name)
{
	if (n + 1 >= LINE_MAX_BYTES || n < 8 || memcmp(s, "#stream ", 8))
		return NULL;
	size_t m = s[n - 1] == '\r' ? n - 1 : n;
	memcpy(name, s + 8, m - 8);
	name[m - 8] = '\0'; /* and it ends at a NUL inside */
	return pfs_prefetch_stream_name_ok(name) ? name : NULL;
}

/* 1 if the complete line s[0..n) counts in the order (known or not). */
static int counts(const uint8_t *s, size_t n)
{
	char buf[LINE_MAX_BYTES];
	char *spec = NULL, *path = NULL;

	if (n + 1 >= LINE_MAX_BYTES)
		return 1; /* too long: unknown */
	memcpy(buf, s, n);
	enum pfs_order_line k = pfs_order_parse_line(buf, n, &spec, &path);
	switch (k) {
	case PFS_ORDER_LINE_EMPTY:
	case PFS_ORDER_LINE_BAD:
		break;
	case PFS_ORDER_LINE_FILE:
		FUZZ_CHECK(path >= buf && path < buf + n && path[0] && path[0] != '/');
		break;
	case PFS_ORDER_LINE_VIEW:
		FUZZ_CHECK(spec >= buf && spec <= buf + n && !strchr(spec, '/'));
		FUZZ_CHECK(path > spec && path <= buf + n);
		break;
	default:
		abort();
	}
	/* The model: '\r' at the end and leading '/' dropped, ends at a NUL. */
	size_t m = n && s[n - 1] == '\r' ? n - 1 : n, i = 0;
	while (i < m && s[i] == '/')
		i++;
	int empty = i == m || s[i] == '\0';
	FUZZ_CHECK(empty == (k == PFS_ORDER_LINE_EMPTY));
	return !empty;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!ft)
		setup();
	struct pfs_prefetch *pf;
	struct pfs_order *order;
	struct pfs_prefetch_opts o = {.ft = ft, .epoch = ep, .block_size = 4096,
				      .workers = 0, .window = 4, .fetch = fetch,
				      .room = room};
	if (pfs_prefetch_create(&o, &pf) || pfs_order_create(ft, pf, views, &order))
		abort();
	size_t first = size / 3, step = 1 + size % 61;

	pfs_order_write(order, 7, 0, (const char *)data, first);
	for (size_t off = first; off < size; off += step) {
		size_t n = size - off < step ? size - off : step;
		pfs_order_write(order, 7, off, (const char *)data + off, n);
	}
	uint64_t want = 0, lines = 0;
	char name[LINE_MAX_BYTES];
	const char *named = NULL;
	for (size_t start = 0; start < size; lines++) {
		const uint8_t *nl = memchr(data + start, '\n', size - start);
		if (!nl)
			break;
		size_t n = (size_t)(nl - data) - start;
		if (lines == 0)
			named = stream_of(data + start, n, name);
		if (lines != 0 || !named) /* a stream line is not an entry */
			want += (uint64_t)counts(data + start, n);
		start = (size_t)(nl - data) + 1;
	}
	struct pfs_prefetch_stats st;
	pfs_prefetch_stats(pf, &st);
	struct pfs_prefetch_stream_stats ss[2];
	size_t ns = pfs_prefetch_streams(pf, ss, 2);
	FUZZ_CHECK(ns == (lines ? 1u : 0u));
	FUZZ_CHECK(!ns || !strcmp(ss[0].name, named ? named : PFS_PREFETCH_DEFAULT_STREAM));
	if (st.order_entries + st.order_unknown != want) {
		fprintf(stderr, "order: %llu entries + %llu unknown, want %llu\n",
			(unsigned long long)st.order_entries,
			(unsigned long long)st.order_unknown, (unsigned long long)want);
		abort();
	}
	pfs_order_destroy(order);
	pfs_prefetch_destroy(pf);
	return 0;
}
