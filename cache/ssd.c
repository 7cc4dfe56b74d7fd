/* ssd.c - see ssd.h. Open/close and the counters; the read path is in
 * ssd_read.c, the queue and the writer thread's loop in ssd_queue.c, one
 * batch of the writer in ssd_store.c, segment fds and the listing file in
 * ssd_files.c, the helpers the others share in ssd_base.c (the bottom: it
 * calls none of them), the declarations in ssd_int.h.
 *
 * Layout of dir:
 *   lock            flock(LOCK_EX|LOCK_NB) by the owning process, its pid inside
 *   index.mdb(-lock) LMDB: meta (format, origin, counters), blocks (path NUL
 *                   be64 block -> struct ent + etag), lru (be64 access seq ->
 *                   key), segs (be64 id -> live bytes, append end)
 *   seg-XXXXXXXX.dat append-only data segments (256 MiB by default)
 *   listing         the last good listing: magic, length, XXH3, blob
 *
 * Why append-only segments with ONE writer: the write order is what makes a
 * crash harmless. The writer appends a batch, fdatasyncs the segment, and
 * only then commits the LMDB txn naming those bytes; LMDB commits are
 * atomic, so after a kill -9 an entry either does not exist or names
 * durable bytes. Uncommitted appends sit past the segment's recorded end
 * and are overwritten by the next batch. One fsync + one commit per batch
 * (group commit) instead of per block. Segments (not a file per block) keep
 * the file count and open fds small; entries start on 4 KiB boundaries so
 * fallocate(PUNCH_HOLE) of an evicted entry gives its blocks back to the
 * file system at once, and a segment whose live bytes reach 0 is unlinked.
 * Freed ranges are never rewritten (appends only go past the end).
 * Appends bypass the page cache (O_DIRECT from a reused staging buffer,
 * buffered where the file system refuses it): fresh page-cache pages for
 * every stored byte were the writer's biggest CPU cost.
 *
 * Why no write on the read path: a get is one LMDB read txn (MDB_NOTLS:
 * FUSE threads are pooled, a txn is per call) plus a pread. Its recency is
 * pushed to an in-memory list that the writer applies in its next batch,
 * and bad or stale entries are queued as drop requests; only the writer
 * opens write txns, so readers never wait for the disk's fsyncs.
 *
 * Every counter lives in LMDB's meta DB and is updated in the txns that
 * change it: opening reads a few keys and never scans the cache (the one
 * directory listing at open removes files a crash left outside the index;
 * it is proportional to the number of segments, not of blocks).
 *
 * Why the lock file of LMDB is allocated here: LMDB maps index.mdb-lock
 * shared and writable and touches its pages as readers come and go; on a
 * full file system a page that cannot be allocated is a SIGBUS in whatever
 * thread touches it, not an error. So it is created with every block
 * allocated (posix_fallocate) before LMDB opens it. When even that does not
 * fit, the tier opens read-only (MDB_RDONLY | MDB_NOLOCK: no lock file, safe
 * because this process then never writes the index and the dir lock keeps
 * every other process out): stored blocks are served, nothing is stored.
 *
 *   open ---> ENABLED ---(write error: ssd_disable)---> DISABLED (writes)
 *     |---(full disk at open)---> READ-ONLY (index open, no writer)
 *     `---(read-only dir, full disk and no usable index)---> OFF (no index)
 *
 * Locks: q_lock (the queue, touches, tickets), seg_lock (fd table),
 * dctx_lock (decompression contexts). None is held across I/O; they never
 * nest.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>
#include <xxhash.h>

#include "bufpool.h"
#include "ssd_int.h"
#include "../util/log.h"
#include "../util/stats.h"

#define DEFAULT_QUEUE (64ull << 20)
#define DEFAULT_SEGMENT (256ull << 20)
#define MAP_SIZE (64ull << 30)   /* sparse; about 200 M entries */
#define MAX_READERS 1024
/* LMDB 0.9's lock file for MAX_READERS: (maxreaders - 1) MDB_readers and
 * one MDB_txninfo, each padded to 64-byte cache lines. A larger file only
 * admits more readers; a smaller one is grown by LMDB (unallocated). */
#define LOCK_BYTES ((MAX_READERS - 1) * 64ull + 192)

/* ---- open: directory, lock, index ---- */

