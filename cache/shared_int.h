/* shared_int.h - private to cache/shared.c and cache/shared_conn.c: the
 * shared tier's state, and its connection layer (shared_conn.c: the server
 * list, a pool of connections, routing around servers that are down).
 * Thread rules as in shared.h; each field says what guards it.
 */
#ifndef PFS_SHARED_INT_H
#define PFS_SHARED_INT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <libmemcached/memcached.h>

#include "shared.h"

#define ROUTE_TRIES 8     /* "KEY#1".."KEY#7" after KEY itself */
#define TIMEOUTS_DOWN 2   /* timeouts in a row that take a server out */
#define HOST_MAX 256

struct server {
	char name[HOST_MAX];
	unsigned port;
	uint64_t down_until; /* atomic: CLOCK_MONOTONIC ns; 0: up */
	uint32_t timeouts;   /* atomic: timeouts since its last answer */
};

/* Where one request goes: the group key that picks the server. */
struct route {
	char gk[PFS_SHARED_KEY_MAX + 8];
	size_t gkl;
	int idx;             /* index in servers[] */
};

/* Up to PFS_SHARED_CONNS clones of the configured handle, one per request
 * in flight. libmemcachedutil's pool is not used: in 1.1.4 its wait ends
 * at time(NULL) + the relative seconds + the nanoseconds, almost always in
 * the past, so a full pool failed at once (measured: 40 of 40 fetches). */
struct conn_pool {
	pthread_mutex_t lock;
	pthread_cond_t cond;                  /* a connection came back */
	memcached_st *idle[PFS_SHARED_CONNS]; /* guarded by lock */
	size_t nidle, created;                /* guarded by lock */
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
	memcached_st *master;    /* configured at create, then read-only */
	struct conn_pool pool;
	memcached_st *wconn;     /* the writer thread's own connection */
	char *origin_id;
	size_t block_size;
	double timeout, lock_wait, retry;
	struct server *servers;  /* set at create; their atomics as marked */
	size_t nservers;

	pthread_mutex_t q_lock;
	pthread_cond_t q_cond;   /* work queued, or stop */
	pthread_cond_t q_done;   /* an item was processed */
	struct qitem *q_head, *q_tail; /* guarded by q_lock */
	uint64_t q_bytes;        /* guarded by q_lock */
	uint64_t q_n;            /* guarded by q_lock: queued + being stored */
	uint64_t q_in, q_out;    /* guarded by q_lock: items queued / done, ever */
	int stop;                /* guarded by q_lock */
	uint64_t stop_deadline;  /* guarded by q_lock: drop what is left after */
	pthread_t writer;

	/* counters: pfs_add/pfs_load */
	uint64_t st_hits, st_misses, st_stores, st_bytes, st_errors, st_timeouts,
		st_bad, st_stale, st_waits, st_wait_hits, st_big, st_dropped, st_skipped,
		st_busy;
	int warned_big;          /* atomic: the too-large warning was given */
};

/* Adds the servers of spec to s->master and s->servers; -EINVAL with err. */
int shared_servers_add(struct pfs_shared *s, const char *spec, char *err, size_t errcap);
/* Sets libmemcached's behaviors on s->master. */
int shared_configure(struct pfs_shared *s);
int shared_pool_init(struct pfs_shared *s);
/* Frees the idle connections (all must have been put back). */
void shared_pool_fini(struct pfs_shared *s);
/* A connection, waiting at most `timeout` for a free one (then NULL,
 * counted in shared.busy). */
memcached_st *shared_conn_get(struct pfs_shared *s);
void shared_conn_put(struct pfs_shared *s, memcached_st *m);
/* The group key for a request about key: 0, or -EHOSTDOWN when every
 * server it could go to is down (counted in shared.skipped). */
int shared_route(struct pfs_shared *s, memcached_st *m, const struct pfs_shared_key *key,
		 struct route *r);
/* After every request on a route: an answer clears the server's timeouts. */
void shared_seen(struct pfs_shared *s, const struct route *r, memcached_return_t rc);
/* A failed request: counted, the server marked down if it refused, reset,
 * or timed out twice in a row; logged (rate-limited). */
void shared_failure(struct pfs_shared *s, memcached_st *m, const struct route *r,
		    memcached_return_t rc, const char *what);

#endif
