/* blocks.c - see blocks.h.
 *
 * One struct fill per pfs_blocks_get (or warm-up step): the RAM tier runs
 * fill_block() at most once for it (a miss), which finds the bytes and
 * notes which puts are due; finish() then does them, once the block is
 * held (so the tiers' writers take it without a copy) or, for a warm-up,
 * at once with a copy into tiers that never evict.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "blocks.h"
#include "../cache/bcache.h"
#include "../cache/bufpool.h"
#include "../cache/failmem.h"
#include "../cache/shared.h"
#include "../cache/ssd.h"
#include "../catalog/ftable.h"
#include "../origin/counters.h"
#include "../origin/origin.h"
#include "../origin/validator.h"
#include "../util/atomic.h"
#include "../util/clock.h"
#include "../util/log.h"

#define NAME_MAX_BYTES (4096 + 320)
#define PFS_BLOCKS_DROP_MAX 4096 /* a file's SSD entries dropped at once, at most */

struct pfs_blocks {
	struct pfs_ftable *ft;
	struct pfs_bcache *cache;
	struct pfs_origin *origin;
	struct pfs_ssd *ssd;
	struct pfs_shared *shared;
	struct pfs_failmem *failed;  /* objects the origin just failed */
	size_t block_size;
	uint64_t mount_nonce;        /* drawn at create: see ssd_fp */
	int warned_no_validator;     /* atomic: logged once */
};

int pfs_blocks_create(const struct pfs_blocks_opts *o, struct pfs_blocks **out)
{
	struct pfs_blocks *bl = calloc(1, sizeof(*bl));
	if (!bl)
		return -ENOMEM;
	if (pfs_failmem_create(&bl->failed) < 0) {
		free(bl);
		return -ENOMEM;
	}
	/* Any number will do, as long as the next mount draws another. */
	if (getrandom(&bl->mount_nonce, sizeof(bl->mount_nonce), 0) != sizeof(bl->mount_nonce))
		bl->mount_nonce = ((uint64_t)time(NULL) << 20) ^ (uint64_t)getpid() ^
				  pfs_clock_ns();
	bl->ft = o->ft;
	bl->cache = o->cache;
	bl->origin = o->origin;
	bl->ssd = o->ssd;
	bl->shared = o->shared;
	bl->block_size = o->block_size;
	*out = bl;
	return 0;
}

void pfs_blocks_destroy(struct pfs_blocks *bl)
{
	if (!bl)
		return;
	pfs_failmem_destroy(bl->failed);
	free(bl);
}

void pfs_blocks_file(const struct pfs_blocks *bl, uint32_t node, const struct pfs_fnode *info,
		     struct pfs_blocks_obj *out)
{
	*out = (struct pfs_blocks_obj){.ino = (uint64_t)node + 1, .node = node,
				       .size = info->size, .block = bl->block_size,
				       .fp = info->fp};
}

int pfs_blocks_failing(struct pfs_blocks *bl, uint32_t node)
{
	return pfs_failmem_check(bl->failed, node, pfs_clock_ns()) < 0;
}

uint64_t pfs_blocks_failed_count(struct pfs_blocks *bl)
{
	return pfs_failmem_count(bl->failed);
}

void pfs_blocks_flush(struct pfs_blocks *bl)
{
	if (bl->ssd)
		pfs_ssd_flush(bl->ssd);
}

/* ---- the version rule --------------------------------------------------- */

/* The fingerprint an SSD entry of version v is stored and looked up with.
 * An object without a validator ("-") can change at the same size with
 * nothing to show it, so its entries hold for this mount only: the
 * fingerprint is mixed with a number drawn at create. */
static uint64_t ssd_fp(const struct pfs_blocks *bl, uint64_t fp, const char *v)
{
	return strcmp(v, PFS_VALIDATOR_NONE) ? fp : fp ^ bl->mount_nonce;
}

