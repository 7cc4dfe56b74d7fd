/* main.c - prestofs: mount a dataset, or `prestofs index DIR`.
 *
 * Order of a mount: parse and validate every option, open the origin, load
 * the whole listing, and only then mount, so that a bad option, a bad
 * origin or a malformed listing fails before the mountpoint changes.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <fuse_lowlevel.h>

#include "../fs/fs.h"
#include "../catalog/ftable.h"
#include "../catalog/listing.h"
#include "config.h"
#include "options.h"
#include "profile.h"
#include "stat.h"
#include "warmcmd.h"
#include "usage.h"
#include "../fs/views.h"
#include "../cache/bcache.h"
#include "../cache/ssd.h"
#include "../cache/shared.h"
#include "../fs/ctl.h"
#include "../origin/counters.h"
#include "../origin/manifest.h"
#include "../origin/origin.h"
#include "../cache/epoch.h"
#include "../prefetch/prefetch.h"
#include "../util/atomic.h"
#include "../util/log.h"
#include "../util/notify.h"
#include "../util/clock.h"
#include "../util/stats.h"
#include "../util/memtrim.h"

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

/* Listing into the file table; with an SSD tier, also into a manifest
 * text kept there, so a remount can come up while the origin is down. */
struct listing_tee {
	struct pfs_ftable *ft;
	FILE *copy; /* NULL: no copy */
};

static int tee_entry(void *p, const char *path, int is_dir, uint64_t size,
		     int64_t mtime, const char *etag)
{
	struct listing_tee *t = p;
	int rc = pfs_ftable_add(t->ft, path, is_dir, size, mtime, etag);
	if (rc == 0 && t->copy)
		rc = pfs_manifest_write_entry(t->copy, path, is_dir, size, mtime, etag);
	return rc;
}

static int list_origin(const char *origin_str, const struct pfs_origin_opts *oo,
		       struct pfs_ssd *ssd, struct pfs_ftable *ft)
{
	struct pfs_origin *o;
	int rc = pfs_origin_create(origin_str, oo, &o);
	if (rc < 0)
		return rc;
	char *text = NULL;
	size_t len = 0;
	struct listing_tee t = {ft, ssd ? open_memstream(&text, &len) : NULL};
	if (t.copy)
		fprintf(t.copy, "%s\n", PFS_MANIFEST_MAGIC);
	rc = pfs_origin_list(o, tee_entry, &t);
	pfs_origin_destroy(o);
	if (t.copy && fclose(t.copy) != 0 && rc == 0)
		rc = -ENOMEM;
	if (rc == 0 && ssd && pfs_ssd_save_listing(ssd, text, len) < 0)
		pfs_warn("could not keep the listing in the SSD tier");
	free(text);
	return rc;
}

/* Loads the whole listing before the mount. With a listing saved in the SSD
 * tier, the origin gets one attempt (one timeout), then the saved listing
 * is used, with a warning: everything cached stays readable. */
static int load_listing(const struct pfs_opts *o, const struct pfs_origin_opts *oo,
			struct pfs_ssd *ssd, struct pfs_ftable **out)
{
	char *saved = NULL;
	size_t saved_len = 0;
	int have_saved = ssd && pfs_ssd_load_listing(ssd, &saved, &saved_len) == 0;
	struct pfs_origin_opts probe = *oo;
	if (have_saved)
		probe.retries = 0;
	struct pfs_ftable *ft = pfs_ftable_create();
	if (!ft) {
		free(saved);
		return -ENOMEM;
	}
	int rc = list_origin(o->origin, &probe, ssd, ft);
	if (rc < 0 && have_saved) {
		pfs_warn("listing %s failed (%s): using the listing saved in %s",
			 o->origin, strerror(-rc), o->ssd_dir);
		pfs_ftable_destroy(ft);
		char err[256];
		rc = (ft = pfs_ftable_create()) ? 0 : -ENOMEM;
		if (rc == 0)
			rc = pfs_manifest_parse(saved, saved_len, pfs_ftable_add, ft, err, sizeof(err));
		if (rc < 0)
			pfs_err("the saved listing is unusable: %s", err);
	}
	free(saved);
	if (rc == 0)
		rc = pfs_ftable_finish(ft);
	if (rc < 0) {
		pfs_ftable_destroy(ft);
		return rc;
	}
	*out = ft;
	return 0;
}

