/* test_prefetch.c - the prefetch scheduler, driven step by step
 * (workers = 0, pfs_prefetch_run_once): exact order, the window, a new
 * order cancelling the old, readahead first and only for sequential
 * readers, the room gate, background fill within the subtree and only of
 * files not read this epoch. The last test runs real workers against
 * reader threads (scripts/test runs it under ThreadSanitizer). */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <time.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "cache/epoch.h"
#include "catalog/ftable.h"
#include "prefetch/prefetch.h"

#define BS 1024
#define NSMALL 40

struct fixture {
	struct pfs_ftable *ft;
	struct pfs_epoch *ep;
	struct pfs_prefetch *p;
	uint32_t small[NSMALL]; /* a/fNN: one block each */
	uint32_t big;           /* b/big: 40 blocks */
	int room;
	uint32_t cached_node; /* this node's blocks count as in RAM */
	uint32_t got_node[512];
	uint32_t got_view[512];
	uint64_t got_blk[512];
	size_t ngot;
};

static int fetch(void *ctx, uint64_t obj, uint64_t blk, size_t len)
{
	struct fixture *f = ctx;
	(void)len;
	if (f->ngot < 512) {
		f->got_node[f->ngot] = PFS_PREFETCH_NODE(obj);
		f->got_view[f->ngot] = PFS_PREFETCH_VIEW(obj);
		f->got_blk[f->ngot] = blk;
	}
	f->ngot++;
	return 0;
}

static int room(void *ctx, uint64_t len, uint64_t inflight)
{
	(void)len; (void)inflight;
	return ((struct fixture *)ctx)->room;
}

static int cached(void *ctx, uint64_t obj, uint64_t blk)
{
	(void)blk;
	return PFS_PREFETCH_NODE(obj) == ((struct fixture *)ctx)->cached_node;
}

static int setup(void **state)
{
	static struct fixture f;
	memset(&f, 0, sizeof(f));
	f.ft = pfs_ftable_create();
	char path[64];
	for (int i = 0; i < NSMALL; i++) {
		snprintf(path, sizeof(path), "a/f%02d", i);
		assert_int_equal(pfs_ftable_add(f.ft, path, 0, 100, 0, NULL), 0);
	}
	assert_int_equal(pfs_ftable_add(f.ft, "b/big", 0, 40 * BS, 0, NULL), 0);
	assert_int_equal(pfs_ftable_finish(f.ft), 0);
	for (int i = 0; i < NSMALL; i++) {
		snprintf(path, sizeof(path), "a/f%02d", i);
		assert_int_equal(pfs_ftable_resolve(f.ft, path, &f.small[i]), 0);
	}
	assert_int_equal(pfs_ftable_resolve(f.ft, "b/big", &f.big), 0);
	assert_int_equal(pfs_epoch_create(pfs_ftable_count(f.ft), &f.ep), 0);
	f.room = 1;
	struct pfs_prefetch_opts o = {.ft = f.ft, .epoch = f.ep, .block_size = BS,
				      .workers = 0, .window = 5, .fetch = fetch,
				      .room = room, .cached = cached, .ctx = &f};
	f.cached_node = UINT32_MAX;
	assert_int_equal(pfs_prefetch_create(&o, &f.p), 0);
	*state = &f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	pfs_prefetch_destroy(f->p);
	pfs_epoch_destroy(f->ep);
	pfs_ftable_destroy(f->ft);
	return 0;
}

static size_t drain(struct fixture *f)
{
	size_t n = 0;
	while (pfs_prefetch_run_once(f->p) && n < 10000)
		n++;
	return n;
}

/* A demand read of a whole small file (what a loader does). */
static void read_file(struct fixture *f, uint32_t node)
{
	pfs_epoch_note_read(f->ep, node);
	pfs_prefetch_on_read(f->p, node, 100, 0, 100, NULL);
}