/* A copy of version v, from any tier, for dataset file `node`: 0 when v is
 * the pinned version or now pinned by it; -ESTALE when another is pinned;
 * -ENOENT for a copy no tier may serve: an empty validator (an SSD entry
 * of an older prestofs), or "-" (none) where the pin is not "-" (an SSD
 * entry of another mount). */
static int pin(struct pfs_blocks *bl, uint32_t node, const char *v)
{
	char pinned[PFS_ETAG_MAX];
	if (!v[0])
		return -ENOENT;
	if (!strcmp(v, PFS_VALIDATOR_NONE)) {
		pfs_ftable_etag(bl->ft, node, pinned);
		if (strcmp(pinned, PFS_VALIDATOR_NONE))
			return -ENOENT;
	}
	return pfs_ftable_set_etag(bl->ft, node, v);
}

/* ---- one fill ------------------------------------------------------------ */

enum mode { READ, PREFETCH, WARM };

struct fill {
	struct pfs_blocks *bl;
	const struct pfs_blocks_obj *o;
	uint64_t blk;
	enum mode mode;
	uint64_t deadline_ns;       /* pfs_origin_req's; 0: none (WARM) */
	/* Set by fill_block: */
	int called;                 /* it ran: a RAM miss */
	int from_origin;            /* the bytes came from the origin */
	int in_ssd;                 /* found in, or queued for, the SSD tier */
	int ssd_due, shared_due;    /* puts finish() must do */
	int shared_unlock;          /* with shared_due: release the lock after */
	int locked;                 /* holds the shared tier's lock of key */
	char v[PFS_ETAG_MAX];       /* the bytes' validator */
	char *name;                 /* the object's name in the tiers: the
				     * caller's NAME_MAX_BYTES, set by the fill
				     * (not zeroed for a hit: it is large) */
	struct pfs_shared_key key;
	struct pfs_origin_spill spill; /* READ, PREFETCH: the rest of a
				     * whole-object answer */
};

static uint64_t fail_key(const struct pfs_blocks_obj *o)
{
	return o->make ? o->ino : o->node; /* a view's inode is above 2^48 */
}

size_t pfs_blocks_len(const struct pfs_blocks_obj *o, uint64_t blk)
{
	uint64_t off = blk * o->block;
	return (size_t)(o->size - off < o->block ? o->size - off : o->block);
}

static int name_of(struct pfs_blocks *bl, const struct pfs_blocks_obj *o, char *out, size_t cap)
{
	return o->name ? o->name(o->ctx, out, cap) : pfs_ftable_path(bl->ft, o->node, out, cap);
}

static int from_ssd(struct fill *f, void *buf, size_t len)
{
	struct pfs_blocks *bl = f->bl;
	char pinned[PFS_ETAG_MAX], v[PFS_SSD_ETAG_MAX];
	pfs_ftable_etag(bl->ft, f->o->node, pinned);
	if (pfs_ssd_get(bl->ssd, f->name, f->blk, ssd_fp(bl, f->o->fp, pinned), buf, len, v) < 0)
		return -ENOENT;
	return pin(bl, f->o->node, v);
}

/* The shared tier's copy; `wait`: for another's fetch (pfs_shared_wait).
 * 0, -ENOENT (a miss: worth a lock), -EIO (no answer: no lock), -ESTALE
 * (another version pinned), -EOPNOTSUPP (an object without a validator:
 * never shared). */
static int from_shared(struct fill *f, void *buf, size_t len, int wait)
{
	struct pfs_blocks *bl = f->bl;
	char pinned[PFS_ETAG_MAX], v[PFS_ETAG_MAX];
	pfs_ftable_etag(bl->ft, f->o->node, pinned);
	if (!strcmp(pinned, PFS_VALIDATOR_NONE))
		return -EOPNOTSUPP;
	int rc = wait ? pfs_shared_wait(bl->shared, &f->key, pinned, buf, len, v) :
			pfs_shared_get(bl->shared, &f->key, pinned, buf, len, v);
	if (rc < 0)
		return rc;
	if (!pfs_validator_valid(v) || !strcmp(v, PFS_VALIDATOR_NONE))
		return -ENOENT;
	rc = pin(bl, f->o->node, v);
	if (rc < 0)
		return rc; /* -ESTALE: another version is pinned; from the origin */
	snprintf(f->v, sizeof(f->v), "%s", v);
	return 0;
}

