/* test_order.c - fs/order.h: the line parser (pfs_order_parse_line) and the
 * order stream: which lines reach the prefetcher as which objects, which
 * count as unknown, and how lines cut across writes, a new order (a write at
 * offset 0, a truncation), over-long lines, large batches and concurrent
 * writers behave.
 *
 * The prefetcher is a fake: the build links this test with
 * -Wl,--wrap=pfs_prefetch_order_begin,--wrap=pfs_prefetch_order_add
 * (tests/unit/meson.build), so order.c's calls land in the __wrap_
 * functions below, which record them in `fake`. The struct pfs_prefetch
 * pointer handed to pfs_order_create() is the address of `fake` and is only
 * compared, never dereferenced. The file table and the views table are real.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "../../catalog/ftable.h"
#include "../../fs/order.h"
#include "../../fs/views.h"
#include "../../prefetch/prefetch.h"
#include "../../util/log.h"

#define LINE_MAX_BYTES 4096 /* as fs/order.c: a line of 4096 bytes or more is unknown */
#define MAX_OBJS (1 << 18)

/* ---- the fake prefetcher ---------------------------------------------- */

/* Streams by name; "the current order" is that of the stream begun last. */
#define FAKE_STREAMS 4
struct fake_stream {
	char name[64];
	uint64_t id;            /* its current order's handle; 0: unused */
	unsigned adds;          /* pfs_prefetch_order_add calls, this order */
	size_t n;               /* objects in its current order */
	uint64_t *objs;         /* MAX_OBJS */
	uint64_t unknown;       /* unknown entries in its current order */
};

static struct {
	unsigned begins;        /* pfs_prefetch_order_begin calls */
	unsigned finds;         /* pfs_prefetch_order_find calls */
	struct fake_stream st[FAKE_STREAMS];
	struct fake_stream *cur;
	int wrong_handle;       /* a call with a pointer other than `fake`'s,
				 * a stale handle or an empty add */
} fake;

#define FAKE_PF ((struct pfs_prefetch *)&fake)

static void fake_reset(void)
{
	for (int i = 0; i < FAKE_STREAMS; i++)
		free(fake.st[i].objs);
	memset(&fake, 0, sizeof(fake));
}

static struct fake_stream *fake_named(const char *name)
{
	if (!name)
		name = PFS_PREFETCH_DEFAULT_STREAM;
	for (int i = 0; i < FAKE_STREAMS; i++)
		if (fake.st[i].id && !strcmp(fake.st[i].name, name))
			return &fake.st[i];
	return NULL;
}

uint64_t __wrap_pfs_prefetch_order_begin(struct pfs_prefetch *p, const char *name);
uint64_t __wrap_pfs_prefetch_order_find(struct pfs_prefetch *p, const char *name);
void __wrap_pfs_prefetch_order_add(struct pfs_prefetch *p, uint64_t stream,
				   const uint64_t *objs, size_t n, size_t unknown);

uint64_t __wrap_pfs_prefetch_order_begin(struct pfs_prefetch *p, const char *name)
{
	if (p != FAKE_PF)
		fake.wrong_handle = 1;
	if (name && !pfs_prefetch_stream_name_ok(name))
		return 0;
	struct fake_stream *s = fake_named(name);
	for (int i = 0; !s && i < FAKE_STREAMS; i++)
		if (!fake.st[i].id)
			s = &fake.st[i];
	assert_non_null(s);
	if (!s->objs)
		s->objs = calloc(MAX_OBJS, sizeof(*s->objs));
	assert_non_null(s->objs);
	snprintf(s->name, sizeof(s->name), "%s", name ? name : PFS_PREFETCH_DEFAULT_STREAM);
	fake.begins++;
	s->id = (uint64_t)fake.begins * FAKE_STREAMS + (uint64_t)(s - fake.st);
	s->adds = 0;
	s->n = 0;
	s->unknown = 0;
	fake.cur = s;
	return s->id;
}

uint64_t __wrap_pfs_prefetch_order_find(struct pfs_prefetch *p, const char *name)
{
	if (p != FAKE_PF)
		fake.wrong_handle = 1;
	fake.finds++;
	struct fake_stream *s = fake_named(name);
	return s ? s->id : 0;
}

