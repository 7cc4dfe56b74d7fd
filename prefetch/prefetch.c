/* prefetch.c - see prefetch.h; the scheduler of prefetch_int.h.
 *
 * Workers take the next item (readahead queue, then the current object's
 * remaining blocks, then the order windows or the background permutation)
 * while the room callback says the cache can take another block;
 * otherwise they wait for a read to change that (a demand read consumes a
 * staged block, or moves an order position). One lock guards the
 * scheduling state and the sources'; it is never held across a fetch.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "prefetch_int.h"
#include "../util/clock.h"
#include "../util/stats.h"

/* Background errors: first pause, and the longest (seconds). */
#define ERR_BACKOFF_MIN 0.05
#define ERR_BACKOFF_MAX 5.0

/* ---- the current object (prefetch_int.h's diagram; lock held) ----------- */

static void cur_drop(struct pfs_prefetch *p)
{
	p->cur.blk = p->cur.nblk = 0;
	p->cur.probing = 0;
}

static void cur_start(struct pfs_prefetch *p, uint64_t obj, uint64_t size)
{
	p->cur.obj = obj;
	p->cur.blk = 0;
	p->cur.nblk = PFS_PREFETCH_VIEW(obj) ? 1 : (size + p->o.block_size - 1) / p->o.block_size;
}

/* The current object's next block: 1 and the item, 0 when it has none
 * left (or its probe is in flight). */
static int cur_take(struct pfs_prefetch *p, uint64_t *obj, uint64_t *blk, size_t *len)
{
	if (p->cur.blk >= p->cur.nblk)
		return 0;
	int is_dir;
	uint64_t size = pf_file_size(p, PFS_PREFETCH_NODE(p->cur.obj), &is_dir);
	*obj = p->cur.obj;
	*blk = p->cur.blk++;
	p->cur.probing = *blk == 0 && p->cur.nblk > 1;
	/* A view is one item; its source size stands for its size. */
	*len = PFS_PREFETCH_VIEW(*obj) ? (size_t)(size < p->o.block_size ? size : p->o.block_size)
				       : pf_block_len(p, size, *blk);
	return 1;
}

/* Work was made (a new order, readahead, a moved window): the workers
 * look again. `all`: wake every one, else one (which wakes the next). */
static void wake(struct pfs_prefetch *p, int all)
{
	p->idle_empty = 0;
	if (all)
		pthread_cond_broadcast(&p->wake);
	else
		pthread_cond_signal(&p->wake);
}

/* ---- picking work (lock held) ---------------------------------------------- */

/* The next item in priority order, cached or not. */
static int next_item(struct pfs_prefetch *p, uint64_t *obj, uint64_t *blk, size_t *len)
{
	if (pf_ra_next(p, obj, blk, len))
		return 1;
	for (;;) {
		if (p->cur.probing)
			return 0; /* the probe's worker resumes the object */
		if (cur_take(p, obj, blk, len))
			return 1;
		uint64_t next;
		if (!(p->ord.live ? pf_ord_next(p, &next) : pf_bg_next(p, &next)))
			return 0;
		int is_dir;
		uint64_t size = pf_file_size(p, PFS_PREFETCH_NODE(next), &is_dir);
		if (is_dir || size == 0)
			continue;
		cur_start(p, next, size);
	}
}

/* The next block to prefetch that is not in RAM yet (a warm epoch then
 * costs a hash lookup per item, not a worker's wake-up and fetch).
 * Returns 1 and the item, 0 when there is none, 2 when it stopped after
 * skipping many (there may be more). */
static int next_work(struct pfs_prefetch *p, uint64_t *obj, uint64_t *blk, size_t *len)
{
	for (unsigned skipped = 0; next_item(p, obj, blk, len); skipped++) {
		int c = p->o.cached ? p->o.cached(p->o.ctx, *obj, *blk) : 0;
		if (!c)
			return 1;
		if (*obj == p->cur.obj) {
			p->cur.probing = 0; /* a block in RAM, or nothing to probe */
			if (c == PFS_PREFETCH_SKIP_OBJECT)
				p->cur.blk = p->cur.nblk;
		}
		p->st.skipped_cached++;
		if (skipped == 4096)
			return 2; /* bound the time under the lock; resume later */
	}
	return 0;
}

/* After a fetch of (obj, blk) that returned rc. */
static void fetched(struct pfs_prefetch *p, uint64_t obj, uint64_t blk, size_t len, int rc)
{
	if (rc == 0) {
		p->st.blocks++;
		p->st.bytes += len;
		p->err_streak = 0;
		p->err_until = 0;
		if (obj == p->cur.obj && blk == 0 && p->cur.probing) {
			p->cur.probing = 0;
			pthread_cond_signal(&p->wake); /* the rest of the object */
		}
		return;
	}
	/* An object that failed is not worth its other blocks (a listing that
	 * says 2^62 bytes would mean 2^42 requests), and a broken origin must
	 * not see more requests from an idle mount than from a busy one: back
	 * off. */
	p->st.errors++;
	if (obj == p->cur.obj)
		p->cur.blk = p->cur.nblk;
	if (obj == p->cur.obj && blk == 0)
		p->cur.probing = 0;
	double d = ERR_BACKOFF_MIN;
	for (unsigned i = 0; i < p->err_streak && d < ERR_BACKOFF_MAX; i++)
		d *= 2;
	p->err_streak++;
	p->err_until = pfs_clock_s() + (d < ERR_BACKOFF_MAX ? d : ERR_BACKOFF_MAX);
}

