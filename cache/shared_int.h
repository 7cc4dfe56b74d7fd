/* shared_int.h - private to cache/shared.c and cache/shared_conn.c: the
 * shared tier's state, and its server layer (shared_conn.c: the server
 * list, the hash ring, each server's latency estimate and health).
 * Thread rules as in shared.h; each field says what guards it.
 */
#ifndef PFS_SHARED_INT_H
#define PFS_SHARED_INT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "mc.h"
#include "shared.h"

#define ROUTE_TRIES 8     /* "KEY#1".."KEY#7" after KEY itself */
#define HOST_MAX 256
#define RING_POINTS 160   /* per server */
#define FAILS_DOWN 3      /* timeouts within FAIL_WINDOW_NS, none answered
			   * in between, that take a server out */
#define FAIL_WINDOW_NS 10000000000ull
#define DEADLINE_FLOOR 0.25 /* s: the least an exchange is given: on a busy
			     * node (192 threads on 2 cores, CI) a small value
			     * took over 0.1 s once among several hundred */

/* What an exchange carries, for its latency estimate: a block (a get
 * that may hit, a store), or a few bytes (a miss, a lock, a delete). */
enum xkind { X_BLOCK, X_SMALL, X_KINDS };

/* Smoothed latency and its mean deviation, as TCP's RTO (RFC 6298). */
struct est {
	double srtt, rttvar; /* seconds */
	int n;               /* samples so far */
};

struct server {
	char name[HOST_MAX];
	unsigned port;
	struct pfs_mc_server *mc;
	pthread_mutex_t lock;   /* guards est, fails, fail_since */
	struct est est[X_KINDS];
	uint32_t fails;         /* timeouts (or bad answers) since the last
				 * answer, within the window */
	uint64_t fail_since;    /* ns: the first of those */
	uint64_t down_until;    /* atomic: CLOCK_MONOTONIC ns; 0: up */
};

struct ring_point {
	uint64_t h;
	uint32_t idx;
};

/* Where one request goes. */
struct route {
	int idx;                /* index in servers[] */
	uint64_t t0;            /* when the exchange began */
	uint64_t deadline;      /* its deadline */
	enum xkind kind;
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
	char *origin_id;
	size_t block_size;
	double timeout, lock_wait, retry;
	void *mac;               /* EVP_MAC_CTX * of HMAC-SHA256 keyed with the
				  * key file's secret, duplicated per value;
				  * NULL: values carry a checksum, not a MAC */
	uint64_t key_seed;       /* with mac: seeds every key (from the secret) */
	struct server *servers;  /* set at create; their fields as marked */
	size_t nservers;
	struct ring_point *ring; /* set at create, sorted by h */
	size_t nring;

	pthread_mutex_t q_lock;
	pthread_cond_t q_cond;   /* work queued, or stop */
	pthread_cond_t q_done;   /* an item was processed */
	struct qitem *q_head, *q_tail; /* guarded by q_lock */
	uint64_t q_bytes;        /* guarded by q_lock */
	uint64_t q_n;            /* guarded by q_lock: queued + being stored */
	uint64_t q_in, q_out;    /* guarded by q_lock: items queued / done, ever */
	int stop;                /* guarded by q_lock */
	uint64_t stop_deadline;  /* atomic: 0, or (destroy) when every exchange
				  * ends and what is left is dropped */
	pthread_t writer;

	/* counters: pfs_add/pfs_load */
	uint64_t st_hits, st_misses, st_stores, st_bytes, st_errors, st_timeouts,
		st_bad, st_stale, st_waits, st_wait_hits, st_big, st_dropped, st_skipped,
		st_auth, st_store_failed, st_store_retries, st_refused_big;
	int warned_big;          /* atomic: the too-large warning was given */
};

/* Adds the servers of spec to s->servers and builds the ring; -EINVAL
 * with err. */
int shared_servers_add(struct pfs_shared *s, const char *spec, char *err, size_t errcap);
void shared_servers_free(struct pfs_shared *s);
/* Routes a request about key of this kind: the server ketama-style ring
 * puts it on, else, while that one is out, the first of "key#1",
 * "key#2", ... that is up; sets its deadline from the server's estimate.
 * 0, or -EHOSTDOWN when every try lands on a server that is out (counted
 * in shared.skipped). */
int shared_route(struct pfs_shared *s, const struct pfs_shared_key *key, enum xkind kind,
		 struct route *r);
/* The server's deadline for an exchange of this kind, in seconds. */
double shared_deadline_s(struct pfs_shared *s, int idx, enum xkind kind);
/* After an exchange on r that got an answer (whatever it said): its time
 * feeds the estimate of `kind` (the kind it turned out to be), and the
 * server's failures are forgotten. */
void shared_answered(struct pfs_shared *s, const struct route *r, enum xkind kind);
/* An exchange on r that failed with err (pfs_mc_*): counted, the server
 * taken out when it is not there (refused, reset) or failed FAILS_DOWN
 * times within the window without an answer; logged (rate-limited). */
void shared_failure(struct pfs_shared *s, const struct route *r, int err, const char *what);

#endif
