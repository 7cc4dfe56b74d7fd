/* test_options.c - tools/options.h: defaults, every key through
 * pfs_opts_set(), and command lines in both the mount order
 * (-o a,b ORIGIN MNT) and mount.fuse3's order (ORIGIN MNT -o a,b); the
 * configuration file (-o config=) is tested in test_config.c. The
 * mountpoint is a real temporary directory, since parsing resolves it
 * with realpath(). The table itself, the help and the example file are
 * tested in test_usage.c. */
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

static int group_setup(void **state)
{
	(void)state;
	char tmpl[] = "/tmp/pfs-test-options-XXXXXX";
	if (!mkdtemp(tmpl))
		return -1;
	if (!realpath(tmpl, mnt))
		return -1;
	snprintf(mnt_messy, sizeof(mnt_messy), "%s/./", tmpl);
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	return rmdir(mnt);
}

/* ---- pfs_opts_init / pfs_opts_set ------------------------------------ */

static void test_defaults(void **state)
{
	(void)state;
	struct pfs_opts o;
	memset(&o, 0xa5, sizeof(o));
	pfs_opts_init(&o);
	assert_null(o.origin);
	assert_null(o.mountpoint);
	assert_int_equal(o.foreground, 0);
	assert_int_equal(o.debug, 0);
	assert_int_equal(o.show_help, 0);
	assert_int_equal(o.show_version, 0);
	assert_true(o.ram_size == 1ull << 30);
	assert_true(o.block_size == 1ull << 20);
	assert_true(o.timeout == 10.0);
	assert_int_equal(o.retries, 5);
	assert_null(o.manifest);
	assert_null(o.endpoint);
	assert_null(o.region);
	assert_int_equal(o.s3_path_style, 0);
	assert_int_equal(o.allow_empty, 0);
	assert_int_equal(o.max_threads, 256);
	assert_int_equal(o.allow_other, 0);
	assert_int_equal(o.default_permissions, 0);
	/* The keys of the configuration file's [cache] and [prefetch]. */
	assert_null(o.config);
	assert_null(o.ssd_dir);
	assert_true(o.ssd_size == 0);
	assert_int_equal(o.ssd_compress, PFS_SSD_COMPRESS_AUTO);
	assert_int_equal(o.ssd_zstd_level, 3);
	assert_int_equal(o.policy, PFS_POLICY_EPOCH);
	assert_int_equal(o.resident, PFS_RESIDENT_ANY);
	assert_int_equal(o.prefetch, 1);
	assert_int_equal(o.prefetch_inflight, 128);
	assert_int_equal(o.prefetch_window, 256);
	assert_true(o.prefetch_ram_share == 0.25);
	assert_true(o.origin_bandwidth == 0);
	assert_true(o.cmdline_keys == 0);
	pfs_opts_finish(&o);
	assert_null(o.origin);
}

static void set_ok(struct pfs_opts *o, const char *key, const char *value)
{
	char err[256] = "";
	int rc = pfs_opts_set(o, key, value, err, sizeof(err));
	if (rc != 0)
		fail_msg("set %s=%s: %d (%s)", key, value ? value : "(flag)", rc, err);
}

static void set_bad(const char *key, const char *value, int rc_want)
{
	struct pfs_opts o;
	pfs_opts_init(&o);
	struct pfs_opts before = o;
	char err[256] = "";
	int rc = pfs_opts_set(&o, key, value, err, sizeof(err));
	if (rc != rc_want)
		fail_msg("set %s=%s: %d, want %d", key, value ? value : "(flag)", rc, rc_want);
	/* The message names the key, quoted. */
	char quoted[96];
	snprintf(quoted, sizeof(quoted), "'%s'", key);
	if (!strstr(err, quoted))
		fail_msg("set %s=%s: error '%s' does not name %s", key,
			 value ? value : "(flag)", err, quoted);
	/* And nothing changed. */
	assert_memory_equal(&o, &before, sizeof(o));
	pfs_opts_finish(&o);
}

