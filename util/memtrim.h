/* memtrim.h - keeps the daemon's resident memory near what it uses.
 *
 * glibc's malloc keeps what was freed: each of its arenas (up to 8 per
 * core, taken by a few hundred FUSE and prefetch threads) holds freed
 * block buffers for reuse, and its dynamic mmap threshold soon moves 1 MiB
 * buffers out of mmap into those arenas. With ram_size=16M the daemon sat
 * at over 100 MiB resident after a minute of 64 random readers. So: few
 * arenas (pfs_memtrim_init), and a thread that returns free arena pages to
 * the kernel every period (malloc_trim) while the daemon runs.
 * Call pfs_memtrim_init before creating threads; the others from one
 * thread (main).
 */
#ifndef PFS_MEMTRIM_H
#define PFS_MEMTRIM_H

/* Arenas at most (M_ARENA_MAX). */
void pfs_memtrim_init(int arenas);
/* Starts the trimming thread: malloc_trim(0) every `period_s` seconds.
 * Returns 0 or a negative errno. */
int pfs_memtrim_start(double period_s);
/* Stops it (no-op if not started). */
void pfs_memtrim_stop(void);

#endif
