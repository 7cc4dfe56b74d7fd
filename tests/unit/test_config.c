/* test_config.c - tools/config.h: the configuration file (-o config=PATH).
 *
 * Files are written into a temporary directory. Most tests call
 * pfs_config_load() directly; precedence and the command line go through
 * pfs_opts_parse() (opts_fixture.h). The shipped example file is tested
 * in test_usage.c.
 */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fuse_lowlevel.h>
#include <cmocka.h>

#include "../../tools/config.h"
#include "../../tools/options.h"
#include "opts_fixture.h"

/* mnt: a mountpoint inside it; conf: the file the current test writes. */
static char dir[PATH_MAX];   /* temporary directory */

static int group_setup(void **state)
{
	(void)state;
	char tmpl[] = "/tmp/pfs-test-config-XXXXXX";
	if (!mkdtemp(tmpl) || !realpath(tmpl, dir))
		return -1;
	snprintf(mnt, sizeof(mnt), "%s/mnt", dir);
	snprintf(conf, sizeof(conf), "%s/test.conf", dir);
	return mkdir(mnt, 0700);
}

static int group_teardown(void **state)
{
	(void)state;
	unlink(conf);
	rmdir(mnt);
	return rmdir(dir);
}

static void write_conf(const char *text)
{
	FILE *f = fopen(conf, "w");
	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
}

/* Loads `text` into o (initialised here); returns the result. */
static int load(struct pfs_opts *o, const char *text, uint64_t skip, char *err, size_t cap)
{
	write_conf(text);
	pfs_opts_init(o);
	err[0] = '\0';
	return pfs_config_load(o, conf, skip, err, cap);
}

static void load_ok(struct pfs_opts *o, const char *text)
{
	char err[512];
	int rc = load(o, text, 0, err, sizeof(err));
	if (rc != 0)
		fail_msg("load failed: %d (%s) for:\n%s", rc, err, text);
}

/* The file fails to load with a message "CONF:LINE: ..." that contains
 * every one of the NULL-terminated needles. */
static void load_fails(const char *text, int line, ...)
{
	struct pfs_opts o;
	char err[512];
	int rc = load(&o, text, 0, err, sizeof(err));
	pfs_opts_finish(&o);
	if (rc != -EINVAL)
		fail_msg("load: rc %d, want -EINVAL (err '%s') for:\n%s", rc, err, text);
	char prefix[PATH_MAX + 64];
	snprintf(prefix, sizeof(prefix), "%s:%d: ", conf, line);
	if (strncmp(err, prefix, strlen(prefix)))
		fail_msg("error '%s' does not start with '%s'", err, prefix);
	va_list ap;
	va_start(ap, line);
	for (const char *n; (n = va_arg(ap, const char *));)
		if (!strstr(err, n))
			fail_msg("error '%s' does not contain '%s'", err, n);
	va_end(ap);
}

/* ---- the table -------------------------------------------------------- */

static void test_table_sections(void **state)
{
	(void)state;
	static const struct { const char *key, *section; } want[] = {
		{"endpoint", "origin"}, {"region", "origin"}, {"s3_path_style", "origin"},
		{"manifest", "origin"}, {"allow_empty", "origin"},
		{"aws_profile", "origin"}, {"aws_credentials_file", "origin"},
		{"timeout", "origin"}, {"retries", "origin"},
		{"ram_size", "cache"}, {"ssd_dir", "cache"}, {"ssd_size", "cache"},
		{"ssd_compress", "cache"}, {"block_size", "cache"}, {"policy", "cache"},
		{"resident", "cache"},
		{"shared_cache", "shared"}, {"shared_timeout", "shared"}, {"shared_key_file", "shared"},
		{"shared_retry", "shared"}, {"shared_lock_wait", "shared"},
		{"prefetch", "prefetch"}, {"prefetch_inflight", "prefetch"},
		{"prefetch_window", "prefetch"}, {"prefetch_ram_share", "prefetch"},
		{"origin_bandwidth", "prefetch"},
		{"view_max_pixels", "views"}, {"view_workers", "views"},
		{"view_max_source", "views"}, {"view_memory", "views"},
		{"max_threads", "mount"}, {"allow_other", "mount"},
		{"default_permissions", "mount"}, {"log_level", "mount"},
	};
	size_t n = sizeof(want) / sizeof(want[0]);
	assert_int_equal(pfs_opts_nkeys(), n);
	for (size_t i = 0; i < n; i++) {
		int k = pfs_opts_key_find(want[i].key);
		if (k < 0)
			fail_msg("no key '%s'", want[i].key);
		assert_string_equal(pfs_opts_key_name((size_t)k), want[i].key);
		assert_string_equal(pfs_opts_key_section((size_t)k), want[i].section);
	}
	assert_int_equal(pfs_opts_key_find("config"), -1);
	assert_null(pfs_opts_key_name(n));
	assert_null(pfs_opts_key_section(n));
}

