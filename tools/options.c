/* options.c - see options.h.
 *
 * The table below is the one list of keys: -o, the configuration file
 * (tools/config.c), the defaults (pfs_opts_init() parses each row's default
 * string), --help and the example file (tools/usage.c), and the bits of
 * cmdline_keys all follow it. A value is parsed into locals first and
 * stored only when it is valid, so a failed pfs_opts_set() leaves the
 * options as they were.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <fuse_lowlevel.h>

#include "options.h"
#include "../cache/shared.h"
#include "../util/units.h"
#include "../util/url.h"

enum kind {
	K_SIZE,     /* uint64_t bytes, [min, max] */
	K_SECONDS,  /* double > 0 */
	K_UINT,     /* uint64_t, [min, max] */
	K_STR,      /* char *, non-empty */
	K_FLAG,     /* int 0/1; a bare -o flag is 1 */
	K_PATH,     /* char *, absolute path, or "none" for NULL */
	K_POLICY,   /* enum pfs_policy, by cache/policy.h's names */
	K_RESIDENT, /* enum pfs_resident, by cache/policy.h's names */
	K_COMPRESS, /* ssd_compress + ssd_zstd_level */
	K_FRACTION, /* double 0..1, or a percentage */
	K_RATE,     /* uint64_t bytes/s, "0" or "none" for no cap */
	K_LOGLEVEL, /* enum pfs_log_level, by util/log.h's names */
	K_SERVERS,  /* char *, a memcached server list, or "none" for NULL */
};

/* The sections of the file, in the order the help and the example show. */
enum section { S_ORIGIN, S_CACHE, S_SHARED, S_PREFETCH, S_VIEWS, S_MOUNT, NSECTIONS };
static const struct {
	const char *name, *help;
} sections[NSECTIONS] = {
	[S_ORIGIN] = {"origin", "where the data comes from, and how it is fetched"},
	[S_CACHE] = {"cache", "the RAM tier and the SSD tier"},
	[S_SHARED] = {"shared", "the shared tier: blocks in memcached servers that all nodes ask"},
	[S_PREFETCH] = {"prefetch", "background fetches ahead of the data loader"},
	[S_VIEWS] = {"views", "decoded and resized images under MOUNT/.prestofs/views/SPEC/"},
	[S_MOUNT] = {"mount", "the FUSE mount"},
};

struct key {
	struct pfs_opt_doc doc;    /* doc.section is NULL: it follows from sec */
	enum section sec;
	enum kind kind;
	size_t off;
	uint64_t min, max;         /* K_SIZE, K_UINT */
	const char *hint;          /* what a valid value looks like; NULL:
				    * the names of K_POLICY, K_RESIDENT,
				    * K_LOGLEVEL */
};

#define ZSTD_LEVEL_DEFAULT 3
#define ZSTD_LEVEL_MAX 19

/* One row per key: {name, NULL, default, metavar, help, example}, section,
 * kind, field, range, hint. The order is that of cmdline_keys' bits, and of
 * --help and the example file; keys of a section are together. */
