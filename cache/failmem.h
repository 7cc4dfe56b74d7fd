/* failmem.h - what the origin could not serve, remembered for a while.
 *
 * A file whose block failed (the origin answered 404/403, a size or a
 * version other than listed, or the retries ran out) is remembered with
 * its error until a deadline, so a broken object costs the origin a
 * handful of requests, not one per block per pass:
 *  - answers that will not change by retrying (-ENOENT, -EACCES, -ESTALE)
 *    fail every fill of the file at once, from PFS_FAILMEM_PERMANENT_S,
 *    doubling while they repeat, up to PFS_FAILMEM_MAX_S;
 *  - a transient failure (-EIO: retries ran out) fails the next fill of
 *    the file at once, once, within PFS_FAILMEM_TRANSIENT_S: that is the
 *    kernel's second try of the same failed read(2), which must not pay a
 *    second chain of retries. A later read asks the origin again, so reads
 *    work as soon as the origin comes back.
 * While an entry lasts, background fill, readahead and order hints skip
 * the file (pfs_failmem_check; they never consume a one-shot entry). A
 * success clears the entry. Memory is bounded: PFS_FAILMEM_SLOTS files at
 * most; when full, the entry nearest its deadline is replaced.
 *
 * Thread-safe: one mutex, taken only while something is remembered (a
 * healthy origin costs one atomic load per call).
 */
#ifndef PFS_FAILMEM_H
#define PFS_FAILMEM_H

#include <stdint.h>

#define PFS_FAILMEM_TRANSIENT_S 2
#define PFS_FAILMEM_PERMANENT_S 60
#define PFS_FAILMEM_MAX_S 600
#define PFS_FAILMEM_SLOTS 4096

struct pfs_failmem;

int pfs_failmem_create(struct pfs_failmem **out);
void pfs_failmem_destroy(struct pfs_failmem *m);

/* 0 if `key` may be fetched at now_ns, else the remembered negative errno.
 * pfs_failmem_take() is the same for a fill, and consumes a transient
 * entry; pfs_failmem_check() only looks (for the prefetcher). */
int pfs_failmem_take(struct pfs_failmem *m, uint64_t key, uint64_t now_ns);
int pfs_failmem_check(struct pfs_failmem *m, uint64_t key, uint64_t now_ns);
/* A fetch of `key` failed with err (negative errno). Errors that say
 * nothing about the object (-ENOMEM, -ENOSPC, -EAGAIN...) are ignored. */
void pfs_failmem_note(struct pfs_failmem *m, uint64_t key, int err, uint64_t now_ns);
/* A fetch of `key` succeeded: forget it. */
void pfs_failmem_clear(struct pfs_failmem *m, uint64_t key);
/* Files remembered now (including expired entries not yet reused). */
uint64_t pfs_failmem_count(struct pfs_failmem *m);

#endif
