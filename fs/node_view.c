/* node_view.c - view inodes (fs_int.h): the tree
 * MOUNT/.prestofs/views/SPEC/REL/PATH, its root directory
 * (PFS_CTL_INO_VIEWS) included. The transforms are transform/, the spec
 * table and the worker pool views.h.
 *
 * A view inode is VIEW_BASE | spec << 32 | node: the same namespace as the
 * dataset, per interned spec. A file that is not a JPEG passes through
 * (its reads share the dataset file's cache blocks); a JPEG's output is
 * one block keyed by its view inode, a made object of blocks/ (so it is
 * kept in the SSD and shared tiers under ".views/SPEC/REL/PATH" with the
 * source's pinned validator).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "fs_int.h"
#include "views.h"
#include "../catalog/listing.h"
#include "../transform/view.h"
#include "../util/log.h"

#define VIEW_BASE (1ull << 48)

int pfs_fsi_is_view(fuse_ino_t ino)
{
	return ino >= VIEW_BASE;
}

fuse_ino_t pfs_fsi_view_ino(uint32_t spec, uint32_t node)
{
	return VIEW_BASE | (uint64_t)spec << 32 | node;
}

static void view_split(fuse_ino_t ino, uint32_t *spec, uint32_t *node)
{
	*spec = (uint32_t)((ino - VIEW_BASE) >> 32);
	*node = (uint32_t)ino;
}

/* A view's source, read through the cache (and so the SSD tier). */
struct source {
	struct pfs_fs *fs;
	uint32_t node;
	const struct pfs_fnode *info;
	enum pfs_blocks_mode mode; /* for the source's blocks */
};

static int read_source(void *p, void *buf, size_t len)
{
	struct source *c = p;
	return pfs_fsi_read_head(c->fs, c->node, c->info, c->mode, buf, len);
}

static void log_view(struct pfs_fs *fs, uint32_t spec, uint32_t node, int rc)
{
	char path[4096], key[64];
	pfs_ftable_path(fs->ft, node, path, sizeof(path));
	if (rc == -EFBIG) { /* every stat says it: rate-limited per file */
		snprintf(key, sizeof(key), "view-efbig:%u", node);
		pfs_log_limited(PFS_LOG_WARN, key, "view %s of '%s': larger than view_max_source",
				pfs_views_canon(fs->views, spec), path);
		return;
	}
	pfs_warn("view %s of '%s': %s", pfs_views_canon(fs->views, spec), path,
		 rc == -E2BIG ? "more pixels than view_max_pixels" : "not a decodable JPEG");
}

/* Output size of a view file (a JPEG under spec), remembered per inode;
 * -EFBIG for a source over view_max_source, before any byte is fetched. */
static int view_size(struct pfs_fs *fs, fuse_ino_t ino, enum pfs_blocks_mode mode,
		     uint64_t *size)
{
	uint32_t spec, node;
	struct pfs_fnode info;
	view_split(ino, &spec, &node);
	if (pfs_ftable_get(fs->ft, node, &info) < 0)
		return -ENOENT;
	struct source c = {fs, node, &info, mode};
	struct pfs_views_src src = {ino, info.size, read_source, &c};
	int rc = pfs_views_size(fs->views, spec, &src, size);
	if (rc == -EIO || rc == -E2BIG || rc == -EFBIG) /* -EIO, -E2BIG: once */
		log_view(fs, spec, node, rc);
	return rc;
}

static int view_entry(struct pfs_fs *fs, fuse_ino_t ino, struct fuse_entry_param *e)
{
	uint32_t spec, node;
	view_split(ino, &spec, &node);
	int rc = pfs_fsi_data_entry(fs, node, e);
	if (rc < 0)
		return rc;
	e->ino = ino;
	e->attr.st_ino = ino;
	if (!S_ISDIR(e->attr.st_mode) && pfs_views_transforms(pfs_ftable_name(fs->ft, node))) {
		uint64_t size;
		rc = view_size(fs, ino, PFS_BLOCKS_READ, &size);
		if (rc < 0)
			return rc;
		e->attr.st_size = (off_t)size;
		e->attr.st_blocks = (blkcnt_t)((size + 511) / 512);
	}
	return 0;
}

/* A view file's output, as a made object of blocks/: its name in the
 * tiers, and the transform that makes it from its source. */
struct view_obj {
	struct pfs_fs *fs;
	uint32_t spec, node;
	struct pfs_fnode info;
	enum pfs_blocks_mode mode; /* for the source's blocks */
	struct pfs_blocks_obj o;
};

static int view_name(void *p, char *out, size_t cap)
{
	struct view_obj *c = p;
	char rel[4096];
	int rc = pfs_ftable_path(c->fs->ft, c->node, rel, sizeof(rel));
	if (rc < 0)
		return rc;
	if (snprintf(out, cap, ".views/%.256s/%s", pfs_views_canon(c->fs->views, c->spec),
		     rel) >= (int)cap)
		return -ENAMETOOLONG;
	return 0;
}

static int view_make(void *p, void *buf, size_t len)
{
	struct view_obj *c = p;
	struct source sc = {c->fs, c->node, &c->info, c->mode};
	struct pfs_views_src src = {pfs_fsi_view_ino(c->spec, c->node), c->info.size,
				    read_source, &sc};
	return pfs_views_output(c->fs->views, c->spec, &src, buf, len);
}

/* Sets up c (fs, spec, node, info and mode set) for output size osize. A
 * stored output counts only if made from the source's pinned version (or
 * it pins its own) by these transforms: a view never mixes with another
 * version of its source, nor with another decoder's output. */
