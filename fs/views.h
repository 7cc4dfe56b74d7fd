/* views.h - MOUNT/.prestofs/views/SPEC/REL/PATH: the dataset, transformed.
 *
 * This module interns view specs (each canonical spec gets a small index,
 * so two spellings of one meaning share one cache entry), runs transforms
 * on a bounded pool of worker threads (never more decodes at once than
 * cores, whatever the number of FUSE readers), and remembers output sizes
 * (stat must report them exactly, and a jpeg output's size is only known
 * once encoded). The transforms themselves are transform/view.h; the
 * inodes, reads and caching of outputs are fs/node_view.c's.
 *
 * Memory: a source over max_source is refused (-EFBIG) before any byte of
 * it is read; sizing a ppm or npy view reads only the JPEG header; and the
 * source, decoded pixels and output of every transform (and each header
 * prefix being read) are held within one budget (util/budget.h,
 * pfs_views_opts.memory), so the views hold at most that many bytes at
 * once, or one job alone when it is larger. Concurrent lookups of one view
 * share one size computation.
 *
 * Threads: create and destroy on one thread (destroy waits for the
 * workers; no call may be running). Every other function may run on any
 * number of threads at once. One internal lock guards the spec table, the
 * job queue and the size cache; it is never held during a transform, a
 * log write, a read of a source or a wait for the budget. Interned specs
 * are never removed: an index and its canonical string stay valid until
 * destroy.
 */
#ifndef PFS_VIEWS_H
#define PFS_VIEWS_H

#include <stddef.h>
#include <stdint.h>

#define PFS_VIEWS_MAX_SPECS 256
#define PFS_VIEWS_MAX_OUTPUT (256u << 20) /* bytes of one transformed file */

struct pfs_views;

struct pfs_views_opts {
	unsigned workers;     /* transform threads (0: the number of CPUs) */
	uint64_t max_pixels;  /* decompression-bomb limit (declared w x h) */
	uint64_t max_source;  /* largest source a view transforms (bytes;
			       * 0: PFS_VIEWS_MAX_OUTPUT); larger: -EFBIG */
	uint64_t memory;      /* the budget of transforms at once: sources,
			       * decoded pixels, outputs (0: 2 x max_source;
			       * at least max_source) */
};

/* Returns 0, or -ENOMEM when no memory or not one worker thread could
 * start. */
int pfs_views_create(const struct pfs_views_opts *o, struct pfs_views **out);
/* The largest source a view transforms (pfs_views_opts.max_source). */
uint64_t pfs_views_max_source(const struct pfs_views *v);
void pfs_views_destroy(struct pfs_views *v);

/* Index of a spec, interned by canonical form: 0 and *idx, -ENOENT for an
 * invalid spec (logged once per spelling, with the grammar), -ENOSPC when
 * PFS_VIEWS_MAX_SPECS are in use, -ENOMEM. */
int pfs_views_spec(struct pfs_views *v, const char *name, uint32_t *idx);
/* The canonical form of spec idx; valid as long as v. */
const char *pfs_views_canon(struct pfs_views *v, uint32_t idx);

/* 1 if a file of this name is transformed (a JPEG), 0 if passed through. */
int pfs_views_transforms(const char *name);

/* A view's source, read through the caller's cache: read() fills buf
 * with the source's first len bytes (len <= size) and returns 0 or a
 * negative errno (a failed fetch, never a property of the file). */
typedef int (*pfs_views_read_fn)(void *ctx, void *buf, size_t len);
struct pfs_views_src {
	uint64_t key;            /* any 64-bit id of the view file */
	uint64_t size;           /* the source's size in bytes */
	pfs_views_read_fn read;
	void *ctx;
};

/* The output size of spec idx applied to src. -EFBIG at once when the
 * source is over max_source (nothing read). ppm and npy are sized from
 * the JPEG header alone: a prefix of 64 KiB, doubled while the header is
 * not all in it (transform/view.h pfs_view_header_end), up to the whole
 * file; jpeg output runs the transform (pfs_views_output's budget). Cached
 * per key (a colliding key replaces the slot, so a size may be computed
 * again, never wrongly answered); callers asking for a key being computed
 * wait for that one computation. Errors: -EIO corrupt, -E2BIG bomb (the
 * first time; later -ENODATA, so the caller logs a bad file once); a
 * failed read's error and -ENOMEM are not cached. */
int pfs_views_size(struct pfs_views *v, uint32_t idx, const struct pfs_views_src *src,
		   uint64_t *size);
/* Spec idx applied to src, into buf of exactly len bytes (the size
 * pfs_views_size answered; another length is -EIO), on the pool. The
 * source, the decoded pixels and the output are held only within the
 * memory budget: the call waits until they fit (nothing held meanwhile).
 * -EFBIG: source over max_source; else as pfs_views_apply. */
int pfs_views_output(struct pfs_views *v, uint32_t idx, const struct pfs_views_src *src,
		     void *buf, size_t len);
/* Transforms src (len bytes, borrowed until return) on the pool, within
 * the memory budget (its work, not src); the caller waits. 0 and *out
 * (malloc'd, the caller frees it) of *out_len bytes; or -EIO (not a
 * decodable JPEG), -E2BIG (over max_pixels), -ENOMEM, -EFBIG (output over
 * PFS_VIEWS_MAX_OUTPUT). */
int pfs_views_apply(struct pfs_views *v, uint32_t idx, const void *src, size_t len,
		    void **out, size_t *out_len);

/* Counters for .prestofs/stats (a pfs_stats_fn; ctx: the views):
 * views.memory_* (the budget), views.too_big, views.size_waits. */
struct pfs_stat_list;
void pfs_views_collect(void *ctx, struct pfs_stat_list *l);

#endif