/* The origin's answer, under the pin: the first answer pins its version
 * (compare-and-set); an answer of another version is never served nor
 * cached. The origin asks once more itself when the validator differs
 * from one it was given; here, a fill that lost the race to pin (it
 * started before any pin) asks once more with the winner's validator
 * (If-Match), then fails. */
static int from_origin(struct fill *f, void *buf, size_t len)
{
	struct pfs_blocks *bl = f->bl;
	int rc = -EIO;
	for (int attempt = 0; attempt < 2; attempt++) {
		pfs_ftable_etag(bl->ft, f->o->node, f->v);
		struct pfs_origin_req req = {.spill = f->mode == WARM ? NULL : &f->spill,
					     .deadline_ns = f->deadline_ns};
		rc = pfs_origin_read_req(bl->origin, f->name, f->o->size, f->blk * f->o->block,
					 len, buf, f->v, &req);
		if (rc < 0)
			break;
		rc = pfs_ftable_set_etag(bl->ft, f->o->node, f->v);
		if (rc != -ESTALE)
			break;
		pfs_origin_spill_free(&f->spill);
		pfs_debug("'%s' at %llu: another version won the pin; asking again", f->name,
			  (unsigned long long)(f->blk * f->o->block));
	}
	if (rc == 0 && !strcmp(f->v, PFS_VALIDATOR_NONE) &&
	    !__atomic_exchange_n(&bl->warned_no_validator, 1, __ATOMIC_RELAXED))
		pfs_warn("the origin gives neither ETag nor Last-Modified (first seen on '%s'): "
			 "only sizes can show that an object changed", f->name);
	return rc;
}

/* The origin refused the version pinned for the file (it has another, or
 * another length than listed): the file's SSD entries are of an obsolete
 * version. A listing that cannot show a change (the same size, and a time
 * of the same minute in an HTML index) leaves their fingerprint matching,
 * so the next mount would pin the old version from them again and fail on
 * every block they lack: they are dropped. This mount keeps its pin (it
 * may have served old bytes) and its reads of the file fail. */
static void forget_version(struct fill *f)
{
	struct pfs_blocks *bl = f->bl;
	if (!bl->ssd)
		return;
	uint64_t n = (f->o->size + f->o->block - 1) / f->o->block;
	for (uint64_t b = 0; b < n && b < PFS_BLOCKS_DROP_MAX; b++)
		pfs_ssd_drop(bl->ssd, f->name, b);
	char key[NAME_MAX_BYTES + 16];
	snprintf(key, sizeof(key), "forget:%s", f->name);
	pfs_log_limited(PFS_LOG_WARN, key, "'%s': the origin no longer has the version this "
			"mount pinned: the file's blocks in the SSD tier are dropped", f->name);
}

/* A made object: of the version its maker read its source under. */
static int from_maker(struct fill *f, void *buf, size_t len)
{
	int rc = f->o->make(f->o->ctx, buf, len);
	if (rc < 0)
		return rc;
	pfs_ftable_etag(f->bl->ft, f->o->node, f->v);
	return 0;
}

/* A RAM miss (a pfs_bcache_fill_fn; p: struct fill): SSD, failure memory,
 * shared, origin or maker; the puts due, and a lock of the shared tier
 * taken here, are left to finish(). */
