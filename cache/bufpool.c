/* bufpool.c - see bufpool.h. Idle buffers of one class form a LIFO list
 * threaded through their first bytes (the most recently used pages are
 * the most likely still resident and cached). */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "bufpool.h"

#define NCLASSES 48
#define PAGE 4096u
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

/* Under AddressSanitizer every buffer comes from malloc, so overruns of a
 * block buffer are still caught (ASan cannot see into our mappings). */
#ifdef __SANITIZE_ADDRESS__
#define MIN_POOLED SIZE_MAX
#else
#define MIN_POOLED PFS_BUFPOOL_MIN
#endif

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static void *idle_head[NCLASSES]; /* guarded by lock */
static uint64_t idle_bytes;       /* guarded by lock; read racily for stats */
static uint64_t idle_lent;        /* guarded by lock: the cap's lent part */

/* Class k holds buffers of PFS_BUFPOOL_MIN << k bytes. */
static unsigned class_of(size_t len, size_t *size)
{
	unsigned k = 0;
	size_t s = PFS_BUFPOOL_MIN;
	while (s < len && k + 1 < NCLASSES) {
		s <<= 1;
		k++;
	}
	*size = s;
	return k;
}

void *pfs_bufpool_alloc(size_t len)
{
	if (len < MIN_POOLED)
		return malloc(len ? len : 1);
	size_t size;
	unsigned k = class_of(len, &size);
	if (size < len)
		return NULL; /* larger than any class */
	pthread_mutex_lock(&lock);
	void *p = idle_head[k];
	if (p) {
		idle_head[k] = *(void **)p;
		idle_bytes -= size;
	}
	pthread_mutex_unlock(&lock);
	if (p)
		return p;
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	/* The caller writes all of len at once (a copy out of curl's buffer):
	 * fault those pages in with one call rather than one trap per page,
	 * which costs most on a virtual machine. Pages past len stay
	 * unmapped (the RAM budget counts len). Older kernels say EINVAL:
	 * the pages then fault in as they are written. */
	madvise(p, (len + PAGE - 1) & ~(size_t)(PAGE - 1), MADV_POPULATE_WRITE);
	return p;
}

void pfs_bufpool_free(void *p, size_t len)
{
	if (!p)
		return;
	if (len < MIN_POOLED) {
		free(p);
		return;
	}
	size_t size;
	unsigned k = class_of(len, &size);
	pthread_mutex_lock(&lock);
	if (idle_bytes + size <= PFS_BUFPOOL_IDLE_MAX + idle_lent) {
		*(void **)p = idle_head[k];
		idle_head[k] = p;
		idle_bytes += size;
		p = NULL;
	}
	pthread_mutex_unlock(&lock);
	if (p)
		munmap(p, size);
}

size_t pfs_bufpool_size(size_t len)
{
	size_t size;
	if (len < MIN_POOLED)
		return 0;
	class_of(len, &size);
	return size < len ? 0 : size;
}

uint64_t pfs_bufpool_idle(void)
{
	pthread_mutex_lock(&lock);
	uint64_t n = idle_bytes;
	pthread_mutex_unlock(&lock);
	return n;
}

void pfs_bufpool_lend(uint64_t bytes)
{
	pthread_mutex_lock(&lock);
	idle_lent += bytes;
	pthread_mutex_unlock(&lock);
}

/* An idle buffer taken off its list to be unmapped after the unlock. */
struct dropped {
	struct dropped *next;
	size_t size;
};

void pfs_bufpool_unlend(uint64_t bytes)
{
	struct dropped *drop = NULL, *d;
	void *p;

	pthread_mutex_lock(&lock);
	idle_lent -= bytes < idle_lent ? bytes : idle_lent;
	for (unsigned k = NCLASSES; k-- > 0;)
		while (idle_bytes > PFS_BUFPOOL_IDLE_MAX + idle_lent && (p = idle_head[k])) {
			idle_head[k] = *(void **)p;
			idle_bytes -= (size_t)PFS_BUFPOOL_MIN << k;
			d = p;
			d->size = (size_t)PFS_BUFPOOL_MIN << k;
			d->next = drop;
			drop = d;
		}
	pthread_mutex_unlock(&lock);
	while ((d = drop)) {
		drop = d->next;
		munmap(d, d->size);
	}
}
