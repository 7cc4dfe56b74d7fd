/* shared.c - see shared.h.
 *
 * Connections: a libmemcachedutil pool of clones of one configured handle
 * (ketama, non-blocking sockets, every timeout set to `timeout`).
 *
 * Failed servers: libmemcached 1.1.4 ejects a server that refuses
 * connections but never one that times out (a hung host costs every
 * request the full timeout: measured), and each clone would learn on its
 * own. So the health of each server is kept here, once per process: a
 * request refused or reset, or a second timeout in a row, marks its server
 * down for `retry` seconds (a single slow answer on a loaded host does not). Requests are routed with the *_by_key calls: a
 * key goes where ketama puts it, else, while that server is down, where
 * ketama puts "KEY#1", "KEY#2", ... (the first live one). Every node
 * computes the same fallback, so a dead server's keys fall to the same
 * other servers everywhere; nodes may disagree for a while about which
 * servers are alive, which costs misses, never bytes, because every value
 * is checked on the way in.
 *
 * Stores: one writer thread drains a FIFO queue bounded in bytes; it
 * builds each value (header, validator, block) in one buffer it reuses
 * (its pages stay touched), so the fill path pays no copy unless the
 * caller asked for one.
 *
 * Value layout (little-endian; all nodes of a cluster run one arch):
 *   struct hdr | validator (vlen bytes) | block (len bytes)
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <libmemcached/memcached.h>
#include <libmemcached/util.h>
#include <xxhash.h>

#include "shared.h"
#include "../util/atomic.h"
#include "../util/clock.h"
#include "../util/log.h"

#define MAGIC 0x42534650u /* "PFSB" */
#define FORMAT 1
#define LOCK_TTL 2        /* s; memcached expiry is in whole seconds */
#define POLL_MIN_NS 2000000ull
#define POLL_MAX_NS 20000000ull
#define ROUTE_TRIES 8     /* "KEY#1".."KEY#7" after KEY itself */
#define TIMEOUTS_DOWN 2   /* timeouts in a row that take a server out */

struct server {
	char name[256];
	unsigned port;
	uint64_t down_until; /* atomic: CLOCK_MONOTONIC ns; 0: up */
	uint32_t timeouts;   /* atomic: timeouts since its last answer */
};

/* Where one request goes: the group key that picks the server. */
struct route {
	char gk[PFS_SHARED_KEY_MAX + 8];
	size_t gkl;
	int idx;           /* index in servers[] */
};

struct hdr {
	uint32_t magic;
	uint8_t format, vlen;
	uint16_t zero;
	uint32_t len;
	uint32_t zero2;
	uint64_t kh[2];
	uint64_t sum;
};

struct qitem {
	struct qitem *next;
	struct pfs_shared_key key;
	char v[PFS_SHARED_VALIDATOR_MAX];
	const void *data;  /* NULL: an unlock only */
	size_t len;
	void (*release)(void *);
	void *arg;
	int unlock;
};

struct pfs_shared {
	memcached_st *master;
	memcached_pool_st *pool;
	char *origin_id;
	size_t block_size;
	double timeout, lock_wait, retry;
	struct server *servers; /* set at create; down_until atomic */
	size_t nservers;

	pthread_mutex_t q_lock;
	pthread_cond_t q_cond;   /* work queued, or stop */
	pthread_cond_t q_done;   /* queue drained */
	struct qitem *q_head, *q_tail; /* guarded by q_lock */
	uint64_t q_bytes;        /* guarded by q_lock */
	uint64_t q_n;            /* guarded by q_lock: queued + being stored */
	int stop;                /* guarded by q_lock */
	pthread_t writer;

