/* options.h - the command line and the table of configuration keys.
 *
 * One flat namespace of keys: the same key means the same thing in
 * `-o key=value` and in the configuration file (tools/config.h), and both go
 * through pfs_opts_set(). Each key belongs to one of the five sections of
 * the file ([origin], [cache], [prefetch], [views], [mount]); key names are
 * unique across sections.
 *
 * The table in options.c is the one place where a key is written down: its
 * name, section, type, range, default and help line. Everything else follows
 * from it: pfs_opts_init() sets each default by parsing the table's default
 * string, the configuration file takes its sections from it, and --help and
 * docs/prestofs.conf.example are printed from it (tools/usage.h; a unit test
 * compares the shipped example with what the table prints). Validation of
 * each value happens as it is set, so an error names its key.
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

/* The RAM tier's replacement policy and resident-set preference, and the
 * SSD tier's compression: the cache's own enums (their names are parsed by
 * cache/policy.h; the compression modes' names live in the table). */
#include "../cache/policy.h" /* enum pfs_policy, enum pfs_resident */
#include "../util/log.h"     /* enum pfs_log_level */
#include "../cache/ssd.h"    /* enum pfs_ssd_compress */

struct pfs_opts {
	char *origin;          /* owned */
	char *mountpoint;      /* owned */
	char *config;          /* owned, or NULL: the -o config= file */
	int foreground, debug;
	int show_help, show_version;
	/* [origin] */
	char *manifest, *endpoint, *region; /* owned, or NULL */
	char *aws_profile, *aws_credentials_file; /* owned, or NULL */
	int s3_path_style;
	int allow_empty;       /* S3: a prefix with no objects mounts empty */
	double timeout;        /* seconds per origin attempt */
	uint64_t retries;      /* attempts after the first */
	/* [cache] */
	uint64_t ram_size;     /* bytes */
	char *ssd_dir;         /* owned, absolute path, or NULL: no SSD tier */
	char *shared_cache;    /* owned memcached server list, or NULL: none */
	double shared_timeout, shared_retry, shared_lock_wait; /* seconds */
	char *shared_key_file; /* owned path, or NULL: values not authenticated */
	uint64_t ssd_size;     /* bytes; 0 = 90% of the free space at ssd_dir */
	enum pfs_ssd_compress ssd_compress;
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
	uint64_t view_max_source; /* views: largest source transformed, bytes */
	uint64_t view_memory;    /* views: budget of transforms, 0 = 2 x max_source */
	uint64_t max_threads;  /* FUSE worker threads */
	enum pfs_log_level log_level; /* -d: debug, whatever this says */
	int allow_other, default_permissions;
	/* Internal to pfs_opts_parse(): bit i set when key i (table order)
	 * was given with -o, so that the file does not override it. */
	uint64_t cmdline_keys;
};

/* Sets the defaults, each parsed from the table's default string; o needs
 * no cleanup before. */
void pfs_opts_init(struct pfs_opts *o);
/* Frees what o owns and zeroes it. */
void pfs_opts_finish(struct pfs_opts *o);

/* Sets one key; `value` is NULL for a bare flag ("s3_path_style").
 * Returns 0, or -EINVAL with a message naming the key in err (o is then
 * unchanged). Unknown keys are -ENOENT. */
int pfs_opts_set(struct pfs_opts *o, const char *key, const char *value,
		 char *err, size_t errcap);

/* The table of keys, in a fixed order (the bits of cmdline_keys), grouped
 * by section in the order of the sections. The strings are static. */
size_t pfs_opts_nkeys(void);
const char *pfs_opts_key_name(size_t i);
/* The section of the configuration file the key belongs to ("cache"). */
const char *pfs_opts_key_section(size_t i);
/* Index of a key, or -1 when there is no such key. */
int pfs_opts_key_find(const char *key);

/* What --help and the example file say about a key; the strings are
 * static. */
struct pfs_opt_doc {
	const char *name;     /* "ram_size" */
	const char *section;  /* "cache" */
	const char *def;      /* the default as a value of the key ("1G"), which
			       * pfs_opts_init() parses; NULL: unset by default */
	const char *metavar;  /* "SIZE", as in -o ram_size=SIZE; NULL: a flag
			       * that is on when given bare */
	const char *help;     /* one line, lower case, no final period */
	const char *example;  /* def == NULL: a value to show, commented out */
};
/* Fills out with key i's; returns 0, or -ENOENT past the end. */
int pfs_opts_key_doc(size_t i, struct pfs_opt_doc *out);
/* What a valid value of key i looks like ("a size like 512K, 64M, 8G"), as
 * the error messages say it; written into buf (cap >= 128 always holds it),
 * which is returned. "" past the end. */
const char *pfs_opts_key_hint(size_t i, char *buf, size_t cap);

/* The sections of the configuration file, in order: their names ("origin")
 * and a line on what they hold. NULL past the end. */
size_t pfs_opts_nsections(void);
const char *pfs_opts_section_name(size_t s);
const char *pfs_opts_section_help(size_t s);

/* Parses argv (mount order or the mount.fuse3 order): the keys given are
 * recorded (cmdline_keys), so that the file of -o config=PATH, read next
 * (config.h's pfs_config_load), fills in only the others. Returns 0, or
 * -EINVAL with a message in err. With -h or -V, returns 0 at once. */
int pfs_opts_parse(struct pfs_opts *o, int argc, char **argv, char *err, size_t errcap);
/* Once every source of options was read: the mountpoint resolved
 * (realpath), and `fuse` filled with the arguments for fuse_session_new()
 * (argv0 first). 0, or -EINVAL with a message in err (nothing has touched
 * the mountpoint then), -ENOMEM. */
int pfs_opts_mount_args(struct pfs_opts *o, const char *argv0, struct fuse_args *fuse,
			char *err, size_t errcap);

#endif
