/* stat.h - `prestofs stat MOUNT [-i SECONDS] [-c COUNT] [--json]`: what a
 * mount does, live, like iostat or `juicefs stats`.
 *
 * Reads MOUNT/.prestofs/metrics (the Prometheus text the daemon renders)
 * every interval and prints, per interval: reads/s and MB/s served (of
 * dataset files and views: its own reads of the metrics file do not
 * count), RAM
 * and SSD hit %, origin requests/s, MB/s and in flight, prefetched MB/s
 * used and wasted, stall seconds per second, the epoch and the live order
 * streams. A table with a header every 20 rows, or with --json one object
 * per line that also holds the counters the rates came from. Runs in the
 * calling process; needs no daemon internals.
 */
#ifndef PFS_TOOLS_STAT_H
#define PFS_TOOLS_STAT_H

/* argv[1] is "stat". Returns the process exit status: 0 done (COUNT rows,
 * or SIGINT/SIGTERM), 1 error (not a prestofs mount, the mount went away),
 * 2 usage. Prints its own messages. */
int pfs_stat_main(int argc, char **argv);

#endif
