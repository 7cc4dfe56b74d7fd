/* warm.h - cache warm-up jobs (`prestofs warm`), driven through the control
 * file MOUNT/.prestofs/warm, so no data crosses FUSE and the page cache
 * stays clean.
 *
 * Writes. Each write is whole lines (the tool keeps a write under 64 KiB,
 * so the kernel never splits one) and starts with a command line:
 *   #job ID warm|check [THREADS]  then paths, one per line: files or
 *                                 directories (their whole subtree),
 *                                 relative to the mount root ("" or "/":
 *                                 everything); added to job ID, created
 *                                 by its first such write
 *   #start ID                     the job's list is complete: it runs
 *   #cancel ID                    it stops (blocks in flight finish)
 * ID is 1 to 48 of [A-Za-z0-9._:-]. A path the listing lacks, or one
 * under .prestofs, is counted as unknown; a file named twice is taken once.
 *
 * A warm job brings every block of its files into the SSD tier while the
 * tier has room under its budget (never evicting), and into the RAM tier
 * only while its resident set has free room (PFS_BCACHE_WARM: it never
 * evicts what a running job reads). Blocks come through the read path
 * (pfs_blocks_warm: the other tiers, else the origin, under the file's
 * pinned version), THREADS (default 32, at most 256) at a time. A check
 * job only looks: which blocks are resident in RAM, which are in the SSD
 * tier (for this listing entry and the pinned version).
 *
 * Reads (pfs_warm_render) give one line per job, oldest first:
 *   ID mode=warm state=adding|running|done|cancelled threads=T files=N
 *   bytes=B unknown=U done_files= done_bytes= ram_bytes= ssd_bytes=
 *   cached_bytes= fetched_bytes= nofit_bytes= failed_files= complete_files=
 *   errno= seconds=
 * (cached: in RAM or SSD; nofit: in neither after the job; complete: every
 * block cached; errno: the first failed file's error, 0 if none). At most
 * 16 jobs are kept: a new one replaces the oldest that is not running.
 *
 * Threads: every function may be called from any FUSE worker at once; a
 * running job has its own worker threads, joined when the job is replaced
 * and at destroy.
 */
#ifndef PFS_WARM_H
#define PFS_WARM_H

#include <stddef.h>

struct pfs_fs;
struct pfs_warm;

/* fs is borrowed and must outlive the warm state. 0 or -ENOMEM. */
int pfs_warm_create(struct pfs_fs *fs, struct pfs_warm **out);
/* Cancels every job and waits for its threads. NULL allowed. */
void pfs_warm_destroy(struct pfs_warm *w);
/* One write of the control file. Returns 0, or -EINVAL (no command line,
 * a bad ID, mode or THREADS, a path line without #job, #start or #cancel
 * of an unknown job, #job for a job that already started), -EBUSY (16
 * jobs running), -ENOMEM. */
int pfs_warm_write(struct pfs_warm *w, const char *buf, size_t len);
/* The status lines into buf (cap bytes, NUL-terminated); their length.
 * w is a struct pfs_warm (a ctl.h renderer). */
size_t pfs_warm_render(void *w, char *buf, size_t cap);

#endif