/* ---- every key through the file -------------------------------------- */

static void test_every_key(void **state)
{
	(void)state;
	struct pfs_opts o;
	load_ok(&o,
		"[origin]\n"
		"endpoint = http://127.0.0.1:9000\n"
		"region = eu-west-3\n"
		"s3_path_style = yes\n"
		"manifest = https://h/set/prestofs.manifest\n"
		"allow_empty = yes\n"
		"timeout = 2.5\n"
		"retries = 7\n"
		"[cache]\n"
		"ram_size = 8G\n"
		"ssd_dir = /mnt/nvme/prestofs\n"
		"ssd_size = 200G\n"
		"ssd_compress = zstd:9\n"
		"block_size = 4M\n"
		"policy = minio\n"
		"resident = small\n"
		"[prefetch]\n"
		"prefetch = off\n"
		"prefetch_inflight = 128\n"
		"prefetch_window = 1024\n"
		"prefetch_ram_share = 0.5\n"
		"origin_bandwidth = 100M\n"
		"[mount]\n"
		"max_threads = 64\n"
		"allow_other = true\n"
		"default_permissions = 1\n");
	assert_string_equal(o.endpoint, "http://127.0.0.1:9000");
	assert_string_equal(o.region, "eu-west-3");
	assert_int_equal(o.s3_path_style, 1);
	assert_string_equal(o.manifest, "https://h/set/prestofs.manifest");
	assert_int_equal(o.allow_empty, 1);
	assert_true(o.timeout == 2.5);
	assert_int_equal(o.retries, 7);
	assert_true(o.ram_size == 8ull << 30);
	assert_string_equal(o.ssd_dir, "/mnt/nvme/prestofs");
	assert_true(o.ssd_size == 200ull << 30);
	assert_int_equal(o.ssd_compress, PFS_SSD_COMPRESS_ZSTD);
	assert_int_equal(o.ssd_zstd_level, 9);
	assert_true(o.block_size == 4ull << 20);
	assert_int_equal(o.policy, PFS_POLICY_MINIO);
	assert_int_equal(o.resident, PFS_RESIDENT_SMALL);
	assert_int_equal(o.prefetch, 0);
	assert_int_equal(o.prefetch_inflight, 128);
	assert_int_equal(o.prefetch_window, 1024);
	assert_true(o.prefetch_ram_share == 0.5);
	assert_true(o.origin_bandwidth == 100ull << 20);
	assert_int_equal(o.max_threads, 64);
	assert_int_equal(o.allow_other, 1);
	assert_int_equal(o.default_permissions, 1);
	assert_int_equal(o.cmdline_keys, 0); /* the file is not the command line */
	pfs_opts_finish(&o);
}

