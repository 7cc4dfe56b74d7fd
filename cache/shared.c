/* shared.c - see shared.h.
 *
 * The exchanges themselves: mc.c; the server list, routing, deadlines and
 * each server's health: shared_conn.c.
 *
 * Stores: one writer thread drains a FIFO queue bounded in bytes; it
 * builds each value (header, validator, block) in one buffer it reuses
 * (its pages stay touched), so the fill path pays no copy unless the
 * caller asked for one.
 *
 * Value layout (little-endian; all nodes of a cluster run one arch):
 *   struct hdr | validator (vlen bytes) | block (len bytes)      FORMAT
 *   struct hdr | MAC (32 bytes) | validator | block              FORMAT_MAC
 * FORMAT's sum is XXH3 (garbage, not forgery); FORMAT_MAC's MAC is
 * HMAC-SHA256 under the key file's secret over the header (sum zero),
 * validator and block, and its keys are seeded with an id derived from
 * the secret: nodes with another secret, or none, use other keys.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <unistd.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <xxhash.h>

#include "shared_int.h"
#include "../util/atomic.h"
#include "../util/clock.h"
#include "../util/log.h"

#define MAGIC 0x42534650u /* "PFSB" */
#define FORMAT 1
#define FORMAT_MAC 2
#define MAC_LEN 32
#define KEY_FILE_MIN 32        /* bytes of secret */
#define KEY_FILE_MAX 4096
#define STORE_TRIES 3          /* a store that timed out: twice more */
#define LOCK_TTL 2        /* s; memcached expiry is in whole seconds */
#define POLL_MIN_NS 2000000ull
#define POLL_MAX_NS 20000000ull
#define STOP_NS 1000000000ull /* destroy: what is not stored by then is dropped */
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
	/* The context (origin, size, listing fingerprint, block size, and
	 * with a key file an id of its secret) seeds the path's hash. */
	uint64_t nums[5] = { XXH3_64bits(s->origin_id, strlen(s->origin_id)), size, fp,
			     s->block_size, s->key_seed };
	XXH128_hash_t c = XXH3_128bits(nums, sizeof(nums));
	XXH128_hash_t h = XXH3_128bits_withSeed(path, strlen(path), c.low64 ^ c.high64);
	int n = snprintf(out->k, sizeof(out->k), "%s:%016llx%016llx:%llx",
			 s->mac ? "pfsk" : "pfs1", (unsigned long long)h.high64,
			 (unsigned long long)h.low64, (unsigned long long)blk);
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

/* HMAC-SHA256 over the header (its sum zero), the validator and the
 * block. 0, or -ENOMEM. */
static int value_mac(const struct pfs_shared *s, const struct hdr *h, const char *v,
		     const void *data, size_t len, unsigned char out[MAC_LEN])
{
	EVP_MAC_CTX *ctx = EVP_MAC_CTX_dup(s->mac);
	size_t ol = 0;
	int ok = ctx && EVP_MAC_update(ctx, (const unsigned char *)h, sizeof(*h)) &&
		 EVP_MAC_update(ctx, (const unsigned char *)v, h->vlen) &&
		 EVP_MAC_update(ctx, data, len) && EVP_MAC_final(ctx, out, &ol, MAC_LEN) &&
		 ol == MAC_LEN;
	EVP_MAC_CTX_free(ctx);
	return ok ? 0 : -ENOMEM;
}

/* The longest value a get accepts: header, MAC, validator, block. */
static size_t value_cap(const struct pfs_shared *s)
{
	return sizeof(struct hdr) + MAC_LEN + PFS_SHARED_VALIDATOR_MAX + s->block_size;
}

/* 0 when val is a good value of key with len bytes: block into buf,
 * validator into v. -EINVAL: it does not check; -EACCES: its MAC does
 * not (or it has none, or has one where none is expected). */
