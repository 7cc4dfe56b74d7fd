/* test_stats.c - util/stats.h: the list (add, full), its JSON rendering
 * (sorted, nested on the dots) and Prometheus rendering (names, types,
 * _total on counters); and the modules' stats functions: each renders its
 * own names, and all of them together fit the list with room to spare
 * (the daemon adds fs/'s few values to these).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "../../cache/bcache.h"
#include "../../cache/epoch.h"
#include "../../cache/ssd.h"
#include "../../catalog/ftable.h"
#include "../../catalog/listing.h"
#include "../../origin/counters.h"
#include "../../prefetch/prefetch.h"
#include "../../util/log.h"
#include "../../util/stats.h"
#include "ssd_fixture.h"

/* What the daemon's stats sources other than these add (fs/: 6 today),
 * with room to grow. */
#define OTHER_SOURCES_ROOM 64

static char out[65536];

static const struct pfs_stat_kv *find(const struct pfs_stat_list *l, const char *name)
{
	for (size_t i = 0; i < l->n; i++)
		if (!strcmp(l->kv[i].name, name))
			return &l->kv[i];
	return NULL;
}

static void test_list_add(void **state)
{
	struct pfs_stat_list l = {.n = 0};
	assert_int_equal(pfs_stat_list_add(&l, "a.b", 3, 0), 0);
	assert_int_equal(pfs_stat_list_add(&l, "c", 1.5, 1), 0);
	assert_int_equal(l.n, 2);
	assert_string_equal(l.kv[0].name, "a.b");
	assert_true(l.kv[0].value == 3 && !l.kv[0].is_gauge);
	assert_true(l.kv[1].value == 1.5 && l.kv[1].is_gauge);
}

static void test_list_full(void **state)
{
	static struct pfs_stat_list l;
	l.n = 0;
	for (int i = 0; i < PFS_STAT_LIST_MAX; i++)
		assert_int_equal(pfs_stat_list_add(&l, "x.y", i, 0), 0);
	assert_int_equal(pfs_stat_list_add(&l, "x.z", 1, 0), -ENOSPC); /* logged once */
	assert_int_equal(pfs_stat_list_add(&l, "x.z", 1, 0), -ENOSPC);
	assert_int_equal(l.n, PFS_STAT_LIST_MAX);
	assert_true(l.kv[PFS_STAT_LIST_MAX - 1].value == PFS_STAT_LIST_MAX - 1);
	/* A full list still renders whole. */
	size_t n = pfs_stats_render_prometheus(&l, out, sizeof(out));
	assert_true(n > 0 && n < sizeof(out) - 1);
}

static void test_json_nesting_and_order(void **state)
{
	struct pfs_stat_list l = {.n = 0};
	/* Out of order, one group interleaved with another and a plain name. */
	pfs_stat_list_add(&l, "ram.misses", 2, 0);
	pfs_stat_list_add(&l, "coalesced", 7, 0);
	pfs_stat_list_add(&l, "origin.bytes", 4096, 0);
	pfs_stat_list_add(&l, "ram.hits", 1, 0);
	pfs_stat_list_add(&l, "epoch.stall_seconds", 0.25, 0);
	size_t n = pfs_stats_render_json(&l, out, sizeof(out));
	const char *want = "{\n"
			   "  \"coalesced\": 7,\n"
			   "  \"epoch\": {\"stall_seconds\": 0.25},\n"
			   "  \"origin\": {\"bytes\": 4096},\n"
			   "  \"ram\": {\"hits\": 1,\n"
			   "  \"misses\": 2}\n"
			   "}\n";
	assert_string_equal(out, want);
	assert_int_equal(n, strlen(want));

	struct pfs_stat_list empty = {.n = 0};
	pfs_stats_render_json(&empty, out, sizeof(out));
	assert_string_equal(out, "{\n}\n");
}