static void test_other_spellings(void **state)
{
	(void)state;
	struct pfs_opts o;
	/* Sections in any order, several times; indented keys; blank lines;
	 * percentages; rates per second; the other enum values. */
	load_ok(&o,
		"\n"
		"[mount]\n"
		"    max_threads = 8\n"
		"[cache]\n"
		"\tpolicy = lru\n"
		"\tresident = large\n"
		"\tssd_compress = off\n"
		"\n"
		"[prefetch]\n"
		"  prefetch_ram_share = 10%\n"
		"  origin_bandwidth = 1G/s\n"
		"[ cache ]\n"
		"  ssd_dir = none\n");
	assert_int_equal(o.max_threads, 8);
	assert_int_equal(o.policy, PFS_POLICY_LRU);
	assert_int_equal(o.resident, PFS_RESIDENT_LARGE);
	assert_int_equal(o.ssd_compress, PFS_SSD_COMPRESS_OFF);
	assert_true(o.prefetch_ram_share == 0.1);
	assert_true(o.origin_bandwidth == 1ull << 30);
	assert_null(o.ssd_dir);
	pfs_opts_finish(&o);

	load_ok(&o, "[cache]\nssd_compress = zstd\n[prefetch]\norigin_bandwidth = 0\n"
		    "prefetch_ram_share = 100%\n");
	assert_int_equal(o.ssd_compress, PFS_SSD_COMPRESS_ZSTD);
	assert_int_equal(o.ssd_zstd_level, 3);
	assert_true(o.origin_bandwidth == 0);
	assert_true(o.prefetch_ram_share == 1.0);
	pfs_opts_finish(&o);

	/* An empty file, and one with only comments, change nothing. */
	struct pfs_opts def;
	pfs_opts_init(&def);
	load_ok(&o, "");
	assert_same_settings(&o, &def);
	pfs_opts_finish(&o);
	load_ok(&o, "# nothing\n; at all\n[cache]\n");
	assert_same_settings(&o, &def);
	pfs_opts_finish(&o);
	pfs_opts_finish(&def);

	/* Vertical tab and form feed indent too (inih's isspace() would make
	 * such a line continue the key before it: "duplicate key"). */
	load_ok(&o, "[cache]\n\vram_size = 2G\n\f\r policy = lru\n \v\t ssd_dir = none\n");
	assert_true(o.ram_size == 2ull << 30);
	assert_int_equal(o.policy, PFS_POLICY_LRU);
	assert_null(o.ssd_dir);
	pfs_opts_finish(&o);

	/* A UTF-8 byte order mark and CRLF line ends. */
	load_ok(&o, "\xEF\xBB\xBF[cache]\r\nram_size = 2G\r\n");
	assert_true(o.ram_size == 2ull << 30);
	pfs_opts_finish(&o);
}

/* ---- comments ---------------------------------------------------------- */

static void test_comments(void **state)
{
	(void)state;
	struct pfs_opts o;
	load_ok(&o,
		"# a comment\n"
		"; another\n"
		"[cache]\n"
		"   # indented comment\n"
		"# ram_size = 99G\n"
		"ram_size = 2G ; inline comment after ';'\n"
		"[origin] ; comment after a section\n"
		"endpoint = http://h:9000/a;b ; the first ';' stays\n");
	assert_true(o.ram_size == 2ull << 30);
	/* A ';' with no blank before it is part of the value. */
	assert_string_equal(o.endpoint, "http://h:9000/a;b");
	pfs_opts_finish(&o);
}

static void test_hash_is_not_inline(void **state)
{
	(void)state;
	/* "lru;x" is a bad value, since ';' needs a blank before it. */
	load_fails("[cache]\npolicy = lru;x\n", 2, "'policy'", "lru;x", NULL);
	/* A '#' after a value is part of it: an error, with a hint. */
	load_fails("[cache]\n\nram_size = 2G # two gigabytes\n", 3, "'ram_size'",
		   "'2G # two gigabytes'", "'#' starts a comment only at the start", NULL);
	/* A string value keeps it (no error to report). */
	struct pfs_opts o;
	load_ok(&o, "[origin]\nregion = eu # not a comment\n");
	assert_string_equal(o.region, "eu # not a comment");
	pfs_opts_finish(&o);
}

/* ---- errors ------------------------------------------------------------ */

static void test_unknown_section(void **state)
{
	(void)state;
	load_fails("[cache]\nram_size = 1G\n\n[cahce]\nblock_size = 1M\n", 4,
		   "unknown section [cahce]", "[origin], [cache], [shared], [prefetch], [views], [mount]", NULL);
	/* Even with no keys under it. */
	load_fails("[origin]\n[bogus]\n", 2, "[bogus]", NULL);
	/* Section names are case-sensitive, like keys. */
	load_fails("[Cache]\n", 1, "[Cache]", NULL);
	load_fails("[cache\nram_size = 1G\n", 1, "no closing ']'", NULL);
	load_fails("[cache] ram_size = 1G\n", 1, "after section header", NULL);
}

static void test_unknown_key(void **state)
{
	(void)state;
	load_fails("[origin]\nretries = 3\n[cache]\nram_sise = 8G\n", 4,
		   "unknown key 'ram_sise' in [cache]", NULL);
	/* fstab's generic options are not keys of the file. */
	load_fails("[mount]\nro = yes\n", 2, "unknown key 'ro' in [mount]", NULL);
	load_fails("ram_sise = 1\n", 1, "unknown key 'ram_sise'", NULL);
	/* A line that is neither a key, a section nor a comment. */
	load_fails("[cache]\nram_size 8G\n", 2, "expected 'key = value'", "ram_size 8G", NULL);
	load_fails("[mount]\nallow_other\n", 2, "expected 'key = value'", NULL);
}

