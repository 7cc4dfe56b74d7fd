/* fs.c - see fs.h.
 *
 * Request budget for a small file (goal of the foundation issue): lookup
 * (once, then cached), read (once, then the page cache). getattr is
 * answered from the kernel's attribute cache, open/opendir are dropped via
 * no-open support, flush/release are never sent (no flush handler,
 * no-open).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <string.h>
#include <unistd.h>
#include <sys/statvfs.h>
#include <fuse_lowlevel.h>

#include "ctl.h"
#include "fs.h"
#include "fs_int.h"
#include "../catalog/ftable.h"
#include "order.h"
#include "views.h"
#include "../prefetch/prefetch.h"
#include "../cache/bcache.h"
#include "../cache/epoch.h"
#include "../cache/failmem.h"
#include "../cache/policy.h"
#include "../cache/ssd.h"
#include "../origin/origin.h"
#include "../origin/validator.h"
#include "../util/clock.h"
#include "../util/log.h"
#include "../util/stats.h"

#define TIMEOUT_FOREVER 1e6 /* seconds; the dataset does not change */
#define MAX_IOV 256


int pfs_fs_create(const struct pfs_fs_conf *conf, struct pfs_fs **out)
{
	struct pfs_fs *fs = calloc(1, sizeof(*fs));
	if (!fs)
		return -ENOMEM;
	fs->ft = conf->ft;
	fs->origin = conf->origin;
	fs->cache = conf->cache;
	fs->ssd = conf->ssd;
	fs->epoch = conf->epoch;
	fs->policy = conf->policy;
	fs->views = conf->views;
	fs->block_size = conf->block_size;
	if (pfs_failmem_create(&fs->failed) < 0) {
		free(fs);
		return -ENOMEM;
	}
	fs->uid = getuid();
	fs->gid = getgid();
	*out = fs;
	return 0;
}

void pfs_fs_destroy(struct pfs_fs *fs)
{
	if (!fs)
		return;
	pfs_order_destroy(fs->order);
	pfs_failmem_destroy(fs->failed);
	free(fs);
}

int pfs_fs_set_prefetch(struct pfs_fs *fs, struct pfs_prefetch *p)
{
	fs->prefetch = p;
	return pfs_order_create(fs->ft, p, fs->views, &fs->order);
}

#define LOAD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)
#define STORE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELAXED)

/* A read at offset 0 starts a sample: epoch tracking. When it opens a new
 * epoch, that epoch's counters start from here. */