static int fill_block(void *p, void *buf, size_t len)
{
	struct fill *f = p;
	struct pfs_blocks *bl = f->bl;
	const struct pfs_blocks_obj *o = f->o;
	f->called = 1;
	int rc = name_of(bl, o, f->name, NAME_MAX_BYTES);
	if (rc < 0)
		return rc;
	if (bl->ssd && from_ssd(f, buf, len) == 0) {
		f->in_ssd = 1;
		return 0;
	}
	/* An object that just failed fails again at once (see failmem.h). */
	rc = pfs_failmem_take(bl->failed, fail_key(o), pfs_clock_ns());
	if (rc < 0)
		return rc;
	/* A value is at most a block (and its header), mc.h. */
	if (bl->shared && len <= bl->block_size) {
		pfs_shared_key(bl->shared, f->name, o->size, o->fp, f->blk, &f->key);
		rc = from_shared(f, buf, len, 0);
		if (rc == -ENOENT) {
			/* Several nodes (or threads) missing it at once: one
			 * fetches, the others wait for its store. */
			int lock = pfs_shared_lock(bl->shared, &f->key);
			f->locked = lock == 1;
			if (lock == 0)
				rc = from_shared(f, buf, len, 1);
		}
		if (rc == 0) {
			f->ssd_due = bl->ssd != NULL;
			return 0;
		}
	}
	rc = o->make ? from_maker(f, buf, len) : from_origin(f, buf, len);
	if (rc < 0)
		pfs_failmem_note(bl->failed, fail_key(o), rc, pfs_clock_ns());
	else
		pfs_failmem_clear(bl->failed, fail_key(o));
	if (rc == 0) {
		f->from_origin = !o->make;
		f->ssd_due = bl->ssd && f->v[0];
		/* Never shared: an object without a validator. */
		f->shared_due = bl->shared && len <= bl->block_size && f->v[0] &&
				strcmp(f->v, PFS_VALIDATOR_NONE);
		f->shared_unlock = f->shared_due && f->locked;
	} else if (rc == -ESTALE && !o->make) {
		forget_version(f);
	} else if (!o->make) {
		char key[NAME_MAX_BYTES + 16];
		snprintf(key, sizeof(key), "readfail:%s", f->name);
		pfs_log_limited(PFS_LOG_WARN, key, "read of '%s' at %llu failed: %s", f->name,
				(unsigned long long)(f->blk * o->block), strerror(-rc));
	}
	return rc;
}

static int copy_spill(void *p, void *buf, size_t len)
{
	memcpy(buf, p, len);
	return 0;
}

/* The rest of a whole-object answer, block by block (a partial block that
 * is not the object's last is left out): into the RAM tier as a prefetch
 * (kept only while it has room), and queued for the SSD tier (a copy,
 * refused when its queue is full). Same version as the block just filled:
 * the answer's validator and length were checked. */
static void keep_spill(struct fill *f)
{
	struct pfs_blocks *bl = f->bl;
	const struct pfs_blocks_obj *o = f->o;
	const struct pfs_origin_spill *sp = &f->spill;
	uint64_t bs = o->block, end = sp->off + sp->len;
	for (uint64_t off = sp->off; off < end && off < o->size; off += bs) {
		size_t blen = pfs_blocks_len(o, off / bs);
		if (off + blen > end)
			break;
		char *data = sp->data + (off - sp->off);
		uint64_t blk = off / bs;
		struct pfs_block *b;
		if (!pfs_bcache_contains(bl->cache, o->ino, blk) &&
		    pfs_bcache_get(bl->cache, o->ino, blk, blen, o->size, PFS_BCACHE_PREFETCH,
				   copy_spill, data, &b) == 0) {
			pfs_origin_count(range_ignored_kept, 1);
			pfs_bcache_put_read(bl->cache, b, 0); /* kept, not read */
		}
		if (bl->ssd)
			pfs_ssd_put(bl->ssd, f->name, blk, ssd_fp(bl, o->fp, f->v), f->v, data,
				    blen);
	}
}

/* A warm-up's put into the SSD tier: only while the tier has room under
 * its budget (it never evicts), waiting for room in the write queue
 * once. 0 (queued), -ENOSPC (no room), -EAGAIN (disabled, queue full). */