void __wrap_pfs_prefetch_order_add(struct pfs_prefetch *p, uint64_t stream,
				   const uint64_t *objs, size_t n, size_t unknown)
{
	struct fake_stream *s = &fake.st[stream % FAKE_STREAMS];
	if (p != FAKE_PF || !stream || s->id != stream)
		fake.wrong_handle = 1;
	s->adds++;
	/* An empty call is a wasted lock round trip in the prefetcher. */
	if (n == 0 && unknown == 0)
		fake.wrong_handle = 1;
	for (size_t i = 0; i < n && s->n < MAX_OBJS; i++)
		s->objs[s->n++] = objs[i];
	s->unknown += unknown;
}

/* ---- fixture: a file table, a views table ------------------------------ */

static struct pfs_ftable *ft;
static struct pfs_views *views;
static uint32_t n_x, n_y, n_d, n_top, n_sp; /* nodes of the files below */

static uint32_t node(const char *path)
{
	uint32_t n = UINT32_MAX;
	assert_int_equal(pfs_ftable_resolve(ft, path, &n), 0);
	return n;
}

static int setup(void **state)
{
	(void)state;
	static const char *const files[] = {
		"a/x.jpg", "a/y.txt", "b/c/d.JPEG", "top", "sp ace/f.jpg",
	};
	pfs_log_set_level(PFS_LOG_ERR); /* bad specs are warned about */
	ft = pfs_ftable_create();
	assert_non_null(ft);
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
		assert_int_equal(pfs_ftable_add(ft, files[i], 0, 5000, 0, NULL), 0);
	assert_int_equal(pfs_ftable_add(ft, "emptydir", 1, 0, 0, NULL), 0);
	assert_int_equal(pfs_ftable_finish(ft), 0);
	assert_int_equal(pfs_views_create(&(struct pfs_views_opts){1, 1u << 20, 0, 0}, &views), 0);
	n_x = node("a/x.jpg");
	n_y = node("a/y.txt");
	n_d = node("b/c/d.JPEG");
	n_top = node("top");
	n_sp = node("sp ace/f.jpg");
	/* Distinct, so a wrong resolution shows. */
	assert_true(n_x != n_y && n_x != n_d && n_x != n_top && n_y != n_top && n_d != n_top);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	pfs_views_destroy(views);
	pfs_ftable_destroy(ft);
	return 0;
}

static struct pfs_order *new_order(struct pfs_views *v)
{
	fake_reset();
	struct pfs_order *o = NULL;
	assert_int_equal(pfs_order_create(ft, FAKE_PF, v, &o), 0);
	assert_non_null(o);
	assert_int_equal(fake.begins, 0); /* creating starts no order */
	return o;
}

#define TID 1000 /* the writer thread of most tests */

static void write_tid(struct pfs_order *o, int32_t tid, uint64_t off, const char *s)
{
	assert_int_equal(pfs_order_write(o, tid, off, s, strlen(s)), 0);
}

static void write_str(struct pfs_order *o, uint64_t off, const char *s)
{
	write_tid(o, TID, off, s);
}

/* Stream st's order is exactly objs[0..n), with `unknown` unknown lines. */
static void expect_in(const struct fake_stream *st, const uint64_t *objs, size_t n,
		      uint64_t unknown)
{
	assert_false(fake.wrong_handle);
	size_t have = st ? st->n : 0;
	assert_int_equal(have, n);
	for (size_t i = 0; i < n; i++)
		if (st->objs[i] != objs[i])
			fail_msg("order entry %zu: obj %#llx, want %#llx", i,
				 (unsigned long long)st->objs[i], (unsigned long long)objs[i]);
	assert_int_equal(st ? st->unknown : 0, unknown);
}

/* The current order (the stream begun last). */
static void expect(const uint64_t *objs, size_t n, uint64_t unknown)
{
	expect_in(fake.cur, objs, n, unknown);
}

#define F(n) PFS_PREFETCH_OBJ(n, 0)
#define EXPECT(unknown, ...)                                                       \
	do {                                                                       \
		const uint64_t want_[] = {__VA_ARGS__};                            \
		expect(want_, sizeof(want_) / sizeof(want_[0]), unknown);         \
	} while (0)
#define EXPECT_NONE(unknown) expect(NULL, 0, unknown)

