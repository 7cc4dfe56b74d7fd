/* prefetch.c - see prefetch.h.
 *
 * One lock guards the scheduling state; it is never held across a fetch.
 * Workers take the next item (readahead queue, then the current file's
 * remaining blocks, then the order window or the background permutation),
 * but only while the room callback says the cache can take another block:
 * otherwise they wait for a read to change that (a demand read consumes a
 * staged block, or moves the order position).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "prefetch.h"
#include "../cache/epoch.h"
#include "../catalog/ftable.h"
#include "../util/clock.h"
#include "../util/log.h"
#include "../util/stats.h"

#define RA_QUEUE 1024
#define NSTREAMS 64
/* Background errors: first pause, and the longest (seconds). */
#define ERR_BACKOFF_MIN 0.05
#define ERR_BACKOFF_MAX 5.0

struct ra_item {
	uint32_t node;
	uint64_t blk;
};

/* A sequential reader of one file, matched by the offset it reads next. */
struct stream {
	uint32_t node;
	uint64_t next_off;  /* where its next read should start */
	uint64_t queued_to; /* blocks below this are queued or read */
	unsigned window;    /* blocks ahead, doubling */
	uint64_t last_use;  /* for replacement */
};

/* An order stream (prefetch.h): its order, and where its files are in it
 * (an open-addressing hash of node + 1 -> first index + 1). id 0: a free
 * slot. */
struct ostream {
	uint64_t id;
	char name[PFS_PREFETCH_STREAM_NAME_MAX + 1];
	uint64_t *order;        /* objects, in order */
	size_t n, cap, next;    /* next: the next entry to prefetch */
	uint32_t *keys, *vals;  /* hcap slots each; 0: empty */
	size_t hcap, hused;
	uint64_t pos;           /* highest index read + 1 */
	uint64_t unknown;
	double last_use;        /* CLOCK_MONOTONIC s of its last read or write */
	uint64_t hits, misses, stall_ns;
	uint64_t shortfall;     /* misses while the cache had no room ahead */
	double last_start;      /* when a file of it was last read from 0 */
	double gap_avg;         /* s between such reads (EWMA) */
	double size_avg;        /* bytes of those files (EWMA) */
	uint64_t starts;        /* such reads */
};

struct worker_arg {
	struct pfs_prefetch *p;
	unsigned id;
};

struct pfs_prefetch {
	struct pfs_prefetch_opts o;
	struct worker_arg *args;
	uint32_t nfiles;
	pthread_t *threads;
	unsigned nthreads;

	pthread_mutex_t lock;
	pthread_cond_t wake;
	/* Everything below is guarded by lock. */
	int stop;
	struct ra_item ra[RA_QUEUE];
	size_t ra_head, ra_n;
	struct stream streams[NSTREAMS];
	uint64_t clock;
	/* The object whose blocks are being issued (order or background). */
	uint64_t cur_obj;
	uint64_t cur_blk, cur_nblk;
	/* Block 0 of a multi-block cur_obj is in flight alone: its other
	 * blocks wait until it succeeds (a file the origin cannot serve, say
	 * one listed at 2^40 bytes, costs one request, not one per worker). */
	int cur_probing;
	/* Order hints: the live streams (id != 0); ties are taken in turn from rr. */
	struct ostream os[PFS_PREFETCH_STREAMS_MAX];
	unsigned nos;           /* live streams */
	unsigned rr;
	uint64_t os_ids;        /* the last id given */
	double os_expired;      /* when idle streams were last looked for */
	/* Background fill: a random permutation of the subtree's files. */
	uint32_t *perm;
	size_t perm_n, perm_next;
	uint64_t perm_epoch;    /* epoch the permutation was made for */
	double perm_time;       /* when it was made (CLOCK_MONOTONIC s) */
	uint32_t scope;         /* subtree root being read; UINT32_MAX: none */
	int scope_changed;
	/* The last scan found no item at all (not "no room", not "bounded"):
	 * a read then wakes no worker unless it makes new work (a new epoch,
	 * scope, order position or readahead). A warm epoch so costs no
	 * wake-up per read; worker 0's 100 ms poll bounds any miss. */
	int idle_empty;
	uint64_t rng;
	/* Errors back off: no work is taken before err_until (CLOCK_MONOTONIC
	 * s), which doubles with each consecutive error up to ERR_BACKOFF_MAX. */
	double err_until;
	unsigned err_streak;
	/* Room: when step() last found none while a stream had work within
	 * its window (CLOCK_MONOTONIC s; 0: never); the fetch time (EWMA);
	 * whether the shortfall was logged. */
	double no_room_at;
	double fetch_avg;       /* a prefetch's fetch, s (EWMA; 0: none yet) */
	double miss_avg;        /* a demand miss's wait per block, s (EWMA) */
	int warned_short;
	/* In flight and counters. */
	unsigned inflight;
	uint64_t inflight_bytes;
	struct pfs_prefetch_stats st;
};

