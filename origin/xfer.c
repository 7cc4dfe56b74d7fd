/* xfer.c - see xfer.h.
 *
 * Design: synchronous transfers on pooled easy handles. A caller (a FUSE
 * worker, later a prefetch worker) takes a handle from the pool, runs one
 * attempt, returns it. Concurrency is the number of calling threads; the
 * share object makes all handles use one connection cache, so connections
 * are reused across threads. Each attempt is checked completely (status,
 * Content-Range, byte count, validator) before a single byte counts.
 */
#include <curl/curl.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "counters.h"
#include "origin.h"
#include "respcheck.h"
#include "retry.h"
#include "validator.h"
#include "xfer.h"
#include "../util/log.h"
#include "../util/clock.h"
#include "../util/url.h"

struct pfs_xfer {
	double timeout;
	int retries;
	/* Bandwidth cap: a virtual clock of when the link is next free;
	 * each transfer books its bytes and waits for its turn. */
	uint64_t bandwidth;
	pthread_mutex_t bw_lock;
	double bw_next;       /* guarded by bw_lock; CLOCK_MONOTONIC seconds */
	char *sigv4, *userpwd;
	struct curl_slist *headers; /* extra request headers (S3) */
	char *cainfo;
	CURLSH *share;
	pthread_mutex_t share_locks[CURL_LOCK_DATA_LAST];
	pthread_mutex_t pool_lock;
	CURL **pool;          /* idle handles; guarded by pool_lock */
	size_t pool_n, pool_cap;
	int range_ignored_said; /* atomic: the log line about a 200 to a range */
	const int *stop;        /* pfs_xfer_opts.stop; read atomically */
};

/* Bytes held by every spill at once (PFS_ORIGIN_SPILL_TOTAL). */
static uint64_t spill_held;

void pfs_xfer_spill_release(struct pfs_origin_spill *s)
{
	if (!s || !s->data)
		return;
	free(s->data);
	pfs_sub(&spill_held, s->cap);
	*s = (struct pfs_origin_spill){0};
}

static int stopping(const struct pfs_xfer *x)
{
	return x->stop && pfs_load(x->stop);
}

/* libcurl calls this often during a transfer and about once a second while
 * it waits: a transfer stalled on a server ends soon after a stop. */
static int on_progress(void *p, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
		       curl_off_t ulnow)
{
	(void)dltotal; (void)dlnow; (void)ultotal; (void)ulnow;
	return stopping(p);
}

enum req_kind { REQ_RANGE, REQ_GET, REQ_HEAD };

/* One attempt's state; reset before every attempt. */
struct req {
	enum req_kind kind;
	/* REQ_RANGE: fixed destination for [off, off + want) of the object */
	char *dst;
	size_t want;
	uint64_t off, size;   /* size: the object's listed length */
	uint64_t pos;         /* a 200 (whole object): its bytes seen so far */
	uint64_t skipped;     /* a 200: bytes outside [off, off + want) */
	int whole_done;       /* a 200: the asked part is in; the rest was cut */
	struct pfs_origin_spill *spill; /* a 200: where the bytes after it go */
	/* REQ_GET: growing buffer up to cap */
	char *body;
	size_t body_cap, limit;
	size_t got;
	int overflow;
	struct pfs_resp resp; /* status and headers of the answer */
	uint64_t total;       /* REQ_RANGE: the object's length as answered */
};

static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static void global_init(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
}

static void share_lock(CURL *h, curl_lock_data data, curl_lock_access a, void *p)
{
	(void)h; (void)a;
	pthread_mutex_lock(&((struct pfs_xfer *)p)->share_locks[data]);
}

static void share_unlock(CURL *h, curl_lock_data data, void *p)
{
	(void)h;
	pthread_mutex_unlock(&((struct pfs_xfer *)p)->share_locks[data]);
}

