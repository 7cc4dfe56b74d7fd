/* shared_conn.c - the shared tier's server layer (shared_int.h): the
 * server list, the hash ring, and each server's latency and health.
 *
 * Routing: a ring of RING_POINTS points per server (XXH3 of "host:port-i"),
 * a key going to the first point at or after its own hash. Every node
 * builds the same ring from the same list, so the nodes' caches add up.
 * While a server is out, its keys go where the ring puts "KEY#1",
 * "KEY#2", ... (the first that is up): the same fallback on every node.
 *
 * Slow is not dead. A refused or reset connection takes a server out for
 * `retry` seconds at once; a timeout does only when FAILS_DOWN of them
 * come within FAIL_WINDOW_NS without an answer in between. Each exchange
 * gets a deadline from its server's own latency, as TCP's retransmission
 * timeout: smoothed latency plus four mean deviations (RFC 6298), one
 * estimate for exchanges that carry a block and one for the small ones,
 * clamped to [DEADLINE_FLOOR, timeout]; before its first answers, the
 * ceiling. So a loaded node that answers a 1 MiB value in 80 ms is
 * waited for, and a hung server costs each read one deadline of what
 * that server usually takes, until it is taken out.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "shared_int.h"
#include "../util/atomic.h"
#include "../util/clock.h"
#include "../util/log.h"

/* ---- server list ------------------------------------------------------- */
/* Calls fn for each "host:port" of spec; stops at the first error. */
static int each_server(const char *spec, int (*fn)(void *, const char *, unsigned), void *ctx,
		       char *err, size_t errcap)
{
	if (!strncmp(spec, "memcached://", 12))
		spec += 12;
	int n = 0;
	const char *p = spec;
	while (*p) {
		size_t l = strcspn(p, "+, \t");
		if (l == 0) {
			p++;
			continue;
		}
		char item[300], host[HOST_MAX];
		if (l >= sizeof(item)) {
			snprintf(err, errcap, "server name too long");
			return -EINVAL;
		}
		memcpy(item, p, l);
		item[l] = 0;
		p += l;
		if (strstr(item, "://")) {
			snprintf(err, errcap, "'%s': the memcached:// prefix goes once, before "
				 "the first server", item);
			return -EINVAL;
		}
		const char *colon;
		size_t hl;
		if (item[0] == '[') {
			const char *close = strchr(item, ']');
			if (!close || close[1] != ':') {
				snprintf(err, errcap, "'%s': want [ADDRESS]:PORT", item);
				return -EINVAL;
			}
			hl = (size_t)(close - item - 1);
			if (hl >= sizeof(host))
				goto too_long;
			memcpy(host, item + 1, hl);
			colon = close + 1;
		} else {
			colon = strrchr(item, ':');
			if (!colon || colon == item) {
				snprintf(err, errcap, "'%s': want HOST:PORT", item);
				return -EINVAL;
			}
			hl = (size_t)(colon - item);
			if (hl >= sizeof(host))
				goto too_long;
			memcpy(host, item, hl);
		}
		host[hl] = 0;
		char *end;
		errno = 0;
		unsigned long port = strtoul(colon + 1, &end, 10);
		if (!colon[1] || *end || errno || port < 1 || port > 65535 || hl == 0) {
			snprintf(err, errcap, "'%s': want HOST:PORT with a port "
				 "from 1 to 65535", item);
			return -EINVAL;
		}
		if (fn) {
			int rc = fn(ctx, host, (unsigned)port);
			if (rc < 0) {
				snprintf(err, errcap, "'%s': cannot be added", item);
				return rc;
			}
		}
		n++;
	}
	if (n == 0) {
		snprintf(err, errcap, "no server in '%s'", spec);
		return -EINVAL;
	}
	return n;
too_long:
	snprintf(err, errcap, "a host name longer than %d bytes", HOST_MAX - 1);
	return -EINVAL;
}

int pfs_shared_parse_servers(const char *spec, char *err, size_t errcap)
{
	int rc = each_server(spec, NULL, NULL, err, errcap);
	return rc < 0 ? rc : 0;
}

static int add_server(void *ctx, const char *host, unsigned port)
{
	struct pfs_shared *s = ctx;
	struct server *n = realloc(s->servers, (s->nservers + 1) * sizeof(*n));
	if (!n)
		return -ENOMEM;
	s->servers = n;
	n = &s->servers[s->nservers];
	memset(n, 0, sizeof(*n));
	snprintf(n->name, sizeof(n->name), "%s", host);
	n->port = port;
	if (pthread_mutex_init(&n->lock, NULL))
		return -ENOMEM;
	if (pfs_mc_server_create(host, port, &n->mc) < 0) {
		pthread_mutex_destroy(&n->lock);
		return -ENOMEM;
	}
	s->nservers++;
	return 0;
}

static int point_cmp(const void *a, const void *b)
{
	const struct ring_point *x = a, *y = b;
	return x->h < y->h ? -1 : x->h > y->h ? 1 : (x->idx > y->idx) - (x->idx < y->idx);
}

static int ring_build(struct pfs_shared *s)
{
	s->nring = s->nservers * RING_POINTS;
	s->ring = calloc(s->nring, sizeof(*s->ring));
	if (!s->ring)
		return -ENOMEM;
	size_t k = 0;
	for (size_t i = 0; i < s->nservers; i++)
		for (int p = 0; p < RING_POINTS; p++) {
			char id[HOST_MAX + 32];
			int n = snprintf(id, sizeof(id), "%s:%u-%d", s->servers[i].name,
					 s->servers[i].port, p);
			s->ring[k++] = (struct ring_point){XXH3_64bits(id, (size_t)n), (uint32_t)i};
		}
	qsort(s->ring, s->nring, sizeof(*s->ring), point_cmp);
	return 0;
}