static int check_value(const struct pfs_shared *s, const struct pfs_shared_key *key,
		       const char *val, size_t vallen, void *buf, size_t len, char *v)
{
	struct hdr h;
	if (vallen < sizeof(h))
		return -EINVAL;
	memcpy(&h, val, sizeof(h));
	if (h.magic != MAGIC || (h.format != FORMAT && h.format != FORMAT_MAC))
		return -EINVAL;
	if ((h.format == FORMAT_MAC) != (s->mac != NULL))
		return -EACCES;
	size_t maclen = s->mac ? MAC_LEN : 0;
	if (h.zero || h.zero2 || h.len != len || h.kh[0] != key->h[0] || h.kh[1] != key->h[1] ||
	    h.vlen == 0 || h.vlen >= PFS_SHARED_VALIDATOR_MAX ||
	    vallen != sizeof(h) + maclen + h.vlen + len)
		return s->mac ? -EACCES : -EINVAL;
	const char *vv = val + sizeof(h) + maclen, *data = vv + h.vlen;
	if (memchr(vv, 0, h.vlen))
		return s->mac ? -EACCES : -EINVAL;
	if (s->mac) {
		unsigned char mac[MAC_LEN];
		if (h.sum || value_mac(s, &h, vv, data, len, mac) < 0 ||
		    CRYPTO_memcmp(mac, val + sizeof(h), MAC_LEN))
			return -EACCES;
	} else if (value_sum(key, vv, h.vlen, data, len) != h.sum) {
		return -EINVAL;
	}
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
	if (shared_route(s, key, X_BLOCK, &r) < 0)
		return -EIO;
	struct pfs_mc_server *mc = s->servers[r.idx].mc;
	struct pfs_mc_value val = {0};
	int rc = pfs_mc_get(mc, key->k, key->klen, value_cap(s), r.deadline, &val);
	if (rc == -ENOENT) {
		shared_answered(s, &r, X_SMALL);
		return -ENOENT;
	}
	if (rc < 0) {
		if (rc == -EFBIG)
			pfs_add(&s->st_refused_big, 1);
		shared_failure(s, &r, rc, "get");
		return -EIO;
	}
	shared_answered(s, &r, X_BLOCK);
	int ret = check_value(s, key, val.data, val.len, buf, len, v);
	size_t vallen = val.len;
	pfs_mc_value_done(mc, &val);
	if (ret < 0) {
		pfs_add(ret == -EACCES ? &s->st_auth : &s->st_bad, 1);
		if (ret == -EACCES)
			pfs_log_limited(PFS_LOG_WARN, "shared:auth",
					"shared cache: a value under %s fails its MAC "
					"(%zu bytes): deleted, fetched from the origin",
					key->k, vallen);
		else
			pfs_log_limited(PFS_LOG_WARN, "shared:bad",
					"shared cache: a value under %s does not check "
					"(%zu bytes): deleted, fetched from the origin",
					key->k, vallen);
		struct route d;
		if (shared_route(s, key, X_SMALL, &d) == 0 && d.idx == r.idx)
			pfs_mc_delete(mc, key->k, key->klen, d.deadline);
		return -EIO;
	}
	if (pinned && pinned[0] && strcmp(pinned, v)) {
		pfs_add(&s->st_stale, 1);
		return -ESTALE;
	}
	return 0;
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
	if (shared_route(s, key, X_SMALL, &r) < 0)
		return -1;
	struct iovec one = {"1", 1};
	int rc = pfs_mc_set(s->servers[r.idx].mc, 1, lk, lkl, &one, 1, LOCK_TTL, r.deadline);
	if (rc == 0 || rc == -EEXIST) {
		shared_answered(s, &r, X_SMALL);
		return rc == 0 ? 1 : 0;
	}
	shared_failure(s, &r, rc, "lock");
	return -1;
}