static void test_bad_values(void **state)
{
	(void)state;
	/* Bad unit: the message says what a size looks like. */
	load_fails("[cache]\n\n\n\n\n\nram_size = 8Q\n", 7,
		   "invalid value for 'ram_size': '8Q'", "(a size like 512K, 64M, 8G)", NULL);
	load_fails("[cache]\nblock_size = 1K\n", 2, "'block_size'", "'1K'", NULL);
	load_fails("[cache]\nssd_size = -1\n", 2, "'ssd_size'", NULL);
	load_fails("[cache]\nssd_dir = relative/dir\n", 2, "'ssd_dir'", "absolute", NULL);
	load_fails("[cache]\nssd_compress = zstd:20\n", 2, "'ssd_compress'", "zstd:LEVEL", NULL);
	load_fails("[cache]\nssd_compress = zstd:0\n", 2, "'ssd_compress'", NULL);
	load_fails("[cache]\nssd_compress = gzip\n", 2, "'ssd_compress'", NULL);
	load_fails("[cache]\npolicy = fifo\n", 2, "'policy'", "lru, minio or epoch", NULL);
	load_fails("[cache]\nresident = tiny\n", 2, "'resident'", "any, small or large", NULL);
	load_fails("[cache]\nram_size =\n", 2, "'ram_size' needs a value", NULL);
	load_fails("[origin]\ntimeout = 0\n", 2, "'timeout'", NULL);
	load_fails("[origin]\nretries = 101\n", 2, "'retries'", NULL);
	load_fails("[origin]\nmanifest =   \n", 2, "'manifest'", NULL);
	load_fails("[origin]\ns3_path_style = maybe\n", 2, "'s3_path_style'", NULL);
	load_fails("[prefetch]\nprefetch = sometimes\n", 2, "'prefetch'", NULL);
	load_fails("[prefetch]\nprefetch_inflight = 0\n", 2, "'prefetch_inflight'", NULL);
	load_fails("[prefetch]\nprefetch_inflight = 4097\n", 2, "'prefetch_inflight'", NULL);
	load_fails("[prefetch]\nprefetch_window = 0\n", 2, "'prefetch_window'", NULL);
	load_fails("[prefetch]\nprefetch_ram_share = 1.5\n", 2, "'prefetch_ram_share'", NULL);
	load_fails("[prefetch]\nprefetch_ram_share = 101%\n", 2, "'prefetch_ram_share'", NULL);
	load_fails("[prefetch]\nprefetch_ram_share = -0.1\n", 2, "'prefetch_ram_share'", NULL);
	load_fails("[prefetch]\norigin_bandwidth = fast\n", 2, "'origin_bandwidth'", NULL);
	load_fails("[mount]\nmax_threads = 0\n", 2, "'max_threads'", NULL);
	load_fails("[mount]\nallow_other = 2\n", 2, "'allow_other'", NULL);
	/* The first error is reported, later lines are not looked at. */
	load_fails("[cache]\nram_size = 1X\nblock_size = 1\n[nope]\n", 2, "'ram_size'", NULL);
}

static void test_wrong_section(void **state)
{
	(void)state;
	load_fails("[origin]\nram_size = 1G\n", 2,
		   "'ram_size' belongs in [cache], not in [origin]", NULL);
	load_fails("[cache]\n[mount]\nprefetch = on\n", 3,
		   "'prefetch' belongs in [prefetch], not in [mount]", NULL);
	load_fails("max_threads = 4\n[mount]\n", 1, "'max_threads'",
		   "outside any section", "[mount]", NULL);
}

static void test_duplicate_key(void **state)
{
	(void)state;
	load_fails("[cache]\nram_size = 1G\nblock_size = 1M\nram_size = 2G\n", 4,
		   "duplicate key 'ram_size'", "line 2", NULL);
	/* Also across two headers of the same section. */
	load_fails("[cache]\npolicy = lru\n[origin]\n[cache]\npolicy = lru\n", 5,
		   "duplicate key 'policy'", "line 2", NULL);
}

