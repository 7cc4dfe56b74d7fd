/* ssd_int.h - private to the SSD tier's files: the tier's struct, the
 * on-disk record formats, and the helpers they share. Nothing outside
 * cache/ssd*.c includes this. See ssd.c's top comment for the design.
 *
 *   ssd.c        open and close (directory, lock, index), counters
 *   ssd_read.c   the read path (pfs_ssd_get)
 *   ssd_queue.c  the queue (pfs_ssd_put, flush, hits, drops) and the
 *                writer thread's loop
 *   ssd_store.c  one batch of the writer: compress, index, append, sync
 *   ssd_files.c  segment fds, the writer's appends, the saved listing
 *   ssd_base.c   what they all use: LMDB errors, record decoding, item
 *                release, disabling the tier
 * Calls point down that list (ssd.c -> ssd_read.c, ssd_queue.c ->
 * ssd_store.c -> ssd_files.c, ssd_base.c), never back up.
 */
#ifndef PFS_SSD_INT_H
#define PFS_SSD_INT_H

#include <lmdb.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <zstd.h>

#include "ssd.h"
#include "../util/atomic.h"

#define SSD_FORMAT 1             /* meta "format": bump on any record change */
#define SSD_ALIGN 4096u          /* entries start on file-system block bounds */
#define SSD_KEY_MAX (PFS_SSD_PATH_MAX + 1 + 8)
#define SSD_SEG_BUCKETS 256
#define SSD_DCTX_KEEP 16
#define SSD_KINDS 64
#define SSD_KIND_LEN 16
#define SSD_TOUCH_MAX 65536      /* recorded hits kept for the writer */
#define SSD_TOUCH_BATCH 4096     /* this many wake the writer */
#define SSD_DROP_MAX 4096        /* queued drop requests */
#define SSD_STAGE_BYTES (4u << 20) /* the writer's staging buffer */
#define SSD_SWEEP_BATCH 512      /* entries of an old layout removed per pass */

enum codec { CODEC_RAW = 0, CODEC_ZSTD = 1 };

/* blocks DB value: this header, then etag_len bytes of validator. Stored
 * in host byte order (the index is never moved between machines). */
struct ent {
	uint64_t off;      /* in the segment */
	uint64_t sum;      /* XXH3-64 of the stored bytes */
	uint64_t fp;       /* the object's listing fingerprint */
	uint64_t seq;      /* last access; the lru DB maps seq -> key */
	uint32_t seg;      /* segment id */
	uint32_t slen;     /* stored length */
	uint32_t rlen;     /* raw length */
	uint8_t codec;     /* enum codec */
	uint8_t etag_len;
	uint8_t pad[2];
};

/* segs DB value, keyed by big-endian segment id. */
struct segrec {
	uint64_t live;     /* aligned bytes of the entries in it */
	uint64_t end;      /* append offset: bytes past it are not referenced */
};

enum item_kind { ITEM_PUT, ITEM_DROP };

/* One queued request. PUT: a block to store. DROP: remove key's entry if
 * it is still the version at (seg, off) (a get found it bad or stale). */
struct item {
	struct item *next;
	enum item_kind kind;
	uint64_t fp;
	uint32_t seg;             /* DROP */
	uint64_t off;             /* DROP */
	size_t len;               /* PUT: raw length */
	void *data;               /* PUT: owned copy, or borrowed (release) */
	void (*release)(void *);  /* PUT: called once the data is done with, or NULL */
	void *rel_arg;
	size_t cost;              /* what it counts against the queue bound */
	char etag[PFS_SSD_ETAG_MAX];
	/* writer scratch */
	void *stored;             /* data, or an owned compressed buffer */
	uint32_t slen;
	uint8_t codec;
	uint64_t sum, alen;
	int skip;
	uint64_t khash;
	size_t klen;
	char key[];
};

struct touch {
	struct touch *next;
	size_t klen;
	char key[];
};

struct segfd {
	uint32_t id;
	int fd;
	int refs;                 /* seg_lock; the table holds one */
	struct segfd *next;
};

struct kind {
	char ext[SSD_KIND_LEN];
	unsigned samples;
	uint64_t raw, comp;
	int off;                  /* AUTO decided: store raw */
};