void  pfs_fsi_note_sample(struct pfs_fs *fs, uint32_t node)
{
	uint64_t e = pfs_epoch_note_read(fs->epoch, node);
	uint64_t seen = LOAD(fs->epoch_seen);
	if (e != seen && __atomic_compare_exchange_n(&fs->epoch_seen, &seen, e, 0,
						     __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
		STORE(fs->base_hits, pfs_stat_get(ram_hits));
		STORE(fs->base_misses, pfs_stat_get(ram_misses));
		STORE(fs->base_stall_ns, LOAD(fs->stall_ns));
		pfs_bcache_set_epoch(fs->cache, e);
		pfs_debug("epoch %llu begins", (unsigned long long)e);
	}
}

void pfs_fs_stats(void *ctx, struct pfs_stat_list *l)
{
	struct pfs_fs *fs = ctx;
	pfs_stat_list_add(l, "epoch.demand_hits",
			  (double)(pfs_stat_get(ram_hits) - LOAD(fs->base_hits)), 1);
	pfs_stat_list_add(l, "epoch.demand_misses",
			  (double)(pfs_stat_get(ram_misses) - LOAD(fs->base_misses)), 1);
	pfs_stat_list_add(l, "epoch.stall_seconds",
			  (double)(LOAD(fs->stall_ns) - LOAD(fs->base_stall_ns)) / 1e9, 1);
	pfs_stat_list_add(l, "stall_seconds", (double)LOAD(fs->stall_ns) / 1e9, 0);
	pfs_stat_list_add(l, "failed_files", (double)pfs_failmem_count(fs->failed), 0);
	pfs_stat_list_add(l, "log_lines_dropped", (double)pfs_log_limit_dropped(), 0);
}

static struct pfs_fs *fs_of(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

/* Dataset inode <-> table node. Returns -ENOENT for non-dataset inodes. */
static int node_of(const struct pfs_fs *fs, fuse_ino_t ino, uint32_t *node)
{
	if (ino == 0 || pfs_ctl_is(ino) || ino - 1 >= pfs_ftable_count(fs->ft))
		return -ENOENT;
	*node = (uint32_t)(ino - 1);
	return 0;
}

static void fill_stat(const struct pfs_fs *fs, uint32_t node,
		      const struct pfs_fnode *info, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = (ino_t)node + 1;
	st->st_mode = info->is_dir ? S_IFDIR | 0555 : S_IFREG | 0444;
	st->st_nlink = info->is_dir ? 2 : 1;
	st->st_uid = fs->uid;
	st->st_gid = fs->gid;
	st->st_size = (off_t)info->size;
	st->st_blksize = 128 * 1024;
	st->st_blocks = (blkcnt_t)((info->size + 511) / 512);
	st->st_atim.tv_sec = st->st_mtim.tv_sec = st->st_ctim.tv_sec = info->mtime;
}

int  pfs_fsi_entry(const struct pfs_fs *fs, uint32_t node, struct fuse_entry_param *e)
{
	struct pfs_fnode info;
	int rc = pfs_ftable_get(fs->ft, node, &info);
	if (rc < 0)
		return rc;
	memset(e, 0, sizeof(*e));
	e->ino = (fuse_ino_t)node + 1;
	e->attr_timeout = e->entry_timeout = TIMEOUT_FOREVER;
	fill_stat(fs, node, &info, &e->attr);
	return 0;
}

static int ctl_entry(fuse_ino_t ino, struct fuse_entry_param *e)
{
	memset(e, 0, sizeof(*e));
	int rc = pfs_ctl_getattr(ino, &e->attr);
	if (rc < 0)
		return rc;
	e->ino = ino;
	e->entry_timeout = TIMEOUT_FOREVER;
	e->attr_timeout = 0; /* dynamic content: see ctl.c */
	return 0;
}

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	struct pfs_fs *fs = userdata;
	fs->no_open = !!(conn->capable & FUSE_CAP_NO_OPEN_SUPPORT);
	fs->no_opendir = !!(conn->capable & FUSE_CAP_NO_OPENDIR_SUPPORT);
	/* Large reads: libfuse derives max_pages from max_write. */
	conn->max_write = 1u << 20;
	conn->max_read = 1u << 20; /* must match the max_read mount option */
	conn->max_readahead = 1u << 20;
	conn->max_background = 128;
	conn->congestion_threshold = 96;
	if (conn->capable & FUSE_CAP_AUTO_INVAL_DATA)
		conn->want |= FUSE_CAP_AUTO_INVAL_DATA;
	/* Opens are not sent (no-open), so an O_TRUNC must arrive as a
	 * setattr: that is how a loader's rewrite of the order file and a
	 * truncating open of a dataset file (EROFS) reach us. */
	conn->want &= ~(unsigned)FUSE_CAP_ATOMIC_O_TRUNC;
	conn->want &= ~(unsigned)FUSE_CAP_SPLICE_READ;
	pfs_debug("kernel: no_open=%d no_opendir=%d", fs->no_open, fs->no_opendir);
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct pfs_fs *fs = fs_of(req);
	struct fuse_entry_param e;
	uint32_t dir, node;
	uint64_t cino;
	pfs_stat_op(PFS_OP_LOOKUP);
	if (parent == FUSE_ROOT_ID && !strcmp(name, PFS_CTL_NAME)) {
		ctl_entry(PFS_CTL_INO_DIR, &e);
		fuse_reply_entry(req, &e);
		return;
	}
	if (fs->views && (parent == PFS_CTL_INO_VIEWS || pfs_fsi_is_view(parent))) {
		uint32_t spec;
		int rc;
		if (parent == PFS_CTL_INO_VIEWS) {
			/* An invalid spec is ENOENT (and a log line with the grammar),
			 * not a cached negative entry: it is not part of the data. */
			rc = pfs_views_spec(fs->views, name, &spec);
			node = PFS_FTABLE_ROOT;
		} else {
			pfs_fsi_view_split(parent, &spec, &dir);
			rc = pfs_ftable_lookup(fs->ft, dir, name, &node);
		}
		if (rc == 0)
			rc = pfs_fsi_view_entry(fs, pfs_fsi_view_ino(spec, node), &e);
		if (rc < 0)
			fuse_reply_err(req, rc == -ENOTDIR || rc == -EIO || rc == -EACCES ? -rc : ENOENT);
		else
			fuse_reply_entry(req, &e);
		return;
	}
	if (pfs_ctl_is(parent)) {
		if (pfs_ctl_lookup(parent, name, &cino) < 0 || ctl_entry(cino, &e) < 0)
			fuse_reply_err(req, ENOENT);
		else
			fuse_reply_entry(req, &e);
		return;
	}
	int rc = node_of(fs, parent, &dir);
	if (rc == 0)
		rc = pfs_ftable_lookup(fs->ft, dir, name, &node);
	if (rc == -ENOENT) {
		/* Cached negative entry: the listing is complete and immutable. */
		memset(&e, 0, sizeof(e));
		e.entry_timeout = TIMEOUT_FOREVER;
		fuse_reply_entry(req, &e);
		return;
	}
	if (rc == 0)
		rc = pfs_fsi_entry(fs, node, &e);
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_entry(req, &e);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct pfs_fs *fs = fs_of(req);
	struct fuse_entry_param e;
	uint32_t node;
	(void)fi;
	pfs_stat_op(PFS_OP_GETATTR);
	if (pfs_fsi_is_view(ino) && fs->views) {
		int rc = pfs_fsi_view_entry(fs, ino, &e);
		if (rc < 0)
			fuse_reply_err(req, -rc);
		else
			fuse_reply_attr(req, &e.attr, e.attr_timeout);
		return;
	}
	int rc = pfs_ctl_is(ino) ? ctl_entry(ino, &e) : node_of(fs, ino, &node);
	if (rc == 0 && !pfs_ctl_is(ino))
		rc = pfs_fsi_entry(fs, node, &e);
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_attr(req, &e.attr, e.attr_timeout);
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct pfs_fs *fs = fs_of(req);
	pfs_stat_op(PFS_OP_OPEN);
	if (ino == PFS_CTL_INO_ORDER) {
		/* Written by loaders; O_TRUNC arrives as a setattr. */
		fi->direct_io = 1;
		fuse_reply_open(req, fi);
		return;
	}
	if ((fi->flags & O_ACCMODE) != O_RDONLY) {
		fuse_reply_err(req, EROFS);
		return;
	}
	if (fs->no_open && !pfs_ctl_is(ino)) {
		fuse_reply_err(req, ENOSYS); /* never ask again */
		return;
	}
	fi->keep_cache = !pfs_ctl_is(ino);
	fi->direct_io = pfs_ctl_is(ino);
	if (pfs_ctl_is(ino)) {
		/* direct_io reads come without a getattr first: take the
		 * snapshot they will read now. */
		struct stat st;
		pfs_ctl_getattr(ino, &st);
	}
	fuse_reply_open(req, fi);
}

static void op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct pfs_fs *fs = fs_of(req);
	pfs_stat_op(PFS_OP_OPENDIR);
	(void)ino;
	if (fs->no_opendir) {
		fuse_reply_err(req, ENOSYS);
		return;
	}
	fi->keep_cache = 1;
	fi->cache_readdir = 1;
	fuse_reply_open(req, fi);
}