static void test_order_exact_and_windowed(void **state)
{
	struct fixture *f = *state;
	uint64_t order[20];
	for (int i = 0; i < 20; i++)
		order[i] = f->small[(i * 7) % NSMALL]; /* a permutation prefix */
	uint64_t sid = pfs_prefetch_order_begin(f->p, NULL);
	pfs_prefetch_order_add(f->p, sid, order, 20, 0);
	/* Nothing read yet: exactly the first `window` entries, in order. */
	assert_int_equal(drain(f), 5);
	for (int i = 0; i < 5; i++)
		assert_int_equal(f->got_node[i], order[i]);
	/* The reader at index 3 (4 files read): the window moves to 4..8. */
	for (int i = 0; i < 4; i++)
		read_file(f, (uint32_t)order[i]);
	assert_int_equal(drain(f), 4);
	for (int i = 5; i < 9; i++)
		assert_int_equal(f->got_node[i], order[i]);
	struct pfs_prefetch_stats s;
	pfs_prefetch_stats(f->p, &s);
	assert_int_equal(s.order_entries, 20);
	assert_int_equal(s.order_position, 4);
}

static const struct pfs_prefetch_stream_stats *stream_named(
	const struct pfs_prefetch_stream_stats *ss, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(ss[i].name, name))
			return &ss[i];
	fail_msg("no stream %s", name);
	return NULL;
}

/* DDP ranks: one stream each (disjoint shards of one permutation, the
 * last padded with rank 0's first sample). The workers take the streams
 * in turn; a read moves only its own stream; the padded sample read at the
 * end of rank 3's shard is rank 3's; counters are per stream. */
