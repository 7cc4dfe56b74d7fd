/* fs_int.h - private to fs/: the state of a mount, shared by fs.c (the
 * FUSE operations) and fs_views.c (the views tree). */
#ifndef PFS_FS_INT_H
#define PFS_FS_INT_H

#include <stdint.h>
#include <sys/types.h>
#include <fuse_lowlevel.h>

#include "../catalog/ftable.h"
#include "../cache/policy.h"

struct pfs_origin;
struct pfs_bcache;
struct pfs_ssd;
struct pfs_epoch;
struct pfs_views;
struct pfs_prefetch;
struct pfs_order;
struct pfs_failmem;

struct pfs_fs {
	struct pfs_ftable *ft;
	struct pfs_origin *origin;
	struct pfs_bcache *cache;
	struct pfs_ssd *ssd;
	struct pfs_epoch *epoch;
	size_t block_size;
	uid_t uid;
	gid_t gid;
	int no_open, no_opendir; /* set once in init, read-only afterwards */
	enum pfs_policy policy;
	struct pfs_prefetch *prefetch; /* set before mounting, or NULL */
	struct pfs_order *order;
	struct pfs_views *views;       /* NULL: no views */
	struct pfs_failmem *failed;    /* files the origin just failed */
	/* The current epoch's counters: bases taken when it began (atomics). */
	uint64_t epoch_seen, base_hits, base_misses, base_stall_ns;
	uint64_t stall_ns; /* atomic: time demand reads waited for data */
	int warned_no_validator; /* atomic: logged once per mount */
};

/* A demand read that took longer than this waited for a fill (a RAM hit
 * takes about a microsecond). */
#define STALL_THRESHOLD_NS 50000

/* A block fill: which file, where, and its listing fingerprint. */
struct fill_ctx {
	struct pfs_fs *fs;
	uint32_t node;
	uint64_t size, off, fp;
};

/* fs.c */
/* A read at offset 0: epoch tracking and the epoch's counters. */
void pfs_fsi_note_sample(struct pfs_fs *fs, uint32_t node);
/* Entry and attributes of a dataset node. */
int pfs_fsi_entry(const struct pfs_fs *fs, uint32_t node, struct fuse_entry_param *e);
/* A RAM miss: the SSD tier, else the origin (a pfs_bcache_fill_fn). */
int pfs_fsi_fill_block(void *p, void *buf, size_t len);
/* Replies to a read of a dataset file. */
void pfs_fsi_read_dataset(fuse_req_t req, struct pfs_fs *fs, uint32_t node, size_t size,
			  off_t off);

/* fs_views.c: view inodes are VIEW_BASE | spec << 32 | node. */
int pfs_fsi_is_view(fuse_ino_t ino);
fuse_ino_t pfs_fsi_view_ino(uint32_t spec, uint32_t node);
void pfs_fsi_view_split(fuse_ino_t ino, uint32_t *spec, uint32_t *node);
int pfs_fsi_view_entry(struct pfs_fs *fs, fuse_ino_t ino, struct fuse_entry_param *e);
void pfs_fsi_view_read(fuse_req_t req, struct pfs_fs *fs, fuse_ino_t ino, size_t size,
		       off_t off);
/* Brings the output of view `spec` of file `node` into the cache. */
int pfs_fsi_view_prefetch(struct pfs_fs *fs, uint32_t spec, uint32_t node);

#endif