/* The SSD tier's copy is usable only if it is of the version this mount
 * has pinned for the file; with none pinned yet it pins its own (after a
 * remount, the origin's first answer is then checked against it). An
 * entry without a validator (written by an older prestofs) is a miss. */
static int fill_from_ssd(struct fill_ctx *c, const char *path, void *buf, size_t len)
{
	char ssd_etag[PFS_ETAG_MAX];
	uint64_t blk = c->off / c->fs->block_size;
	if (pfs_ssd_get(c->fs->ssd, path, blk, c->fp, buf, len, ssd_etag) < 0 || !ssd_etag[0])
		return -ENOENT;
	return pfs_ftable_set_etag(c->fs->ft, c->node, ssd_etag);
}

/* Fetches a block from the origin and checks it against the file's pinned
 * validator. The first answer to come back pins it (compare-and-set). An
 * answer of another version is never served nor cached: the origin asks
 * once more itself when the validator differs from one it was given;
 * here, a fill that lost the race to pin (it started before any pin) asks
 * once more with the winner's validator (If-Match), then fails. */
static int fill_from_origin(struct fill_ctx *c, const char *path, void *buf, size_t len,
			    char *v)
{
	int rc = -EIO;
	for (int attempt = 0; attempt < 2; attempt++) {
		pfs_ftable_etag(c->fs->ft, c->node, v);
		rc = pfs_origin_read(c->fs->origin, path, c->size, c->off, len, buf, v);
		if (rc < 0)
			break;
		rc = pfs_ftable_set_etag(c->fs->ft, c->node, v);
		if (rc != -ESTALE)
			break;
		pfs_debug("'%s' at %llu: another version won the pin; asking again", path,
			  (unsigned long long)c->off);
	}
	if (rc == 0 && !strcmp(v, PFS_VALIDATOR_NONE) &&
	    !__atomic_exchange_n(&c->fs->warned_no_validator, 1, __ATOMIC_RELAXED))
		pfs_warn("the origin gives neither ETag nor Last-Modified (first seen on '%s'): "
			 "only sizes can show that an object changed", path);
	return rc;
}