static int ssd_put_warm(struct pfs_blocks *bl, const char *name, uint64_t blk, uint64_t fp,
			const char *v, const void *buf, size_t len)
{
	fp = ssd_fp(bl, fp, v);
	int rc = pfs_ssd_put_noevict(bl->ssd, name, blk, fp, v, buf, len);
	if (rc == -EAGAIN) {
		pfs_ssd_flush(bl->ssd);
		rc = pfs_ssd_put_noevict(bl->ssd, name, blk, fp, v, buf, len);
	}
	return rc;
}

/* After the fill's get (rc) or its direct call: the puts it noted, with
 * the block b held (READ, PREFETCH: no copy) or its bytes `data` (WARM: a
 * copy); then the rest of a whole-object answer. Every path ends here. */
static void finish(struct fill *f, int rc, struct pfs_block *b, const void *data, size_t len)
{
	struct pfs_blocks *bl = f->bl;
	/* The shared tier's lock: released by the put, else here. */
	if (f->locked && (rc < 0 || !f->shared_unlock))
		pfs_shared_unlock(bl->shared, &f->key);
	if (rc < 0)
		goto out;
	if (b) {
		data = pfs_block_data(b);
		len = pfs_block_len(b);
	}
	if (f->shared_due) {
		if (f->mode != WARM) {
			pfs_bcache_hold(b);
			pfs_shared_put(bl->shared, &f->key, f->v, data, len, f->shared_unlock,
				       pfs_bcache_release, b);
		} else {
			pfs_shared_put(bl->shared, &f->key, f->v, data, len, f->shared_unlock,
				       NULL, NULL);
		}
	}
	if (f->ssd_due && f->mode == WARM) {
		f->in_ssd = ssd_put_warm(bl, f->name, f->blk, f->o->fp, f->v, data, len) == 0;
	} else if (f->ssd_due) {
		pfs_bcache_hold(b);
		f->in_ssd = pfs_ssd_put_ref(bl->ssd, f->name, f->blk, ssd_fp(bl, f->o->fp, f->v),
					    f->v, data, len, pfs_bcache_release, b) == 0;
	}
	if (f->spill.len)
		keep_spill(f);
out:
	f->ssd_due = f->shared_due = f->locked = 0;
	pfs_origin_spill_free(&f->spill);
}

int pfs_blocks_get(struct pfs_blocks *bl, const struct pfs_blocks_obj *o, uint64_t blk,
		   enum pfs_blocks_mode mode, uint64_t deadline_ns, struct pfs_block **out,
		   int *missed)
{
	char name[NAME_MAX_BYTES];
	struct fill f = {.bl = bl, .o = o, .blk = blk, .name = name,
			 .mode = mode == PFS_BLOCKS_PREFETCH ? PREFETCH : READ,
			 .deadline_ns = deadline_ns};
	int rc = pfs_bcache_get(bl->cache, o->ino, blk, pfs_blocks_len(o, blk), o->size,
				mode == PFS_BLOCKS_PREFETCH ? PFS_BCACHE_PREFETCH : 0, fill_block,
				&f, out);
	finish(&f, rc, rc == 0 ? *out : NULL, NULL, 0);
	if (missed)
		*missed = f.called;
	return rc;
}

/* ---- warm-up ------------------------------------------------------------- */

/* Block blk is in the SSD tier, for this listing entry and a version this
 * mount may serve (the pinned one, or any when none is). */
static int in_ssd(struct pfs_blocks *bl, const struct pfs_blocks_obj *o, const char *name,
		  uint64_t blk, size_t len)
{
	char tag[PFS_SSD_ETAG_MAX], pinned[PFS_ETAG_MAX];
	if (!bl->ssd || !pfs_ssd_has(bl->ssd, name, blk, o->fp, len, tag) || !tag[0])
		return 0;
	pfs_ftable_etag(bl->ft, o->node, pinned);
	return !pinned[0] || !strcmp(pinned, tag);
}