static void test_each_key(void **state)
{
	(void)state;
	struct pfs_opts o;
	pfs_opts_init(&o);
	set_ok(&o, "ram_size", "64M");
	assert_true(o.ram_size == 64ull << 20);
	set_ok(&o, "ram_size", "0");
	assert_true(o.ram_size == 0);
	set_ok(&o, "ram_size", "2GiB");
	assert_true(o.ram_size == 2ull << 30);
	set_ok(&o, "block_size", "512K");
	assert_true(o.block_size == 512ull << 10);
	set_ok(&o, "block_size", "4096");      /* lower bound */
	assert_true(o.block_size == 4096);
	set_ok(&o, "block_size", "64M");       /* upper bound */
	assert_true(o.block_size == 64ull << 20);
	set_ok(&o, "timeout", "2.5");
	assert_true(o.timeout == 2.5);
	set_ok(&o, "timeout", "0.001");
	assert_true(o.timeout == 0.001);
	set_ok(&o, "retries", "0");
	assert_int_equal(o.retries, 0);
	set_ok(&o, "retries", "100");
	assert_int_equal(o.retries, 100);
	set_ok(&o, "max_threads", "1");
	assert_int_equal(o.max_threads, 1);
	set_ok(&o, "max_threads", "100000");
	assert_int_equal(o.max_threads, 100000);
	set_ok(&o, "manifest", "https://h/set/prestofs.manifest");
	assert_string_equal(o.manifest, "https://h/set/prestofs.manifest");
	set_ok(&o, "manifest", "/local/m"); /* replaces (and frees) the old one */
	assert_string_equal(o.manifest, "/local/m");
	set_ok(&o, "endpoint", "http://127.0.0.1:9000");
	assert_string_equal(o.endpoint, "http://127.0.0.1:9000");
	set_ok(&o, "region", "eu-west-3");
	assert_string_equal(o.region, "eu-west-3");
	/* Flags: bare, or an explicit boolean. */
	static const char *const flags[] = {"s3_path_style", "allow_other",
					    "default_permissions", "allow_empty"};
	int *fields[] = {&o.s3_path_style, &o.allow_other, &o.default_permissions,
			 &o.allow_empty};
	for (int i = 0; i < 4; i++) {
		set_ok(&o, flags[i], NULL);
		assert_int_equal(*fields[i], 1);
		set_ok(&o, flags[i], "0");
		assert_int_equal(*fields[i], 0);
		set_ok(&o, flags[i], "true");
		assert_int_equal(*fields[i], 1);
		set_ok(&o, flags[i], "no");
		assert_int_equal(*fields[i], 0);
		set_ok(&o, flags[i], "yes");
		assert_int_equal(*fields[i], 1);
		set_ok(&o, flags[i], "false");
		assert_int_equal(*fields[i], 0);
		set_ok(&o, flags[i], "1");
		assert_int_equal(*fields[i], 1);
	}
	pfs_opts_finish(&o);
	assert_null(o.manifest);
	assert_null(o.endpoint);
	assert_null(o.region);
}

