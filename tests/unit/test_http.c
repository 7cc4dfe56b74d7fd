/* test_http.c - the HTTP backend (origin/http/http.c) against a fake xfer.
 *
 * The pfs_xfer_* functions that http.c calls land here: the build links
 * this test with -Wl,--wrap for each (origin/http/meson.build), so the
 * __wrap_ functions below answer: each GET and HEAD from a table, counted,
 * which lets the tests assert the request pattern (one GET per directory,
 * a HEAD only where the index has no exact size).
 * The crawl runs on many threads: the fake records surprises under a lock
 * and the test thread asserts them afterwards.
 */
#include <ctype.h>
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
#include "../../catalog/listing.h"
#include "../../origin/backend.h"
#include "../../origin/xfer.h"
#include "../../util/stats.h"

struct fake_get {
	const char *url;
	int rc;
	const char *body;
	int count;
};

struct fake_head {
	const char *url;
	int rc;
	uint64_t size;
	int64_t mtime;
	const char *etag;
	int count;
};

static pthread_mutex_t fake_lock = PTHREAD_MUTEX_INITIALIZER;
static struct fake_get *gets;   /* NULL-url terminated; guarded by fake_lock */
static struct fake_head *heads; /* NULL-url terminated; guarded by fake_lock */
static int unexpected;          /* guarded by fake_lock */
static char last_range_url[512];

int __wrap_pfs_xfer_create(const struct pfs_xfer_opts *opts, struct pfs_xfer **out);
void __wrap_pfs_xfer_destroy(struct pfs_xfer *x);
int __wrap_pfs_xfer_get(struct pfs_xfer *x, const char *url, size_t cap, char **body,
			size_t *len);
int __wrap_pfs_xfer_head(struct pfs_xfer *x, const char *url, uint64_t *size,
			 int64_t *mtime, char *etag);
void __wrap_pfs_xfer_spill_release(struct pfs_origin_spill *spill);
int __wrap_pfs_xfer_get_range(struct pfs_xfer *x, const char *url, uint64_t size,
			      uint64_t off, size_t len, void *buf, char *etag,
			      struct pfs_origin_spill *spill, uint64_t deadline_ns);

int __wrap_pfs_xfer_create(const struct pfs_xfer_opts *opts, struct pfs_xfer **out)
{
	assert_null(opts->sigv4);
	*out = (struct pfs_xfer *)malloc(1);
	return *out ? 0 : -ENOMEM;
}

void __wrap_pfs_xfer_destroy(struct pfs_xfer *x)
{
	free(x);
}

int __wrap_pfs_xfer_get(struct pfs_xfer *x, const char *url, size_t cap, char **body,
		 size_t *len)
{
	(void)x;
	(void)cap;
	pthread_mutex_lock(&fake_lock);
	for (struct fake_get *g = gets; g && g->url; g++) {
		if (strcmp(g->url, url) != 0)
			continue;
		g->count++;
		pthread_mutex_unlock(&fake_lock);
		if (g->rc)
			return g->rc;
		*body = strdup(g->body);
		*len = strlen(g->body);
		return *body ? 0 : -ENOMEM;
	}
	unexpected++;
	print_message("unexpected GET %s\n", url);
	pthread_mutex_unlock(&fake_lock);
	return -ENOENT;
}

int __wrap_pfs_xfer_head(struct pfs_xfer *x, const char *url, uint64_t *size,
		  int64_t *mtime, char *etag)
{
	(void)x;
	pthread_mutex_lock(&fake_lock);
	for (struct fake_head *h = heads; h && h->url; h++) {
		if (strcmp(h->url, url) != 0)
			continue;
		h->count++;
		pthread_mutex_unlock(&fake_lock);
		if (h->rc)
			return h->rc;
		*size = h->size;
		*mtime = h->mtime;
		snprintf(etag, PFS_ETAG_MAX, "%s", h->etag ? h->etag : "");
		return 0;
	}
	unexpected++;
	print_message("unexpected HEAD %s\n", url);
	pthread_mutex_unlock(&fake_lock);
	return -ENOENT;
}

