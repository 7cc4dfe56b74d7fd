/* fusefloor.c - the least a FUSE daemon spends serving files from memory
 * on this machine: bench/cpu's "FUSE floor" row (issue 13).
 *
 *   fusefloor DIR MOUNTPOINT
 *
 * Reads every regular file under DIR into memory it has already written
 * (so no first-touch page faults are left), then serves them read-only at
 * MOUNTPOINT with what prestofs negotiates and nothing it does: the same
 * mount options (max_read=1048576), the same init (1 MiB reads and
 * readahead, no opens sent), the same worker threads (at most 256, 65
 * idle), lookups and attributes cached for an hour, a read answered with
 * one fuse_reply_buf straight out of the file's bytes. No cache, no
 * locks, no statistics, no origin. What a warm prestofs pass costs above
 * this is prestofs's own; what this costs is FUSE's (request, wake-ups,
 * the kernel's copy into the page cache). Runs until unmounted or killed
 * (SIGTERM unmounts). Not part of prestofs; built by bench/cpu with
 * `cc -O2 fusefloor.c $(pkg-config --cflags --libs fuse3)`.
 */
#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* One entry per file or directory; ino = index + 1 (root is 1). */
struct node {
	char *name;
	fuse_ino_t parent;
	int dir;
	char *data;
	size_t len;
	fuse_ino_t *kids; /* directories: children sorted by name */
	size_t nkids;
};

static struct node *nodes;
static size_t nnodes, capnodes;

static fuse_ino_t add_node(const char *name, fuse_ino_t parent, int dir)
{
	if (nnodes == capnodes) {
		capnodes = capnodes ? capnodes * 2 : 1024;
		nodes = realloc(nodes, capnodes * sizeof(*nodes));
		if (!nodes)
			exit(2);
	}
	struct node *n = &nodes[nnodes];
	memset(n, 0, sizeof(*n));
	n->name = strdup(name);
	n->parent = parent;
	n->dir = dir;
	return ++nnodes;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(nodes[*(const fuse_ino_t *)a - 1].name, nodes[*(const fuse_ino_t *)b - 1].name);
}

static int load_file(const char *path, struct node *n)
{
	int fd = open(path, O_RDONLY);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0)
		return -1;
	n->len = (size_t)st.st_size;
	n->data = malloc(n->len ? n->len : 1);
	size_t got = 0;
	while (n->data && got < n->len) {
		ssize_t r = read(fd, n->data + got, n->len - got);
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	close(fd);
	return n->data && got == n->len ? 0 : -1;
}

static int load_dir(const char *path, fuse_ino_t ino)
{
	DIR *d = opendir(path);
	struct dirent *e;
	if (!d)
		return -1;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char sub[4096];
		struct stat st;
		snprintf(sub, sizeof(sub), "%s/%s", path, e->d_name);
		if (stat(sub, &st) < 0 || !(S_ISDIR(st.st_mode) || S_ISREG(st.st_mode)))
			continue;
		fuse_ino_t k = add_node(e->d_name, ino, S_ISDIR(st.st_mode));
		struct node *p = &nodes[ino - 1];
		p->kids = realloc(p->kids, (p->nkids + 1) * sizeof(*p->kids));
		if (!p->kids)
			exit(2);
		p->kids[p->nkids++] = k;
		if (S_ISDIR(st.st_mode) ? load_dir(sub, k) : load_file(sub, &nodes[k - 1]))
			return -1;
	}
	closedir(d);
	struct node *p = &nodes[ino - 1];
	qsort(p->kids, p->nkids, sizeof(*p->kids), by_name);
	return 0;
}

static void fill_attr(fuse_ino_t ino, struct fuse_entry_param *e)
{
	const struct node *n = &nodes[ino - 1];
	memset(e, 0, sizeof(*e));
	e->ino = ino;
	e->attr.st_ino = ino;
	e->attr.st_mode = n->dir ? S_IFDIR | 0555 : S_IFREG | 0444;
	e->attr.st_nlink = n->dir ? 2 : 1;
	e->attr.st_size = (off_t)n->len;
	e->attr.st_blksize = 4096;
	e->attr.st_blocks = (blkcnt_t)((n->len + 511) / 512);
	e->attr_timeout = 3600;
	e->entry_timeout = 3600;
}