/* More writers than sessions (64): the one written least recently loses
 * its partial line, the others keep theirs. */
static void test_many_writers(void **state)
{
	(void)state;
	struct pfs_order *o = new_order(views);
	for (int32_t t = 1; t <= 64; t++)
		write_tid(o, t, 0, "#stream r1\n");
	write_tid(o, 1, 0, "#stream r0\ntop\na/"); /* 1: now the most recent */
	write_tid(o, 65, 0, "#stream r1\n");        /* the 65th: 2 goes */
	write_tid(o, 1, 19, "x.jpg\n");
	expect_in(fake_named("r0"), (const uint64_t[]){F(n_top), F(n_x)}, 2, 0);
	write_tid(o, 2, 11, "top\n"); /* 2 lost its order: the unnamed stream's */
	expect_in(fake_named(NULL), (const uint64_t[]){F(n_top)}, 1, 0);
	pfs_order_destroy(o);
}

/* ---- pfs_order_parse_line ---------------------------------------------- */

struct parse_case {
	const char *in;  /* the line, without '\n' */
	size_t n;        /* its length; 0: strlen(in) */
	enum pfs_order_line kind;
	const char *spec, *path; /* expected; NULL: must stay untouched */
};

static void test_parse_line(void **state)
{
	(void)state;
	static const struct parse_case cases[] = {
		{"a/x.jpg", 0, PFS_ORDER_LINE_FILE, NULL, "a/x.jpg"},
		{"/a/x.jpg", 0, PFS_ORDER_LINE_FILE, NULL, "a/x.jpg"},   /* absolute form */
		{"///top", 0, PFS_ORDER_LINE_FILE, NULL, "top"},
		{"a/x.jpg\r", 0, PFS_ORDER_LINE_FILE, NULL, "a/x.jpg"},  /* CRLF */
		{"top\r\r", 0, PFS_ORDER_LINE_FILE, NULL, "top\r"},      /* one '\r' only */
		{"a/x\r.jpg", 0, PFS_ORDER_LINE_FILE, NULL, "a/x\r.jpg"}, /* not at the end */
		{"a/x.jpg/", 0, PFS_ORDER_LINE_FILE, NULL, "a/x.jpg/"},  /* only leading '/' go */
		{" top", 0, PFS_ORDER_LINE_FILE, NULL, " top"},          /* spaces are names */
		{"sp ace/f.jpg", 0, PFS_ORDER_LINE_FILE, NULL, "sp ace/f.jpg"},
		{"a/x.jpgTRAILING", 7, PFS_ORDER_LINE_FILE, NULL, "a/x.jpg"}, /* n bounds it */
		{"ab\0cd", 5, PFS_ORDER_LINE_FILE, NULL, "ab"},          /* ends at a NUL */
		{"", 0, PFS_ORDER_LINE_EMPTY, NULL, NULL},
		{"/", 0, PFS_ORDER_LINE_EMPTY, NULL, NULL},
		{"////", 0, PFS_ORDER_LINE_EMPTY, NULL, NULL},
		{"\r", 0, PFS_ORDER_LINE_EMPTY, NULL, NULL},
		{"//\r", 0, PFS_ORDER_LINE_EMPTY, NULL, NULL},
		{"\0top", 4, PFS_ORDER_LINE_EMPTY, NULL, NULL},
		{"/\0top", 5, PFS_ORDER_LINE_EMPTY, NULL, NULL},
		{".prestofs/views/resize=256,crop=224/a/x.jpg", 0, PFS_ORDER_LINE_VIEW,
		 "resize=256,crop=224", "a/x.jpg"},
		{"/.prestofs/views/decode/a/y.txt\r", 0, PFS_ORDER_LINE_VIEW, "decode", "a/y.txt"},
		{".prestofs/views/s//a", 0, PFS_ORDER_LINE_VIEW, "s", "/a"},
		{".prestofs/views/s/", 0, PFS_ORDER_LINE_VIEW, "s", ""},
		{".prestofs/views//a/x.jpg", 0, PFS_ORDER_LINE_VIEW, "", "a/x.jpg"},
		{".prestofs/views/nospecslash", 0, PFS_ORDER_LINE_BAD, NULL, NULL},
		{".prestofs/views/", 0, PFS_ORDER_LINE_BAD, NULL, NULL},
		{".prestofs/views/x\r", 0, PFS_ORDER_LINE_BAD, NULL, NULL},
		/* Not the views tree: ordinary (unknown) dataset paths. */
		{".prestofs", 0, PFS_ORDER_LINE_FILE, NULL, ".prestofs"},
		{".prestofs/views", 0, PFS_ORDER_LINE_FILE, NULL, ".prestofs/views"},
		{".prestofs/view/s/a", 0, PFS_ORDER_LINE_FILE, NULL, ".prestofs/view/s/a"},
		{"x/.prestofs/views/s/a", 0, PFS_ORDER_LINE_FILE, NULL, "x/.prestofs/views/s/a"},
	};
	static char sentinel[] = "untouched";
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct parse_case *c = &cases[i];
		size_t n = c->n ? c->n : strlen(c->in);
		char buf[128];
		memset(buf, 'Z', sizeof(buf)); /* s[n] is not a NUL: the parser puts one */
		memcpy(buf, c->in, n);
		char *spec = sentinel, *path = sentinel;
		enum pfs_order_line k = pfs_order_parse_line(buf, n, &spec, &path);
		if (k != c->kind)
			fail_msg("case %zu: kind %d, want %d", i, (int)k, (int)c->kind);
		if (c->path) {
			assert_true(path >= buf && path <= buf + n); /* in place */
			if (strcmp(path, c->path))
				fail_msg("case %zu: path '%s', want '%s'", i, path, c->path);
		} else {
			assert_ptr_equal(path, sentinel);
		}
		if (c->spec) {
			assert_true(spec >= buf && spec <= buf + n);
			if (strcmp(spec, c->spec))
				fail_msg("case %zu: spec '%s', want '%s'", i, spec, c->spec);
		} else {
			assert_ptr_equal(spec, sentinel);
		}
		assert_memory_equal(buf + n + 1, "ZZ", 2); /* nothing written past s[n] */
	}
}

