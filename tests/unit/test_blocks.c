/* test_blocks.c - blocks/blocks.h with the origin, the SSD tier and the
 * shared tier faked: blocks/meson.build links it with -Wl,--wrap for each
 * of their functions blocks.c calls, so those land in the __wrap_ functions
 * below (the tier pointers are the fakes' addresses, never dereferenced).
 * The RAM tier, the file table and the failure memory are real. Each
 * test's comment says what it checks.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "../../blocks/blocks.h"
#include "../../cache/bcache.h"
#include "../../cache/shared.h"
#include "../../cache/ssd.h"
#include "../../catalog/ftable.h"
#include "../../origin/origin.h"

#define BS 1024u
#define MAXE 256

/* ---- the fakes --------------------------------------------------------- */

/* A __wrap_ function's prototype (-Wmissing-prototypes) and its head. */
#define WRAP(ret, name, args) ret __wrap_##name args; ret __wrap_##name args

struct entry {
	char name[256], v[128];
	uint64_t blk, fp;
	size_t len;
	int used;
	unsigned char data[4 * BS];
};

static struct {
	pthread_mutex_t lock;
	/* origin: object "a" of size A_SIZE, its bytes a function of the
	 * version number and the offset */
	int version;            /* current version at the origin: "\"vN\"" */
	int fail;               /* 0, or the error every read returns */
	int whole;              /* answer with the whole object (a spill) */
	unsigned delay_us;      /* each read takes this long */
	int reads;              /* pfs_origin_read_req calls */
	struct entry ssd[MAXE], sh[MAXE]; /* the SSD and shared tiers */
	int ssd_gets, ssd_puts, ssd_noevict, ssd_releases, ssd_drops;
	uint64_t ssd_room;
	int sh_gets, sh_puts, sh_unlock_puts, sh_unlocks, locks;
	int lock_answer;        /* what pfs_shared_lock returns */
} fk = {.lock = PTHREAD_MUTEX_INITIALIZER};

#define FAKE_SSD ((struct pfs_ssd *)&fk.ssd)
#define FAKE_SHARED ((struct pfs_shared *)&fk.sh)

static unsigned char byte_of(int version, uint64_t off)
{
	return (unsigned char)(off * 31 + (uint64_t)version * 101 + (off >> 8));
}

static void vname(int version, char *out)
{
	snprintf(out, PFS_ETAG_MAX, "\"v%d\"", version);
}

static struct entry *find(struct entry *t, const char *name, uint64_t blk, uint64_t fp)
{
	for (int i = 0; i < MAXE; i++)
		if (t[i].used && !strcmp(t[i].name, name) && t[i].blk == blk && t[i].fp == fp)
			return &t[i];
	return NULL;
}

static void store(struct entry *t, const char *name, uint64_t blk, uint64_t fp, const char *v,
		  const void *data, size_t len)
{
	struct entry *e = find(t, name, blk, fp);
	for (int i = 0; !e && i < MAXE; i++)
		if (!t[i].used)
			e = &t[i];
	if (!e || len > sizeof(e->data))
		abort(); /* the fake's table is too small for the test */
	*e = (struct entry){.blk = blk, .fp = fp, .len = len, .used = 1};
	snprintf(e->name, sizeof(e->name), "%s", name);
	snprintf(e->v, sizeof(e->v), "%s", v ? v : "");
	memcpy(e->data, data, len);
}

/* A copy of the entry (name, blk, fp) of t and its validator: 0 or -ENOENT. */
static int lookup(struct entry *t, const char *name, uint64_t blk, uint64_t fp, void *buf,
		  size_t len, char *v, int *count)
{
	pthread_mutex_lock(&fk.lock);
	(*count)++;
	struct entry *e = find(t, name, blk, fp);
	int rc = e && e->len == len ? 0 : -ENOENT;
	if (rc == 0) {
		memcpy(buf, e->data, len);
		snprintf(v, PFS_ETAG_MAX, "%s", e->v);
	}
	pthread_mutex_unlock(&fk.lock);
	return rc;
}

