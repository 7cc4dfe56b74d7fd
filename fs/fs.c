/* fs.c - see fs.h. The FUSE operations: each classifies its inode once
 * (kind_of), calls that kind's operation (fs_int.h), and replies exactly
 * once; every error reply goes through reply_err().
 *
 * Request budget for a small file (goal of the foundation issue): lookup
 * (once, then cached), read (once, then the page cache). getattr is
 * answered from the kernel's attribute cache, open/opendir are dropped via
 * no-open support, flush/release are never sent (no flush handler,
 * no-open).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/statvfs.h>
#include <fuse_lowlevel.h>

#include "ctl.h"
#include "fs.h"
#include "fs_int.h"
#include "order.h"
#include "warm.h"
#include "../prefetch/prefetch.h"
#include "../util/atomic.h"
#include "../util/clock.h"
#include "../util/log.h"
#include "../util/stats.h"

int pfs_fs_create(const struct pfs_fs_conf *conf, struct pfs_fs **out)
{
	struct pfs_fs *fs = calloc(1, sizeof(*fs));
	if (!fs)
		return -ENOMEM;
	fs->ft = conf->ft;
	fs->origin = conf->origin;
	fs->cache = conf->cache;
	fs->epoch = conf->epoch;
	fs->policy = conf->policy;
	fs->views = conf->views;
	fs->block_size = conf->block_size;
	struct pfs_blocks_opts bo = {.ft = conf->ft, .cache = conf->cache, .origin = conf->origin,
				     .ssd = conf->ssd, .shared = conf->shared,
				     .block_size = conf->block_size};
	if (pfs_blocks_create(&bo, &fs->blocks) < 0) {
		free(fs);
		return -ENOMEM;
	}
	if (pfs_warm_create(fs, &fs->warm) < 0) {
		pfs_blocks_destroy(fs->blocks);
		free(fs);
		return -ENOMEM;
	}
	pfs_ctl_set_warm(pfs_warm_render, fs->warm);
	fs->uid = getuid();
	fs->gid = getgid();
	*out = fs;
	return 0;
}

void pfs_fs_destroy(struct pfs_fs *fs)
{
	if (!fs)
		return;
	pfs_warm_destroy(fs->warm); /* its workers use everything below */
	pfs_order_destroy(fs->order);
	pfs_blocks_destroy(fs->blocks);
	free(fs);
}

int pfs_fs_set_prefetch(struct pfs_fs *fs, struct pfs_prefetch *p)
{
	fs->prefetch = p;
	return pfs_order_create(fs->ft, p, fs->views, &fs->order);
}

/* ---- requests counted (fuse.*, served.*; process-wide, atomic) -------- */

enum op {
	OP_LOOKUP, OP_GETATTR, OP_OPEN, OP_READ, OP_RELEASE, OP_OPENDIR, OP_READDIR,
	OP_READDIRPLUS, OP_RELEASEDIR, OP_STATFS, OP_FORGET, OP_WRITE_DENIED, OP__COUNT
};
static const char *const op_names[OP__COUNT] = {
	"fuse.lookup", "fuse.getattr", "fuse.open", "fuse.read", "fuse.release",
	"fuse.opendir", "fuse.readdir", "fuse.readdirplus", "fuse.releasedir",
	"fuse.statfs", "fuse.forget", "fuse.write_denied",
};
static uint64_t requests[OP__COUNT];
static struct {
	uint64_t reads, bytes; /* reads of dataset files and views, their bytes */
} served;

static void count_op(enum op op)
{
	pfs_add(&requests[op], 1);
}

static void collect_requests(struct pfs_stat_list *l)
{
	for (int i = 0; i < OP__COUNT; i++)
		pfs_stat_list_add(l, op_names[i], (double)pfs_load(&requests[i]), 0);
	pfs_stat_list_add(l, "served.reads", (double)pfs_load(&served.reads), 0);
	pfs_stat_list_add(l, "served.bytes", (double)pfs_load(&served.bytes), 0);
}

