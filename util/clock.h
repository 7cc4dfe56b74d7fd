/* clock.h - the monotonic clock, for durations and pacing. Any thread. */
#ifndef PFS_CLOCK_H
#define PFS_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t pfs_clock_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline double pfs_clock_s(void)
{
	return (double)pfs_clock_ns() / 1e9;
}

#endif