static void test_each_new_key(void **state)
{
	(void)state;
	struct pfs_opts o;
	pfs_opts_init(&o);
	set_ok(&o, "ssd_dir", "/mnt/nvme/cache");
	assert_string_equal(o.ssd_dir, "/mnt/nvme/cache");
	set_ok(&o, "ssd_dir", "/other");   /* replaces (and frees) the old one */
	assert_string_equal(o.ssd_dir, "/other");
	set_ok(&o, "ssd_dir", "none");
	assert_null(o.ssd_dir);
	set_ok(&o, "ssd_size", "500G");
	assert_true(o.ssd_size == 500ull << 30);
	set_ok(&o, "ssd_size", "0");
	assert_true(o.ssd_size == 0);
	set_ok(&o, "ssd_compress", "zstd:19");
	assert_int_equal(o.ssd_compress, PFS_SSD_COMPRESS_ZSTD);
	assert_int_equal(o.ssd_zstd_level, 19);
	set_ok(&o, "ssd_compress", "zstd:1");
	assert_int_equal(o.ssd_zstd_level, 1);
	set_ok(&o, "ssd_compress", "zstd");   /* the default level */
	assert_int_equal(o.ssd_compress, PFS_SSD_COMPRESS_ZSTD);
	assert_int_equal(o.ssd_zstd_level, 3);
	set_ok(&o, "ssd_compress", "off");
	assert_int_equal(o.ssd_compress, PFS_SSD_COMPRESS_OFF);
	set_ok(&o, "ssd_compress", "auto");
	assert_int_equal(o.ssd_compress, PFS_SSD_COMPRESS_AUTO);
	static const char *const policies[] = {"lru", "minio", "epoch"};
	static const enum pfs_policy pvals[] = {PFS_POLICY_LRU, PFS_POLICY_MINIO,
						PFS_POLICY_EPOCH};
	for (int i = 0; i < 3; i++) {
		set_ok(&o, "policy", policies[i]);
		assert_int_equal(o.policy, pvals[i]);
	}
	static const char *const residents[] = {"any", "small", "large"};
	static const enum pfs_resident rvals[] = {PFS_RESIDENT_ANY, PFS_RESIDENT_SMALL,
						  PFS_RESIDENT_LARGE};
	for (int i = 0; i < 3; i++) {
		set_ok(&o, "resident", residents[i]);
		assert_int_equal(o.resident, rvals[i]);
	}
	set_ok(&o, "prefetch", "off");
	assert_int_equal(o.prefetch, 0);
	set_ok(&o, "prefetch", NULL);
	assert_int_equal(o.prefetch, 1);
	set_ok(&o, "prefetch", "OFF");
	assert_int_equal(o.prefetch, 0);
	set_ok(&o, "prefetch", "on");
	assert_int_equal(o.prefetch, 1);
	set_ok(&o, "prefetch_inflight", "1");
	assert_int_equal(o.prefetch_inflight, 1);
	set_ok(&o, "prefetch_inflight", "4096");
	assert_int_equal(o.prefetch_inflight, 4096);
	set_ok(&o, "prefetch_window", "1");
	assert_int_equal(o.prefetch_window, 1);
	set_ok(&o, "prefetch_window", "100000");
	assert_int_equal(o.prefetch_window, 100000);
	set_ok(&o, "prefetch_ram_share", "0");
	assert_true(o.prefetch_ram_share == 0);
	set_ok(&o, "prefetch_ram_share", "1");
	assert_true(o.prefetch_ram_share == 1);
	set_ok(&o, "prefetch_ram_share", "0.4");
	assert_true(o.prefetch_ram_share == 0.4);
	set_ok(&o, "prefetch_ram_share", "25%");
	assert_true(o.prefetch_ram_share == 0.25);
	set_ok(&o, "prefetch_ram_share", "12.5%");
	assert_true(o.prefetch_ram_share == 0.125);
	set_ok(&o, "origin_bandwidth", "100M");
	assert_true(o.origin_bandwidth == 100ull << 20);
	set_ok(&o, "origin_bandwidth", "2G/s");
	assert_true(o.origin_bandwidth == 2ull << 30);
	set_ok(&o, "origin_bandwidth", "512KB/s");
	assert_true(o.origin_bandwidth == 512ull << 10);
	set_ok(&o, "origin_bandwidth", "none");
	assert_true(o.origin_bandwidth == 0);
	set_ok(&o, "origin_bandwidth", "1000");
	assert_true(o.origin_bandwidth == 1000);
	set_ok(&o, "origin_bandwidth", "0");
	assert_true(o.origin_bandwidth == 0);
	/* Every flag takes on/off as well. */
	set_ok(&o, "allow_other", "on");
	assert_int_equal(o.allow_other, 1);
	set_ok(&o, "allow_other", "off");
	assert_int_equal(o.allow_other, 0);
	pfs_opts_finish(&o);
	assert_null(o.ssd_dir);
}