static void test_prometheus(void **state)
{
	struct pfs_stat_list l = {.n = 0};
	pfs_stat_list_add(&l, "ssd.bytes", 8192, 1);
	pfs_stat_list_add(&l, "origin.requests", 3, 0);
	pfs_stat_list_add(&l, "failed_files", 0, 0);
	pfs_stats_render_prometheus(&l, out, sizeof(out));
	assert_string_equal(out, "# TYPE prestofs_failed_files_total counter\n"
				 "prestofs_failed_files_total 0\n"
				 "# TYPE prestofs_origin_requests_total counter\n"
				 "prestofs_origin_requests_total 3\n"
				 "# TYPE prestofs_ssd_bytes gauge\n"
				 "prestofs_ssd_bytes 8192\n");
}

static void test_truncation(void **state)
{
	struct pfs_stat_list l = {.n = 0};
	pfs_stat_list_add(&l, "origin.requests", 3, 0);
	char small[16];
	memset(small, 'x', sizeof(small));
	size_t n = pfs_stats_render_json(&l, small, sizeof(small));
	assert_int_equal(n, sizeof(small) - 1);
	assert_int_equal(small[sizeof(small) - 1], '\0');
	assert_int_equal(strncmp(small, "{\n  \"origin\": {", 15), 0);
}

static void test_rows(void **state)
{
	struct snap {
		uint64_t a, b;
	} s = {5, 1ull << 40};
	static const struct pfs_stat_row rows[] = {
		PFS_STAT_ROW(struct snap, "t.a", a, 0),
		PFS_STAT_ROW(struct snap, "t.b", b, 1),
	};
	struct pfs_stat_list l = {.n = 0};
	pfs_stat_list_add_rows(&l, rows, 2, &s);
	assert_int_equal(l.n, 2);
	assert_true(find(&l, "t.a")->value == 5 && !find(&l, "t.a")->is_gauge);
	assert_true(find(&l, "t.b")->value == (double)(1ull << 40) && find(&l, "t.b")->is_gauge);
}

/* ---- the modules' stats functions ---- */

/* Each name in want[] is in l, and l holds nothing else. */
/* Instances of a family (order streams): nested by label in JSON, a label
 * in Prometheus with one TYPE line per family; bad labels refused. */
static void test_labeled(void **state)
{
	(void)state;
	struct pfs_stat_list l = {.n = 0};
	assert_int_equal(pfs_stat_list_add_labeled(&l, "stream.entries", "r1", 7, 1), 0);
	assert_int_equal(pfs_stat_list_add(&l, "y", 3, 1), 0);
	assert_int_equal(pfs_stat_list_add_labeled(&l, "stream.position", "r0", 2, 1), 0);
	assert_int_equal(pfs_stat_list_add(&l, "x.a", 1, 0), 0);
	assert_int_equal(pfs_stat_list_add_labeled(&l, "stream.entries", "r0", 5, 1), 0);
	assert_int_equal(pfs_stat_list_add_labeled(&l, "stream.entries", "bad\"", 1, 1), -EINVAL);
	assert_int_equal(pfs_stat_list_add_labeled(&l, "stream.entries", "", 1, 1), -EINVAL);
	assert_int_equal(pfs_stat_list_add_labeled(&l, "stream.entries", "a b", 1, 1), -EINVAL);
	assert_int_equal(l.n, 5);
	char txt[1024];
	pfs_stats_render_json(&l, txt, sizeof(txt));
	assert_string_equal(txt, "{\n  \"stream\": {\"r0\": {\"entries\": 5,\n  \"position\": 2},"
				 "\n  \"r1\": {\"entries\": 7}},\n  \"x\": {\"a\": 1},\n  \"y\": 3\n}\n");
	pfs_stats_render_prometheus(&l, txt, sizeof(txt));
	assert_string_equal(txt, "# TYPE prestofs_stream_entries gauge\n"
				 "prestofs_stream_entries{stream=\"r0\"} 5\n"
				 "prestofs_stream_entries{stream=\"r1\"} 7\n"
				 "# TYPE prestofs_stream_position gauge\n"
				 "prestofs_stream_position{stream=\"r0\"} 2\n"
				 "# TYPE prestofs_x_a_total counter\n"
				 "prestofs_x_a_total 1\n"
				 "# TYPE prestofs_y gauge\n"
				 "prestofs_y 3\n");
	/* The labels' room runs out cleanly. */
	static struct pfs_stat_list full;
	full.n = 0;
	full.labels_used = 0;
	char name[PFS_STAT_LABEL_MAX];
	int rc = 0, k;
	for (k = 0; k < 1000 && rc == 0; k++) {
		snprintf(name, sizeof(name), "s%0*d", PFS_STAT_LABEL_MAX - 8, k);
		rc = pfs_stat_list_add_labeled(&full, "stream.entries", name, k, 1);
	}
	assert_int_equal(rc, -ENOSPC);
	assert_int_equal(full.n, (size_t)k - 1);
	assert_true(full.labels_used <= PFS_STAT_LABELS_BYTES);
}