static int valid(fuse_ino_t ino)
{
	return ino >= 1 && ino <= nnodes;
}

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	(void)userdata;
	conn->max_write = 1u << 20;
	conn->max_read = 1u << 20;
	conn->max_readahead = 1u << 20;
	conn->max_background = 128;
	conn->congestion_threshold = 96;
	if (conn->capable & FUSE_CAP_AUTO_INVAL_DATA)
		conn->want |= FUSE_CAP_AUTO_INVAL_DATA;
	conn->want &= ~(unsigned)FUSE_CAP_ATOMIC_O_TRUNC;
	conn->want &= ~(unsigned)FUSE_CAP_SPLICE_READ;
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fuse_entry_param e;
	if (!valid(parent) || !nodes[parent - 1].dir) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	const struct node *p = &nodes[parent - 1];
	size_t lo = 0, hi = p->nkids;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = strcmp(name, nodes[p->kids[mid] - 1].name);
		if (!c) {
			fill_attr(p->kids[mid], &e);
			fuse_reply_entry(req, &e);
			return;
		}
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	fuse_reply_err(req, ENOENT);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fuse_entry_param e;
	(void)fi;
	if (!valid(ino)) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	fill_attr(ino, &e);
	fuse_reply_attr(req, &e.attr, e.attr_timeout);
}

/* As prestofs with no-open: the kernel stops sending opens after ENOSYS. */
static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	(void)fi;
	fuse_reply_err(req, ENOSYS);
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	(void)fi;
	if (!valid(ino) || nodes[ino - 1].dir) {
		fuse_reply_err(req, EISDIR);
		return;
	}
	const struct node *n = &nodes[ino - 1];
	size_t o = off < 0 ? 0 : (size_t)off;
	if (o >= n->len) {
		fuse_reply_buf(req, NULL, 0);
		return;
	}
	fuse_reply_buf(req, n->data + o, size < n->len - o ? size : n->len - o);
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	(void)fi;
	if (!valid(ino) || !nodes[ino - 1].dir) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	const struct node *p = &nodes[ino - 1];
	char *buf = malloc(size ? size : 1);
	size_t used = 0;
	for (size_t i = off < 0 ? 0 : (size_t)off; buf && i < p->nkids; i++) {
		struct fuse_entry_param e;
		fill_attr(p->kids[i], &e);
		size_t n = fuse_add_direntry(req, buf + used, size - used,
					     nodes[p->kids[i] - 1].name, &e.attr, (off_t)(i + 1));
		if (n > size - used)
			break;
		used += n;
	}
	if (buf)
		fuse_reply_buf(req, buf, used);
	else
		fuse_reply_err(req, ENOMEM);
	free(buf);
}

static const struct fuse_lowlevel_ops ops = {
	.init = op_init,
	.lookup = op_lookup,
	.getattr = op_getattr,
	.open = op_open,
	.opendir = op_open,
	.read = op_read,
	.readdir = op_readdir,
};

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: fusefloor DIR MOUNTPOINT\n");
		return 2;
	}
	add_node("", 0, 1);
	if (load_dir(argv[1], 1) < 0) {
		fprintf(stderr, "fusefloor: cannot load %s\n", argv[1]);
		return 1;
	}
	char *fargv[] = {argv[0], "-o", "subtype=fusefloor,max_read=1048576,noatime", NULL};
	struct fuse_args args = FUSE_ARGS_INIT(3, fargv);
	struct fuse_session *se = fuse_session_new(&args, &ops, sizeof(ops), NULL);
	if (!se || fuse_set_signal_handlers(se) || fuse_session_mount(se, argv[2])) {
		fprintf(stderr, "fusefloor: cannot mount %s\n", argv[2]);
		return 1;
	}
	fprintf(stderr, "fusefloor: %zu entries mounted at %s\n", nnodes, argv[2]);
	/* FUSEFLOOR_THREADS=N: at most N workers (0: one thread, no pool),
	 * to see what the thread count costs. */
	const char *env = getenv("FUSEFLOOR_THREADS");
	unsigned max = env ? (unsigned)atoi(env) : 256;
	int rc;
	if (env && !max) {
		rc = fuse_session_loop(se);
	} else {
		struct fuse_loop_config *cfg = fuse_loop_cfg_create();
		fuse_loop_cfg_set_max_threads(cfg, max);
		fuse_loop_cfg_set_idle_threads(cfg, max / 4 + 1);
		rc = fuse_session_loop_mt(se, cfg);
		fuse_loop_cfg_destroy(cfg);
	}
	fuse_session_unmount(se);
	fuse_remove_signal_handlers(se);
	fuse_session_destroy(se);
	return rc ? 1 : 0;
}