static void test_new_bad_values(void **state)
{
	(void)state;
	set_bad("ssd_dir", "relative/dir", -EINVAL);
	set_bad("ssd_dir", "", -EINVAL);
	set_bad("ssd_dir", NULL, -EINVAL);
	set_bad("ssd_size", "big", -EINVAL);
	set_bad("ssd_size", "-5G", -EINVAL);
	set_bad("ssd_compress", "zstd:0", -EINVAL);
	set_bad("ssd_compress", "zstd:20", -EINVAL);
	set_bad("ssd_compress", "zstd:", -EINVAL);
	set_bad("ssd_compress", "zstd:3x", -EINVAL);
	set_bad("ssd_compress", "zstd3", -EINVAL);
	set_bad("ssd_compress", "lz4", -EINVAL);
	set_bad("ssd_compress", "ZSTD", -EINVAL);
	set_bad("ssd_compress", NULL, -EINVAL);
	set_bad("policy", "fifo", -EINVAL);
	set_bad("policy", "LRU", -EINVAL);
	set_bad("policy", "", -EINVAL);
	set_bad("policy", NULL, -EINVAL);
	set_bad("resident", "medium", -EINVAL);
	set_bad("resident", NULL, -EINVAL);
	set_bad("prefetch", "maybe", -EINVAL);
	set_bad("prefetch", "", -EINVAL);
	set_bad("prefetch_inflight", "0", -EINVAL);
	set_bad("prefetch_inflight", "4097", -EINVAL);
	set_bad("prefetch_inflight", "lots", -EINVAL);
	set_bad("prefetch_window", "0", -EINVAL);
	set_bad("prefetch_window", "-1", -EINVAL);
	set_bad("prefetch_window", "99999999999", -EINVAL);
	set_bad("prefetch_ram_share", "1.01", -EINVAL);
	set_bad("prefetch_ram_share", "101%", -EINVAL);
	set_bad("prefetch_ram_share", "-0.5", -EINVAL);
	set_bad("prefetch_ram_share", "%", -EINVAL);
	set_bad("prefetch_ram_share", ".", -EINVAL);
	set_bad("prefetch_ram_share", "0.1.2", -EINVAL);
	set_bad("prefetch_ram_share", "1e-1", -EINVAL);
	set_bad("prefetch_ram_share", "half", -EINVAL);
	set_bad("prefetch_ram_share", NULL, -EINVAL);
	set_bad("origin_bandwidth", "fast", -EINVAL);
	set_bad("origin_bandwidth", "100M/h", -EINVAL);
	set_bad("origin_bandwidth", "/s", -EINVAL);
	set_bad("origin_bandwidth", "-1", -EINVAL);
	set_bad("origin_bandwidth", NULL, -EINVAL);
	/* The message says what a valid value looks like. */
	struct pfs_opts o;
	pfs_opts_init(&o);
	char err[256] = "";
	assert_int_equal(pfs_opts_set(&o, "policy", "fifo", err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "'fifo'"));
	assert_non_null(strstr(err, "lru, minio or epoch"));
	assert_int_equal(pfs_opts_set(&o, "ssd_compress", "zstd:42", err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "1 to 19"));
	pfs_opts_finish(&o);
}