WRAP(int, pfs_origin_read_req, (struct pfs_origin *o, const char *path, uint64_t size,
			       uint64_t off, size_t len, void *buf, char *etag,
			       const struct pfs_origin_req *req))
{
	(void)o;
	(void)path;
	pthread_mutex_lock(&fk.lock);
	fk.reads++;
	int version = fk.version, fail = fk.fail, whole = fk.whole;
	unsigned delay = fk.delay_us;
	pthread_mutex_unlock(&fk.lock);
	if (delay)
		usleep(delay);
	if (fail)
		return fail;
	char v[PFS_ETAG_MAX];
	vname(version, v);
	if (etag[0] && strcmp(etag, v))
		return -ESTALE; /* If-Match failed */
	snprintf(etag, PFS_ETAG_MAX, "%s", v);
	for (size_t i = 0; i < len; i++)
		((unsigned char *)buf)[i] = byte_of(version, off + i);
	if (whole && req && req->spill && off + len < size) {
		struct pfs_origin_spill *sp = req->spill;
		sp->off = off + len;
		sp->len = sp->cap = (size_t)(size - sp->off);
		sp->data = malloc(sp->len);
		assert_non_null(sp->data);
		for (size_t i = 0; i < sp->len; i++)
			((unsigned char *)sp->data)[i] = byte_of(version, sp->off + i);
	}
	return 0;
}

WRAP(void, pfs_origin_spill_free, (struct pfs_origin_spill *s))
{
	free(s->data);
	*s = (struct pfs_origin_spill){0};
}

WRAP(int, pfs_ssd_get, (struct pfs_ssd *s, const char *path, uint64_t block, uint64_t fp,
		       void *buf, size_t len, char *etag))
{
	assert_ptr_equal(s, FAKE_SSD);
	return lookup(fk.ssd, path, block, fp, buf, len, etag, &fk.ssd_gets);
}

WRAP(int, pfs_ssd_has, (struct pfs_ssd *s, const char *path, uint64_t block, uint64_t fp,
		       size_t len, char *etag))
{
	assert_ptr_equal(s, FAKE_SSD);
	pthread_mutex_lock(&fk.lock);
	struct entry *e = find(fk.ssd, path, block, fp);
	int has = e && e->len == len;
	if (has)
		snprintf(etag, PFS_SSD_ETAG_MAX, "%s", e->v);
	pthread_mutex_unlock(&fk.lock);
	return has;
}

static int ssd_put(const char *path, uint64_t block, uint64_t fp, const char *etag,
		   const void *buf, size_t len)
{
	pthread_mutex_lock(&fk.lock);
	fk.ssd_puts++;
	store(fk.ssd, path, block, fp, etag, buf, len);
	pthread_mutex_unlock(&fk.lock);
	return 0;
}

WRAP(int, pfs_ssd_put, (struct pfs_ssd *s, const char *path, uint64_t block, uint64_t fp,
		       const char *etag, const void *buf, size_t len))
{
	assert_ptr_equal(s, FAKE_SSD);
	return ssd_put(path, block, fp, etag, buf, len);
}

WRAP(int, pfs_ssd_put_ref, (struct pfs_ssd *s, const char *path, uint64_t block, uint64_t fp,
			   const char *etag, const void *buf, size_t len,
			   void (*release)(void *), void *arg))
{
	assert_ptr_equal(s, FAKE_SSD);
	int rc = ssd_put(path, block, fp, etag, buf, len);
	__atomic_add_fetch(&fk.ssd_releases, 1, __ATOMIC_SEQ_CST);
	release(arg); /* the writer is done with it */
	return rc;
}

WRAP(int, pfs_ssd_put_noevict, (struct pfs_ssd *s, const char *path, uint64_t block,
			       uint64_t fp, const char *etag, const void *buf, size_t len))
{
	assert_ptr_equal(s, FAKE_SSD);
	pthread_mutex_lock(&fk.lock);
	int room = fk.ssd_room >= len;
	if (room) {
		fk.ssd_room -= len;
		fk.ssd_noevict++;
	}
	pthread_mutex_unlock(&fk.lock);
	return room ? ssd_put(path, block, fp, etag, buf, len) : -ENOSPC;
}

