/* ssd_files.c - the files of the SSD tier other than the index: the
 * shared table of segment fds, the writer's appends to segments (staging
 * buffer, O_DIRECT), and the saved listing. See ssd.c. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "ssd_int.h"
#include "../util/log.h"

#define LISTING_MAGIC "PFSLIST1"
#define LISTING_HDR 24           /* magic, le64 length, le64 XXH3 */

void ssd_seg_path(const struct pfs_ssd *s, uint32_t id, char *buf)
{
	snprintf(buf, 4096, "%s/seg-%08x.dat", s->dir, id);
}

void ssd_path_in(const struct pfs_ssd *s, const char *name, char *buf)
{
	snprintf(buf, 4096, "%s/%s", s->dir, name);
}

int ssd_pread_full(int fd, void *buf, size_t len, uint64_t off)
{
	char *p = buf;
	while (len) {
		ssize_t n = pread(fd, p, len, (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		p += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

/* ---- segment fds ---- */

static struct segfd **seg_slot(struct pfs_ssd *s, uint32_t id)
{
	struct segfd **p = &s->segfds[id % SSD_SEG_BUCKETS];
	while (*p && (*p)->id != id)
		p = &(*p)->next;
	return p;
}

int ssd_seg_get(struct pfs_ssd *s, uint32_t id, int create, struct segfd **out)
{
	char path[4096];
	struct segfd *f, **p;
	int fd;

	if (!create) {
		pthread_mutex_lock(&s->seg_lock);
		f = *seg_slot(s, id);
		if (f)
			f->refs++;
		pthread_mutex_unlock(&s->seg_lock);
		if (f) {
			*out = f;
			return 0;
		}
	}
	ssd_seg_path(s, id, path);
	fd = open(path, O_RDWR | O_CLOEXEC | (create ? O_CREAT | O_TRUNC : 0), 0644);
	if (fd < 0)
		return -errno;
	f = calloc(1, sizeof(*f));
	if (!f) {
		close(fd);
		return -ENOMEM;
	}
	f->id = id;
	f->fd = fd;
	f->refs = 2; /* the table's and the caller's */
	pthread_mutex_lock(&s->seg_lock);
	p = seg_slot(s, id);
	if (*p && !create) { /* another reader opened it meanwhile */
		(*p)->refs++;
		*out = *p;
		pthread_mutex_unlock(&s->seg_lock);
		close(fd);
		free(f);
		return 0;
	}
	if (*p) { /* a stale entry of a reused id (crash leftovers): replace it */
		struct segfd *old = *p;
		*p = old->next;
		if (--old->refs == 0) {
			close(old->fd);
			free(old);
		}
	}
	f->next = s->segfds[id % SSD_SEG_BUCKETS];
	s->segfds[id % SSD_SEG_BUCKETS] = f;
	pthread_mutex_unlock(&s->seg_lock);
	*out = f;
	return 0;
}

void ssd_seg_put(struct pfs_ssd *s, struct segfd *f)
{
	int last;
	pthread_mutex_lock(&s->seg_lock);
	last = --f->refs == 0;
	pthread_mutex_unlock(&s->seg_lock);
	if (last) {
		close(f->fd);
		free(f);
	}
}

void ssd_seg_forget(struct pfs_ssd *s, uint32_t id)
{
	struct segfd *f, **p;
	pthread_mutex_lock(&s->seg_lock);
	p = seg_slot(s, id);
	f = *p;
	if (f)
		*p = f->next;
	pthread_mutex_unlock(&s->seg_lock);
	if (f)
		ssd_seg_put(s, f);
}

void ssd_seg_close_all(struct pfs_ssd *s)
{
	for (int i = 0; i < SSD_SEG_BUCKETS; i++) {
		while (s->segfds[i]) {
			struct segfd *f = s->segfds[i];
			s->segfds[i] = f->next;
			close(f->fd);
			free(f);
		}
	}
}

/* ---- the writer's appends (see ssd_int.h) ---- */

static int pwrite_full(int fd, const void *buf, size_t len, uint64_t off)
{
	const char *p = buf;
	while (len) {
		ssize_t n = pwrite(fd, p, len, (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		p += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

/* The file system refused O_DIRECT: buffered writes from now on. */
static void dio_refuse(struct pfs_ssd *s, int err, const char *when)
{
	if (s->dio_fd >= 0)
		close(s->dio_fd);
	s->dio_fd = -1;
	s->dio_refused = 1;
	pfs_info("ssd_dir %s: the file system refuses O_DIRECT (%s at %s); segments are "
		 "written through the page cache", s->dir, strerror(err), when);
}

/* An O_DIRECT fd of segment id (one kept open: the current segment's), or
 * -1: write through the shared, buffered fd. */
static int dio_fd(struct pfs_ssd *s, uint32_t id)
{
	char path[4096];
	int fd;

	if (s->dio_refused)
		return -1;
	if (s->dio_fd >= 0 && s->dio_seg == id)
		return s->dio_fd;
	if (s->dio_fd >= 0)
		close(s->dio_fd);
	s->dio_fd = -1;
	ssd_seg_path(s, id, path);
	fd = open(path, O_WRONLY | O_DIRECT | O_CLOEXEC);
	if (fd < 0) {
		if (errno == EINVAL)
			dio_refuse(s, errno, "open");
		return -1; /* another error: this write goes buffered */
	}
	s->dio_fd = fd;
	s->dio_seg = id;
	return fd;
}

/* Writes the staged bytes at stage_off: whole SSD_ALIGN units from an
 * aligned buffer, as O_DIRECT wants. */
static int stage_write(struct pfs_ssd *s)
{
	size_t done = 0, len = s->stage_used;
	int rc = 0;

	while (done < len) {
		int fd = dio_fd(s, s->stage_seg->id), direct = fd >= 0;
		ssize_t n = pwrite(direct ? fd : s->stage_seg->fd, s->stage + done, len - done,
				   (off_t)(s->stage_off + done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EINVAL && direct) { /* refused at the write (some do) */
			dio_refuse(s, errno, "write");
			continue;
		}
		if (n <= 0) {
			rc = n < 0 ? -errno : -EIO;
			break;
		}
		done += (size_t)n;
	}
	s->stage_off += len;
	s->stage_used = 0;
	return rc;
}

void ssd_append_begin(struct pfs_ssd *s, struct segfd *f, uint64_t off)
{
	/* Allocated once, on the first append; out of memory: appends are
	 * written from the items' own buffers, through the page cache. */
	if (!s->stage && posix_memalign((void **)&s->stage, SSD_ALIGN, SSD_STAGE_BYTES))
		s->stage = NULL;
	s->stage_seg = f;
	s->stage_off = off;
	s->stage_used = 0;
}

int ssd_append(struct pfs_ssd *s, const void *data, size_t len, uint64_t alen)
{
	const unsigned char *p = data;
	size_t pad = (size_t)(alen - len), n;
	int rc;

	if (!s->stage) {
		rc = pwrite_full(s->stage_seg->fd, data, len, s->stage_off);
		s->stage_off += alen;
		return rc;
	}
	/* stage_used is a multiple of SSD_ALIGN here: so is the room left. */
	while (len) {
		n = SSD_STAGE_BYTES - s->stage_used;
		if (n > len)
			n = len;
		memcpy(s->stage + s->stage_used, p, n);
		s->stage_used += n;
		p += n;
		len -= n;
		if (s->stage_used == SSD_STAGE_BYTES && (rc = stage_write(s)))
			return rc;
	}
	memset(s->stage + s->stage_used, 0, pad); /* never a stale byte on disk */
	s->stage_used += pad;
	if (s->stage_used == SSD_STAGE_BYTES)
		return stage_write(s);
	return 0;
}

int ssd_append_flush(struct pfs_ssd *s)
{
	int rc = s->stage_used ? stage_write(s) : 0;
	s->stage_seg = NULL;
	return rc;
}

void ssd_append_close(struct pfs_ssd *s)
{
	free(s->stage);
	s->stage = NULL;
	if (s->dio_fd >= 0)
		close(s->dio_fd);
	s->dio_fd = -1;
}

/* ---- the listing ---- */

static void le64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++, v >>= 8)
		p[i] = (unsigned char)v;
}

static uint64_t get_le64(const unsigned char *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

int pfs_ssd_save_listing(struct pfs_ssd *s, const void *buf, size_t len)
{
	char tmp[4096], path[4096];
	unsigned char hdr[LISTING_HDR];
	int fd, rc = 0;

	if (!s || (!buf && len))
		return -EINVAL;
	if (len > PFS_SSD_LISTING_MAX)
		return -EFBIG;
	if (!s->env || pfs_load(&s->disabled))
		return -EROFS;
	ssd_path_in(s, "listing.XXXXXX", tmp);
	ssd_path_in(s, "listing", path);
	if ((fd = mkostemp(tmp, O_CLOEXEC)) < 0)
		return -errno;
	memcpy(hdr, LISTING_MAGIC, 8);
	le64(hdr + 8, len);
	le64(hdr + 16, XXH3_64bits(buf, len));
	if (!(rc = pwrite_full(fd, hdr, sizeof(hdr), 0)))
		rc = pwrite_full(fd, buf, len, LISTING_HDR);
	if (!rc && fsync(fd))
		rc = -errno;
	close(fd);
	if (!rc && rename(tmp, path))
		rc = -errno;
	if (rc) {
		unlink(tmp);
		pfs_warn("ssd_dir %s: cannot save the listing: %s", s->dir, strerror(-rc));
		return rc;
	}
	fd = open(s->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
	return 0;
}

int pfs_ssd_load_listing(struct pfs_ssd *s, char **buf, size_t *len)
{
	char path[4096];
	unsigned char hdr[LISTING_HDR];
	struct stat sb;
	uint64_t n;
	char *p = NULL;
	int fd, rc;

	*buf = NULL;
	*len = 0;
	if (!s)
		return -EINVAL;
	ssd_path_in(s, "listing", path);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return -errno;
	if (fstat(fd, &sb) || (rc = ssd_pread_full(fd, hdr, sizeof(hdr), 0)) ||
	    memcmp(hdr, LISTING_MAGIC, 8)) {
		rc = -EIO;
		goto close_fd;
	}
	n = get_le64(hdr + 8);
	if (n > PFS_SSD_LISTING_MAX) {
		rc = -EFBIG;
		goto close_fd;
	}
	if ((uint64_t)sb.st_size != LISTING_HDR + n) {
		rc = -EIO;
		goto close_fd;
	}
	if (!(p = malloc(n + 1))) {
		rc = -ENOMEM;
		goto close_fd;
	}
	if ((rc = ssd_pread_full(fd, p, n, LISTING_HDR)) == 0 &&
	    XXH3_64bits(p, n) != get_le64(hdr + 16))
		rc = -EIO;
	if (rc) {
		free(p);
		rc = -EIO;
		goto close_fd;
	}
	p[n] = 0;
	*buf = p;
	*len = n;
close_fd:
	close(fd);
	if (rc == -EIO)
		pfs_warn("ssd_dir %s: the saved listing is damaged; ignoring it", s->dir);
	return rc;
}
