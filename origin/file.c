/* file.c - the local-directory backend.
 *
 * It goes through the same interface as remote origins (listing once,
 * then ranged reads through the block cache), so tests of the cache and
 * the FUSE layer need no server. The validator of a file is derived from
 * its inode, size and mtime (like nginx's ETag), so a file replaced while
 * mounted is detected and never served as a mix of two versions.
 * Directories reached through symlinks are not followed (no loops);
 * symlinks to regular files are listed as files.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend.h"
#include "counters.h"
#include "manifest.h"
#include "../util/log.h"

#define MAX_DEPTH 128
#define MANIFEST_CAP (1ull << 30)

struct file_origin {
	struct pfs_origin base;
	int dirfd;       /* the root directory, O_PATH */
	char *manifest;  /* -o manifest=PATH, or NULL */
};

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Walks directory `fd` (owned: closed here) whose relative path is
 * path[0..plen). Entries are visited in byte order of names. */
static int walk(int fd, char *path, size_t plen, int depth, pfs_list_fn fn, void *ctx)
{
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -errno;
	}
	char **names = NULL;
	size_t n = 0, cap = 0;
	int rc = 0;
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (plen == 0 && !strcmp(de->d_name, PFS_MANIFEST_NAME))
			continue; /* metadata, not data */
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			char **nn = realloc(names, cap * sizeof(*nn));
			if (!nn) { rc = -ENOMEM; goto out_names; }
			names = nn;
		}
		if (!(names[n] = strdup(de->d_name))) { rc = -ENOMEM; goto out_names; }
		n++;
	}
	if (n > 1)
		qsort(names, n, sizeof(*names), cmp_names);
	for (size_t i = 0; i < n && rc == 0; i++) {
		size_t nl = strlen(names[i]);
		if (plen + 1 + nl >= PATH_MAX) {
			pfs_warn("skipping a path longer than %d bytes", PATH_MAX);
			continue;
		}
		size_t l = plen;
		if (l)
			path[l++] = '/';
		memcpy(path + l, names[i], nl + 1);
		l += nl;
		if (!pfs_path_valid(path)) {
			pfs_warn("skipping '%s': not a valid dataset path", path);
			path[plen] = '\0';
			continue;
		}
		struct stat st, lst;
		if (fstatat(dirfd(d), names[i], &lst, AT_SYMLINK_NOFOLLOW) < 0 ||
		    fstatat(dirfd(d), names[i], &st, 0) < 0) {
			pfs_warn("skipping '%s': %s", path, strerror(errno));
		} else if (S_ISDIR(st.st_mode) && !S_ISLNK(lst.st_mode)) {
			rc = fn(ctx, path, 1, 0, st.st_mtim.tv_sec, NULL);
			if (rc == 0 && depth >= MAX_DEPTH) {
				pfs_warn("'%s': deeper than %d levels, not listed", path, MAX_DEPTH);
			} else if (rc == 0) {
				int sub = openat(dirfd(d), names[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
				if (sub < 0)
					pfs_warn("skipping '%s': %s", path, strerror(errno));
				else
					rc = walk(sub, path, l, depth + 1, fn, ctx);
			}
		} else if (S_ISREG(st.st_mode)) {
			rc = fn(ctx, path, 0, (uint64_t)st.st_size, st.st_mtim.tv_sec, NULL);
		}
		path[plen] = '\0';
	}
out_names:
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	closedir(d);
	return rc;
}

static int read_whole(const char *file, size_t cap, char **buf, size_t *len)
{
	int fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct stat st;
	int rc = 0;
	if (fstat(fd, &st) < 0) { rc = -errno; goto out_fd; }
	if ((uint64_t)st.st_size > cap) { rc = -EFBIG; goto out_fd; }
	*buf = malloc((size_t)st.st_size + 1);
	if (!*buf) { rc = -ENOMEM; goto out_fd; }
	size_t got = 0;
	while (got < (size_t)st.st_size) {
		ssize_t r = read(fd, *buf + got, (size_t)st.st_size - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) { rc = r < 0 ? -errno : -EIO; free(*buf); *buf = NULL; goto out_fd; }
		got += (size_t)r;
	}
	(*buf)[got] = '\0';
	*len = got;
out_fd:
	close(fd);
	return rc;
}

static int file_list(struct pfs_origin *o, pfs_list_fn fn, void *ctx)
{
	struct file_origin *fo = (struct file_origin *)o;
	if (fo->manifest) {
		char *buf = NULL;
		size_t len = 0;
		int rc = read_whole(fo->manifest, MANIFEST_CAP, &buf, &len);
		if (rc < 0) {
			pfs_err("%s: %s", fo->manifest, strerror(-rc));
			return rc;
		}
		char err[256];
		rc = pfs_manifest_parse(buf, len, fn, ctx, err, sizeof(err));
		if (rc < 0)
			pfs_err("%s: %s", fo->manifest, err);
		free(buf);
		return rc;
	}
	int fd = openat(fo->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	char *path = malloc(PATH_MAX);
	if (!path) {
		close(fd);
		return -ENOMEM;
	}
	path[0] = '\0';
	int rc = walk(fd, path, 0, 0, fn, ctx);
	free(path);
	return rc;
}

static void make_etag(const struct stat *st, char *out)
{
	snprintf(out, PFS_ETAG_MAX, "\"%" PRIx64 "-%" PRIx64 "-%lx.%lx\"",
		 (uint64_t)st->st_ino, (uint64_t)st->st_size,
		 (unsigned long)st->st_mtim.tv_sec, (unsigned long)st->st_mtim.tv_nsec);
}

static int file_read(struct pfs_origin *o, const char *path, uint64_t size,
		     uint64_t off, size_t len, void *buf, char *etag,
		     const struct pfs_origin_req *req)
{
	(void)req; /* a local file is read by range, without retries */
	struct file_origin *fo = (struct file_origin *)o;
	int rc = 0;
	pfs_origin_count(requests, 1);
	pfs_origin_inflight_begin();
	int fd = openat(fo->dirfd, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		rc = errno == ENOENT ? -ENOENT : errno == EACCES ? -EACCES : -EIO;
		goto out;
	}
	struct stat st;
	if (fstat(fd, &st) < 0) { rc = -EIO; goto out_fd; }
	char now[PFS_ETAG_MAX];
	make_etag(&st, now);
	if ((uint64_t)st.st_size != size || (etag[0] && strcmp(etag, now))) {
		rc = -ESTALE;
		goto out_fd;
	}
	size_t got = 0;
	while (got < len) {
		ssize_t r = pread(fd, (char *)buf + got, len - got, (off_t)(off + got));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) { rc = -EIO; goto out_fd; }
		got += (size_t)r;
	}
	/* The file may have been replaced in place during the read. */
	if (fstat(fd, &st) < 0) { rc = -EIO; goto out_fd; }
	char after[PFS_ETAG_MAX];
	make_etag(&st, after);
	if (strcmp(now, after)) { rc = -ESTALE; goto out_fd; }
	if (!etag[0])
		memcpy(etag, now, strlen(now) + 1);
	pfs_origin_count(bytes, len);
out_fd:
	close(fd);
out:
	pfs_origin_inflight_end();
	if (rc < 0)
		pfs_origin_count(errors, 1);
	return rc;
}

static void file_destroy(struct pfs_origin *o)
{
	struct file_origin *fo = (struct file_origin *)o;
	close(fo->dirfd);
	free(fo->manifest);
	free(fo);
}

static const struct pfs_origin_ops file_ops = {
	.list = file_list,
	.read = file_read,
	.destroy = file_destroy,
};

int pfs_origin_file_create(const char *dir, const struct pfs_origin_opts *opts,
			   struct pfs_origin **out)
{
	struct file_origin *fo = calloc(1, sizeof(*fo));
	if (!fo)
		return -ENOMEM;
	fo->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fo->dirfd < 0) {
		int rc = -errno;
		pfs_err("origin '%s': %s", dir, strerror(errno));
		free(fo);
		return rc;
	}
	fo->base.ops = &file_ops;
	fo->base.name = strdup(dir);
	if (opts && opts->manifest)
		fo->manifest = strdup(opts->manifest);
	if (!fo->base.name || (opts && opts->manifest && !fo->manifest)) {
		file_destroy(&fo->base);
		return -ENOMEM;
	}
	*out = &fo->base;
	return 0;
}