/* 1 while the lock item of key exists, 0 when gone, -1 on failure. */
static int lock_held(struct pfs_shared *s, const struct pfs_shared_key *key)
{
	char lk[PFS_SHARED_KEY_MAX + 4];
	size_t lkl;
	lock_key(key, lk, sizeof(lk), &lkl);
	struct route r;
	if (shared_route(s, key, X_SMALL, &r) < 0)
		return -1;
	struct pfs_mc_server *mc = s->servers[r.idx].mc;
	struct pfs_mc_value val = {0};
	int rc = pfs_mc_get(mc, lk, lkl, 16, r.deadline, &val);
	if (rc == 0 || rc == -ENOENT) {
		shared_answered(s, &r, X_SMALL);
		if (rc == 0)
			pfs_mc_value_done(mc, &val);
		return rc == 0;
	}
	shared_failure(s, &r, rc, "lock check");
	return -1;
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

/* Sleeps ms, unless the shared tier is being destroyed. */
static void store_pause(struct pfs_shared *s, unsigned ms)
{
	if (pfs_load(&s->stop_deadline))
		return;
	struct timespec ts = {0, (long)ms * 1000000L};
	nanosleep(&ts, NULL);
}

/* Stores one item on the server its key routes to, never another: a
 * reader looks for it there. A timeout or a bad answer is retried
 * (STORE_TRIES in all, a pause between: off the read path); a server
 * that is not there, or out, drops it (counted). */
static void store(struct pfs_shared *s, struct qitem *it)
{
	struct route r;
	if (shared_route(s, &it->key, it->data ? X_BLOCK : X_SMALL, &r) < 0) {
		pfs_add(&s->st_store_failed, it->data != NULL);
		return; /* every server it could go to is out; a lock expires */
	}
	int idx = r.idx;
	struct pfs_mc_server *mc = s->servers[idx].mc;
	if (it->data) {
		size_t vlen = strlen(it->v), maclen = s->mac ? MAC_LEN : 0;
		size_t total = sizeof(struct hdr) + maclen + vlen + it->len;
		struct hdr h = { .magic = MAGIC, .format = s->mac ? FORMAT_MAC : FORMAT,
				 .vlen = (uint8_t)vlen, .len = (uint32_t)it->len,
				 .kh = { it->key.h[0], it->key.h[1] } };
		unsigned char mac[MAC_LEN];
		if (s->mac) {
			if (value_mac(s, &h, it->v, it->data, it->len, mac) < 0)
				goto unlock;
		} else {
			h.sum = value_sum(&it->key, it->v, vlen, it->data, it->len);
		}
		struct iovec iov[4] = {{&h, sizeof(h)}, {mac, maclen}, {it->v, vlen},
				       {(void *)it->data, it->len}};
		for (int t = 0; t < STORE_TRIES; t++) {
			if (t && (shared_route(s, &it->key, X_BLOCK, &r) < 0 || r.idx != idx))
				break; /* out now: dropped, not sent elsewhere */
			int rc = pfs_mc_set(mc, 0, it->key.k, it->key.klen, iov, 4, 0, r.deadline);
			if (rc == 0) {
				shared_answered(s, &r, X_BLOCK);
				pfs_add(&s->st_stores, 1);
				pfs_add(&s->st_bytes, it->len);
				goto unlock;
			}
			if (rc == -E2BIG) {
				shared_answered(s, &r, X_SMALL);
				pfs_add(&s->st_big, 1);
				if (!__atomic_exchange_n(&s->warned_big, 1, __ATOMIC_RELAXED))
					pfs_warn("shared cache: a server refused a %zu-byte item as "
						 "too large: start memcached with -I larger than "
						 "block_size + 1 KiB (-I 2m for 1M blocks); such "
						 "blocks are not shared", total);
				goto unlock;
			}
			if (rc == -ENOSPC) { /* an answer: the server is alive, and full */
				shared_answered(s, &r, X_SMALL);
				pfs_add(&s->st_errors, 1);
				pfs_log_limited(PFS_LOG_WARN, "shared:full", "shared cache: server "
						"%s:%u is full and may not evict (memcached -M): "
						"stores refused", s->servers[idx].name,
						s->servers[idx].port);
				goto unlock;
			}
			shared_failure(s, &r, rc, "store");
			if (pfs_mc_is_dead(rc))
				break;
			if (t + 1 < STORE_TRIES) {
				pfs_add(&s->st_store_retries, 1);
				store_pause(s, 50u << t);
			}
		}
		pfs_add(&s->st_store_failed, 1);
	}
unlock:
	if (it->unlock) {
		char lk[PFS_SHARED_KEY_MAX + 4];
		size_t lkl;
		lock_key(&it->key, lk, sizeof(lk), &lkl);
		if (shared_route(s, &it->key, X_SMALL, &r) < 0)
			return;
		int rc = pfs_mc_delete(s->servers[r.idx].mc, lk, lkl, r.deadline);
		if (rc == 0 || rc == -ENOENT)
			shared_answered(s, &r, X_SMALL);
		else
			shared_failure(s, &r, rc, "unlock");
	}
}

static void *writer_main(void *arg)
{
	struct pfs_shared *s = arg;
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
		int drop = s->stop && pfs_clock_ns() > pfs_load(&s->stop_deadline);
		pthread_mutex_unlock(&s->q_lock);
		if (drop)
			pfs_add(&s->st_dropped, it->data != NULL);
		else
			store(s, it);
		size_t len = it->data ? it->len : 0;
		item_done(it);
		pthread_mutex_lock(&s->q_lock);
		s->q_bytes -= len;
		s->q_n--;
		s->q_out++;
		pthread_cond_broadcast(&s->q_done);
	}
	pthread_mutex_unlock(&s->q_lock);
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

/* Reads the secret of key_file into buf (a trailing newline stripped):
 * its length, or a negative errno after logging why (never the bytes). */
static ssize_t read_key_file(const char *path, unsigned char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		int e = errno;
		pfs_err("shared_key_file %s: %s", path, strerror(e));
		return -e;
	}
	struct stat st;
	ssize_t n = -EINVAL;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		pfs_err("shared_key_file %s: not a regular file", path);
		goto out;
	}
	if (st.st_uid != geteuid() || (st.st_mode & (S_IRWXG | S_IRWXO))) {
		pfs_err("shared_key_file %s: must be owned by this user and readable by it "
			"only (chmod 600); it is mode %03o, owner %u", path,
			(unsigned)(st.st_mode & 0777), (unsigned)st.st_uid);
		n = -EACCES;
		goto out;
	}
	size_t len = 0;
	for (;;) {
		ssize_t r = read(fd, buf + len, cap - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			n = -errno;
			pfs_err("shared_key_file %s: %s", path, strerror(errno));
			goto out;
		}
		if (r == 0)
			break;
		len += (size_t)r;
		if (len == cap) {
			pfs_err("shared_key_file %s: longer than %zu bytes", path, cap - 1);
			goto out;
		}
	}
	if (len && buf[len - 1] == '\n')
		len--;
	if (len && buf[len - 1] == '\r')
		len--;
	if (len < KEY_FILE_MIN) {
		pfs_err("shared_key_file %s: %zu bytes; at least %d are needed (head -c 32 "
			"/dev/urandom | base64 > FILE)", path, len, KEY_FILE_MIN);
		goto out;
	}
	n = (ssize_t)len;