/* A RAM miss: the SSD tier, else the origin (then written to the SSD tier
 * at once, so an unmount or a crash loses nothing that was fetched). */
int  pfs_fsi_fill_block(void *p, void *buf, size_t len)
{
	struct fill_ctx *c = p;
	char path[4096];
	char v[PFS_ETAG_MAX];
	int rc = pfs_ftable_path(c->fs->ft, c->node, path, sizeof(path));
	if (rc < 0)
		return rc;
	if (c->fs->ssd && fill_from_ssd(c, path, buf, len) == 0)
		return 0;
	/* A file that just failed fails again at once (see failmem.h). */
	rc = pfs_failmem_take(c->fs->failed, c->node, pfs_clock_ns());
	if (rc < 0)
		return rc;
	rc = fill_from_origin(c, path, buf, len, v);
	if (rc < 0)
		pfs_failmem_note(c->fs->failed, c->node, rc, pfs_clock_ns());
	else
		pfs_failmem_clear(c->fs->failed, c->node);
	if (rc == 0) {
		if (c->fs->ssd)
			pfs_ssd_put(c->fs->ssd, path, c->off / c->fs->block_size, c->fp,
				    v, buf, len);
	} else if (rc != -ESTALE) {
		char key[4200];
		snprintf(key, sizeof(key), "readfail:%s", path);
		pfs_log_limited(PFS_LOG_WARN, key, "read of '%s' at %llu failed: %s", path,
				(unsigned long long)c->off, strerror(-rc));
	}
	return rc;
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct pfs_fs *fs = fs_of(req);
	(void)fi;
	pfs_stat_op(PFS_OP_READ);
	if (pfs_ctl_is(ino)) {
		char *buf = malloc(size ? size : 1);
		size_t got = 0;
		int rc = buf ? pfs_ctl_read(ino, (uint64_t)off, size, buf, &got) : -ENOMEM;
		if (rc < 0)
			fuse_reply_err(req, -rc);
		else
			fuse_reply_buf(req, buf, got);
		free(buf);
		return;
	}
	if (pfs_fsi_is_view(ino) && fs->views) {
		pfs_fsi_view_read(req, fs, ino, size, off);
		return;
	}
	uint32_t node;
	if (node_of(fs, ino, &node) < 0) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	pfs_fsi_read_dataset(req, fs, node, size, off);
}