/* Takes the next item and fetches it, lock held on entry and on return
 * (dropped during the fetch). Returns 1 if it fetched, 0 if idle. */
static int step(struct pfs_prefetch *p)
{
	uint64_t obj, blk;
	size_t len;
	if (p->err_until && pfs_clock_s() < p->err_until)
		return 0; /* worker 0's poll resumes the work after it */
	if (!p->o.room(p->o.ctx, p->o.block_size, p->inflight_bytes)) {
		if (pf_ord_want(p))
			p->no_room_at = pfs_clock_s();
		return 0;
	}
	int found = next_work(p, &obj, &blk, &len);
	p->idle_empty = found == 0 && !p->cur.probing;
	if (found != 1)
		return 0;
	p->inflight++;
	p->inflight_bytes += len;
	/* There may be more: wake the next idle worker (a cascade, so all of
	 * them get going without a broadcast per read). */
	pthread_cond_signal(&p->wake);
	pthread_mutex_unlock(&p->lock);
	double t0 = pfs_clock_s();
	int rc = p->o.fetch(p->o.ctx, obj, blk, len);
	double took = pfs_clock_s() - t0;
	pthread_mutex_lock(&p->lock);
	p->fetch_avg = p->fetch_avg ? 0.875 * p->fetch_avg + 0.125 * took : took;
	p->inflight--;
	p->inflight_bytes -= len;
	fetched(p, obj, blk, len, rc);
	return 1;
}

int pfs_prefetch_run_once(struct pfs_prefetch *p)
{
	pthread_mutex_lock(&p->lock);
	int did = step(p);
	pthread_mutex_unlock(&p->lock);
	return did;
}

/* Idle workers sleep until a read or another worker wakes them (each
 * worker that takes an item wakes the next). Room freed by other means
 * (evictions, stale staged blocks) is noticed by worker 0 alone, which
 * polls every 100 ms: an idle mount costs 10 wakeups a second, not one
 * per worker. */
static void *worker(void *arg)
{
	struct pf_worker *a = arg;
	struct pfs_prefetch *p = a->p;
	pthread_mutex_lock(&p->lock);
	while (!p->stop) {
		if (step(p))
			continue;
		if (a->id != 0) {
			pthread_cond_wait(&p->wake, &p->lock);
			continue;
		}
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 100 * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&p->wake, &p->lock, &ts);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

/* ---- the API ------------------------------------------------------------- */

int pfs_prefetch_create(const struct pfs_prefetch_opts *o, struct pfs_prefetch **out)
{
	struct pfs_prefetch *p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->o = *o;
	p->nfiles = pfs_ftable_count(o->ft);
	p->bg.scope = PF_NO_SCOPE;
	p->bg.rng = 0x9e3779b97f4a7c15ull ^ (uint64_t)time(NULL);
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->wake, NULL);
	p->threads = calloc(o->workers ? o->workers : 1, sizeof(*p->threads));
	p->args = calloc(o->workers ? o->workers : 1, sizeof(*p->args));
	if (!p->threads || !p->args) {
		pfs_prefetch_destroy(p);
		return -ENOMEM;
	}
	for (unsigned i = 0; i < o->workers; i++) {
		p->args[i] = (struct pf_worker){p, i};
		if (pthread_create(&p->threads[i], NULL, worker, &p->args[i]) != 0)
			break;
		p->nthreads++;
	}
	if (p->nthreads == 0 && o->workers) {
		pfs_prefetch_destroy(p);
		return -EAGAIN;
	}
	*out = p;
	return 0;
}

void pfs_prefetch_destroy(struct pfs_prefetch *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	p->stop = 1;
	pthread_cond_broadcast(&p->wake);
	pthread_mutex_unlock(&p->lock);
	for (unsigned i = 0; i < p->nthreads; i++)
		pthread_join(p->threads[i], NULL);
	free(p->threads);
	free(p->args);
	pf_ord_free(p);
	pf_bg_free(p);
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->wake);
	free(p);
}

void pfs_prefetch_on_read(struct pfs_prefetch *p, uint32_t node, uint64_t size,
			  uint64_t off, size_t len, const struct pfs_prefetch_demand *d)
{
	/* Every FUSE read calls this: leave at once, without the lock, when
	 * there is nothing to note (a small file, read past its start, that
	 * missed nothing: a miss there is charged to its stream, as a decoder
	 * that reads a header first then the rest can miss on the rest). */
	if (len == 0 || (off != 0 && size <= p->o.block_size && !(d && d->misses)))
		return;
	pthread_mutex_lock(&p->lock);
	if (size > p->o.block_size && pf_ra_note(p, node, size, off, len))
		wake(p, 1);
	int news = p->ord.live ? pf_ord_note(p, node, size, off, d) : 0;
	if (off == 0) {
		if (!p->ord.live)
			news = pf_bg_note(p, node);
		/* A read may have consumed a staged block: room for more, unless
		 * the workers know there is nothing left to fetch. */
		if (news || !p->idle_empty)
			wake(p, 0);
	}
	pthread_mutex_unlock(&p->lock);
}

