/* options.c - see options.h. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fuse_lowlevel.h>

#include "options.h"
#include "../util/units.h"

enum kind { K_SIZE, K_SECONDS, K_UINT, K_STR, K_FLAG };

struct key {
	const char *name;
	enum kind kind;
	size_t off;
	uint64_t min, max; /* K_SIZE, K_UINT */
};

#define OFF(f) offsetof(struct pfs_opts, f)
static const struct key keys[] = {
	{"ram_size", K_SIZE, OFF(ram_size), 0, UINT64_MAX},
	{"block_size", K_SIZE, OFF(block_size), 4096, 64u << 20},
	{"timeout", K_SECONDS, OFF(timeout), 0, 0},
	{"retries", K_UINT, OFF(retries), 0, 100},
	{"manifest", K_STR, OFF(manifest), 0, 0},
	{"endpoint", K_STR, OFF(endpoint), 0, 0},
	{"region", K_STR, OFF(region), 0, 0},
	{"s3_path_style", K_FLAG, OFF(s3_path_style), 0, 0},
	{"max_threads", K_UINT, OFF(max_threads), 1, 100000},
	{"allow_other", K_FLAG, OFF(allow_other), 0, 0},
	{"default_permissions", K_FLAG, OFF(default_permissions), 0, 0},
};

/* fstab's generic options: meaningful to mount(8), not to us. */
static const char *const ignored[] = {
	"ro", "rw", "defaults", "nofail", "noauto", "auto", "_netdev", "user",
	"users", "nouser", "owner", "group", "exec", "noexec", "suid", "nosuid",
	"dev", "nodev", "atime", "noatime", "relatime", "nodiratime", "sync", "async",
};

void pfs_opts_init(struct pfs_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->ram_size = 1ull << 30;
	o->block_size = 1ull << 20;
	o->timeout = 10;
	o->retries = 5;
	o->max_threads = 256;
}

void pfs_opts_finish(struct pfs_opts *o)
{
	free(o->origin);
	free(o->mountpoint);
	free(o->manifest);
	free(o->endpoint);
	free(o->region);
	memset(o, 0, sizeof(*o));
}

int pfs_opts_set(struct pfs_opts *o, const char *key, const char *value,
		 char *err, size_t errcap)
{
	const struct key *k = NULL;
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (!strcmp(keys[i].name, key))
			k = &keys[i];
	if (!k) {
		snprintf(err, errcap, "unknown option '%s'", key);
		return -ENOENT;
	}
	char *field = (char *)o + k->off;
	if (k->kind == K_FLAG) {
		int v;
		if (!value || !strcmp(value, "1") || !strcmp(value, "true") || !strcmp(value, "yes"))
			v = 1;
		else if (!strcmp(value, "0") || !strcmp(value, "false") || !strcmp(value, "no"))
			v = 0;
		else
			goto bad;
		*(int *)field = v;
		return 0;
	}
	if (!value || !*value) {
		snprintf(err, errcap, "option '%s' needs a value (%s=...)", key, key);
		return -EINVAL;
	}
	switch (k->kind) {
	case K_SIZE: {
		uint64_t v;
		if (pfs_parse_size(value, &v) || v < k->min || v > k->max)
			goto bad;
		*(uint64_t *)field = v;
		return 0;
	}
	case K_UINT:
		if (pfs_parse_uint(value, k->min, k->max, (uint64_t *)field))
			goto bad;
		return 0;
	case K_SECONDS: {
		double v;
		if (pfs_parse_seconds(value, &v) || v <= 0)
			goto bad;
		*(double *)field = v;
		return 0;
	}
	case K_STR: {
		char *s = strdup(value);
		if (!s)
			return -ENOMEM;
		free(*(char **)field);
		*(char **)field = s;
		return 0;
	}
	case K_FLAG:
		break;
	}
bad:
	if (k->kind == K_SIZE)
		snprintf(err, errcap, "invalid value for option '%s': '%.64s' (a size "
			 "like 512K, 64M, 8G)", key, value);
	else
		snprintf(err, errcap, "invalid value for option '%s': '%.64s'", key, value);
	return -EINVAL;
}

/* Applies one comma-separated -o list (fuse_opt already split it). */
static int set_one(struct pfs_opts *o, const char *arg, char *err, size_t errcap)
{
	for (size_t i = 0; i < sizeof(ignored) / sizeof(ignored[0]); i++)
		if (!strcmp(arg, ignored[i]))
			return 0;
	if (!strncmp(arg, "x-systemd.", 10) || !strncmp(arg, "x-", 2) ||
	    !strncmp(arg, "comment=", 8))
		return 0;
	char key[64];
	const char *eq = strchr(arg, '=');
	size_t kl = eq ? (size_t)(eq - arg) : strlen(arg);
	if (kl >= sizeof(key)) {
		snprintf(err, errcap, "unknown option '%.64s...'", arg);
		return -EINVAL;
	}
	memcpy(key, arg, kl);
	key[kl] = '\0';
	int rc = pfs_opts_set(o, key, eq ? eq + 1 : NULL, err, errcap);
	return rc == -ENOENT ? -EINVAL : rc;
}

struct parse_ctx {
	struct pfs_opts *o;
	char *err;
	size_t errcap;
	int failed;
};