/* ---- the stream --------------------------------------------------------- */

static void test_known_and_unknown(void **state)
{
	(void)state;
	struct pfs_order *o = new_order(views);
	write_str(o, 0,
		  "a/x.jpg\n"
		  "missing\n"          /* unknown */
		  "/top\n"             /* absolute form */
		  "\n"                 /* blank: not counted */
		  "//\n"               /* nothing but '/': not counted */
		  "emptydir\n"         /* a directory: unknown */
		  "b/c\n"              /* an implicit directory: unknown */
		  "b//c/d.JPEG\n"      /* repeated '/' */
		  "a/x.jpg/extra\n"    /* below a file: unknown */
		  "A/X.JPG\n"          /* case matters: unknown */
		  "sp ace/f.jpg\n"
		  "top\n");            /* a repeat is an entry again */
	assert_int_equal(fake.begins, 1);
	EXPECT(5, F(n_x), F(n_top), F(n_d), F(n_sp), F(n_top));
	/* One write, one call. */
	assert_int_equal(fake.cur->adds, 1);
	pfs_order_destroy(o);
	pfs_order_destroy(NULL);
}

static void test_crlf(void **state)
{
	(void)state;
	struct pfs_order *o = new_order(views);
	write_str(o, 0, "a/x.jpg\r\ntop\r\n\r\n/b/c/d.JPEG\r\nmissing\r\n");
	EXPECT(1, F(n_x), F(n_top), F(n_d));
	pfs_order_destroy(o);
}

static void test_partial_lines(void **state)
{
	(void)state;
	struct pfs_order *o = new_order(views);
	write_str(o, 0, "a/x");
	/* Nothing complete yet: no call at all. */
	assert_int_equal(fake.begins, 0);
	write_str(o, 3, ".jp");
	assert_int_equal(fake.begins, 0);
	write_str(o, 6, "g\nto");
	assert_int_equal(fake.begins, 1);
	assert_int_equal(fake.cur->adds, 1);
	EXPECT(0, F(n_x));
	write_str(o, 10, "p\r");
	EXPECT(0, F(n_x));
	write_str(o, 12, "\n");
	EXPECT(0, F(n_x), F(n_top));
	/* A last line without its '\n' never counts. */
	write_str(o, 13, "a/y.txt");
	EXPECT(0, F(n_x), F(n_top));
	assert_int_equal(fake.begins, 1); /* writes past 0 continue the order */
	write_str(o, 20, "\n");
	EXPECT(0, F(n_x), F(n_top), F(n_y));
	pfs_order_destroy(o);
}