static int mkdir_p(const char *dir)
{
	char buf[4096];
	size_t n = strlen(dir);
	if (n == 0 || n >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, dir, n + 1);
	for (char *p = buf + 1; ; p++) {
		if (*p == '/' || !*p) {
			char c = *p;
			*p = 0;
			if (mkdir(buf, 0755) && errno != EEXIST)
				return -errno;
			*p = c;
			if (!c)
				break;
		}
	}
	return 0;
}

static int take_lock(struct pfs_ssd *s)
{
	char path[4096], pid[32] = "";
	int fd, n;

	ssd_path_in(s, "lock", path);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	if (flock(fd, LOCK_EX | LOCK_NB)) {
		int e = errno;
		if (e == EWOULDBLOCK) {
			n = (int)pread(fd, pid, sizeof(pid) - 1, 0);
			pid[n > 0 ? n : 0] = 0;
			pid[strcspn(pid, "\n")] = 0;
			pfs_err("ssd_dir %s is in use by another prestofs (pid %s); use another "
				"ssd_dir", s->dir, *pid ? pid : "unknown");
		}
		close(fd);
		return e == EWOULDBLOCK ? -EBUSY : -e;
	}
	n = snprintf(pid, sizeof(pid), "%ld\n", (long)getpid());
	/* Over the old pid first: on a full disk its block is reused. */
	if (pwrite(fd, pid, (size_t)n, 0) != n || ftruncate(fd, n))
		pfs_warn("ssd_dir %s: cannot write the lock's pid: %s", s->dir, strerror(errno));
	s->lock_fd = fd;
	return 0;
}

static int no_space(int rc)
{
	return rc == -ENOSPC || rc == -EDQUOT;
}

/* A fresh LMDB lock file with all its blocks allocated (see the top). 0,
 * or -ENOSPC/-EDQUOT when it does not fit (nothing left behind). Other
 * failures (no fallocate on this file system) leave it to LMDB: 0. */
static int lock_file_alloc(struct pfs_ssd *s)
{
	char path[4096];
	int fd, rc;

	ssd_path_in(s, "index.mdb-lock", path);
	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0)
		return no_space(-errno) ? -errno : 0;
	rc = -posix_fallocate(fd, 0, (off_t)LOCK_BYTES);
	close(fd);
	if (!no_space(rc))
		return 0;
	unlink(path);
	return rc;
}

/* Opens the index: read-write (creating what is missing), or rdonly:
 * MDB_RDONLY | MDB_NOLOCK, nothing created (-ENOENT when there is no
 * index to read). */
static int index_open(struct pfs_ssd *s, int rdonly)
{
	unsigned flags = MDB_NOSUBDIR | MDB_NOTLS | MDB_NORDAHEAD;
	unsigned dbflags = rdonly ? 0 : MDB_CREATE;
	char path[4096];
	MDB_envinfo info;
	MDB_stat st;
	struct stat sb;
	MDB_txn *txn;
	int rc;

	/* We hold dir/lock, so no other process has this env open: LMDB's own
	 * lock file carries nothing worth keeping, and a stale or foreign one
	 * (crash, other LMDB build) would only make the open fail. */
	if (rdonly) {
		flags |= MDB_RDONLY | MDB_NOLOCK;
	} else {
		ssd_path_in(s, "index.mdb-lock", path);
		unlink(path);
		if ((rc = lock_file_alloc(s)))
			return rc;
	}
	ssd_path_in(s, "index.mdb", path);
	if ((rc = mdb_env_create(&s->env)))
		return ssd_mdb_err(rc);
	mdb_env_set_maxdbs(s->env, 4);
	mdb_env_set_mapsize(s->env, MAP_SIZE);
	mdb_env_set_maxreaders(s->env, MAX_READERS);
	rc = mdb_env_open(s->env, path, flags, 0644);
	if (rc) {
		rc = ssd_mdb_corrupt(rc) ? E_CORRUPT : ssd_mdb_err(rc);
		goto close_env;
	}
	/* A truncated file would SIGBUS on the first touch of a missing page. */
	mdb_env_info(s->env, &info);
	mdb_env_stat(s->env, &st);
	if (stat(path, &sb) == 0 &&
	    (uint64_t)(info.me_last_pgno + 1) * st.ms_psize > (uint64_t)sb.st_size) {
		rc = E_CORRUPT;
		goto close_env;
	}
	mdb_reader_check(s->env, NULL);
	if ((rc = mdb_txn_begin(s->env, NULL, rdonly ? MDB_RDONLY : 0, &txn)))
		goto translate;
	if ((rc = mdb_dbi_open(txn, "meta", dbflags, &s->db_meta)) ||
	    (rc = mdb_dbi_open(txn, "blocks", dbflags, &s->db_blocks)) ||
	    (rc = mdb_dbi_open(txn, "lru", dbflags, &s->db_lru)) ||
	    (rc = mdb_dbi_open(txn, "segs", dbflags, &s->db_segs))) {
		mdb_txn_abort(txn);
		goto translate;
	}
	if ((rc = mdb_txn_commit(txn)))
		goto translate;
	return 0;
translate:
	rc = ssd_mdb_corrupt(rc) ? E_CORRUPT : ssd_mdb_err(rc);
close_env:
	mdb_env_close(s->env);
	s->env = NULL;
	return rc;
}