WRAP(uint64_t, pfs_ssd_room, (struct pfs_ssd *s))
{
	assert_ptr_equal(s, FAKE_SSD);
	pthread_mutex_lock(&fk.lock);
	uint64_t r = fk.ssd_room;
	pthread_mutex_unlock(&fk.lock);
	return r; /* under the lock: put_noevict takes from it */
}

WRAP(void, pfs_ssd_flush, (struct pfs_ssd *s))
{
	assert_ptr_equal(s, FAKE_SSD);
}

WRAP(void, pfs_ssd_drop, (struct pfs_ssd *s, const char *path, uint64_t block))
{
	assert_ptr_equal(s, FAKE_SSD);
	pthread_mutex_lock(&fk.lock);
	fk.ssd_drops++;
	for (int i = 0; i < MAXE; i++)
		if (fk.ssd[i].used && !strcmp(fk.ssd[i].name, path) && fk.ssd[i].blk == block)
			fk.ssd[i].used = 0;
	pthread_mutex_unlock(&fk.lock);
}

WRAP(void, pfs_shared_key, (const struct pfs_shared *s, const char *path, uint64_t size,
			   uint64_t fp, uint64_t blk, struct pfs_shared_key *out))
{
	assert_ptr_equal(s, FAKE_SHARED);
	memset(out, 0, sizeof(*out));
	out->klen = (size_t)snprintf(out->k, sizeof(out->k), "%.40s|%llu|%llx", path,
				     (unsigned long long)size, (unsigned long long)fp);
	out->h[0] = blk;
}

/* The real tier checks `pinned` itself; this fake hands back whatever it
 * holds, so that blocks' own rule is what is tested. */
WRAP(int, pfs_shared_get, (struct pfs_shared *s, const struct pfs_shared_key *key,
			  const char *pinned, void *buf, size_t len, char *v))
{
	assert_ptr_equal(s, FAKE_SHARED);
	(void)pinned;
	return lookup(fk.sh, key->k, key->h[0], 0, buf, len, v, &fk.sh_gets);
}

WRAP(int, pfs_shared_wait, (struct pfs_shared *s, const struct pfs_shared_key *key,
			   const char *pinned, void *buf, size_t len, char *v))
{
	assert_ptr_equal(s, FAKE_SHARED);
	(void)pinned;
	return lookup(fk.sh, key->k, key->h[0], 0, buf, len, v, &fk.sh_gets);
}

WRAP(int, pfs_shared_lock, (struct pfs_shared *s, const struct pfs_shared_key *key))
{
	assert_ptr_equal(s, FAKE_SHARED);
	(void)key;
	pthread_mutex_lock(&fk.lock);
	fk.locks++;
	int rc = fk.lock_answer;
	pthread_mutex_unlock(&fk.lock);
	return rc;
}

WRAP(void, pfs_shared_unlock, (struct pfs_shared *s, const struct pfs_shared_key *key))
{
	assert_ptr_equal(s, FAKE_SHARED);
	(void)key;
	__atomic_add_fetch(&fk.sh_unlocks, 1, __ATOMIC_SEQ_CST);
}

WRAP(int, pfs_shared_put, (struct pfs_shared *s, const struct pfs_shared_key *key, const char *v,
			  const void *data, size_t len, int unlock, void (*release)(void *),
			  void *arg))
{
	assert_ptr_equal(s, FAKE_SHARED);
	pthread_mutex_lock(&fk.lock);
	fk.sh_puts++;
	fk.sh_unlock_puts += unlock;
	store(fk.sh, key->k, key->h[0], 0, v, data, len);
	pthread_mutex_unlock(&fk.lock);
	if (release)
		release(arg);
	return 0;
}

/* ---- fixture ----------------------------------------------------------- */

#define A_SIZE (3 * BS + 100) /* four blocks, the last short */

static struct {
	struct pfs_ftable *ft;
	struct pfs_bcache *cache;
	struct pfs_blocks *bl;
	uint32_t node;
	struct pfs_fnode info;
	struct pfs_blocks_obj o;
} w;