int pfs_xfer_create(const struct pfs_xfer_opts *opts, struct pfs_xfer **out)
{
	pthread_once(&global_once, global_init);
	struct pfs_xfer *x = calloc(1, sizeof(*x));
	if (!x)
		return -ENOMEM;
	x->timeout = opts->timeout > 0 ? opts->timeout : 10;
	x->retries = opts->retries >= 0 ? opts->retries : 0;
	x->stop = opts->stop;
	x->bandwidth = opts->bandwidth;
	pthread_mutex_init(&x->bw_lock, NULL);
	for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
		pthread_mutex_init(&x->share_locks[i], NULL);
	pthread_mutex_init(&x->pool_lock, NULL);
	if (opts->sigv4 && !(x->sigv4 = strdup(opts->sigv4)))
		goto fail;
	if (opts->userpwd && !(x->userpwd = strdup(opts->userpwd)))
		goto fail;
	if (opts->sigv4) {
		/* curl 7.88 signs this header but does not add it itself. */
		struct curl_slist *h = curl_slist_append(NULL, "x-amz-content-sha256: UNSIGNED-PAYLOAD");
		if (!h)
			goto fail;
		x->headers = h;
		if (opts->session_token) {
			char *t;
			if (asprintf(&t, "X-Amz-Security-Token: %s", opts->session_token) < 0)
				goto fail;
			h = curl_slist_append(x->headers, t);
			explicit_bzero(t, strlen(t));
			free(t);
			if (!h)
				goto fail;
			x->headers = h;
		}
	}
	const char *ca = getenv("AWS_CA_BUNDLE");
	if (ca && *ca && access(ca, R_OK) == 0 && !(x->cainfo = strdup(ca)))
		goto fail;
	x->share = curl_share_init();
	if (!x->share)
		goto fail;
	curl_share_setopt(x->share, CURLSHOPT_LOCKFUNC, share_lock);
	curl_share_setopt(x->share, CURLSHOPT_UNLOCKFUNC, share_unlock);
	curl_share_setopt(x->share, CURLSHOPT_USERDATA, x);
	curl_share_setopt(x->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_CONNECT);
	curl_share_setopt(x->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
	curl_share_setopt(x->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
	*out = x;
	return 0;
fail:
	pfs_xfer_destroy(x);
	return -ENOMEM;
}

void pfs_xfer_destroy(struct pfs_xfer *x)
{
	if (!x)
		return;
	for (size_t i = 0; i < x->pool_n; i++)
		curl_easy_cleanup(x->pool[i]);
	free(x->pool);
	if (x->share)
		curl_share_cleanup(x->share);
	for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
		pthread_mutex_destroy(&x->share_locks[i]);
	pthread_mutex_destroy(&x->pool_lock);
	pthread_mutex_destroy(&x->bw_lock);
	if (x->userpwd)
		explicit_bzero(x->userpwd, strlen(x->userpwd));
	if (x->headers) {
		for (struct curl_slist *h = x->headers; h; h = h->next)
			explicit_bzero(h->data, strlen(h->data));
		curl_slist_free_all(x->headers);
	}
	free(x->userpwd);
	free(x->sigv4);
	free(x->cainfo);
	free(x);
}

static CURL *handle_get(struct pfs_xfer *x)
{
	CURL *h = NULL;
	pthread_mutex_lock(&x->pool_lock);
	if (x->pool_n)
		h = x->pool[--x->pool_n];
	pthread_mutex_unlock(&x->pool_lock);
	if (!h)
		h = curl_easy_init();
	return h;
}

static void handle_put(struct pfs_xfer *x, CURL *h)
{
	pthread_mutex_lock(&x->pool_lock);
	if (x->pool_n == x->pool_cap) {
		size_t cap = x->pool_cap ? x->pool_cap * 2 : 16;
		CURL **p = realloc(x->pool, cap * sizeof(*p));
		if (!p) {
			pthread_mutex_unlock(&x->pool_lock);
			curl_easy_cleanup(h);
			return;
		}
		x->pool = p;
		x->pool_cap = cap;
	}
	x->pool[x->pool_n++] = h;
	pthread_mutex_unlock(&x->pool_lock);
}

/* Room for the bytes after [off, off + want) of a whole-object answer:
 * as many as PFS_ORIGIN_SPILL_MAX and what is left of the process-wide
 * bound allow (0: none, the rest is cut as before). */
static void spill_open(struct req *r)
{
	uint64_t end = r->off + r->want, rest = r->size - end;
	size_t cap = rest < PFS_ORIGIN_SPILL_MAX ? (size_t)rest : PFS_ORIGIN_SPILL_MAX;
	if (!cap || pfs_add(&spill_held, cap) > PFS_ORIGIN_SPILL_TOTAL ||
	    !(r->spill->data = malloc(cap))) {
		pfs_sub(&spill_held, cap);
		r->spill = NULL;
		return;
	}
	r->spill->off = end;
	r->spill->cap = cap;
	r->spill->len = 0;
}

/* A 200 to a ranged GET carries the whole object (python's http.server,
 * some CDNs for small objects): keep [off, off + want) of it, count the
 * rest, and end the transfer once the asked part is in (whole_done) when
 * Content-Length gave the object's length; without it, read to the end
 * (the length received is then the object's; more than listed ends it at
 * once). The verdict (length, validator) is pfs_resp_check_range's. */
static size_t on_whole_body(struct req *r, const char *data, size_t n)
{
	uint64_t a = r->pos, b = r->pos + n, end = r->off + r->want;
	int64_t cl = r->resp.content_length;
	r->pos = b;
	if ((cl >= 0 && (uint64_t)cl != r->size) || b > r->size) {
		r->whole_done = 1; /* another length: the verdict says -ESTALE */
		return 0;
	}
	if (b > r->off && a < end) {
		uint64_t from = a > r->off ? a : r->off, to = b < end ? b : end;
		memcpy(r->dst + (from - r->off), data + (from - a), (size_t)(to - from));
		r->got = (size_t)(to - r->off);
		r->skipped += n - (size_t)(to - from);
	} else {
		r->skipped += n;
	}
	if (b > end && r->spill && !r->spill->data)
		spill_open(r);
	if (b > end && r->spill) { /* kept for the caller's cache */
		struct pfs_origin_spill *s = r->spill;
		uint64_t from = a > end ? a : end, to = b < s->off + s->cap ? b : s->off + s->cap;
		if (to > from) {
			memcpy(s->data + (from - s->off), data + (from - a), (size_t)(to - from));
			s->len = (size_t)(to - s->off);
			r->skipped -= to - from;
		}
		if (b < s->off + s->cap)
			return n;
	}
	if (b > end && cl >= 0) {
		r->whole_done = 1;
		return 0; /* the rest is not needed: end the transfer */
	}
	return n;
}

static size_t on_body(char *data, size_t sz, size_t nmemb, void *p)
{
	struct req *r = p;
	size_t n = sz * nmemb;
	/* An error page (404, 503...) is not data: drop it whatever its size,
	 * so the status decides the outcome. */
	if (r->resp.status < 200 || r->resp.status > 299)
		return n;
	if (r->kind == REQ_RANGE && r->resp.status == 200)
		return on_whole_body(r, data, n);
	if (r->kind == REQ_RANGE) {
		if (n > r->want - r->got) {
			r->overflow = 1;
			return 0; /* more than asked for: abort, never trust it */
		}
		memcpy(r->dst + r->got, data, n);
		r->got += n;
		return n;
	}
	if (n > r->limit - r->got) {
		r->overflow = 1;
		return 0;
	}
	if (r->got + n + 1 > r->body_cap) {
		size_t cap = r->body_cap ? r->body_cap : 16384;
		while (cap < r->got + n + 1)
			cap *= 2;
		char *b = realloc(r->body, cap);
		if (!b)
			return 0;
		r->body = b;
		r->body_cap = cap;
	}
	memcpy(r->body + r->got, data, n);
	r->got += n;
	return n;
}

static size_t on_header(char *line, size_t sz, size_t nmemb, void *p)
{
	struct req *r = p;
	size_t n = sz * nmemb;
	pfs_resp_header(&r->resp, line, n);
	return n;
}

static void setup(struct pfs_xfer *x, CURL *h, const char *url, struct req *r)
{
	curl_easy_reset(h);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_SHARE, x->share);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)(x->timeout * 1000));
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)(x->timeout * 1000));
	curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
	/* The shared connection cache is trimmed to each handle's limit (5 by
	 * default) when a transfer ends: with many transfers at once that
	 * closed nearly every connection instead of reusing it. */
	curl_easy_setopt(h, CURLOPT_MAXCONNECTS, 1024L);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, r);
	if (x->stop) {
		curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
		curl_easy_setopt(h, CURLOPT_XFERINFODATA, x);
		curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
	}
	curl_easy_setopt(h, CURLOPT_USERAGENT, "prestofs/" PFS_VERSION);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	if (x->cainfo)
		curl_easy_setopt(h, CURLOPT_CAINFO, x->cainfo);
	if (x->sigv4) {
		curl_easy_setopt(h, CURLOPT_AWS_SIGV4, x->sigv4);
		curl_easy_setopt(h, CURLOPT_USERPWD, x->userpwd);
		curl_easy_setopt(h, CURLOPT_HTTPHEADER, x->headers);
	} else {
		/* Plain HTTP servers may redirect; signed requests never follow. */
		curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 1L);
		curl_easy_setopt(h, CURLOPT_MAXREDIRS, 5L);
		curl_easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
	}
}