/* The requests, files failing at once (blocks/), and the log lines the
 * limiter dropped (util/log.h, which cannot name its own without a call
 * circle with util/stats.c). */
void pfs_fs_collect(void *ctx, struct pfs_stat_list *l)
{
	struct pfs_fs *fs = ctx;
	collect_requests(l);
	pfs_stat_list_add(l, "failed_files", (double)pfs_blocks_failed_count(fs->blocks), 0);
	pfs_stat_list_add(l, "log_lines_dropped", (double)pfs_log_limit_dropped(), 0);
}

/* ---- classify once, reply once ----------------------------------------- */

/* The kind of an inode, or NULL for a number no kind owns. */
static const struct pfs_fsi_kind *kind_of(const struct pfs_fs *fs, fuse_ino_t ino)
{
	if (fs->views && (ino == PFS_CTL_INO_VIEWS || pfs_fsi_is_view(ino)))
		return &pfs_fsi_view;
	if (pfs_ctl_is(ino))
		return &pfs_fsi_ctl;
	if (ino >= 1 && ino - 1 < pfs_ftable_count(fs->ft))
		return &pfs_fsi_data;
	return NULL;
}

/* What the kernel is told of an error. Errors that describe the request
 * or the namespace pass; everything about fetching data (a timeout, a
 * refused connection, another version of the object, an undecodable
 * JPEG, a decompression bomb) is EIO, so an application sees one error for
 * "the bytes could not be had", never a short or wrong read. */
static int fuse_errno(int rc)
{
	switch (-rc) {
	case ENOENT: case ENOTDIR: case EISDIR: case EACCES: case ENOMEM: case EROFS:
	case ENOSYS: case ENAMETOOLONG: case EFBIG: case EINVAL: case EBUSY:
		return -rc;
	default:
		return EIO;
	}
}

static void reply_err(fuse_req_t req, int rc)
{
	fuse_reply_err(req, fuse_errno(rc));
}

static struct pfs_fs *fs_of(fuse_req_t req)
{
	return fuse_req_userdata(req);
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
	count_op(OP_LOOKUP);
	/* The control tree hides a dataset entry of its name in the root. */
	const struct pfs_fsi_kind *k = parent == FUSE_ROOT_ID && !strcmp(name, PFS_CTL_NAME) ?
				       &pfs_fsi_ctl : kind_of(fs, parent);
	int rc = k ? k->lookup(fs, parent, name, &e) : -ENOENT;
	if (rc < 0)
		reply_err(req, rc);
	else
		fuse_reply_entry(req, &e);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct pfs_fs *fs = fs_of(req);
	const struct pfs_fsi_kind *k = kind_of(fs, ino);
	struct fuse_entry_param e;
	(void)fi;
	count_op(OP_GETATTR);
	int rc = k ? k->getattr(fs, ino, &e) : -ENOENT;
	if (rc < 0)
		reply_err(req, rc);
	else
		fuse_reply_attr(req, &e.attr, e.attr_timeout);
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct pfs_fs *fs = fs_of(req);
	const struct pfs_fsi_kind *k = kind_of(fs, ino);
	count_op(OP_OPEN);
	int rc = -ENOENT;
	if (k && !k->write && (fi->flags & O_ACCMODE) != O_RDONLY)
		rc = -EROFS; /* a kind without writes is read-only */
	else if (k)
		rc = k->open(fs, ino, fi);
	if (rc < 0)
		reply_err(req, rc);
	else
		fuse_reply_open(req, fi);
}