/* ram: the RAM tier's budget in blocks; ssd, shared: with those tiers. */
static void setup_with(unsigned ram, int ssd, int shared)
{
	pthread_mutex_lock(&fk.lock);
	memset(fk.ssd, 0, sizeof(fk.ssd));
	memset(fk.sh, 0, sizeof(fk.sh));
	fk.version = 1;
	fk.fail = fk.whole = 0;
	fk.delay_us = 0;
	fk.reads = fk.ssd_gets = fk.ssd_puts = fk.ssd_noevict = fk.ssd_releases = 0;
	fk.ssd_drops = 0;
	fk.ssd_room = 1u << 30;
	fk.sh_gets = fk.sh_puts = fk.sh_unlock_puts = fk.sh_unlocks = fk.locks = 0;
	fk.lock_answer = -1;
	pthread_mutex_unlock(&fk.lock);
	w.ft = pfs_ftable_create();
	assert_non_null(w.ft);
	assert_int_equal(pfs_ftable_add(w.ft, "d/a", 0, A_SIZE, 1000, NULL), 0);
	assert_int_equal(pfs_ftable_finish(w.ft), 0);
	assert_int_equal(pfs_ftable_resolve(w.ft, "d/a", &w.node), 0);
	assert_int_equal(pfs_ftable_get(w.ft, w.node, &w.info), 0);
	struct pfs_bcache_opts co = {.budget = (uint64_t)ram * BS, .block_size = BS,
				     .policy = PFS_POLICY_LRU};
	assert_int_equal(pfs_bcache_create(&co, &w.cache), 0);
	struct pfs_blocks_opts bo = {.ft = w.ft, .cache = w.cache, .origin = NULL,
				     .ssd = ssd ? FAKE_SSD : NULL,
				     .shared = shared ? FAKE_SHARED : NULL, .block_size = BS};
	assert_int_equal(pfs_blocks_create(&bo, &w.bl), 0);
	pfs_blocks_file(w.bl, w.node, &w.info, &w.o);
}

static int setup_all(void **state)
{
	(void)state;
	setup_with(64, 1, 1);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	pfs_blocks_destroy(w.bl);
	pfs_bcache_destroy(w.cache);
	pfs_ftable_destroy(w.ft);
	return 0;
}

/* A new mount (RAM empty, no shared tier) on the same SSD tier. */
static void remount(void)
{
	static struct entry keep[MAXE];
	teardown(NULL);
	memcpy(keep, fk.ssd, sizeof(keep));
	setup_with(64, 1, 0);
	memcpy(fk.ssd, keep, sizeof(keep));
}

static size_t blen(uint64_t blk)
{
	return blk * BS + BS <= A_SIZE ? BS : A_SIZE - blk * BS;
}

/* Gets block blk as a reader; checks its bytes are version `version`'s.
 * Returns the get's rc; *missed as pfs_blocks_get. */
static int read_block(uint64_t blk, int version, int *missed)
{
	struct pfs_block *b;
	int rc = pfs_blocks_get(w.bl, &w.o, blk, PFS_BLOCKS_READ, 0, &b, missed);
	if (rc < 0)
		return rc;
	assert_int_equal(pfs_block_len(b), blen(blk));
	const unsigned char *d = pfs_block_data(b);
	for (size_t i = 0; i < blen(blk); i++)
		if (d[i] != byte_of(version, blk * BS + i))
			fail_msg("block %llu byte %zu is not version %d's",
				 (unsigned long long)blk, i, version);
	pfs_bcache_put_read(w.cache, b, blen(blk));
	return 0;
}

static void pinned_is(int version)
{
	char v[PFS_ETAG_MAX], want[PFS_ETAG_MAX];
	pfs_ftable_etag(w.ft, w.node, v);
	vname(version, want);
	assert_string_equal(v, want);
}

/* ---- tests ------------------------------------------------------------- */

/* A miss: the origin once, then both tiers get the block (SSD by
 * reference, released), pinned; the next read is a RAM hit. */
static void test_miss_fills_tiers(void **state)
{
	(void)state;
	int missed;
	assert_int_equal(read_block(1, 1, &missed), 0);
	assert_int_equal(missed, 1);
	assert_int_equal(fk.reads, 1);
	pinned_is(1);
	assert_int_equal(fk.ssd_puts, 1);
	assert_int_equal(fk.ssd_releases, 1);
	assert_int_equal(fk.sh_puts, 1);
	assert_string_equal(fk.ssd[0].v, "\"v1\"");
	assert_string_equal(fk.ssd[0].name, "d/a");
	assert_int_equal(fk.ssd[0].blk, 1);
	assert_int_equal(read_block(1, 1, &missed), 0);
	assert_int_equal(missed, 0);
	assert_int_equal(fk.reads, 1);
}

