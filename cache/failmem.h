/* failmem.h - what the origin could not serve, remembered for a while.
 *
 * A file whose block failed (the origin answered 404/403, a size or a
 * version other than listed, or the retries ran out) is remembered with
 * its error until a deadline. Meanwhile every fill of it fails at once
 * with that error: the kernel's second try of a failed read does not pay a
 * second retry chain, and background fill, readahead and order hints skip
 * it, so a broken object costs the origin a handful of requests, not one
 * per block per pass.
 *
 * Deadlines back off per file: transient failures (-EIO) start at
 * PFS_FAILMEM_TRANSIENT_S and double while they repeat, up to
 * PFS_FAILMEM_TRANSIENT_MAX_S (so a file is tried again soon after the
 * origin comes back); answers that will not change by retrying (-ENOENT,
 * -EACCES, -ESTALE) start at PFS_FAILMEM_PERMANENT_S, up to
 * PFS_FAILMEM_MAX_S. A success clears
 * the entry. Memory is bounded: PFS_FAILMEM_SLOTS files at most; when
 * full, the entry nearest its deadline is replaced.
 *
 * Thread-safe: one mutex; pfs_failmem_check() takes no lock while
 * nothing is remembered (the common case on a healthy origin).
 */
#ifndef PFS_FAILMEM_H
#define PFS_FAILMEM_H

#include <stdint.h>

#define PFS_FAILMEM_TRANSIENT_S 2
#define PFS_FAILMEM_PERMANENT_S 60
#define PFS_FAILMEM_MAX_S 600
#define PFS_FAILMEM_TRANSIENT_MAX_S 30
#define PFS_FAILMEM_SLOTS 4096

struct pfs_failmem;

int pfs_failmem_create(struct pfs_failmem **out);
void pfs_failmem_destroy(struct pfs_failmem *m);

/* 0 if `key` may be fetched at now_ns, else the remembered negative errno. */
int pfs_failmem_check(struct pfs_failmem *m, uint64_t key, uint64_t now_ns);
/* A fetch of `key` failed with err (negative errno). Errors that say
 * nothing about the object (-ENOMEM, -ENOSPC, -EAGAIN...) are ignored. */
void pfs_failmem_note(struct pfs_failmem *m, uint64_t key, int err, uint64_t now_ns);
/* A fetch of `key` succeeded: forget it. */
void pfs_failmem_clear(struct pfs_failmem *m, uint64_t key);
/* Files remembered now (including expired entries not yet reused). */
uint64_t pfs_failmem_count(struct pfs_failmem *m);

#endif