/* Sets a corrupt index aside (one copy kept) and deletes the segments. */
static void reset_store(struct pfs_ssd *s, const char *why)
{
	char path[4096], aside[4096];
	struct dirent *de;
	DIR *d;

	pfs_warn("ssd_dir %s: the index is unusable (%s); moving it to index.mdb.corrupt "
		 "and starting with an empty cache", s->dir, why);
	ssd_path_in(s, "index.mdb", path);
	ssd_path_in(s, "index.mdb.corrupt", aside);
	if (rename(path, aside) && errno != ENOENT)
		unlink(path);
	ssd_path_in(s, "index.mdb-lock", path);
	unlink(path);
	if (!(d = opendir(s->dir)))
		return;
	while ((de = readdir(d))) {
		unsigned id;
		char tail;
		if (sscanf(de->d_name, "seg-%8x.da%c", &id, &tail) == 2 && tail == 't') {
			ssd_path_in(s, de->d_name, path);
			unlink(path);
		}
	}
	closedir(d);
}

static int meta_get(struct pfs_ssd *s, MDB_txn *txn, const char *name, MDB_val *v)
{
	MDB_val k = { strlen(name), (void *)name };
	return mdb_get(txn, s->db_meta, &k, v);
}

static uint64_t meta_u64(struct pfs_ssd *s, MDB_txn *txn, const char *name)
{
	MDB_val v;
	uint64_t x = 0;
	if (meta_get(s, txn, name, &v) == 0 && v.mv_size == sizeof(x))
		memcpy(&x, v.mv_data, sizeof(x));
	return x;
}

static int meta_set(struct pfs_ssd *s, MDB_txn *txn, const char *name, const void *p, size_t n)
{
	MDB_val k = { strlen(name), (void *)name }, v = { n, (void *)p };
	return mdb_put(txn, s->db_meta, &k, &v, 0);
}

/* The block size the entries were cut by ("layout"). When it changes (or
 * an index from before it was recorded holds entries), every entry now in
 * the index is of another layout: a miss from now on (ssd_entry_fp), and
 * swept in the background (sweep_below). A sweep left unfinished by the
 * last mount goes on. */
static int layout_load(struct pfs_ssd *s, MDB_txn *txn)
{
	if (!s->block_size)
		return 0;
	MDB_val v;
	uint64_t old = 0, pending = meta_u64(s, txn, "sweep_below");
	int had = meta_get(s, txn, "layout", &v) == 0 && v.mv_size == sizeof(old);
	if (had)
		memcpy(&old, v.mv_data, sizeof(old));
	if ((had ? old != s->block_size : s->st_entries > 0) && s->next_seq > pending)
		pending = s->next_seq;
	int rc;
	if ((rc = meta_set(s, txn, "layout", &s->block_size, sizeof(s->block_size))) ||
	    (rc = meta_set(s, txn, "sweep_below", &pending, sizeof(pending))))
		return rc;
	s->sweep_below = pending;
	if (pending && (!had || old != s->block_size))
		pfs_info("ssd_dir %s: entries of block_size %llu%s are swept in the background",
			 s->dir, (unsigned long long)old, had ? "" : " (or unrecorded)");
	return 0;
}

/* Reads (or, first use, writes) format, origin and counters. -EINVAL for
 * another origin, E_CORRUPT for another format; rdonly: writes nothing,
 * -ENOENT for an index never used. */