/* The SSD tier's copy of the pinned version is served without the origin
 * (a new mount: RAM empty) and pins its version when none is. */
static void test_ssd_hit_pins(void **state)
{
	(void)state;
	unsigned char buf[BS];
	for (size_t i = 0; i < BS; i++)
		buf[i] = byte_of(1, BS + i);
	store(fk.ssd, "d/a", 1, w.info.fp, "\"v1\"", buf, BS);
	int missed;
	assert_int_equal(read_block(1, 1, &missed), 0);
	assert_int_equal(missed, 1);
	assert_int_equal(fk.reads, 0);
	pinned_is(1);
	assert_int_equal(fk.ssd_puts, 0); /* nothing put back */
	assert_int_equal(fk.sh_gets, 0);
}

/* A stale SSD entry (another version than the pinned one) is never used:
 * the block comes from the origin, of the pinned version. An entry with
 * no validator (an older prestofs) is a miss too. */
static void test_stale_ssd_entry(void **state)
{
	(void)state;
	int missed;
	assert_int_equal(read_block(0, 1, &missed), 0); /* pins v1 */
	unsigned char old[BS];
	for (size_t i = 0; i < BS; i++)
		old[i] = byte_of(7, BS + i);
	store(fk.ssd, "d/a", 1, w.info.fp, "\"v7\"", old, BS);
	store(fk.ssd, "d/a", 2, w.info.fp, "", old, BS);
	assert_int_equal(read_block(1, 1, &missed), 0);
	assert_int_equal(read_block(2, 1, &missed), 0);
	assert_int_equal(fk.reads, 3);
	pinned_is(1);
	/* and the stale entries were replaced by the pinned version's */
	assert_string_equal(find(fk.ssd, "d/a", 1, w.info.fp)->v, "\"v1\"");
	assert_string_equal(find(fk.ssd, "d/a", 2, w.info.fp)->v, "\"v1\"");
}

/* The object changes at the origin after the pin: the next block is
 * -ESTALE (never v2's bytes beside v1's), and nothing of v2 is stored. */
static void test_pin_holds(void **state)
{
	(void)state;
	int missed;
	assert_int_equal(read_block(0, 1, &missed), 0);
	fk.version = 2;
	assert_int_equal(read_block(1, 2, &missed), -ESTALE);
	pinned_is(1);
	assert_int_equal(fk.ssd_puts, 1);
	assert_int_equal(fk.sh_puts, 1);
	assert_null(find(fk.ssd, "d/a", 1, w.info.fp));
	/* and the old version's SSD entries are dropped, all 4 blocks */
	assert_int_equal(fk.ssd_drops, 4);
	assert_null(find(fk.ssd, "d/a", 0, w.info.fp));
}

/* A same-size change the listing cannot show: a new mount finds block 0 of
 * the old version in the SSD tier (same fingerprint) and pins it; the
 * origin refuses the rest (another version): that read fails, the old
 * entries are dropped, and the next mount reads the new version whole. */
static void test_old_version_in_ssd_dropped(void **state)
{
	(void)state;
	int missed;
	assert_int_equal(read_block(0, 1, &missed), 0); /* block 0 of v1 stored */
	remount();
	fk.version = 2; /* same size, same listing */
	assert_int_equal(read_block(0, 1, &missed), 0); /* from SSD: pins v1 */
	assert_int_equal(read_block(1, 2, &missed), -ESTALE);
	assert_null(find(fk.ssd, "d/a", 0, w.info.fp));
	remount();
	fk.version = 2;
	for (uint64_t b = 0; b < 4; b++)
		assert_int_equal(read_block(b, 2, &missed), 0);
	pinned_is(2);
}

/* A failed origin: the error, remembered so the kernel's second try fails
 * at once (no origin read), then asked again; a permanent error (404)
 * fails every read at once and the prefetcher is told to skip the file. */