static void op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct pfs_fs *fs = fs_of(req);
	count_op(OP_OPENDIR);
	(void)ino;
	if (fs->no_opendir) {
		reply_err(req, -ENOSYS);
		return;
	}
	fi->keep_cache = 1;
	fi->cache_readdir = 1;
	fuse_reply_open(req, fi);
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct pfs_fs *fs = fs_of(req);
	const struct pfs_fsi_kind *k = kind_of(fs, ino);
	struct pfs_fsi_read r;
	(void)fi;
	count_op(OP_READ);
	memset(&r, 0, sizeof(r));
	uint64_t t0 = pfs_log_threshold >= PFS_LOG_DEBUG ? pfs_clock_ns() : 0;
	int rc = k ? k->read(fs, ino, size, off, &r) : -ENOENT;
	if (t0 && k != &pfs_fsi_ctl) /* for timing: each read, its answer, its wait */
		pfs_debug("read ino %llu at %lld, %zu bytes: %s after %.3f s",
			  (unsigned long long)ino, (long long)off, size,
			  rc < 0 ? strerror(-rc) : "ok", (double)(pfs_clock_ns() - t0) / 1e9);
	if (rc < 0) {
		reply_err(req, rc);
	} else {
		if (k != &pfs_fsi_ctl) { /* data served, not the daemon's own files */
			size_t n = 0;
			for (int i = 0; i < r.niov; i++)
				n += r.iov[i].iov_len;
			pfs_add(&served.reads, 1);
			pfs_add(&served.bytes, n);
		}
		fuse_reply_iov(req, r.niov ? r.iov : r.stackv, r.niov);
	}
	pfs_fsi_read_done(fs, &r, rc);
}

/* Shared by readdir and readdirplus: "." and "..", then the kind's
 * entries. Offsets: 1 = ".", 2 = "..", 3 + k = k-th entry. */
static int fill_dir(fuse_req_t req, struct pfs_fs *fs, fuse_ino_t ino, size_t size,
		    off_t off, int plus, char *buf, size_t *used)
{
	const struct pfs_fsi_kind *k = kind_of(fs, ino);
	uint32_t n;
	int rc = k ? k->dir_size(fs, ino, &n) : -ENOENT;
	if (rc < 0)
		return rc;
	*used = 0;
	for (uint64_t i = off < 0 ? 0 : (uint64_t)off; i < 2ull + n; i++) {
		struct fuse_entry_param e;
		const char *name;
		memset(&e, 0, sizeof(e));
		if (i < 2) {
			name = i == 0 ? "." : "..";
			e.attr.st_ino = i == 0 || ino == FUSE_ROOT_ID ? ino : FUSE_ROOT_ID;
			e.attr.st_mode = S_IFDIR;
		} else {
			rc = k->dir_entry(fs, ino, (uint32_t)(i - 2), plus, &name, &e);
			if (rc < 0)
				return rc;
			if (rc > 0)
				continue;
		}
		size_t len = plus ? fuse_add_direntry_plus(req, buf + *used, size - *used, name,
							   &e, (off_t)(i + 1))
				  : fuse_add_direntry(req, buf + *used, size - *used, name,
						      &e.attr, (off_t)(i + 1));
		if (len > size - *used)
			break;
		*used += len;
	}
	return 0;
}

static void do_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, int plus)
{
	size_t used = 0;
	char *buf = malloc(size ? size : 1);
	int rc = buf ? fill_dir(req, fs_of(req), ino, size, off, plus, buf, &used) : -ENOMEM;
	if (rc < 0)
		reply_err(req, rc);
	else
		fuse_reply_buf(req, buf, used);
	free(buf);
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	(void)fi;
	count_op(OP_READDIR);
	do_readdir(req, ino, size, off, 0);
}

static void op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			   struct fuse_file_info *fi)
{
	(void)fi;
	count_op(OP_READDIRPLUS);
	do_readdir(req, ino, size, off, 1);
}

static void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino; (void)fi;
	count_op(OP_RELEASE);
	fuse_reply_err(req, 0);
}

static void op_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino; (void)fi;
	count_op(OP_RELEASEDIR);
	fuse_reply_err(req, 0);
}

static void op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct pfs_fs *fs = fs_of(req);
	(void)ino;
	count_op(OP_STATFS);
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
	count_op(OP_FORGET);
	fuse_reply_none(req); /* inodes are static: nothing to free */
}

static void op_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *f)
{
	(void)count; (void)f;
	count_op(OP_FORGET);
	fuse_reply_none(req);
}