/* A read of a dataset file: its blocks, straight from the cache. */
void  pfs_fsi_read_dataset(fuse_req_t req, struct pfs_fs *fs, uint32_t node, size_t size,
			 off_t off)
{
	fuse_ino_t ino = (fuse_ino_t)node + 1;
	struct pfs_fnode info;
	if (pfs_ftable_get(fs->ft, node, &info) < 0) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	if (info.is_dir) {
		fuse_reply_err(req, EISDIR);
		return;
	}
	uint64_t start = (uint64_t)off;
	if (off < 0 || start >= info.size || size == 0) {
		fuse_reply_buf(req, NULL, 0);
		return;
	}
	/* A read of a file's first byte starts a sample: it drives epoch
	 * tracking (see cache/epoch.h); re-reads come from the page cache. */
	if (start == 0)
		pfs_fsi_note_sample(fs, node);
	uint64_t t0 = pfs_clock_ns();
	uint64_t end = info.size - start < size ? info.size : start + size;
	uint64_t bs = fs->block_size;
	uint64_t first = start / bs, last = (end - 1) / bs;
	size_t n = (size_t)(last - first + 1);
	struct pfs_block *stackb[4];
	struct iovec stackv[4];
	struct pfs_block **blocks = n <= 4 ? stackb : calloc(n, sizeof(*blocks));
	struct iovec *iov = n <= 4 ? stackv : calloc(n, sizeof(*iov));
	size_t got = 0;
	int rc = blocks && iov ? 0 : -ENOMEM;
	for (uint64_t b = first; rc == 0 && b <= last; b++) {
		uint64_t boff = b * bs;
		size_t blen = (size_t)(info.size - boff < bs ? info.size - boff : bs);
		struct fill_ctx c = {fs, node, info.size, boff, info.fp};
		rc = pfs_bcache_get(fs->cache, ino, b, blen, info.size, 0, pfs_fsi_fill_block, &c,
				    &blocks[got]);
		if (rc < 0)
			break;
		uint64_t lo = start > boff ? start - boff : 0;
		uint64_t hi = end < boff + blen ? end - boff : blen;
		iov[got].iov_base = (char *)pfs_block_data(blocks[got]) + lo;
		iov[got].iov_len = (size_t)(hi - lo);
		got++;
	}
	uint64_t waited = pfs_clock_ns() - t0;
	if (waited > STALL_THRESHOLD_NS)
		__atomic_add_fetch(&fs->stall_ns, waited, __ATOMIC_RELAXED);
	if (rc < 0)
		fuse_reply_err(req, rc == -ENOENT || rc == -EACCES || rc == -ENOMEM ? -rc : EIO);
	else
		fuse_reply_iov(req, iov, (int)got);
	if (rc == 0 && fs->prefetch)
		pfs_prefetch_on_read(fs->prefetch, node, info.size, start, (size_t)(end - start));
	for (size_t i = 0; i < got; i++)
		pfs_bcache_put(fs->cache, blocks[i]);
	if (blocks != stackb)
		free(blocks);
	if (iov != stackv)
		free(iov);
}

/* Shared by readdir and readdirplus. Offsets: 1 = ".", 2 = "..",
 * 3 + k = k-th child. */
static void do_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, int plus)
{
	struct pfs_fs *fs = fs_of(req);
	uint32_t dir, spec = 0;
	int ctl = pfs_ctl_is(ino);
	int view = pfs_fsi_is_view(ino) && fs->views;
	if (view)
		pfs_fsi_view_split(ino, &spec, &dir);
	if (!ctl && !view && node_of(fs, ino, &dir) < 0) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	struct pfs_fnode info;
	if (!ctl && (pfs_ftable_get(fs->ft, dir, &info) < 0 || !info.is_dir)) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	char *buf = malloc(size);
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	uint32_t n = ctl ? pfs_ctl_nchildren(ino) : pfs_ftable_nchildren(fs->ft, dir);
	size_t used = 0;
	for (uint64_t k = off < 0 ? 0 : (uint64_t)off; k < 2ull + n; k++) {
		struct fuse_entry_param e;
		memset(&e, 0, sizeof(e));
		const char *name;
		if (k < 2) {
			name = k == 0 ? "." : "..";
			e.attr.st_ino = k == 0 || ino == FUSE_ROOT_ID ? ino : FUSE_ROOT_ID;
			e.attr.st_mode = S_IFDIR;
		} else if (ctl) {
			uint64_t cino;
			name = pfs_ctl_child(ino, (uint32_t)(k - 2), &cino);
			if (plus ? ctl_entry(cino, &e) < 0 : pfs_ctl_getattr(cino, &e.attr) < 0)
				continue;
		} else {
			uint32_t child = pfs_ftable_child(fs->ft, dir, (uint32_t)(k - 2));
			name = pfs_ftable_name(fs->ft, child);
			if (dir == PFS_FTABLE_ROOT && !strcmp(name, PFS_CTL_NAME))
				continue; /* shadowed by the control tree */
			pfs_fsi_entry(fs, child, &e);
			if (view) {
				/* Type and inode only: a view file's size may need its
				 * source, so it is computed at lookup, not here. */
				e.ino = 0;
				e.attr.st_ino = pfs_fsi_view_ino(spec, child);
			}
		}
		size_t len = plus ? fuse_add_direntry_plus(req, buf + used, size - used,
							   name, &e, (off_t)(k + 1))
				  : fuse_add_direntry(req, buf + used, size - used, name,
						      &e.attr, (off_t)(k + 1));
		if (len > size - used)
			break;
		used += len;
	}
	fuse_reply_buf(req, buf, used);
	free(buf);
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	(void)fi;
	pfs_stat_op(PFS_OP_READDIR);
	do_readdir(req, ino, size, off, 0);
}

