/* fs_views.c - the views tree MOUNT/.prestofs/views/SPEC/REL/PATH in the
 * FUSE layer (fs_int.h); the transforms are transform/, the spec table
 * and the worker pool views.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fuse_lowlevel.h>

#include "fs_int.h"
#include "views.h"
#include "../cache/bcache.h"
#include "../cache/ssd.h"
#include "../prefetch/prefetch.h"
#include "../origin/origin.h"
#include "../util/log.h"
#include "../util/clock.h"

/* ---- views: MOUNT/.prestofs/views/SPEC/REL/PATH ------------------------
 * A view inode is VIEW_BASE | spec << 32 | node: the same namespace as the
 * dataset, per interned spec. A file that is not a JPEG passes through
 * (its reads share the dataset file's cache blocks); a JPEG's output is
 * one cache block keyed by its view inode, and is kept in the SSD tier
 * under ".views/SPEC/REL/PATH" with the source's fingerprint. */
#define VIEW_BASE (1ull << 48)

int  pfs_fsi_is_view(fuse_ino_t ino)
{
	return ino >= VIEW_BASE;
}

fuse_ino_t  pfs_fsi_view_ino(uint32_t spec, uint32_t node)
{
	return VIEW_BASE | (uint64_t)spec << 32 | node;
}

void  pfs_fsi_view_split(fuse_ino_t ino, uint32_t *spec, uint32_t *node)
{
	*spec = (uint32_t)((ino - VIEW_BASE) >> 32);
	*node = (uint32_t)ino;
}

/* The whole source file, through the cache (and so the SSD tier). */
static int read_source(struct pfs_fs *fs, uint32_t node, const struct pfs_fnode *info,
		       unsigned flags, char **out)
{
	if (info->size > PFS_VIEWS_MAX_OUTPUT)
		return -EFBIG;
	char *buf = malloc(info->size ? info->size : 1);
	if (!buf)
		return -ENOMEM;
	uint64_t bs = fs->block_size;
	for (uint64_t b = 0; b * bs < info->size; b++) {
		size_t blen = (size_t)(info->size - b * bs < bs ? info->size - b * bs : bs);
		struct fill_ctx c = {fs, node, info->size, b * bs, info->fp};
		struct pfs_block *blk;
		int rc = pfs_bcache_get(fs->cache, (uint64_t)node + 1, b, blen, info->size, flags,
					pfs_fsi_fill_block, &c, &blk);
		if (rc < 0) {
			free(buf);
			return rc;
		}
		memcpy(buf + b * bs, pfs_block_data(blk), blen);
		pfs_bcache_put(fs->cache, blk);
	}
	*out = buf;
	return 0;
}

/* Output size of a view file (a JPEG under spec), remembered per inode. */
static int view_size(struct pfs_fs *fs, fuse_ino_t ino, unsigned flags, uint64_t *size)
{
	uint32_t spec, node;
	struct pfs_fnode info;
	pfs_fsi_view_split(ino, &spec, &node);
	if (pfs_ftable_get(fs->ft, node, &info) < 0)
		return -ENOENT;
	char *src = NULL;
	int rc = pfs_views_size(fs->views, spec, ino, NULL, 0, size);
	if (rc == -EAGAIN) { /* not known yet: needs the source */
		rc = read_source(fs, node, &info, flags, &src);
		if (rc == 0)
			rc = pfs_views_size(fs->views, spec, ino, src, (size_t)info.size, size);
		if (rc == -EIO || rc == -E2BIG) { /* the first time only */
			char path[4096];
			pfs_ftable_path(fs->ft, node, path, sizeof(path));
			pfs_warn("view %s of '%s': %s", pfs_views_canon(fs->views, spec), path,
				 rc == -E2BIG ? "more pixels than view_max_pixels" :
				 "not a decodable JPEG");
		}
	}
	free(src);
	return rc;
}

int  pfs_fsi_view_entry(struct pfs_fs *fs, fuse_ino_t ino, struct fuse_entry_param *e)
{
	uint32_t spec, node;
	pfs_fsi_view_split(ino, &spec, &node);
	int rc = pfs_fsi_entry(fs, node, e);
	if (rc < 0)
		return rc;
	e->ino = ino;
	e->attr.st_ino = ino;
	if (!S_ISDIR(e->attr.st_mode) && pfs_views_transforms(pfs_ftable_name(fs->ft, node))) {
		uint64_t size;
		rc = view_size(fs, ino, 0, &size);
		if (rc < 0)
			return rc == -E2BIG || rc == -ENODATA ? -EIO : rc;
		e->attr.st_size = (off_t)size;
		e->attr.st_blocks = (blkcnt_t)((size + 511) / 512);
	}
	return 0;
}

