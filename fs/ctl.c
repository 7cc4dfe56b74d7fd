/* ctl.c - see ctl.h.
 *
 * Control files have dynamic content but the kernel caches file pages and
 * sizes. With no-open support the kernel never tells us about opens, so
 * each getattr takes a fresh snapshot and reports its length with a new
 * mtime (the kernel then drops cached pages, auto_inval_data), and reads
 * are served from the latest snapshot. The attr timeout of control inodes
 * is 0, so every read starts with a getattr.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ctl.h"
#include "../util/stats.h"

#define SNAP_CAP 65536

enum { CTL_DIR, CTL_STATS, CTL_METRICS, CTL_ORDER, CTL_VIEWS, CTL_WARM, CTL__COUNT };

static struct source {
	pfs_stats_fn fn;
	void *ctx;
} sources[PFS_CTL_MAX_SOURCES]; /* set before the mount, read-only afterwards */
static int nsources;

int pfs_ctl_add_stats_source(pfs_stats_fn fn, void *ctx)
{
	if (nsources == PFS_CTL_MAX_SOURCES)
		return -ENOSPC;
	sources[nsources++] = (struct source){fn, ctx};
	return 0;
}

static void collect(struct pfs_stat_list *l)
{
	l->n = 0;
	l->labels_used = 0;
	for (int i = 0; i < nsources; i++)
		sources[i].fn(sources[i].ctx, l);
}

static size_t render_json(char *buf, size_t cap)
{
	struct pfs_stat_list l;
	collect(&l);
	return pfs_stats_render_json(&l, buf, cap);
}

static size_t render_metrics(char *buf, size_t cap)
{
	struct pfs_stat_list l;
	collect(&l);
	return pfs_stats_render_prometheus(&l, buf, cap);
}

static size_t (*warm_render)(void *ctx, char *buf, size_t cap); /* set before the mount */
static void *warm_ctx;

void pfs_ctl_set_warm(size_t (*render)(void *ctx, char *buf, size_t cap), void *ctx)
{
	warm_render = render;
	warm_ctx = ctx;
}

static size_t render_warm(char *buf, size_t cap)
{
	buf[0] = '\0';
	return warm_render ? warm_render(warm_ctx, buf, cap) : 0;
}

static const struct ctl_file {
	const char *name;
	size_t (*render)(char *buf, size_t cap);
	int writable;
} files[CTL__COUNT] = {
	[CTL_STATS] = {"stats", render_json, 0},
	[CTL_METRICS] = {"metrics", render_metrics, 0},
	[CTL_ORDER] = {"order", NULL, 1}, /* written, not read: see order.h */
	[CTL_VIEWS] = {"views", NULL, 0}, /* a directory, served by fs.c */
	[CTL_WARM] = {"warm", render_warm, 1}, /* jobs written, status read */
};

static pthread_mutex_t snap_lock = PTHREAD_MUTEX_INITIALIZER;
static char snap[CTL__COUNT][SNAP_CAP]; /* guarded by snap_lock */
static size_t snap_len[CTL__COUNT];      /* guarded by snap_lock */

int pfs_ctl_lookup(uint64_t dir_ino, const char *name, uint64_t *ino)
{
	if (dir_ino != PFS_CTL_INO_DIR)
		return -ENOENT;
	for (int i = 1; i < CTL__COUNT; i++) {
		if (!strcmp(files[i].name, name)) {
			*ino = PFS_CTL_INO_BASE + (uint64_t)i;
			return 0;
		}
	}
	return -ENOENT;
}

/* Renders, then pads with newlines to a multiple of 4 KiB: a reader going
 * on past its first read gets EOF instead of the tail of a newer, longer
 * rendering (each read of a control file starts with a getattr, which
 * re-renders). Newlines are whitespace to JSON and to Prometheus. */
static size_t render_padded(int i)
{
	size_t n = files[i].render(snap[i], SNAP_CAP);
	size_t padded = (n + 4095) / 4096 * 4096;
	if (padded > SNAP_CAP - 1)
		padded = SNAP_CAP - 1;
	memset(snap[i] + n, '\n', padded - n);
	snap[i][padded] = '\0';
	return padded;
}

static size_t take_snapshot(int i)
{
	pthread_mutex_lock(&snap_lock);
	snap_len[i] = render_padded(i);
	size_t n = snap_len[i];
	pthread_mutex_unlock(&snap_lock);
	return n;
}

int pfs_ctl_getattr(uint64_t ino, struct stat *st)
{
	uint64_t i = ino - PFS_CTL_INO_BASE;
	if (!pfs_ctl_is(ino) || i >= CTL__COUNT)
		return -ENOENT;
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	st->st_uid = getuid();
	st->st_gid = getgid();
	st->st_atim = st->st_mtim = st->st_ctim = now;
	if (i == CTL_DIR || i == CTL_VIEWS) {
		st->st_mode = S_IFDIR | 0555;
		st->st_nlink = 2;
	} else if (!files[i].render) {
		st->st_mode = S_IFREG | 0666;
		st->st_nlink = 1;
	} else {
		st->st_mode = S_IFREG | (files[i].writable ? 0666 : 0444);
		st->st_nlink = 1;
		st->st_size = (off_t)take_snapshot((int)i);
	}
	return 0;
}

int pfs_ctl_read(uint64_t ino, uint64_t off, size_t size, char *buf, size_t *got)
{
	uint64_t i = ino - PFS_CTL_INO_BASE;
	if (!pfs_ctl_is(ino) || i == CTL_DIR || i == CTL_VIEWS || i >= CTL__COUNT)
		return -EISDIR;
	if (!files[i].render) {
		*got = 0;
		return 0;
	}
	pthread_mutex_lock(&snap_lock);
	if (!snap_len[i])
		snap_len[i] = render_padded((int)i);
	size_t n = 0;
	if (off < snap_len[i]) {
		n = snap_len[i] - off < size ? snap_len[i] - off : size;
		memcpy(buf, snap[i] + off, n);
	}
	pthread_mutex_unlock(&snap_lock);
	*got = n;
	return 0;
}

uint32_t pfs_ctl_nchildren(uint64_t dir_ino)
{
	return dir_ino == PFS_CTL_INO_DIR ? CTL__COUNT - 1 : 0;
}

const char *pfs_ctl_child(uint64_t dir_ino, uint32_t k, uint64_t *ino)
{
	if (dir_ino != PFS_CTL_INO_DIR || k + 1 >= CTL__COUNT)
		return NULL;
	*ino = PFS_CTL_INO_BASE + k + 1;
	return files[k + 1].name;
}