static double rnd01(void)
{
	static __thread unsigned long long s;
	if (!s)
		s = ((unsigned long long)time(NULL) << 20) ^ (unsigned long long)pthread_self() ^ 0x9e3779b97f4a7c15ull;
	s ^= s << 13;
	s ^= s >> 7;
	s ^= s << 17;
	return (double)(s >> 11) / 9007199254740992.0;
}

/* An attempt shorter than this cannot be worth starting. */
#define MIN_ATTEMPT_MS 20

/* The time limit of the next attempt in ms: the timeout, cut to what is
 * left before the deadline (0: none); 0 when that is too little. */
static long attempt_ms(const struct pfs_xfer *x, uint64_t deadline_ns)
{
	long ms = (long)(x->timeout * 1000);
	if (!deadline_ns)
		return ms;
	uint64_t now = pfs_clock_ns();
	long left = now >= deadline_ns ? 0 : (long)((deadline_ns - now) / 1000000);
	if (left < MIN_ATTEMPT_MS)
		return 0;
	return left < ms ? left : ms;
}

/* Waits before retry `attempt`, in slices of 50 ms so that a stop ends
 * the wait; never past the deadline (0: none). */
static void backoff(struct pfs_xfer *x, int attempt, double retry_after, uint64_t deadline_ns)
{
	double left = pfs_retry_delay(attempt, retry_after, rnd01());
	if (deadline_ns) {
		uint64_t now = pfs_clock_ns();
		double until = now >= deadline_ns ? 0 : (double)(deadline_ns - now) / 1e9;
		if (left > until)
			left = until;
	}
	while (left > 0 && !stopping(x)) {
		double d = left < 0.05 ? left : 0.05;
		struct timespec ts = {0, (long)(d * 1e9)};
		while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
			;
		left -= d;
	}
}