static int meta_load(struct pfs_ssd *s, int rdonly)
{
	uint64_t fmt = SSD_FORMAT, one = 1, v64;
	unsigned char kb[8];
	MDB_val v, k = { 8, kb };
	MDB_txn *txn;
	struct segrec r;
	int rc;

	if ((rc = mdb_txn_begin(s->env, NULL, rdonly ? MDB_RDONLY : 0, &txn)))
		return ssd_mdb_corrupt(rc) ? E_CORRUPT : ssd_mdb_err(rc);
	rc = meta_get(s, txn, "format", &v);
	if (rc == MDB_NOTFOUND && rdonly) {
		rc = -ENOENT;
		goto abort;
	} else if (rc == MDB_NOTFOUND) {
		if ((rc = meta_set(s, txn, "format", &fmt, sizeof(fmt))) ||
		    (rc = meta_set(s, txn, "next_seq", &one, sizeof(one))) ||
		    (rc = meta_set(s, txn, "next_seg", &one, sizeof(one))))
			goto abort;
	} else if (rc) {
		goto abort;
	} else if (v.mv_size != sizeof(v64) || (memcpy(&v64, v.mv_data, 8), v64 != fmt)) {
		rc = E_CORRUPT;
		goto abort;
	}
	rc = meta_get(s, txn, "origin", &v);
	if (rc == 0 && s->origin_id &&
	    (v.mv_size != strlen(s->origin_id) || memcmp(v.mv_data, s->origin_id, v.mv_size))) {
		pfs_err("ssd_dir %s caches origin %.*s; use another ssd_dir or remove it", s->dir,
			(int)v.mv_size, (const char *)v.mv_data);
		rc = -EINVAL;
		goto abort;
	}
	if (rc == MDB_NOTFOUND && s->origin_id && !rdonly &&
	    (rc = meta_set(s, txn, "origin", s->origin_id, strlen(s->origin_id))))
		goto abort;
	s->st_bytes = meta_u64(s, txn, "bytes");
	s->st_raw = meta_u64(s, txn, "raw_bytes");
	s->st_entries = meta_u64(s, txn, "entries");
	s->next_seq = meta_u64(s, txn, "next_seq");
	s->next_seg = (uint32_t)meta_u64(s, txn, "next_seg");
	s->cur_seg = (uint32_t)meta_u64(s, txn, "cur_seg");
	s->cur_end = 0;
	if (s->cur_seg) {
		ssd_be64(kb, s->cur_seg);
		if (mdb_get(txn, s->db_segs, &k, &v) == 0 && v.mv_size == sizeof(r)) {
			memcpy(&r, v.mv_data, sizeof(r));
			s->cur_end = r.end;
		}
	}
	if (!s->next_seq || !s->next_seg || s->cur_seg >= s->next_seg) {
		rc = E_CORRUPT;
		goto abort;
	}
	if (rdonly) {
		mdb_txn_abort(txn);
		return 0;
	}
	if ((rc = layout_load(s, txn)))
		goto abort;
	if ((rc = mdb_txn_commit(txn)))
		return ssd_mdb_corrupt(rc) ? E_CORRUPT : ssd_mdb_err(rc);
	return 0;
abort:
	mdb_txn_abort(txn);
	if (rc > 0 || (rc >= MDB_KEYEXIST && rc <= MDB_LAST_ERRCODE))
		rc = ssd_mdb_corrupt(rc) ? E_CORRUPT : ssd_mdb_err(rc);
	return rc;
}

/* Removes what a crash can leave outside the index: a segment created by a
 * batch that never committed, a half-written listing. */
static void sweep(struct pfs_ssd *s)
{
	char path[4096], tail;
	unsigned char kb[8];
	MDB_val k = { 8, kb }, v;
	struct dirent *de;
	MDB_txn *txn;
	unsigned id;
	DIR *d;

	if (mdb_txn_begin(s->env, NULL, MDB_RDONLY, &txn))
		return;
	if ((d = opendir(s->dir))) {
		while ((de = readdir(d))) {
			int orphan = 0;
			if (sscanf(de->d_name, "seg-%8x.da%c", &id, &tail) == 2 && tail == 't') {
				ssd_be64(kb, id);
				orphan = mdb_get(txn, s->db_segs, &k, &v) == MDB_NOTFOUND;
			} else if (!strncmp(de->d_name, "listing.", 8)) {
				orphan = 1;
			}
			if (orphan) {
				ssd_path_in(s, de->d_name, path);
				pfs_debug("ssd_dir %s: removing leftover %s", s->dir, de->d_name);
				unlink(path);
			}
		}
		closedir(d);
	}
	mdb_txn_abort(txn);
}

static int unwritable(int rc)
{
	return rc == -EROFS || rc == -EACCES || rc == -EPERM;
}

/* index_open + meta_load; read-write, a damaged index is set aside once
 * and replaced by an empty one. 0 (s->env open), or a negative errno
 * (s->env NULL; -EIO: still damaged). */
