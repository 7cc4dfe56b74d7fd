/* memtrim.c - see memtrim.h. */
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <time.h>

#include "memtrim.h"

static pthread_t thread;
static int started;
static double period;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER; /* CLOCK_REALTIME */
static int stop;                                        /* guarded by lock */

void pfs_memtrim_init(int arenas)
{
	mallopt(M_ARENA_MAX, arenas);
}

static void *trimmer(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&lock);
	while (!stop) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		long ns = ts.tv_nsec + (long)((period - (double)(long)period) * 1e9);
		ts.tv_sec += (time_t)period + ns / 1000000000;
		ts.tv_nsec = ns % 1000000000;
		if (pthread_cond_timedwait(&wake, &lock, &ts) == ETIMEDOUT && !stop) {
			pthread_mutex_unlock(&lock);
			malloc_trim(0);
			pthread_mutex_lock(&lock);
		}
	}
	pthread_mutex_unlock(&lock);
	return NULL;
}

int pfs_memtrim_start(double period_s)
{
	period = period_s > 0.01 ? period_s : 0.01;
	stop = 0;
	int rc = pthread_create(&thread, NULL, trimmer, NULL);
	if (rc)
		return -rc;
	started = 1;
	return 0;
}

void pfs_memtrim_stop(void)
{
	if (!started)
		return;
	pthread_mutex_lock(&lock);
	stop = 1;
	pthread_cond_signal(&wake);
	pthread_mutex_unlock(&lock);
	pthread_join(thread, NULL);
	started = 0;
}