static uint64_t next_rand(struct pfs_prefetch *p)
{
	p->rng ^= p->rng << 13;
	p->rng ^= p->rng >> 7;
	p->rng ^= p->rng << 17;
	return p->rng;
}

static size_t block_len(const struct pfs_prefetch *p, uint64_t size, uint64_t blk)
{
	uint64_t off = blk * p->o.block_size;
	return (size_t)(size - off < p->o.block_size ? size - off : p->o.block_size);
}

static uint64_t file_size(const struct pfs_prefetch *p, uint32_t node, int *is_dir)
{
	struct pfs_fnode info;
	if (pfs_ftable_get(p->o.ft, node, &info) < 0) {
		*is_dir = 1;
		return 0;
	}
	*is_dir = info.is_dir;
	return info.size;
}

/* Appends the files below `dir` to the permutation array (iteratively:
 * datasets can be deep). */
static int collect_files(struct pfs_prefetch *p, uint32_t dir)
{
	size_t cap = 1024, n = 0, sp = 0, scap = 64;
	uint32_t *files = malloc(cap * sizeof(*files));
	uint32_t *stack = malloc(scap * sizeof(*stack));
	if (!files || !stack)
		goto fail;
	stack[sp++] = dir;
	while (sp) {
		uint32_t d = stack[--sp];
		uint32_t nc = pfs_ftable_nchildren(p->o.ft, d);
		for (uint32_t k = 0; k < nc; k++) {
			uint32_t c = pfs_ftable_child(p->o.ft, d, k);
			int is_dir;
			uint64_t size = file_size(p, c, &is_dir);
			if (is_dir) {
				if (sp == scap) {
					uint32_t *s2 = realloc(stack, (scap *= 2) * sizeof(*s2));
					if (!s2)
						goto fail;
					stack = s2;
				}
				stack[sp++] = c;
			} else if (size > 0) {
				if (n == cap) {
					uint32_t *f2 = realloc(files, (cap *= 2) * sizeof(*f2));
					if (!f2)
						goto fail;
					files = f2;
				}
				files[n++] = c;
			}
		}
	}
	for (size_t i = n; i > 1; i--) { /* Fisher-Yates */
		size_t j = next_rand(p) % i;
		uint32_t t = files[i - 1];
		files[i - 1] = files[j];
		files[j] = t;
	}
	free(stack);
	free(p->perm);
	p->perm = files;
	p->perm_n = n;
	p->perm_next = 0;
	return 0;
fail:
	free(files);
	free(stack);
	return -ENOMEM;
}

static int next_item(struct pfs_prefetch *p, uint64_t *obj, uint64_t *blk, size_t *len);

/* ---- order streams (lock held) ----------------------------------------- */

int pfs_prefetch_stream_name_ok(const char *name)
{
	size_t n = strlen(name);
	return n >= 1 && n <= PFS_PREFETCH_STREAM_NAME_MAX &&
	       strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
			    "0123456789._:-") == n;
}

static uint32_t hash32(uint32_t x)
{
	x ^= x >> 16;
	x *= 0x7feb352dU;
	x ^= x >> 15;
	x *= 0x846ca68bU;
	return x ^ (x >> 16);
}

/* The first index + 1 of node in s's order, 0 if absent. */
static uint32_t os_find(const struct ostream *s, uint32_t node)
{
	if (!s->hcap)
		return 0;
	for (size_t i = hash32(node) & (s->hcap - 1);; i = (i + 1) & (s->hcap - 1)) {
		if (!s->keys[i])
			return 0;
		if (s->keys[i] == node + 1)
			return s->vals[i];
	}
}

