/* mc.h - a memcached client for the shared tier: the text protocol's get,
 * set, add and delete on non-blocking sockets, each exchange bounded by
 * one absolute deadline (connect, send, wait and transfer together), and
 * a value longer than the caller's cap refused from its VALUE line,
 * before anything is read or allocated for it.
 *
 * libmemcached 1.1.4 cannot do either: its poll timeout is per wait (a
 * server that trickles one byte per wait holds a get for minutes), and it
 * allocates whatever length a VALUE line declares.
 *
 * One struct pfs_mc_server per server: its address and a stack of idle
 * connections (at most PFS_MC_IDLE_MAX kept). An exchange takes an idle
 * connection or opens one, and gives it back only when the exchange ended
 * cleanly; after any error or a deadline the connection is closed (its
 * protocol state is unknown). Values are read into a buffer the
 * connection owns and keeps (grown up to the largest cap asked), so a get
 * allocates nothing once warm.
 *
 * Thread-safe: any number of exchanges at once on one server (one
 * connection each). Never logs; errors are returned:
 *   -ETIMEDOUT     the deadline passed (or no connection could be made
 *                  within it)
 *   -ECONNREFUSED, -ECONNRESET, -EPIPE, -EHOSTUNREACH, -ENETUNREACH,
 *   -EADDRNOTAVAIL  the server is not there (dead, not slow)
 *   -EFBIG         a VALUE longer than the cap (connection closed)
 *   -EPROTO        an answer that is not the protocol
 *   -ENOMEM, -EINVAL (a key with a space or control byte, or too long)
 */
#ifndef PFS_MC_H
#define PFS_MC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#define PFS_MC_IDLE_MAX 16
#define PFS_MC_KEY_MAX 250

struct pfs_mc_server;

/* Resolves host:port now (numeric or a name; a name that does not
 * resolve is tried again at each connect). 0, -ENOMEM. */
int pfs_mc_server_create(const char *host, unsigned port, struct pfs_mc_server **out);
/* No exchange may be running. NULL ok. */
void pfs_mc_server_destroy(struct pfs_mc_server *sv);

/* A value got: its bytes stay valid until pfs_mc_value_done(). */
struct pfs_mc_value {
	const char *data;
	size_t len;
	void *conn; /* private: the connection that holds the bytes */
};
/* get: 0 and *out (give it back with pfs_mc_value_done), or -ENOENT when
 * absent, or an error. `cap`: the longest value accepted. */
int pfs_mc_get(struct pfs_mc_server *sv, const char *key, size_t klen, size_t cap,
	       uint64_t deadline_ns, struct pfs_mc_value *out);
/* Gives the connection of a get that returned 0 back (or closes it). */
void pfs_mc_value_done(struct pfs_mc_server *sv, struct pfs_mc_value *v);

/* set (add: only if absent) of the bytes of iov[0..n) under key, expiring
 * after ttl seconds (0: never). 0 stored; -EEXIST not stored (add: the key
 * exists); -E2BIG the server refused the item as too large; -ENOSPC the
 * server is full and may not evict (memcached -M). */
int pfs_mc_set(struct pfs_mc_server *sv, int add, const char *key, size_t klen,
	       const struct iovec *iov, int n, unsigned ttl, uint64_t deadline_ns);
/* 0 deleted, -ENOENT absent. */
int pfs_mc_delete(struct pfs_mc_server *sv, const char *key, size_t klen,
		  uint64_t deadline_ns);

/* 1 for the errors that say the server is not there (refused, reset,
 * unreachable): dead, not slow. */
int pfs_mc_is_dead(int err);

#endif