/* Any cut of the same bytes into writes gives the same order. */
static void test_any_cut(void **state)
{
	(void)state;
	static const char text[] =
		"a/x.jpg\nmissing\r\n\n/top\n.prestofs/views/resize=256,crop=224/a/x.jpg\n"
		"b/c/d.JPEG\r\n.prestofs/views/bad=spec/a/x.jpg\nsp ace/f.jpg\n";
	const size_t len = strlen(text);
	struct pfs_order *o = new_order(views);
	write_str(o, 0, text);
	size_t n = fake.cur->n;
	uint64_t objs[16], unknown = fake.cur->unknown;
	assert_int_equal(n, 5);
	assert_int_equal(unknown, 2);
	memcpy(objs, fake.cur->objs, n * sizeof(objs[0]));
	for (size_t step = 1; step <= 13; step++) {
		for (size_t off = 0; off < len; off += step) {
			size_t k = len - off < step ? len - off : step;
			assert_int_equal(pfs_order_write(o, TID, off, text + off, k), 0);
		}
		expect(objs, n, unknown);
	}
	assert_int_equal(fake.begins, 14);
	pfs_order_destroy(o);
}

static void test_new_order_replaces(void **state)
{
	(void)state;
	struct pfs_order *o = new_order(views);
	write_str(o, 0, "a/x.jpg\nmissing\na/y");
	EXPECT(1, F(n_x));
	/* A write at offset 0 starts a new order and drops the partial line
	 * ("a/ytop" would be unknown). */
	write_str(o, 0, "top\n");
	assert_int_equal(fake.begins, 2);
	EXPECT(0, F(n_top));
	write_str(o, 4, "b/c/d.JPEG\na/");
	EXPECT(0, F(n_top), F(n_d));
	/* A truncation drops the partial line too; the order begins with the
	 * next write's first line (which may name a stream). */
	pfs_order_reset(o, TID);
	assert_int_equal(fake.begins, 2);
	write_str(o, 0, "x.jpg\ntop\n"); /* would be "a/x.jpg" had the partial stayed */
	assert_int_equal(fake.begins, 3);
	EXPECT(1, F(n_top));
	/* An empty write at 0 begins nothing yet; a blank first line begins
	 * an empty order. */
	assert_int_equal(pfs_order_write(o, TID, 0, "", 0), 0);
	assert_int_equal(fake.begins, 3);
	write_str(o, 0, "\n");
	assert_int_equal(fake.begins, 4);
	EXPECT_NONE(0);
	assert_string_equal(fake.cur->name, PFS_PREFETCH_DEFAULT_STREAM);
	pfs_order_destroy(o);
}

/* "#stream NAME" as the first line picks the stream; anywhere else it is
 * a path (unknown); a bad name is counted and the order goes to the
 * unnamed stream. */
static void test_stream_line(void **state)
{
	(void)state;
	struct pfs_order *o = new_order(views);
	write_str(o, 0, "#stream rank0-pid7\na/x.jpg\n#stream rank1\ntop\n");
	assert_int_equal(fake.begins, 1);
	assert_string_equal(fake.cur->name, "rank0-pid7");
	EXPECT(1, F(n_x), F(n_top));
	/* The same name again: that stream's next order, nothing else moves. */
	write_tid(o, TID + 1, 0, "a/y.txt\n");
	struct fake_stream *def = fake.cur;
	assert_string_equal(def->name, PFS_PREFETCH_DEFAULT_STREAM);
	write_str(o, 0, "#stream rank0-pid7\r\ntop\n");
	assert_string_equal(fake.cur->name, "rank0-pid7");
	EXPECT(0, F(n_top));
	expect_in(def, (const uint64_t[]){F(n_y)}, 1, 0);
	/* Cut across writes: the name is taken when its line is complete. */
	write_str(o, 0, "#str");
	write_str(o, 4, "eam r2\nb/c/d.JPEG\n");
	assert_string_equal(fake.cur->name, "r2");
	EXPECT(0, F(n_d));
	/* Not a valid name: unknown, the unnamed stream. */
	write_str(o, 0, "#stream bad name\na/x.jpg\n");
	assert_ptr_equal(fake.cur, def);
	EXPECT(1, F(n_x));
	write_str(o, 0, "#stream \ntop\n");
	assert_ptr_equal(fake.cur, def);
	EXPECT(1, F(n_top));
	/* "#stream default" is the unnamed stream. */
	write_str(o, 0, "#stream default\na/y.txt\n");
	assert_ptr_equal(fake.cur, def);
	EXPECT(0, F(n_y));
	/* Without a prefix space it is a path. */
	write_str(o, 0, "#streamx\n");
	assert_ptr_equal(fake.cur, def);
	EXPECT_NONE(1);
	pfs_order_destroy(o);
}

