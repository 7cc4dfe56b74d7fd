/* profile.h - `prestofs profile MOUNT [SUBDIR]`: PRESTO's profiler.
 *
 * Samples JPEGs under a mounted prestofs tree and measures, for each
 * preprocessing strategy (raw JPEG, and the views decode, resize=256 and
 * resize=256,crop=224, each stored plain and zstd-compressed), the storage
 * per sample, the one-time preprocessing cost, and the cost a data loader
 * still pays per sample; prints a table on stdout and a recommendation.
 * Runs single-threaded in the calling process; needs no daemon internals
 * (it reads files through the mount and runs the transform in-process).
 */
#ifndef PFS_FS_PROFILE_H
#define PFS_FS_PROFILE_H

/* argv[1] is "profile". Returns the process exit status: 0 done, 1 error
 * (not a prestofs mount, no JPEGs, I/O), 2 usage. Prints its own messages. */
int pfs_profile_main(int argc, char **argv);

#endif