static int open_ssd(const struct pfs_opts *o, const char *origin_id, struct pfs_ssd **out)
{
	*out = NULL;
	if (!o->ssd_dir)
		return 0;
	struct pfs_ssd_opts so = {
		.dir = o->ssd_dir,
		.size = o->ssd_size,
		.compress = o->ssd_compress,
		.zstd_level = o->ssd_zstd_level,
		.evict = o->policy == PFS_POLICY_LRU ? PFS_SSD_EVICT_LRU : PFS_SSD_EVICT_NONE,
		.origin_id = origin_id,
		.block_size = o->block_size,
	};
	return pfs_ssd_open(&so, out);
}

/* Daemon mode. The fork happens first, before any thread exists (the SSD
 * writer, the transform pool and the prefetchers are threads, and a fork
 * keeps only the calling one; fuse_daemonize() forks after the mount, too
 * late). The parent waits until the child says the mount is up, so
 * `prestofs ORIGIN MNT` returns with the mount in place, or with the
 * child's failure status and its error message on the terminal. */
static int ready_fd = -1;

static int fork_daemon(void)
{
	int fds[2];
	if (pipe(fds) < 0)
		return -errno;
	pid_t pid = fork();
	if (pid < 0)
		return -errno;
	if (pid > 0) {
		close(fds[1]);
		char c;
		ssize_t n;
		while ((n = read(fds[0], &c, 1)) < 0 && errno == EINTR)
			;
		if (n == 1)
			_exit(0); /* mounted */
		int st = 0;
		waitpid(pid, &st, 0);
		_exit(WIFEXITED(st) && WEXITSTATUS(st) ? WEXITSTATUS(st) : 1);
	}
	close(fds[0]);
	ready_fd = fds[1];
	setsid();
	return 0;
}

/* The mount is up: detach from the terminal and release the parent. */
/* The mount is in place: a service manager (systemd Type=notify) may
 * start what needs it. From the process that serves the mount, so its pid
 * goes along (after daemon_ready() it is not the one systemd started). */
/* Watches for the unmount while the FUSE loop runs: the loop returns only
 * once every worker has finished its request, and a worker reading a
 * stalled origin object would hold the exit for the whole stall (seen by
 * the torture harness: 2.5 s). As soon as the session has exited, the
 * origin's transfers are stopped (they end within about a second). */
struct unmount_watch {
	struct fuse_session *se;
	struct pfs_origin *origin;
	int done; /* atomic: the loop returned */
};

static void *watch_unmount(void *p)
{
	struct unmount_watch *w = p;
	while (!pfs_load(&w->done)) {
		if (fuse_session_exited(w->se)) {
			pfs_origin_stop(w->origin);
			break;
		}
		struct timespec ts = {0, 50 * 1000000L};
		nanosleep(&ts, NULL);
	}
	return NULL;
}

static void notify_ready(const char *mountpoint)
{
	char state[PATH_MAX + 64];
	snprintf(state, sizeof(state), "READY=1\nMAINPID=%ld\nSTATUS=mounted at %s",
		 (long)getpid(), mountpoint);
	int rc = pfs_notify(state);
	if (rc < 0)
		pfs_warn("NOTIFY_SOCKET is set, but READY=1 could not be sent: %s",
			 strerror(-rc));
}

