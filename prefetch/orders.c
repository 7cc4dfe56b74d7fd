/* orders.c - prefetch_int.h's order streams (prefetch.h, source 2, and
 * "Order streams"): each stream's order, a hash of where its files are in
 * it, its position and its window ahead of its reader. Lock held in every
 * pf_ord_ function.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prefetch_int.h"
#include "../util/clock.h"
#include "../util/log.h"

int pfs_prefetch_stream_name_ok(const char *name)
{
	size_t n = strlen(name);
	return n >= 1 && n <= PFS_PREFETCH_STREAM_NAME_MAX &&
	       strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
			    "0123456789._:-") == n;
}

/* ---- one stream's hash of its files -------------------------------------- */

static uint32_t hash32(uint32_t x)
{
	x ^= x >> 16;
	x *= 0x7feb352dU;
	x ^= x >> 15;
	x *= 0x846ca68bU;
	return x ^ (x >> 16);
}

/* The first index + 1 of node in s's order, 0 if absent. */
static uint32_t find(const struct pf_stream *s, uint32_t node)
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

static void put(struct pf_stream *s, uint32_t node, uint32_t val)
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
static int reserve(struct pf_stream *s, size_t more)
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
	struct pf_stream old = *s;
	s->keys = k;
	s->vals = v;
	s->hcap = cap;
	s->hused = 0;
	for (size_t i = 0; i < old.hcap; i++)
		if (old.keys[i])
			put(s, old.keys[i] - 1, old.vals[i]);
	free(old.keys);
	free(old.vals);
	return 0;
}

static void clear(struct pf_stream *s)
{
	free(s->order);
	free(s->keys);
	free(s->vals);
	memset(s, 0, sizeof(*s));
}

/* ---- the streams ---------------------------------------------------------- */

void pf_ord_expire(struct pfs_prefetch *p, double now)
{
	struct pf_orders *ord = &p->ord;
	if (now - ord->expired < 1.0)
		return;
	ord->expired = now;
	for (unsigned i = 0; i < PFS_PREFETCH_STREAMS_MAX; i++)
		if (ord->s[i].id && now - ord->s[i].last_use > PFS_PREFETCH_STREAM_IDLE_S) {
			clear(&ord->s[i]);
			ord->live--;
		}
}

/* With the cache's room as the limit (a RAM tier smaller than the data),
 * in-turn order let three ranks' windows fill the staging area while the
 * fourth, the one about to run dry, waited its turn for each freed block:
 * 20-100 demand misses in one rank's epoch of 501 reads (test_ranks).
 * Hence the stream least far ahead first. */
