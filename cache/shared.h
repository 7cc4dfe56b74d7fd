/* shared.h - the shared tier: blocks kept in memcached servers that every
 * node of a cluster asks, between the SSD tier and the origin.
 *
 * RAM -> SSD -> shared -> origin. A block that came from the origin is
 * stored here off the read's critical path (one writer thread, a bounded
 * queue); a miss in RAM and SSD asks here first. The servers are spread
 * over by consistent hashing (a ring, shared_conn.c), so the nodes' caches
 * add up, and a dead server's keys fall to the others. The exchanges are
 * prestofs's own (mc.h): each has one deadline for all of it, and no
 * value longer than a block and its header is ever read.
 *
 * Keys: "pfs1:" (with a key file "pfsk:") + 32 hex digits of XXH3-128
 * over (origin identity, path, listing fingerprint, size, block size, and
 * with a key file an id of its secret) + ":" + the block index in hex:
 * under memcached's 250 bytes, and no path or origin in the clear. Values:
 * a header (magic, format version, length, XXH3-128 of the key, validator,
 * checksum of validator and data) then the block. A get checks all of it
 * against what it asked for: any mismatch is counted, the item deleted,
 * and the get is a miss. So garbage written by another client under one of
 * our keys is never served. The checksum is not a MAC: whoever can write
 * to memcached on purpose can forge one. With a key file (key_file), the
 * value carries HMAC-SHA256 under its secret instead, and a value whose
 * MAC does not check is a miss, counted (shared.auth_failures), deleted.
 *
 * The caller (fs/) pins the validator a value carries, as for the SSD tier:
 * a block of another version than the one pinned is never used.
 *
 * Failures never fail a read: each exchange has a deadline from its
 * server's observed latency (shared_conn.c), at most `timeout`; a server
 * that refuses or resets is left out for `retry` seconds at once (its keys
 * go where the ring puts "KEY#1", ...), one that times out only after
 * repeated timeouts; the get is a miss. A store goes to its key's server
 * only, retried a little on a timeout, else dropped (counted). Too-large
 * items (memcached's -I) are counted and logged once.
 *
 * No herd: pfs_shared_lock() adds a lock item (TTL 2 s) for a missing
 * block; the one caller that adds it fetches from the origin, the others
 * wait for the block in memcached (pfs_shared_wait: polls, at most
 * lock_wait) and then fetch it themselves.
 *
 * Thread-safe: each exchange takes a connection of its own (mc.h); the
 * store queue has its own lock. Never logs a key's inputs' secrets (the
 * origin identity given must be secret-free), nor the key file's bytes.
 */
#ifndef PFS_SHARED_H
#define PFS_SHARED_H

#include <stddef.h>
#include <stdint.h>

#include "../catalog/listing.h"
#include "../util/stats.h"

#define PFS_SHARED_TIMEOUT 1.0 /* s: the default ceiling of a deadline */
#define PFS_SHARED_KEY_MAX 64
#define PFS_SHARED_VALIDATOR_MAX PFS_ETAG_MAX /* the one size (catalog/listing.h) */
#define PFS_SHARED_QUEUE_MAX (64u << 20) /* bytes of blocks waiting to be stored */

struct pfs_shared_opts {
	const char *servers;   /* "host:port+host:port..." (copied) */
	const char *origin_id; /* secret-free origin name, part of every key */
	size_t block_size;
	double timeout;        /* seconds, the ceiling of an exchange's
				* deadline (PFS_SHARED_TIMEOUT) */
	const char *key_file;  /* NULL: values are not authenticated */
	double retry;          /* seconds a failed server is skipped (2) */
	double lock_wait;      /* seconds a get waits for another's fetch (0.5) */
};

/* A block's key (pfs_shared_key). */
struct pfs_shared_key {
	char k[PFS_SHARED_KEY_MAX];
	size_t klen;
	uint64_t h[2]; /* XXH3-128 of k, in every value */
};

struct pfs_shared;

/* Parses a server list: "host:port" items joined by '+' (or ','), host a
 * name, an IPv4 address or [IPv6]; port 1 to 65535 (no default, so a typo
 * shows). With a "memcached://" prefix or none. 0, or -EINVAL with a
 * message in err. */
int pfs_shared_parse_servers(const char *spec, char *err, size_t errcap);

/* Connects nothing yet (connections open on first use). 0 and *out, or
 * -EINVAL (bad server list, bad key file: logged), -EACCES (a key file
 * others may read), -ENOENT, -ENOMEM. */