static void os_put(struct ostream *s, uint32_t node, uint32_t val)
{
	size_t i = hash32(node) & (s->hcap - 1);
	while (s->keys[i] && s->keys[i] != node + 1)
		i = (i + 1) & (s->hcap - 1);
	if (s->keys[i])
		return; /* listed twice: it keeps its first place */
	s->keys[i] = node + 1;
	s->vals[i] = val;
	s->hused++;
}

/* Room for `more` new keys (at most 2/3 full). */
static int os_reserve(struct ostream *s, size_t more)
{
	if ((s->hused + more) * 3 <= s->hcap * 2)
		return 0;
	size_t cap = s->hcap ? s->hcap : 1024;
	while ((s->hused + more) * 3 > cap * 2)
		cap *= 2;
	uint32_t *k = calloc(cap, sizeof(*k)), *v = calloc(cap, sizeof(*v));
	if (!k || !v) {
		free(k);
		free(v);
		return -ENOMEM;
	}
	struct ostream old = *s;
	s->keys = k;
	s->vals = v;
	s->hcap = cap;
	s->hused = 0;
	for (size_t i = 0; i < old.hcap; i++)
		if (old.keys[i])
			os_put(s, old.keys[i] - 1, old.vals[i]);
	free(old.keys);
	free(old.vals);
	return 0;
}

static void os_clear(struct ostream *s)
{
	free(s->order);
	free(s->keys);
	free(s->vals);
	memset(s, 0, sizeof(*s));
}

static void os_end(struct pfs_prefetch *p, struct ostream *s)
{
	os_clear(s);
	p->nos--;
}

/* Ends the streams nobody read or wrote for PFS_PREFETCH_STREAM_IDLE_S
 * (looked for at most once a second). */
static void os_expire(struct pfs_prefetch *p, double now)
{
	if (now - p->os_expired < 1.0)
		return;
	p->os_expired = now;
	for (unsigned i = 0; i < PFS_PREFETCH_STREAMS_MAX; i++)
		if (p->os[i].id && now - p->os[i].last_use > PFS_PREFETCH_STREAM_IDLE_S)
			os_end(p, &p->os[i]);
}

/* The next object of the streams' windows: from the stream least far
 * ahead of its reader (ties: in turn). With the cache's room as the limit
 * (a RAM tier smaller than the data), in-turn order let three ranks'
 * windows fill the staging area while the fourth, the one about to run
 * dry, waited its turn for each freed block: 20-100 demand misses in one
 * rank's epoch of 501 reads (test_ranks). */
static int next_in_streams(struct pfs_prefetch *p, uint64_t *next)
{
	struct ostream *best = NULL;
	unsigned best_i = 0;
	uint64_t best_lead = UINT64_MAX;
	os_expire(p, pfs_clock_s());
	for (unsigned k = 0; k < PFS_PREFETCH_STREAMS_MAX; k++) {
		unsigned i = (p->rr + k) % PFS_PREFETCH_STREAMS_MAX;
		struct ostream *s = &p->os[i];
		if (!s->id)
			continue;
		if (s->next < s->pos)
			s->next = s->pos; /* the reader is ahead */
		if (s->next >= s->n || s->next >= s->pos + p->o.window)
			continue;
		if (s->next - s->pos < best_lead) {
			best = s;
			best_i = i;
			best_lead = s->next - s->pos;
		}
	}
	if (!best)
		return 0;
	*next = best->order[best->next++];
	p->rr = best_i + 1;
	return 1;
}

/* The stream a read of `node` belongs to: the one whose order holds it
 * nearest to its position (ahead, or behind by as much), or NULL. *idx:
 * its index there + 1. */
static struct ostream *os_of_read(struct pfs_prefetch *p, uint32_t node, uint32_t *idx)
{
	struct ostream *best = NULL;
	uint64_t best_d = UINT64_MAX;
	for (unsigned i = 0; i < PFS_PREFETCH_STREAMS_MAX && p->nos; i++) {
		struct ostream *s = &p->os[i];
		uint32_t at = s->id ? os_find(s, node) : 0;
		if (!at)
			continue;
		/* Ahead by d scores 2d, behind by d 2d + 1: a file that is the
		 * next of one stream and the last read of another is the
		 * first's (a padded shard's last sample). */
		uint64_t d = at > s->pos ? 2 * (at - 1 - s->pos) : 2 * (s->pos - at) + 1;
		if (d < best_d) {
			best_d = d;
			best = s;
			*idx = at;
		}
	}
	return best;
}

