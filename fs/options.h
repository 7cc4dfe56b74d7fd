/* options.h - the command line and the table of configuration keys.
 *
 * One flat namespace of keys: the same key means the same thing in
 * `-o key=value` and (later) in the config file, and both go through
 * pfs_opts_set(). Defaults live in pfs_opts_init(); validation of each
 * value happens as it is set, so an error names its key.
 */
#ifndef PFS_OPTIONS_H
#define PFS_OPTIONS_H

#include <stddef.h>
#include <stdint.h>

struct fuse_args;

struct pfs_opts {
	char *origin;          /* owned */
	char *mountpoint;      /* owned */
	int foreground, debug;
	int show_help, show_version;
	uint64_t ram_size;     /* bytes */
	uint64_t block_size;   /* bytes */
	double timeout;        /* seconds per origin attempt */
	uint64_t retries;      /* attempts after the first */
	char *manifest, *endpoint, *region; /* owned, or NULL */
	int s3_path_style;
	uint64_t max_threads;  /* FUSE worker threads */
	int allow_other, default_permissions;
};

void pfs_opts_init(struct pfs_opts *o);
void pfs_opts_finish(struct pfs_opts *o);

/* Sets one key; `value` is NULL for a bare flag ("s3_path_style").
 * Returns 0, or -EINVAL with a message naming the key in err. Unknown keys
 * are -ENOENT. */
int pfs_opts_set(struct pfs_opts *o, const char *key, const char *value,
		 char *err, size_t errcap);

/* Parses argv (mount order or the mount.fuse3 order). Fills `fuse` with
 * the arguments for fuse_session_new(). Returns 0, or -EINVAL with a
 * message in err. */
int pfs_opts_parse(struct pfs_opts *o, int argc, char **argv,
		   struct fuse_args *fuse, char *err, size_t errcap);

void pfs_opts_usage(const char *prog);

#endif