static void test_bad_values_name_the_key(void **state)
{
	(void)state;
	set_bad("ram_size", "lots", -EINVAL);
	set_bad("ram_size", "-1", -EINVAL);
	set_bad("ram_size", "1Q", -EINVAL);
	set_bad("ram_size", "99999999999T", -EINVAL);
	set_bad("ram_size", "", -EINVAL);
	set_bad("ram_size", NULL, -EINVAL);
	set_bad("block_size", "4095", -EINVAL);   /* below 4 KiB */
	set_bad("block_size", "1K", -EINVAL);
	set_bad("block_size", "65M", -EINVAL);    /* above 64 MiB */
	set_bad("block_size", "0", -EINVAL);
	set_bad("timeout", "0", -EINVAL);         /* must be > 0 */
	set_bad("timeout", "-1", -EINVAL);
	set_bad("timeout", "ten", -EINVAL);
	set_bad("timeout", "10s", -EINVAL);
	set_bad("timeout", NULL, -EINVAL);
	set_bad("retries", "101", -EINVAL);
	set_bad("retries", "-1", -EINVAL);
	set_bad("retries", "1.5", -EINVAL);
	set_bad("retries", "", -EINVAL);
	set_bad("max_threads", "0", -EINVAL);
	set_bad("max_threads", "100001", -EINVAL);
	set_bad("max_threads", "many", -EINVAL);
	set_bad("manifest", "", -EINVAL);
	set_bad("manifest", NULL, -EINVAL);
	set_bad("endpoint", NULL, -EINVAL);
	set_bad("region", "", -EINVAL);
	set_bad("s3_path_style", "maybe", -EINVAL);
	set_bad("allow_other", "2", -EINVAL);
	set_bad("default_permissions", "", -EINVAL);
	/* A bad size says what a size looks like. */
	struct pfs_opts o;
	pfs_opts_init(&o);
	char err[256] = "";
	assert_int_equal(pfs_opts_set(&o, "ram_size", "lots", err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "lots"));
	assert_non_null(strstr(err, "64M"));
	pfs_opts_finish(&o);
}

static void test_unknown_key(void **state)
{
	(void)state;
	set_bad("config", "/etc/x.conf", -ENOENT); /* only -o config= */
	set_bad("ramsize", "1G", -ENOENT);
	set_bad("RAM_SIZE", "1G", -ENOENT);
	set_bad("", "1", -ENOENT);
	set_bad("origin", "/x", -ENOENT);
	set_bad("mountpoint", "/x", -ENOENT);
	set_bad("foreground", NULL, -ENOENT);
}

/* ---- pfs_opts_parse --------------------------------------------------- */

static void check_common(struct parsed *p)
{
	assert_string_equal(p->o.origin, "/data/set");
	assert_string_equal(p->o.mountpoint, mnt);
	assert_true(p->o.ram_size == 64ull << 20);
	assert_true(p->o.block_size == 256ull << 10);
	assert_int_equal(p->o.retries, 2);
	assert_int_equal(p->o.allow_other, 1);
	char j[1024];
	fuse_joined(&p->fuse, j, sizeof(j));
	assert_string_equal(j, "prestofs|-o|subtype=prestofs,max_read=1048576,noatime|"
			       "-o|fsname=/data/set,allow_other");
}

static void test_parse_mount_order(void **state)
{
	(void)state;
	struct parsed p;
	expect_parse_ok(&p, ARGS("prestofs", "-o", "ram_size=64M,block_size=256K",
				 "-o", "retries=2,allow_other", "/data/set", "@MNT"));
	check_common(&p);
	assert_int_equal(p.o.foreground, 0);
	done(&p);
	/* Attached -oOPTS too. */
	expect_parse_ok(&p, ARGS("prestofs", "-oram_size=64M,block_size=256K,retries=2",
				 "-oallow_other", "/data/set", "@MNT"));
	check_common(&p);
	done(&p);
}

static void test_parse_mount_helper_order(void **state)
{
	(void)state;
	/* mount.fuse3 runs: prestofs SOURCE MOUNTPOINT -o OPTS */
	struct parsed p;
	expect_parse_ok(&p, ARGS("prestofs", "/data/set", "@MNT", "-o",
				 "ram_size=64M,block_size=256K,retries=2,allow_other"));
	check_common(&p);
	done(&p);
	/* Options between the two positionals as well. */
	expect_parse_ok(&p, ARGS("prestofs", "/data/set", "-o", "ram_size=64M,retries=2",
				 "@MNT", "-o", "block_size=256K,allow_other"));
	check_common(&p);
	done(&p);
}