void __wrap_pfs_xfer_spill_release(struct pfs_origin_spill *spill)
{
	(void)spill; /* never filled here */
}

int __wrap_pfs_xfer_get_range(struct pfs_xfer *x, const char *url, uint64_t size,
		       uint64_t off, size_t len, void *buf, char *etag,
		       struct pfs_origin_spill *spill, uint64_t deadline_ns)
{
	(void)x;
	(void)spill;
	(void)deadline_ns;
	(void)size;
	(void)etag;
	snprintf(last_range_url, sizeof(last_range_url), "%s", url);
	memset(buf, 'z', len);
	return off + len <= size ? 0 : -EINVAL;
}

/* --- listing collector --------------------------------------------------- */

struct listed {
	char text[4096];
	int n;
	int fail_at; /* return -EEXIST at this entry (1-based), 0: never */
};

static int collect(void *ctx, const char *path, int is_dir, uint64_t size,
		   int64_t mtime, const char *etag)
{
	struct listed *l = ctx;
	size_t o = strlen(l->text);

	if (++l->n == l->fail_at)
		return -EEXIST;
	snprintf(l->text + o, sizeof(l->text) - o, "%s|%d|%llu|%lld|%s\n", path,
		 is_dir, (unsigned long long)size, (long long)mtime,
		 etag ? etag : "-");
	return 0;
}

static struct pfs_origin *make(const char *url, const char *manifest)
{
	struct pfs_origin_opts opts = {.manifest = manifest, .timeout = 1};
	struct pfs_origin *o = NULL;

	assert_int_equal(pfs_origin_http_create(url, &opts, &o), 0);
	return o;
}

/* pfs_origin_destroy() without linking origin.c (and every backend). */
static void destroy(struct pfs_origin *o)
{
	char *name = o->name;

	o->ops->destroy(o);
	free(name);
}

static void setup_fakes(struct fake_get *g, struct fake_head *h)
{
	gets = g;
	heads = h;
	unexpected = 0;
}

#define B "http://user:pw@h:8080/data/"
#define T1 "12-Mar-2024 10:11"
#define T1_S "1710238260"

static const char ROOT_PAGE[] =
	"<html><body><pre><a href=\"../\">../</a>\n"
	"<a href=\"sub%20dir/\">sub dir/</a>  " T1 "  -\n"
	"<a href=\"a.txt\">a.txt</a>          " T1 "  5\n"
	"<a href=\"r.bin\">r.bin</a>          " T1 "  121K\n"
	"<a href=\"gone.bin\">gone.bin</a>    " T1 "  2M\n"
	"<a href=\"bad%01name\">bad</a>       " T1 "  1\n"
	"<a href=\"prestofs.manifest\">m</a>  " T1 "  9\n"
	"</pre></body></html>\n";
static const char SUB_PAGE[] =
	"<pre><a href=\"../\">../</a>\n"
	"<a href=\"deep/\">deep/</a>    " T1 "  -\n"
	"<a href=\"%C3%BC%23.txt\">x</a> " T1 "  0\n</pre>";

/* A crawl: URL without '/', credentials, HEADs for rounded sizes only,
 * a vanished file skipped, invalid names skipped, root manifest name
 * skipped, sorted output, secret-free name. */