/* Picks the next block to prefetch that is not in RAM yet (a warm epoch
 * then costs a hash lookup per item, not a worker's wake-up and fetch).
 * Returns 1 and the item, 0 when there is none, 2 when it stopped after
 * skipping many (there may be more). */
static int next_work(struct pfs_prefetch *p, uint64_t *obj, uint64_t *blk, size_t *len)
{
	for (unsigned skipped = 0; next_item(p, obj, blk, len); skipped++) {
		int c = p->o.cached ? p->o.cached(p->o.ctx, *obj, *blk) : 0;
		if (!c)
			return 1;
		if (*obj == p->cur_obj) {
			p->cur_probing = 0; /* a block in RAM, or nothing to probe */
			if (c == PFS_PREFETCH_SKIP_OBJECT)
				p->cur_blk = p->cur_nblk;
		}
		p->st.skipped_cached++;
		if (skipped == 4096)
			return 2; /* bound the time under the lock; resume later */
	}
	return 0;
}

/* The next item in priority order, cached or not. */
static int next_item(struct pfs_prefetch *p, uint64_t *obj, uint64_t *blk, size_t *len)
{
	int is_dir;
	while (p->ra_n) {
		struct ra_item it = p->ra[p->ra_head];
		p->ra_head = (p->ra_head + 1) % RA_QUEUE;
		p->ra_n--;
		uint64_t size = file_size(p, it.node, &is_dir);
		if (is_dir || it.blk * p->o.block_size >= size)
			continue;
		*obj = it.node;
		*blk = it.blk;
		*len = block_len(p, size, it.blk);
		p->st.readahead_blocks++;
		return 1;
	}
	for (;;) {
		if (p->cur_probing)
			return 0; /* the probe's worker resumes the file */
		if (p->cur_blk < p->cur_nblk) {
			uint64_t size = file_size(p, PFS_PREFETCH_NODE(p->cur_obj), &is_dir);
			*obj = p->cur_obj;
			*blk = p->cur_blk++;
			p->cur_probing = *blk == 0 && p->cur_nblk > 1;
			/* A view is one item; its source size stands for its size. */
			*len = PFS_PREFETCH_VIEW(*obj) ? (size_t)(size < p->o.block_size ? size : p->o.block_size)
						       : block_len(p, size, *blk);
			return 1;
		}
		uint64_t next;
		if (p->nos) {
			if (!next_in_streams(p, &next))
				return 0;
		} else {
			if (p->scope == UINT32_MAX)
				return 0;
			uint64_t epoch = pfs_epoch_current(p->o.epoch);
			/* Several jobs reading one mount make the epoch tracker
			 * see many short "epochs" (each job re-reads what the
			 * other read): rebuild when the last permutation is used
			 * up, else at most once a second. */
			double t = pfs_clock_s();
			if (p->scope_changed ||
			    (p->perm_epoch != epoch &&
			     (p->perm_next >= p->perm_n || t - p->perm_time >= 1.0))) {
				p->scope_changed = 0;
				p->perm_epoch = epoch;
				p->perm_time = t;
				if (collect_files(p, p->scope) < 0)
					return 0;
			}
			if (p->perm_next >= p->perm_n)
				return 0;
			next = p->perm[p->perm_next++];
			if (pfs_epoch_is_read(p->o.epoch, (uint32_t)next))
				continue; /* read already this epoch */
			p->st.background_files++;
		}
		uint64_t size = file_size(p, PFS_PREFETCH_NODE(next), &is_dir);
		if (is_dir || size == 0)
			continue;
		p->cur_obj = next;
		p->cur_blk = 0;
		p->cur_nblk = PFS_PREFETCH_VIEW(next) ? 1 : (size + p->o.block_size - 1) / p->o.block_size;
	}
}

/* 1 when an order stream has entries within its window not fetched yet
 * (lock held). */
static int streams_want(const struct pfs_prefetch *p)
{
	for (unsigned i = 0; i < PFS_PREFETCH_STREAMS_MAX; i++) {
		const struct ostream *s = &p->os[i];
		uint64_t next = s->next > s->pos ? s->next : s->pos;
		if (s->id && next < s->n && next < s->pos + p->o.window)
			return 1;
	}
	return 0;
}

/* A stream's read missed while the cache had no room for what the streams
 * wanted ahead (lock held): counted, and said once with what the streams
 * need, as far as the daemon can see it (it does not know the batch). */