/* For log messages: no userinfo, no query string. */
static void log_url(const char *url, char *out, size_t cap)
{
	pfs_url_redact(url, out, cap);
}

/* A whole-object answer to a ranged GET: counted (with its bytes neither
 * asked for nor kept), said once per origin. */
static void note_whole_answers(struct pfs_xfer *x, const char *url, uint64_t skipped)
{
	pfs_origin_count(range_ignored, 1);
	pfs_origin_count(range_ignored_bytes, skipped);
	if (__atomic_exchange_n(&x->range_ignored_said, 1, __ATOMIC_RELAXED))
		return;
	char u[256];
	log_url(url, u, sizeof(u));
	pfs_info("%s: the server ignores Range and sends whole objects; each block is "
		 "cut from one (counted in origin.range_ignored_bytes)", u);
}

/* Books len bytes on the capped link and sleeps until they may go. Many
 * requests stay in flight (latency is still hidden); only their sum is
 * paced. Bursts up to 0.1 s worth of bytes pass at once. */
static void throttle(struct pfs_xfer *x, size_t len)
{
	if (!x->bandwidth)
		return;
	double now = pfs_clock_s(), cost = (double)len / (double)x->bandwidth;
	pthread_mutex_lock(&x->bw_lock);
	if (x->bw_next < now - 0.1)
		x->bw_next = now - 0.1;
	double start = x->bw_next;
	x->bw_next += cost;
	pthread_mutex_unlock(&x->bw_lock);
	double wait = start - now;
	if (wait > 0) {
		struct timespec ts = {(time_t)wait, (long)((wait - (double)(time_t)wait) * 1e9)};
		while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
			;
	}
}

