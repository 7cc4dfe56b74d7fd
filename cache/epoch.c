/* epoch.c - see epoch.h.
 *
 * State: gen[file] is the last epoch the file was read in (0: never);
 * `state` packs (epoch << 32 | files read in it). A read of file f:
 *   gen[f] == epoch  -> a repeat: CAS state (epoch, n) -> (epoch + 1, 0),
 *                       whoever wins; then retry as a read in epoch + 1.
 *   otherwise        -> CAS gen[f] to epoch; the winner counts the file in
 *                       `state` if the epoch has not moved meanwhile.
 * Both CAS loops retry only when another thread made progress. A read that
 * races with an epoch change is attributed to the older epoch (its gen
 * says so), which is indistinguishable from it having come first.
 * Epoch numbers are 32-bit: 4 billion epochs.
 */
#include <errno.h>
#include <stdlib.h>

#include "epoch.h"

struct pfs_epoch {
	uint32_t nfiles;
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

uint64_t pfs_epoch_note_read(struct pfs_epoch *t, uint32_t file)
{
	uint64_t st = __atomic_load_n(&t->state, __ATOMIC_ACQUIRE);
	if (file >= t->nfiles)
		return st >> 32;
	for (;;) {
		uint32_t ep = (uint32_t)(st >> 32);
		uint32_t g = __atomic_load_n(&t->gen[file], __ATOMIC_ACQUIRE);
		if (g == ep) {
			/* Read again in this epoch: the next one begins. */
			uint64_t next = (uint64_t)(ep + 1) << 32;
			__atomic_compare_exchange_n(&t->state, &st, next, 0,
						    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
			st = __atomic_load_n(&t->state, __ATOMIC_ACQUIRE);
			continue;
		}
		if (!__atomic_compare_exchange_n(&t->gen[file], &g, ep, 0,
						 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
			st = __atomic_load_n(&t->state, __ATOMIC_ACQUIRE);
			continue; /* another reader of the same file won */
		}
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
	return __atomic_load_n(&t->state, __ATOMIC_ACQUIRE) >> 32;
}

uint64_t pfs_epoch_files_read(const struct pfs_epoch *t)
{
	return (uint32_t)__atomic_load_n(&t->state, __ATOMIC_ACQUIRE);
}

int pfs_epoch_is_read(const struct pfs_epoch *t, uint32_t file)
{
	if (file >= t->nfiles)
		return 0;
	uint32_t epoch = (uint32_t)(__atomic_load_n(&t->state, __ATOMIC_ACQUIRE) >> 32);
	return __atomic_load_n(&t->gen[file], __ATOMIC_RELAXED) == epoch;
}
