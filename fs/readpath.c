/* readpath.c - the read path every kind of file shares (fs_int.h): a RAM
 * miss filled from the SSD tier or the origin under the file's pinned
 * version, reads sliced out of cache blocks, stall timing, epoch notes, and
 * the counters they keep (pfs_fs_collect).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs.h"
#include "fs_int.h"
#include "../prefetch/prefetch.h"
#include "../cache/epoch.h"
#include "../cache/failmem.h"
#include "../cache/ssd.h"
#include "../origin/origin.h"
#include "../origin/validator.h"
#include "../util/atomic.h"
#include "../util/clock.h"
#include "../util/log.h"
#include "../util/stats.h"

/* A read at offset 0 starts a sample: epoch tracking. When it opens a new
 * epoch, that epoch's counters start from here. */
void pfs_fsi_note_sample(struct pfs_fs *fs, uint32_t node)
{
	uint64_t e = pfs_epoch_note_read(fs->epoch, node);
	uint64_t seen = pfs_load(&fs->epoch_seen);
	if (e != seen && __atomic_compare_exchange_n(&fs->epoch_seen, &seen, e, 0,
						     __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
		pfs_store(&fs->base_hits, pfs_stat_get(ram_hits));
		pfs_store(&fs->base_misses, pfs_stat_get(ram_misses));
		pfs_store(&fs->base_stall_ns, pfs_load(&fs->stall_ns));
		pfs_bcache_set_epoch(fs->cache, e);
		pfs_debug("epoch %llu begins", (unsigned long long)e);
	}
}

void pfs_fs_collect(void *ctx, struct pfs_stat_list *l)
{
	struct pfs_fs *fs = ctx;
	pfs_stat_list_add(l, "epoch.demand_hits",
			  (double)(pfs_stat_get(ram_hits) - pfs_load(&fs->base_hits)), 1);
	pfs_stat_list_add(l, "epoch.demand_misses",
			  (double)(pfs_stat_get(ram_misses) - pfs_load(&fs->base_misses)), 1);
	pfs_stat_list_add(l, "epoch.stall_seconds",
			  (double)(pfs_load(&fs->stall_ns) - pfs_load(&fs->base_stall_ns)) / 1e9,
			  1);
	pfs_stat_list_add(l, "stall_seconds", (double)pfs_load(&fs->stall_ns) / 1e9, 0);
	pfs_stat_list_add(l, "failed_files", (double)pfs_failmem_count(fs->failed), 0);
	pfs_stat_list_add(l, "log_lines_dropped", (double)pfs_log_limit_dropped(), 0);
}

/* ---- fills ------------------------------------------------------------- */

uint64_t pfs_fsi_ssd_fp(const struct pfs_fs *fs, uint64_t fp, const char *v)
{
	return strcmp(v, PFS_VALIDATOR_NONE) ? fp : fp ^ fs->mount_nonce;
}

/* The SSD tier's copy is usable only if it is of the version this mount
 * has pinned for the file; with none pinned yet it pins its own (after a
 * remount, the origin's first answer is then checked against it). An
 * entry with an empty validator (written by an older prestofs), or "-"
 * from another mount, is a miss. */
int pfs_fsi_ssd_get(struct pfs_fs *fs, uint32_t node, const char *path, uint64_t blk,
		    uint64_t fp, void *buf, size_t len)
{
	char pinned[PFS_ETAG_MAX], etag[PFS_ETAG_MAX];
	pfs_ftable_etag(fs->ft, node, pinned);
	if (pfs_ssd_get(fs->ssd, path, blk, pfs_fsi_ssd_fp(fs, fp, pinned), buf, len, etag) < 0 ||
	    !etag[0] || (!strcmp(etag, PFS_VALIDATOR_NONE) && strcmp(pinned, PFS_VALIDATOR_NONE)))
		return -ENOENT;
	return pfs_ftable_set_etag(fs->ft, node, etag);
}

static int fill_from_ssd(struct pfs_fsi_fill *c, const char *path, void *buf, size_t len)
{
	return pfs_fsi_ssd_get(c->fs, c->node, path, c->off / c->fs->block_size, c->fp, buf, len);
}

/* Fetches a block from the origin and checks it against the file's pinned
 * validator. The first answer to come back pins it (compare-and-set). An
 * answer of another version is never served nor cached: the origin asks
 * once more itself when the validator differs from one it was given;
 * here, a fill that lost the race to pin (it started before any pin) asks
 * once more with the winner's validator (If-Match), then fails. */
static int fill_from_origin(struct pfs_fsi_fill *c, const char *path, void *buf, size_t len,
			    char *v)
{
	int rc = -EIO;
	for (int attempt = 0; attempt < 2; attempt++) {
		pfs_ftable_etag(c->fs->ft, c->node, v);
		/* With defer_ssd the caller's pfs_fsi_fill_done keeps the rest of
		 * a whole-object answer. */
		struct pfs_origin_req req = {.spill = c->defer_ssd ? &c->spill : NULL,
					     .deadline_ns = c->deadline_ns};
		rc = pfs_origin_read_req(c->fs->origin, path, c->size, c->off, len, buf, v, &req);
		if (rc < 0)
			break;
		rc = pfs_ftable_set_etag(c->fs->ft, c->node, v);
		if (rc != -ESTALE)
			break;
		pfs_debug("'%s' at %llu: another version won the pin; asking again", path,
			  (unsigned long long)c->off);
	}
	if (rc == 0 && !strcmp(v, PFS_VALIDATOR_NONE) &&
	    !__atomic_exchange_n(&c->fs->warned_no_validator, 1, __ATOMIC_RELAXED))
		pfs_warn("the origin gives neither ETag nor Last-Modified (first seen on '%s'): "
			 "only sizes can show that an object changed", path);
	return rc;
}

/* The shared tier's copy of a block, usable under the same rule as the
 * SSD tier's: it must be of the version pinned for the file, or it pins
 * its own. `wait`: wait for another's fetch (pfs_shared_wait). 0, -ENOENT
 * (a miss: worth a lock), -EIO (the servers did not answer: no lock),
 * -ESTALE (another version is pinned), -EOPNOTSUPP (an object without a
 * validator: never shared). */
static int fill_from_shared(struct pfs_fsi_fill *c, void *buf, size_t len, int wait)
{
	char pinned[PFS_ETAG_MAX], v[PFS_ETAG_MAX];
	pfs_ftable_etag(c->fs->ft, c->node, pinned);
	if (!strcmp(pinned, PFS_VALIDATOR_NONE))
		return -EOPNOTSUPP;
	int rc = wait ? pfs_shared_wait(c->fs->shared, &c->shared_key, pinned, buf, len, v) :
			pfs_shared_get(c->fs->shared, &c->shared_key, pinned, buf, len, v);
	if (rc < 0)
		return rc;
	if (!pfs_validator_valid(v) || !strcmp(v, PFS_VALIDATOR_NONE))
		return -ENOENT;
	rc = pfs_ftable_set_etag(c->fs->ft, c->node, v);
	if (rc < 0)
		return rc; /* -ESTALE: another version is pinned; from the origin */
	snprintf(c->v, sizeof(c->v), "%s", v);
	return 0;
}

/* A block that came from the origin or the shared tier goes to the SSD
 * tier (at once, or left to pfs_fsi_ssd_put_block with defer_ssd). */
static void to_ssd(struct pfs_fsi_fill *c, const char *path, uint64_t blk, const char *v,
		   const void *buf, size_t len)
{
	if (!c->fs->ssd)
		return;
	if (c->warm) {
		c->in_ssd = pfs_fsi_ssd_put_warm(c->fs, path, blk, c->fp, v, buf, len) == 0;
	} else if (c->defer_ssd) {
		c->ssd_pending = 1;
		snprintf(c->v, sizeof(c->v), "%s", v);
	} else {
		c->in_ssd = pfs_ssd_put(c->fs->ssd, path, blk, pfs_fsi_ssd_fp(c->fs, c->fp, v), v,
					buf, len) == 0;
	}
}

/* A RAM miss: the SSD tier, else the shared tier, else the origin (then
 * written to the SSD tier at once, so an unmount or a crash loses nothing
 * that was fetched, and to the shared tier off the critical path). */
int pfs_fsi_fill_block(void *p, void *buf, size_t len)
{
	struct pfs_fsi_fill *c = p;
	char path[4096];
	char v[PFS_ETAG_MAX];
	int lock = -1;
	c->called = 1;
	int rc = pfs_ftable_path(c->fs->ft, c->node, path, sizeof(path));
	if (rc < 0)
		return rc;
	uint64_t blk = c->off / c->fs->block_size;
	if (c->fs->ssd && fill_from_ssd(c, path, buf, len) == 0) {
		c->in_ssd = 1;
		return 0;
	}
	/* A file that just failed fails again at once (see failmem.h). */
	rc = pfs_failmem_take(c->fs->failed, c->node, pfs_clock_ns());
	if (rc < 0)
		return rc;
	if (c->fs->shared) {
		pfs_shared_key(c->fs->shared, path, c->size, c->fp, blk, &c->shared_key);
		rc = fill_from_shared(c, buf, len, 0);
		if (rc == -ENOENT) {
			/* Several nodes (or threads) missing it at once: one
			 * fetches, the others wait for its store. */
			lock = pfs_shared_lock(c->fs->shared, &c->shared_key);
			if (lock == 0)
				rc = fill_from_shared(c, buf, len, 1);
		}
		if (rc == 0) {
			snprintf(v, sizeof(v), "%s", c->v);
			to_ssd(c, path, blk, v, buf, len);
			return 0;
		}
	}
	rc = fill_from_origin(c, path, buf, len, v);
	if (rc < 0)
		pfs_failmem_note(c->fs->failed, c->node, rc, pfs_clock_ns());
	else
		pfs_failmem_clear(c->fs->failed, c->node);
	if (rc == 0) {
		c->from_origin = 1;
		to_ssd(c, path, blk, v, buf, len);
		if (c->fs->shared && strcmp(v, PFS_VALIDATOR_NONE)) {
			if (c->defer_ssd) {
				c->shared_pending = 1;
				c->shared_unlock = lock == 1;
				snprintf(c->v, sizeof(c->v), "%s", v);
			} else {
				pfs_shared_put(c->fs->shared, &c->shared_key, v, buf, len,
					       lock == 1, NULL, NULL);
			}
			lock = -1;
		}
	} else if (rc != -ESTALE) {
		char key[4200];
		snprintf(key, sizeof(key), "readfail:%s", path);
		pfs_log_limited(PFS_LOG_WARN, key, "read of '%s' at %llu failed: %s", path,
				(unsigned long long)c->off, strerror(-rc));
	}
	if (lock == 1)
		pfs_shared_unlock(c->fs->shared, &c->shared_key);
	return rc;
}

struct spill_fill {
	const char *data;
};

static int copy_spill(void *p, void *buf, size_t len)
{
	memcpy(buf, ((struct spill_fill *)p)->data, len);
	return 0;
}

/* The rest of a whole-object answer, block by block (a partial block that
 * is not the file's last is left out): into the RAM tier as a prefetch
 * (kept only while it has room), and queued for the SSD tier (a copy,
 * refused when its queue is full). Same version as the block just filled:
 * the answer's validator and length were checked, and c->v holds it. */
static void keep_spill(struct pfs_fs *fs, struct pfs_fsi_fill *c)
{
	const struct pfs_origin_spill *sp = &c->spill;
	uint64_t bs = fs->block_size, end = sp->off + sp->len;
	char path[4096];
	int have_path = pfs_ftable_path(fs->ft, c->node, path, sizeof(path)) == 0;
	for (uint64_t off = sp->off; off < end && off < c->size; off += bs) {
		size_t blen = (size_t)(c->size - off < bs ? c->size - off : bs);
		if (off + blen > end)
			break;
		const char *data = sp->data + (off - sp->off);
		uint64_t blk = off / bs;
		struct spill_fill f = {data};
		struct pfs_block *b;
		if (!pfs_bcache_contains(fs->cache, (uint64_t)c->node + 1, blk) &&
		    pfs_bcache_get(fs->cache, (uint64_t)c->node + 1, blk, blen, c->size,
				   PFS_BCACHE_PREFETCH, copy_spill, &f, &b) == 0) {
			pfs_stat_add(origin_range_ignored_kept, 1);
			pfs_bcache_put_read(fs->cache, b, 0); /* kept, not read */
		}
		if (fs->ssd && have_path)
			pfs_ssd_put(fs->ssd, path, blk, pfs_fsi_ssd_fp(fs, c->fp, c->v), c->v, data,
				    blen);
	}
}

static void ssd_put_block(struct pfs_fs *fs, struct pfs_fsi_fill *c, struct pfs_block *b)
{
	char path[4096];
	if (c->shared_pending) {
		c->shared_pending = 0;
		pfs_bcache_hold(b);
		pfs_shared_put(fs->shared, &c->shared_key, c->v, pfs_block_data(b),
			       pfs_block_len(b), c->shared_unlock, pfs_bcache_release, b);
	}
	if (!c->ssd_pending)
		return;
	c->ssd_pending = 0;
	if (pfs_ftable_path(fs->ft, c->node, path, sizeof(path)) < 0)
		return;
	pfs_bcache_hold(b);
	c->in_ssd = pfs_ssd_put_ref(fs->ssd, path, c->off / fs->block_size,
				    pfs_fsi_ssd_fp(fs, c->fp, c->v), c->v,
				    pfs_block_data(b), pfs_block_len(b), pfs_bcache_release,
				    b) == 0;
}

void pfs_fsi_fill_done(struct pfs_fs *fs, struct pfs_fsi_fill *c, int rc, struct pfs_block *b)
{
	if (rc == 0)
		ssd_put_block(fs, c, b);
	if (rc == 0 && c->spill.len)
		keep_spill(fs, c);
	pfs_origin_spill_free(&c->spill);
}

int pfs_fsi_ssd_put_warm(struct pfs_fs *fs, const char *path, uint64_t blk, uint64_t fp,
			 const char *v, const void *buf, size_t len)
{
	fp = pfs_fsi_ssd_fp(fs, fp, v);
	int rc = pfs_ssd_put_noevict(fs->ssd, path, blk, fp, v, buf, len);
	if (rc == -EAGAIN) { /* the write queue is full: wait for it once */
		pfs_ssd_flush(fs->ssd);
		rc = pfs_ssd_put_noevict(fs->ssd, path, blk, fp, v, buf, len);
	}
	return rc;
}

/* A reader's deadline: one origin read's bound from now, for all the
 * blocks it waits for (0: the origin has no timeouts). */
static uint64_t reader_deadline(const struct pfs_fs *fs, uint64_t now)
{
	uint64_t bound = pfs_origin_read_bound_ns(fs->origin);
	return bound ? now + bound : 0;
}

/* Takes block b of src from the cache (filling it on a miss, by
 * deadline_ns). *missed (may be NULL): 1 if this call filled a dataset
 * block. */
static int get_block(struct pfs_fs *fs, const struct pfs_fsi_source *src, uint64_t b,
		     unsigned flags, uint64_t deadline_ns, struct pfs_block **out, int *missed)
{
	uint64_t boff = b * src->block;
	size_t blen = (size_t)(src->size - boff < src->block ? src->size - boff : src->block);
	if (src->fill)
		return pfs_bcache_get(fs->cache, src->ino, b, blen, src->size, flags, src->fill,
				      src->fill_ctx, out);
	struct pfs_fsi_fill c = {.fs = fs, .node = src->node, .size = src->size, .off = boff,
				  .fp = src->fp, .deadline_ns = deadline_ns, .defer_ssd = 1};
	int rc = pfs_bcache_get(fs->cache, src->ino, b, blen, src->size, flags,
				pfs_fsi_fill_block, &c, out);
	pfs_fsi_fill_done(fs, &c, rc, rc == 0 ? *out : NULL);
	if (missed)
		*missed = c.called;
	return rc;
}

/* ---- reads ------------------------------------------------------------- */

int pfs_fsi_read_range(struct pfs_fs *fs, const struct pfs_fsi_source *src, uint64_t start,
		       uint64_t end, struct pfs_fsi_read *r)
{
	uint64_t first = start / src->block, last = (end - 1) / src->block;
	size_t n = (size_t)(last - first + 1);
	r->blocks = n <= 4 ? r->stackb : calloc(n, sizeof(*r->blocks));
	r->iov = n <= 4 ? r->stackv : calloc(n, sizeof(*r->iov));
	if (!r->blocks || !r->iov)
		return -ENOMEM;
	uint64_t t0 = pfs_clock_ns(), deadline = reader_deadline(fs, t0);
	int rc = 0;
	for (uint64_t b = first; b <= last; b++) {
		int missed = 0;
		rc = get_block(fs, src, b, 0, deadline, &r->blocks[r->nblocks], &missed);
		if (rc < 0)
			break;
		if (missed)
			r->demand.misses++;
		else
			r->demand.hits++;
		uint64_t boff = b * src->block;
		uint64_t blen = src->size - boff < src->block ? src->size - boff : src->block;
		uint64_t lo = start > boff ? start - boff : 0;
		uint64_t hi = end < boff + blen ? end - boff : blen;
		r->iov[r->niov].iov_base = (char *)pfs_block_data(r->blocks[r->nblocks]) + lo;
		r->iov[r->niov].iov_len = (size_t)(hi - lo);
		r->nblocks++;
		r->niov++;
	}
	uint64_t waited = pfs_clock_ns() - t0;
	if (waited > PFS_FSI_STALL_NS) {
		pfs_add(&fs->stall_ns, waited);
		r->demand.stall_ns = waited;
	}
	return rc;
}

void pfs_fsi_read_done(struct pfs_fs *fs, struct pfs_fsi_read *r, int rc)
{
	if (rc == 0 && r->on_read && fs->prefetch)
		pfs_prefetch_on_read(fs->prefetch, r->node, r->file_size, r->off, (size_t)r->len,
				     &r->demand);
	/* One iov per block: how much of it this read took. */
	for (size_t i = 0; i < r->nblocks; i++)
		pfs_bcache_put_read(fs->cache, r->blocks[i],
				    i < (size_t)r->niov ? r->iov[i].iov_len : 0);
	if (r->blocks != r->stackb)
		free(r->blocks);
	if (r->iov != r->stackv)
		free(r->iov);
	free(r->buf);
}

int pfs_fsi_read_head(struct pfs_fs *fs, uint32_t node, const struct pfs_fnode *info,
		      unsigned flags, void *buf, size_t len)
{
	if (len > info->size)
		return -EINVAL;
	struct pfs_fsi_source src = {.ino = (uint64_t)node + 1, .size = info->size,
				     .block = fs->block_size, .node = node, .fp = info->fp};
	uint64_t deadline = reader_deadline(fs, pfs_clock_ns());
	for (uint64_t b = 0; b * src.block < len; b++) {
		struct pfs_block *blk;
		int rc = get_block(fs, &src, b, flags, deadline, &blk, NULL);
		if (rc < 0)
			return rc;
		uint64_t boff = b * src.block;
		size_t n = (size_t)(len - boff < src.block ? len - boff : src.block);
		memcpy((char *)buf + boff, pfs_block_data(blk), n);
		pfs_bcache_put_read(fs->cache, blk, n);
	}
	return 0;
}