	/* counters: pfs_add/pfs_load */
	uint64_t st_hits, st_misses, st_stores, st_bytes, st_errors, st_timeouts,
		st_bad, st_stale, st_waits, st_wait_hits, st_big, st_dropped, st_skipped;
	int warned_big;          /* atomic: the too-large warning was given */
};

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
		char item[300], host[256];
		if (l >= sizeof(item)) {
			snprintf(err, errcap, "server name too long");
			return -EINVAL;
		}
		memcpy(item, p, l);
		item[l] = 0;
		p += l;
		const char *colon;
		size_t hl;
		if (item[0] == '[') {
			const char *close = strchr(item, ']');
			if (!close || close[1] != ':') {
				snprintf(err, errcap, "'%s': want [ADDRESS]:PORT", item);
				return -EINVAL;
			}
			hl = (size_t)(close - item - 1);
			memcpy(host, item + 1, hl);
			colon = close + 1;
		} else {
			colon = strrchr(item, ':');
			if (!colon || colon == item) {
				snprintf(err, errcap, "'%s': want HOST:PORT", item);
				return -EINVAL;
			}
			hl = (size_t)(colon - item);
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

/* ---- connections ------------------------------------------------------- */

static memcached_st *conn_get(struct pfs_shared *s)
{
	struct timespec rel = { (time_t)s->timeout,
				(long)((s->timeout - (double)(time_t)s->timeout) * 1e9) };
	memcached_return_t rc;
	memcached_st *m = memcached_pool_fetch(s->pool, &rel, &rc);
	if (!m)
		pfs_add(&s->st_timeouts, 1);
	return m;
}

static void conn_put(struct pfs_shared *s, memcached_st *m)
{
	memcached_pool_release(s->pool, m);
}

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
static int route(struct pfs_shared *s, memcached_st *m, const struct pfs_shared_key *key,
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
static void seen(struct pfs_shared *s, const struct route *r, memcached_return_t rc)
{
	if (!is_down(rc) && pfs_load(&s->servers[r->idx].timeouts))
		pfs_store(&s->servers[r->idx].timeouts, 0);
}

/* Counts a failed request, and marks its server down when it refused or
 * reset, or timed out twice in a row (one slow answer on a loaded host
 * does not take a server out); the log lines are rate-limited. */
static void note_failure(struct pfs_shared *s, memcached_st *m, const struct route *r,
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

/* ---- keys and values ----------------------------------------------------- */

void pfs_shared_key(const struct pfs_shared *s, const char *path, uint64_t size, uint64_t fp,
		    uint64_t blk, struct pfs_shared_key *out)
{
	/* The context (origin, size, listing fingerprint, block size) seeds
	 * the path's hash. */
	uint64_t nums[4] = { XXH3_64bits(s->origin_id, strlen(s->origin_id)), size, fp,
			     s->block_size };
	XXH128_hash_t c = XXH3_128bits(nums, sizeof(nums));
	XXH128_hash_t h = XXH3_128bits_withSeed(path, strlen(path), c.low64 ^ c.high64);
	int n = snprintf(out->k, sizeof(out->k), "pfs1:%016llx%016llx:%llx",
			 (unsigned long long)h.high64, (unsigned long long)h.low64,
			 (unsigned long long)blk);
	out->klen = (size_t)n;
	XXH128_hash_t kh = XXH3_128bits(out->k, out->klen);
	out->h[0] = kh.low64;
	out->h[1] = kh.high64;
}

static uint64_t value_sum(const struct pfs_shared_key *key, const char *v, size_t vlen,
			  const void *data, size_t len)
{
	return XXH3_64bits_withSeed(data, len, key->h[0] ^ XXH3_64bits(v, vlen));
}

/* 0 when val is a good value of key with len bytes: block into buf,
 * validator into v. */
static int check_value(const struct pfs_shared_key *key, const char *val, size_t vallen,
		       void *buf, size_t len, char *v)
{
	struct hdr h;
	if (vallen < sizeof(h))
		return -EINVAL;
	memcpy(&h, val, sizeof(h));
	if (h.magic != MAGIC || h.format != FORMAT || h.zero || h.zero2 || h.len != len ||
	    h.kh[0] != key->h[0] || h.kh[1] != key->h[1] || h.vlen == 0 ||
	    h.vlen >= PFS_SHARED_VALIDATOR_MAX || vallen != sizeof(h) + h.vlen + len)
		return -EINVAL;
	const char *vv = val + sizeof(h), *data = vv + h.vlen;
	if (memchr(vv, 0, h.vlen) || value_sum(key, vv, h.vlen, data, len) != h.sum)
		return -EINVAL;
	memcpy(buf, data, len);
	memcpy(v, vv, h.vlen);
	v[h.vlen] = 0;
	return 0;
}

/* One get: 0 (checked hit), -ENOENT (absent), -ESTALE (another version
 * than pinned), -EIO (failed or bad). */
static int get_once(struct pfs_shared *s, const struct pfs_shared_key *key, const char *pinned,
		    void *buf, size_t len, char *v)
{
	struct route r;
	memcached_st *m = conn_get(s);
	if (!m)
		return -EIO;
	if (route(s, m, key, &r) < 0) {
		conn_put(s, m);
		return -EIO;
	}
	size_t vallen = 0;
	uint32_t flags = 0;
	memcached_return_t rc;
	char *val = memcached_get_by_key(m, r.gk, r.gkl, key->k, key->klen, &vallen, &flags,
					 &rc);
	seen(s, &r, rc);
	int ret;
	if (val && rc == MEMCACHED_SUCCESS) {
		ret = check_value(key, val, vallen, buf, len, v);
		if (ret < 0) {
			pfs_add(&s->st_bad, 1);
			pfs_log_limited(PFS_LOG_WARN, "shared:bad",
					"shared cache: a value under %s does not check "
					"(%zu bytes): deleted, fetched from the origin",
					key->k, vallen);
			memcached_delete_by_key(m, r.gk, r.gkl, key->k, key->klen, 0);
			ret = -EIO;
		} else if (pinned && pinned[0] && strcmp(pinned, v)) {
			pfs_add(&s->st_stale, 1);
			ret = -ESTALE;
		}
	} else if (rc == MEMCACHED_NOTFOUND || (rc == MEMCACHED_SUCCESS && !val)) {
		ret = -ENOENT;
	} else {
		note_failure(s, m, &r, rc, "get");
		ret = -EIO;
	}
	free(val);
	conn_put(s, m);
	return ret;
}

int pfs_shared_get(struct pfs_shared *s, const struct pfs_shared_key *key, const char *pinned,
		   void *buf, size_t len, char *v)
{
	if (get_once(s, key, pinned, buf, len, v) == 0) {
		pfs_add(&s->st_hits, 1);
		return 0;
	}
	pfs_add(&s->st_misses, 1);
	return -ENOENT;
}

static void lock_key(const struct pfs_shared_key *key, char *out, size_t cap, size_t *len)
{
	*len = (size_t)snprintf(out, cap, "%s:L", key->k);
}

int pfs_shared_lock(struct pfs_shared *s, const struct pfs_shared_key *key)
{
	char lk[PFS_SHARED_KEY_MAX + 4];
	size_t lkl;
	lock_key(key, lk, sizeof(lk), &lkl);
	struct route r;
	memcached_st *m = conn_get(s);
	if (!m)
		return -1;
	if (route(s, m, key, &r) < 0) {
		conn_put(s, m);
		return -1;
	}
	memcached_return_t rc = memcached_add_by_key(m, r.gk, r.gkl, lk, lkl, "1", 1, LOCK_TTL, 0);
	seen(s, &r, rc);
	int ret = -1;
	if (rc == MEMCACHED_SUCCESS)
		ret = 1;
	else if (rc == MEMCACHED_NOTSTORED || rc == MEMCACHED_DATA_EXISTS)
		ret = 0;
	else
		note_failure(s, m, &r, rc, "lock");
	conn_put(s, m);
	return ret;
}

/* 1 while the lock item of key exists, 0 when gone, -1 on failure. */
static int lock_held(struct pfs_shared *s, const struct pfs_shared_key *key)
{
	char lk[PFS_SHARED_KEY_MAX + 4];
	size_t lkl;
	lock_key(key, lk, sizeof(lk), &lkl);
	struct route r;
	memcached_st *m = conn_get(s);
	if (!m)
		return -1;
	if (route(s, m, key, &r) < 0) {
		conn_put(s, m);
		return -1;
	}
	memcached_return_t rc = memcached_exist_by_key(m, r.gk, r.gkl, lk, lkl);
	seen(s, &r, rc);
	int ret = rc == MEMCACHED_SUCCESS ? 1 : rc == MEMCACHED_NOTFOUND ? 0 : -1;
	if (ret < 0)
		note_failure(s, m, &r, rc, "lock check");
	conn_put(s, m);
	return ret;
}

int pfs_shared_wait(struct pfs_shared *s, const struct pfs_shared_key *key,
		    const char *pinned, void *buf, size_t len, char *v)
{
	uint64_t end = pfs_clock_ns() + (uint64_t)(s->lock_wait * 1e9), pause = POLL_MIN_NS;
	pfs_add(&s->st_waits, 1);
	for (;;) {
		int rc = get_once(s, key, pinned, buf, len, v);
		if (rc == 0) {
			pfs_add(&s->st_hits, 1);
			pfs_add(&s->st_wait_hits, 1);
			return 0;
		}
		/* A failure, or the fetcher gave up (lock gone, no value):
		 * stop waiting. */
		if (rc != -ENOENT || lock_held(s, key) != 1 || pfs_clock_ns() + pause > end)
			break;
		struct timespec ts = { 0, (long)pause };
		nanosleep(&ts, NULL);
		pause = pause * 2 > POLL_MAX_NS ? POLL_MAX_NS : pause * 2;
	}
	pfs_add(&s->st_misses, 1);
	return -ENOENT;
}

/* ---- the writer ---------------------------------------------------------- */

static void item_done(struct qitem *it)
{
	if (it->release)
		it->release(it->arg);
	else
		free((void *)it->data);
	free(it);
}

/* Stores one item; vbuf, vcap: the reused value buffer. */
static void store(struct pfs_shared *s, struct qitem *it, char **vbuf, size_t *vcap)
{
	struct route r;
	memcached_st *m = conn_get(s);
	if (!m)
		return;
	if (route(s, m, &it->key, &r) < 0)
		goto out; /* every server it could go to is down; a lock expires */
	if (it->data) {
		size_t vlen = strlen(it->v), total = sizeof(struct hdr) + vlen + it->len;
		if (total > *vcap) {
			char *nb = realloc(*vbuf, total);
			if (!nb)
				goto unlock;
			*vbuf = nb;
			*vcap = total;
		}
		struct hdr h = { .magic = MAGIC, .format = FORMAT, .vlen = (uint8_t)vlen,
				 .len = (uint32_t)it->len, .kh = { it->key.h[0], it->key.h[1] },
				 .sum = value_sum(&it->key, it->v, vlen, it->data, it->len) };
		memcpy(*vbuf, &h, sizeof(h));
		memcpy(*vbuf + sizeof(h), it->v, vlen);
		memcpy(*vbuf + sizeof(h) + vlen, it->data, it->len);
		memcached_return_t rc = memcached_set_by_key(m, r.gk, r.gkl, it->key.k,
							     it->key.klen, *vbuf, total, 0, 0);
		seen(s, &r, rc);
		if (rc == MEMCACHED_SUCCESS) {
			pfs_add(&s->st_stores, 1);
			pfs_add(&s->st_bytes, it->len);
		} else if (rc == MEMCACHED_E2BIG) {
			pfs_add(&s->st_big, 1);
			if (!__atomic_exchange_n(&s->warned_big, 1, __ATOMIC_RELAXED))
				pfs_warn("shared cache: a server refused a %zu-byte item as too "
					 "large: start memcached with -I larger than block_size "
					 "+ 1 KiB (-I 2m for 1M blocks); such blocks are not shared",
					 total);
		} else {
			note_failure(s, m, &r, rc, "store");
		}
	}
unlock:
	if (it->unlock) {
		char lk[PFS_SHARED_KEY_MAX + 4];
		size_t lkl;
		lock_key(&it->key, lk, sizeof(lk), &lkl);
		memcached_return_t rc = memcached_delete_by_key(m, r.gk, r.gkl, lk, lkl, 0);
		seen(s, &r, rc);
		if (rc != MEMCACHED_SUCCESS && rc != MEMCACHED_NOTFOUND)
			note_failure(s, m, &r, rc, "unlock");
	}
out:
	conn_put(s, m);
}

static void *writer_main(void *arg)
{
	struct pfs_shared *s = arg;
	char *vbuf = NULL;
	size_t vcap = 0;
	pthread_mutex_lock(&s->q_lock);
	for (;;) {
		while (!s->q_head && !s->stop)
			pthread_cond_wait(&s->q_cond, &s->q_lock);
		struct qitem *it = s->q_head;
		if (!it)
			break; /* stop, and drained */
		s->q_head = it->next;
		if (!s->q_head)
			s->q_tail = NULL;
		pthread_mutex_unlock(&s->q_lock);
		store(s, it, &vbuf, &vcap);
		size_t len = it->data ? it->len : 0;
		item_done(it);
		pthread_mutex_lock(&s->q_lock);
		s->q_bytes -= len;
		if (--s->q_n == 0)
			pthread_cond_broadcast(&s->q_done);
	}
	pthread_mutex_unlock(&s->q_lock);
	free(vbuf);
	return NULL;
}

static int enqueue(struct pfs_shared *s, struct qitem *it)
{
	size_t len = it->data ? it->len : 0;
	pthread_mutex_lock(&s->q_lock);
	if (len && s->q_bytes + len > PFS_SHARED_QUEUE_MAX) {
		pthread_mutex_unlock(&s->q_lock);
		return -EAGAIN;
	}
	it->next = NULL;
	if (s->q_tail)
		s->q_tail->next = it;
	else
		s->q_head = it;
	s->q_tail = it;
	s->q_bytes += len;
	s->q_n++;
	pthread_cond_signal(&s->q_cond);
	pthread_mutex_unlock(&s->q_lock);
	return 0;
}

int pfs_shared_put(struct pfs_shared *s, const struct pfs_shared_key *key, const char *v,
		   const void *data, size_t len, int unlock, void (*release)(void *),
		   void *arg)
{
	int rc = -EINVAL;
	struct qitem *it = NULL;
	size_t vlen = strlen(v);
	if (vlen == 0 || vlen >= PFS_SHARED_VALIDATOR_MAX || !strcmp(v, "-"))
		goto refuse;
	rc = -ENOMEM;
	if (!(it = calloc(1, sizeof(*it))))
		goto refuse;
	it->key = *key;
	memcpy(it->v, v, vlen + 1);
	it->len = len;
	it->unlock = unlock;
	it->release = release;
	it->arg = arg;
	if (release) {
		it->data = data;
	} else {
		void *copy = malloc(len ? len : 1);
		if (!copy)
			goto refuse;
		memcpy(copy, data, len);
		it->data = copy;
	}
	if ((rc = enqueue(s, it)) == 0)
		return 0;
	pfs_add(&s->st_dropped, 1);
	if (!release)
		free((void *)it->data);
refuse:
	free(it);
	if (release)
		release(arg);
	if (unlock)
		pfs_shared_unlock(s, key);
	return rc;
}

void pfs_shared_unlock(struct pfs_shared *s, const struct pfs_shared_key *key)
{
	struct qitem *it = calloc(1, sizeof(*it));
	if (!it)
		return; /* the lock expires in LOCK_TTL */
	it->key = *key;
	it->unlock = 1;
	if (enqueue(s, it) < 0)
		free(it);
}

void pfs_shared_flush(struct pfs_shared *s)
{
	pthread_mutex_lock(&s->q_lock);
	while (s->q_n)
		pthread_cond_wait(&s->q_done, &s->q_lock);
	pthread_mutex_unlock(&s->q_lock);
}

/* ---- life cycle ---------------------------------------------------------- */

static int configure(struct pfs_shared *s, double retry)
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
		{MEMCACHED_BEHAVIOR_RETRY_TIMEOUT, retry < 1 ? 1 : (uint64_t)retry},
	};
	for (size_t i = 0; i < sizeof(set) / sizeof(set[0]); i++)
		if (memcached_behavior_set(m, set[i].b, set[i].v) != MEMCACHED_SUCCESS) {
			pfs_err("shared cache: libmemcached refused behavior %d", (int)set[i].b);
			return -EINVAL;
		}
	return 0;
}

int pfs_shared_create(const struct pfs_shared_opts *o, struct pfs_shared **out)
{
	char err[400];
	int rc = -ENOMEM, n;
	struct pfs_shared *s = calloc(1, sizeof(*s));
	*out = NULL;
	if (!s)
		return -ENOMEM;
	s->block_size = o->block_size;
	s->timeout = o->timeout > 0 ? o->timeout : 0.05;
	s->lock_wait = o->lock_wait >= 0 ? o->lock_wait : 0.5;
	if (!(s->origin_id = strdup(o->origin_id ? o->origin_id : "")))
		goto fail;
	if (!(s->master = memcached_create(NULL)))
		goto fail;
	if ((n = each_server(o->servers, add_server, s, err, sizeof(err))) < 0) {
		pfs_err("shared cache: %s", err);
		rc = -EINVAL;
		goto fail;
	}
	s->retry = o->retry > 0 ? o->retry : 2;
	if ((rc = configure(s, s->retry)) < 0)
		goto fail;
	rc = -ENOMEM;
	if (!(s->pool = memcached_pool_create(s->master, 1, PFS_SHARED_CONNS)))
		goto fail;
	if (pthread_mutex_init(&s->q_lock, NULL))
		goto fail_pool;
	if (pthread_cond_init(&s->q_cond, NULL))
		goto fail_mutex;
	if (pthread_cond_init(&s->q_done, NULL))
		goto fail_cond;
	if (pthread_create(&s->writer, NULL, writer_main, s))
		goto fail_done;
	*out = s;
	return 0;
fail_done:
	pthread_cond_destroy(&s->q_done);
fail_cond:
	pthread_cond_destroy(&s->q_cond);
fail_mutex:
	pthread_mutex_destroy(&s->q_lock);
fail_pool:
	memcached_pool_destroy(s->pool);
fail:
	if (s->master)
		memcached_free(s->master);
	free(s->servers);
	free(s->origin_id);
	free(s);
	return rc;
}

void pfs_shared_destroy(struct pfs_shared *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->q_lock);
	s->stop = 1;
	pthread_cond_signal(&s->q_cond);
	pthread_mutex_unlock(&s->q_lock);
	pthread_join(s->writer, NULL);
	pthread_cond_destroy(&s->q_done);
	pthread_cond_destroy(&s->q_cond);
	pthread_mutex_destroy(&s->q_lock);
	memcached_pool_destroy(s->pool);
	memcached_free(s->master);
	free(s->servers);
	free(s->origin_id);
	free(s);
}