static void test_streams(void **state)
{
	struct fixture *f = *state;
	enum { R = 4, SH = 10 };
	uint64_t shard[R][SH + 1];
	uint64_t id[R];
	char name[R][8];
	for (int r = 0; r < R; r++) {
		for (int i = 0; i < SH; i++)
			shard[r][i] = f->small[r + R * i];
		snprintf(name[r], sizeof(name[r]), "r%d", r);
		id[r] = pfs_prefetch_order_begin(f->p, name[r]);
		assert_true(id[r] != 0);
	}
	shard[R - 1][SH] = shard[0][0]; /* the padding */
	for (int r = 0; r < R; r++)
		pfs_prefetch_order_add(f->p, id[r], shard[r], r == R - 1 ? SH + 1 : SH, 0);
	/* Every stream's window (5), the streams in turn. */
	assert_int_equal(drain(f), R * 5);
	for (int k = 0; k < R * 5; k++)
		assert_int_equal(f->got_node[k], shard[k % R][k / R]);
	/* Rank 1 reads 3 files: only its window moves. */
	struct pfs_prefetch_demand hit = {1, 0, 0}, miss = {0, 1, 2000000};
	for (int i = 0; i < 3; i++) {
		pfs_epoch_note_read(f->ep, (uint32_t)shard[1][i]);
		pfs_prefetch_on_read(f->p, (uint32_t)shard[1][i], 100, 0, 100, &hit);
	}
	assert_int_equal(drain(f), 3);
	for (int k = 0; k < 3; k++)
		assert_int_equal(f->got_node[R * 5 + k], shard[1][5 + k]);
	pfs_prefetch_on_read(f->p, (uint32_t)shard[2][0], 100, 0, 100, &miss);
	/* Rank 0 reads its first sample; rank 3 its shard, then the padding:
	 * rank 3's position reaches the end, rank 0's stays at 1. */
	pfs_prefetch_on_read(f->p, (uint32_t)shard[0][0], 100, 0, 100, &hit);
	for (int i = 0; i <= SH; i++)
		pfs_prefetch_on_read(f->p, (uint32_t)shard[3][i], 100, 0, 100, &hit);
	struct pfs_prefetch_stream_stats ss[PFS_PREFETCH_STREAMS_MAX];
	size_t n = pfs_prefetch_streams(f->p, ss, PFS_PREFETCH_STREAMS_MAX);
	assert_int_equal(n, R);
	const struct pfs_prefetch_stream_stats *s0 = stream_named(ss, n, "r0"),
		*s1 = stream_named(ss, n, "r1"), *s2 = stream_named(ss, n, "r2"),
		*s3 = stream_named(ss, n, "r3");
	assert_int_equal(s0->position, 1);
	assert_int_equal(s0->demand_hits, 1);
	assert_int_equal(s1->position, 3);
	assert_int_equal(s1->demand_hits, 3);
	assert_int_equal(s1->demand_misses, 0);
	assert_int_equal(s2->position, 1);
	assert_int_equal(s2->demand_misses, 1);
	assert_int_equal(s2->stall_ns, 2000000);
	assert_int_equal(s3->position, SH + 1);
	assert_int_equal(s3->demand_hits, SH + 1);
	assert_int_equal(s3->entries, SH + 1);
	assert_true(s0->idle_s >= 0 && s0->idle_s < 60);
	/* Rank 1's next epoch: its stream alone starts over. */
	uint64_t stale = id[1];
	id[1] = pfs_prefetch_order_begin(f->p, "r1");
	assert_true(id[1] != stale);
	pfs_prefetch_order_add(f->p, id[1], shard[1], 2, 0);
	n = pfs_prefetch_streams(f->p, ss, PFS_PREFETCH_STREAMS_MAX);
	assert_int_equal(n, R);
	assert_int_equal(stream_named(ss, n, "r1")->entries, 2);
	assert_int_equal(stream_named(ss, n, "r1")->demand_hits, 0);
	assert_int_equal(stream_named(ss, n, "r3")->position, SH + 1);
	/* An old handle adds nothing. */
	pfs_prefetch_order_add(f->p, stale, shard[2], 3, 0);
	assert_int_equal(pfs_prefetch_streams(f->p, ss, PFS_PREFETCH_STREAMS_MAX), R);
	struct pfs_prefetch_stats st;
	pfs_prefetch_stats(f->p, &st);
	assert_int_equal(st.order_streams, R);
	assert_int_equal(st.order_entries, 2 + SH + SH + SH + 1);
	/* At most PFS_PREFETCH_STREAMS_MAX: a new one ends one of them. */
	for (int i = 0; i < PFS_PREFETCH_STREAMS_MAX; i++) {
		char nm[16];
		snprintf(nm, sizeof(nm), "s%d", i);
		assert_true(pfs_prefetch_order_begin(f->p, nm) != 0);
	}
	pfs_prefetch_stats(f->p, &st);
	assert_int_equal(st.order_streams, PFS_PREFETCH_STREAMS_MAX);
	n = pfs_prefetch_streams(f->p, ss, PFS_PREFETCH_STREAMS_MAX);
	assert_int_equal(n, PFS_PREFETCH_STREAMS_MAX);
	stream_named(ss, n, "s63");
	/* Names: the unnamed stream is "default"; bad ones are refused. */
	assert_int_equal(pfs_prefetch_order_begin(f->p, "a b"), 0);
	assert_int_equal(pfs_prefetch_order_begin(f->p, ""), 0);
	assert_true(pfs_prefetch_order_find(f->p, "s63") != 0);
	assert_int_equal(pfs_prefetch_order_find(f->p, "nope"), 0);
	uint64_t d = pfs_prefetch_order_begin(f->p, NULL);
	assert_int_equal(pfs_prefetch_order_find(f->p, PFS_PREFETCH_DEFAULT_STREAM), d);
	char longname[PFS_PREFETCH_STREAM_NAME_MAX + 2];
	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	assert_false(pfs_prefetch_stream_name_ok(longname));
	longname[PFS_PREFETCH_STREAM_NAME_MAX] = '\0';
	assert_true(pfs_prefetch_stream_name_ok(longname));
}

static void test_reader_ahead_skips_consumed(void **state)
{
	struct fixture *f = *state;
	uint64_t order[20];
	for (int i = 0; i < 20; i++)
		order[i] = f->small[i];
	uint64_t sid = pfs_prefetch_order_begin(f->p, NULL);
	pfs_prefetch_order_add(f->p, sid, order, 20, 0);
	read_file(f, (uint32_t)order[9]); /* the reader jumped ahead: 0..9 are past */
	assert_int_equal(drain(f), 5);
	for (int i = 0; i < 5; i++)
		assert_int_equal(f->got_node[i], order[10 + i]);
}