static int open_store(struct pfs_ssd *s, int rdonly)
{
	int rc;
	for (int tries = 0; ; tries++) {
		rc = index_open(s, rdonly);
		if (rc == 0 && (rc = meta_load(s, rdonly))) {
			mdb_env_close(s->env);
			s->env = NULL;
		}
		if (rc != E_CORRUPT || tries || rdonly)
			break;
		reset_store(s, "damaged, truncated or of another format");
	}
	return rc == E_CORRUPT ? -EIO : rc;
}

int pfs_ssd_open(const struct pfs_ssd_opts *o, struct pfs_ssd **out)
{
	struct pfs_ssd *s;
	struct statvfs vfs;
	int rc;

	*out = NULL;
	if (!o || !o->dir || !*o->dir || o->zstd_level < 0 || o->zstd_level > 19 ||
	    (unsigned)o->compress > PFS_SSD_COMPRESS_AUTO ||
	    (unsigned)o->evict > PFS_SSD_EVICT_NONE) {
		pfs_err("ssd: invalid options (dir, zstd_level 1..19, compress, evict)");
		return -EINVAL;
	}
	if (!(s = calloc(1, sizeof(*s))))
		return -ENOMEM;
	s->lock_fd = -1;
	s->dio_fd = -1;
	s->q_tail = &s->q_head;
	s->t_tail = &s->t_head;
	s->compress = o->compress;
	s->evict = o->evict;
	s->level = o->zstd_level ? o->zstd_level : 3;
	s->queue_max = o->queue_bytes ? o->queue_bytes : DEFAULT_QUEUE;
	s->seg_size = o->segment_size ? o->segment_size : DEFAULT_SEGMENT;
	pthread_mutex_init(&s->q_lock, NULL);
	pthread_mutex_init(&s->seg_lock, NULL);
	pthread_mutex_init(&s->dctx_lock, NULL);
	pthread_cond_init(&s->q_wake, NULL);
	pthread_cond_init(&s->q_done, NULL);
	s->dir = strdup(o->dir);
	s->origin_id = o->origin_id ? strdup(o->origin_id) : NULL;
	s->block_size = o->block_size;
	if (!s->dir || (o->origin_id && !s->origin_id)) {
		rc = -ENOMEM;
		goto fail;
	}
	if ((rc = mkdir_p(s->dir)) || (rc = take_lock(s)) || (rc = open_store(s, 0)))
		goto early;
	sweep(s);
	if (o->size) {
		s->budget = o->size;
	} else if (statvfs(s->dir, &vfs) == 0) {
		s->budget = (uint64_t)(0.9 * ((double)vfs.f_bavail * (double)vfs.f_frsize +
					      (double)s->st_bytes));
	} else {
		rc = -errno;
		goto fail;
	}
	if (s->compress != PFS_SSD_COMPRESS_OFF && !(s->cctx = ZSTD_createCCtx())) {
		rc = -ENOMEM;
		goto fail;
	}
	/* Said before the writer starts: a layout sweep publishes new counts
	 * at once. */
	pfs_info("ssd_dir %s: %llu entries, %llu of %llu bytes", s->dir,
		 (unsigned long long)s->st_entries, (unsigned long long)s->st_bytes,
		 (unsigned long long)s->budget);
	if ((rc = -pthread_create(&s->writer, NULL, ssd_writer_main, s)))
		goto fail;
	s->writer_started = 1;
	/* The blocks the writer holds are bounded by queue_max: so are the
	 * buffers it frees at once when it has written a batch, kept idle for
	 * the next fills instead of unmapped (bufpool.h). */
	pfs_bufpool_lend(s->queue_max);
	*out = s;
	return 0;
early:
	if (no_space(rc) && s->lock_fd >= 0) {
		pfs_warn("ssd_dir %s: the disk is full (%s): SSD tier read-only for this mount "
			 "(stored blocks are served, nothing new is stored)", s->dir, strerror(-rc));
		s->disabled = 1;
		if (open_store(s, 1) == 0)
			sweep(s); /* crash leftovers: their space comes back */
		s->budget = o->size ? o->size : s->st_bytes;
		*out = s;
		return 0;
	}
	if (unwritable(rc) || no_space(rc)) {
		pfs_warn("ssd_dir %s is not writable (%s): SSD tier disabled for this mount",
			 s->dir, strerror(-rc));
		s->disabled = 1;
		*out = s;
		return 0;
	}
	if (rc != -EBUSY && rc != -EINVAL)
		pfs_err("ssd_dir %s: cannot open: %s", s->dir, strerror(-rc));
fail:
	pfs_ssd_close(s);
	return rc;
}

