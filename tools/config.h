/* config.h - the configuration file (-o config=PATH), see prestofs.conf(5).
 *
 * An INI file read with libinih: [section] headers, `key = value` lines,
 * whole-line comments starting with ';' or '#', inline comments after
 * whitespace and ';' only. The sections and keys are those of the option
 * table (tools/options.h), each key in its own section; values go through
 * pfs_opts_set() exactly as -o values do.
 *
 * Runs at startup, on one thread.
 */
#ifndef PFS_CONFIG_H
#define PFS_CONFIG_H

#include <stddef.h>
#include <stdint.h>

struct pfs_opts;

/* Longest file accepted, in bytes. */
#define PFS_CONFIG_MAX_BYTES (1u << 20)

/* Reads the file at `path` into o. Keys whose bit (table index, see
 * pfs_opts_key_find()) is set in `skip` are checked but not applied: the
 * command line set them. Every problem is an error, reported as
 * "PATH:LINE: message naming the key" in err (or "config file 'PATH': ..."
 * when the file cannot be read); parsing stops at the first one.
 * Returns 0, or -EINVAL; o may then hold some of the file's values. */
int pfs_config_load(struct pfs_opts *o, const char *path, uint64_t skip,
		    char *err, size_t errcap);

#endif
