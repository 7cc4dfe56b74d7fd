/* fs.h - the FUSE low-level operations over the file table, the block
 * cache and the origin.
 *
 * Inode numbers are file-table nodes + 1 (the root is FUSE_ROOT_ID);
 * control inodes are those of ctl.h. The dataset is immutable while
 * mounted, so entries and attributes are cached by the kernel for a long
 * time, negative lookups too, and opens cost no round trip where the
 * kernel supports it. A read is answered straight from cache blocks.
 */
#ifndef PFS_FS_H
#define PFS_FS_H

#include <stddef.h>

struct pfs_ftable;
struct pfs_origin;
struct pfs_bcache;
struct pfs_ssd;
struct pfs_epoch;
struct fuse_lowlevel_ops;

/* Borrowed, not owned: all must outlive the fs. */
struct pfs_fs_conf {
	struct pfs_ftable *ft;
	struct pfs_origin *origin;
	struct pfs_bcache *cache;
	struct pfs_ssd *ssd;   /* NULL: no SSD tier */
	struct pfs_epoch *epoch;
	size_t block_size;
};

struct pfs_fs;

int pfs_fs_create(const struct pfs_fs_conf *conf, struct pfs_fs **out);
void pfs_fs_destroy(struct pfs_fs *fs);

/* The operations table; pass the pfs_fs as userdata to fuse_session_new. */
const struct fuse_lowlevel_ops *pfs_fs_ops(void);

#endif