static void op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			   struct fuse_file_info *fi)
{
	(void)fi;
	pfs_stat_op(PFS_OP_READDIRPLUS);
	do_readdir(req, ino, size, off, 1);
}

static void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino; (void)fi;
	pfs_stat_op(PFS_OP_RELEASE);
	fuse_reply_err(req, 0);
}

static void op_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino; (void)fi;
	pfs_stat_op(PFS_OP_RELEASEDIR);
	fuse_reply_err(req, 0);
}

static void op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct pfs_fs *fs = fs_of(req);
	(void)ino;
	pfs_stat_op(PFS_OP_STATFS);
	struct statvfs sv;
	memset(&sv, 0, sizeof(sv));
	sv.f_bsize = sv.f_frsize = 4096;
	sv.f_blocks = (pfs_ftable_total_bytes(fs->ft) + 4095) / 4096;
	sv.f_files = pfs_ftable_count(fs->ft);
	sv.f_namemax = 255;
	sv.f_flag = ST_RDONLY;
	fuse_reply_statfs(req, &sv);
}

static void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	(void)ino; (void)nlookup;
	pfs_stat_op(PFS_OP_FORGET);
	fuse_reply_none(req); /* inodes are static: nothing to free */
}

static void op_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *f)
{
	(void)count; (void)f;
	pfs_stat_op(PFS_OP_FORGET);
	fuse_reply_none(req);
}

/* Everything that would change the dataset. The mount is "ro" too, so the
 * kernel normally refuses these before they reach us. */
static void deny(fuse_req_t req)
{
	pfs_stat_op(PFS_OP_WRITE_DENIED);
	fuse_reply_err(req, EROFS);
}
/* The order file takes writes and truncation; everything else is the
 * dataset, which is read-only. */
static void op_setattr(fuse_req_t r, fuse_ino_t i, struct stat *a, int s, struct fuse_file_info *f)
{
	struct pfs_fs *fs = fs_of(r);
	(void)f;
	if (i != PFS_CTL_INO_ORDER || !fs->order || (s & ~(FUSE_SET_ATTR_SIZE |
	    FUSE_SET_ATTR_MTIME | FUSE_SET_ATTR_MTIME_NOW | FUSE_SET_ATTR_CTIME |
	    FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_ATIME_NOW))) {
		deny(r);
		return;
	}
	if ((s & FUSE_SET_ATTR_SIZE) && a->st_size == 0)
		pfs_order_reset(fs->order);
	struct stat st;
	pfs_ctl_getattr(i, &st);
	fuse_reply_attr(r, &st, 0);
}
static void op_mknod(fuse_req_t r, fuse_ino_t p, const char *n, mode_t m, dev_t d)
{ (void)p; (void)n; (void)m; (void)d; deny(r); }
static void op_mkdir(fuse_req_t r, fuse_ino_t p, const char *n, mode_t m)
{ (void)p; (void)n; (void)m; deny(r); }
static void op_unlink(fuse_req_t r, fuse_ino_t p, const char *n)
{ (void)p; (void)n; deny(r); }
static void op_symlink(fuse_req_t r, const char *l, fuse_ino_t p, const char *n)
{ (void)l; (void)p; (void)n; deny(r); }
static void op_rename(fuse_req_t r, fuse_ino_t p, const char *n, fuse_ino_t np,
		      const char *nn, unsigned int fl)
{ (void)p; (void)n; (void)np; (void)nn; (void)fl; deny(r); }
static void op_link(fuse_req_t r, fuse_ino_t i, fuse_ino_t np, const char *n)
{ (void)i; (void)np; (void)n; deny(r); }
static void op_write(fuse_req_t r, fuse_ino_t i, const char *b, size_t s, off_t o,
		     struct fuse_file_info *f)
{
	struct pfs_fs *fs = fs_of(r);
	(void)f;
	if (i != PFS_CTL_INO_ORDER || !fs->order || o < 0) {
		deny(r);
		return;
	}
	pfs_order_write(fs->order, (uint64_t)o, b, s);
	fuse_reply_write(r, s);
}
static void op_create(fuse_req_t r, fuse_ino_t p, const char *n, mode_t m,
		      struct fuse_file_info *f)
{ (void)p; (void)n; (void)m; (void)f; deny(r); }
static void op_setxattr(fuse_req_t r, fuse_ino_t i, const char *n, const char *v,
			size_t s, int f)
{ (void)i; (void)n; (void)v; (void)s; (void)f; deny(r); }
static void op_removexattr(fuse_req_t r, fuse_ino_t i, const char *n)
{ (void)i; (void)n; deny(r); }