#define OFF(f) offsetof(struct pfs_opts, f)
#define DOC(name, def, metavar, help) {name, NULL, def, metavar, help, NULL}
#define DOC_UNSET(name, metavar, help, example) {name, NULL, NULL, metavar, help, example}
static const struct key keys[] = {
	{DOC_UNSET("endpoint", "URL", "S3 endpoint; unset: AWS", "http://127.0.0.1:9000"),
	 S_ORIGIN, K_STR, OFF(endpoint), 0, 0, "a URL"},
	{DOC_UNSET("region", "NAME", "S3 region used for signing; unset: us-east-1",
		   "us-east-1"),
	 S_ORIGIN, K_STR, OFF(region), 0, 0, "a region name"},
	{DOC("s3_path_style", "no", NULL,
	     "S3: put the bucket in the URL path rather than in the host name"),
	 S_ORIGIN, K_FLAG, OFF(s3_path_style), 0, 0, "yes or no"},
	{DOC_UNSET("manifest", "URL|PATH",
		   "file list to use instead of the origin's prestofs.manifest or a listing",
		   "https://data.example.com/imagenet/prestofs.manifest"),
	 S_ORIGIN, K_STR, OFF(manifest), 0, 0, "a URL or a path"},
	{DOC("allow_empty", "no", NULL,
	     "S3: a prefix with no objects mounts as an empty directory, not an error"),
	 S_ORIGIN, K_FLAG, OFF(allow_empty), 0, 0, "yes or no"},
	{DOC_UNSET("aws_profile", "NAME",
		   "S3: the profile in the credentials or config file; wins over AWS_* variables",
		   "training"),
	 S_ORIGIN, K_STR, OFF(aws_profile), 0, 0, "a profile name"},
	{DOC_UNSET("aws_credentials_file", "PATH",
		   "S3: the shared credentials file; wins over AWS_* variables",
		   "/etc/prestofs/aws-credentials"),
	 S_ORIGIN, K_PATH, OFF(aws_credentials_file), 0, 0, "an absolute path, or none"},
	{DOC("timeout", "10", "SECONDS", "time limit of each attempt of an origin request"),
	 S_ORIGIN, K_SECONDS, OFF(timeout), 0, 0, "seconds above 0, like 10 or 2.5"},
	{DOC("retries", "5", "N", "attempts after the first before a read fails"),
	 S_ORIGIN, K_UINT, OFF(retries), 0, 100, "an integer from 0 to 100"},

	{DOC("ram_size", "1G", "SIZE", "budget of the RAM block cache"),
	 S_CACHE, K_SIZE, OFF(ram_size), 0, UINT64_MAX, "a size like 512K, 64M, 8G"},
	{DOC("ssd_dir", "none", "DIR", "directory of the SSD cache tier; none: no SSD tier"),
	 S_CACHE, K_PATH, OFF(ssd_dir), 0, 0, "an absolute path, or none"},
	{DOC("ssd_size", "0", "SIZE", "budget of the SSD tier; 0: 90% of the free space"),
	 S_CACHE, K_SIZE, OFF(ssd_size), 0, UINT64_MAX,
	 "a size like 64G or 2T, or 0 for 90% of the free space"},
	{DOC("ssd_compress", "auto", "MODE",
	     "compression of SSD blocks; auto: zstd for the kinds of files it shrinks"),
	 S_CACHE, K_COMPRESS, OFF(ssd_compress), 0, 0,
	 "off, auto, zstd or zstd:LEVEL with LEVEL from 1 to 19"},
	{DOC("block_size", "1M", "SIZE", "the unit of origin requests and of the cache"),
	 S_CACHE, K_SIZE, OFF(block_size), 4096, 64u << 20, "a size from 4K to 64M, like 1M"},
	{DOC("policy", "epoch", "POLICY", "replacement policy of the RAM tier"),
	 S_CACHE, K_POLICY, OFF(policy), 0, 0, NULL},
	{DOC("resident", "any", "WHICH", "which files the RAM tier prefers to keep"),
	 S_CACHE, K_RESIDENT, OFF(resident), 0, 0, NULL},

	{DOC("shared_cache", "none", "memcached://HOST:PORT+HOST:PORT...",
	     "memcached servers of the shared tier ('+' between them); none: no shared tier"),
	 S_SHARED, K_SERVERS, OFF(shared_cache), 0, 0,
	 "memcached://HOST:PORT with '+' between servers, or none"},
	{DOC("shared_timeout", "1", "SECONDS",
	     "the most a shared-tier exchange may take (each gets less: its server's usual time)"),
	 S_SHARED, K_SECONDS, OFF(shared_timeout), 0, 0, "seconds above 0, like 1"},
	{DOC("shared_key_file", "none", "PATH",
	     "secret (32 bytes or more, mode 600) that authenticates shared-tier values"),
	 S_SHARED, K_PATH, OFF(shared_key_file), 0, 0, "an absolute path, or none"},
	{DOC("shared_retry", "2", "SECONDS", "how long a failed memcached server is skipped"),
	 S_SHARED, K_SECONDS, OFF(shared_retry), 0, 0, "seconds above 0, like 2"},
	{DOC("shared_lock_wait", "0.5", "SECONDS",
	     "how long a miss waits for another node's fetch of the same block"),
	 S_SHARED, K_SECONDS, OFF(shared_lock_wait), 0, 0, "seconds above 0, like 0.5"},

	{DOC("prefetch", "on", "on|off", "read ahead of the data loader"),
	 S_PREFETCH, K_FLAG, OFF(prefetch), 0, 0, "on or off"},
	{DOC("prefetch_inflight", "128", "N", "prefetch requests in flight at most"),
	 S_PREFETCH, K_UINT, OFF(prefetch_inflight), 1, 4096, "an integer from 1 to 4096"},
	{DOC("prefetch_window", "256", "N", "how many files ahead to prefetch"),
	 S_PREFETCH, K_UINT, OFF(prefetch_window), 1, UINT32_MAX,
	 "a number of files, at least 1"},
	{DOC("prefetch_ram_share", "25%", "F", "share of ram_size that prefetched blocks may hold"),
	 S_PREFETCH, K_FRACTION, OFF(prefetch_ram_share), 0, 0,
	 "a fraction from 0 to 1, or a percentage like 25%"},
	{DOC("origin_bandwidth", "none", "RATE", "cap on the origin bandwidth; none: no cap"),
	 S_PREFETCH, K_RATE, OFF(origin_bandwidth), 0, UINT64_MAX,
	 "bytes per second like 100M, or none"},

	{DOC("view_max_pixels", "64000000", "N",
	     "most pixels (width x height) a JPEG may declare; more: EIO, a bomb guard"),
	 S_VIEWS, K_UINT, OFF(view_max_pixels), 1, UINT64_MAX,
	 "a pixel count (width x height) like 64000000"},
	{DOC("view_workers", "0", "N", "threads that decode and resize; 0: one per CPU"),
	 S_VIEWS, K_UINT, OFF(view_workers), 0, 1024, "an integer from 0 (one per CPU) to 1024"},
	{DOC("view_max_source", "64M", "SIZE",
	     "largest JPEG a view transforms; a larger one: EFBIG (others pass through)"),
	 S_VIEWS, K_SIZE, OFF(view_max_source), 4096, UINT64_MAX, "a size from 4K, like 64M"},
	{DOC("view_memory", "0", "SIZE",
	     "memory of the transforms running at once (sources, pixels, outputs); "
	     "0: 2 x view_max_source"),
	 S_VIEWS, K_SIZE, OFF(view_memory), 0, UINT64_MAX,
	 "a size like 128M (at least view_max_source counts), or 0"},

	{DOC("max_threads", "256", "N", "FUSE worker threads"),
	 S_MOUNT, K_UINT, OFF(max_threads), 1, 100000, "an integer from 1 to 100000"},
	{DOC("allow_other", "no", NULL,
	     "let other users access the files (non-root: user_allow_other in fuse.conf)"),
	 S_MOUNT, K_FLAG, OFF(allow_other), 0, 0, "yes or no"},
	{DOC("default_permissions", "no", NULL, "let the kernel check file modes"),
	 S_MOUNT, K_FLAG, OFF(default_permissions), 0, 0, "yes or no"},
	{DOC("log_level", "info", "LEVEL",
	     "log messages of this level and more severe (-d: debug)"),
	 S_MOUNT, K_LOGLEVEL, OFF(log_level), 0, 0, NULL},
};
#undef DOC
#undef DOC_UNSET
#define NKEYS (sizeof(keys) / sizeof(keys[0]))
_Static_assert(NKEYS <= 64, "cmdline_keys has one bit per key");
_Static_assert(sizeof(enum pfs_policy) == sizeof(int) &&
	       sizeof(enum pfs_resident) == sizeof(int) &&
	       sizeof(enum pfs_ssd_compress) == sizeof(int), "enums are stored as int");