static void test_new_order_cancels_old(void **state)
{
	struct fixture *f = *state;
	uint64_t a[10], b[10];
	for (int i = 0; i < 10; i++) {
		a[i] = f->small[i];
		b[i] = f->small[39 - i];
	}
	uint64_t sid = pfs_prefetch_order_begin(f->p, NULL);
	pfs_prefetch_order_add(f->p, sid, a, 10, 0);
	assert_int_equal(pfs_prefetch_run_once(f->p), 1);
	assert_int_equal(f->got_node[0], a[0]);
	sid = pfs_prefetch_order_begin(f->p, NULL); /* the next epoch's order */
	pfs_prefetch_order_add(f->p, sid, b, 10, 2);
	assert_int_equal(drain(f), 5);
	for (int i = 0; i < 5; i++)
		assert_int_equal(f->got_node[1 + i], b[i]);
	struct pfs_prefetch_stats s;
	pfs_prefetch_stats(f->p, &s);
	assert_int_equal(s.order_entries, 10);
	assert_int_equal(s.order_unknown, 2);
}

static void test_readahead_first_and_growing(void **state)
{
	struct fixture *f = *state;
	uint64_t order[10];
	for (int i = 0; i < 10; i++)
		order[i] = f->small[i];
	uint64_t sid = pfs_prefetch_order_begin(f->p, NULL);
	pfs_prefetch_order_add(f->p, sid, order, 10, 0);
	uint64_t size = 40 * BS;
	/* First read: no readahead yet (could be a random reader). */
	pfs_prefetch_on_read(f->p, f->big, size, 0, BS, NULL);
	assert_int_equal(pfs_prefetch_run_once(f->p), 1);
	assert_int_equal(f->got_node[0], order[0]);
	/* Sequential: the next blocks are fetched before the order's. */
	pfs_prefetch_on_read(f->p, f->big, size, BS, BS, NULL);
	assert_int_equal(pfs_prefetch_run_once(f->p), 1);
	assert_int_equal(f->got_node[1], f->big);
	assert_int_equal(f->got_blk[1], 2);
	assert_int_equal(pfs_prefetch_run_once(f->p), 1);
	assert_int_equal(f->got_node[2], f->big);
	assert_int_equal(f->got_blk[2], 3);
	/* Keep reading: the window grows, blocks come in sequence. */
	size_t before = f->ngot;
	for (uint64_t b = 2; b < 6; b++)
		pfs_prefetch_on_read(f->p, f->big, size, b * BS, BS, NULL);
	drain(f);
	uint64_t next = 4, ra = 0;
	for (size_t i = before; i < f->ngot && i < 512; i++) {
		if (f->got_node[i] != f->big)
			continue;
		assert_int_equal(f->got_blk[i], next);
		next++;
		ra++;
	}
	assert_true(ra >= 4); /* more than one block ahead per read now */
}

static void test_random_reader_gets_no_readahead(void **state)
{
	struct fixture *f = *state;
	uint64_t size = 40 * BS;
	static const uint64_t blocks[] = {17, 3, 29, 8, 33, 12, 1, 25};
	for (size_t i = 0; i < sizeof(blocks) / sizeof(blocks[0]); i++)
		pfs_prefetch_on_read(f->p, f->big, size, blocks[i] * BS + 10, 100, NULL);
	struct pfs_prefetch_stats s;
	drain(f);
	pfs_prefetch_stats(f->p, &s);
	assert_int_equal(s.readahead_blocks, 0);
}

static void test_interleaved_readers_are_sequential(void **state)
{
	struct fixture *f = *state;
	uint64_t size = 40 * BS;
	/* Two workers reading one file, each sequentially, interleaved. */
	for (uint64_t k = 0; k < 3; k++) {
		pfs_prefetch_on_read(f->p, f->big, size, k * BS, BS, NULL);
		pfs_prefetch_on_read(f->p, f->big, size, (20 + k) * BS, BS, NULL);
	}
	drain(f);
	struct pfs_prefetch_stats s;
	pfs_prefetch_stats(f->p, &s);
	assert_true(s.readahead_blocks >= 4);
	int low = 0, high = 0;
	for (size_t i = 0; i < f->ngot; i++) {
		low += f->got_node[i] == f->big && f->got_blk[i] < 20;
		high += f->got_node[i] == f->big && f->got_blk[i] >= 23;
	}
	assert_true(low > 0 && high > 0);
}