static void view_obj_init(struct view_obj *c, uint64_t osize)
{
	c->o = (struct pfs_blocks_obj){
		.ino = pfs_fsi_view_ino(c->spec, c->node), .node = c->node, .size = osize,
		.block = osize, .fp = c->info.fp ^ (pfs_view_version() * 0x9e3779b97f4a7c15ull),
		.name = view_name, .make = view_make, .ctx = c};
}

/* ---- the kind's operations ---------------------------------------------- */

/* In the views root, a name is a spec (an invalid one is ENOENT and a log
 * line with the grammar, not a negative entry: it is not part of the
 * data); below it, the dataset's names. */
static int view_lookup(struct pfs_fs *fs, fuse_ino_t parent, const char *name,
		       struct fuse_entry_param *e)
{
	uint32_t spec, dir, node = PFS_FTABLE_ROOT;
	int rc;
	if (parent == PFS_CTL_INO_VIEWS) {
		rc = pfs_views_spec(fs->views, name, &spec);
	} else {
		view_split(parent, &spec, &dir);
		rc = pfs_ftable_lookup(fs->ft, dir, name, &node);
	}
	return rc < 0 ? rc : view_entry(fs, pfs_fsi_view_ino(spec, node), e);
}

static int views_root_entry(fuse_ino_t ino, struct fuse_entry_param *e)
{
	memset(e, 0, sizeof(*e));
	e->ino = ino;
	e->entry_timeout = PFS_FSI_TIMEOUT_FOREVER;
	return pfs_ctl_getattr(ino, &e->attr);
}

static int view_getattr(struct pfs_fs *fs, fuse_ino_t ino, struct fuse_entry_param *e)
{
	if (ino == PFS_CTL_INO_VIEWS)
		return views_root_entry(ino, e);
	return view_entry(fs, ino, e);
}

static int view_open(struct pfs_fs *fs, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	if (fs->no_open)
		return -ENOSYS;
	fi->keep_cache = 1;
	return 0;
}

static int view_read(struct pfs_fs *fs, fuse_ino_t ino, size_t size, off_t off,
		     struct pfs_fsi_read *r)
{
	if (ino == PFS_CTL_INO_VIEWS)
		return -EISDIR;
	struct view_obj c = {.fs = fs, .mode = PFS_BLOCKS_READ};
	view_split(ino, &c.spec, &c.node);
	if (pfs_ftable_get(fs->ft, c.node, &c.info) < 0)
		return -ENOENT;
	if (c.info.is_dir)
		return -EISDIR;
	if (!pfs_views_transforms(pfs_ftable_name(fs->ft, c.node)))
		return pfs_fsi_data_read(fs, c.node, size, off, r);
	uint64_t osize;
	int rc = view_size(fs, ino, PFS_BLOCKS_READ, &osize);
	if (rc < 0)
		return rc;
	if (off < 0 || (uint64_t)off >= osize || size == 0)
		return 0;
	view_obj_init(&c, osize);
	if (off == 0)
		pfs_fsi_note_sample(fs, c.node);
	uint64_t end = osize - (uint64_t)off < size ? osize : (uint64_t)off + size;
	if (off == 0) { /* the order position moves */
		r->on_read = 1;
		r->node = c.node;
		r->file_size = c.info.size;
		r->off = 0;
		r->len = end;
	}
	return pfs_fsi_read_range(fs, &c.o, (uint64_t)off, end, r);
}

/* A view directory lists its dataset directory's entries, as view inodes. */
static int view_dir_size(struct pfs_fs *fs, fuse_ino_t ino, uint32_t *n)
{
	uint32_t spec, dir;
	if (ino == PFS_CTL_INO_VIEWS) {
		*n = 0; /* specs are looked up, never listed */
		return 0;
	}
	view_split(ino, &spec, &dir);
	return pfs_fsi_data.dir_size(fs, (fuse_ino_t)dir + 1, n);
}

static int view_dir_entry(struct pfs_fs *fs, fuse_ino_t ino, uint32_t k, int plus,
			  const char **name, struct fuse_entry_param *e)
{
	uint32_t spec, dir;
	view_split(ino, &spec, &dir);
	int rc = pfs_fsi_data.dir_entry(fs, (fuse_ino_t)dir + 1, k, plus, name, e);
	if (rc != 0)
		return rc;
	/* Type and inode only: a view file's size may need its source, so it
	 * is computed at lookup, not here. */
	uint32_t child = (uint32_t)(e->attr.st_ino - 1);
	e->ino = 0;
	e->attr.st_ino = pfs_fsi_view_ino(spec, child);
	return 0;
}

const struct pfs_fsi_kind pfs_fsi_view = {
	.name = "view",
	.lookup = view_lookup,
	.getattr = view_getattr,
	.open = view_open,
	.read = view_read,
	.dir_size = view_dir_size,
	.dir_entry = view_dir_entry,
};

int pfs_fsi_view_prefetch(struct pfs_fs *fs, uint32_t spec, uint32_t node)
{
	fuse_ino_t ino = pfs_fsi_view_ino(spec, node);
	struct view_obj c = {.fs = fs, .spec = spec, .node = node,
			     .mode = PFS_BLOCKS_PREFETCH};
	if (pfs_ftable_get(fs->ft, node, &c.info) < 0 || c.info.is_dir)
		return -ENOENT;
	uint64_t osize;
	int rc = view_size(fs, ino, PFS_BLOCKS_PREFETCH, &osize);
	if (rc < 0)
		return rc;
	view_obj_init(&c, osize);
	struct pfs_block *b;
	rc = pfs_blocks_get(fs->blocks, &c.o, 0, PFS_BLOCKS_PREFETCH, 0, &b, NULL);
	if (rc == 0)
		pfs_bcache_put_read(fs->cache, b, 0); /* made, not read */
	return rc;
}