static void expect_names(const struct pfs_stat_list *l, const char *const *want, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (!find(l, want[i]))
			fail_msg("%s missing", want[i]);
	}
	assert_int_equal(l->n, n);
}

#define NAMES(...) (const char *const[]){__VA_ARGS__}, \
	sizeof((const char *const[]){__VA_ARGS__}) / sizeof(const char *)

static struct pfs_bcache *new_bcache(void)
{
	struct pfs_bcache_opts o = {.budget = 1 << 20, .block_size = 4096,
				    .policy = PFS_POLICY_EPOCH, .stage_budget = 1 << 18};
	struct pfs_bcache *c;
	assert_int_equal(pfs_bcache_create(&o, &c), 0);
	return c;
}

static int fill_zero(void *ctx, void *buf, size_t len)
{
	memset(buf, 0, len);
	return 0;
}

static void test_bcache_names(void **state)
{
	struct pfs_bcache *c = new_bcache();
	struct pfs_block *b;
	assert_int_equal(pfs_bcache_get(c, 1, 0, 4096, 4096, PFS_BCACHE_PREFETCH, fill_zero,
					NULL, &b), 0);
	pfs_bcache_put(c, b);
	struct pfs_stat_list l = {.n = 0};
	pfs_bcache_collect(c, &l);
	expect_names(&l, NAMES("ram.budget", "ram.resident_bytes", "ram.resident_blocks",
			       "ram.stage_budget", "ram.staged_bytes", "ram.staged_blocks",
			       "ram.admitted", "ram.replaced", "ram.refused", "ram.staged",
			       "ram.stage_used", "ram.stage_stale", "ram.staged_partial",
			       "ram.stage_reclaimed", "ram.refetched", "ram.prefetch_fills",
			       "prefetch.bytes_used", "prefetch.bytes_wasted", "ram.hits",
			       "ram.misses", "ram.bytes", "ram.evictions", "coalesced"));
	assert_true(find(&l, "ram.bytes")->is_gauge);
	assert_true(find(&l, "ram.budget")->value == 1 << 20);
	assert_true(find(&l, "ram.budget")->is_gauge);
	assert_true(find(&l, "ram.stage_budget")->value == 1 << 18);
	assert_true(find(&l, "ram.prefetch_fills")->value == 1);
	assert_true(find(&l, "ram.resident_blocks")->value == 1);
	assert_false(find(&l, "ram.admitted")->is_gauge);
	pfs_bcache_destroy(c);
}

static void test_epoch_names(void **state)
{
	struct pfs_epoch *t;
	assert_int_equal(pfs_epoch_create(4, &t), 0);
	pfs_epoch_note_read(t, 0);
	pfs_epoch_note_read(t, 1);
	struct pfs_stat_list l = {.n = 0};
	pfs_epoch_collect(t, &l);
	expect_names(&l, NAMES("epoch.number", "epoch.files_read", "epoch.files_seen",
			       "epoch.demand_hits", "epoch.demand_misses", "epoch.stall_seconds",
			       "stall_seconds"));
	assert_true(find(&l, "epoch.number")->value == 1);
	assert_true(find(&l, "epoch.files_read")->value == 2);
	assert_true(find(&l, "epoch.files_seen")->value == 2);
	/* The epoch's demand counters start when it begins. */
	assert_int_equal(pfs_epoch_began(t, 1), 1);
	assert_int_equal(pfs_epoch_began(t, 1), 0);
	pfs_epoch_add_stall(t, 3000000000ull);
	l.n = 0;
	pfs_epoch_collect(t, &l);
	assert_true(find(&l, "epoch.stall_seconds")->value == 3);
	assert_true(find(&l, "stall_seconds")->value == 3);
	assert_int_equal(pfs_epoch_began(t, 2), 1);
	pfs_epoch_add_stall(t, 1000000000ull);
	l.n = 0;
	pfs_epoch_collect(t, &l);
	assert_true(find(&l, "epoch.stall_seconds")->value == 1);
	assert_true(find(&l, "stall_seconds")->value == 4);
	assert_true(find(&l, "epoch.demand_misses")->value == 0);
	pfs_epoch_destroy(t);
}