static void test_failed_origin(void **state)
{
	(void)state;
	int missed;
	fk.fail = -EIO;
	assert_int_equal(read_block(0, 1, &missed), -EIO);
	assert_int_equal(fk.reads, 1);
	assert_int_equal(read_block(0, 1, &missed), -EIO);
	assert_int_equal(fk.reads, 1); /* the failure memory answered */
	fk.fail = 0;
	assert_int_equal(read_block(0, 1, &missed), 0);
	assert_int_equal(fk.reads, 2);
	assert_false(pfs_blocks_failing(w.bl, w.node));
	fk.fail = -ENOENT;
	assert_int_equal(read_block(1, 1, &missed), -ENOENT);
	assert_int_equal(read_block(1, 1, &missed), -ENOENT);
	assert_int_equal(read_block(2, 1, &missed), -ENOENT);
	assert_int_equal(fk.reads, 3);
	assert_true(pfs_blocks_failing(w.bl, w.node));
	assert_int_equal(pfs_blocks_failed_count(w.bl), 1);
	assert_int_equal(fk.ssd_puts, 1); /* only the good block */
}

/* A shared value of another version than pinned is never used: the block
 * comes from the origin, pinned version, and replaces it. One of the
 * pinned version is used without the origin. */
static void test_shared_other_version(void **state)
{
	(void)state;
	int missed;
	assert_int_equal(read_block(0, 1, &missed), 0);
	struct pfs_shared_key k;
	__wrap_pfs_shared_key(FAKE_SHARED, "d/a", A_SIZE, w.info.fp, 1, &k);
	unsigned char buf[BS];
	for (size_t i = 0; i < BS; i++)
		buf[i] = byte_of(5, BS + i);
	store(fk.sh, k.k, 1, 0, "\"v5\"", buf, BS);
	assert_int_equal(read_block(1, 1, &missed), 0);
	assert_int_equal(fk.reads, 2);
	assert_string_equal(find(fk.sh, k.k, 1, 0)->v, "\"v1\"");
	/* block 2 in the shared tier at v1: no origin read, put into SSD */
	__wrap_pfs_shared_key(FAKE_SHARED, "d/a", A_SIZE, w.info.fp, 2, &k);
	for (size_t i = 0; i < BS; i++)
		buf[i] = byte_of(1, 2 * BS + i);
	store(fk.sh, k.k, 2, 0, "\"v1\"", buf, BS);
	int ssd_before = fk.ssd_puts, sh_before = fk.sh_puts;
	assert_int_equal(read_block(2, 1, &missed), 0);
	assert_int_equal(fk.reads, 2);
	assert_int_equal(fk.ssd_puts, ssd_before + 1);
	assert_int_equal(fk.sh_puts, sh_before); /* not stored back */
}

/* The shared tier's lock: held, the fetch's store releases it; the fetch
 * failing releases it at once. Never both, never neither. */
static void test_shared_lock_released(void **state)
{
	(void)state;
	int missed;
	fk.lock_answer = 1;
	assert_int_equal(read_block(0, 1, &missed), 0);
	assert_int_equal(fk.locks, 1);
	assert_int_equal(fk.sh_unlock_puts, 1);
	assert_int_equal(fk.sh_unlocks, 0);
	fk.fail = -EIO;
	assert_int_equal(read_block(1, 1, &missed), -EIO);
	assert_int_equal(fk.locks, 2);
	assert_int_equal(fk.sh_unlock_puts, 1);
	assert_int_equal(fk.sh_unlocks, 1);
	/* the kernel's second try: the failure memory answers, no lock */
	assert_int_equal(read_block(1, 1, &missed), -EIO);
	assert_int_equal(fk.locks, 2);
	/* another holds it: wait, then (still absent) fetch without it */
	fk.fail = 0;
	fk.lock_answer = 0;
	assert_int_equal(read_block(2, 1, &missed), 0);
	assert_int_equal(fk.locks, 3);
	assert_int_equal(fk.sh_unlock_puts, 1);
	assert_int_equal(fk.sh_unlocks, 1);
	assert_int_equal(fk.sh_puts, 2); /* stored, without a lock to release */
}

