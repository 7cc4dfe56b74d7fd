/* node_data.c - dataset inodes (fs_int.h): file-table node + 1, the root
 * being FUSE_ROOT_ID. The dataset is immutable while mounted, so entries,
 * attributes and negative lookups are cached by the kernel "forever", and
 * file pages are kept between opens.
 */
#include <errno.h>
#include <string.h>

#include "ctl.h"
#include "fs_int.h"

/* Dataset inode -> table node; -ENOENT for anything else. */
static int node_of(const struct pfs_fs *fs, fuse_ino_t ino, uint32_t *node)
{
	if (ino == 0 || ino - 1 >= pfs_ftable_count(fs->ft))
		return -ENOENT;
	*node = (uint32_t)(ino - 1);
	return 0;
}

int pfs_fsi_data_entry(const struct pfs_fs *fs, uint32_t node, struct fuse_entry_param *e)
{
	struct pfs_fnode info;
	int rc = pfs_ftable_get(fs->ft, node, &info);
	if (rc < 0)
		return rc;
	memset(e, 0, sizeof(*e));
	e->ino = (fuse_ino_t)node + 1;
	e->attr_timeout = e->entry_timeout = PFS_FSI_TIMEOUT_FOREVER;
	struct stat *st = &e->attr;
	st->st_ino = (ino_t)node + 1;
	st->st_mode = info.is_dir ? S_IFDIR | 0555 : S_IFREG | 0444;
	st->st_nlink = info.is_dir ? 2 : 1;
	st->st_uid = fs->uid;
	st->st_gid = fs->gid;
	st->st_size = (off_t)info.size;
	st->st_blksize = 128 * 1024;
	st->st_blocks = (blkcnt_t)((info.size + 511) / 512);
	st->st_atim.tv_sec = st->st_mtim.tv_sec = st->st_ctim.tv_sec = info.mtime;
	return 0;
}

static int data_lookup(struct pfs_fs *fs, fuse_ino_t parent, const char *name,
		       struct fuse_entry_param *e)
{
	uint32_t dir, node;
	int rc = node_of(fs, parent, &dir);
	if (rc == 0)
		rc = pfs_ftable_lookup(fs->ft, dir, name, &node);
	if (rc == -ENOENT) {
		/* A negative entry to keep: the listing is complete and immutable. */
		memset(e, 0, sizeof(*e));
		e->entry_timeout = PFS_FSI_TIMEOUT_FOREVER;
		return 0;
	}
	return rc < 0 ? rc : pfs_fsi_data_entry(fs, node, e);
}

static int data_getattr(struct pfs_fs *fs, fuse_ino_t ino, struct fuse_entry_param *e)
{
	uint32_t node;
	int rc = node_of(fs, ino, &node);
	return rc < 0 ? rc : pfs_fsi_data_entry(fs, node, e);
}

static int data_open(struct pfs_fs *fs, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	if (fs->no_open)
		return -ENOSYS; /* never ask again */
	fi->keep_cache = 1;
	return 0;
}

/* A read of a dataset file: its blocks, straight from the cache. */
int pfs_fsi_data_read(struct pfs_fs *fs, uint32_t node, size_t size, off_t off,
		      struct pfs_fsi_read *r)
{
	struct pfs_fnode info;
	if (pfs_ftable_get(fs->ft, node, &info) < 0)
		return -ENOENT;
	if (info.is_dir)
		return -EISDIR;
	uint64_t start = (uint64_t)off;
	if (off < 0 || start >= info.size || size == 0)
		return 0; /* EOF: nothing to reply with */
	/* A read of a file's first byte starts a sample: it drives epoch
	 * tracking (see cache/epoch.h); re-reads come from the page cache. */
	if (start == 0)
		pfs_fsi_note_sample(fs, node);
	uint64_t end = info.size - start < size ? info.size : start + size;
	struct pfs_blocks_obj src;
	pfs_blocks_file(fs->blocks, node, &info, &src);
	r->on_read = 1;
	r->node = node;
	r->file_size = info.size;
	r->off = start;
	r->len = end - start;
	return pfs_fsi_read_range(fs, &src, start, end, r);
}

static int data_read(struct pfs_fs *fs, fuse_ino_t ino, size_t size, off_t off,
		     struct pfs_fsi_read *r)
{
	uint32_t node;
	int rc = node_of(fs, ino, &node);
	return rc < 0 ? rc : pfs_fsi_data_read(fs, node, size, off, r);
}

static int data_dir_size(struct pfs_fs *fs, fuse_ino_t ino, uint32_t *n)
{
	uint32_t dir;
	struct pfs_fnode info;
	if (node_of(fs, ino, &dir) < 0)
		return -ENOENT;
	if (pfs_ftable_get(fs->ft, dir, &info) < 0 || !info.is_dir)
		return -ENOTDIR;
	*n = pfs_ftable_nchildren(fs->ft, dir);
	return 0;
}

static int data_dir_entry(struct pfs_fs *fs, fuse_ino_t ino, uint32_t k, int plus,
			  const char **name, struct fuse_entry_param *e)
{
	(void)plus;
	uint32_t dir = (uint32_t)(ino - 1);
	uint32_t child = pfs_ftable_child(fs->ft, dir, k);
	*name = pfs_ftable_name(fs->ft, child);
	if (dir == PFS_FTABLE_ROOT && !strcmp(*name, PFS_CTL_NAME))
		return 1; /* shadowed by the control tree */
	return pfs_fsi_data_entry(fs, child, e);
}

const struct pfs_fsi_kind pfs_fsi_data = {
	.name = "dataset",
	.lookup = data_lookup,
	.getattr = data_getattr,
	.open = data_open,
	.read = data_read,
	.dir_size = data_dir_size,
	.dir_entry = data_dir_entry,
};