int pfs_fs_prefetch_block(void *ctx, uint64_t obj, uint64_t blk, size_t len)
{
	struct pfs_fs *fs = ctx;
	uint32_t node = PFS_PREFETCH_NODE(obj);
	if (PFS_PREFETCH_VIEW(obj))
		return pfs_fsi_view_prefetch(fs, PFS_PREFETCH_VIEW(obj) - 1, node);
	struct pfs_fnode info;
	if (pfs_ftable_get(fs->ft, node, &info) < 0 || info.is_dir)
		return -ENOENT;
	struct fill_ctx c = {fs, node, info.size, blk * fs->block_size, info.fp};
	struct pfs_block *b;
	int rc = pfs_bcache_get(fs->cache, (uint64_t)node + 1, blk, len, info.size,
				PFS_BCACHE_PREFETCH, pfs_fsi_fill_block, &c, &b);
	if (rc == 0)
		pfs_bcache_put(fs->cache, b);
	return rc;
}

int pfs_fs_prefetch_cached(void *ctx, uint64_t obj, uint64_t blk)
{
	struct pfs_fs *fs = ctx;
	uint32_t node = PFS_PREFETCH_NODE(obj);
	uint64_t ino = PFS_PREFETCH_VIEW(obj) ?
		       pfs_fsi_view_ino(PFS_PREFETCH_VIEW(obj) - 1, node) : (uint64_t)node + 1;
	/* A file the origin just failed is skipped whole. */
	if (pfs_failmem_check(fs->failed, node, pfs_clock_ns()) < 0)
		return PFS_PREFETCH_SKIP_OBJECT;
	return pfs_bcache_contains(fs->cache, ino, blk) ? PFS_PREFETCH_SKIP_BLOCK : 0;
}

/* Prefetch while the resident set has room, then into the staging area
 * (policy epoch) while it has room: never by evicting what the epoch
 * still needs. Under lru, a bounded amount in flight. */
int pfs_fs_prefetch_room(void *ctx, uint64_t len, uint64_t inflight)
{
	struct pfs_fs *fs = ctx;
	struct pfs_bcache_stats s;
	pfs_bcache_stats(fs->cache, &s);
	if (s.resident_bytes + inflight + len <= s.budget)
		return 1;
	if (s.staged_bytes + inflight + len <= s.stage_budget)
		return 1;
	return fs->policy == PFS_POLICY_LRU && inflight + len <= s.budget / 4;
}

static const struct fuse_lowlevel_ops ops = {
	.init = op_init,
	.lookup = op_lookup,
	.forget = op_forget,
	.forget_multi = op_forget_multi,
	.getattr = op_getattr,
	.open = op_open,
	.read = op_read,
	.release = op_release,
	.opendir = op_opendir,
	.readdir = op_readdir,
	.readdirplus = op_readdirplus,
	.releasedir = op_releasedir,
	.statfs = op_statfs,
	.setattr = op_setattr,
	.mknod = op_mknod,
	.mkdir = op_mkdir,
	.unlink = op_unlink,
	.rmdir = op_unlink,
	.symlink = op_symlink,
	.rename = op_rename,
	.link = op_link,
	.write = op_write,
	.create = op_create,
	.setxattr = op_setxattr,
	.removexattr = op_removexattr,
};

const struct fuse_lowlevel_ops *pfs_fs_ops(void)
{
	return &ops;
}