static void test_parse_fstab_generics(void **state)
{
	(void)state;
	struct parsed p;
	expect_parse_ok(&p, ARGS("prestofs", "s3://bkt/pre", "@MNT", "-o",
				 "ro,rw,defaults,nofail,noauto,auto,_netdev,user,users,nouser,"
				 "owner,group,exec,noexec,suid,nosuid,dev,nodev,atime,noatime,"
				 "relatime,nodiratime,sync,async,comment=anything,"
				 "x-systemd.automount,x-systemd.idle-timeout=60,"
				 "x-systemd.requires=network-online.target,"
				 "x-systemd.mount-timeout=30s,x-gvfs-hide,"
				 "region=eu-west-1,s3_path_style"));
	assert_string_equal(p.o.origin, "s3://bkt/pre");
	assert_string_equal(p.o.region, "eu-west-1");
	assert_int_equal(p.o.s3_path_style, 1);
	/* Generic options change nothing of ours. */
	assert_true(p.o.ram_size == 1ull << 30);
	assert_int_equal(p.o.allow_other, 0);
	char j[1024];
	fuse_joined(&p.fuse, j, sizeof(j));
	/* ...nor reach libfuse (fstab's own words are not passed on; our
	 * fixed options are: noatime always). */
	assert_null(strstr(j, "rw"));
	assert_null(strstr(j, "x-systemd"));
	assert_string_equal(j, "prestofs|-o|subtype=prestofs,max_read=1048576,noatime|"
			       "-o|fsname=s3://bkt/pre");
	done(&p);
}

static void test_parse_flags(void **state)
{
	(void)state;
	struct parsed p;
	expect_parse_ok(&p, ARGS("prestofs", "-f", "/o", "@MNT"));
	assert_int_equal(p.o.foreground, 1);
	assert_int_equal(p.o.debug, 0);
	char j[1024];
	fuse_joined(&p.fuse, j, sizeof(j));
	assert_null(strstr(j, "-d"));
	done(&p);

	expect_parse_ok(&p, ARGS("prestofs", "/o", "@MNT", "-d"));
	assert_int_equal(p.o.debug, 1);
	assert_int_equal(p.o.foreground, 1); /* -d implies -f */
	fuse_joined(&p.fuse, j, sizeof(j));
	assert_string_equal(j, "prestofs|-o|subtype=prestofs,max_read=1048576,noatime|"
			       "-o|fsname=/o|-d");
	done(&p);

	expect_parse_ok(&p, ARGS("prestofs", "/o", "@MNT", "-o", "debug"));
	assert_int_equal(p.o.debug, 1);
	assert_int_equal(p.o.foreground, 1);
	done(&p);

	expect_parse_ok(&p, ARGS("prestofs", "-o", "default_permissions,allow_other",
				 "/o", "@MNT"));
	fuse_joined(&p.fuse, j, sizeof(j));
	assert_string_equal(j, "prestofs|-o|subtype=prestofs,max_read=1048576,noatime|"
			       "-o|fsname=/o,allow_other,default_permissions");
	done(&p);
}

static void test_parse_help_version(void **state)
{
	(void)state;
	static const char *const help[] = {"-h", "--help"};
	static const char *const version[] = {"-V", "--version"};
	struct parsed p;
	for (int i = 0; i < 2; i++) {
		/* No ORIGIN or MOUNTPOINT needed. */
		expect_parse_ok(&p, ARGS("prestofs", help[i]));
		assert_int_equal(p.o.show_help, 1);
		assert_int_equal(p.o.show_version, 0);
		done(&p);
		expect_parse_ok(&p, ARGS("prestofs", version[i]));
		assert_int_equal(p.o.show_version, 1);
		assert_int_equal(p.o.show_help, 0);
		done(&p);
		/* Alongside a full command line too. */
		expect_parse_ok(&p, ARGS("prestofs", "/o", "@MNT", help[i]));
		assert_int_equal(p.o.show_help, 1);
		done(&p);
	}
}

