/* budget.c - see budget.h.
 *
 * Arrival order is kept with tickets: each take draws the next ticket and
 * waits until it is the one served and its bytes fit (or nothing is held);
 * it then holds them and lets the next ticket be served, which may fit
 * too. A give wakes every waiter; only the one served can go on.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "budget.h"

struct pfs_budget {
	pthread_mutex_t lock;
	pthread_cond_t changed;
	uint64_t limit;
	/* guarded by lock */
	uint64_t used, peak, jobs, waits, waiting;
	uint64_t next_ticket, serving;
};

int pfs_budget_create(uint64_t limit, struct pfs_budget **out)
{
	struct pfs_budget *b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	pthread_mutex_init(&b->lock, NULL);
	pthread_cond_init(&b->changed, NULL);
	b->limit = limit ? limit : 1;
	*out = b;
	return 0;
}

void pfs_budget_destroy(struct pfs_budget *b)
{
	if (!b)
		return;
	pthread_mutex_destroy(&b->lock);
	pthread_cond_destroy(&b->changed);
	free(b);
}

static int fits(const struct pfs_budget *b, uint64_t bytes)
{
	return b->used == 0 || (bytes <= b->limit && b->used <= b->limit - bytes);
}

int pfs_budget_take(struct pfs_budget *b, uint64_t bytes)
{
	int waited = 0;
	pthread_mutex_lock(&b->lock);
	uint64_t ticket = b->next_ticket++;
	while (ticket != b->serving || !fits(b, bytes)) {
		if (!waited) {
			waited = 1;
			b->waits++;
			b->waiting++;
		}
		pthread_cond_wait(&b->changed, &b->lock);
	}
	if (waited)
		b->waiting--;
	b->used += bytes;
	if (b->used > b->peak)
		b->peak = b->used;
	b->jobs++;
	b->serving++;
	pthread_cond_broadcast(&b->changed); /* the next ticket may fit too */
	pthread_mutex_unlock(&b->lock);
	return waited;
}

void pfs_budget_give(struct pfs_budget *b, uint64_t bytes)
{
	pthread_mutex_lock(&b->lock);
	b->used -= bytes < b->used ? bytes : b->used;
	pthread_cond_broadcast(&b->changed);
	pthread_mutex_unlock(&b->lock);
}

void pfs_budget_stats(struct pfs_budget *b, struct pfs_budget_stats *s)
{
	pthread_mutex_lock(&b->lock);
	*s = (struct pfs_budget_stats){b->limit, b->used, b->peak, b->jobs, b->waits, b->waiting};
	pthread_mutex_unlock(&b->lock);
}