/* Two writers (DDP ranks) writing their orders in pieces at the same time:
 * each piece goes to its writer's stream, by thread id. */
static void test_writers_interleaved(void **state)
{
	(void)state;
	struct pfs_order *o = new_order(views);
	write_tid(o, 11, 0, "#stream r0\na/x");
	write_tid(o, 22, 0, "#stream r1\nto");
	write_tid(o, 11, 14, ".jpg\nto");
	write_tid(o, 22, 13, "p\na/y.txt\n");
	write_tid(o, 11, 20, "p\n");
	struct fake_stream *r0 = fake_named("r0"), *r1 = fake_named("r1");
	assert_non_null(r0);
	assert_non_null(r1);
	expect_in(r0, (const uint64_t[]){F(n_x), F(n_top)}, 2, 0);
	expect_in(r1, (const uint64_t[]){F(n_top), F(n_y)}, 2, 0);
	/* A truncation by one writer leaves the other's partial line alone. */
	write_tid(o, 11, 0, "#stream r0\nb/c/");
	write_tid(o, 22, 23, "b/c/");
	pfs_order_reset(o, 11);
	write_tid(o, 22, 27, "d.JPEG\n");
	expect_in(r1, (const uint64_t[]){F(n_top), F(n_y), F(n_d)}, 3, 0);
	expect_in(r0, NULL, 0, 0);
	/* Writers the kernel cannot name (thread id 0: another pid
	 * namespace) are one writer: still whole lines and orders. */
	write_tid(o, 0, 0, "#stream r0\na/x");
	write_tid(o, 0, 13, ".jpg\n");
	expect_in(r0, (const uint64_t[]){F(n_x)}, 1, 0);
	/* A writer never seen, past offset 0: the unnamed stream, appended. */
	write_tid(o, 33, 0, "top\n");
	write_tid(o, 44, 100, "a/y.txt\n");
	expect_in(fake_named(NULL), (const uint64_t[]){F(n_top), F(n_y)}, 2, 0);
	pfs_order_destroy(o);
}

static void test_long_lines(void **state)
{
	(void)state;
	char *buf = malloc(3 * LINE_MAX_BYTES);
	assert_non_null(buf);
	struct pfs_order *o = new_order(views);
	/* The longest line kept: LINE_MAX_BYTES - 1 bytes, leading '/'s then top. */
	memset(buf, '/', LINE_MAX_BYTES - 1 - 3);
	memcpy(buf + LINE_MAX_BYTES - 1 - 3, "top\n", 4);
	assert_int_equal(pfs_order_write(o, TID, 0, buf, LINE_MAX_BYTES), 0);
	EXPECT(0, F(n_top));
	/* ... and with a '\r' that is dropped. */
	memcpy(buf + LINE_MAX_BYTES - 1 - 4, "top\r\n", 5);
	assert_int_equal(pfs_order_write(o, TID, 1, buf, LINE_MAX_BYTES), 0);
	EXPECT(0, F(n_top), F(n_top));
	/* One byte more: unknown, counted once, and the next line is intact. */
	memset(buf, '/', LINE_MAX_BYTES - 3);
	memcpy(buf + LINE_MAX_BYTES - 3, "top\na/x.jpg\n", 12);
	assert_int_equal(pfs_order_write(o, TID, 2, buf, LINE_MAX_BYTES + 9), 0);
	EXPECT(1, F(n_top), F(n_top), F(n_x));
	/* Far longer, across three writes: still one unknown. */
	memset(buf, 'q', 3 * LINE_MAX_BYTES);
	assert_int_equal(pfs_order_write(o, TID, 3, buf, LINE_MAX_BYTES + 7), 0);
	assert_int_equal(pfs_order_write(o, TID, 4, buf, LINE_MAX_BYTES), 0);
	EXPECT(1, F(n_top), F(n_top), F(n_x));
	buf[5] = '\n';
	memcpy(buf + 6, "a/y.txt\n", 8);
	assert_int_equal(pfs_order_write(o, TID, 5, buf, 14), 0);
	EXPECT(2, F(n_top), F(n_top), F(n_x), F(n_y));
	/* A new order forgets an over-long partial line. */
	memset(buf, 'q', 2 * LINE_MAX_BYTES);
	assert_int_equal(pfs_order_write(o, TID, 6, buf, 2 * LINE_MAX_BYTES), 0);
	write_str(o, 0, "top\n");
	EXPECT(0, F(n_top));
	pfs_order_destroy(o);
	free(buf);
}