int pfs_shared_create(const struct pfs_shared_opts *o, struct pfs_shared **out);
/* Stores what is queued (for at most about 2 s: then the rest is dropped,
 * its data released), then frees. NULL ok. */
void pfs_shared_destroy(struct pfs_shared *s);

void pfs_shared_key(const struct pfs_shared *s, const char *path, uint64_t size, uint64_t fp,
		    uint64_t blk, struct pfs_shared_key *out);

/* Block `key` into buf (exactly len bytes) and its validator into v
 * (PFS_SHARED_VALIDATOR_MAX). `pinned`: the version the caller must have
 * ("" or NULL: any). 0: a hit whose header, length and checksum all check
 * (and whose validator is `pinned`); -ENOENT: a miss (absent; a bad
 * value, deleted; a value of another version, counted as stale); -EIO:
 * no answer (a server failure or timeout, no connection free, every
 * server down): the caller should not wait on a lock there. buf may have
 * been written even on a miss. */
int pfs_shared_get(struct pfs_shared *s, const struct pfs_shared_key *key, const char *pinned,
		   void *buf, size_t len, char *v);

/* Before fetching a missing block from the origin: 1 when this caller
 * holds the block's lock (it must end with pfs_shared_put(..., 1, ...) or
 * pfs_shared_unlock), 0 when another node or thread does (call
 * pfs_shared_wait), -1 when the servers do not answer (fetch, no lock). */
int pfs_shared_lock(struct pfs_shared *s, const struct pfs_shared_key *key);
/* Waits up to lock_wait (plus one request) for another's fetch of `key`
 * to be stored; returns as pfs_shared_get. Counts shared.lock_waits; the
 * block then counts one miss (the first get) and one hit or miss here. */
int pfs_shared_wait(struct pfs_shared *s, const struct pfs_shared_key *key,
		    const char *pinned, void *buf, size_t len, char *v);
/* Releases a held lock (the fetch failed); queued, never blocks. */
void pfs_shared_unlock(struct pfs_shared *s, const struct pfs_shared_key *key);

/* Queues a store of block `key` (data, len bytes, validator v) and, when
 * `unlock`, the release of its lock after it. With release NULL the data
 * is copied now; else it stays the caller's until release(arg), called at
 * once when the put is refused, else by the writer after the store.
 * Returns 0, or -EAGAIN (queue full: counted as dropped; a held lock is
 * released all the same), -EINVAL (v empty or "-": objects without a
 * validator are not shared), -ENOMEM. */
int pfs_shared_put(struct pfs_shared *s, const struct pfs_shared_key *key, const char *v,
		   const void *data, size_t len, int unlock, void (*release)(void *),
		   void *arg);

/* Waits until every store queued before the call is done (stored,
 * refused or failed). */
void pfs_shared_flush(struct pfs_shared *s);

struct pfs_shared_stats {
	uint64_t hits, misses;      /* gets: checked hits / all else */
	uint64_t stores;            /* values stored */
	uint64_t bytes;             /* block bytes stored (without headers) */
	uint64_t errors;            /* exchanges a server failed (not timeouts) */
	uint64_t timeouts;          /* exchanges past their deadline */
	uint64_t checksum_failures; /* values that did not check (deleted) */
	uint64_t auth_failures;     /* values whose MAC did not check, or
				     * without one (key file; deleted) */
	uint64_t too_long;          /* answers declaring a value longer than
				     * a block and its header (refused) */
	uint64_t stale;             /* values of another version than pinned */
	uint64_t lock_waits;        /* gets that waited for another's fetch */
	uint64_t lock_wait_hits;    /* of those, found it */
	uint64_t too_large;         /* stores refused as larger than -I */
	uint64_t dropped;           /* stores not queued (queue full) */
	uint64_t store_retries;     /* stores sent again after a timeout */
	uint64_t store_failures;    /* stores given up: their server out,
				     * not there, or timing out */
	uint64_t queued;            /* gauge: stores waiting (0: every one
				     * processed: stored, refused or failed) */
	uint64_t servers;           /* gauge: servers configured */
	uint64_t servers_down;      /* gauge: of those, left out now */
	uint64_t skipped;           /* requests not sent: every server they
				     * could go to was down */
	uint64_t deadline_ms;       /* gauge: the longest deadline a block's
				     * get has now, over the servers */
};
void pfs_shared_stats(struct pfs_shared *s, struct pfs_shared_stats *out);
/* Stats source (pfs_stats_fn): shared.hits, ... (prestofs(1)). NULL: zeros. */
void pfs_shared_collect(void *s, struct pfs_stat_list *l);

#endif