struct view_fill_ctx {
	struct pfs_fs *fs;
	uint32_t spec, node;
	struct pfs_fnode info;
	unsigned flags; /* for the source's blocks */
};

static int view_fill(void *p, void *buf, size_t len)
{
	struct view_fill_ctx *c = p;
	struct pfs_fs *fs = c->fs;
	char path[4096 + 300], rel[4096], etag[PFS_ETAG_MAX];
	int rc = pfs_ftable_path(fs->ft, c->node, rel, sizeof(rel));
	if (rc < 0)
		return rc;
	if (snprintf(path, sizeof(path), ".views/%.256s/%s", pfs_views_canon(fs->views, c->spec),
		     rel) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	/* A stored output counts only if made from the source's pinned
	 * version (or it pins its own): a view never mixes with another
	 * version of its source. */
	if (fs->ssd && pfs_ssd_get(fs->ssd, path, 0, c->info.fp, buf, len, etag) == 0 &&
	    etag[0] && pfs_ftable_set_etag(fs->ft, c->node, etag) == 0)
		return 0;
	char *src;
	rc = read_source(fs, c->node, &c->info, c->flags, &src);
	if (rc < 0)
		return rc;
	void *out;
	size_t out_len;
	rc = pfs_views_apply(fs->views, c->spec, src, (size_t)c->info.size, &out, &out_len);
	free(src);
	if (rc < 0)
		return rc == -E2BIG ? -EIO : rc;
	if (out_len != len) {
		free(out);
		return -EIO; /* the size reported by stat must hold */
	}
	memcpy(buf, out, len);
	free(out);
	pfs_ftable_etag(fs->ft, c->node, etag);
	if (fs->ssd && etag[0])
		pfs_ssd_put(fs->ssd, path, 0, c->info.fp, etag, buf, len);
	return 0;
}

void  pfs_fsi_view_read(fuse_req_t req, struct pfs_fs *fs, fuse_ino_t ino, size_t size,
		      off_t off)
{
	struct view_fill_ctx c = {.fs = fs};
	pfs_fsi_view_split(ino, &c.spec, &c.node);
	if (pfs_ftable_get(fs->ft, c.node, &c.info) < 0) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	if (c.info.is_dir) {
		fuse_reply_err(req, EISDIR);
		return;
	}
	if (!pfs_views_transforms(pfs_ftable_name(fs->ft, c.node))) {
		pfs_fsi_read_dataset(req, fs, c.node, size, off);
		return;
	}
	uint64_t osize;
	int rc = view_size(fs, ino, 0, &osize);
	if (rc < 0) {
		fuse_reply_err(req, rc == -ENOENT || rc == -EACCES ? -rc : EIO);
		return;
	}
	if (off < 0 || (uint64_t)off >= osize || size == 0) {
		fuse_reply_buf(req, NULL, 0);
		return;
	}
	if (off == 0)
		pfs_fsi_note_sample(fs, c.node);
	struct pfs_block *b;
	uint64_t t0 = pfs_clock_ns();
	rc = pfs_bcache_get(fs->cache, ino, 0, (size_t)osize, osize, 0, view_fill, &c, &b);
	uint64_t waited = pfs_clock_ns() - t0;
	if (waited > STALL_THRESHOLD_NS)
		__atomic_add_fetch(&fs->stall_ns, waited, __ATOMIC_RELAXED);
	if (rc < 0) {
		fuse_reply_err(req, rc == -ENOENT || rc == -EACCES || rc == -ENOMEM ? -rc : EIO);
		return;
	}
	size_t n = osize - (uint64_t)off < size ? (size_t)(osize - (uint64_t)off) : size;
	fuse_reply_buf(req, (const char *)pfs_block_data(b) + off, n);
	pfs_bcache_put(fs->cache, b);
	if (off == 0 && fs->prefetch) /* the order position moves */
		pfs_prefetch_on_read(fs->prefetch, c.node, c.info.size, 0, n);
}

int pfs_fsi_view_prefetch(struct pfs_fs *fs, uint32_t spec, uint32_t node)
{
	fuse_ino_t ino = pfs_fsi_view_ino(spec, node);
	struct view_fill_ctx c = {.fs = fs, .spec = spec, .node = node,
				  .flags = PFS_BCACHE_PREFETCH};
	if (pfs_ftable_get(fs->ft, node, &c.info) < 0 || c.info.is_dir)
		return -ENOENT;
	uint64_t osize;
	int rc = view_size(fs, ino, PFS_BCACHE_PREFETCH, &osize);
	if (rc < 0)
		return rc;
	struct pfs_block *b;
	rc = pfs_bcache_get(fs->cache, ino, 0, (size_t)osize, osize, PFS_BCACHE_PREFETCH,
			    view_fill, &c, &b);
	if (rc == 0)
		pfs_bcache_put(fs->cache, b);
	return rc;
}

