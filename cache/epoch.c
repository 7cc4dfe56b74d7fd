/* epoch.c - see epoch.h.
 *
 * State: gen[file] is the last epoch the file was read in (0: never),
 * with PEND set when it was read again in that epoch after 5/8 of it (a
 * candidate repeat: it then counts as read in the next epoch too, once
 * that begins). `state` packs (epoch << 32 | files read in it), `pend`
 * (epoch << 32 | candidate repeats in it); `seen` counts the files whose
 * gen ever left 0. A read of file f in epoch ep (our snapshot of state):
 *   f read in ep, not a candidate, the epoch not 5/8 done -> a re-read:
 *                       nothing changes.
 *   f read in ep, 5/8 done -> CAS gen[f] to ep|PEND, count it in pend;
 *                       the K-th candidate CASes state (ep, n) ->
 *                       (ep + 1, K): the candidates are its first files.
 *   f a candidate of ep already -> nothing.
 *   gen[f] newer than ep -> our snapshot is stale: reload, retry (never
 *                       move a file's gen back).
 *   otherwise        -> CAS gen[f] to ep; the winner counts the file in
 *                       `seen` if gen was 0, and in `state` if the epoch
 *                       has not moved meanwhile.
 * The CAS loops retry only when another thread made progress. A read that
 * races with an epoch change is attributed to the older epoch (its gen
 * says so), which is indistinguishable from it having come first. `seen`,
 * `pend` and the count in `state` are read at slightly different times: a
 * racing read can shift a threshold or a count by one file, which no
 * pattern can tell.
 */
#include <errno.h>
#include <stdlib.h>

#include "bcache.h"
#include "epoch.h"
#include "../util/atomic.h"
#include "../util/stats.h"

#define PEND 0x80000000u

struct pfs_epoch {
	uint32_t nfiles;
	uint32_t seen;   /* atomic: files read at least once */
	uint64_t state;  /* atomic: epoch << 32 | files read in it */
	uint64_t pend;   /* atomic: epoch << 32 | candidate repeats in it */
	uint32_t *gen;   /* atomic elements; nfiles of them */
	/* The demand counters: bases taken when an epoch began (all atomic). */
	uint64_t began;  /* the last epoch pfs_epoch_began said began */
	uint64_t base_hits, base_misses, base_stall_ns;
	uint64_t stall_ns;
};

int pfs_epoch_create(uint32_t nfiles, struct pfs_epoch **out)
{
	struct pfs_epoch *t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->gen = calloc(nfiles ? nfiles : 1, sizeof(*t->gen));
	if (!t->gen) {
		free(t);
		return -ENOMEM;
	}
	t->nfiles = nfiles;
	t->state = 1ull << 32;
	t->pend = 1ull << 32;
	*out = t;
	return 0;
}

void pfs_epoch_destroy(struct pfs_epoch *t)
{
	if (!t)
		return;
	free(t->gen);
	free(t);
}

/* 1 if an epoch that has read `n` files may end: most of those seen. */
static int epoch_done(const struct pfs_epoch *t, uint32_t n)
{
	uint64_t seen = pfs_load_acq(&t->seen);
	return (uint64_t)n * PFS_EPOCH_MOST_DEN >= seen * PFS_EPOCH_MOST_NUM;
}

/* Candidate repeats that end an epoch. */
static uint32_t confirm_need(const struct pfs_epoch *t)
{
	uint32_t k = pfs_load_acq(&t->seen) / PFS_EPOCH_CONFIRM_PER;
	return k < 1 ? 1 : k > PFS_EPOCH_CONFIRM_MAX ? PFS_EPOCH_CONFIRM_MAX : k;
}

/* 1 if generation g means "read in epoch ep" (not as a candidate of ep). */
static int read_in(uint32_t g, uint32_t ep)
{
	return g == ep || (ep > 1 && g == ((ep - 1) | PEND));
}

/* Counts one more candidate of epoch ep; the K-th opens ep + 1. Returns
 * the epoch the read belongs to. */