static void test_crawl(void **state)
{
	(void)state;
	struct fake_get g[] = {
		{B "prestofs.manifest", -ENOENT, NULL, 0},
		{B, 0, ROOT_PAGE, 0},
		{B "sub%20dir/", 0, SUB_PAGE, 0},
		{B "sub%20dir/deep/", 0, "<html>empty</html>", 0},
		{NULL, 0, NULL, 0},
	};
	struct fake_head h[] = {
		{B "r.bin", 0, 123457, 1700000000, "\"e1\"", 0},
		{B "gone.bin", -ENOENT, 0, 0, NULL, 0},
		{NULL, 0, 0, 0, NULL, 0},
	};
	struct listed l = {.text = ""};

	setup_fakes(g, h);
	struct pfs_origin *o = make("http://user:pw@h:8080/data", NULL);
	assert_string_equal(pfs_origin_name(o), "http://h:8080/data/");
	assert_int_equal(o->ops->list(o, collect, &l), 0);
	assert_string_equal(l.text,
		"a.txt|0|5|" T1_S "|-\n"
		"r.bin|0|123457|1700000000|\"e1\"\n"
		"sub dir|1|0|" T1_S "|-\n"
		"sub dir/deep|1|0|" T1_S "|-\n"
		"sub dir/\xc3\xbc#.txt|0|0|" T1_S "|-\n");
	assert_int_equal(unexpected, 0);
	for (int i = 0; g[i].url; i++)
		assert_int_equal(g[i].count, 1); /* one GET per directory */
	assert_int_equal(h[0].count, 1);
	assert_int_equal(h[1].count, 1);

	/* Reads go to base + escaped path. */
	char buf[4], etag[PFS_ETAG_MAX] = "";
	struct pfs_origin_req req = {0};
	assert_int_equal(o->ops->read(o, "sub dir/\xc3\xbc#.txt", 10, 2, 4, buf, etag, &req), 0);
	assert_string_equal(last_range_url, B "sub%20dir/%C3%BC%23.txt");
	destroy(o);
}

/* The default manifest wins when present: no index page is fetched. */
static void test_default_manifest(void **state)
{
	(void)state;
	struct fake_get g[] = {
		{"https://h/p/prestofs.manifest", 0,
		 "#prestofs-manifest 1\nd/\t0\t5\t-\nd/f\t3\t7\t\"x\"\n", 0},
		{NULL, 0, NULL, 0},
	};
	struct listed l = {.text = ""};

	setup_fakes(g, NULL);
	struct pfs_origin *o = make("https://h/p/", NULL);
	assert_int_equal(o->ops->list(o, collect, &l), 0);
	assert_string_equal(l.text, "d|1|0|5|-\nd/f|0|3|7|\"x\"\n");
	assert_int_equal(unexpected, 0);
	destroy(o);
}

/* A catch-all page served for the manifest, or a 403, means "crawl". */
static void test_manifest_fallbacks(void **state)
{
	(void)state;
	static const int rcs[] = {0, -EACCES};

	for (int i = 0; i < 2; i++) {
		struct fake_get g[] = {
			{"http://h/prestofs.manifest", rcs[i], "<html>home</html>", 0},
			{"http://h/", 0, "<a href=\"f\">f</a> 2024-03-12 10:11 7\n", 0},
			{NULL, 0, NULL, 0},
		};
		struct listed l = {.text = ""};

		setup_fakes(g, NULL);
		struct pfs_origin *o = make("http://h", NULL);
		assert_int_equal(o->ops->list(o, collect, &l), 0);
		assert_string_equal(l.text, "f|0|7|" T1_S "|-\n");
		assert_int_equal(g[1].count, 1);
		destroy(o);
	}
}

/* -o manifest=URL that fails does not fall back to crawling. */
static void test_explicit_manifest(void **state)
{
	(void)state;
	struct fake_get g[] = {
		{"http://m/list?sig=1", -ENOENT, NULL, 0},
		{"http://m/good", 0, "#prestofs-manifest 1\nx\t1\t0\t-\n", 0},
		{"http://m/bad", 0, "#prestofs-manifest 1\nx\tNaN\t0\t-\n", 0},
		{NULL, 0, NULL, 0},
	};
	struct listed l = {.text = ""};

	setup_fakes(g, NULL);
	struct pfs_origin *o = make("http://h/", "http://m/list?sig=1");
	assert_int_equal(o->ops->list(o, collect, &l), -EIO);
	assert_int_equal(l.n, 0);
	destroy(o);

	o = make("http://h/", "http://m/good");
	assert_int_equal(o->ops->list(o, collect, &l), 0);
	assert_string_equal(l.text, "x|0|1|0|-\n");
	destroy(o);

	o = make("http://h/", "http://m/bad");
	assert_int_equal(o->ops->list(o, collect, &l), -EINVAL);
	destroy(o);

	o = make("http://h/", "/nonexistent/prestofs-test.manifest");
	assert_int_equal(o->ops->list(o, collect, &l), -EIO);
	destroy(o);
	assert_int_equal(unexpected, 0);
}

