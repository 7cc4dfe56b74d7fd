/* failmem.c - see failmem.h. A small open-addressed table; a slot is free
 * when its deadline is 0. Expired entries keep their streak until reused,
 * so a file that keeps failing backs off further each time. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "failmem.h"
#include "../util/atomic.h"

#define SEC 1000000000ull
#define PROBE 16

struct slot {
	uint64_t key;
	uint64_t until_ns; /* 0: free */
	int err;
	unsigned streak;   /* consecutive failures */
	int taken;         /* a transient entry's one answer was given */
};

struct pfs_failmem {
	pthread_mutex_t lock;
	struct slot slots[PFS_FAILMEM_SLOTS]; /* guarded by lock */
	uint64_t used;                        /* atomic: slots in use */
};

int pfs_failmem_create(struct pfs_failmem **out)
{
	struct pfs_failmem *m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	pthread_mutex_init(&m->lock, NULL);
	*out = m;
	return 0;
}

void pfs_failmem_destroy(struct pfs_failmem *m)
{
	if (!m)
		return;
	pthread_mutex_destroy(&m->lock);
	free(m);
}

static size_t home(uint64_t key)
{
	key ^= key >> 33;
	key *= 0xff51afd7ed558ccdull;
	key ^= key >> 33;
	return (size_t)(key % PFS_FAILMEM_SLOTS);
}

/* The slot holding key, or NULL. Lock held. */
static struct slot *find(struct pfs_failmem *m, uint64_t key)
{
	size_t h = home(key);
	for (size_t i = 0; i < PROBE; i++) {
		struct slot *s = &m->slots[(h + i) % PFS_FAILMEM_SLOTS];
		if (s->until_ns && s->key == key)
			return s;
	}
	return NULL;
}

/* Lock held. Frees a slot. */
static void drop(struct pfs_failmem *m, struct slot *s)
{
	*s = (struct slot){0};
	pfs_sub(&m->used, 1);
}

static int lookup(struct pfs_failmem *m, uint64_t key, uint64_t now_ns, int take)
{
	if (!pfs_load(&m->used))
		return 0;
	int rc = 0;
	pthread_mutex_lock(&m->lock);
	struct slot *s = find(m, key);
	if (s && now_ns < s->until_ns && !s->taken) {
		rc = s->err;
		if (take && s->err == -EIO)
			s->taken = 1; /* the one retry it answers */
	}
	pthread_mutex_unlock(&m->lock);
	return rc;
}

int pfs_failmem_take(struct pfs_failmem *m, uint64_t key, uint64_t now_ns)
{
	return lookup(m, key, now_ns, 1);
}

int pfs_failmem_check(struct pfs_failmem *m, uint64_t key, uint64_t now_ns)
{
	return lookup(m, key, now_ns, 0);
}

void pfs_failmem_note(struct pfs_failmem *m, uint64_t key, int err, uint64_t now_ns)
{
	int permanent = err == -ENOENT || err == -EACCES || err == -ESTALE;
	if (!permanent && err != -EIO)
		return;
	pthread_mutex_lock(&m->lock);
	struct slot *s = find(m, key);
	if (!s) {
		/* A free slot in the probe window, else the one nearest its
		 * deadline (expired ones first). */
		size_t h = home(key);
		for (size_t i = 0; i < PROBE; i++) {
			struct slot *c = &m->slots[(h + i) % PFS_FAILMEM_SLOTS];
			if (!c->until_ns) {
				s = c;
				break;
			}
			if (!s || c->until_ns < s->until_ns)
				s = c;
		}
		if (s->until_ns)
			pfs_sub(&m->used, 1);
		*s = (struct slot){.key = key};
		pfs_add(&m->used, 1);
	}
	/* A failure noted by a fill that started before the last one ended
	 * (parallel blocks of one file) is the same failure: one streak step
	 * per deadline. */
	if (now_ns >= s->until_ns || s->err != err)
		s->streak++;
	uint64_t max = (uint64_t)PFS_FAILMEM_MAX_S * SEC;
	uint64_t d = (uint64_t)PFS_FAILMEM_PERMANENT_S * SEC;
	for (unsigned i = 1; i < s->streak && d < max; i++)
		d *= 2;
	if (d > max)
		d = max;
	if (!permanent) { /* see failmem.h: one answer, soon */
		d = (uint64_t)PFS_FAILMEM_TRANSIENT_S * SEC;
		s->until_ns = 0;
	}
	s->taken = 0;
	s->err = err;
	if (now_ns + d > s->until_ns)
		s->until_ns = now_ns + d;
	pthread_mutex_unlock(&m->lock);
}

void pfs_failmem_clear(struct pfs_failmem *m, uint64_t key)
{
	if (!pfs_load(&m->used))
		return;
	pthread_mutex_lock(&m->lock);
	struct slot *s = find(m, key);
	if (s)
		drop(m, s);
	pthread_mutex_unlock(&m->lock);
}

uint64_t pfs_failmem_count(struct pfs_failmem *m)
{
	return pfs_load(&m->used);
}