/* ---- writes: the order file takes them, nothing else ------------------- */

/* Everything that would change the dataset. The mount is "ro" too, so the
 * kernel normally refuses these before they reach us. */
static void deny(fuse_req_t req)
{
	count_op(OP_WRITE_DENIED);
	reply_err(req, -EROFS);
}

static void op_setattr(fuse_req_t r, fuse_ino_t i, struct stat *a, int s, struct fuse_file_info *f)
{
	struct pfs_fs *fs = fs_of(r);
	const struct pfs_fsi_kind *k = kind_of(fs, i);
	struct stat st;
	(void)f;
	int rc = k && k->setattr ? k->setattr(fs, i, a, s, fuse_req_ctx(r)->pid, &st) : -EROFS;
	if (rc == -EROFS)
		count_op(OP_WRITE_DENIED);
	if (rc < 0)
		reply_err(r, rc);
	else
		fuse_reply_attr(r, &st, 0);
}

static void op_write(fuse_req_t r, fuse_ino_t i, const char *b, size_t s, off_t o,
		     struct fuse_file_info *f)
{
	struct pfs_fs *fs = fs_of(r);
	const struct pfs_fsi_kind *k = kind_of(fs, i);
	(void)f;
	int rc = k && k->write ? k->write(fs, i, b, s, o, fuse_req_ctx(r)->pid) : -EROFS;
	if (rc == -EROFS)
		count_op(OP_WRITE_DENIED);
	if (rc < 0)
		reply_err(r, rc);
	else
		fuse_reply_write(r, s);
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
static void op_create(fuse_req_t r, fuse_ino_t p, const char *n, mode_t m,
		      struct fuse_file_info *f)
{ (void)p; (void)n; (void)m; (void)f; deny(r); }
static void op_setxattr(fuse_req_t r, fuse_ino_t i, const char *n, const char *v,
			size_t s, int f)
{ (void)i; (void)n; (void)v; (void)s; (void)f; deny(r); }
static void op_removexattr(fuse_req_t r, fuse_ino_t i, const char *n)
{ (void)i; (void)n; deny(r); }

/* ---- the prefetcher's callbacks (prefetch.h) ---------------------------- */

int pfs_fs_prefetch_block(void *ctx, uint64_t obj, uint64_t blk, size_t len)
{
	struct pfs_fs *fs = ctx;
	uint32_t node = PFS_PREFETCH_NODE(obj);
	if (PFS_PREFETCH_VIEW(obj))
		return pfs_fsi_view_prefetch(fs, PFS_PREFETCH_VIEW(obj) - 1, node);
	struct pfs_fnode info;
	if (pfs_ftable_get(fs->ft, node, &info) < 0 || info.is_dir)
		return -ENOENT;
	if (blk * fs->block_size >= info.size)
		return -EINVAL;
	(void)len; /* the block's length follows from the file's size */
	struct pfs_blocks_obj o;
	pfs_blocks_file(fs->blocks, node, &info, &o);
	struct pfs_block *b;
	int rc = pfs_blocks_get(fs->blocks, &o, blk, PFS_BLOCKS_PREFETCH, 0, &b, NULL);
	if (rc == 0)
		pfs_bcache_put_read(fs->cache, b, 0); /* fetched, not read */
	return rc;
}

int pfs_fs_prefetch_cached(void *ctx, uint64_t obj, uint64_t blk)
{
	struct pfs_fs *fs = ctx;
	uint32_t node = PFS_PREFETCH_NODE(obj);
	uint64_t ino = PFS_PREFETCH_VIEW(obj) ?
		       pfs_fsi_view_ino(PFS_PREFETCH_VIEW(obj) - 1, node) : (uint64_t)node + 1;
	/* A file the origin just failed is skipped whole. */
	if (pfs_blocks_failing(fs->blocks, node))
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
	/* Under minio the staging area only keeps blocks read in part: a
	 * prefetch would not be kept there. */
	if (fs->policy == PFS_POLICY_EPOCH && s.staged_bytes + inflight + len <= s.stage_budget)
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