int pf_ord_next(struct pfs_prefetch *p, uint64_t *obj)
{
	struct pf_orders *ord = &p->ord;
	struct pf_stream *best = NULL;
	unsigned best_i = 0;
	uint64_t best_lead = UINT64_MAX;
	pf_ord_expire(p, pfs_clock_s());
	for (unsigned k = 0; k < PFS_PREFETCH_STREAMS_MAX; k++) {
		unsigned i = (ord->rr + k) % PFS_PREFETCH_STREAMS_MAX;
		struct pf_stream *s = &ord->s[i];
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
	*obj = best->order[best->next++];
	ord->rr = best_i + 1;
	return 1;
}

int pf_ord_want(const struct pfs_prefetch *p)
{
	for (unsigned i = 0; i < PFS_PREFETCH_STREAMS_MAX; i++) {
		const struct pf_stream *s = &p->ord.s[i];
		uint64_t next = s->next > s->pos ? s->next : s->pos;
		if (s->id && next < s->n && next < s->pos + p->o.window)
			return 1;
	}
	return 0;
}

/* The stream a read of `node` belongs to: the one whose order holds it
 * nearest to its position (ahead, or behind by as much), or NULL. *idx:
 * its index there + 1. */
static struct pf_stream *stream_of_read(struct pfs_prefetch *p, uint32_t node, uint32_t *idx)
{
	struct pf_stream *best = NULL;
	uint64_t best_d = UINT64_MAX;
	for (unsigned i = 0; i < PFS_PREFETCH_STREAMS_MAX && p->ord.live; i++) {
		struct pf_stream *s = &p->ord.s[i];
		uint32_t at = s->id ? find(s, node) : 0;
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

/* A stream's read missed while the cache had no room for what the streams
 * wanted ahead: counted, and said once with what the streams need, as far
 * as the daemon can see it (it does not know the batch). */
static void note_shortfall(struct pfs_prefetch *p, struct pf_stream *s, uint32_t misses)
{
	struct pf_orders *ord = &p->ord;
	s->shortfall += misses;
	p->st.order_shortfall += misses;
	if (ord->warned_short)
		return;
	double rate = 0, bytes = 0;
	uint64_t starts = 0;
	for (unsigned i = 0; i < PFS_PREFETCH_STREAMS_MAX; i++) {
		const struct pf_stream *o = &ord->s[i];
		starts += o->id ? o->starts : 0;
		if (o->id && o->gap_avg > 0) {
			rate += 1.0 / o->gap_avg;
			bytes += o->size_avg / o->gap_avg;
		}
	}
	if (starts < 32)
		return; /* said once there are rates to say it with */
	ord->warned_short = 1;
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
		 "prefetch_ram_share). Counted in stream.shortfall", s->name, ord->live, rate,
		 bytes / 1e6, fetch * 1e3, need / (1 << 20));
}

int pf_ord_note(struct pfs_prefetch *p, uint32_t node, uint64_t size, uint64_t off,
		const struct pfs_prefetch_demand *d)
{
	uint32_t at = 0;
	struct pf_stream *s = stream_of_read(p, node, &at);
	if (!s)
		return 0;
	double now = pfs_clock_s();
	s->last_use = now;
	if (off == 0) {
		if (s->last_start > 0) {
			double gap = now - s->last_start;
			s->gap_avg = s->gap_avg ? 0.9 * s->gap_avg + 0.1 * gap : gap;
		}
		s->size_avg = s->size_avg ? 0.9 * s->size_avg + 0.1 * (double)size : (double)size;
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
	if (off == 0 && at > s->pos) {
		s->pos = at;
		return s->next < s->n; /* the window moved */
	}
	return 0;
}

uint64_t pf_ord_begin(struct pfs_prefetch *p, const char *name)
{
	struct pf_orders *ord = &p->ord;
	double now = pfs_clock_s();
	pf_ord_expire(p, now);
	struct pf_stream *s = NULL, *free_slot = NULL, *lru = NULL;
	for (unsigned i = 0; i < PFS_PREFETCH_STREAMS_MAX; i++) {
		struct pf_stream *c = &ord->s[i];
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
		clear(s); /* its next order: counters restart too */
	} else {
		s = free_slot;
		if (!s) {
			clear(lru); /* the least recently used stream ends */
			s = lru;
		} else {
			ord->live++;
		}
	}
	s->id = ++ord->ids;
	snprintf(s->name, sizeof(s->name), "%s", name);
	s->last_use = now;
	return s->id;
}

uint64_t pf_ord_find(const struct pfs_prefetch *p, const char *name)
{
	uint64_t id = 0;
	for (unsigned i = 0; i < PFS_PREFETCH_STREAMS_MAX; i++)
		if (p->ord.s[i].id && !strcmp(p->ord.s[i].name, name))
			id = p->ord.s[i].id;
	return id;
}

int pf_ord_add(struct pfs_prefetch *p, uint64_t id, const uint64_t *objs, size_t n,
	       size_t unknown)
{
	struct pf_stream *s = NULL;
	for (unsigned i = 0; i < PFS_PREFETCH_STREAMS_MAX && id; i++)
		if (p->ord.s[i].id == id)
			s = &p->ord.s[i];
	if (!s)
		return 0; /* replaced or ended meanwhile */
	s->unknown += unknown;
	s->last_use = pfs_clock_s();
	if (s->n + n > s->cap) {
		size_t cap = s->cap ? s->cap : 1024;
		while (cap < s->n + n)
			cap *= 2;
		uint64_t *o = realloc(s->order, cap * sizeof(*o));
		if (!o) {
			s->unknown += n;
			return 0;
		}
		s->order = o;
		s->cap = cap;
	}
	if (s->n + n >= UINT32_MAX || reserve(s, n) < 0) {
		s->unknown += n;
		return 0;
	}
	for (size_t i = 0; i < n; i++) {
		uint32_t node = PFS_PREFETCH_NODE(objs[i]);
		if (node >= p->nfiles)
			continue;
		s->order[s->n] = objs[i];
		/* A file listed twice keeps its first place; a read of the
		 * file or of any view of it moves the position. */
		put(s, node, (uint32_t)(s->n + 1));
		s->n++;
	}
	return 1;
}

void pf_ord_stats(const struct pfs_prefetch *p, struct pfs_prefetch_stats *out)
{
	out->order_entries = out->order_unknown = out->order_position = 0;
	for (unsigned i = 0; i < PFS_PREFETCH_STREAMS_MAX; i++) {
		const struct pf_stream *s = &p->ord.s[i];
		if (!s->id)
			continue;
		out->order_entries += s->n;
		out->order_unknown += s->unknown;
		out->order_position += s->pos;
	}
	out->order_streams = p->ord.live;
}

size_t pf_ord_streams(struct pfs_prefetch *p, struct pfs_prefetch_stream_stats *out,
		      size_t max, double now)
{
	size_t k = 0;
	pf_ord_expire(p, now);
	for (unsigned i = 0; i < PFS_PREFETCH_STREAMS_MAX && k < max; i++) {
		const struct pf_stream *s = &p->ord.s[i];
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
	return k;
}

void pf_ord_free(struct pfs_prefetch *p)
{
	for (unsigned i = 0; i < PFS_PREFETCH_STREAMS_MAX; i++)
		clear(&p->ord.s[i]);
	p->ord.live = 0;
}