/* fstab's generic options: meaningful to mount(8), not to us. */
static const char *const ignored[] = {
	"ro", "rw", "defaults", "nofail", "noauto", "auto", "_netdev", "user",
	"users", "nouser", "owner", "group", "exec", "noexec", "suid", "nosuid",
	"dev", "nodev", "atime", "noatime", "relatime", "nodiratime", "sync", "async",
};

void pfs_opts_init(struct pfs_opts *o)
{
	memset(o, 0, sizeof(*o));
	for (size_t i = 0; i < NKEYS; i++) {
		char err[256];
		if (keys[i].doc.def &&
		    pfs_opts_set(o, keys[i].doc.name, keys[i].doc.def, err, sizeof(err))) {
			/* A bad row of the table: test_usage.c fails on it first. */
			fprintf(stderr, "prestofs: default of %s: %s\n", keys[i].doc.name, err);
			abort();
		}
	}
}

void pfs_opts_finish(struct pfs_opts *o)
{
	free(o->origin);
	free(o->mountpoint);
	free(o->config);
	free(o->manifest);
	free(o->endpoint);
	free(o->region);
	free(o->aws_profile);
	free(o->aws_credentials_file);
	free(o->ssd_dir);
	free(o->shared_cache);
	free(o->shared_key_file);
	memset(o, 0, sizeof(*o));
}

