/* node_ctl.c - control inodes (fs_int.h): MOUNT/.prestofs and its files,
 * whose content is ctl.c's and order.c's. The views directory is a view
 * inode (node_view.c), not one of these.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "fs_int.h"
#include "order.h"
#include "warm.h"

static int ctl_entry(fuse_ino_t ino, struct fuse_entry_param *e)
{
	memset(e, 0, sizeof(*e));
	int rc = pfs_ctl_getattr(ino, &e->attr);
	if (rc < 0)
		return rc;
	e->ino = ino;
	e->entry_timeout = PFS_FSI_TIMEOUT_FOREVER;
	e->attr_timeout = 0; /* dynamic content: see ctl.c */
	return 0;
}

/* fs.c sends here the lookup of PFS_CTL_NAME in the root too. */
static int ctl_lookup(struct pfs_fs *fs, fuse_ino_t parent, const char *name,
		      struct fuse_entry_param *e)
{
	(void)fs;
	uint64_t ino;
	if (parent == FUSE_ROOT_ID)
		return ctl_entry(PFS_CTL_INO_DIR, e);
	int rc = pfs_ctl_lookup(parent, name, &ino);
	return rc < 0 ? rc : ctl_entry(ino, e);
}

static int ctl_getattr(struct pfs_fs *fs, fuse_ino_t ino, struct fuse_entry_param *e)
{
	(void)fs;
	return ctl_entry(ino, e);
}

static int ctl_open(struct pfs_fs *fs, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)fs;
	/* Content changes from one read to the next: never cached. */
	fi->direct_io = 1;
	if (ino == PFS_CTL_INO_ORDER)
		return 0; /* written by loaders; O_TRUNC arrives as a setattr */
	if (ino == PFS_CTL_INO_WARM && (fi->flags & O_ACCMODE) != O_RDONLY)
		return 0; /* written by `prestofs warm` */
	if ((fi->flags & O_ACCMODE) != O_RDONLY)
		return -EROFS;
	/* direct_io reads come without a getattr first: take the snapshot
	 * they will read now. */
	struct stat st;
	return pfs_ctl_getattr(ino, &st);
}

static int ctl_read(struct pfs_fs *fs, fuse_ino_t ino, size_t size, off_t off,
		    struct pfs_fsi_read *r)
{
	(void)fs;
	if (off < 0)
		return -EINVAL;
	r->buf = malloc(size ? size : 1);
	if (!r->buf)
		return -ENOMEM;
	size_t got = 0;
	int rc = pfs_ctl_read(ino, (uint64_t)off, size, r->buf, &got);
	if (rc < 0)
		return rc;
	r->iov = r->stackv;
	r->iov[0].iov_base = r->buf;
	r->iov[0].iov_len = got;
	r->niov = 1;
	return 0;
}

static int ctl_dir_size(struct pfs_fs *fs, fuse_ino_t ino, uint32_t *n)
{
	(void)fs;
	struct stat st;
	int rc = pfs_ctl_getattr(ino, &st);
	if (rc < 0)
		return rc;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	*n = pfs_ctl_nchildren(ino);
	return 0;
}

static int ctl_dir_entry(struct pfs_fs *fs, fuse_ino_t ino, uint32_t k, int plus,
			 const char **name, struct fuse_entry_param *e)
{
	(void)fs;
	uint64_t cino;
	*name = pfs_ctl_child(ino, k, &cino);
	if (!*name)
		return 1;
	/* Without plus, no snapshot of a file's content is taken. */
	if (!plus) {
		memset(e, 0, sizeof(*e));
		e->attr.st_ino = cino;
		e->attr.st_mode = cino == PFS_CTL_INO_VIEWS ? S_IFDIR : S_IFREG;
		return 0;
	}
	return ctl_entry(cino, e) < 0 ? 1 : 0;
}

static int ctl_write(struct pfs_fs *fs, fuse_ino_t ino, const char *buf, size_t size,
		     off_t off, int32_t tid)
{
	if (off < 0)
		return -EINVAL;
	if (ino == PFS_CTL_INO_WARM && fs->warm)
		return pfs_warm_write(fs->warm, buf, size);
	if (ino != PFS_CTL_INO_ORDER || !fs->order)
		return -EROFS;
	return pfs_order_write(fs->order, tid, (uint64_t)off, buf, size);
}

/* Truncation of the order file makes the writer's next write a new order;
 * time stamps are accepted and ignored (touch), and so is truncating the
 * warm file (a shell's `>`: each write there is a whole request). */
static int ctl_setattr(struct pfs_fs *fs, fuse_ino_t ino, const struct stat *attr, int to_set,
		       int32_t tid, struct stat *out)
{
	const int allowed = FUSE_SET_ATTR_SIZE | FUSE_SET_ATTR_MTIME | FUSE_SET_ATTR_MTIME_NOW |
			    FUSE_SET_ATTR_CTIME | FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_ATIME_NOW;
	if (ino == PFS_CTL_INO_WARM && fs->warm && !(to_set & ~allowed))
		return pfs_ctl_getattr(ino, out);
	if (ino != PFS_CTL_INO_ORDER || !fs->order || (to_set & ~allowed))
		return -EROFS;
	if ((to_set & FUSE_SET_ATTR_SIZE) && attr->st_size == 0)
		pfs_order_reset(fs->order, tid);
	return pfs_ctl_getattr(ino, out);
}

const struct pfs_fsi_kind pfs_fsi_ctl = {
	.name = "control",
	.lookup = ctl_lookup,
	.getattr = ctl_getattr,
	.open = ctl_open,
	.read = ctl_read,
	.dir_size = ctl_dir_size,
	.dir_entry = ctl_dir_entry,
	.write = ctl_write,
	.setattr = ctl_setattr,
};