/* ---- stats --------------------------------------------------------------- */

void pfs_shared_stats(struct pfs_shared *s, struct pfs_shared_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (!s)
		return;
	out->hits = pfs_load(&s->st_hits);
	out->misses = pfs_load(&s->st_misses);
	out->stores = pfs_load(&s->st_stores);
	out->bytes = pfs_load(&s->st_bytes);
	out->errors = pfs_load(&s->st_errors);
	out->timeouts = pfs_load(&s->st_timeouts);
	out->checksum_failures = pfs_load(&s->st_bad);
	out->stale = pfs_load(&s->st_stale);
	out->lock_waits = pfs_load(&s->st_waits);
	out->lock_wait_hits = pfs_load(&s->st_wait_hits);
	out->too_large = pfs_load(&s->st_big);
	out->dropped = pfs_load(&s->st_dropped);
	pthread_mutex_lock(&s->q_lock);
	out->queued = s->q_n;
	pthread_mutex_unlock(&s->q_lock);
	out->servers = s->nservers;
	out->skipped = pfs_load(&s->st_skipped);
	uint64_t now = pfs_clock_ns();
	for (size_t i = 0; i < s->nservers; i++)
		out->servers_down += pfs_load(&s->servers[i].down_until) > now;
}

#define ROW(name, m, g) PFS_STAT_ROW(struct pfs_shared_stats, name, m, g)
static const struct pfs_stat_row metrics[] = {
	ROW("shared.hits", hits, 0),
	ROW("shared.misses", misses, 0),
	ROW("shared.stores", stores, 0),
	ROW("shared.bytes", bytes, 0),
	ROW("shared.errors", errors, 0),
	ROW("shared.timeouts", timeouts, 0),
	ROW("shared.checksum_failures", checksum_failures, 0),
	ROW("shared.stale", stale, 0),
	ROW("shared.lock_waits", lock_waits, 0),
	ROW("shared.lock_wait_hits", lock_wait_hits, 0),
	ROW("shared.too_large", too_large, 0),
	ROW("shared.dropped", dropped, 0),
	ROW("shared.queued", queued, 1),
	ROW("shared.servers", servers, 1),
	ROW("shared.servers_down", servers_down, 1),
	ROW("shared.skipped", skipped, 0),
};
#undef ROW

void pfs_shared_collect(void *s, struct pfs_stat_list *l)
{
	struct pfs_shared_stats st;
	pfs_shared_stats(s, &st);
	pfs_stat_list_add_rows(l, metrics, sizeof(metrics) / sizeof(metrics[0]), &st);
}