static void note_shortfall(struct pfs_prefetch *p, struct ostream *s, uint32_t misses)
{
	s->shortfall += misses;
	p->st.order_shortfall += misses;
	if (p->warned_short)
		return;
	double rate = 0, bytes = 0;
	uint64_t starts = 0;
	for (unsigned i = 0; i < PFS_PREFETCH_STREAMS_MAX; i++) {
		const struct ostream *o = &p->os[i];
		starts += o->id ? o->starts : 0;
		if (o->id && o->gap_avg > 0) {
			rate += 1.0 / o->gap_avg;
			bytes += o->size_avg / o->gap_avg;
		}
	}
	if (starts < 32)
		return; /* said once there are rates to say it with */
	p->warned_short = 1;
	/* Each stream's reads in flight are its rate times the fetch time (a
	 * prefetch's; before any, a demand miss's wait); twice that keeps it
	 * fed through a slow fetch. */
	double fetch = p->fetch_avg ? p->fetch_avg : p->miss_avg;
	double need = 2 * bytes * fetch;
	if (need < (double)p->o.block_size * 2)
		need = (double)p->o.block_size * 2; /* room is asked a block at a time */
	pfs_warn("order streams: reads missed because the RAM tier had no room for what they "
		 "read next (stream '%s'): %u streams read about %.0f files/s now (%.1f MB/s), "
		 "a fetch takes about %.0f ms, so at least %.1f MiB must be in RAM ahead of them "
		 "beyond the resident set (more as they speed up); raise ram_size (or "
		 "prefetch_ram_share). Counted in stream.shortfall", s->name, p->nos, rate,
		 bytes / 1e6, fetch * 1e3, need / (1 << 20));
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
		if (streams_want(p))
			p->no_room_at = pfs_clock_s();
		return 0;
	}
	int found = next_work(p, &obj, &blk, &len);
	p->idle_empty = found == 0 && !p->cur_probing;
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
	if (rc == 0) {
		p->st.blocks++;
		p->st.bytes += len;
		p->err_streak = 0;
		p->err_until = 0;
		if (obj == p->cur_obj && blk == 0 && p->cur_probing) {
			p->cur_probing = 0;
			pthread_cond_signal(&p->wake); /* the rest of the file */
		}
	} else {
		/* A file that failed is not worth its other blocks (a listing
		 * that says 2^62 bytes would mean 2^42 requests), and a broken
		 * origin must not see more requests from an idle mount than
		 * from a busy one: back off. */
		p->st.errors++;
		if (obj == p->cur_obj)
			p->cur_blk = p->cur_nblk;
		if (obj == p->cur_obj && blk == 0)
			p->cur_probing = 0;
		double d = ERR_BACKOFF_MIN;
		for (unsigned i = 0; i < p->err_streak && d < ERR_BACKOFF_MAX; i++)
			d *= 2;
		p->err_streak++;
		p->err_until = pfs_clock_s() + (d < ERR_BACKOFF_MAX ? d : ERR_BACKOFF_MAX);
	}
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
	struct worker_arg *a = arg;
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

int pfs_prefetch_create(const struct pfs_prefetch_opts *o, struct pfs_prefetch **out)
{
	struct pfs_prefetch *p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->o = *o;
	p->nfiles = pfs_ftable_count(o->ft);
	p->scope = UINT32_MAX;
	p->rng = 0x9e3779b97f4a7c15ull ^ (uint64_t)time(NULL);
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->wake, NULL);
	p->threads = calloc(o->workers ? o->workers : 1, sizeof(*p->threads));
	p->args = calloc(o->workers ? o->workers : 1, sizeof(*p->args));
	if (!p->threads || !p->args) {
		pfs_prefetch_destroy(p);
		return -ENOMEM;
	}
	for (unsigned i = 0; i < o->workers; i++) {
		p->args[i] = (struct worker_arg){p, i};
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
	for (unsigned i = 0; i < PFS_PREFETCH_STREAMS_MAX; i++)
		os_clear(&p->os[i]);
	free(p->perm);
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->wake);
	free(p);
}

/* The subtree the background fill covers: the top-level directory of the
 * files being read, widened to the whole dataset when reads span several. */