struct pfs_ssd {
	char *dir;
	char *origin_id;
	uint64_t block_size;      /* mixed into every entry's fp: ssd_entry_fp() */
	enum pfs_ssd_compress compress;
	enum pfs_ssd_evict evict;
	int level;
	uint64_t budget, queue_max, seg_size;
	int lock_fd;
	MDB_env *env;             /* NULL: disabled from the start (read-only dir) */
	MDB_dbi db_meta, db_blocks, db_lru, db_segs;

	pthread_mutex_t q_lock;
	pthread_cond_t q_wake;    /* the writer waits here */
	pthread_cond_t q_done;    /* flushers wait here */
	struct item *q_head, **q_tail; /* q_lock */
	uint64_t q_bytes;         /* q_lock: cost of the queued items */
	uint64_t q_alen;          /* q_lock: aligned raw length of queued puts */
	unsigned q_drops;         /* q_lock */
	struct touch *t_head, **t_tail; /* q_lock: in access order */
	unsigned t_count;         /* q_lock */
	uint64_t enq_ticket;      /* q_lock: items (and flushes) ever queued */
	uint64_t done_ticket;     /* q_lock: of those, finished */
	int want_pass;            /* q_lock: a flush asked for a pass */
	int stop;                 /* q_lock */
	pthread_t writer;
	int writer_started;

	pthread_mutex_t seg_lock;
	struct segfd *segfds[SSD_SEG_BUCKETS]; /* seg_lock */

	pthread_mutex_t dctx_lock;
	ZSTD_DCtx *dctx[SSD_DCTX_KEEP]; /* dctx_lock */
	int ndctx;                /* dctx_lock */

	/* Writer thread only (open/close before it starts / after it ends). */
	ZSTD_CCtx *cctx;
	struct kind kinds[SSD_KINDS];
	int nkinds;
	uint32_t cur_seg, next_seg; /* 0: no segment yet */
	uint64_t cur_end;         /* append offset in cur_seg */
	uint64_t next_seq;
	/* The appends (ssd_files.c): bytes staged for stage_seg at stage_off,
	 * written with O_DIRECT through dio_fd (a second fd of dio_seg). */
	unsigned char *stage;     /* SSD_STAGE_BYTES, page-aligned; NULL: none */
	size_t stage_used;
	uint64_t stage_off;
	struct segfd *stage_seg;  /* borrowed from the caller of ssd_append_begin */
	int dio_fd;               /* -1: none open */
	uint32_t dio_seg;
	int dio_refused;          /* the file system said no: buffered writes */

	/* Atomics (util/atomic.h); the gauges are written by the writer. */
	uint64_t st_hits, st_misses, st_bytes, st_raw, st_entries, st_csum,
		st_evict, st_werr, st_queued, st_dropped, st_comp, st_stale, st_swept;
	/* Entries older than this (seq below it) were cut by another block
	 * size: the writer removes them in the background, a batch per pass
	 * (epoch and minio never replace, so they would hold the budget
	 * forever). 0: nothing to sweep. Kept in meta "sweep_below" until
	 * done, so a sweep cut short by an unmount goes on at the next mount.
	 * Set by open, then written by the writer only; read atomically. */
	uint64_t sweep_below;
	int disabled;
	int full;                 /* EVICT_NONE: the writer had to refuse */
};

static inline uint64_t ssd_alignup(uint64_t n)
{
	return (n + SSD_ALIGN - 1) & ~(uint64_t)(SSD_ALIGN - 1);
}

static inline void ssd_be64(unsigned char *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--, v >>= 8)
		p[i] = (unsigned char)v;
}

static inline uint64_t ssd_get_be64(const unsigned char *p)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

/* What an entry records as its fingerprint: the listing's (size, mtime,
 * ETag) and the tier's block size, so that block N means one byte range.
 * Entries of another block size, or written before this rule, differ. */