size_t pfs_opts_nkeys(void)
{
	return NKEYS;
}

const char *pfs_opts_key_name(size_t i)
{
	return i < NKEYS ? keys[i].doc.name : NULL;
}

const char *pfs_opts_key_section(size_t i)
{
	return i < NKEYS ? sections[keys[i].sec].name : NULL;
}

int pfs_opts_key_doc(size_t i, struct pfs_opt_doc *out)
{
	if (i >= NKEYS)
		return -ENOENT;
	*out = keys[i].doc;
	out->section = sections[keys[i].sec].name;
	return 0;
}

/* "a, b or c" from a name function that answers "?" past the last. */
static void names_hint(const char *(*name_of)(int), char *buf, size_t cap)
{
	size_t n = 0;
	buf[0] = '\0';
	for (int e = 0; strcmp(name_of(e), "?") && n < cap; e++) {
		const char *sep = !e ? "" : strcmp(name_of(e + 1), "?") ? ", " : " or ";
		n += (size_t)snprintf(buf + n, cap - n, "%s%s", sep, name_of(e));
	}
}

static const char *policy_name(int e)
{
	return pfs_policy_name((enum pfs_policy)e);
}

static const char *resident_name(int e)
{
	return pfs_resident_name((enum pfs_resident)e);
}

static const char *log_level_name(int e)
{
	const char *n = pfs_log_level_name((enum pfs_log_level)e);
	return n ? n : "?";
}

const char *pfs_opts_key_hint(size_t i, char *buf, size_t cap)
{
	if (!cap)
		return buf;
	if (i >= NKEYS)
		buf[0] = '\0';
	else if (keys[i].kind == K_POLICY)
		names_hint(policy_name, buf, cap);
	else if (keys[i].kind == K_RESIDENT)
		names_hint(resident_name, buf, cap);
	else if (keys[i].kind == K_LOGLEVEL)
		names_hint(log_level_name, buf, cap);
	else
		snprintf(buf, cap, "%s", keys[i].hint);
	return buf;
}

size_t pfs_opts_nsections(void)
{
	return NSECTIONS;
}

const char *pfs_opts_section_name(size_t s)
{
	return s < NSECTIONS ? sections[s].name : NULL;
}

const char *pfs_opts_section_help(size_t s)
{
	return s < NSECTIONS ? sections[s].help : NULL;
}

int pfs_opts_key_find(const char *key)
{
	for (size_t i = 0; i < NKEYS; i++)
		if (!strcmp(keys[i].doc.name, key))
			return (int)i;
	return -1;
}

/* A non-negative decimal number, digits and one '.', no sign, exponent or
 * hex (strtod would take them). */