static uint64_t candidate(struct pfs_epoch *t, uint32_t ep)
{
	uint64_t p = pfs_load_acq(&t->pend), np;
	do
		np = (uint32_t)(p >> 32) == ep ? p + 1 : ((uint64_t)ep << 32 | 1);
	while (!__atomic_compare_exchange_n(&t->pend, &p, np, 0, __ATOMIC_ACQ_REL,
					    __ATOMIC_ACQUIRE));
	uint32_t cnt = (uint32_t)np, need = confirm_need(t);
	if (cnt < need)
		return ep;
	/* The first `need` candidates are the next epoch's first files... */
	uint64_t st = pfs_load_acq(&t->state);
	while ((uint32_t)(st >> 32) == ep &&
	       !__atomic_compare_exchange_n(&t->state, &st, (uint64_t)(ep + 1) << 32 | need, 0,
					    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		;
	/* ... and a later one (a reader racing with the change) is one more. */
	st = pfs_load_acq(&t->state);
	while (cnt > need && (uint32_t)(st >> 32) == ep + 1 &&
	       !__atomic_compare_exchange_n(&t->state, &st, st + 1, 0, __ATOMIC_ACQ_REL,
					    __ATOMIC_ACQUIRE))
		;
	return ep + 1;
}

uint64_t pfs_epoch_note_read(struct pfs_epoch *t, uint32_t file)
{
	uint64_t st = pfs_load_acq(&t->state);
	if (file >= t->nfiles)
		return st >> 32;
	for (;;) {
		uint32_t ep = (uint32_t)(st >> 32);
		uint32_t g = pfs_load_acq(&t->gen[file]);
		if (g == (ep | PEND))
			return ep; /* a candidate already */
		if (read_in(g, ep)) {
			if (!epoch_done(t, (uint32_t)st))
				return ep; /* a re-read inside the epoch */
			/* Read again, most files read: a candidate repeat. */
			if (!__atomic_compare_exchange_n(&t->gen[file], &g, ep | PEND, 0,
							 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
				st = pfs_load_acq(&t->state);
				continue;
			}
			return candidate(t, ep);
		}
		if (g != 0 && (int32_t)((g & ~PEND) - ep) >= 0) {
			st = pfs_load_acq(&t->state);
			continue; /* read in a newer epoch than our snapshot */
		}
		if (!__atomic_compare_exchange_n(&t->gen[file], &g, ep, 0,
						 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
			st = pfs_load_acq(&t->state);
			continue; /* another reader of the same file won */
		}
		if (g == 0)
			__atomic_add_fetch(&t->seen, 1, __ATOMIC_ACQ_REL);
		/* Count it, unless the epoch moved on meanwhile. */
		while ((uint32_t)(st >> 32) == ep &&
		       !__atomic_compare_exchange_n(&t->state, &st, st + 1, 0,
						    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			;
		return ep;
	}
}

uint64_t pfs_epoch_current(const struct pfs_epoch *t)
{
	return pfs_load_acq(&t->state) >> 32;
}

uint64_t pfs_epoch_files_read(const struct pfs_epoch *t)
{
	return (uint32_t)pfs_load_acq(&t->state);
}

uint64_t pfs_epoch_files_seen(const struct pfs_epoch *t)
{
	return pfs_load_acq(&t->seen);
}

int pfs_epoch_is_read(const struct pfs_epoch *t, uint32_t file)
{
	if (file >= t->nfiles)
		return 0;
	uint32_t epoch = (uint32_t)(pfs_load_acq(&t->state) >> 32);
	uint32_t g = pfs_load(&t->gen[file]);
	return read_in(g, epoch) || g == (epoch | PEND);
}

int pfs_epoch_began(struct pfs_epoch *t, uint64_t e)
{
	uint64_t seen = pfs_load(&t->began);
	if (e == seen || !__atomic_compare_exchange_n(&t->began, &seen, e, 0, __ATOMIC_RELAXED,
						       __ATOMIC_RELAXED))
		return 0;
	struct pfs_ram_counters ram;
	pfs_bcache_counters(&ram);
	pfs_store(&t->base_hits, ram.hits);
	pfs_store(&t->base_misses, ram.misses);
	pfs_store(&t->base_stall_ns, pfs_load(&t->stall_ns));
	return 1;
}

void pfs_epoch_add_stall(struct pfs_epoch *t, uint64_t ns)
{
	pfs_add(&t->stall_ns, ns);
}

void pfs_epoch_collect(void *ctx, struct pfs_stat_list *l)
{
	struct pfs_epoch *t = ctx;
	struct pfs_ram_counters ram;
	pfs_bcache_counters(&ram);
	uint64_t stall = pfs_load(&t->stall_ns);
	pfs_stat_list_add(l, "epoch.number", (double)pfs_epoch_current(t), 1);
	pfs_stat_list_add(l, "epoch.files_read", (double)pfs_epoch_files_read(t), 1);
	pfs_stat_list_add(l, "epoch.files_seen", (double)pfs_epoch_files_seen(t), 1);
	pfs_stat_list_add(l, "epoch.demand_hits", (double)(ram.hits - pfs_load(&t->base_hits)),
			  1);
	pfs_stat_list_add(l, "epoch.demand_misses",
			  (double)(ram.misses - pfs_load(&t->base_misses)), 1);
	pfs_stat_list_add(l, "epoch.stall_seconds",
			  (double)(stall - pfs_load(&t->base_stall_ns)) / 1e9, 1);
	pfs_stat_list_add(l, "stall_seconds", (double)stall / 1e9, 0);
}