/* Errors: root index refused, the callback's error. A HEAD failing for
 * one of two files leaves that file out (see test_head_failures). */
static void test_errors(void **state)
{
	(void)state;
	struct fake_get g[] = {
		{"http://h/prestofs.manifest", -ENOENT, NULL, 0},
		{"http://h/", -EACCES, NULL, 0},
		{NULL, 0, NULL, 0},
	};
	struct listed l = {.text = ""};

	setup_fakes(g, NULL);
	struct pfs_origin *o = make("http://h/", NULL);
	assert_int_equal(o->ops->list(o, collect, &l), -EACCES);
	destroy(o);

	struct fake_get g2[] = {
		{"http://h/prestofs.manifest", -ENOENT, NULL, 0},
		{"http://h/", 0, "<a href=\"a\">a</a><a href=\"b\">b</a>", 0},
		{NULL, 0, NULL, 0},
	};
	struct fake_head h2[] = {
		{"http://h/a", 0, 1, 1, NULL, 0},
		{"http://h/b", -EIO, 0, 0, NULL, 0},
		{NULL, 0, 0, 0, NULL, 0},
	};
	setup_fakes(g2, h2);
	o = make("http://h/", NULL);
	assert_int_equal(o->ops->list(o, collect, &l), 0);
	assert_string_equal(l.text, "a|0|1|1|-\n");
	destroy(o);

	h2[1].rc = 0;
	h2[1].size = 2;
	memset(&l, 0, sizeof(l));
	l.fail_at = 2;
	o = make("http://h/", NULL);
	assert_int_equal(o->ops->list(o, collect, &l), -EEXIST);
	assert_int_equal(l.n, 2);
	destroy(o);
	assert_int_equal(unexpected, 0);
}

/* A name linked both as a file and as a directory (an index made from an
 * object store holding "x" and "x/c"): the directory and what is below it
 * are listed, the file is skipped. Before, the parser merged the two into
 * one entry and either the file or the whole subtree vanished, depending
 * on qsort's order. */
static void test_file_and_dir_of_one_name(void **state)
{
	(void)state;
	struct fake_get g[] = {
		{"http://h/prestofs.manifest", -ENOENT, NULL, 0},
		{"http://h/", 0, "<pre><a href=\"x\">x</a> " T1 "  5\n"
				 "<a href=\"x/\">x/</a> " T1 "  -\n"
				 "<a href=\"y\">y</a> " T1 "  7\n</pre>", 0},
		{"http://h/x/", 0, "<pre><a href=\"c\">c</a> " T1 "  3\n</pre>", 0},
		{NULL, 0, NULL, 0},
	};
	struct pfs_fnode info;
	uint32_t node;

	for (int round = 0; round < 2; round++) { /* the links in either order */
		if (round)
			g[1].body = "<pre><a href=\"x/\">x/</a> " T1 "  -\n"
				    "<a href=\"y\">y</a> " T1 "  7\n"
				    "<a href=\"x\">x</a> " T1 "  5\n</pre>";
		setup_fakes(g, NULL);
		struct pfs_ftable *ft = pfs_ftable_create();
		assert_non_null(ft);
		struct pfs_origin *o = make("http://h/", NULL);
		assert_int_equal(o->ops->list(o, pfs_ftable_add, ft), 0);
		assert_int_equal(pfs_ftable_finish(ft), 0);
		assert_int_equal(pfs_ftable_resolve(ft, "x", &node), 0);
		assert_int_equal(pfs_ftable_get(ft, node, &info), 0);
		assert_true(info.is_dir);
		assert_int_equal(pfs_ftable_resolve(ft, "x/c", &node), 0);
		assert_int_equal(pfs_ftable_get(ft, node, &info), 0);
		assert_int_equal(info.size, 3);
		assert_int_equal(pfs_ftable_resolve(ft, "y", &node), 0);
		assert_int_equal(pfs_ftable_get(ft, node, &info), 0);
		assert_int_equal(info.size, 7);
		destroy(o);
		pfs_ftable_destroy(ft);
		assert_int_equal(unexpected, 0);
	}
}