#define SSD_NAMES NAMES("ssd.hits", "ssd.misses", "ssd.stale", "ssd.swept", "ssd.sweep_pending", \
			"ssd.bytes", "ssd.raw_bytes", \
			"ssd.entries", "ssd.budget", "ssd.checksum_failures", "ssd.evictions", \
			"ssd.write_errors", "ssd.queued", "ssd.queue_bytes", "ssd.dropped", \
			"ssd.compressed_blocks", "ssd.disabled")

static void test_ssd_names_none(void **state)
{
	struct pfs_stat_list l = {.n = 0};
	pfs_ssd_collect(NULL, &l); /* a mount without an SSD tier */
	expect_names(&l, SSD_NAMES);
	for (size_t i = 0; i < l.n; i++)
		assert_true(l.kv[i].value == 0);
}

static void test_ssd_names(void **state)
{
	struct fx *f = *state;
	assert_int_equal(pfs_ssd_open(&f->o, &f->s), 0);
	put_pattern(f, "a.bin", 0, 1, BS);
	pfs_ssd_flush(f->s);
	assert_int_equal(get_check(f, "a.bin", 0, 1, BS), 0);
	assert_int_equal(get_check(f, "a.bin", 0, 2, BS), -ESTALE);
	struct pfs_stat_list l = {.n = 0};
	pfs_ssd_collect(f->s, &l);
	expect_names(&l, SSD_NAMES);
	assert_true(find(&l, "ssd.budget")->value == (double)f->o.size);
	assert_true(find(&l, "ssd.hits")->value == 1);
	assert_true(find(&l, "ssd.stale")->value == 1);
	assert_true(find(&l, "ssd.queued")->value == 1);
	assert_true(find(&l, "ssd.queue_bytes")->is_gauge);
	assert_false(find(&l, "ssd.dropped")->is_gauge);
}

static int pf_fetch(void *ctx, uint64_t obj, uint64_t blk, size_t len)
{
	return 0;
}

static int pf_room(void *ctx, uint64_t len, uint64_t inflight)
{
	return 1;
}

struct modules {
	struct pfs_ftable *ft;
	struct pfs_epoch *ep;
	struct pfs_bcache *c;
	struct pfs_prefetch *p;
};

static void modules_create(struct modules *m)
{
	m->ft = pfs_ftable_create();
	assert_non_null(m->ft);
	assert_int_equal(pfs_ftable_add(m->ft, "d/a", 0, 100, 0, NULL), 0);
	assert_int_equal(pfs_ftable_add(m->ft, "d/b", 0, 100, 0, NULL), 0);
	assert_int_equal(pfs_ftable_finish(m->ft), 0);
	assert_int_equal(pfs_epoch_create(pfs_ftable_count(m->ft), &m->ep), 0);
	m->c = new_bcache();
	struct pfs_prefetch_opts o = {.ft = m->ft, .epoch = m->ep, .block_size = 4096,
				      .workers = 0, .window = 4, .fetch = pf_fetch,
				      .room = pf_room};
	assert_int_equal(pfs_prefetch_create(&o, &m->p), 0);
}

static void modules_destroy(struct modules *m)
{
	pfs_prefetch_destroy(m->p);
	pfs_bcache_destroy(m->c);
	pfs_epoch_destroy(m->ep);
	pfs_ftable_destroy(m->ft);
}

