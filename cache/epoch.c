/* epoch.c - see epoch.h.
 *
 * State: gen[file] is the last epoch the file was read in (0: never);
 * `state` packs (epoch << 32 | files read in it); `seen` counts the files
 * whose gen ever left 0. A read of file f:
 *   gen[f] == epoch  -> a repeat. If the epoch has read 5/8 of `seen`:
 *                       CAS state (epoch, n) -> (epoch + 1, 0), whoever
 *                       wins, then retry as a read in epoch + 1. Else a
 *                       re-read inside the epoch: nothing changes.
 *   gen[f] newer     -> our snapshot of state is stale: reload, retry
 *                       (never move a file's gen back).
 *   otherwise        -> CAS gen[f] to epoch; the winner counts the file in
 *                       `seen` if gen was 0, and in `state` if the epoch
 *                       has not moved meanwhile.
 * The CAS loops retry only when another thread made progress. A read that
 * races with an epoch change is attributed to the older epoch (its gen
 * says so), which is indistinguishable from it having come first. `seen`
 * and the count in `state` are read at slightly different times: a racing
 * read can shift the threshold by one file, which no pattern can tell.
 * Epoch numbers are 32-bit: 4 billion epochs.
 */
#include <errno.h>
#include <stdlib.h>

#include "epoch.h"
#include "../util/atomic.h"
#include "../util/stats.h"

struct pfs_epoch {
	uint32_t nfiles;
	uint32_t seen;   /* atomic: files read at least once */
	uint64_t state;  /* atomic: epoch << 32 | files read in it */
	uint32_t *gen;   /* atomic elements; nfiles of them */
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

uint64_t pfs_epoch_note_read(struct pfs_epoch *t, uint32_t file)
{
	uint64_t st = pfs_load_acq(&t->state);
	if (file >= t->nfiles)
		return st >> 32;
	for (;;) {
		uint32_t ep = (uint32_t)(st >> 32);
		uint32_t g = pfs_load_acq(&t->gen[file]);
		if (g == ep) {
			if (!epoch_done(t, (uint32_t)st))
				return ep; /* a re-read inside the epoch */
			/* Read again, most files read: the next epoch begins. */
			uint64_t next = (uint64_t)(ep + 1) << 32;
			__atomic_compare_exchange_n(&t->state, &st, next, 0,
						    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
			st = pfs_load_acq(&t->state);
			continue;
		}
		if (g != 0 && (int32_t)(g - ep) > 0) {
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
	return pfs_load(&t->gen[file]) == epoch;
}

void pfs_epoch_collect(void *ctx, struct pfs_stat_list *l)
{
	const struct pfs_epoch *t = ctx;
	pfs_stat_list_add(l, "epoch.number", (double)pfs_epoch_current(t), 1);
	pfs_stat_list_add(l, "epoch.files_read", (double)pfs_epoch_files_read(t), 1);
	pfs_stat_list_add(l, "epoch.files_seen", (double)pfs_epoch_files_seen(t), 1);
}
