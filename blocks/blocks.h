/* blocks.h - the tiers sequenced: one block of an object from wherever it
 * is, under the object's pinned version, and back into the tiers that
 * lack it. The only code that calls the tiers' gets and puts and the
 * origin's read (scripts/check-layers keeps fs/ off them); FUSE-free, so
 * tests/unit/test_blocks.c runs it with the origin and tiers faked.
 *
 * The read path, for a demand read, a prefetch or a warm-up alike:
 *   RAM (bcache.h): a hit, or one fill for every concurrent asker:
 *     1. the SSD tier (ssd.h),
 *     2. the failure memory (failmem.h): an object that just failed fails
 *        again at once,
 *     3. the shared tier (shared.h): a get; on a miss, the block's lock,
 *        so that one node fetches and the others wait for its store,
 *     4. the origin (origin.h), or the object's maker (a view's transform,
 *        which reads its source through this layer in turn);
 *   then, while the block is held, the puts: to the SSD tier what it
 *   lacks, to the shared tier what came from the origin (both without a
 *   copy: each tier's writer holds the block, bcache.h's hold), and the
 *   rest of a whole-object answer (a server without Range) to RAM while
 *   it has room and to SSD.
 * The version rule, in one place (pin()): a copy from any tier is used
 * only if it is of the version pinned for its dataset file (ftable.h's
 * etag), or it pins its own; the origin's answer pins with
 * compare-and-set and, having lost the race, is asked again once with the
 * winner's validator. A made object is of its source's pinned version.
 *
 * Threads: every function may run on any number of threads at once; a
 * pfs_blocks is read-only after create except its atomics. No lock of
 * this module is held while a tier or the origin is waited for.
 */
#ifndef PFS_BLOCKS_H
#define PFS_BLOCKS_H

#include <stddef.h>
#include <stdint.h>

struct pfs_ftable;
struct pfs_fnode;
struct pfs_bcache;
struct pfs_block;
struct pfs_origin;
struct pfs_ssd;
struct pfs_shared;
struct pfs_blocks;

/* Borrowed: all must outlive the pfs_blocks. */
struct pfs_blocks_opts {
	struct pfs_ftable *ft;
	struct pfs_bcache *cache;
	struct pfs_origin *origin;
	struct pfs_ssd *ssd;       /* NULL: no SSD tier */
	struct pfs_shared *shared; /* NULL: no shared tier */
	size_t block_size;
};

/* 0 and *out, or -ENOMEM. */
int pfs_blocks_create(const struct pfs_blocks_opts *o, struct pfs_blocks **out);
/* NULL allowed. No call may be running. */
void pfs_blocks_destroy(struct pfs_blocks *bl);

/* Makes a made object's bytes (its one block of `len` bytes) into buf:
 * 0 or a negative errno. Runs inside the RAM tier's fill. */
typedef int (*pfs_blocks_make_fn)(void *ctx, void *buf, size_t len);
/* A made object's name in the SSD and shared tiers into out (cap bytes):
 * 0 or a negative errno. Asked on a RAM miss only. */
typedef int (*pfs_blocks_name_fn)(void *ctx, char *out, size_t cap);

/* What a block belongs to. A dataset file: pfs_blocks_file(). A made
 * object (a view's output): name, make and ctx set, block = size. */
struct pfs_blocks_obj {
	uint64_t ino;      /* the RAM tier's key */
	uint32_t node;     /* the dataset file whose pinned version it is of */
	uint64_t size;     /* the object's bytes */
	uint64_t block;    /* its block length */
	uint64_t fp;       /* listing fingerprint (a made object's: mixed
			    * with its maker's version) */
	pfs_blocks_name_fn name; /* NULL: a dataset file (its path) */
	pfs_blocks_make_fn make; /* NULL: from the origin */
	void *ctx;         /* name's and make's */
};

/* The object of dataset file `node` (info: its file-table entry). */
void pfs_blocks_file(const struct pfs_blocks *bl, uint32_t node, const struct pfs_fnode *info,
		     struct pfs_blocks_obj *out);

/* The length of block blk of o: o->block, or what is left of the object. */
size_t pfs_blocks_len(const struct pfs_blocks_obj *o, uint64_t blk);

enum pfs_blocks_mode {
	PFS_BLOCKS_READ,     /* a reader waits for it */
	PFS_BLOCKS_PREFETCH, /* bcache.h's PFS_BCACHE_PREFETCH */
};

/* Block blk of o (it must exist) into *out, held: the caller releases it
 * with pfs_bcache_put_read. deadline_ns: by when the origin's reads end
 * (pfs_origin_req; 0: only their retries bound them), in either mode (a
 * view's prefetch reads its source's blocks under one deadline). *missed (may be
 * NULL): 1 when this call ran the fill (a RAM miss). 0 or the fill's
 * error: the origin's (-EIO, -ETIMEDOUT, -EACCES, ...; -ESTALE for another
 * version than pinned), the maker's, or the failure memory's. */
int pfs_blocks_get(struct pfs_blocks *bl, const struct pfs_blocks_obj *o, uint64_t blk,
		   enum pfs_blocks_mode mode, uint64_t deadline_ns, struct pfs_block **out,
		   int *missed);

/* Where a block is, for prestofs warm. */
struct pfs_blocks_place {
	int ram;     /* in the RAM tier, or being filled */
	int ssd;     /* in the SSD tier (or queued), of a version this mount
		      * may serve */
	int fetched; /* this call took it from the origin */
};

/* Block blk of dataset object o, brought in without evicting anything:
 * into RAM while it has free room, else into the SSD tier while that has
 * room; a block in RAM but not in SSD is copied there. *p: where it is
 * afterwards. 0 or the fill's error. */
int pfs_blocks_warm(struct pfs_blocks *bl, const struct pfs_blocks_obj *o, uint64_t blk,
		    struct pfs_blocks_place *p);
/* Where block blk of o is now (fetched 0); fetches nothing. 0, or the
 * error of building its name (-ENAMETOOLONG, -ENOENT). */
int pfs_blocks_where(struct pfs_blocks *bl, const struct pfs_blocks_obj *o, uint64_t blk,
		     struct pfs_blocks_place *p);
/* Waits until what is queued for the SSD tier is written. */
void pfs_blocks_flush(struct pfs_blocks *bl);

/* 1 while the failure memory fails dataset file `node` at once (a look:
 * for the prefetcher, which skips it). */
int pfs_blocks_failing(struct pfs_blocks *bl, uint32_t node);
/* Objects the failure memory holds now (stats: failed_files). */
uint64_t pfs_blocks_failed_count(struct pfs_blocks *bl);

#endif