void pfs_ssd_close(struct pfs_ssd *s)
{
	struct item *it;
	struct touch *t;

	if (!s)
		return;
	if (s->writer_started) {
		pthread_mutex_lock(&s->q_lock);
		s->stop = 1;
		pthread_cond_signal(&s->q_wake);
		pthread_mutex_unlock(&s->q_lock);
		pthread_join(s->writer, NULL);
	}
	while ((it = s->q_head)) {
		s->q_head = it->next;
		ssd_item_free(s, it);
	}
	while ((t = s->t_head)) {
		s->t_head = t->next;
		free(t);
	}
	if (s->writer_started)
		pfs_bufpool_unlend(s->queue_max);
	ssd_append_close(s);
	ssd_seg_close_all(s);
	if (s->env)
		mdb_env_close(s->env);
	ZSTD_freeCCtx(s->cctx);
	for (int i = 0; i < s->ndctx; i++)
		ZSTD_freeDCtx(s->dctx[i]);
	if (s->lock_fd >= 0)
		close(s->lock_fd); /* releases the flock */
	pthread_cond_destroy(&s->q_done);
	pthread_cond_destroy(&s->q_wake);
	pthread_mutex_destroy(&s->dctx_lock);
	pthread_mutex_destroy(&s->seg_lock);
	pthread_mutex_destroy(&s->q_lock);
	free(s->origin_id);
	free(s->dir);
	free(s);
}

void pfs_ssd_stats(struct pfs_ssd *s, struct pfs_ssd_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (!s)
		return;
	out->hits = pfs_load(&s->st_hits);
	out->misses = pfs_load(&s->st_misses);
	out->bytes = pfs_load(&s->st_bytes);
	out->raw_bytes = pfs_load(&s->st_raw);
	out->entries = pfs_load(&s->st_entries);
	out->checksum_failures = pfs_load(&s->st_csum);
	out->evictions = pfs_load(&s->st_evict);
	out->write_errors = pfs_load(&s->st_werr);
	out->queued = pfs_load(&s->st_queued);
	out->dropped = pfs_load(&s->st_dropped);
	out->compressed_blocks = pfs_load(&s->st_comp);
	out->stale = pfs_load(&s->st_stale);
	out->swept = pfs_load(&s->st_swept);
	out->sweep_pending = pfs_load(&s->sweep_below) != 0;
	out->disabled = (uint64_t)pfs_load(&s->disabled);
	out->budget = s->budget;
	pthread_mutex_lock(&s->q_lock);
	out->queue_bytes = s->q_bytes;
	pthread_mutex_unlock(&s->q_lock);
}

/* The names of the tier's metrics: here only. ssd.queued counts the puts
 * accepted but is typed a gauge, as it always was: a counter's Prometheus
 * name would change (prestofs_ssd_queued_total). */
#define ROW(name, member, gauge) PFS_STAT_ROW(struct pfs_ssd_stats, name, member, gauge)
static const struct pfs_stat_row metrics[] = {
	ROW("ssd.hits", hits, 0),
	ROW("ssd.misses", misses, 0),
	ROW("ssd.stale", stale, 0),
	ROW("ssd.swept", swept, 0),
	ROW("ssd.sweep_pending", sweep_pending, 1),
	ROW("ssd.bytes", bytes, 1),
	ROW("ssd.raw_bytes", raw_bytes, 1),
	ROW("ssd.entries", entries, 1),
	ROW("ssd.budget", budget, 1),
	ROW("ssd.checksum_failures", checksum_failures, 0),
	ROW("ssd.evictions", evictions, 0),
	ROW("ssd.write_errors", write_errors, 0),
	ROW("ssd.queued", queued, 1),
	ROW("ssd.queue_bytes", queue_bytes, 1),
	ROW("ssd.dropped", dropped, 0),
	ROW("ssd.compressed_blocks", compressed_blocks, 0),
	ROW("ssd.disabled", disabled, 1),
};
#undef ROW

void pfs_ssd_collect(void *s, struct pfs_stat_list *l)
{
	struct pfs_ssd_stats st;
	pfs_ssd_stats(s, &st);
	pfs_stat_list_add_rows(l, metrics, sizeof(metrics) / sizeof(metrics[0]), &st);
}