int shared_servers_add(struct pfs_shared *s, const char *spec, char *err, size_t errcap)
{
	int rc = each_server(spec, add_server, s, err, errcap);
	if (rc < 0)
		return rc;
	if (ring_build(s) < 0) {
		snprintf(err, errcap, "out of memory");
		return -ENOMEM;
	}
	return 0;
}

void shared_servers_free(struct pfs_shared *s)
{
	for (size_t i = 0; i < s->nservers; i++) {
		pfs_mc_server_destroy(s->servers[i].mc);
		pthread_mutex_destroy(&s->servers[i].lock);
	}
	free(s->servers);
	free(s->ring);
}

/* ---- routing ----------------------------------------------------------------- */

static int ring_lookup(const struct pfs_shared *s, const char *k, size_t kl)
{
	uint64_t h = XXH3_64bits(k, kl);
	size_t lo = 0, hi = s->nring;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (s->ring[mid].h < h)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (int)s->ring[lo == s->nring ? 0 : lo].idx;
}

double shared_deadline_s(struct pfs_shared *s, int idx, enum xkind kind)
{
	struct server *sv = &s->servers[idx];
	pthread_mutex_lock(&sv->lock);
	struct est e = sv->est[kind];
	pthread_mutex_unlock(&sv->lock);
	double floor = DEADLINE_FLOOR < s->timeout ? DEADLINE_FLOOR : s->timeout;
	if (e.n < 1)
		return s->timeout;
	double d = e.srtt + 4 * e.rttvar;
	return d < floor ? floor : d > s->timeout ? s->timeout : d;
}

int shared_route(struct pfs_shared *s, const struct pfs_shared_key *key, enum xkind kind,
		 struct route *r)
{
	uint64_t now = pfs_clock_ns();
	for (int i = 0; i < ROUTE_TRIES; i++) {
		char gk[PFS_SHARED_KEY_MAX + 8];
		int n = i == 0 ? snprintf(gk, sizeof(gk), "%s", key->k)
			       : snprintf(gk, sizeof(gk), "%s#%d", key->k, i);
		int idx = ring_lookup(s, gk, (size_t)n);
		if (pfs_load(&s->servers[idx].down_until) > now)
			continue;
		r->idx = idx;
		r->kind = kind;
		r->t0 = now;
		r->deadline = now + (uint64_t)(shared_deadline_s(s, idx, kind) * 1e9);
		uint64_t stop = pfs_load(&s->stop_deadline);
		if (stop && stop < r->deadline)
			r->deadline = stop; /* unmounting: nothing outlives it */
		return 0;
	}
	pfs_add(&s->st_skipped, 1);
	return -EHOSTDOWN;
}

/* ---- health -------------------------------------------------------------------- */

void shared_answered(struct pfs_shared *s, const struct route *r, enum xkind kind)
{
	struct server *sv = &s->servers[r->idx];
	double t = (double)(pfs_clock_ns() - r->t0) / 1e9;
	pthread_mutex_lock(&sv->lock);
	struct est *e = &sv->est[kind];
	if (e->n == 0) {
		e->srtt = t;
		e->rttvar = t / 2;
	} else {
		double d = e->srtt > t ? e->srtt - t : t - e->srtt;
		e->rttvar = 0.75 * e->rttvar + 0.25 * d;
		e->srtt = 0.875 * e->srtt + 0.125 * t;
	}
	if (e->n < 1000000)
		e->n++;
	sv->fails = 0;
	pthread_mutex_unlock(&sv->lock);
	(void)s;
}

void shared_failure(struct pfs_shared *s, const struct route *r, int err, const char *what)
{
	struct server *sv = &s->servers[r->idx];
	uint64_t now = pfs_clock_ns();
	int down = pfs_mc_is_dead(err);
	if (err == -ETIMEDOUT)
		pfs_add(&s->st_timeouts, 1);
	else
		pfs_add(&s->st_errors, 1);
	if (!down) {
		pthread_mutex_lock(&sv->lock);
		if (!sv->fails || now - sv->fail_since > FAIL_WINDOW_NS) {
			sv->fails = 0;
			sv->fail_since = now;
		}
		down = ++sv->fails >= FAILS_DOWN;
		if (down)
			sv->fails = 0;
		pthread_mutex_unlock(&sv->lock);
	}
	const char *why = err == -ETIMEDOUT ? "no answer within its deadline" :
			  err == -EFBIG ? "a value longer than a block" :
			  err == -EPROTO ? "an answer outside the protocol" : strerror(-err);
	char key[64];
	if (down) {
		pfs_store(&sv->down_until, now + (uint64_t)(s->retry * 1e9));
		snprintf(key, sizeof(key), "shared:down:%d", r->idx);
		pfs_log_limited(PFS_LOG_WARN, key, "shared cache: server %s:%u failed (%s on %s): "
				"left out for %.0f s", sv->name, sv->port, why, what, s->retry);
		return;
	}
	snprintf(key, sizeof(key), "shared:%s:%d", what, -err);
	pfs_log_limited(PFS_LOG_WARN, key, "shared cache: %s on %s:%u failed: %s", what,
			sv->name, sv->port, why);
}