/* An ETag no listing can carry (a TAB in a HEAD answer; an S3 page can
 * hold one as "&#9;") or "-" is dropped by pfs_origin_list(): the listing
 * is kept as manifest text, which must read back as the same listing. */
static void test_unlistable_etag(void **state)
{
	(void)state;
	struct fake_get g[] = {
		{"http://h/prestofs.manifest", -ENOENT, NULL, 0},
		{"http://h/", 0, "<a href=\"a\">a</a><a href=\"b\">b</a><a href=\"c\">c</a>", 0},
		{NULL, 0, NULL, 0},
	};
	struct fake_head h[] = {
		{"http://h/a", 0, 1, 1, "\"x\ty\"", 0},
		{"http://h/b", 0, 2, 1, "-", 0},
		{"http://h/c", 0, 3, 1, "\"ok\"", 0},
		{NULL, 0, 0, 0, NULL, 0},
	};
	struct listed l = {.text = ""};

	setup_fakes(g, h);
	struct pfs_origin *o = make("http://h/", NULL);
	assert_int_equal(pfs_origin_list(o, collect, &l), 0);
	assert_string_equal(l.text, "a|0|1|1|-\nb|0|2|1|-\nc|0|3|1|\"ok\"\n");
	destroy(o);
	assert_int_equal(unexpected, 0);
}

/* A HEAD without a usable answer (an error after xfer's retries, 403, or
 * 404 for a listed file) leaves that one file out and counts it in
 * listing.skipped; the others are listed. When more than half of the HEADs
 * fail the crawl fails instead, early once SKIP_EARLY (64) files were
 * skipped; ENOMEM is never a skip. */
static void test_head_failures(void **state)
{
	(void)state;
	struct fake_get g[] = {
		{"http://h/prestofs.manifest", -ENOENT, NULL, 0},
		{"http://h/", 0,
		 "<a href=\"a\">a</a> 12-Mar-2024 10:11 1.2K\n"
		 "<a href=\"b\">b</a> 12-Mar-2024 10:11 -\n"
		 "<a href=\"c\">c</a> 12-Mar-2024 10:11 3M\n"
		 "<a href=\"d\">d</a> 12-Mar-2024 10:11 1K\n"
		 "<a href=\"e\">e</a> 12-Mar-2024 10:11 7\n", 0},
		{NULL, 0, NULL, 0},
	};
	struct fake_head h[] = {
		{"http://h/a", 0, 1234, 5, NULL, 0},
		{"http://h/b", -EIO, 0, 0, NULL, 0},
		{"http://h/c", 0, 3000000, 6, "\"c\"", 0},
		{"http://h/d", 0, 1000, 7, NULL, 0},
		{NULL, 0, 0, 0, NULL, 0},
	};
	struct listed l = {.text = ""};

	setup_fakes(g, h);
	uint64_t skipped0 = pfs_listing_skipped();
	struct pfs_origin *o = make("http://h/", NULL);
	assert_int_equal(o->ops->list(o, collect, &l), 0);
	assert_string_equal(l.text, "a|0|1234|5|-\nc|0|3000000|6|\"c\"\nd|0|1000|7|-\n"
				    "e|0|7|" T1_S "|-\n");
	assert_int_equal(pfs_listing_skipped() - skipped0, 1);
	destroy(o);

	/* 404 and 403 are skips too: 2 of 4 HEADs failed, not more than half. */
	h[1].rc = -ENOENT;
	h[3].rc = -EACCES;
	memset(&l, 0, sizeof(l));
	o = make("http://h/", NULL);
	assert_int_equal(o->ops->list(o, collect, &l), 0);
	assert_string_equal(l.text, "a|0|1234|5|-\nc|0|3000000|6|\"c\"\ne|0|7|" T1_S "|-\n");
	assert_int_equal(pfs_listing_skipped() - skipped0, 3);
	destroy(o);

	/* 3 of 4: the crawl fails, nothing is listed or counted. */
	h[0].rc = -EIO;
	memset(&l, 0, sizeof(l));
	o = make("http://h/", NULL);
	assert_int_equal(o->ops->list(o, collect, &l), -EIO);
	assert_int_equal(l.n, 0);
	assert_int_equal(pfs_listing_skipped() - skipped0, 3);
	destroy(o);

	/* ENOMEM fails the crawl at once. */
	h[0].rc = 0;
	h[1].rc = -ENOMEM;
	h[3].rc = 0;
	o = make("http://h/", NULL);
	assert_int_equal(o->ops->list(o, collect, &l), -ENOMEM);
	destroy(o);
	assert_int_equal(unexpected, 0);
}