static void daemon_ready(void)
{
	pfs_log_use_syslog(1);
	if (chdir("/") < 0) {
		/* harmless: paths are absolute from here on */
	}
	int nul = open("/dev/null", O_RDWR);
	if (nul >= 0) {
		dup2(nul, STDIN_FILENO);
		dup2(nul, STDOUT_FILENO);
		dup2(nul, STDERR_FILENO);
		if (nul > STDERR_FILENO)
			close(nul);
	}
	char c = 0;
	if (write(ready_fd, &c, 1) < 0) {
		/* the parent is gone: nothing to tell */
	}
	close(ready_fd);
	ready_fd = -1;
}

/* Memory (util/memtrim.h): few malloc arenas for a few hundred threads,
 * and freed pages handed back this often. */
#define MALLOC_ARENAS 2
#define MEMTRIM_PERIOD_S 1.0

/* The subcommands: dispatched from here, listed by --help from here. */
static const struct pfs_command commands[] = {
	{"index", "DIR > DIR/" PFS_MANIFEST_NAME,
	 "print a local directory's manifest on stdout", cmd_index},
	{"profile", "[OPTIONS] MOUNT [SUBDIR]",
	 "compare stored forms of a mounted JPEG dataset", pfs_profile_main},
	{"stat", "MOUNT [-i SECONDS] [-c COUNT] [--json]",
	 "what a mount does, every interval (reads, hits, origin, prefetch, stalls)",
	 pfs_stat_main},
	{"warm", "MOUNT [PATH...] [--from FILE|-] [--check] [-j N] [--json]",
	 "fill the cache with files before a job (or --check how much is cached)",
	 pfs_warmcmd_main},
};
#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

