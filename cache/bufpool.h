/* bufpool.h - block buffers that go back to the kernel or get reused.
 *
 * Block buffers (tens of KiB to a few MiB, allocated and freed on every
 * miss by a few hundred threads) are what grew the daemon far past its RAM
 * budget under glibc malloc: freed buffers stayed in per-thread arenas,
 * fragmented, and its dynamic mmap threshold moved 1 MiB buffers out of
 * mmap into them. Buffers of PFS_BUFPOOL_MIN bytes or more are mmap'd
 * instead, in power-of-two size classes; a freed one is kept for reuse
 * (its pages already faulted in: no page faults, no syscall) while the
 * idle ones total at most PFS_BUFPOOL_IDLE_MAX bytes plus what is lent
 * (below), else unmapped. So what the process holds for blocks is what is
 * in use plus that idle cap.
 * Smaller buffers come from malloc, and all of them do under
 * AddressSanitizer (so it still sees every overrun).
 *
 * Process-wide; thread-safe (one mutex, held for a list push or pop).
 */
#ifndef PFS_BUFPOOL_H
#define PFS_BUFPOOL_H

#include <stddef.h>
#include <stdint.h>

#define PFS_BUFPOOL_MIN (16u << 10)
#define PFS_BUFPOOL_IDLE_MAX (8u << 20)

/* A buffer of at least len bytes (len 0 is allowed), or NULL. */
void *pfs_bufpool_alloc(size_t len);
/* Gives back a buffer from pfs_bufpool_alloc(len) with the same len. NULL ok. */
void pfs_bufpool_free(void *p, size_t len);
/* The bytes pfs_bufpool_alloc(len) maps (a power of two), or 0 when such
 * a buffer comes from malloc (small, or under AddressSanitizer). */
size_t pfs_bufpool_size(size_t len);
/* Idle bytes held for reuse now. */
uint64_t pfs_bufpool_idle(void);
/* A module that bounds buffers of its own lends that bound to the idle
 * cap while it lives: the SSD tier's write queue (queue_max), whose writer
 * frees the blocks it held in bursts that the fill path then maps anew
 * (munmap's TLB shootdowns and first-touch page faults were 10% of a cold
 * epoch's CPU with a RAM tier smaller than the data). unlend trims the
 * idle buffers down to the lower cap. */
void pfs_bufpool_lend(uint64_t bytes);
void pfs_bufpool_unlend(uint64_t bytes);

#endif
