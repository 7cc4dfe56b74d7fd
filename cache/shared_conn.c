/* shared_conn.c - the shared tier's connection layer (shared_int.h): the
 * server list, the pool of connections, and the health of each server.
 *
 * Failed servers: libmemcached 1.1.4 ejects a server that refuses
 * connections but never one that times out (a hung host cost every
 * request the full timeout: measured), and each connection would learn on
 * its own. So the health of each server is kept here, once per process: a
 * request refused or reset, or a second timeout in a row, marks its server
 * down for `retry` seconds (a single slow answer on a loaded host does
 * not). Requests are routed with the *_by_key calls: a key goes where
 * ketama puts it, else, while that server is down, where ketama puts
 * "KEY#1", "KEY#2", ... (the first live one). Every node computes the same
 * fallback, so a dead server's keys fall to the same other servers
 * everywhere; nodes may disagree for a while about which servers are
 * alive, which costs misses, never bytes: every value is checked on the
 * way in (shared.c).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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
	if (memcached_server_add(s->master, host, (in_port_t)port) != MEMCACHED_SUCCESS)
		return -EINVAL;
	s->nservers++;
	return 0;
}

int shared_servers_add(struct pfs_shared *s, const char *spec, char *err, size_t errcap)
{
	int rc = each_server(spec, add_server, s, err, errcap);
	return rc < 0 ? rc : 0;
}

int shared_configure(struct pfs_shared *s)
{
	memcached_st *m = s->master;
	uint64_t ms = (uint64_t)(s->timeout * 1000.0 + 0.5);
	if (ms == 0)
		ms = 1;
	struct {
		memcached_behavior_t b;
		uint64_t v;
	} set[] = {
		{MEMCACHED_BEHAVIOR_KETAMA, 1}, /* consistent hashing, MD5 ring */
		{MEMCACHED_BEHAVIOR_NO_BLOCK, 1},
		{MEMCACHED_BEHAVIOR_TCP_NODELAY, 1},
		{MEMCACHED_BEHAVIOR_CONNECT_TIMEOUT, ms},
		{MEMCACHED_BEHAVIOR_POLL_TIMEOUT, ms},
		{MEMCACHED_BEHAVIOR_SND_TIMEOUT, ms * 1000},
		{MEMCACHED_BEHAVIOR_RCV_TIMEOUT, ms * 1000},
		/* The ring never changes (route() steers around servers that
		 * are down), so every clone and every node hashes alike. */
		{MEMCACHED_BEHAVIOR_REMOVE_FAILED_SERVERS, 0},
		{MEMCACHED_BEHAVIOR_RETRY_TIMEOUT, s->retry < 1 ? 1 : (uint64_t)s->retry},
	};
	for (size_t i = 0; i < sizeof(set) / sizeof(set[0]); i++)
		if (memcached_behavior_set(m, set[i].b, set[i].v) != MEMCACHED_SUCCESS) {
			pfs_err("shared cache: libmemcached refused behavior %d", (int)set[i].b);
			return -EINVAL;
		}
	return 0;
}

/* ---- the pool ------------------------------------------------------------ */

int shared_pool_init(struct pfs_shared *s)
{
	pthread_condattr_t ca;
	if (pthread_mutex_init(&s->pool.lock, NULL))
		return -ENOMEM;
	if (pthread_condattr_init(&ca) || pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) ||
	    pthread_cond_init(&s->pool.cond, &ca)) {
		pthread_mutex_destroy(&s->pool.lock);
		return -ENOMEM;
	}
	pthread_condattr_destroy(&ca);
	return 0;
}

void shared_pool_fini(struct pfs_shared *s)
{
	for (size_t i = 0; i < s->pool.nidle; i++)
		memcached_free(s->pool.idle[i]);
	pthread_cond_destroy(&s->pool.cond);
	pthread_mutex_destroy(&s->pool.lock);
}

memcached_st *shared_conn_get(struct pfs_shared *s)
{
	struct conn_pool *p = &s->pool;
	struct timespec dl;
	clock_gettime(CLOCK_MONOTONIC, &dl);
	uint64_t ns = (uint64_t)dl.tv_nsec + (uint64_t)(s->timeout * 1e9);
	dl.tv_sec += (time_t)(ns / 1000000000u);
	dl.tv_nsec = (long)(ns % 1000000000u);
	memcached_st *m = NULL;
	pthread_mutex_lock(&p->lock);
	while (!p->nidle && p->created == PFS_SHARED_CONNS)
		if (pthread_cond_timedwait(&p->cond, &p->lock, &dl) == ETIMEDOUT)
			break;
	if (p->nidle)
		m = p->idle[--p->nidle];
	else if (p->created < PFS_SHARED_CONNS)
		p->created++; /* clone outside the lock */
	else {
		pthread_mutex_unlock(&p->lock);
		pfs_add(&s->st_busy, 1);
		return NULL;
	}
	pthread_mutex_unlock(&p->lock);
	if (m)
		return m;
	if (!(m = memcached_clone(NULL, s->master))) {
		pthread_mutex_lock(&p->lock);
		p->created--;
		pthread_cond_signal(&p->cond);
		pthread_mutex_unlock(&p->lock);
		pfs_add(&s->st_errors, 1);
	}
	return m;
}