static void test_parse_mountpoint_resolved(void **state)
{
	(void)state;
	struct parsed p;
	expect_parse_ok(&p, ARGS("prestofs", "/o", "@MESSY"));
	assert_string_equal(p.o.mountpoint, mnt);
	done(&p);
	/* A relative mountpoint becomes absolute. */
	char cwd[PATH_MAX];
	assert_non_null(getcwd(cwd, sizeof(cwd)));
	assert_int_equal(chdir(mnt), 0);
	expect_parse_ok(&p, ARGS("prestofs", "/o", "."));
	assert_int_equal(chdir(cwd), 0);
	assert_string_equal(p.o.mountpoint, mnt);
	done(&p);
}

static void test_parse_errors(void **state)
{
	(void)state;
	/* Missing operands. */
	expect_parse_fails(ARGS("prestofs"), "usage");
	expect_parse_fails(ARGS("prestofs", "/o"), "usage");
	expect_parse_fails(ARGS("prestofs", "-o", "ram_size=1G", "/o"), "usage");
	expect_parse_fails(ARGS("prestofs", "-f", "/o"), "usage");
	/* One too many. */
	expect_parse_fails(ARGS("prestofs", "/o", "@MNT", "extra"), "extra");
	/* A mountpoint that does not exist. */
	expect_parse_fails(ARGS("prestofs", "/o", "/nonexistent/pfs-mnt"), "/nonexistent/pfs-mnt");
	/* Unknown options are named, whether -o or dashed. */
	expect_parse_fails(ARGS("prestofs", "-o", "bogus=1", "/o", "@MNT"), "'bogus'");
	expect_parse_fails(ARGS("prestofs", "/o", "@MNT", "-o", "ro,frobnicate"),
			   "'frobnicate'");
	expect_parse_fails(ARGS("prestofs", "-x", "/o", "@MNT"), "'-x'");
	expect_parse_fails(ARGS("prestofs", "/o", "@MNT", "--bogus"), "'--bogus'");
	expect_parse_fails(ARGS("prestofs", "/o", "@MNT", "-o",
				"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa=1"),
			   "unknown option 'aaaa");
	/* Bad values name their key, in either order. */
	expect_parse_fails(ARGS("prestofs", "-o", "ram_size=lots", "/o", "@MNT"), "'ram_size'");
	expect_parse_fails(ARGS("prestofs", "/o", "@MNT", "-o", "timeout=0"), "'timeout'");
	expect_parse_fails(ARGS("prestofs", "/o", "@MNT", "-o", "retries"), "'retries'");
	expect_parse_fails(ARGS("prestofs", "/o", "@MNT", "-o", "allow_other=perhaps"),
			   "'allow_other'");
	/* The first error wins; later good options do not clear it. */
	expect_parse_fails(ARGS("prestofs", "-o", "block_size=1,ram_size=1G", "/o", "@MNT"),
			   "'block_size'");
	/* -o with nothing after it. */
	expect_parse_fails(ARGS("prestofs", "/o", "@MNT", "-o"), NULL);
}

