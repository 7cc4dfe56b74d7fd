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
 * Threads: create and destroy on one thread (destroy waits for the
 * workers; no call may be running). Every other function may run on any
 * number of threads at once. One internal lock guards the spec table, the
 * job queue and the size cache; it is never held during a transform or a
 * log write. Interned specs are never removed: an index and its canonical
 * string stay valid until destroy.
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

/* The output size of spec idx applied to src (len bytes of a whole JPEG
 * file, borrowed for the call). Cached per key (any 64-bit id of the view
 * file; a colliding key replaces the slot, so a size may be computed
 * again, never wrongly answered): with src NULL, answers from that cache
 * or -EAGAIN. Errors: -EIO corrupt, -E2BIG bomb (the first time; later
 * -ENODATA, so the caller logs a bad file once); -ENOMEM (not cached).
 * May run a full transform on the pool (jpeg output) and wait for it. */
int pfs_views_size(struct pfs_views *v, uint32_t idx, uint64_t key, const void *src,
		   size_t len, uint64_t *size);
/* Transforms src (len bytes, borrowed until return) on the pool; the
 * caller waits. 0 and *out (malloc'd, the caller frees it) of *out_len
 * bytes; or -EIO (not a decodable JPEG), -E2BIG (over max_pixels),
 * -ENOMEM, -EFBIG (output over PFS_VIEWS_MAX_OUTPUT). */
int pfs_views_apply(struct pfs_views *v, uint32_t idx, const void *src, size_t len,
		    void **out, size_t *out_len);

#endif