out:
	close(fd);
	return n;
}

/* The MAC template and the key seed from the key file. */
static int mac_setup(struct pfs_shared *s, const char *path)
{
	unsigned char key[KEY_FILE_MAX + 1];
	ssize_t n = read_key_file(path, key, sizeof(key));
	if (n < 0)
		return (int)n;
	int rc = -ENOMEM;
	EVP_MAC *mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
	EVP_MAC_CTX *ctx = mac ? EVP_MAC_CTX_new(mac) : NULL;
	char digest[] = "SHA256";
	OSSL_PARAM params[] = {
		OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
		OSSL_PARAM_construct_end(),
	};
	if (!ctx || !EVP_MAC_init(ctx, key, (size_t)n, params)) {
		pfs_err("shared cache: OpenSSL has no HMAC-SHA256");
		EVP_MAC_CTX_free(ctx);
		goto out;
	}
	s->mac = ctx;
	/* The key id seeds every key: the MAC of a fixed text, so it says
	 * nothing of the secret. */
	unsigned char id[MAC_LEN];
	EVP_MAC_CTX *c2 = EVP_MAC_CTX_dup(ctx);
	size_t ol = 0;
	static const char label[] = "prestofs shared key id";
	if (!c2 || !EVP_MAC_update(c2, (const unsigned char *)label, sizeof(label) - 1) ||
	    !EVP_MAC_final(c2, id, &ol, sizeof(id))) {
		EVP_MAC_CTX_free(c2);
		goto out;
	}
	EVP_MAC_CTX_free(c2);
	memcpy(&s->key_seed, id, sizeof(s->key_seed));
	rc = 0;
out:
	OPENSSL_cleanse(key, sizeof(key));
	EVP_MAC_free(mac);
	return rc;
}