static void test_config_inside_file(void **state)
{
	(void)state;
	load_fails("[mount]\nconfig = /etc/other.conf\n", 2, "'config'", NULL);
}

static void test_line_too_long(void **state)
{
	(void)state;
	char text[1024];
	int n = snprintf(text, sizeof(text), "[origin]\nendpoint = http://");
	memset(text + n, 'a', 600);
	strcpy(text + n + 600, "\n");
	load_fails(text, 2, "line longer than", NULL);
	/* The limit is 198 characters, newline excluded (inih's buffer). */
	n = snprintf(text, sizeof(text), "[origin]\nendpoint = ");
	memset(text + n, 'a', 198 - (size_t)n + 9);
	strcpy(text + 198 + 9, "\n");
	struct pfs_opts o;
	load_ok(&o, text);
	assert_int_equal(strlen(o.endpoint), 198 - 11);
	pfs_opts_finish(&o);
	strcpy(text + 198 + 9, "a\n");
	load_fails(text, 2, "line longer than 198 characters", NULL);
	/* ...and at the end of a file with no newline. */
	strcpy(text + 198 + 9, "");
	load_ok(&o, text);
	pfs_opts_finish(&o);
}

static void test_file_errors(void **state)
{
	(void)state;
	struct pfs_opts o;
	pfs_opts_init(&o);
	char err[512];
	char missing[PATH_MAX + 16];
	snprintf(missing, sizeof(missing), "%s/missing.conf", dir);
	assert_int_equal(pfs_config_load(&o, missing, 0, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, missing));
	assert_non_null(strstr(err, "No such file"));
	/* A directory is not a configuration file. */
	assert_int_equal(pfs_config_load(&o, dir, 0, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, dir));
	assert_non_null(strstr(err, "not a regular file"));
	/* Nor is an oversized one. */
	FILE *f = fopen(conf, "w");
	assert_non_null(f);
	assert_int_equal(ftruncate(fileno(f), PFS_CONFIG_MAX_BYTES + 1), 0);
	fclose(f);
	assert_int_equal(pfs_config_load(&o, conf, 0, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "larger than"));
	pfs_opts_finish(&o);
}

/* ---- the command line ------------------------------------------------- */

static const char precedence_conf[] =
	"[cache]\n"
	"ram_size = 8G\n"
	"block_size = 4M\n"
	"policy = lru\n"
	"[origin]\n"
	"region = from-file\n"
	"s3_path_style = yes\n"
	"[mount]\n"
	"allow_other = yes\n";

static void check_precedence(struct parsed *p)
{
	/* Set by -o: the command line wins. */
	assert_true(p->o.ram_size == 64ull << 20);
	assert_string_equal(p->o.region, "from-cli");
	assert_int_equal(p->o.s3_path_style, 0);
	/* Only in the file. */
	assert_true(p->o.block_size == 4ull << 20);
	assert_int_equal(p->o.policy, PFS_POLICY_LRU);
	assert_int_equal(p->o.allow_other, 1);
	/* Neither: the default. */
	assert_int_equal(p->o.max_threads, 256);
	assert_string_equal(p->o.config, conf);
	/* allow_other from the file reaches libfuse too. */
	char j[1024] = "";
	size_t n = 0;
	for (int i = 0; i < p->fuse.argc; i++)
		n += (size_t)snprintf(j + n, sizeof(j) - n, "%s|", p->fuse.argv[i]);
	assert_non_null(strstr(j, "allow_other"));
}

static void test_cmdline_wins(void **state)
{
	(void)state;
	write_conf(precedence_conf);
	struct parsed p;
	/* -o before config=, after it, in the same -o list and in the
	 * mount.fuse3 order: the same result. */
	expect_parse_ok(&p, ARGS("prestofs", "-o", "ram_size=64M,region=from-cli,s3_path_style=no",
			   "-o", "@CONFOPT", "/o", "@MNT"));
	check_precedence(&p);
	done(&p);
	expect_parse_ok(&p, ARGS("prestofs", "-o", "@CONFOPT", "-o",
			   "ram_size=64M,region=from-cli,s3_path_style=no", "/o", "@MNT"));
	check_precedence(&p);
	done(&p);
	char list[PATH_MAX + 160];
	snprintf(list, sizeof(list), "ram_size=64M,config=%s,region=from-cli,s3_path_style=no",
		 conf);
	expect_parse_ok(&p, ARGS("prestofs", "/o", "@MNT", "-o", list));
	check_precedence(&p);
	done(&p);
	snprintf(list, sizeof(list), "ro,_netdev,s3_path_style=0,config=%s", conf);
	expect_parse_ok(&p, ARGS("prestofs", "/o", "-o", "region=from-cli", "@MNT", "-o", list,
			   "-o", "ram_size=64M"));
	check_precedence(&p);
	done(&p);
}

