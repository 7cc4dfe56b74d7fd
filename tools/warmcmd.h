/* warmcmd.h - `prestofs warm MOUNT [PATH...] [--from FILE|-] [--check]
 * [-j N] [--json]`: fills a mount's cache before a job starts, or reports
 * how much of a set of files is cached, through the daemon's control file
 * MOUNT/.prestofs/warm (fs/warm.h has the protocol and the rules: the SSD
 * tier up to its budget, the RAM tier only within its free room).
 *
 * PATHs are relative to MOUNT, or absolute paths inside it; files or
 * directories (their subtrees); none means the whole mount. --from reads
 * more, one per line ('-': stdin). Progress: a bar on stderr when it is a
 * terminal (files, bytes, rate, ETA), nothing otherwise; the result is one
 * line on stdout (or a JSON object with --json). SIGINT/SIGTERM cancel the
 * job in the daemon and wait for it to stop. Runs in the calling process.
 */
#ifndef PFS_TOOLS_WARMCMD_H
#define PFS_TOOLS_WARMCMD_H

/* argv[1] is "warm". Returns the process exit status: 0 every block of
 * every file is cached; 3 not all of it fit (or, with --check, is
 * cached); 1 an error (not a prestofs mount, a path the dataset lacks, a
 * file the origin failed); 2 usage; 130 interrupted. */
int pfs_warmcmd_main(int argc, char **argv);

#endif
