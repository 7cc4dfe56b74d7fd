/* epoch.h - epoch tracking without hints from the training job.
 *
 * Definition: files are numbered 0..N-1. An epoch ends when files that
 * were already read in it are read again *and* the epoch has by then read
 * most of the files: at least 5/8 of the distinct files read since the
 * tracker was created ("seen"). It takes K such repeats of distinct files,
 * K = seen / 64 bounded to [1, PFS_EPOCH_CONFIRM_MAX = 64]: the K-th opens
 * the next epoch, which then holds those K files as read in it. A repeat
 * earlier in the epoch is only a re-read: it changes nothing. Epochs are
 * numbered from 1. The caller notes a file once per read of the file,
 * i.e. on the read of its first block (offset 0), not on every block.
 *
 * Why K: PyTorch's DistributedSampler pads the ranks' shards to equal
 * length with samples from the start of the epoch's permutation (fewer
 * than the number of ranks, one per rank at most, at the end of a rank's
 * shard). Those repeats come after most of the epoch was read; with K = 1
 * each one would open an epoch a few reads early, and after the last
 * epoch a spurious one. The padded files of one epoch count as read in
 * the next one too (below), so up to 2 (R - 1) repeats of R ranks' padding
 * can fall in one epoch: epochs stay exact while 2 (R - 1) < K, i.e. for
 * R <= 32 ranks per mount with at least 128 R files. A true boundary is
 * seen K reads late, and the files read before it (and the last padded
 * ones) then count as read in the next epoch too (the background fill
 * skips them there).
 *
 * Why "most": a loader that reads every sample once per epoch (a
 * permutation, in several workers at once) repeats a file only at the
 * boundary, when the epoch has read all it has seen, so it is unaffected.
 * A loader that draws samples at random (with replacement), or many
 * readers re-reading random files, repeats a file after about sqrt(N)
 * reads (the birthday bound): ending an epoch on every repeat made
 * thousands of epochs a minute. With the rule, such a pattern begins an
 * epoch about once per N reads: N random draws over N files touch 63%
 * (1 - 1/e) of them, and 5/8 is just under that. 1/2 would give one
 * epoch per 0.69 N draws; a higher share would miss the epochs of jobs
 * that read a subset (below the share) of the files per epoch.
 *
 * The first epoch: nothing tells how many files the job reads, but every
 * file seen so far was read in epoch 1, so its first repeat always ends
 * it: a full pass followed by a second pass gives epoch 2 at the first
 * read of the second pass, exactly as before. A random pattern's first
 * epochs are short (the first repeat comes early) and grow with "seen",
 * so it settles to one epoch per about N reads after a few epochs.
 *
 * Limits:
 *  - A job that reads fewer than 5/8 of the files it has read so far per
 *    epoch (a shrinking or rotating subset) sees epochs span several of
 *    its own.
 *  - A loader that reads each file twice in a row (a header, then the
 *    body with the page cache dropped in between) makes each repeat in
 *    its first pass a boundary while "seen" still grows: about
 *    log(N) / log(8/3) short epochs in the first pass (14 for a million
 *    files), then one per pass.
 *  - A validation subset read twice in one epoch, late in it, starts an
 *    epoch early (a repeat after 5/8 of the files).
 *  - At the boundary, workers that still finish epoch n while others have
 *    started epoch n+1 put their late reads into epoch n+1; a repeat of
 *    one of those files is ignored in the first 5/8 of epoch n+1, but
 *    ends it early if it comes later.
 *  - Reads served by the kernel's page cache never reach the daemon and
 *    are not noted (harmless: they cost the cache nothing).
 *
 * Thread-safe and lock-free, O(1) per read: one 32-bit generation per
 * file (the last epoch it was read in, and a bit for "read again near the
 * end of it"), the epoch number packed with the count of files read in it
 * in one 64-bit word, the same for the repeats, and one 32-bit count of
 * files seen. 4 bytes per file. Epoch numbers are 31-bit.
 */
#ifndef PFS_EPOCH_H
#define PFS_EPOCH_H

#include <stdint.h>

/* The share of the files seen that an epoch must have read before a
 * repeat ends it: PFS_EPOCH_MOST_NUM / PFS_EPOCH_MOST_DEN. */
#define PFS_EPOCH_MOST_NUM 5
#define PFS_EPOCH_MOST_DEN 8
/* Repeats of distinct files that end an epoch: seen / 64, within [1, 64]. */
#define PFS_EPOCH_CONFIRM_MAX 64
#define PFS_EPOCH_CONFIRM_PER 64

struct pfs_epoch;

/* A tracker for files 0..nfiles-1, at epoch 1 with nothing read. Returns
 * 0 or -ENOMEM; free with pfs_epoch_destroy() (NULL allowed). */
int pfs_epoch_create(uint32_t nfiles, struct pfs_epoch **out);
void pfs_epoch_destroy(struct pfs_epoch *t);

/* Notes a read of `file` (its first block). Returns the epoch the read
 * belongs to: the current one, or the next one when this read is the K-th
 * repeat that ends the current epoch (the next one then becomes current).
 * A file id out of range changes nothing and returns the current epoch.
 * Any thread. */
uint64_t pfs_epoch_note_read(struct pfs_epoch *t, uint32_t file);

/* The current epoch (1 before any read), the number of distinct files
 * read in it so far, and the number of distinct files ever read. Any
 * thread; snapshots. */
uint64_t pfs_epoch_current(const struct pfs_epoch *t);
uint64_t pfs_epoch_files_read(const struct pfs_epoch *t);
uint64_t pfs_epoch_files_seen(const struct pfs_epoch *t);
/* 1 if `file` was read in the current epoch. Any thread; a snapshot. */
int pfs_epoch_is_read(const struct pfs_epoch *t, uint32_t file);

/* 1 for the one caller that first sees epoch e begin (e: what
 * pfs_epoch_note_read returned), 0 for every other: the epoch's demand
 * counters (below) start from here. Any thread. */
int pfs_epoch_began(struct pfs_epoch *t, uint64_t e);
/* A demand read waited ns for its data (a stall; fs/ says when). Any
 * thread. */
void pfs_epoch_add_stall(struct pfs_epoch *t, uint64_t ns);

/* Appends epoch.number, epoch.files_read and epoch.files_seen (the three
 * above), the current epoch's demand counters (epoch.demand_hits and
 * epoch.demand_misses: the RAM tier's reader gets since it began,
 * bcache.h's process-wide counters; epoch.stall_seconds) and
 * stall_seconds (all the stalls) to l; t is a struct pfs_epoch. A
 * pfs_stats_fn (util/stats.h). Any thread. */
struct pfs_stat_list;
void pfs_epoch_collect(void *t, struct pfs_stat_list *l);

#endif