/* The request headers of a ranged GET: the signing headers (S3) and the
 * condition that makes the server refuse another version. NULL (and 0)
 * when there are none; the caller frees the list. */
static int range_headers(struct pfs_xfer *x, const char *pinned, struct curl_slist **out)
{
	char cond[PFS_ETAG_MAX + 32];
	*out = NULL;
	if (!pinned[0] || pfs_validator_condition(pinned, cond, sizeof(cond)) != 1)
		return 0;
	struct curl_slist *l = NULL;
	for (struct curl_slist *h = x->headers; h; h = h->next)
		if (!(l = curl_slist_append(*out, h->data)))
			goto fail;
		else
			*out = l;
	if (!(l = curl_slist_append(*out, cond)))
		goto fail;
	*out = l;
	return 0;
fail:
	curl_slist_free_all(*out);
	*out = NULL;
	return -ENOMEM;
}

/* A wrong object is logged once per object and window: what was seen. */
static void log_stale(const char *url, const struct req *r, uint64_t size, long status,
		      const char *pinned, const char *got)
{
	char u[256], key[300];
	log_url(url, u, sizeof(u));
	snprintf(key, sizeof(key), "stale:%s", u);
	if (r->total != size)
		pfs_log_limited(PFS_LOG_WARN, key, "%s: listed size %" PRIu64
				", origin has %" PRIu64 "; not served", u, size, r->total);
	else if (status == 416)
		pfs_log_limited(PFS_LOG_WARN, key, "%s: listed size %" PRIu64
				", origin has fewer bytes (HTTP 416 without a size); not served",
				u, size);
	else
		pfs_log_limited(PFS_LOG_WARN, key, "%s: validator changed on the origin "
				"(pinned %s, now %s); refusing to mix versions", u, pinned,
				status == 412 ? "refused by the server (HTTP 412)" : got);
}