static void test_no_room_no_fetch(void **state)
{
	struct fixture *f = *state;
	uint64_t order[3] = {f->small[0], f->small[1], f->small[2]};
	uint64_t sid = pfs_prefetch_order_begin(f->p, NULL);
	pfs_prefetch_order_add(f->p, sid, order, 3, 0);
	f->room = 0;
	assert_int_equal(pfs_prefetch_run_once(f->p), 0);
	assert_int_equal(f->ngot, 0);
	f->room = 1;
	assert_int_equal(drain(f), 3);
}

/* A stream read that misses while the prefetcher found no room for the
 * stream's window counts as its shortfall; a miss with room does not. */
static void test_shortfall_counted(void **state)
{
	struct fixture *f = *state;
	uint64_t order[8];
	for (int i = 0; i < 8; i++)
		order[i] = f->small[i];
	uint64_t sid = pfs_prefetch_order_begin(f->p, "r");
	pfs_prefetch_order_add(f->p, sid, order, 8, 0);
	struct pfs_prefetch_demand miss = {.hits = 0, .misses = 1, .stall_ns = 20000000};
	/* With room: a miss (the reader came early) is not a shortfall. */
	pfs_prefetch_on_read(f->p, (uint32_t)order[0], 100, 0, 100, &miss);
	f->room = 0;
	assert_int_equal(pfs_prefetch_run_once(f->p), 0); /* no room, work pending */
	pfs_prefetch_on_read(f->p, (uint32_t)order[1], 100, 0, 100, &miss);
	pfs_prefetch_on_read(f->p, (uint32_t)order[2], 100, 0, 100, &miss);
	struct pfs_prefetch_stats st;
	pfs_prefetch_stats(f->p, &st);
	assert_int_equal(st.order_shortfall, 2);
	struct pfs_prefetch_stream_stats ss[4];
	size_t n = pfs_prefetch_streams(f->p, ss, 4);
	assert_int_equal(n, 1);
	assert_int_equal(ss[0].shortfall, 2);
	assert_int_equal(ss[0].demand_misses, 3);
}

/* With room for one block at a time, the stream least far ahead of its
 * reader is served first, not the next in turn: a rank that read ahead
 * gets the freed room before ranks whose windows are already deep. */
static void test_streams_neediest_first(void **state)
{
	struct fixture *f = *state;
	uint64_t a[8], b[8];
	for (int i = 0; i < 8; i++) {
		a[i] = f->small[i];
		b[i] = f->small[8 + i];
	}
	uint64_t ia = pfs_prefetch_order_begin(f->p, "a");
	uint64_t ib = pfs_prefetch_order_begin(f->p, "b");
	pfs_prefetch_order_add(f->p, ia, a, 8, 0);
	pfs_prefetch_order_add(f->p, ib, b, 8, 0);
	assert_int_equal(drain(f), 10);          /* both windows (5) */
	f->room = 0;
	for (int i = 0; i < 4; i++)              /* a reads 4: 1 left ahead */
		read_file(f, (uint32_t)a[i]);
	for (int i = 0; i < 1; i++)              /* b reads 1: 4 left ahead */
		read_file(f, (uint32_t)b[i]);
	assert_int_equal(drain(f), 0);
	f->room = 1;
	size_t before = f->ngot;
	assert_int_equal(pfs_prefetch_run_once(f->p), 1);
	assert_int_equal(f->got_node[before], a[5]); /* a: lead 1 < b: lead 4 */
	assert_int_equal(pfs_prefetch_run_once(f->p), 1);
	assert_int_equal(f->got_node[before + 1], a[6]); /* lead 2 < 4 */
	assert_int_equal(pfs_prefetch_run_once(f->p), 1);
	assert_int_equal(f->got_node[before + 2], a[7]);
	assert_int_equal(pfs_prefetch_run_once(f->p), 1);
	assert_int_equal(f->got_node[before + 3], b[5]); /* a is done */
}