static void test_views(void **state)
{
	(void)state;
	uint32_t rc_idx = UINT32_MAX, dec_idx = UINT32_MAX;
	assert_int_equal(pfs_views_spec(views, "resize=256,crop=224", &rc_idx), 0);
	assert_int_equal(pfs_views_spec(views, "decode", &dec_idx), 0);
	assert_true(rc_idx != dec_idx);
	assert_true(pfs_views_transforms("x.jpg"));
	assert_true(pfs_views_transforms("d.JPEG"));
	assert_false(pfs_views_transforms("y.txt"));
	struct pfs_order *o = new_order(views);
	write_str(o, 0,
		  ".prestofs/views/resize=256,crop=224/a/x.jpg\n"
		  "/.prestofs/views/decode/b/c/d.JPEG\r\n"
		  ".prestofs/views/decode/a/y.txt\n"      /* passed through: the file */
		  ".prestofs/views/decode//a/x.jpg\n"
		  ".prestofs/views/bad=spec/a/x.jpg\n"    /* unknown spec */
		  ".prestofs/views/decode/missing.jpg\n"  /* unknown file */
		  ".prestofs/views/decode/a\n"            /* a directory */
		  ".prestofs/views/nospecslash\n"         /* BAD */
		  ".prestofs/views/\n"                    /* BAD */
		  ".prestofs/views/decode/\n"             /* the root: a directory */
		  ".prestofs\n");                         /* not in the table */
	EXPECT(7, PFS_PREFETCH_OBJ(n_x, rc_idx + 1), PFS_PREFETCH_OBJ(n_d, dec_idx + 1),
	       F(n_y), PFS_PREFETCH_OBJ(n_x, dec_idx + 1));
	pfs_order_destroy(o);
	/* Without a views table, every view path is unknown; files still resolve. */
	o = new_order(NULL);
	write_str(o, 0,
		  ".prestofs/views/resize=256,crop=224/a/x.jpg\n"
		  ".prestofs/views/decode/a/y.txt\n"
		  "a/x.jpg\n");
	EXPECT(2, F(n_x));
	pfs_order_destroy(o);
}

/* More lines in one write than fit one batch: several calls, in order. */
static void test_batches(void **state)
{
	(void)state;
	enum { LINES = 1000 };
	static const char *const names[] = {"a/x.jpg\n", "top\n", "missing\n", "a/y.txt\n"};
	uint32_t nodes[] = {n_x, n_top, UINT32_MAX, n_y};
	size_t cap = LINES * 16, len = 0;
	char *text = malloc(cap);
	assert_non_null(text);
	uint64_t *want = malloc(LINES * sizeof(*want));
	assert_non_null(want);
	size_t nwant = 0, unknown = 0;
	for (size_t i = 0; i < LINES; i++) {
		size_t k = (i * 7 + i / 5) % 4;
		size_t l = strlen(names[k]);
		memcpy(text + len, names[k], l);
		len += l;
		if (nodes[k] == UINT32_MAX)
			unknown++;
		else
			want[nwant++] = F(nodes[k]);
	}
	assert_true(nwant > 600);
	struct pfs_order *o = new_order(views);
	assert_int_equal(pfs_order_write(o, TID, 0, text, len), 0);
	expect(want, nwant, unknown);
	/* Handed over in batches as the lines are read: more than one call
	 * (so the flush inside the write ran), not one call per line. */
	assert_true(fake.cur->adds >= 2);
	assert_true(fake.cur->adds <= nwant / 64);
	/* Unknown lines alone are still reported. */
	write_str(o, 0, "missing\nmissing\nmissing\n");
	EXPECT_NONE(3);
	assert_int_equal(fake.cur->adds, 1);
	pfs_order_destroy(o);
	free(want);
	free(text);
}