static inline uint64_t ssd_entry_fp(const struct pfs_ssd *s, uint64_t fp)
{
	if (!s->block_size)
		return fp;
	uint64_t z = fp ^ (s->block_size * 0x9e3779b97f4a7c15ull); /* splitmix64 */
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* key = path NUL be64(block); returns its length, 0 when path is too
 * long. key has room for SSD_KEY_MAX bytes. */
static inline size_t ssd_make_key(char *key, const char *path, uint64_t block)
{
	size_t n = strlen(path);
	if (n > PFS_SSD_PATH_MAX)
		return 0;
	memcpy(key, path, n + 1);
	ssd_be64((unsigned char *)key + n + 1, block);
	return n + 9;
}

/* ---- ssd_base.c: what every file of the tier uses (it calls none) ---- */

#define E_CORRUPT (-EBADMSG)     /* internal: the index must be set aside */

/* Parses a blocks DB value; returns 0, or -EIO when malformed. etag may be
 * NULL. */
int ssd_ent_decode(const MDB_val *v, struct ent *e, char *etag);

/* LMDB's codes to negative errnos: the one place they are translated. */
int ssd_mdb_err(int rc);
/* Whether rc says the index itself is damaged or unreadable. */
int ssd_mdb_corrupt(int rc);

/* ENABLED -> DISABLED, once: logs why, drops the queue. Any thread. */
void ssd_disable(struct pfs_ssd *s, int err, const char *what);
/* Frees a queued item and its buffers. NULL allowed. */
void ssd_item_free(struct pfs_ssd *s, struct item *it);
/* Gives a put's bytes back (release, or the copy's buffer kept for the
 * next put) once they are staged: no longer needed by the batch. */
void ssd_item_data_done(struct pfs_ssd *s, struct item *it);

/* ssd_files.c: "dir/seg-XXXXXXXX.dat" and "dir/NAME" into buf (4096). */
void ssd_seg_path(const struct pfs_ssd *s, uint32_t id, char *buf);
void ssd_path_in(const struct pfs_ssd *s, const char *name, char *buf);
/* Reads exactly len bytes at off: 0, -EIO at end of file, or -errno. */
int ssd_pread_full(int fd, void *buf, size_t len, uint64_t off);

/* Segment fds shared by readers and the writer, reference-counted so a
 * segment unlinked by the writer is closed only after its last reader.
 * ssd_seg_get returns 0 and the entry (release with ssd_seg_put) or a
 * negative errno; create: open O_CREAT|O_TRUNC (the writer, new segment). */
int ssd_seg_get(struct pfs_ssd *s, uint32_t id, int create, struct segfd **out);
void ssd_seg_put(struct pfs_ssd *s, struct segfd *f);
/* Removes id from the table (after its file was unlinked). */
void ssd_seg_forget(struct pfs_ssd *s, uint32_t id);
void ssd_seg_close_all(struct pfs_ssd *s);

/* The writer's appends. Bytes are copied into one staging buffer,
 * allocated once and reused (its pages stay resident, where buffered
 * writes take fresh page-cache pages for every batch: a first touch costs
 * 20-60x a rewrite on a VM), each entry zero-padded to its aligned length,
 * and written with O_DIRECT in SSD_STAGE_BYTES pieces; a file system that
 * refuses O_DIRECT (at open or at a write) gets buffered writes from then
 * on, said once in the log. Durability is still the caller's fdatasync.
 * Writer thread only.
 *
 * ssd_append_begin: the next bytes go to f at off (a multiple of
 * SSD_ALIGN); nothing may be staged (ssd_append_flush first); f must stay
 * referenced until the flush. ssd_append: len bytes, then zeros up to
 * alen (ssd_alignup(len)); data may be freed once it returns.
 * ssd_append_flush writes what is staged. Both return 0 or a negative
 * errno; after an error nothing stays staged. ssd_append_close (at close)
 * frees the buffer and the O_DIRECT fd. */
void ssd_append_begin(struct pfs_ssd *s, struct segfd *f, uint64_t off);
int ssd_append(struct pfs_ssd *s, const void *data, size_t len, uint64_t alen);
int ssd_append_flush(struct pfs_ssd *s);
void ssd_append_close(struct pfs_ssd *s);

/* ssd_queue.c. The writer thread's body. */
void *ssd_writer_main(void *arg);
/* Asks the writer to remove key's entry if it is still the one at
 * (seg, off); seg UINT32_MAX: whatever is there. Best effort: nothing is
 * queued on a disabled tier or past SSD_DROP_MAX drops. Any thread. */
void ssd_queue_drop(struct pfs_ssd *s, const char *key, size_t klen, uint32_t seg,
		    uint64_t off);
/* Records a hit on key for the LRU order (EVICT_LRU only; best effort: at
 * most SSD_TOUCH_MAX wait for the writer). Any thread. */
void ssd_record_hit(struct pfs_ssd *s, const char *key, size_t klen);

/* ssd_store.c. Runs one batch (items and touches taken off the queue) on
 * the writer thread, no lock held; a failure disables the tier. The
 * caller keeps and frees the lists. */
void ssd_run_batch(struct pfs_ssd *s, struct item *items, struct touch *touches);

#endif