uint64_t pfs_prefetch_order_begin(struct pfs_prefetch *p, const char *name)
{
	if (!name)
		name = PFS_PREFETCH_DEFAULT_STREAM;
	if (!pfs_prefetch_stream_name_ok(name))
		return 0;
	pthread_mutex_lock(&p->lock);
	uint64_t id = pf_ord_begin(p, name);
	cur_drop(p); /* the background object in progress */
	p->idle_empty = 0;
	pthread_mutex_unlock(&p->lock);
	return id;
}

uint64_t pfs_prefetch_order_find(struct pfs_prefetch *p, const char *name)
{
	pthread_mutex_lock(&p->lock);
	uint64_t id = pf_ord_find(p, name ? name : PFS_PREFETCH_DEFAULT_STREAM);
	pthread_mutex_unlock(&p->lock);
	return id;
}

void pfs_prefetch_order_add(struct pfs_prefetch *p, uint64_t stream, const uint64_t *objs,
			    size_t n, size_t unknown)
{
	pthread_mutex_lock(&p->lock);
	if (pf_ord_add(p, stream, objs, n, unknown))
		wake(p, 1);
	pthread_mutex_unlock(&p->lock);
}

void pfs_prefetch_stats(struct pfs_prefetch *p, struct pfs_prefetch_stats *out)
{
	pthread_mutex_lock(&p->lock);
	*out = p->st;
	out->inflight = p->inflight;
	pf_ord_stats(p, out);
	pthread_mutex_unlock(&p->lock);
}

static int cmp_stream(const void *a, const void *b)
{
	return strcmp(((const struct pfs_prefetch_stream_stats *)a)->name,
		      ((const struct pfs_prefetch_stream_stats *)b)->name);
}

size_t pfs_prefetch_streams(struct pfs_prefetch *p, struct pfs_prefetch_stream_stats *out,
			    size_t max)
{
	double now = pfs_clock_s();
	pthread_mutex_lock(&p->lock);
	size_t k = pf_ord_streams(p, out, max, now);
	pthread_mutex_unlock(&p->lock);
	qsort(out, k, sizeof(*out), cmp_stream);
	return k;
}

/* The names of the prefetcher's metrics: here only (prefetch.bytes_used
 * and prefetch.bytes_wasted are counted, and named, by the cache). */
#define ROW(name, member, gauge) PFS_STAT_ROW(struct pfs_prefetch_stats, name, member, gauge)
static const struct pfs_stat_row metrics[] = {
	ROW("prefetch.inflight", inflight, 1),
	ROW("prefetch.blocks", blocks, 0),
	ROW("prefetch.bytes", bytes, 0),
	ROW("prefetch.errors", errors, 0),
	ROW("prefetch.readahead_blocks", readahead_blocks, 0),
	ROW("prefetch.background_files", background_files, 0),
	ROW("prefetch.skipped_cached", skipped_cached, 0),
	ROW("prefetch.order_entries", order_entries, 1),
	ROW("prefetch.order_unknown", order_unknown, 1),
	ROW("prefetch.order_position", order_position, 1),
	ROW("prefetch.order_streams", order_streams, 1),
	ROW("prefetch.order_shortfall", order_shortfall, 0),
};
#undef ROW

void pfs_prefetch_collect(void *p, struct pfs_stat_list *l)
{
	struct pfs_prefetch_stats st;
	pfs_prefetch_stats(p, &st);
	pfs_stat_list_add_rows(l, metrics, sizeof(metrics) / sizeof(metrics[0]), &st);
	struct pfs_prefetch_stream_stats ss[PFS_PREFETCH_STREAMS_MAX];
	size_t n = pfs_prefetch_streams(p, ss, PFS_PREFETCH_STREAMS_MAX);
	for (size_t i = 0; i < n; i++) {
		const char *nm = ss[i].name;
		pfs_stat_list_add_labeled(l, "stream.entries", nm, (double)ss[i].entries, 1);
		pfs_stat_list_add_labeled(l, "stream.unknown", nm, (double)ss[i].unknown, 1);
		pfs_stat_list_add_labeled(l, "stream.position", nm, (double)ss[i].position, 1);
		pfs_stat_list_add_labeled(l, "stream.demand_hits", nm, (double)ss[i].demand_hits, 0);
		pfs_stat_list_add_labeled(l, "stream.demand_misses", nm,
					  (double)ss[i].demand_misses, 0);
		pfs_stat_list_add_labeled(l, "stream.stall_seconds", nm,
					  (double)ss[i].stall_ns / 1e9, 0);
		pfs_stat_list_add_labeled(l, "stream.shortfall", nm, (double)ss[i].shortfall, 0);
		pfs_stat_list_add_labeled(l, "stream.idle_seconds", nm, ss[i].idle_s, 1);
	}
}
