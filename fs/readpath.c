/* readpath.c - the read path every kind of file shares (fs_int.h): reads
 * sliced out of blocks that blocks/ brings (from whichever tier has them),
 * stall timing (counted by the epoch tracker), epoch notes.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs.h"
#include "fs_int.h"
#include "../prefetch/prefetch.h"
#include "../cache/epoch.h"
#include "../origin/origin.h"
#include "../util/clock.h"
#include "../util/log.h"

/* A read at offset 0 starts a sample: epoch tracking. When it opens a new
 * epoch, that epoch's counters start from here (epoch.h), and the RAM tier
 * is told. */
void pfs_fsi_note_sample(struct pfs_fs *fs, uint32_t node)
{
	uint64_t e = pfs_epoch_note_read(fs->epoch, node);
	if (pfs_epoch_began(fs->epoch, e)) {
		pfs_bcache_set_epoch(fs->cache, e);
		pfs_debug("epoch %llu begins", (unsigned long long)e);
	}
}

/* A reader's deadline: one origin read's bound from now, for all the
 * blocks it waits for (0: the origin has no timeouts). */
static uint64_t reader_deadline(const struct pfs_fs *fs, uint64_t now)
{
	uint64_t bound = pfs_origin_read_bound_ns(fs->origin);
	return bound ? now + bound : 0;
}

/* ---- reads ------------------------------------------------------------- */

int pfs_fsi_read_range(struct pfs_fs *fs, const struct pfs_blocks_obj *src, uint64_t start,
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
		rc = pfs_blocks_get(fs->blocks, src, b, PFS_BLOCKS_READ, deadline,
				    &r->blocks[r->nblocks], &missed);
		if (rc < 0)
			break;
		if (missed)
			r->demand.misses++;
		else
			r->demand.hits++;
		uint64_t boff = b * src->block;
		uint64_t blen = pfs_blocks_len(src, b);
		uint64_t lo = start > boff ? start - boff : 0;
		uint64_t hi = end < boff + blen ? end - boff : blen;
		r->iov[r->niov].iov_base = (char *)pfs_block_data(r->blocks[r->nblocks]) + lo;
		r->iov[r->niov].iov_len = (size_t)(hi - lo);
		r->nblocks++;
		r->niov++;
	}
	uint64_t waited = pfs_clock_ns() - t0;
	if (waited > PFS_FSI_STALL_NS) {
		pfs_epoch_add_stall(fs->epoch, waited);
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
		      enum pfs_blocks_mode mode, void *buf, size_t len)
{
	if (len > info->size)
		return -EINVAL;
	struct pfs_blocks_obj src;
	pfs_blocks_file(fs->blocks, node, info, &src);
	uint64_t deadline = reader_deadline(fs, pfs_clock_ns());
	for (uint64_t b = 0; b * src.block < len; b++) {
		struct pfs_block *blk;
		int rc = pfs_blocks_get(fs->blocks, &src, b, mode, deadline, &blk, NULL);
		if (rc < 0)
			return rc;
		uint64_t boff = b * src.block;
		size_t n = (size_t)(len - boff < src.block ? len - boff : src.block);
		memcpy((char *)buf + boff, pfs_block_data(blk), n);
		pfs_bcache_put_read(fs->cache, blk, n);
	}
	return 0;
}