int pfs_xfer_get_range(struct pfs_xfer *x, const char *url, uint64_t size,
		       uint64_t off, size_t len, void *buf, char *etag,
		       struct pfs_origin_spill *spill, uint64_t deadline_ns)
{
	throttle(x, len);
	char range[64], got[PFS_ETAG_MAX] = "";
	snprintf(range, sizeof(range), "%" PRIu64 "-%" PRIu64, off, off + len - 1);
	struct curl_slist *hdrs;
	int rc = range_headers(x, etag, &hdrs);
	if (rc < 0)
		return rc;
	struct req r;
	long status = 0;
	int stale_retried = 0;
	char last_err[128] = "no attempt";
	int attempts = 0;
	for (int attempt = 0; attempt <= x->retries; attempt++) {
		if (stopping(x)) {
			rc = -EIO; /* the daemon is stopping: not worth a log line */
			goto out;
		}
		long ms = attempt_ms(x, deadline_ns);
		if (!ms) {
			/* The reader waited its bound already (other blocks, other
			 * reads it waited for): it fails now rather than later. */
			rc = -EIO;
			pfs_origin_count(deadline_cut, 1);
			if (!attempts)
				last_err[0] = '\0';
			size_t n = strlen(last_err);
			snprintf(last_err + n, sizeof(last_err) - n, "%sthe reader's deadline passed",
				 n ? "; then " : "");
			break;
		}
		CURL *h = handle_get(x);
		if (!h) {
			rc = -ENOMEM;
			goto out;
		}
		pfs_xfer_spill_release(spill); /* an attempt before: not trusted */
		r = (struct req){.kind = REQ_RANGE, .dst = buf, .want = len, .off = off,
				 .size = size, .spill = spill};
		pfs_resp_init(&r.resp);
		setup(x, h, url, &r);
		curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, ms);
		curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, ms);
		curl_easy_setopt(h, CURLOPT_RANGE, range);
		attempts++;
		if (hdrs)
			curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
		pfs_origin_count(requests, 1);
		if (attempt)
			pfs_origin_count(retries, 1);
		pfs_origin_inflight_begin();
		CURLcode cc = curl_easy_perform(h);
		pfs_origin_inflight_end();
		status = 0;
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
		handle_put(x, h);
		if (status == 200 && (off != 0 || len != size))
			note_whole_answers(x, url, r.skipped);
		if (status == 200 && r.resp.content_length < 0 && !r.overflow)
			r.resp.content_length = (int64_t)r.pos; /* the length received */
		if (cc != CURLE_OK && !((r.overflow || r.whole_done) && cc == CURLE_WRITE_ERROR)) {
			rc = -EAGAIN;
			snprintf(last_err, sizeof(last_err), "%s", curl_easy_strerror(cc));
			char u[256];
			log_url(url, u, sizeof(u));
			pfs_debug("GET %s range %s: %s, attempt %d of %d", u, range,
				  last_err, attempt + 1, x->retries + 1);
		} else if (r.overflow) {
			rc = -EAGAIN;
			snprintf(last_err, sizeof(last_err), "more bytes than asked for");
		} else {
			rc = pfs_resp_check_range(&r.resp, status, size, off, len, r.got, etag,
						  got, &r.total);
			snprintf(last_err, sizeof(last_err), "HTTP %ld", status);
			/* Another version, by its validator: once more at once (a
			 * replica behind a balancer may still have the pinned one).
			 * A wrong length is the object itself: no retry. */
			if (rc == -ESTALE && !stale_retried && r.total == size && status != 416) {
				stale_retried = 1;
				attempt--;
				continue;
			}
		}
		if (rc == 0) {
			if (!etag[0])
				memcpy(etag, got, strlen(got) + 1);
			pfs_origin_count(bytes, len);
			goto out;
		}
		pfs_origin_count(errors, 1);
		if (rc != -EAGAIN)
			break;
		rc = -EIO;
		if (attempt < x->retries)
			backoff(x, attempt + 1, r.resp.retry_after, deadline_ns);
	}
	if (rc == -ESTALE)
		log_stale(url, &r, size, status, etag, got);
	else if (rc < 0 && rc != -ENOENT && rc != -EACCES) {
		char u[256], key[300];
		log_url(url, u, sizeof(u));
		snprintf(key, sizeof(key), "getfail:%s", u);
		pfs_log_limited(PFS_LOG_WARN, key, "GET %s range %s: %s after %d attempts",
				u, range, last_err, attempts);
	}
out:
	curl_slist_free_all(hdrs);
	if (rc < 0)
		pfs_xfer_spill_release(spill);
	return rc;
}

