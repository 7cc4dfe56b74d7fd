/* epoch.h - epoch tracking without hints from the training job.
 *
 * Definition: files are numbered 0..N-1. An epoch ends when a file that
 * was already read in it is read again; that read opens the next epoch.
 * Epochs are numbered from 1. The caller notes a file once per read of
 * the file, i.e. on the read of its first block (offset 0), not on every
 * block.
 *
 * This matches a loader that reads every sample once per epoch in some
 * order (a permutation, or a subset, or in several workers at once), and
 * it needs no hint. Its limits:
 *  - A loader that reads some file twice within one epoch (a validation
 *    subset read each epoch, several ranks of a job sharing one mount,
 *    a file opened twice to read a header and then the body with the
 *    page cache dropped in between) starts a spurious epoch at the
 *    second read.
 *  - At the boundary, workers that still finish epoch n while others have
 *    started epoch n+1 make the first repeat the boundary: late reads of
 *    epoch n then count as reads of epoch n+1 (and the epoch after that
 *    ends early, by as many files).
 *  - A job that reads only part of the dataset per epoch and never
 *    repeats a file within the window sees one long epoch.
 *  - Reads served by the kernel's page cache never reach the daemon and
 *    are not noted (harmless: they cost the cache nothing).
 *
 * Thread-safe and lock-free: one 32-bit generation per file (read in the
 * current epoch iff gen[file] == epoch), and the epoch number packed with
 * the count of files read in it in one 64-bit word. 4 bytes per file.
 */
#ifndef PFS_EPOCH_H
#define PFS_EPOCH_H

#include <stdint.h>

struct pfs_epoch;

/* A tracker for files 0..nfiles-1, at epoch 1 with nothing read. Returns
 * 0 or -ENOMEM; free with pfs_epoch_destroy() (NULL allowed). */
int pfs_epoch_create(uint32_t nfiles, struct pfs_epoch **out);
void pfs_epoch_destroy(struct pfs_epoch *t);

/* Notes a read of `file` (its first block). Returns the epoch the read
 * belongs to: the current one, or the next one when `file` was already
 * read in the current epoch (which then becomes current). A file id out
 * of range changes nothing and returns the current epoch. Any thread. */
uint64_t pfs_epoch_note_read(struct pfs_epoch *t, uint32_t file);

/* The current epoch (1 before any read), and the number of distinct files
 * read in it so far. Any thread; a snapshot. */
uint64_t pfs_epoch_current(const struct pfs_epoch *t);
uint64_t pfs_epoch_files_read(const struct pfs_epoch *t);
/* 1 if `file` was read in the current epoch. Any thread; a snapshot. */
int pfs_epoch_is_read(const struct pfs_epoch *t, uint32_t file);

#endif
