/* usage.h - what prestofs says about itself: --help, --version and the
 * example configuration file.
 *
 * Nothing here is written twice: the keys, their sections, defaults and
 * help lines come from the option table (tools/options.h), the subcommands
 * from the table main.c dispatches from, and the versions from the
 * libraries themselves at run time (libjpeg-turbo excepted: TurboJPEG 2.x
 * has no call for it, so the version it was built with is shown).
 *
 * Runs at startup, on one thread.
 */
#ifndef PFS_USAGE_H
#define PFS_USAGE_H

#include <stddef.h>
#include <stdio.h>

/* A subcommand: `prestofs NAME ARGS...`. */
struct pfs_command {
	const char *name;  /* "index", the first argument */
	const char *args;  /* what follows it in the synopsis */
	const char *help;  /* one line, lower case, no final period */
	int (*run)(int argc, char **argv); /* argv[1] is name; returns the
					    * exit status */
};

/* The --help text: synopsis, one line per subcommand, every option and
 * key with its default and help line, grouped by section, lines wrapped
 * under 80 columns. */
void pfs_usage_help(FILE *f, const char *prog, const struct pfs_command *cmds,
		    size_t ncmds);

/* The --version text: prestofs's and each library's version, one a line. */
void pfs_usage_version(FILE *f);

/* docs/prestofs.conf.example: every key under its section at its default
 * (commented out when it has none), each with its help line and what a
 * valid value looks like. Loading it changes nothing. */
void pfs_usage_example(FILE *f);

#endif