void shared_conn_put(struct pfs_shared *s, memcached_st *m)
{
	struct conn_pool *p = &s->pool;
	pthread_mutex_lock(&p->lock);
	p->idle[p->nidle++] = m;
	pthread_cond_signal(&p->cond);
	pthread_mutex_unlock(&p->lock);
}

/* ---- routing and health ---------------------------------------------------- */

static int server_index(const struct pfs_shared *s, const memcached_instance_st *inst)
{
	if (!inst)
		return -1;
	const char *name = memcached_server_name(inst);
	unsigned port = memcached_server_port(inst);
	for (size_t i = 0; i < s->nservers; i++)
		if (s->servers[i].port == port && name && !strcmp(s->servers[i].name, name))
			return (int)i;
	return -1;
}

/* Picks the group key of a request about `key`: key itself, else the
 * first "key#i" whose server is up. -EHOSTDOWN when every try lands on a
 * server that is down (the request is skipped: a miss, no wait). */
int shared_route(struct pfs_shared *s, memcached_st *m, const struct pfs_shared_key *key,
		 struct route *r)
{
	uint64_t now = pfs_clock_ns();
	for (int i = 0; i < ROUTE_TRIES; i++) {
		if (i == 0)
			r->gkl = (size_t)snprintf(r->gk, sizeof(r->gk), "%s", key->k);
		else
			r->gkl = (size_t)snprintf(r->gk, sizeof(r->gk), "%s#%d", key->k, i);
		memcached_return_t rc;
		r->idx = server_index(s, memcached_server_by_key(m, r->gk, r->gkl, &rc));
		if (r->idx < 0)
			return -EHOSTDOWN;
		if (pfs_load(&s->servers[r->idx].down_until) <= now)
			return 0;
	}
	pfs_add(&s->st_skipped, 1);
	return -EHOSTDOWN;
}

/* A failure at the connection level (refused, reset, timed out): the
 * server is left out for `retry` seconds. */
static int is_down(memcached_return_t rc)
{
	switch (rc) {
	case MEMCACHED_TIMEOUT:
	case MEMCACHED_CONNECTION_FAILURE:
	case MEMCACHED_CONNECTION_SOCKET_CREATE_FAILURE:
	case MEMCACHED_HOST_LOOKUP_FAILURE:
	case MEMCACHED_SERVER_MARKED_DEAD:
	case MEMCACHED_SERVER_TEMPORARILY_DISABLED:
	case MEMCACHED_ERRNO:
	case MEMCACHED_READ_FAILURE:
	case MEMCACHED_WRITE_FAILURE:
	case MEMCACHED_UNKNOWN_READ_FAILURE:
	case MEMCACHED_PARTIAL_READ:
	case MEMCACHED_PROTOCOL_ERROR:
	case MEMCACHED_NO_SERVERS:
		return 1;
	default:
		return 0;
	}
}

/* After every request: a server that answered (whatever it said) has
 * no timeouts in a row. */
void shared_seen(struct pfs_shared *s, const struct route *r, memcached_return_t rc)
{
	if (!is_down(rc) && pfs_load(&s->servers[r->idx].timeouts))
		pfs_store(&s->servers[r->idx].timeouts, 0);
}

/* Counts a failed request, and marks its server down when it refused or
 * reset, or timed out twice in a row (one slow answer on a loaded host
 * does not take a server out); the log lines are rate-limited. */
void shared_failure(struct pfs_shared *s, memcached_st *m, const struct route *r,
		    memcached_return_t rc, const char *what)
{
	int down = is_down(rc);
	if (rc == MEMCACHED_TIMEOUT) {
		pfs_add(&s->st_timeouts, 1);
		down = pfs_add(&s->servers[r->idx].timeouts, 1) >= TIMEOUTS_DOWN;
	} else {
		pfs_add(&s->st_errors, 1);
	}
	const char *why = memcached_strerror(m, rc);
	char key[64];
	if (down) {
		struct server *sv = &s->servers[r->idx];
		pfs_store(&sv->down_until, pfs_clock_ns() + (uint64_t)(s->retry * 1e9));
		snprintf(key, sizeof(key), "shared:down:%d", r->idx);
		pfs_log_limited(PFS_LOG_WARN, key, "shared cache: server %s:%u failed (%s on %s): "
				"left out for %.0f s", sv->name, sv->port, why, what, s->retry);
		return;
	}
	snprintf(key, sizeof(key), "shared:%s:%d", what, (int)rc);
	pfs_log_limited(PFS_LOG_WARN, key, "shared cache: %s failed: %s", what, why);
}

