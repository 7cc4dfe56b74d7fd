/* util/budget.h - a memory budget that jobs wait for.
 *
 * A job declares the bytes it will hold (an estimate, taken as exact),
 * waits until they fit under the limit, holds them while it runs, and
 * gives them back. Waiters are served first come, first served, so a large
 * job is not passed over forever by small ones; a job larger than the
 * whole limit runs alone, once nothing else holds any bytes. Used by
 * fs/views.c to bound the sources, decoded pixels and outputs of the
 * transforms running at once.
 *
 * Threads: create and destroy on one thread, with no call running; take,
 * give and stats from any number of threads. One internal lock and
 * condition variable; nothing else is done while it is held. Memory: one
 * small struct.
 */
#ifndef PFS_UTIL_BUDGET_H
#define PFS_UTIL_BUDGET_H

#include <stdint.h>

struct pfs_budget;

/* limit: bytes that may be held at once (0 acts as 1: jobs run one at a
 * time). 0, or -ENOMEM. */
int pfs_budget_create(uint64_t limit, struct pfs_budget **out);
void pfs_budget_destroy(struct pfs_budget *b);

/* Waits, in arrival order, until `bytes` fit beside what is held (or
 * nothing is held), then holds them. Never fails; returns 1 if it had to
 * wait, else 0. Each take is matched by one give of the same bytes. */
int pfs_budget_take(struct pfs_budget *b, uint64_t bytes);
void pfs_budget_give(struct pfs_budget *b, uint64_t bytes);

struct pfs_budget_stats {
	uint64_t limit;
	uint64_t used;    /* held now */
	uint64_t peak;    /* most held at once */
	uint64_t jobs;    /* takes so far */
	uint64_t waits;   /* takes that waited */
	uint64_t waiting; /* takes waiting now */
};
void pfs_budget_stats(struct pfs_budget *b, struct pfs_budget_stats *s);

#endif
