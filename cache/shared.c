/* shared.c - see shared.h.
 *
 * Connections, the server list and each server's health: shared_conn.c.
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
#include <xxhash.h>

#include "shared_int.h"
#include "../util/atomic.h"
#include "../util/clock.h"
#include "../util/log.h"

#define MAGIC 0x42534650u /* "PFSB" */
#define FORMAT 1
#define LOCK_TTL 2        /* s; memcached expiry is in whole seconds */
#define POLL_MIN_NS 2000000ull
#define POLL_MAX_NS 20000000ull
#define STOP_NS 2000000000ull /* destroy: what is not stored by then is dropped */
#define QUEUE_ITEMS_MAX 65536  /* unlock-only items count here, not in bytes */

struct hdr {
	uint32_t magic;
	uint8_t format, vlen;
	uint16_t zero;
	uint32_t len;
	uint32_t zero2;
	uint64_t kh[2];
	uint64_t sum;
};
_Static_assert(sizeof(struct hdr) == 40, "the value header is 40 bytes");

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

/* A connection and the route of a request about key, or NULL (none free,
 * or every server it could go to is down). */
static memcached_st *conn_routed(struct pfs_shared *s, const struct pfs_shared_key *key,
				 struct route *r)
{
	memcached_st *m = shared_conn_get(s);
	if (m && shared_route(s, m, key, r) < 0) {
		shared_conn_put(s, m);
		m = NULL;
	}
	return m;
}

/* One get: 0 (checked hit), -ENOENT (absent), -ESTALE (another version
 * than pinned), -EIO (failed or bad). */
static int get_once(struct pfs_shared *s, const struct pfs_shared_key *key, const char *pinned,
		    void *buf, size_t len, char *v)
{
	struct route r;
	memcached_st *m = conn_routed(s, key, &r);
	if (!m)
		return -EIO;
	size_t vallen = 0;
	uint32_t flags = 0;
	memcached_return_t rc;
	char *val = memcached_get_by_key(m, r.gk, r.gkl, key->k, key->klen, &vallen, &flags,
					 &rc);
	shared_seen(s, &r, rc);
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
		shared_failure(s, m, &r, rc, "get");
		ret = -EIO;
	}
	free(val);
	shared_conn_put(s, m);
	return ret;
}

int pfs_shared_get(struct pfs_shared *s, const struct pfs_shared_key *key, const char *pinned,
		   void *buf, size_t len, char *v)
{
	int rc = get_once(s, key, pinned, buf, len, v);
	if (rc == 0) {
		pfs_add(&s->st_hits, 1);
		return 0;
	}
	pfs_add(&s->st_misses, 1);
	return rc == -EIO ? -EIO : -ENOENT;
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
	memcached_st *m = conn_routed(s, key, &r);
	if (!m)
		return -1;
	memcached_return_t rc = memcached_add_by_key(m, r.gk, r.gkl, lk, lkl, "1", 1, LOCK_TTL, 0);
	shared_seen(s, &r, rc);
	int ret = -1;
	if (rc == MEMCACHED_SUCCESS)
		ret = 1;
	else if (rc == MEMCACHED_NOTSTORED || rc == MEMCACHED_DATA_EXISTS)
		ret = 0;
	else
		shared_failure(s, m, &r, rc, "lock");
	shared_conn_put(s, m);
	return ret;
}

/* 1 while the lock item of key exists, 0 when gone, -1 on failure. A get:
 * libmemcached's exist() is an add over the text protocol. */
static int lock_held(struct pfs_shared *s, const struct pfs_shared_key *key)
{
	char lk[PFS_SHARED_KEY_MAX + 4];
	size_t lkl, vl = 0;
	uint32_t fl;
	struct route r;
	lock_key(key, lk, sizeof(lk), &lkl);
	memcached_st *m = conn_routed(s, key, &r);
	if (!m)
		return -1;
	memcached_return_t rc;
	char *val = memcached_get_by_key(m, r.gk, r.gkl, lk, lkl, &vl, &fl, &rc);
	shared_seen(s, &r, rc);
	free(val);
	int ret = rc == MEMCACHED_SUCCESS ? 1 : rc == MEMCACHED_NOTFOUND ? 0 : -1;
	if (ret < 0)
		shared_failure(s, m, &r, rc, "lock check");
	shared_conn_put(s, m);
	return ret;
}