static void note_scope(struct pfs_prefetch *p, uint32_t node)
{
	uint32_t top = node;
	for (;;) {
		struct pfs_fnode info;
		if (pfs_ftable_get(p->o.ft, top, &info) < 0)
			return;
		if (info.parent == PFS_FTABLE_ROOT || top == PFS_FTABLE_ROOT)
			break;
		top = info.parent;
	}
	int is_dir;
	file_size(p, top, &is_dir);
	if (!is_dir)
		top = PFS_FTABLE_ROOT;
	if (p->scope == UINT32_MAX || (p->scope != top && p->scope != PFS_FTABLE_ROOT)) {
		p->scope = p->scope == UINT32_MAX ? top : PFS_FTABLE_ROOT;
		p->scope_changed = 1;
	}
}

static void readahead(struct pfs_prefetch *p, uint32_t node, uint64_t size,
		      uint64_t off, size_t len)
{
	struct stream *s = NULL, *victim = &p->streams[0];
	for (int i = 0; i < NSTREAMS; i++) {
		struct stream *c = &p->streams[i];
		if (c->window && c->node == node && c->next_off == off) {
			s = c;
			break;
		}
		if (c->last_use < victim->last_use)
			victim = c;
	}
	uint64_t bs = p->o.block_size;
	uint64_t cur = (off + len - 1) / bs;
	if (!s) { /* a new reader: no readahead until it proves sequential */
		*victim = (struct stream){node, off + len, cur + 1, 1, ++p->clock};
		return;
	}
	s->next_off = off + len;
	s->last_use = ++p->clock;
	if (s->queued_to > cur + 1 + s->window / 2)
		return; /* still well ahead */
	if (s->window < PFS_PREFETCH_RA_MAX)
		s->window *= 2;
	uint64_t nblk = (size + bs - 1) / bs;
	uint64_t from = s->queued_to > cur + 1 ? s->queued_to : cur + 1;
	uint64_t to = cur + 1 + s->window;
	for (uint64_t b = from; b < to && b < nblk && p->ra_n < RA_QUEUE; b++) {
		p->ra[(p->ra_head + p->ra_n++) % RA_QUEUE] = (struct ra_item){node, b};
		s->queued_to = b + 1;
	}
	p->idle_empty = 0;
	pthread_cond_broadcast(&p->wake);
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
	if (size > p->o.block_size)
		readahead(p, node, size, off, len);
	uint32_t at = 0;
	struct ostream *s = p->nos ? os_of_read(p, node, &at) : NULL;
	if (s) {
		double now = pfs_clock_s();
		s->last_use = now;
		if (off == 0) {
			if (s->last_start > 0) {
				double gap = now - s->last_start;
				s->gap_avg = s->gap_avg ? 0.9 * s->gap_avg + 0.1 * gap : gap;
			}
			s->size_avg = s->size_avg ? 0.9 * s->size_avg + 0.1 * (double)size
						  : (double)size;
			s->last_start = now;
			s->starts++;
		}
		if (d) {
			s->hits += d->hits;
			s->misses += d->misses;
			s->stall_ns += d->stall_ns;
			if (d->misses && d->stall_ns) {
				double w = (double)d->stall_ns / 1e9 / d->misses;
				p->miss_avg = p->miss_avg ? 0.875 * p->miss_avg + 0.125 * w : w;
			}
			if (d->misses && p->no_room_at > 0 && now - p->no_room_at < 1.0)
				note_shortfall(p, s, d->misses);
		}
	}
	if (off == 0) {
		int news = 0;
		if (s && at > s->pos) {
			s->pos = at;
			news = s->next < s->n; /* the window moved */
		}
		if (!p->nos) {
			note_scope(p, node);
			news = p->scope_changed ||
			       pfs_epoch_current(p->o.epoch) != p->perm_epoch;
		}
		/* A read may have consumed a staged block: room for more, unless
		 * the workers know there is nothing left to fetch. */
		if (news || !p->idle_empty) {
			p->idle_empty = 0;
			pthread_cond_signal(&p->wake);
		}
	}
	pthread_mutex_unlock(&p->lock);
}