struct racer {
	pthread_barrier_t *go;
	uint64_t blk;
	int rc;
};

static void *race(void *p)
{
	struct racer *r = p;
	pthread_barrier_wait(r->go);
	int missed;
	r->rc = read_block(r->blk, 1, &missed);
	return NULL;
}

/* Sixteen readers of one block at once: one origin read, one put into
 * each tier, every reader the same exact bytes. */
static void test_concurrent_fills(void **state)
{
	(void)state;
	enum { N = 16 };
	fk.delay_us = 20000; /* so the readers overlap; not asserted on */
	pthread_barrier_t go;
	pthread_barrier_init(&go, NULL, N);
	pthread_t t[N];
	struct racer r[N];
	for (int i = 0; i < N; i++) {
		r[i] = (struct racer){&go, 3, -1};
		assert_int_equal(pthread_create(&t[i], NULL, race, &r[i]), 0);
	}
	for (int i = 0; i < N; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(r[i].rc, 0);
	}
	pthread_barrier_destroy(&go);
	assert_int_equal(fk.reads, 1);
	assert_int_equal(fk.ssd_puts, 1);
	assert_int_equal(fk.sh_puts, 1);
}

/* A whole-object answer (no Range at the origin): the other blocks are
 * kept in RAM and the SSD tier, and read with no origin request. */
static void test_whole_answer_kept(void **state)
{
	(void)state;
	int missed;
	fk.whole = 1;
	assert_int_equal(read_block(0, 1, &missed), 0);
	assert_int_equal(fk.reads, 1);
	for (uint64_t b = 1; b < 4; b++) {
		assert_int_equal(read_block(b, 1, &missed), 0);
		assert_int_equal(missed, 0);
		assert_non_null(find(fk.ssd, "d/a", b, w.info.fp));
	}
	assert_int_equal(fk.reads, 1);
}

/* A made object (a view's output): made once from its source, stored in
 * both tiers under its own name with the source's pinned version; a new
 * mount (RAM empty) finds it in the SSD tier without making it. */
struct maker {
	int calls;
	int version;
};

static int make(void *ctx, void *buf, size_t len)
{
	struct maker *m = ctx;
	m->calls++;
	/* the source, read through blocks as node_view.c does */
	struct pfs_block *b;
	int rc = pfs_blocks_get(w.bl, &w.o, 0, PFS_BLOCKS_READ, 0, &b, NULL);
	if (rc < 0)
		return rc;
	const unsigned char *src = pfs_block_data(b);
	for (size_t i = 0; i < len; i++)
		((unsigned char *)buf)[i] = (unsigned char)(src[i % BS] ^ 0x5a);
	pfs_bcache_put_read(w.cache, b, BS);
	return 0;
}

static int made_name(void *ctx, char *out, size_t cap)
{
	(void)ctx;
	return snprintf(out, cap, ".views/x/d/a") >= (int)cap ? -ENAMETOOLONG : 0;
}

static void made_obj(struct maker *m, struct pfs_blocks_obj *o)
{
	*o = (struct pfs_blocks_obj){.ino = (1ull << 48) | w.node, .node = w.node, .size = 700,
				     .block = 700, .fp = w.info.fp ^ 77, .name = made_name,
				     .make = make, .ctx = m};
}

static void test_made_object(void **state)
{
	(void)state;
	struct maker m = {0};
	struct pfs_blocks_obj o;
	made_obj(&m, &o);
	struct pfs_block *b;
	assert_int_equal(pfs_blocks_get(w.bl, &o, 0, PFS_BLOCKS_READ, 0, &b, NULL), 0);
	assert_int_equal(pfs_block_len(b), 700);
	const unsigned char *d = pfs_block_data(b);
	for (size_t i = 0; i < 700; i++)
		assert_int_equal(d[i], byte_of(1, i) ^ 0x5a);
	pfs_bcache_put_read(w.cache, b, 700);
	assert_int_equal(m.calls, 1);
	struct entry *e = find(fk.ssd, ".views/x/d/a", 0, o.fp);
	assert_non_null(e);
	assert_string_equal(e->v, "\"v1\"");
	assert_int_equal(fk.sh_puts, 2); /* the source's block and the output */
	/* a new mount, the same SSD tier: no make, no origin read */
	remount();
	struct maker m2 = {0};
	made_obj(&m2, &o);
	assert_int_equal(pfs_blocks_get(w.bl, &o, 0, PFS_BLOCKS_READ, 0, &b, NULL), 0);
	pfs_bcache_put_read(w.cache, b, 700);
	assert_int_equal(m2.calls, 0);
	assert_int_equal(fk.reads, 0);
	pinned_is(1);
}