/* prefetch=off: lines are parsed, nothing is called. */
static void test_no_prefetcher(void **state)
{
	(void)state;
	fake_reset();
	struct pfs_order *o = NULL;
	assert_int_equal(pfs_order_create(ft, NULL, views, &o), 0);
	write_str(o, 0, "#stream r0\na/x.jpg\nmissing\ntop");
	write_str(o, 19, "\n");
	write_tid(o, 5, 7, "top\n");
	pfs_order_reset(o, TID);
	assert_int_equal(fake.begins, 0);
	assert_int_equal(fake.finds, 0);
	for (int i = 0; i < FAKE_STREAMS; i++)
		assert_int_equal(fake.st[i].adds, 0);
	pfs_order_destroy(o);
}

/* Writers at once (at offsets past 0, whole lines per write): every line
 * lands once, under the order's lock (run under TSan: suite 'threads';
 * without the lock, lines mixed in the partial-line buffer show as unknown
 * ones even without TSan). */
enum { WRITERS = 4, WRITES = 1000, REPEAT = 20 };
static const char group[] = "top\nmissing\na/x.jpg\n";

struct writer {
	struct pfs_order *o;
	pthread_barrier_t *start;
	int32_t tid;
};

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	char buf[REPEAT * sizeof(group)];
	size_t len = 0;
	for (int k = 0; k < REPEAT; k++, len += sizeof(group) - 1)
		memcpy(buf + len, group, sizeof(group) - 1);
	pthread_barrier_wait(w->start);
	for (int i = 0; i < WRITES; i++)
		if (pfs_order_write(w->o, w->tid, 1 + (uint64_t)i, buf, len))
			abort();
	return NULL;
}

static void test_concurrent_writers(void **state)
{
	(void)state;
	struct pfs_order *o = new_order(views);
	write_str(o, 0, "a/y.txt\n");
	pthread_t th[WRITERS];
	pthread_barrier_t start;
	struct writer w[WRITERS];
	pthread_barrier_init(&start, NULL, WRITERS);
	for (int i = 0; i < WRITERS; i++) {
		w[i] = (struct writer){.o = o, .start = &start, .tid = 2000 + i};
		assert_int_equal(pthread_create(&th[i], NULL, writer_main, &w[i]), 0);
	}
	for (int i = 0; i < WRITERS; i++)
		assert_int_equal(pthread_join(th[i], NULL), 0);
	pthread_barrier_destroy(&start);
	assert_int_equal(fake.begins, 1);
	struct fake_stream *c = fake.cur;
	assert_int_equal(c->n, 1 + 2 * WRITERS * WRITES * REPEAT);
	assert_int_equal(c->unknown, WRITERS * WRITES * REPEAT);
	assert_int_equal(c->objs[0], F(n_y));
	/* Each write's lines stay together: top then x.jpg. */
	for (size_t i = 1; i < c->n; i += 2) {
		assert_int_equal(c->objs[i], F(n_top));
		assert_int_equal(c->objs[i + 1], F(n_x));
	}
	pfs_order_destroy(o);
	fake_reset();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_line),
		cmocka_unit_test(test_known_and_unknown),
		cmocka_unit_test(test_crlf),
		cmocka_unit_test(test_partial_lines),
		cmocka_unit_test(test_any_cut),
		cmocka_unit_test(test_new_order_replaces),
		cmocka_unit_test(test_stream_line),
		cmocka_unit_test(test_writers_interleaved),
		cmocka_unit_test(test_many_writers),
		cmocka_unit_test(test_long_lines),
		cmocka_unit_test(test_views),
		cmocka_unit_test(test_batches),
		cmocka_unit_test(test_no_prefetcher),
		cmocka_unit_test(test_concurrent_writers),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