int main(int argc, char **argv)
{
	for (size_t i = 0; argc >= 2 && i < NCOMMANDS; i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].run(argc, argv);

	pfs_memtrim_init(MALLOC_ARENAS);
	struct pfs_opts o;
	struct fuse_args fargs = FUSE_ARGS_INIT(0, NULL);
	struct pfs_origin *origin = NULL;
	struct pfs_ssd *ssd = NULL;
	struct pfs_shared *shared = NULL;
	struct pfs_ftable *ft = NULL;
	struct pfs_bcache *cache = NULL;
	struct pfs_epoch *epoch = NULL;
	struct pfs_prefetch *prefetch = NULL;
	struct pfs_views *views = NULL;
	struct pfs_fs *fs = NULL;
	struct fuse_session *se = NULL;
	struct fuse_loop_config *lcfg = NULL;
	char err[512];
	int ret = 1;

	/* A peer closing a connection must not kill us while listing, before
	 * libfuse installs its handlers. */
	signal(SIGPIPE, SIG_IGN);
	pfs_opts_init(&o);
	/* The command line, then the file it names (which fills in only
	 * what -o did not set, whatever the order of -o config= among the
	 * other options), then libfuse's arguments from both. */
	if (pfs_opts_parse(&o, argc, argv, err, sizeof(err)) < 0 ||
	    (!o.show_help && !o.show_version &&
	     ((o.config && pfs_config_load(&o, o.config, o.cmdline_keys, err, sizeof(err)) < 0) ||
	      pfs_opts_mount_args(&o, argv[0], &fargs, err, sizeof(err)) < 0))) {
		fprintf(stderr, "prestofs: %s\n", err);
		fprintf(stderr, "Try 'prestofs --help'.\n");
		goto out_opts;
	}
	if (o.show_help) {
		pfs_usage_help(stdout, "prestofs", commands, NCOMMANDS);
		ret = 0;
		goto out_opts;
	}
	if (o.show_version) {
		pfs_usage_version(stdout);
		ret = 0;
		goto out_opts;
	}
	pfs_log_set_level(o.debug ? PFS_LOG_DEBUG : o.log_level);
	pfs_log_route_fuse();
	/* A local directory's validator is its inode and mtime: nodes with
	 * their own copies would pin each other's and then fail their reads. */
	if (o.shared_cache && strncasecmp(o.origin, "http://", 7) &&
	    strncasecmp(o.origin, "https://", 8) && strncasecmp(o.origin, "s3://", 5)) {
		fprintf(stderr, "prestofs: shared_cache needs an http://, https:// or s3:// "
			"origin, not a local directory (its versions differ between nodes)\n");
		goto out_opts;
	}
	if (!o.foreground && fork_daemon() < 0) {
		fprintf(stderr, "prestofs: fork: %s\n", strerror(errno));
		goto out_opts;
	}

	struct pfs_origin_opts oo = {
		.manifest = o.manifest, .endpoint = o.endpoint, .region = o.region,
		.aws_profile = o.aws_profile, .aws_credentials_file = o.aws_credentials_file,
		.s3_path_style = o.s3_path_style, .timeout = o.timeout,
		.retries = (int)o.retries, .bandwidth = o.origin_bandwidth,
		.allow_empty = o.allow_empty,
	};
	if (pfs_origin_create(o.origin, &oo, &origin) < 0)
		goto out_opts;
	if (open_ssd(&o, pfs_origin_name(origin), &ssd) < 0)
		goto out_origin;
	if (o.shared_cache) {
		struct pfs_shared_opts sho = {
			.servers = o.shared_cache, .origin_id = pfs_origin_name(origin),
			.block_size = o.block_size, .timeout = o.shared_timeout,
			.key_file = o.shared_key_file,
			.retry = o.shared_retry, .lock_wait = o.shared_lock_wait,
		};
		if (pfs_shared_create(&sho, &shared) < 0)
			goto out_ssd;
		pfs_ctl_add_stats_source(pfs_shared_collect, shared);
	}
	double t0 = pfs_clock_s();
	int rc = load_listing(&o, &oo, ssd, &ft);
	if (rc < 0) {
		pfs_err("listing %s failed: %s", pfs_origin_name(origin), strerror(-rc));
		goto out_ssd;
	}
	pfs_ctl_add_stats_source(pfs_origin_collect, NULL);
	pfs_ctl_add_stats_source(pfs_listing_collect, NULL);
	pfs_ctl_add_stats_source(pfs_ssd_collect, ssd); /* NULL: zeros */
	pfs_info("%s: %u entries, %llu bytes, listed in %.2f s (%zu bytes of metadata)",
		 pfs_origin_name(origin), pfs_ftable_count(ft),
		 (unsigned long long)pfs_ftable_total_bytes(ft), pfs_clock_s() - t0,
		 pfs_ftable_memory(ft));

	/* ram_size is the whole RAM tier: under the epoch policy with the
	 * prefetcher on, prefetch_ram_share of it is the staging area, the
	 * rest the resident set. Otherwise the staging area only keeps blocks
	 * read in part (bcache.h): a 16th, from one block up to eight (none
	 * when the tier holds fewer than four blocks; none under lru, which
	 * admits every block). */
	uint64_t stage = o.policy == PFS_POLICY_EPOCH && o.prefetch ?
			 (uint64_t)((double)o.ram_size * o.prefetch_ram_share) : 0;
	if (!stage && o.policy != PFS_POLICY_LRU && o.ram_size >= 4 * o.block_size) {
		stage = o.ram_size / 16;
		stage = stage < o.block_size ? o.block_size :
			stage > 8 * o.block_size ? 8 * o.block_size : stage;
	}
	struct pfs_bcache_opts bo = {o.ram_size - stage, o.block_size, o.policy,
				     o.resident, stage};
	if (pfs_bcache_create(&bo, &cache) < 0)
		goto out_ft;
	if (pfs_epoch_create(pfs_ftable_count(ft), &epoch) < 0)
		goto out_cache;
	pfs_ctl_add_stats_source(pfs_bcache_collect, cache);
	pfs_ctl_add_stats_source(pfs_epoch_collect, epoch);
	if (pfs_views_create(&(struct pfs_views_opts){(unsigned)o.view_workers, o.view_max_pixels,
						     o.view_max_source, o.view_memory}, &views) < 0)
		goto out_cache;
	pfs_ctl_add_stats_source(pfs_views_collect, views);
	struct pfs_fs_conf conf = {ft, origin, cache, ssd, epoch, o.policy, views, o.block_size,
				   shared};
	if (pfs_fs_create(&conf, &fs) < 0)
		goto out_cache;
	pfs_ctl_add_stats_source(pfs_fs_collect, fs);
	if (o.prefetch) {
		struct pfs_prefetch_opts po = {
			.ft = ft, .epoch = epoch, .block_size = o.block_size,
			.workers = (unsigned)o.prefetch_inflight,
			.window = (unsigned)o.prefetch_window,
			.fetch = pfs_fs_prefetch_block, .room = pfs_fs_prefetch_room,
			.cached = pfs_fs_prefetch_cached, .ctx = fs,
		};
		if (pfs_prefetch_create(&po, &prefetch) < 0)
			goto out_fs;
		pfs_ctl_add_stats_source(pfs_prefetch_collect, prefetch);
	}
	if (pfs_fs_set_prefetch(fs, prefetch) < 0)
		goto out_prefetch;
	se = fuse_session_new(&fargs, pfs_fs_ops(), sizeof(struct fuse_lowlevel_ops), fs);
	if (!se)
		goto out_prefetch;
	if (fuse_set_signal_handlers(se) != 0)
		goto out_session;
	if (fuse_session_mount(se, o.mountpoint) != 0)
		goto out_signals;
	if (!o.foreground)
		daemon_ready();
	notify_ready(o.mountpoint);
	lcfg = fuse_loop_cfg_create();
	if (!lcfg)
		goto out_unmount;
	if (pfs_memtrim_start(MEMTRIM_PERIOD_S) < 0)
		pfs_warn("memory trimming thread not started: freed memory stays resident");
	/* Each reader blocked on the origin holds a worker: the default 10
	 * would cap a 20 ms origin at 500 files/s. */
	fuse_loop_cfg_set_max_threads(lcfg, (unsigned)o.max_threads);
	fuse_loop_cfg_set_idle_threads(lcfg, (unsigned)(o.max_threads / 4 + 1));
	struct unmount_watch watch = {.se = se, .origin = origin};
	pthread_t watcher;
	int watching = pthread_create(&watcher, NULL, watch_unmount, &watch) == 0;
	ret = fuse_session_loop_mt(se, lcfg) != 0;
	/* Unmounted: prefetches and warm-ups in flight must not hold the exit
	 * for their whole retry chain against a slow origin. */
	pfs_origin_stop(origin);
	pfs_store(&watch.done, 1);
	if (watching)
		pthread_join(watcher, NULL);
	if (pfs_notify("STOPPING=1") < 0)
		pfs_debug("service manager: STOPPING=1 not sent");
	fuse_loop_cfg_destroy(lcfg);
	pfs_memtrim_stop();
out_unmount:
	fuse_session_unmount(se);
out_signals:
	fuse_remove_signal_handlers(se);
out_session:
	fuse_session_destroy(se);
out_prefetch:
	pfs_prefetch_destroy(prefetch); /* before the fs its workers call */
out_fs:
	pfs_fs_destroy(fs);
out_cache:
	pfs_views_destroy(views);
	pfs_epoch_destroy(epoch);
	pfs_bcache_destroy(cache);
out_ft:
	pfs_ftable_destroy(ft);
out_ssd:
	pfs_shared_destroy(shared); /* stores what is queued first */
	pfs_ssd_close(ssd); /* waits for pending writes, releases the lock */
out_origin:
	pfs_origin_destroy(origin);
out_opts:
	fuse_opt_free_args(&fargs);
	pfs_opts_finish(&o);
	return ret;
}