static int parse_decimal(const char *s, double *out)
{
	size_t n = strspn(s, "0123456789.");
	if (!n || n != strlen(s) || strchr(s, '.') != strrchr(s, '.') || !strcmp(s, "."))
		return -EINVAL;
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || *end || !isfinite(v))
		return -EINVAL;
	*out = v;
	return 0;
}

static int parse_flag(const char *s, int *out)
{
	static const char *const yes[] = {"1", "true", "yes", "on"};
	static const char *const no[] = {"0", "false", "no", "off"};
	for (size_t i = 0; i < 4; i++) {
		if (!strcasecmp(s, yes[i]))
			return *out = 1, 0;
		if (!strcasecmp(s, no[i]))
			return *out = 0, 0;
	}
	return -EINVAL;
}

/* "off", "auto", "zstd" or "zstd:LEVEL". */
static int parse_compress(const char *s, int *mode, int *level)
{
	uint64_t l = ZSTD_LEVEL_DEFAULT;
	if (!strcmp(s, "off"))
		*mode = PFS_SSD_COMPRESS_OFF;
	else if (!strcmp(s, "auto"))
		*mode = PFS_SSD_COMPRESS_AUTO;
	else if (!strcmp(s, "zstd"))
		*mode = PFS_SSD_COMPRESS_ZSTD;
	else if (!strncmp(s, "zstd:", 5) && !pfs_parse_uint(s + 5, 1, ZSTD_LEVEL_MAX, &l))
		*mode = PFS_SSD_COMPRESS_ZSTD;
	else
		return -EINVAL;
	*level = (int)l;
	return 0;
}

/* "0.25" or "25%", within 0..1. */
static int parse_fraction(const char *s, double *out)
{
	char buf[32];
	size_t n = strlen(s);
	if (n == 0 || n >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, n + 1);
	double scale = 1;
	if (buf[n - 1] == '%') {
		buf[n - 1] = '\0';
		scale = 100;
	}
	double v;
	if (parse_decimal(buf, &v) || v / scale > 1)
		return -EINVAL;
	*out = v / scale;
	return 0;
}

/* "none", "0", or a size per second, "100M" or "100M/s". */
static int parse_rate(const char *s, uint64_t *out)
{
	if (!strcmp(s, "none"))
		return *out = 0, 0;
	char buf[32];
	size_t n = strlen(s);
	if (n >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, n + 1);
	if (n > 2 && !strcmp(buf + n - 2, "/s"))
		buf[n - 2] = '\0';
	return pfs_parse_size(buf, out);
}