/* 1000 files without exact sizes, all of whose HEADs fail: the crawl stops
 * soon after SKIP_EARLY skips instead of sending every HEAD. */
static void test_head_failures_stop_early(void **state)
{
	(void)state;
	enum { NF = 1000 };
	static char page[NF * 40], urls[NF][24];
	static struct fake_head h[NF + 1];
	size_t o = 0;
	for (int i = 0; i < NF; i++) {
		o += (size_t)snprintf(page + o, sizeof(page) - o,
				      "<a href=\"f%04d\">f</a> 1.5K\n", i);
		snprintf(urls[i], sizeof(urls[i]), "http://h/f%04d", i);
		h[i] = (struct fake_head){urls[i], -EIO, 0, 0, NULL, 0};
	}
	h[NF] = (struct fake_head){NULL, 0, 0, 0, NULL, 0};
	struct fake_get g[] = {
		{"http://h/prestofs.manifest", -ENOENT, NULL, 0},
		{"http://h/", 0, page, 0},
		{NULL, 0, NULL, 0},
	};
	struct listed l = {.text = ""};

	setup_fakes(g, h);
	struct pfs_origin *org = make("http://h/", NULL);
	assert_int_equal(org->ops->list(org, collect, &l), -EIO);
	assert_int_equal(l.n, 0);
	int sent = 0;
	for (int i = 0; i < NF; i++)
		sent += h[i].count;
	/* SKIP_EARLY, plus at most one in flight per other crawl thread. */
	assert_true(sent >= 64);
	assert_true(sent < 64 + 32);
	destroy(org);
	assert_int_equal(unexpected, 0);
}

static void test_bad_urls(void **state)
{
	(void)state;
	static const char *const bad[] = {
		"http://", "http:///x", "http://u:p@/x", "http://h/x?token=1",
		"http://h/x#f", "http://h/a b", "https://h/\x01",
	};
	struct pfs_origin_opts opts = {.timeout = 1};
	struct pfs_origin *o;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		o = (struct pfs_origin *)1;
		assert_int_equal(pfs_origin_http_create(bad[i], &opts, &o), -EINVAL);
		assert_null(o);
	}
	o = make("https://a:b@[::1]:8443", NULL);
	assert_string_equal(pfs_origin_name(o), "https://[::1]:8443/");
	destroy(o);
	o = make("http://x@y@h/p/", NULL);
	assert_string_equal(pfs_origin_name(o), "http://h/p/");
	destroy(o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_crawl),
		cmocka_unit_test(test_default_manifest),
		cmocka_unit_test(test_manifest_fallbacks),
		cmocka_unit_test(test_explicit_manifest),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_file_and_dir_of_one_name),
		cmocka_unit_test(test_unlistable_etag),
		cmocka_unit_test(test_head_failures),
		cmocka_unit_test(test_head_failures_stop_early),
		cmocka_unit_test(test_bad_urls),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
