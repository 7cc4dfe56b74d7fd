/* options.h - the command line and the table of configuration keys.
 *
 * One flat namespace of keys: the same key means the same thing in
 * `-o key=value` and in the configuration file (tools/config.h), and both go
 * through pfs_opts_set(). Each key belongs to one section of the file
 * ([origin], [cache], [prefetch], [mount]); key names are unique across
 * sections. Defaults live in pfs_opts_init(); validation of each value
 * happens as it is set, so an error names its key.
 *
 * Precedence: a key given with -o wins over the configuration file,
 * whatever their order on the command line (pfs_opts_parse() records
 * which keys -o set and the file skips them).
 *
 * Everything here runs at startup, on one thread.
 */
#ifndef PFS_OPTIONS_H
#define PFS_OPTIONS_H

#include <stddef.h>
#include <stdint.h>

struct fuse_args;

/* The RAM tier's replacement policy and resident-set preference (see
 * cache/policy.h for their meaning). cache/policy.h defines the same enums
 * under the same guard, so one definition exists whichever header comes
 * first; the two must stay identical. */
#include "../cache/policy.h" /* enum pfs_policy, enum pfs_resident */
/* Compression of blocks in the SSD tier. */
enum pfs_compress { PFS_COMPRESS_OFF, PFS_COMPRESS_ZSTD, PFS_COMPRESS_AUTO };

struct pfs_opts {
	char *origin;          /* owned */
	char *mountpoint;      /* owned */
	char *config;          /* owned, or NULL: the -o config= file */
	int foreground, debug;
	int show_help, show_version;
	/* [origin] */
	char *manifest, *endpoint, *region; /* owned, or NULL */
	int s3_path_style;
	int allow_empty;       /* S3: a prefix with no objects mounts empty */
	double timeout;        /* seconds per origin attempt */
	uint64_t retries;      /* attempts after the first */
	/* [cache] */
	uint64_t ram_size;     /* bytes */
	char *ssd_dir;         /* owned, absolute path, or NULL: no SSD tier */
	uint64_t ssd_size;     /* bytes; 0 = 90% of the free space at ssd_dir */
	enum pfs_compress ssd_compress;
	int ssd_zstd_level;    /* 1..19; the LEVEL of zstd:LEVEL, else 3 */
	uint64_t block_size;   /* bytes */
	enum pfs_policy policy;
	enum pfs_resident resident;
	/* [prefetch] */
	int prefetch;          /* 0 or 1 */
	uint64_t prefetch_inflight;   /* 1..4096 requests */
	uint64_t prefetch_window;     /* files, >= 1 */
	double prefetch_ram_share;    /* 0..1 of ram_size */
	uint64_t origin_bandwidth;    /* bytes/s; 0 = no cap */
	/* [mount] */
	uint64_t view_max_pixels; /* views: decompression-bomb limit, pixels */
	uint64_t view_workers;   /* views: transform threads, 0 = one per CPU */
	uint64_t max_threads;  /* FUSE worker threads */
	int allow_other, default_permissions;
	/* Internal to pfs_opts_parse(): bit i set when key i (table order)
	 * was given with -o, so that the file does not override it. */
	uint64_t cmdline_keys;
};

/* Sets the defaults; o needs no cleanup before. */
void pfs_opts_init(struct pfs_opts *o);
/* Frees what o owns and zeroes it. */
void pfs_opts_finish(struct pfs_opts *o);

/* Sets one key; `value` is NULL for a bare flag ("s3_path_style").
 * Returns 0, or -EINVAL with a message naming the key in err (o is then
 * unchanged). Unknown keys are -ENOENT. */
int pfs_opts_set(struct pfs_opts *o, const char *key, const char *value,
		 char *err, size_t errcap);

/* The table of keys, in a fixed order (the bits of cmdline_keys). The
 * strings are static. */
size_t pfs_opts_nkeys(void);
const char *pfs_opts_key_name(size_t i);
/* The section of the configuration file the key belongs to ("cache"). */
const char *pfs_opts_key_section(size_t i);
/* Index of a key, or -1 when there is no such key. */
int pfs_opts_key_find(const char *key);

/* Parses argv (mount order or the mount.fuse3 order), then the file given
 * with -o config=PATH, if any. Fills `fuse` with the arguments for
 * fuse_session_new(). Returns 0, or -EINVAL with a message in err; nothing
 * has touched the mountpoint then. With -h or -V, returns 0 at once
 * without reading the file. */
int pfs_opts_parse(struct pfs_opts *o, int argc, char **argv,
		   struct fuse_args *fuse, char *err, size_t errcap);

void pfs_opts_usage(const char *prog);

#endif