int pfs_shared_wait(struct pfs_shared *s, const struct pfs_shared_key *key,
		    const char *pinned, void *buf, size_t len, char *v)
{
	uint64_t end = pfs_clock_ns() + (uint64_t)(s->lock_wait * 1e9), pause = POLL_MIN_NS;
	int rc, last = 0;
	pfs_add(&s->st_waits, 1);
	for (;;) {
		rc = get_once(s, key, pinned, buf, len, v);
		if (rc == 0) {
			pfs_add(&s->st_hits, 1);
			pfs_add(&s->st_wait_hits, 1);
			return 0;
		}
		/* A failure, or the fetcher gave up: stop. The lock gone means
		 * the value is there now or never will be: one more get. */
		if (rc != -ENOENT || last)
			break;
		int held = lock_held(s, key);
		if (held < 0)
			break;
		if (held == 0) {
			last = 1;
			continue;
		}
		uint64_t now = pfs_clock_ns();
		if (now >= end)
			break;
		if (pause > end - now)
			pause = end - now;
		struct timespec ts = { 0, (long)pause };
		nanosleep(&ts, NULL);
		pause = pause * 2 > POLL_MAX_NS ? POLL_MAX_NS : pause * 2;
	}
	pfs_add(&s->st_misses, 1);
	return rc == -EIO ? -EIO : -ENOENT;
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
	memcached_st *m = s->wconn;
	if (shared_route(s, m, &it->key, &r) < 0)
		return; /* every server it could go to is down; a lock expires */
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
		shared_seen(s, &r, rc);
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
			shared_failure(s, m, &r, rc, "store");
		}
	}
unlock:
	if (it->unlock) {
		char lk[PFS_SHARED_KEY_MAX + 4];
		size_t lkl;
		lock_key(&it->key, lk, sizeof(lk), &lkl);
		memcached_return_t rc = memcached_delete_by_key(m, r.gk, r.gkl, lk, lkl, 0);
		shared_seen(s, &r, rc);
		if (rc != MEMCACHED_SUCCESS && rc != MEMCACHED_NOTFOUND)
			shared_failure(s, m, &r, rc, "unlock");
	}
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
		/* Past the deadline of a destroy, the rest is dropped (its
		 * holds released, its locks left to expire). */
		int drop = s->stop && pfs_clock_ns() > s->stop_deadline;
		pthread_mutex_unlock(&s->q_lock);
		if (drop)
			pfs_add(&s->st_dropped, it->data != NULL);
		else
			store(s, it, &vbuf, &vcap);
		size_t len = it->data ? it->len : 0;
		item_done(it);
		pthread_mutex_lock(&s->q_lock);
		s->q_bytes -= len;
		s->q_n--;
		s->q_out++;
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
	if ((len && s->q_bytes + len > PFS_SHARED_QUEUE_MAX) || s->q_n >= QUEUE_ITEMS_MAX) {
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
	s->q_in++;
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
	uint64_t target = s->q_in; /* what was queued so far, not what comes */
	while (s->q_out < target)
		pthread_cond_wait(&s->q_done, &s->q_lock);
	pthread_mutex_unlock(&s->q_lock);
}

/* ---- life cycle ---------------------------------------------------------- */

int pfs_shared_create(const struct pfs_shared_opts *o, struct pfs_shared **out)
{
	char err[400];
	int rc = -ENOMEM;
	struct pfs_shared *s = calloc(1, sizeof(*s));
	*out = NULL;
	if (!s)
		return -ENOMEM;
	s->block_size = o->block_size;
	s->timeout = o->timeout > 0 ? o->timeout : 0.05;
	s->lock_wait = o->lock_wait >= 0 ? o->lock_wait : 0.5;
	s->retry = o->retry > 0 ? o->retry : 2;
	if (!(s->origin_id = strdup(o->origin_id ? o->origin_id : "")))
		goto fail;
	if (!(s->master = memcached_create(NULL)))
		goto fail;
	if ((rc = shared_servers_add(s, o->servers, err, sizeof(err))) < 0) {
		pfs_err("shared cache: %s", err);
		goto fail;
	}
	if ((rc = shared_configure(s)) < 0)
		goto fail;
	rc = -ENOMEM;
	if (!(s->wconn = memcached_clone(NULL, s->master)))
		goto fail;
	if (shared_pool_init(s))
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
	shared_pool_fini(s);
fail:
	if (s->wconn)
		memcached_free(s->wconn);
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
	s->stop_deadline = pfs_clock_ns() + STOP_NS;
	pthread_cond_signal(&s->q_cond);
	pthread_mutex_unlock(&s->q_lock);
	pthread_join(s->writer, NULL);
	pthread_cond_destroy(&s->q_done);
	pthread_cond_destroy(&s->q_cond);
	pthread_mutex_destroy(&s->q_lock);
	shared_pool_fini(s);
	memcached_free(s->wconn);
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
	out->busy = pfs_load(&s->st_busy);
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
	ROW("shared.busy", busy, 0),
};
#undef ROW

void pfs_shared_collect(void *s, struct pfs_stat_list *l)
{
	struct pfs_shared_stats st;
	pfs_shared_stats(s, &st);
	pfs_stat_list_add_rows(l, metrics, sizeof(metrics) / sizeof(metrics[0]), &st);
}
