/* opts_fixture.h - what test_options.c, test_config.c and test_usage.c
 * share: command lines through pfs_opts_parse(), pfs_config_load() and
 * pfs_opts_mount_args() as main.c runs them, the arguments handed to
 * libfuse, a comparison of two option sets, and the shipped example file.
 *
 * Include after cmocka.h, tools/options.h and tools/config.h. Each test file fills the paths
 * below in its group setup (those it uses): `mnt` is a real directory,
 * since parsing resolves the mountpoint with realpath().
 */
#ifndef PFS_TEST_OPTS_FIXTURE_H
#define PFS_TEST_OPTS_FIXTURE_H

#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fuse_lowlevel.h>

/* In a command line: "@MNT" stands for mnt, "@MESSY" for mnt_messy (a
 * spelling of it that realpath() cleans up), "@CONFOPT" for "config=conf". */
static char mnt[PATH_MAX + 16];
static char mnt_messy[PATH_MAX + 16];
static char conf[PATH_MAX + 16];

#define ARGS(...) ((const char *const[]){__VA_ARGS__, NULL})

struct parsed {
	struct pfs_opts o;
	struct fuse_args fuse;
	char err[512];
	int rc;
};

/* argv from a NULL-terminated list, then pfs_opts_parse() on fresh
 * options; the strings parse keeps are its own copies. */
static inline void parse(struct parsed *p, const char *const *list)
{
	char *argv[32];
	int argc = 0;
	char confopt[PATH_MAX + 64];
	snprintf(confopt, sizeof(confopt), "config=%s", conf);
	for (; *list; list++) {
		const char *a = *list;
		if (!strcmp(a, "@MNT"))
			a = mnt;
		else if (!strcmp(a, "@MESSY"))
			a = mnt_messy;
		else if (!strcmp(a, "@CONFOPT"))
			a = confopt;
		assert_true(argc < 31);
		argv[argc] = strdup(a);
		assert_non_null(argv[argc]);
		argc++;
	}
	argv[argc] = NULL;
	pfs_opts_init(&p->o);
	p->fuse = (struct fuse_args)FUSE_ARGS_INIT(0, NULL);
	p->err[0] = '\0';
	/* As main.c: the command line, the file it names, libfuse's args. */
	p->rc = pfs_opts_parse(&p->o, argc, argv, p->err, sizeof(p->err));
	if (p->rc == 0 && !p->o.show_help && !p->o.show_version) {
		if (p->o.config)
			p->rc = pfs_config_load(&p->o, p->o.config, p->o.cmdline_keys, p->err,
						sizeof(p->err)) < 0 ? -EINVAL : 0;
		if (p->rc == 0)
			p->rc = pfs_opts_mount_args(&p->o, argv[0], &p->fuse, p->err,
						    sizeof(p->err));
	}
	for (int i = 0; i < argc; i++)
		free(argv[i]);
}

static inline void done(struct parsed *p)
{
	pfs_opts_finish(&p->o);
	fuse_opt_free_args(&p->fuse);
}

static inline void expect_parse_ok(struct parsed *p, const char *const *list)
{
	parse(p, list);
	if (p->rc != 0)
		fail_msg("parse failed: %d (%s)", p->rc, p->err);
}

static inline void expect_parse_fails(const char *const *list, const char *needle)
{
	struct parsed p;
	parse(&p, list);
	if (p.rc != -EINVAL)
		fail_msg("parse: rc %d, want -EINVAL (err '%s')", p.rc, p.err);
	if (needle && !strstr(p.err, needle))
		fail_msg("error '%s' does not contain '%s'", p.err, needle);
	done(&p);
}

/* The arguments handed to libfuse, joined with '|'. */
static inline void fuse_joined(const struct fuse_args *f, char *out, size_t cap)
{
	size_t n = 0;
	out[0] = '\0';
	for (int i = 0; i < f->argc; i++)
		n += (size_t)snprintf(out + n, n < cap ? cap - n : 0, "%s%s", i ? "|" : "",
				      f->argv[i]);
	assert_true(n < cap);
}

/* Every field of two option sets, except what parsing the command line
 * adds (origin, mountpoint, config, cmdline_keys). */
static inline void assert_same_settings(const struct pfs_opts *a, const struct pfs_opts *b)
{
#define SAME_STR(f) do { \
		if ((a->f == NULL) != (b->f == NULL) || (a->f && strcmp(a->f, b->f))) \
			fail_msg(#f ": '%s' vs '%s'", a->f ? a->f : "(null)", \
				 b->f ? b->f : "(null)"); \
	} while (0)
#define SAME(f) do { \
		if (a->f != b->f) \
			fail_msg(#f ": %.17g vs %.17g", (double)a->f, (double)b->f); \
	} while (0)
	SAME_STR(manifest);
	SAME_STR(endpoint);
	SAME_STR(region);
	SAME(s3_path_style);
	SAME(allow_empty);
	SAME(timeout);
	SAME(retries);
	SAME(ram_size);
	SAME_STR(ssd_dir);
	SAME(ssd_size);
	SAME(ssd_compress);
	SAME(ssd_zstd_level);
	SAME(block_size);
	SAME(policy);
	SAME(resident);
	SAME_STR(shared_cache);
	SAME(shared_timeout);
	SAME(shared_retry);
	SAME(shared_lock_wait);
	SAME(prefetch);
	SAME(prefetch_inflight);
	SAME(prefetch_window);
	SAME(prefetch_ram_share);
	SAME(origin_bandwidth);
	SAME(view_max_pixels);
	SAME(view_workers);
	SAME(view_max_source);
	SAME(view_memory);
	SAME(max_threads);
	SAME(allow_other);
	SAME(default_permissions);
#undef SAME
#undef SAME_STR
}

/* The path of the shipped docs/prestofs.conf.example: from this file's own
 * path (meson runs tests from the build directory, and __FILE__ is
 * relative to it), or from $PFS_SOURCE_ROOT. Returns 0 if it is readable. */
static inline int find_example(char *out, size_t cap)
{
	const char *root = getenv("PFS_SOURCE_ROOT");
	if (root) {
		snprintf(out, cap, "%s/docs/prestofs.conf.example", root);
		return access(out, R_OK);
	}
	char here[PATH_MAX];
	snprintf(here, sizeof(here), "%s", __FILE__);
	snprintf(out, cap, "%s/../../docs/prestofs.conf.example", dirname(here));
	return access(out, R_OK);
}

#endif
