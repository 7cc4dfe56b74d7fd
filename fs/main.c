/* main.c - prestofs: mount a dataset, or `prestofs index DIR`.
 *
 * Order of a mount: parse and validate every option, open the origin, load
 * the whole listing, and only then mount, so that a bad option, a bad
 * origin or a malformed listing fails before the mountpoint changes.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <fuse_lowlevel.h>

#include "fs.h"
#include "ftable.h"
#include "options.h"
#include "../cache/bcache.h"
#include "../origin/manifest.h"
#include "../origin/origin.h"
#include "../util/log.h"

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* `prestofs index`: every directory gets a line of its own (with its
 * mtime), so empty directories survive and directory times are exact. */
static int index_entry(void *p, const char *path, int is_dir, uint64_t size,
		       int64_t mtime, const char *etag)
{
	return pfs_manifest_write_entry(p, path, is_dir, size, mtime, etag);
}

static int cmd_index(int argc, char **argv)
{
	if (argc != 3 || argv[2][0] == '-') {
		fprintf(stderr, "usage: prestofs index DIR > DIR/%s\n", PFS_MANIFEST_NAME);
		return 2;
	}
	struct pfs_origin_opts oo = {.timeout = 10};
	struct pfs_origin *o;
	if (pfs_origin_create(argv[2], &oo, &o) < 0)
		return 1;
	printf("%s\n", PFS_MANIFEST_MAGIC);
	int rc = pfs_origin_list(o, index_entry, stdout);
	pfs_origin_destroy(o);
	if (fflush(stdout) != 0 || ferror(stdout))
		rc = -EIO;
	if (rc < 0) {
		fprintf(stderr, "prestofs index: %s: %s\n", argv[2], strerror(-rc));
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "index"))
		return cmd_index(argc, argv);

	struct pfs_opts o;
	struct fuse_args fargs = FUSE_ARGS_INIT(0, NULL);
	struct pfs_origin *origin = NULL;
	struct pfs_ftable *ft = NULL;
	struct pfs_bcache *cache = NULL;
	struct pfs_fs *fs = NULL;
	struct fuse_session *se = NULL;
	struct fuse_loop_config *lcfg = NULL;
	char err[512];
	int ret = 1;

	/* A peer closing a connection must not kill us while listing, before
	 * libfuse installs its handlers. */
	signal(SIGPIPE, SIG_IGN);
	pfs_opts_init(&o);
	if (pfs_opts_parse(&o, argc, argv, &fargs, err, sizeof(err)) < 0) {
		fprintf(stderr, "prestofs: %s\n", err);
		fprintf(stderr, "Try 'prestofs --help'.\n");
		goto out_opts;
	}
	if (o.show_help) {
		pfs_opts_usage("prestofs");
		ret = 0;
		goto out_opts;
	}
	if (o.show_version) {
		printf("prestofs %s (libfuse %s, %s)\n", PFS_VERSION, fuse_pkgversion(),
		       "libcurl");
		ret = 0;
		goto out_opts;
	}
	pfs_log_set_level(o.debug ? PFS_LOG_DEBUG : PFS_LOG_INFO);
	pfs_log_route_fuse();

	struct pfs_origin_opts oo = {
		.manifest = o.manifest, .endpoint = o.endpoint, .region = o.region,
		.s3_path_style = o.s3_path_style, .timeout = o.timeout,
		.retries = (int)o.retries,
	};
	if (pfs_origin_create(o.origin, &oo, &origin) < 0)
		goto out_opts;
	ft = pfs_ftable_create();
	if (!ft)
		goto out_origin;
	double t0 = now_s();
	int rc = pfs_origin_list(origin, pfs_ftable_add, ft);
	if (rc == 0)
		rc = pfs_ftable_finish(ft);
	if (rc < 0) {
		pfs_err("listing %s failed: %s", pfs_origin_name(origin), strerror(-rc));
		goto out_ft;
	}
	pfs_info("%s: %u entries, %llu bytes, listed in %.2f s (%zu bytes of metadata)",
		 pfs_origin_name(origin), pfs_ftable_count(ft),
		 (unsigned long long)pfs_ftable_total_bytes(ft), now_s() - t0,
		 pfs_ftable_memory(ft));

	if (pfs_bcache_create(o.ram_size, o.block_size, &cache) < 0)
		goto out_ft;
	struct pfs_fs_conf conf = {ft, origin, cache, o.block_size};
	if (pfs_fs_create(&conf, &fs) < 0)
		goto out_cache;
	se = fuse_session_new(&fargs, pfs_fs_ops(), sizeof(struct fuse_lowlevel_ops), fs);
	if (!se)
		goto out_fs;
	if (fuse_set_signal_handlers(se) != 0)
		goto out_session;
	if (fuse_session_mount(se, o.mountpoint) != 0)
		goto out_signals;
	if (!o.foreground)
		pfs_log_use_syslog(1);
	if (fuse_daemonize(o.foreground) != 0)
		goto out_unmount;
	lcfg = fuse_loop_cfg_create();
	if (!lcfg)
		goto out_unmount;
	/* Each reader blocked on the origin holds a worker: the default 10
	 * would cap a 20 ms origin at 500 files/s. */
	fuse_loop_cfg_set_max_threads(lcfg, (unsigned)o.max_threads);
	fuse_loop_cfg_set_idle_threads(lcfg, (unsigned)(o.max_threads / 4 + 1));
	ret = fuse_session_loop_mt(se, lcfg) != 0;
	fuse_loop_cfg_destroy(lcfg);
out_unmount:
	fuse_session_unmount(se);
out_signals:
	fuse_remove_signal_handlers(se);
out_session:
	fuse_session_destroy(se);
out_fs:
	pfs_fs_destroy(fs);
out_cache:
	pfs_bcache_destroy(cache);
out_ft:
	pfs_ftable_destroy(ft);
out_origin:
	pfs_origin_destroy(origin);
out_opts:
	fuse_opt_free_args(&fargs);
	pfs_opts_finish(&o);
	return ret;
}