/* Shared by GET and HEAD: runs attempts until a final answer. */
static int simple(struct pfs_xfer *x, const char *url, struct req *r, long *status_out,
		  CURL **keep)
{
	int rc = -EIO;
	for (int attempt = 0; attempt <= x->retries; attempt++) {
		if (stopping(x))
			return -EIO;
		CURL *h = handle_get(x);
		if (!h)
			return -ENOMEM;
		r->got = 0;
		r->overflow = 0;
		pfs_resp_init(&r->resp);
		setup(x, h, url, r);
		if (r->kind == REQ_HEAD) {
			curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
			curl_easy_setopt(h, CURLOPT_FILETIME, 1L);
		}
		pfs_origin_count(requests, 1);
		if (attempt)
			pfs_origin_count(retries, 1);
		pfs_origin_inflight_begin();
		CURLcode cc = curl_easy_perform(h);
		pfs_origin_inflight_end();
		long status = 0;
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
		int ok = cc == CURLE_OK && status >= 200 && status < 300;
		/* A HEAD is asked for its length: an answer without one is
		 * retried like a short body (a proxy or an overloaded server may
		 * drop it once), then fails with -EIO. */
		curl_off_t cl = -1;
		if (ok && r->kind == REQ_HEAD)
			curl_easy_getinfo(h, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &cl);
		int no_length = ok && r->kind == REQ_HEAD && cl < 0;
		if (ok && !no_length) {
			pfs_origin_count(bytes, r->got);
			*status_out = status;
			*keep = h;
			return 0;
		}
		handle_put(x, h);
		pfs_origin_count(errors, 1);
		if (r->overflow)
			return -EFBIG;
		if (cc == CURLE_OK && !ok && !pfs_retry_status(status))
			return pfs_retry_errno(status);
		char u[256], key[300];
		log_url(url, u, sizeof(u));
		snprintf(key, sizeof(key), "simplefail:%s", u);
		/* The last attempt says why, once: an untrusted certificate or a
		 * refused connection must not end as a bare EIO. */
		const char *what = r->kind == REQ_HEAD ? "HEAD" : "GET";
		const char *why = cc != CURLE_OK ? curl_easy_strerror(cc) :
				  no_length ? "no Content-Length" : "server error";
		if (attempt == x->retries)
			pfs_log_limited(PFS_LOG_WARN, key, "%s %s: %s (HTTP %ld), attempt %d of %d",
					what, u, why, status, attempt + 1, x->retries + 1);
		else
			pfs_debug("%s %s: %s (HTTP %ld), attempt %d of %d", what, u, why, status,
				  attempt + 1, x->retries + 1);
		if (attempt < x->retries)
			backoff(x, attempt + 1, r->resp.retry_after, 0);
	}
	return rc;
}

int pfs_xfer_get(struct pfs_xfer *x, const char *url, size_t cap, char **body, size_t *len)
{
	struct req r = {.kind = REQ_GET, .limit = cap};
	long status;
	CURL *h;
	int rc = simple(x, url, &r, &status, &h);
	if (rc < 0) {
		free(r.body);
		return rc;
	}
	handle_put(x, h);
	if (!r.body && !(r.body = malloc(1)))
		return -ENOMEM;
	r.body[r.got] = '\0';
	*body = r.body;
	*len = r.got;
	return 0;
}

int pfs_xfer_head(struct pfs_xfer *x, const char *url, uint64_t *size, int64_t *mtime,
		  char *etag)
{
	struct req r = {.kind = REQ_HEAD, .limit = 0};
	long status;
	CURL *h;
	int rc = simple(x, url, &r, &status, &h);
	if (rc < 0)
		return rc;
	curl_off_t cl = -1, ft = -1;
	curl_easy_getinfo(h, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &cl);
	curl_easy_getinfo(h, CURLINFO_FILETIME_T, &ft);
	handle_put(x, h);
	if (cl < 0)
		return -EIO; /* not reached: simple() retries a HEAD without one */
	*size = (uint64_t)cl;
	*mtime = ft;
	if (etag)
		snprintf(etag, PFS_ETAG_MAX, "%s", r.resp.etag);
	return 0;
}

char *pfs_url_escape(const char *s, int keep_slash)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t n = strlen(s);
	char *out = malloc(n * 3 + 1);
	if (!out)
		return NULL;
	char *o = out;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (isalnum(*p) || *p == '-' || *p == '.' || *p == '_' || *p == '~' ||
		    (keep_slash && *p == '/')) {
			*o++ = (char)*p;
		} else {
			*o++ = '%';
			*o++ = hex[*p >> 4];
			*o++ = hex[*p & 15];
		}
	}
	*o = '\0';
	return out;
}