/* A made object whose maker fails is not stored, and its failure is
 * remembered for it, not for its source. */
static int make_fails(void *ctx, void *buf, size_t len)
{
	(void)buf;
	(void)len;
	((struct maker *)ctx)->calls++;
	return -EIO;
}

static void test_made_object_fails(void **state)
{
	(void)state;
	struct maker m = {0};
	struct pfs_blocks_obj o;
	made_obj(&m, &o);
	o.make = make_fails;
	struct pfs_block *b;
	assert_int_equal(pfs_blocks_get(w.bl, &o, 0, PFS_BLOCKS_READ, 0, &b, NULL), -EIO);
	assert_int_equal(fk.ssd_puts, 0);
	assert_int_equal(fk.sh_puts, 0);
	assert_false(pfs_blocks_failing(w.bl, w.node));
	int missed;
	assert_int_equal(read_block(0, 1, &missed), 0);
}

/* Warm-up: into RAM while it has free room (and the SSD tier, never
 * evicting), then into the SSD tier only; fetched once; a second pass
 * fetches nothing; where() agrees. */
static void test_warm(void **state)
{
	(void)state;
	teardown(NULL);
	setup_with(2, 1, 0); /* RAM: two blocks */
	struct pfs_blocks_place p;
	for (uint64_t b = 0; b < 4; b++) {
		assert_int_equal(pfs_blocks_warm(w.bl, &w.o, b, &p), 0);
		assert_int_equal(p.fetched, 1);
		assert_int_equal(p.ssd, 1);
		assert_int_equal(p.ram, b < 2);
	}
	assert_int_equal(fk.reads, 4);
	assert_int_equal(fk.ssd_noevict, 4);
	assert_int_equal(fk.ssd_puts, 4);
	for (uint64_t b = 0; b < 4; b++) {
		assert_int_equal(pfs_blocks_warm(w.bl, &w.o, b, &p), 0);
		assert_int_equal(p.fetched, 0);
		assert_int_equal(pfs_blocks_where(w.bl, &w.o, b, &p), 0);
		assert_int_equal(p.ssd, 1);
		assert_int_equal(p.ram, b < 2);
	}
	assert_int_equal(fk.reads, 4);
	/* the SSD entries are the pinned version's bytes */
	int missed;
	remount();
	for (uint64_t b = 0; b < 4; b++)
		assert_int_equal(read_block(b, 1, &missed), 0);
	assert_int_equal(fk.reads, 0);
}

/* Warm-up with no room anywhere: nothing fetched, nothing evicted. */
static void test_warm_no_room(void **state)
{
	(void)state;
	teardown(NULL);
	setup_with(1, 1, 0);
	int missed;
	assert_int_equal(read_block(0, 1, &missed), 0); /* RAM full */
	fk.ssd_room = 0;
	struct pfs_blocks_place p;
	assert_int_equal(pfs_blocks_warm(w.bl, &w.o, 1, &p), 0);
	assert_int_equal(p.fetched, 0);
	assert_int_equal(p.ram, 0);
	assert_int_equal(p.ssd, 0);
	assert_int_equal(fk.reads, 1);
	assert_int_equal(read_block(0, 1, &missed), 0);
	assert_int_equal(missed, 0); /* still resident */
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup_all, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_miss_fills_tiers), T(test_ssd_hit_pins), T(test_stale_ssd_entry),
		T(test_pin_holds), T(test_old_version_in_ssd_dropped), T(test_failed_origin),
		T(test_shared_other_version), T(test_shared_lock_released),
		T(test_concurrent_fills), T(test_whole_answer_kept), T(test_made_object),
		T(test_made_object_fails), T(test_warm), T(test_warm_no_room),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