enum { KEY_FG, KEY_DEBUG, KEY_HELP, KEY_VERSION };
static const struct fuse_opt cli[] = {
	FUSE_OPT_KEY("-f", KEY_FG),
	FUSE_OPT_KEY("-d", KEY_DEBUG),
	FUSE_OPT_KEY("debug", KEY_DEBUG),
	FUSE_OPT_KEY("-h", KEY_HELP),
	FUSE_OPT_KEY("--help", KEY_HELP),
	FUSE_OPT_KEY("-V", KEY_VERSION),
	FUSE_OPT_KEY("--version", KEY_VERSION),
	FUSE_OPT_END
};

static int proc(void *data, const char *arg, int key, struct fuse_args *outargs)
{
	struct parse_ctx *c = data;
	(void)outargs;
	if (c->failed)
		return 0;
	switch (key) {
	case KEY_FG: c->o->foreground = 1; return 0;
	case KEY_DEBUG: c->o->debug = c->o->foreground = 1; return 0;
	case KEY_HELP: c->o->show_help = 1; return 0;
	case KEY_VERSION: c->o->show_version = 1; return 0;
	case FUSE_OPT_KEY_OPT:
		if (set_one(c->o, arg, c->err, c->errcap) < 0)
			c->failed = 1;
		return 0;
	case FUSE_OPT_KEY_NONOPT:
		if (arg[0] == '-' && arg[1]) {
			snprintf(c->err, c->errcap, "unknown option '%s'", arg);
			c->failed = 1;
		} else if (!c->o->origin) {
			c->o->origin = strdup(arg);
		} else if (!c->o->mountpoint) {
			c->o->mountpoint = strdup(arg);
		} else {
			snprintf(c->err, c->errcap, "unexpected argument '%s'", arg);
			c->failed = 1;
		}
		return 0;
	}
	return 0;
}

int pfs_opts_parse(struct pfs_opts *o, int argc, char **argv,
		   struct fuse_args *fuse, char *err, size_t errcap)
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct parse_ctx c = {o, err, errcap, 0};
	int rc = fuse_opt_parse(&args, &c, cli, proc);
	fuse_opt_free_args(&args);
	if (rc < 0 && !c.failed) {
		snprintf(err, errcap, "invalid command line");
		return -EINVAL;
	}
	if (c.failed)
		return -EINVAL;
	if (o->show_help || o->show_version)
		return 0;
	if (!o->origin || !o->mountpoint) {
		snprintf(err, errcap, "usage: prestofs [options] ORIGIN MOUNTPOINT");
		return -EINVAL;
	}
	char *mp = realpath(o->mountpoint, NULL);
	if (!mp) {
		snprintf(err, errcap, "mountpoint '%s': %s", o->mountpoint, strerror(errno));
		return -EINVAL;
	}
	free(o->mountpoint);
	o->mountpoint = mp;

	/* What goes to libfuse: read-only, our name, and the FUSE options. */
	if (fuse_opt_add_arg(fuse, argv[0]) ||
	    fuse_opt_add_arg(fuse, "-o") ||
	    fuse_opt_add_arg(fuse, "ro,subtype=prestofs,max_read=1048576"))
		return -ENOMEM;
	char *fsname = NULL;
	if (fuse_opt_add_opt_escaped(&fsname, o->origin) < 0)
		return -ENOMEM;
	char *opt = NULL;
	int bad = asprintf(&opt, "fsname=%s%s%s", fsname,
			   o->allow_other ? ",allow_other" : "",
			   o->default_permissions ? ",default_permissions" : "") < 0;
	free(fsname);
	if (bad || fuse_opt_add_arg(fuse, "-o") || fuse_opt_add_arg(fuse, opt)) {
		free(opt);
		return -ENOMEM;
	}
	free(opt);
	if (o->debug && fuse_opt_add_arg(fuse, "-d"))
		return -ENOMEM;
	return 0;
}

void pfs_opts_usage(const char *prog)
{
	printf("usage: %s [-f] [-d] [-o OPT[,OPT...]] ORIGIN MOUNTPOINT\n"
	       "       %s ORIGIN MOUNTPOINT -o OPT[,OPT...]\n"
	       "       %s index DIR > DIR/prestofs.manifest\n"
	       "\n"
	       "ORIGIN: /local/dir, file:///dir, http(s)://host/prefix/, s3://bucket/prefix\n"
	       "\n"
	       "  -f                     stay in the foreground, log to stderr\n"
	       "  -d                     debug output (implies -f)\n"
	       "  -h, --help             this help\n"
	       "  -V, --version          version\n"
	       "  -o ram_size=SIZE       RAM block cache budget (default 1G)\n"
	       "  -o block_size=SIZE     origin request size (default 1M)\n"
	       "  -o timeout=SECONDS     per attempt (default 10)\n"
	       "  -o retries=N           attempts after the first (default 5)\n"
	       "  -o manifest=URL|PATH   file list to use instead of listing\n"
	       "  -o endpoint=URL        S3 endpoint (default AWS)\n"
	       "  -o region=NAME         S3 region (default us-east-1)\n"
	       "  -o s3_path_style       S3 path-style addressing\n"
	       "  -o max_threads=N       FUSE worker threads (default 256)\n"
	       "  -o allow_other, -o default_permissions   passed to FUSE\n"
	       "\n"
	       "Unmount with: fusermount3 -u MOUNTPOINT. See prestofs(1).\n",
	       prog, prog, prog);
}