static void test_background_fills_unread_files_of_subtree(void **state)
{
	struct fixture *f = *state;
	for (int i = 0; i < 10; i++)
		read_file(f, f->small[i]);
	size_t n = drain(f);
	/* The other 30 files of a/, each once; nothing of b/. */
	assert_int_equal(n, NSMALL - 10);
	int seen[NSMALL] = {0};
	for (size_t i = 0; i < f->ngot; i++) {
		int k = -1;
		for (int j = 0; j < NSMALL; j++)
			if (f->got_node[i] == f->small[j])
				k = j;
		assert_true(k >= 10);
		assert_int_equal(seen[k]++, 0);
	}
	/* The next epoch: everything of a/ is unread again. */
	read_file(f, f->small[0]);
	assert_int_equal(pfs_epoch_current(f->ep), 2);
	assert_int_equal(drain(f), NSMALL - 1);
}

static void test_view_objects_fetched_whole(void **state)
{
	struct fixture *f = *state;
	/* A view of the 40-block file is one item; the file itself is 40. */
	uint64_t order[2] = {PFS_PREFETCH_OBJ(f->big, 3), PFS_PREFETCH_OBJ(f->small[0], 1)};
	uint64_t sid = pfs_prefetch_order_begin(f->p, NULL);
	pfs_prefetch_order_add(f->p, sid, order, 2, 0);
	assert_int_equal(drain(f), 2);
	assert_int_equal(f->got_node[0], f->big);
	assert_int_equal(f->got_view[0], 3);
	assert_int_equal(f->got_blk[0], 0);
	assert_int_equal(f->got_node[1], f->small[0]);
	assert_int_equal(f->got_view[1], 1);
	/* Reading the file (any view of it) moves the order position. */
	read_file(f, f->big);
	struct pfs_prefetch_stats s;
	pfs_prefetch_stats(f->p, &s);
	assert_int_equal(s.order_position, 1);
}

static void test_cached_items_skipped(void **state)
{
	struct fixture *f = *state;
	uint64_t order[3] = {f->small[0], f->small[1], f->small[2]};
	f->cached_node = f->small[1];
	uint64_t sid = pfs_prefetch_order_begin(f->p, NULL);
	pfs_prefetch_order_add(f->p, sid, order, 3, 0);
	assert_int_equal(drain(f), 2);
	assert_int_equal(f->got_node[0], f->small[0]);
	assert_int_equal(f->got_node[1], f->small[2]);
	struct pfs_prefetch_stats s;
	pfs_prefetch_stats(f->p, &s);
	assert_int_equal(s.skipped_cached, 1);
}

/* Real workers, readers on threads. The callbacks see only atomics: the
 * point is the prefetcher's own locking (and the epoch tracker's, which
 * workers query while readers note reads). */
struct live {
	struct fixture *f;
	int room;             /* atomic */
	uint64_t calls;       /* atomic: fetch callbacks */
	uint64_t failed;      /* atomic */
	unsigned seed;
};

static int live_fetch(void *ctx, uint64_t obj, uint64_t blk, size_t len)
{
	struct live *l = ctx;
	(void)len;
	uint64_t n = __atomic_add_fetch(&l->calls, 1, __ATOMIC_RELAXED);
	if (n % 16 == 0) {
		struct timespec ts = {0, 200000};
		nanosleep(&ts, NULL);
	}
	/* One file always fails: backoff and the dropped remainder. */
	if (PFS_PREFETCH_NODE(obj) == l->f->small[3] && blk == 0) {
		__atomic_add_fetch(&l->failed, 1, __ATOMIC_RELAXED);
		return -EIO;
	}
	return 0;
}

static int live_room(void *ctx, uint64_t len, uint64_t inflight)
{
	(void)len; (void)inflight;
	return __atomic_load_n(&((struct live *)ctx)->room, __ATOMIC_RELAXED);
}

static int live_cached(void *ctx, uint64_t obj, uint64_t blk)
{
	struct live *l = ctx;
	(void)blk;
	return PFS_PREFETCH_NODE(obj) == l->f->small[5] ? PFS_PREFETCH_SKIP_BLOCK : 0;
}

struct reader {
	struct live *l;
	struct pfs_prefetch *p;
	int id;
};