static void test_parse_new_keys(void **state)
{
	(void)state;
	struct parsed p;
	expect_parse_ok(&p, ARGS("prestofs", "/o", "@MNT", "-o",
				 "ssd_dir=/ssd,ssd_size=10G,ssd_compress=zstd:7,policy=lru,"
				 "resident=large,prefetch=off,prefetch_inflight=8,"
				 "prefetch_window=16,prefetch_ram_share=50%,origin_bandwidth=1G"));
	assert_string_equal(p.o.ssd_dir, "/ssd");
	assert_true(p.o.ssd_size == 10ull << 30);
	assert_int_equal(p.o.ssd_compress, PFS_SSD_COMPRESS_ZSTD);
	assert_int_equal(p.o.ssd_zstd_level, 7);
	assert_int_equal(p.o.policy, PFS_POLICY_LRU);
	assert_int_equal(p.o.resident, PFS_RESIDENT_LARGE);
	assert_int_equal(p.o.prefetch, 0);
	assert_int_equal(p.o.prefetch_inflight, 8);
	assert_int_equal(p.o.prefetch_window, 16);
	assert_true(p.o.prefetch_ram_share == 0.5);
	assert_true(p.o.origin_bandwidth == 1ull << 30);
	/* None of it goes to libfuse. */
	char j[1024];
	fuse_joined(&p.fuse, j, sizeof(j));
	assert_string_equal(j, "prestofs|-o|subtype=prestofs,max_read=1048576,noatime|"
			       "-o|fsname=/o");
	/* Each key set here has its bit, and only those. */
	uint64_t want = 0;
	static const char *const set[] = {
		"ssd_dir", "ssd_size", "ssd_compress", "policy", "resident", "prefetch",
		"prefetch_inflight", "prefetch_window", "prefetch_ram_share",
		"origin_bandwidth"};
	for (size_t i = 0; i < sizeof(set) / sizeof(set[0]); i++) {
		int k = pfs_opts_key_find(set[i]);
		assert_true(k >= 0);
		want |= 1ull << k;
	}
	assert_true(p.o.cmdline_keys == want);
	done(&p);

	/* Generic fstab options and config= mark nothing. */
	expect_parse_ok(&p, ARGS("prestofs", "/o", "@MNT", "-o", "ro,_netdev,prefetch"));
	assert_true(p.o.cmdline_keys == 1ull << pfs_opts_key_find("prefetch"));
	done(&p);

	expect_parse_fails(ARGS("prestofs", "/o", "@MNT", "-o", "policy=fifo"), "'policy'");
	expect_parse_fails(ARGS("prestofs", "/o", "@MNT", "-o", "ssd_dir=rel"), "'ssd_dir'");
	expect_parse_fails(ARGS("prestofs", "/o", "@MNT", "-o", "config"), "'config'");
	expect_parse_fails(ARGS("prestofs", "/o", "@MNT", "-o", "config=/nonexistent/x.conf"),
			   "/nonexistent/x.conf");
}

static void test_parse_fsname_escaped(void **state)
{
	(void)state;
	/* An origin with a comma must not split the -o list libfuse gets. */
	struct parsed p;
	expect_parse_ok(&p, ARGS("prestofs", "/data/a,b", "@MNT"));
	assert_string_equal(p.o.origin, "/data/a,b");
	char j[1024];
	fuse_joined(&p.fuse, j, sizeof(j));
	assert_string_equal(j, "prestofs|-o|subtype=prestofs,max_read=1048576,noatime|"
			       "-o|fsname=/data/a\\,b");
	done(&p);
}

static void test_parse_fsname_no_secrets(void **state)
{
	(void)state;
	/* fsname shows in /proc/mounts: no userinfo, no query string. */
	struct parsed p;
	expect_parse_ok(&p, ARGS("prestofs", "https://user:p%40ss@word@host:8443/set/?sig=SECRET",
				 "@MNT"));
	char j[1024];
	fuse_joined(&p.fuse, j, sizeof(j));
	assert_null(strstr(j, "user"));
	assert_null(strstr(j, "word"));
	assert_null(strstr(j, "SECRET"));
	assert_non_null(strstr(j, "fsname=https://host:8443/set/"));
	done(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_fsname_no_secrets),
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_each_key),
		cmocka_unit_test(test_each_new_key),
		cmocka_unit_test(test_new_bad_values),
		cmocka_unit_test(test_bad_values_name_the_key),
		cmocka_unit_test(test_unknown_key),
		cmocka_unit_test(test_parse_mount_order),
		cmocka_unit_test(test_parse_mount_helper_order),
		cmocka_unit_test(test_parse_fstab_generics),
		cmocka_unit_test(test_parse_flags),
		cmocka_unit_test(test_parse_help_version),
		cmocka_unit_test(test_parse_mountpoint_resolved),
		cmocka_unit_test(test_parse_errors),
		cmocka_unit_test(test_parse_new_keys),
		cmocka_unit_test(test_parse_fsname_escaped),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