int pfs_blocks_where(struct pfs_blocks *bl, const struct pfs_blocks_obj *o, uint64_t blk,
		     struct pfs_blocks_place *p)
{
	char name[NAME_MAX_BYTES];
	int rc = name_of(bl, o, name, sizeof(name));
	if (rc < 0)
		return rc;
	p->ram = pfs_bcache_contains(bl->cache, o->ino, blk);
	p->ssd = in_ssd(bl, o, name, blk, pfs_blocks_len(o, blk));
	p->fetched = 0;
	return 0;
}

/* Copies a RAM-resident block into the SSD tier (it was resident before
 * the SSD tier took it, or the tier's queue was full then). 1 when it is
 * there now. */
static int ram_to_ssd(struct pfs_blocks *bl, const struct pfs_blocks_obj *o, uint64_t blk,
		      const char *name, size_t len)
{
	char pinned[PFS_ETAG_MAX];
	struct pfs_block *b;
	pfs_ftable_etag(bl->ft, o->node, pinned);
	if (!pinned[0])
		return 0;
	char fname[NAME_MAX_BYTES];
	struct fill f = {.bl = bl, .o = o, .blk = blk, .name = fname, .mode = WARM};
	int rc = pfs_bcache_get(bl->cache, o->ino, blk, len, o->size, PFS_BCACHE_WARM,
				fill_block, &f, &b);
	finish(&f, rc, rc == 0 ? b : NULL, NULL, 0);
	if (rc < 0)
		return 0;
	int ok = f.in_ssd ||
		 ssd_put_warm(bl, name, blk, o->fp, pinned, pfs_block_data(b), len) == 0;
	pfs_bcache_put(bl->cache, b);
	return ok;
}

/* The room a block takes in the SSD tier at most (its raw length in 4 KiB
 * units, as the tier counts a queued block). */
static uint64_t ssd_alloc(size_t len)
{
	return ((uint64_t)len + 4095) / 4096 * 4096;
}

int pfs_blocks_warm(struct pfs_blocks *bl, const struct pfs_blocks_obj *o, uint64_t blk,
		    struct pfs_blocks_place *p)
{
	size_t len = pfs_blocks_len(o, blk);
	char name[NAME_MAX_BYTES];
	struct fill f = {.bl = bl, .o = o, .blk = blk, .name = name, .mode = WARM};
	int rc = name_of(bl, o, name, sizeof(name));
	if (rc < 0)
		return rc;
	p->ram = pfs_bcache_contains(bl->cache, o->ino, blk);
	p->ssd = in_ssd(bl, o, f.name, blk, len);
	p->fetched = 0;
	if (!p->ram && pfs_bcache_has_room(bl->cache, len)) {
		struct pfs_block *b;
		rc = pfs_bcache_get(bl->cache, o->ino, blk, len, o->size, PFS_BCACHE_WARM,
				    fill_block, &f, &b);
		finish(&f, rc, rc == 0 ? b : NULL, NULL, 0);
		if (rc == 0)
			pfs_bcache_put(bl->cache, b);
		p->ram = pfs_bcache_contains(bl->cache, o->ino, blk);
	} else if (!p->ram && !p->ssd && bl->ssd && pfs_ssd_room(bl->ssd) >= ssd_alloc(len)) {
		void *buf = pfs_bufpool_alloc(len);
		if (!buf)
			return -ENOMEM;
		rc = fill_block(&f, buf, len);
		finish(&f, rc, NULL, buf, len);
		pfs_bufpool_free(buf, len);
	}
	if (rc < 0)
		return rc;
	p->ssd = p->ssd || f.in_ssd;
	if (p->ram && !p->ssd && bl->ssd)
		p->ssd = ram_to_ssd(bl, o, blk, f.name, len);
	p->fetched = f.from_origin;
	return 0;
}