int pfs_opts_set(struct pfs_opts *o, const char *key, const char *value,
		 char *err, size_t errcap)
{
	int i = pfs_opts_key_find(key);
	if (i < 0) {
		snprintf(err, errcap, "unknown option '%s'", key);
		return -ENOENT;
	}
	const struct key *k = &keys[i];
	char *field = (char *)o + k->off;
	char hint[128];
	if (k->kind == K_FLAG && !value) {
		*(int *)field = 1;
		return 0;
	}
	if (!value || !*value) {
		snprintf(err, errcap, "'%s' needs a value: %s", key,
			 pfs_opts_key_hint((size_t)i, hint, sizeof(hint)));
		return -EINVAL;
	}
	switch (k->kind) {
	case K_FLAG: {
		int v;
		if (parse_flag(value, &v))
			goto bad;
		*(int *)field = v;
		return 0;
	}
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
	case K_PATH:
		if (!strcmp(value, "none")) {
			free(*(char **)field);
			*(char **)field = NULL;
			return 0;
		}
		if (value[0] != '/' || strlen(value) >= PATH_MAX)
			goto bad;
		/* fall through */
	case K_STR: {
		char *s = strdup(value);
		if (!s)
			return -ENOMEM;
		free(*(char **)field);
		*(char **)field = s;
		return 0;
	}
	case K_POLICY:
		if (pfs_policy_parse(value, (enum pfs_policy *)field))
			goto bad;
		return 0;
	case K_RESIDENT:
		if (pfs_resident_parse(value, (enum pfs_resident *)field))
			goto bad;
		return 0;
	case K_LOGLEVEL:
		if (pfs_log_level_parse(value, (enum pfs_log_level *)field))
			goto bad;
		return 0;
	case K_COMPRESS: {
		int mode, level;
		if (parse_compress(value, &mode, &level))
			goto bad;
		o->ssd_compress = (enum pfs_ssd_compress)mode;
		o->ssd_zstd_level = level;
		return 0;
	}
	case K_FRACTION: {
		double v;
		if (parse_fraction(value, &v))
			goto bad;
		*(double *)field = v;
		return 0;
	}
	case K_RATE: {
		uint64_t v;
		if (parse_rate(value, &v))
			goto bad;
		*(uint64_t *)field = v;
		return 0;
	}
	case K_SERVERS: {
		char why[256];
		if (!strcmp(value, "none")) {
			free(*(char **)field);
			*(char **)field = NULL;
			return 0;
		}
		if (pfs_shared_parse_servers(value, why, sizeof(why)) < 0) {
			snprintf(err, errcap, "invalid value for '%s': %s", key, why);
			return -EINVAL;
		}
		char *s = strdup(value);
		if (!s)
			return -ENOMEM;
		free(*(char **)field);
		*(char **)field = s;
		return 0;
	}
	}
bad:
	snprintf(err, errcap, "invalid value for '%s': '%.64s' (%s)", key, value,
		 pfs_opts_key_hint((size_t)i, hint, sizeof(hint)));
	return -EINVAL;
}

/* Applies one option of a -o list (fuse_opt already split it). */
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
	const char *value = eq ? eq + 1 : NULL;
	if (!strcmp(key, "config")) {
		/* Not a key of the table: it names the file the rest come from. */
		if (!value || !*value) {
			snprintf(err, errcap, "'config' needs a value: the path of a "
				 "configuration file");
			return -EINVAL;
		}
		char *s = strdup(value);
		if (!s) {
			snprintf(err, errcap, "out of memory");
			return -ENOMEM;
		}
		free(o->config);
		o->config = s;
		return 0;
	}
	int rc = pfs_opts_set(o, key, value, err, errcap);
	if (rc == -ENOENT)
		return -EINVAL;
	if (rc == -ENOMEM)
		snprintf(err, errcap, "out of memory setting '%s'", key);
	if (rc < 0)
		return rc;
	o->cmdline_keys |= 1ull << pfs_opts_key_find(key);
	return 0;
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

int pfs_opts_parse(struct pfs_opts *o, int argc, char **argv, char *err, size_t errcap)
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
	return 0;
}

int pfs_opts_mount_args(struct pfs_opts *o, const char *argv0, struct fuse_args *fuse,
			char *err, size_t errcap)
{
	char *mp = realpath(o->mountpoint, NULL);
	if (!mp) {
		snprintf(err, errcap, "mountpoint '%s': %s", o->mountpoint, strerror(errno));
		return -EINVAL;
	}
	free(o->mountpoint);
	o->mountpoint = mp;

	/* What goes to libfuse: read-only, our name, and the FUSE options. */
	if (fuse_opt_add_arg(fuse, argv0) ||
	    fuse_opt_add_arg(fuse, "-o") ||
	    /* Not "ro": the kernel would then refuse the writes of order hints
	     * to MOUNT/.prestofs/order. The daemon answers every write to the
	     * dataset with EROFS itself. noatime: else every read dirties the
	     * cached atime and the next open costs a GETATTR. */
	    fuse_opt_add_arg(fuse, "subtype=prestofs,max_read=1048576,noatime"))
		return -ENOMEM;
	/* fsname shows in /proc/mounts for every user: never a password. */
	char shown[4096];
	char *fsname = NULL;
	pfs_url_redact(o->origin, shown, sizeof(shown));
	if (fuse_opt_add_opt_escaped(&fsname, shown) < 0)
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