uint64_t pfs_prefetch_order_begin(struct pfs_prefetch *p, const char *name)
{
	if (!name)
		name = PFS_PREFETCH_DEFAULT_STREAM;
	if (!pfs_prefetch_stream_name_ok(name))
		return 0;
	double now = pfs_clock_s();
	pthread_mutex_lock(&p->lock);
	os_expire(p, now);
	struct ostream *s = NULL, *free_slot = NULL, *lru = NULL;
	for (unsigned i = 0; i < PFS_PREFETCH_STREAMS_MAX; i++) {
		struct ostream *c = &p->os[i];
		if (!c->id) {
			if (!free_slot)
				free_slot = c;
			continue;
		}
		if (!strcmp(c->name, name))
			s = c;
		if (!lru || c->last_use < lru->last_use)
			lru = c;
	}
	if (s) {
		os_clear(s); /* its next order: counters restart too */
	} else {
		s = free_slot;
		if (!s) {
			os_clear(lru); /* the least recently used stream ends */
			s = lru;
		} else {
			p->nos++;
		}
	}
	s->id = ++p->os_ids;
	snprintf(s->name, sizeof(s->name), "%s", name);
	s->last_use = now;
	uint64_t id = s->id;
	p->cur_nblk = p->cur_blk = 0; /* drop the background file in progress */
	p->cur_probing = 0;
	p->idle_empty = 0;
	pthread_mutex_unlock(&p->lock);
	return id;
}

uint64_t pfs_prefetch_order_find(struct pfs_prefetch *p, const char *name)
{
	if (!name)
		name = PFS_PREFETCH_DEFAULT_STREAM;
	uint64_t id = 0;
	pthread_mutex_lock(&p->lock);
	for (unsigned i = 0; i < PFS_PREFETCH_STREAMS_MAX; i++)
		if (p->os[i].id && !strcmp(p->os[i].name, name))
			id = p->os[i].id;
	pthread_mutex_unlock(&p->lock);
	return id;
}

void pfs_prefetch_order_add(struct pfs_prefetch *p, uint64_t stream, const uint64_t *objs,
			    size_t n, size_t unknown)
{
	pthread_mutex_lock(&p->lock);
	struct ostream *s = NULL;
	for (unsigned i = 0; i < PFS_PREFETCH_STREAMS_MAX && stream; i++)
		if (p->os[i].id == stream)
			s = &p->os[i];
	if (!s)
		goto out; /* replaced or ended meanwhile */
	s->unknown += unknown;
	s->last_use = pfs_clock_s();
	if (s->n + n > s->cap) {
		size_t cap = s->cap ? s->cap : 1024;
		while (cap < s->n + n)
			cap *= 2;
		uint64_t *o = realloc(s->order, cap * sizeof(*o));
		if (!o) {
			s->unknown += n;
			goto out;
		}
		s->order = o;
		s->cap = cap;
	}
	if (s->n + n >= UINT32_MAX || os_reserve(s, n) < 0) {
		s->unknown += n;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		uint32_t node = PFS_PREFETCH_NODE(objs[i]);
		if (node >= p->nfiles)
			continue;
		s->order[s->n] = objs[i];
		/* A file listed twice keeps its first place; a read of the
		 * file or of any view of it moves the position. */
		os_put(s, node, (uint32_t)(s->n + 1));
		s->n++;
	}
	p->idle_empty = 0;
	pthread_cond_broadcast(&p->wake);
out:
	pthread_mutex_unlock(&p->lock);
}

void pfs_prefetch_stats(struct pfs_prefetch *p, struct pfs_prefetch_stats *out)
{
	pthread_mutex_lock(&p->lock);
	*out = p->st;
	out->inflight = p->inflight;
	out->order_entries = out->order_unknown = out->order_position = 0;
	for (unsigned i = 0; i < PFS_PREFETCH_STREAMS_MAX; i++) {
		if (!p->os[i].id)
			continue;
		out->order_entries += p->os[i].n;
		out->order_unknown += p->os[i].unknown;
		out->order_position += p->os[i].pos;
	}
	out->order_streams = p->nos;
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
	size_t k = 0;
	double now = pfs_clock_s();
	pthread_mutex_lock(&p->lock);
	os_expire(p, now);
	for (unsigned i = 0; i < PFS_PREFETCH_STREAMS_MAX && k < max; i++) {
		const struct ostream *s = &p->os[i];
		if (!s->id)
			continue;
		struct pfs_prefetch_stream_stats *o = &out[k++];
		memcpy(o->name, s->name, sizeof(o->name));
		o->entries = s->n;
		o->unknown = s->unknown;
		o->position = s->pos;
		o->demand_hits = s->hits;
		o->demand_misses = s->misses;
		o->stall_ns = s->stall_ns;
		o->shortfall = s->shortfall;
		o->idle_s = now - s->last_use;
	}
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
