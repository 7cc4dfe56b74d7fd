/* fs_int.h - private to fs/: the state of a mount, the inode kinds and the
 * read path they share.
 *
 * Every inode is of one kind, decided once per request from its number
 * (fs.c, kind_of()):
 *   dataset   1 .. count               node_data.c  (file-table node + 1)
 *   control   PFS_CTL_INO_BASE + i     node_ctl.c   (ctl.h; .prestofs/...)
 *   view      VIEW_BASE | spec<<32 | node  node_view.c (.prestofs/views/...)
 * fs.c calls the kind's operation, which returns 0 or a negative errno and
 * never replies; fs.c replies exactly once, mapping errors in one place
 * (reply_err). The calls point one way: fs.c -> node_view.c -> node_data.c
 * -> readpath.c -> blocks/ (which sequences the tiers); node_ctl.c ->
 * readpath.c's neighbours ctl.c and order.c.
 *
 * Threads: every function here may run on any FUSE worker or prefetch
 * worker thread at once; struct pfs_fs is read-only after mounting except
 * the fields marked atomic.
 */
#ifndef PFS_FS_INT_H
#define PFS_FS_INT_H

#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <fuse_lowlevel.h>

#include "../blocks/blocks.h"
#include "../catalog/ftable.h"
#include "../cache/bcache.h"
#include "../cache/policy.h"
#include "../prefetch/prefetch.h"

struct pfs_origin;
struct pfs_epoch;
struct pfs_views;
struct pfs_prefetch;
struct pfs_order;
struct pfs_warm;

struct pfs_fs {
	struct pfs_ftable *ft;
	struct pfs_origin *origin;     /* for its read bound only */
	struct pfs_bcache *cache;
	struct pfs_blocks *blocks;     /* owned: every block comes from it */
	struct pfs_epoch *epoch;
	size_t block_size;
	uid_t uid;
	gid_t gid;
	int no_open, no_opendir; /* set once in init, read-only afterwards */
	enum pfs_policy policy;
	struct pfs_prefetch *prefetch; /* set before mounting, or NULL */
	struct pfs_order *order;
	struct pfs_views *views;       /* NULL: no views */
	struct pfs_warm *warm;         /* warm-up jobs (warm.h) */
};

/* Attributes never change while mounted: the kernel may keep them. */
#define PFS_FSI_TIMEOUT_FOREVER 1e6 /* seconds */

/* ---- readpath.c: reads, stall timing, epoch notes --------------------- */

/* A demand read that took longer than this waited for a fill (a RAM hit
 * takes about a microsecond). */
#define PFS_FSI_STALL_NS 50000

/* What one read replies with: slices of cached blocks (held until the
 * reply is sent) or of an owned buffer. pfs_fsi_read_done() releases it
 * and tells the prefetcher. Zero it before use. */
struct pfs_fsi_read {
	struct iovec *iov;
	int niov;
	struct pfs_block **blocks;
	size_t nblocks;
	char *buf;                  /* owned (control files), or NULL */
	struct iovec stackv[4];
	struct pfs_block *stackb[4];
	/* Reported to the prefetcher after the reply, when on_read is set. */
	int on_read;
	uint32_t node;
	uint64_t file_size, off, len;
	struct pfs_prefetch_demand demand; /* set by pfs_fsi_read_range */
};

/* A read at offset 0 of file `node`: epoch tracking and the epoch's
 * counters (see cache/epoch.h). */
void pfs_fsi_note_sample(struct pfs_fs *fs, uint32_t node);
/* Bytes [start, end) of src into r (end <= src->size, start < end):
 * 0, or the first block's error; the time spent waiting counts as a stall. */
int pfs_fsi_read_range(struct pfs_fs *fs, const struct pfs_blocks_obj *src, uint64_t start,
		       uint64_t end, struct pfs_fsi_read *r);
/* After the reply (rc: what the read returned): blocks released, buffers
 * freed, the prefetcher told. */
void pfs_fsi_read_done(struct pfs_fs *fs, struct pfs_fsi_read *r, int rc);

/* The first len bytes of dataset file `node` (len <= its size, else
 * -EINVAL) into buf, through the tiers as a read or a prefetch (`mode`):
 * only the blocks that hold them are fetched. 0 or a negative errno. */
int pfs_fsi_read_head(struct pfs_fs *fs, uint32_t node, const struct pfs_fnode *info,
		      enum pfs_blocks_mode mode, void *buf, size_t len);

/* ---- the inode kinds --------------------------------------------------- */

/* Each returns 0 or a negative errno and never replies. NULL: the kind has
 * no such operation (fs.c answers for it). */
struct pfs_fsi_kind {
	const char *name;
	/* Entry `name` in directory `parent`; 0 with e->ino 0 is a negative
	 * entry the kernel may cache. */
	int (*lookup)(struct pfs_fs *fs, fuse_ino_t parent, const char *name,
		      struct fuse_entry_param *e);
	int (*getattr)(struct pfs_fs *fs, fuse_ino_t ino, struct fuse_entry_param *e);
	/* fi->flags checked by fs.c for writes; sets keep_cache/direct_io. */
	int (*open)(struct pfs_fs *fs, fuse_ino_t ino, struct fuse_file_info *fi);
	int (*read)(struct pfs_fs *fs, fuse_ino_t ino, size_t size, off_t off,
		    struct pfs_fsi_read *r);
	/* A directory's entry count (after ".", ".."), or -ENOTDIR... */
	int (*dir_size)(struct pfs_fs *fs, fuse_ino_t ino, uint32_t *n);
	/* Its k-th entry: 0, 1 to skip it, or a negative errno. With plus 0
	 * only e->attr's st_ino and st_mode need be set. */
	int (*dir_entry)(struct pfs_fs *fs, fuse_ino_t ino, uint32_t k, int plus,
			 const char **name, struct fuse_entry_param *e);
	/* tid: the thread id of the request (fuse_req_ctx). */
	int (*write)(struct pfs_fs *fs, fuse_ino_t ino, const char *buf, size_t size,
		     off_t off, int32_t tid);
	int (*setattr)(struct pfs_fs *fs, fuse_ino_t ino, const struct stat *attr, int to_set,
		       int32_t tid, struct stat *out);
};

extern const struct pfs_fsi_kind pfs_fsi_data, pfs_fsi_ctl, pfs_fsi_view;

/* node_data.c: entry and attributes of dataset node `node`. */
int pfs_fsi_data_entry(const struct pfs_fs *fs, uint32_t node, struct fuse_entry_param *e);
/* Replies' worth of a dataset read (node_view.c passes files through). */
int pfs_fsi_data_read(struct pfs_fs *fs, uint32_t node, size_t size, off_t off,
		      struct pfs_fsi_read *r);

/* node_view.c: view inodes. */
int pfs_fsi_is_view(fuse_ino_t ino);
/* Brings the output of view `spec` of file `node` into the cache. */
int pfs_fsi_view_prefetch(struct pfs_fs *fs, uint32_t spec, uint32_t node);
fuse_ino_t pfs_fsi_view_ino(uint32_t spec, uint32_t node);

#endif