static void test_prefetch_names(void **state)
{
	struct modules m;
	modules_create(&m);
	uint64_t objs[] = {PFS_PREFETCH_OBJ(1, 0), PFS_PREFETCH_OBJ(2, 0)};
	uint64_t sid = pfs_prefetch_order_begin(m.p, "rank3");
	pfs_prefetch_order_add(m.p, sid, objs, 2, 1);
	struct pfs_stat_list l = {.n = 0};
	pfs_prefetch_collect(m.p, &l);
	expect_names(&l, NAMES("prefetch.inflight", "prefetch.blocks", "prefetch.bytes",
			       "prefetch.errors", "prefetch.readahead_blocks",
			       "prefetch.background_files", "prefetch.skipped_cached",
			       "prefetch.order_entries", "prefetch.order_unknown",
			       "prefetch.order_position", "prefetch.order_streams",
			       "prefetch.order_shortfall",
			       "stream.entries", "stream.unknown", "stream.position",
			       "stream.demand_hits", "stream.demand_misses",
			       "stream.stall_seconds", "stream.shortfall", "stream.idle_seconds"));
	assert_true(find(&l, "prefetch.order_unknown")->value == 1);
	assert_true(find(&l, "prefetch.order_streams")->value == 1);
	assert_true(find(&l, "stream.entries")->value == 2);
	assert_string_equal(find(&l, "stream.entries")->label, "rank3");
	assert_true(find(&l, "prefetch.order_unknown")->is_gauge);
	modules_destroy(&m);
}

/* [a-z0-9_]+ with at most one dot inside, at most PFS_STAT_NAME_MAX bytes. */
static int valid_name(const char *s)
{
	size_t n = strlen(s);
	const char *dot = strchr(s, '.');
	if (!n || n > PFS_STAT_NAME_MAX || s[0] == '.' || s[n - 1] == '.' ||
	    (dot && strchr(dot + 1, '.')))
		return 0;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_' ||
		      *s == '.'))
			return 0;
	return 1;
}

/* Every source but fs/'s and the views', as the daemon registers them: the
 * count, unique and well-formed names, and room left in the list. */
static void test_all_sources_fit(void **state)
{
	struct modules m;
	modules_create(&m);
	static struct pfs_stat_list l;
	l.n = 0;
	pfs_origin_collect(NULL, &l);
	assert_int_equal(l.n, 10);
	pfs_listing_collect(NULL, &l);
	pfs_ssd_collect(NULL, &l);
	pfs_bcache_collect(m.c, &l);
	pfs_epoch_collect(m.ep, &l);
	pfs_prefetch_collect(m.p, &l);
	/* origin 10, listing 1, ssd 17, ram 18 + 5, epoch 7, prefetch 12 */
	assert_int_equal(l.n, 10 + 1 + 17 + 23 + 7 + 12);
	assert_true(l.n + OTHER_SOURCES_ROOM <= PFS_STAT_LIST_MAX);
	for (size_t i = 0; i < l.n; i++) {
		if (!valid_name(l.kv[i].name))
			fail_msg("bad metric name '%s'", l.kv[i].name);
		for (size_t j = i + 1; j < l.n; j++)
			if (!strcmp(l.kv[i].name, l.kv[j].name))
				fail_msg("metric '%s' twice", l.kv[i].name);
	}
	/* Everything renders, whole. */
	size_t n = pfs_stats_render_json(&l, out, sizeof(out));
	assert_true(n < sizeof(out) - 1);
	assert_non_null(strstr(out, "\"ram\": {"));
	n = pfs_stats_render_prometheus(&l, out, sizeof(out));
	assert_true(n < sizeof(out) - 1);
	assert_non_null(strstr(out, "\nprestofs_ssd_queue_bytes 0\n"));
	assert_non_null(strstr(out, "\nprestofs_ram_stage_stale_total 0\n"));
	modules_destroy(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_list_add),
		cmocka_unit_test(test_list_full),
		cmocka_unit_test(test_json_nesting_and_order),
		cmocka_unit_test(test_labeled),
		cmocka_unit_test(test_prometheus),
		cmocka_unit_test(test_truncation),
		cmocka_unit_test(test_rows),
		cmocka_unit_test(test_bcache_names),
		cmocka_unit_test(test_epoch_names),
		cmocka_unit_test(test_ssd_names_none),
		cmocka_unit_test_setup_teardown(test_ssd_names, setup, teardown),
		cmocka_unit_test(test_prefetch_names),
		cmocka_unit_test(test_all_sources_fit),
	};
	pfs_log_set_level(PFS_LOG_ERR);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