static void *reader_main(void *arg)
{
	struct reader *r = arg;
	struct fixture *f = r->l->f;
	uint64_t order[NSMALL];
	for (int round = 0; round < 40; round++) {
		if (r->id < 2 && round % 8 == r->id) { /* two loaders writing orders */
			for (int i = 0; i < NSMALL; i++)
				order[i] = f->small[(i * 7 + round) % NSMALL];
			uint64_t sid = pfs_prefetch_order_begin(r->p, r->id ? "r1" : NULL);
			pfs_prefetch_order_add(r->p, sid, order, NSMALL / 2, 1);
			pfs_prefetch_order_add(r->p, sid, order + NSMALL / 2, NSMALL / 2, 0);
		}
		struct pfs_prefetch_demand d = {1, 1, 1000};
		for (int i = r->id; i < NSMALL; i += 3) {
			pfs_epoch_note_read(f->ep, f->small[i]);
			pfs_prefetch_on_read(r->p, f->small[i], 100, 0, 100, i % 2 ? &d : NULL);
		}
		if (r->id == 2 && round % 4 == 0) { /* a stats reader */
			struct pfs_prefetch_stream_stats ss[4];
			if (pfs_prefetch_streams(r->p, ss, 4) > 2)
				abort();
		}
		/* A sequential reader of the big file: readahead streams. */
		uint64_t off = (uint64_t)(round % 40) * BS;
		pfs_prefetch_on_read(r->p, f->big, 40 * BS, off, BS, NULL);
		struct pfs_prefetch_stats st;
		pfs_prefetch_stats(r->p, &st);
	}
	return NULL;
}

static void test_workers_and_readers_threads(void **state)
{
	struct fixture *f = *state;
	struct live l = {.f = f, .room = 1};
	struct pfs_prefetch *p;
	struct pfs_prefetch_opts o = {.ft = f->ft, .epoch = f->ep, .block_size = BS,
				      .workers = 4, .window = 8, .fetch = live_fetch,
				      .room = live_room, .cached = live_cached, .ctx = &l};
	assert_int_equal(pfs_prefetch_create(&o, &p), 0);
	struct reader r[3];
	pthread_t th[3];
	for (int i = 0; i < 3; i++) {
		r[i] = (struct reader){&l, p, i};
		assert_int_equal(pthread_create(&th[i], NULL, reader_main, &r[i]), 0);
	}
	for (int i = 0; i < 3; i++)
		assert_int_equal(pthread_join(th[i], NULL), 0);
	/* Let the workers run a while, then close the gate and wait for
	 * what is in flight: every callback is then counted exactly once. */
	struct timespec ts = {0, 20 * 1000000L};
	nanosleep(&ts, NULL);
	__atomic_store_n(&l.room, 0, __ATOMIC_RELAXED);
	struct pfs_prefetch_stats st;
	for (int i = 0; i < 2000; i++) {
		pfs_prefetch_stats(p, &st);
		if (st.inflight == 0)
			break;
		ts.tv_nsec = 1000000L;
		nanosleep(&ts, NULL);
	}
	assert_int_equal(st.inflight, 0);
	uint64_t calls = __atomic_load_n(&l.calls, __ATOMIC_RELAXED);
	assert_true(calls > 0);
	assert_int_equal(st.blocks + st.errors, calls);
	assert_int_equal(st.errors, __atomic_load_n(&l.failed, __ATOMIC_RELAXED));
	pfs_prefetch_destroy(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_order_exact_and_windowed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_streams, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reader_ahead_skips_consumed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_new_order_cancels_old, setup, teardown),
		cmocka_unit_test_setup_teardown(test_readahead_first_and_growing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_random_reader_gets_no_readahead, setup, teardown),
		cmocka_unit_test_setup_teardown(test_interleaved_readers_are_sequential, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_room_no_fetch, setup, teardown),
		cmocka_unit_test_setup_teardown(test_shortfall_counted, setup, teardown),
		cmocka_unit_test_setup_teardown(test_streams_neediest_first, setup, teardown),
		cmocka_unit_test_setup_teardown(test_background_fills_unread_files_of_subtree, setup, teardown),
		cmocka_unit_test_setup_teardown(test_view_objects_fetched_whole, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cached_items_skipped, setup, teardown),
		cmocka_unit_test_setup_teardown(test_workers_and_readers_threads, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