int pfs_shared_create(const struct pfs_shared_opts *o, struct pfs_shared **out)
{
	char err[400];
	int rc = -ENOMEM;
	struct pfs_shared *s = calloc(1, sizeof(*s));
	*out = NULL;
	if (!s)
		return -ENOMEM;
	s->block_size = o->block_size;
	s->timeout = o->timeout > 0 ? o->timeout : PFS_SHARED_TIMEOUT;
	s->lock_wait = o->lock_wait >= 0 ? o->lock_wait : 0.5;
	s->retry = o->retry > 0 ? o->retry : 2;
	if (!(s->origin_id = strdup(o->origin_id ? o->origin_id : "")))
		goto fail;
	if (o->key_file && o->key_file[0]) {
		if ((rc = mac_setup(s, o->key_file)) < 0)
			goto fail;
	} else {
		pfs_warn("shared cache: no shared_key_file: values are checked for damage but "
			 "not authenticated, so whoever can reach the memcached servers can "
			 "change what this mount reads (see prestofs(1), SHARED TIER)");
	}
	if ((rc = shared_servers_add(s, o->servers, err, sizeof(err))) < 0) {
		pfs_err("shared cache: %s", err);
		goto fail;
	}
	rc = -ENOMEM;
	if (pthread_mutex_init(&s->q_lock, NULL))
		goto fail;
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
fail:
	shared_servers_free(s);
	EVP_MAC_CTX_free(s->mac);
	free(s->origin_id);
	free(s);
	return rc;
}

void pfs_shared_destroy(struct pfs_shared *s)
{
	if (!s)
		return;
	/* Every exchange from now on, and those in flight, end by then. */
	pfs_store(&s->stop_deadline, pfs_clock_ns() + STOP_NS);
	pthread_mutex_lock(&s->q_lock);
	s->stop = 1;
	pthread_cond_signal(&s->q_cond);
	pthread_mutex_unlock(&s->q_lock);
	pthread_join(s->writer, NULL);
	pthread_cond_destroy(&s->q_done);
	pthread_cond_destroy(&s->q_cond);
	pthread_mutex_destroy(&s->q_lock);
	shared_servers_free(s);
	EVP_MAC_CTX_free(s->mac);
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
	out->auth_failures = pfs_load(&s->st_auth);
	out->too_long = pfs_load(&s->st_refused_big);
	out->store_retries = pfs_load(&s->st_store_retries);
	out->store_failures = pfs_load(&s->st_store_failed);
	double dl = 0;
	for (size_t i = 0; i < s->nservers; i++) {
		double d = shared_deadline_s(s, (int)i, X_BLOCK);
		dl = d > dl ? d : dl;
	}
	out->deadline_ms = (uint64_t)(dl * 1000 + 0.5);
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
	ROW("shared.auth_failures", auth_failures, 0),
	ROW("shared.too_long", too_long, 0),
	ROW("shared.store_retries", store_retries, 0),
	ROW("shared.store_failures", store_failures, 0),
	ROW("shared.deadline_ms", deadline_ms, 1),
};
#undef ROW

void pfs_shared_collect(void *s, struct pfs_stat_list *l)
{
	struct pfs_shared_stats st;
	pfs_shared_stats(s, &st);
	pfs_stat_list_add_rows(l, metrics, sizeof(metrics) / sizeof(metrics[0]), &st);
}