static void test_cmdline_new_keys_win(void **state)
{
	(void)state;
	write_conf("[cache]\nssd_dir = /ssd\nssd_compress = zstd:5\npolicy = minio\n"
		   "[prefetch]\nprefetch = off\norigin_bandwidth = 10M\n");
	struct parsed p;
	expect_parse_ok(&p, ARGS("prestofs", "/o", "@MNT", "-o",
			   "ssd_dir=none,ssd_compress=off,prefetch,origin_bandwidth=none",
			   "-o", "@CONFOPT"));
	assert_null(p.o.ssd_dir);
	assert_int_equal(p.o.ssd_compress, PFS_SSD_COMPRESS_OFF);
	assert_int_equal(p.o.policy, PFS_POLICY_MINIO); /* from the file */
	assert_int_equal(p.o.prefetch, 1);
	assert_true(p.o.origin_bandwidth == 0);
	done(&p);
}

static void test_cmdline_errors(void **state)
{
	(void)state;
	struct parsed p;
	/* A bad file fails the parse with the file's message... */
	write_conf("[cache]\nram_size = 8Q\n");
	parse(&p, ARGS("prestofs", "-o", "@CONFOPT", "/o", "@MNT"));
	assert_int_equal(p.rc, -EINVAL);
	char want[PATH_MAX + 128];
	snprintf(want, sizeof(want), "%s:2: invalid value for 'ram_size'", conf);
	assert_non_null(strstr(p.err, want));
	done(&p);
	/* ...even for a key that -o overrides: the file is checked whole. */
	parse(&p, ARGS("prestofs", "-o", "ram_size=1G", "-o", "@CONFOPT", "/o", "@MNT"));
	assert_int_equal(p.rc, -EINVAL);
	assert_non_null(strstr(p.err, want));
	done(&p);
	/* ...before the mountpoint is looked at. */
	parse(&p, ARGS("prestofs", "-o", "@CONFOPT", "/o", "/nonexistent/pfs-mnt"));
	assert_int_equal(p.rc, -EINVAL);
	assert_non_null(strstr(p.err, want));
	done(&p);
	/* A missing file is named. */
	char missing[PATH_MAX + 64];
	snprintf(missing, sizeof(missing), "config=%s/nope.conf", dir);
	parse(&p, ARGS("prestofs", "-o", missing, "/o", "@MNT"));
	assert_int_equal(p.rc, -EINVAL);
	assert_non_null(strstr(p.err, missing + 7));
	done(&p);
	/* config needs a value. */
	parse(&p, ARGS("prestofs", "-o", "config", "/o", "@MNT"));
	assert_int_equal(p.rc, -EINVAL);
	assert_non_null(strstr(p.err, "'config'"));
	done(&p);
	parse(&p, ARGS("prestofs", "-o", "config=", "/o", "@MNT"));
	assert_int_equal(p.rc, -EINVAL);
	done(&p);
	/* --help does not read the file. */
	expect_parse_ok(&p, ARGS("prestofs", "-o", missing, "--help"));
	assert_int_equal(p.o.show_help, 1);
	done(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table_sections),
		cmocka_unit_test(test_every_key),
		cmocka_unit_test(test_other_spellings),
		cmocka_unit_test(test_comments),
		cmocka_unit_test(test_hash_is_not_inline),
		cmocka_unit_test(test_unknown_section),
		cmocka_unit_test(test_unknown_key),
		cmocka_unit_test(test_bad_values),
		cmocka_unit_test(test_wrong_section),
		cmocka_unit_test(test_duplicate_key),
		cmocka_unit_test(test_config_inside_file),
		cmocka_unit_test(test_line_too_long),
		cmocka_unit_test(test_file_errors),
		cmocka_unit_test(test_cmdline_wins),
		cmocka_unit_test(test_cmdline_new_keys_win),
		cmocka_unit_test(test_cmdline_errors),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
