/* ssd_store.c - one batch of the SSD tier's writer thread (its loop is in
 * ssd_queue.c); see ssd.c for the design. One batch, in this order:
 *
 *   1. compress and checksum the queued blocks (no lock, no txn);
 *   2. txn A: apply recorded hits (LRU order), drops, replaced versions and
 *      evictions; commit; THEN punch the freed ranges and unlink emptied
 *      segments (a crash before the punch only leaks space, never leaves an
 *      entry pointing at zeros);
 *   3. append the admitted blocks to the current segment (staged, each
 *      padded to SSD_ALIGN, written with O_DIRECT: ssd_append in
 *      ssd_files.c), fdatasync it (and the directory when a segment was
 *      created): O_DIRECT alone does not flush the disk's cache nor the
 *      file's size;
 *   4. txn B: insert the entries, segment ends, counters; commit.
 *
 * So the bytes an entry names are durable before the entry exists, and
 * freed space is never overwritten: new data only goes past a segment's
 * committed end. Evicting in its own txn before writing keeps the disk
 * under the budget even for the duration of a batch.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/statvfs.h>
#include <xxhash.h>

#include "ssd_int.h"
#include "../util/log.h"

#define AUTO_SAMPLES 16
#define AUTO_MAX_RATIO 0.9

/* ---- compression ---- */

static struct kind *kind_of(struct pfs_ssd *s, const char *path)
{
	const char *base = strrchr(path, '/'), *dot;
	char ext[SSD_KIND_LEN] = "";
	size_t i;

	base = base ? base + 1 : path;
	dot = strrchr(base, '.');
	if (dot)
		for (i = 0; i < SSD_KIND_LEN - 1 && dot[1 + i]; i++)
			ext[i] = (char)((dot[1 + i] >= 'A' && dot[1 + i] <= 'Z') ?
					dot[1 + i] + 32 : dot[1 + i]);
	for (int k = 0; k < s->nkinds; k++)
		if (!strcmp(s->kinds[k].ext, ext))
			return &s->kinds[k];
	if (s->nkinds == SSD_KINDS)
		return NULL; /* too many kinds: compress the rest, no sampling */
	memcpy(s->kinds[s->nkinds].ext, ext, sizeof(ext));
	return &s->kinds[s->nkinds++];
}

/* Sets it->stored/slen/codec/sum/alen. A compressed copy is kept only when
 * it takes fewer 4 KiB units than the raw block. */
static void prepare(struct pfs_ssd *s, struct item *it)
{
	struct kind *k = NULL;
	int use = s->compress != PFS_SSD_COMPRESS_OFF;

	it->stored = it->data;
	it->slen = (uint32_t)it->len;
	it->codec = CODEC_RAW;
	if (use && s->compress == PFS_SSD_COMPRESS_AUTO) {
		k = kind_of(s, it->key);
		use = !(k && k->off);
	}
	if (use && s->cctx) {
		size_t cap = ZSTD_compressBound(it->len), c;
		void *out = malloc(cap);
		if (out) {
			c = ZSTD_compressCCtx(s->cctx, out, cap, it->data, it->len, s->level);
			if (ZSTD_isError(c))
				c = it->len;
			if (k && k->samples < AUTO_SAMPLES) {
				k->raw += it->len;
				k->comp += c < it->len ? c : it->len;
				if (++k->samples == AUTO_SAMPLES &&
				    (double)k->comp > AUTO_MAX_RATIO * (double)k->raw) {
					k->off = 1;
					pfs_info("ssd_dir %s: '.%s' blocks do not compress (%.2f); "
						 "storing them raw", s->dir, k->ext,
						 (double)k->comp / (double)k->raw);
				}
			}
			if (ssd_alignup(c) < ssd_alignup(it->len)) {
				it->stored = out;
				it->slen = (uint32_t)c;
				it->codec = CODEC_ZSTD;
			} else {
				free(out);
			}
		}
	}
	it->sum = XXH3_64bits(it->stored, it->slen);
	it->alen = ssd_alignup(it->slen);
}

/* ---- index helpers (inside a write txn) ---- */

struct counters {
	uint64_t bytes, raw, entries;
};

struct freed {
	uint32_t seg;
	uint64_t off, alen;
};

struct batch {
	struct freed *punch;
	size_t npunch, cappunch;
	uint32_t *dead;           /* segments to unlink after the commit */
	size_t ndead, capdead;
	struct counters c;
	int changed;
	int sweep_done;           /* the sweep ended in txn A: say so once published */
};

static int grow(void **arr, size_t *cap, size_t n, size_t size)
{
	if (n < *cap)
		return 0;
	size_t ncap = *cap ? *cap * 2 : 16;
	void *p = realloc(*arr, ncap * size);
	if (!p)
		return -ENOMEM;
	*arr = p;
	*cap = ncap;
	return 0;
}

static int meta_put(struct pfs_ssd *s, MDB_txn *txn, const char *name, uint64_t v)
{
	MDB_val k = { strlen(name), (void *)name }, d = { sizeof(v), &v };
	return ssd_mdb_err(mdb_put(txn, s->db_meta, &k, &d, 0));
}

static int seg_rec(struct pfs_ssd *s, MDB_txn *txn, uint32_t id, struct segrec *r)
{
	unsigned char kb[8];
	MDB_val k = { 8, kb }, d;
	int rc;

	ssd_be64(kb, id);
	memset(r, 0, sizeof(*r));
	rc = mdb_get(txn, s->db_segs, &k, &d);
	if (rc == MDB_NOTFOUND)
		return 0;
	if (rc)
		return ssd_mdb_err(rc);
	if (d.mv_size == sizeof(*r))
		memcpy(r, d.mv_data, sizeof(*r));
	return 0;
}

static int seg_rec_put(struct pfs_ssd *s, MDB_txn *txn, uint32_t id, const struct segrec *r)
{
	unsigned char kb[8];
	MDB_val k = { 8, kb }, d = { sizeof(*r), (void *)r };
	ssd_be64(kb, id);
	if (!r) {
		int rc = mdb_del(txn, s->db_segs, &k, NULL);
		return rc == MDB_NOTFOUND ? 0 : ssd_mdb_err(rc);
	}
	return ssd_mdb_err(mdb_put(txn, s->db_segs, &k, &d, 0));
}

static int lru_del(struct pfs_ssd *s, MDB_txn *txn, uint64_t seq)
{
	unsigned char kb[8];
	MDB_val k = { 8, kb };
	ssd_be64(kb, seq);
	int rc = mdb_del(txn, s->db_lru, &k, NULL);
	return rc == MDB_NOTFOUND ? 0 : ssd_mdb_err(rc);
}

static int lru_put(struct pfs_ssd *s, MDB_txn *txn, uint64_t seq, const char *key, size_t klen)
{
	unsigned char kb[8];
	MDB_val k = { 8, kb }, d = { klen, (void *)key };
	ssd_be64(kb, seq);
	return ssd_mdb_err(mdb_put(txn, s->db_lru, &k, &d, 0));
}

/* Removes key's entry e and frees its space (punched after the commit). */
static int free_ent(struct pfs_ssd *s, MDB_txn *txn, struct batch *b, const char *key,
		    size_t klen, const struct ent *e)
{
	MDB_val k = { klen, (void *)key };
	struct segrec r;
	uint64_t alen = ssd_alignup(e->slen);
	int rc;

	rc = mdb_del(txn, s->db_blocks, &k, NULL);
	if (rc && rc != MDB_NOTFOUND)
		return ssd_mdb_err(rc);
	if ((rc = lru_del(s, txn, e->seq)) || (rc = seg_rec(s, txn, e->seg, &r)))
		return rc;
	r.live = r.live > alen ? r.live - alen : 0;
	if (r.live == 0 && e->seg != s->cur_seg) {
		if ((rc = seg_rec_put(s, txn, e->seg, NULL)) ||
		    (rc = grow((void **)&b->dead, &b->capdead, b->ndead, sizeof(*b->dead))))
			return rc;
		b->dead[b->ndead++] = e->seg;
	} else {
		if ((rc = seg_rec_put(s, txn, e->seg, &r)) ||
		    (rc = grow((void **)&b->punch, &b->cappunch, b->npunch, sizeof(*b->punch))))
			return rc;
		b->punch[b->npunch++] = (struct freed){ e->seg, e->off, alen };
	}
	b->c.bytes -= b->c.bytes > alen ? alen : b->c.bytes;
	b->c.raw -= b->c.raw > e->rlen ? e->rlen : b->c.raw;
	b->c.entries -= b->c.entries ? 1 : 0;
	b->changed = 1;
	return 0;
}

/* Looks key up; 0 and *e, -ENOENT, or an error. A malformed value is
 * deleted and reported as -ENOENT. */
static int find(struct pfs_ssd *s, MDB_txn *txn, const char *key, size_t klen,
		struct ent *e, unsigned char *val, size_t *vlen)
{
	MDB_val k = { klen, (void *)key }, d;
	int rc = mdb_get(txn, s->db_blocks, &k, &d);
	if (rc)
		return ssd_mdb_err(rc);
	if (ssd_ent_decode(&d, e, NULL)) {
		rc = mdb_del(txn, s->db_blocks, &k, NULL);
		return rc ? ssd_mdb_err(rc) : -ENOENT;
	}
	if (val) {
		memcpy(val, d.mv_data, d.mv_size);
		*vlen = d.mv_size;
	}
	return 0;
}

static int touch_one(struct pfs_ssd *s, MDB_txn *txn, struct batch *b, const struct touch *t)
{
	unsigned char val[sizeof(struct ent) + PFS_SSD_ETAG_MAX];
	size_t vlen;
	struct ent e;
	int rc = find(s, txn, t->key, t->klen, &e, val, &vlen);
	if (rc)
		return rc == -ENOENT ? 0 : rc;
	if ((rc = lru_del(s, txn, e.seq)))
		return rc;
	e.seq = s->next_seq++;
	memcpy(val, &e, sizeof(e));
	MDB_val k = { t->klen, (void *)t->key }, d = { vlen, val };
	if ((rc = lru_put(s, txn, e.seq, t->key, t->klen)))
		return rc;
	b->changed = 1;
	return ssd_mdb_err(mdb_put(txn, s->db_blocks, &k, &d, 0));
}

/* Evicts the least recently used entry; -ENOENT when there is none, or
 * (below non-zero) when it is not older than `below`. */
static int evict_one(struct pfs_ssd *s, MDB_txn *txn, struct batch *b, uint64_t below)
{
	char key[SSD_KEY_MAX];
	MDB_cursor *cur;
	MDB_val k, d;
	struct ent e;
	size_t klen;
	uint64_t seq;
	int rc;

	if ((rc = mdb_cursor_open(txn, s->db_lru, &cur)))
		return ssd_mdb_err(rc);
	rc = mdb_cursor_get(cur, &k, &d, MDB_FIRST);
	mdb_cursor_close(cur);
	if (rc)
		return ssd_mdb_err(rc);
	if (k.mv_size != 8 || d.mv_size > sizeof(key))
		return -EIO;
	seq = ssd_get_be64(k.mv_data);
	if (below && seq >= below)
		return -ENOENT;
	klen = d.mv_size;
	memcpy(key, d.mv_data, klen);
	rc = find(s, txn, key, klen, &e, NULL, NULL);
	if (rc == 0 && e.seq == seq) {
		pfs_add(below ? &s->st_swept : &s->st_evict, 1);
		return free_ent(s, txn, b, key, klen, &e);
	}
	if (rc && rc != -ENOENT)
		return rc;
	b->changed = 1;
	return lru_del(s, txn, seq); /* an orphan order record */
}

/* Up to SSD_SWEEP_BATCH entries of another layout, oldest first; the
 * sweep ends (meta "sweep_below" 0) at the first entry that is not. */
static int sweep_layout(struct pfs_ssd *s, MDB_txn *txn, struct batch *b)
{
	uint64_t below = pfs_load(&s->sweep_below);
	if (!below)
		return 0;
	for (unsigned i = 0; i < SSD_SWEEP_BATCH; i++) {
		int rc = evict_one(s, txn, b, below);
		if (rc == -ENOENT) {
			if ((rc = meta_put(s, txn, "sweep_below", 0)))
				return rc;
			b->sweep_done = 1;
			b->changed = 1;
			return 0;
		}
		if (rc)
			return rc;
	}
	return 0;
}

static int put_counters(struct pfs_ssd *s, MDB_txn *txn, const struct counters *c)
{
	int rc;
	if ((rc = meta_put(s, txn, "bytes", c->bytes)) ||
	    (rc = meta_put(s, txn, "raw_bytes", c->raw)) ||
	    (rc = meta_put(s, txn, "entries", c->entries)) ||
	    (rc = meta_put(s, txn, "next_seq", s->next_seq)) ||
	    (rc = meta_put(s, txn, "next_seg", s->next_seg)))
		return rc;
	return meta_put(s, txn, "cur_seg", s->cur_seg);
}

static void publish(struct pfs_ssd *s, const struct counters *c)
{
	pfs_store(&s->st_bytes, c->bytes);
	pfs_store(&s->st_raw, c->raw);
	pfs_store(&s->st_entries, c->entries);
}

/* ---- one batch ---- */

/* LMDB turns a short write into EIO (mdb_page_flush: a pwrite that wrote
 * less than asked and set no errno), which is what a disk with a few pages
 * left gives: on a (nearly) full disk the error is said as what it is. */
static int commit_err(struct pfs_ssd *s, int mdb_rc)
{
	int rc = ssd_mdb_err(mdb_rc);
	struct statvfs v;
	if (rc == -EIO && statvfs(s->dir, &v) == 0 &&
	    (uint64_t)v.f_bavail * v.f_frsize < (1u << 20))
		rc = -ENOSPC;
	return rc;
}

/* Step 2: everything that frees or reorders. Marks the puts not admitted. */
static int phase_a(struct pfs_ssd *s, struct item *items, struct touch *touches,
		   struct batch *b)
{
	MDB_txn *txn;
	struct item *it;
	struct ent e;
	unsigned char val[sizeof(struct ent) + PFS_SSD_ETAG_MAX];
	size_t vlen;
	uint64_t need = 0, seq0 = s->next_seq;
	int rc;

	if ((rc = mdb_txn_begin(s->env, NULL, 0, &txn)))
		return ssd_mdb_err(rc);
	if ((rc = sweep_layout(s, txn, b)))
		goto abort;
	for (struct touch *t = touches; t; t = t->next)
		if ((rc = touch_one(s, txn, b, t)))
			goto abort;
	for (it = items; it; it = it->next) {
		if (it->kind != ITEM_DROP)
			continue;
		rc = find(s, txn, it->key, it->klen, &e, NULL, NULL);
		if (rc == 0 && (it->seg == UINT32_MAX || (e.seg == it->seg && e.off == it->off)))
			rc = free_ent(s, txn, b, it->key, it->klen, &e);
		if (rc && rc != -ENOENT)
			goto abort;
	}
	for (it = items; it; it = it->next) {
		if (it->kind != ITEM_PUT || it->skip)
			continue;
		if (it->alen > s->budget) { /* could never fit */
			it->skip = 1;
			pfs_add(&s->st_dropped, 1);
			continue;
		}
		rc = find(s, txn, it->key, it->klen, &e, val, &vlen);
		/* Same listing, length and validator: already stored. Another
		 * validator replaces it (the object changed and the mount
		 * pinned the new version). */
		if (rc == 0 && e.fp == it->fp && e.rlen == it->len &&
		    e.etag_len == strlen(it->etag) &&
		    !memcmp(val + sizeof(e), it->etag, e.etag_len))
			it->skip = 1; /* already stored */
		else if (rc == 0)
			rc = free_ent(s, txn, b, it->key, it->klen, &e); /* replaced */
		if (rc && rc != -ENOENT)
			goto abort;
		if (!it->skip)
			need += it->alen;
	}
	if (s->evict == PFS_SSD_EVICT_LRU) {
		while (b->c.bytes + need > s->budget) {
			rc = evict_one(s, txn, b, 0);
			if (rc == -ENOENT)
				break;
			if (rc)
				goto abort;
		}
	}
	/* Admit in queue order while they fit (LRU: only a batch bigger than
	 * the whole budget gets here). */
	need = 0;
	for (it = items; it; it = it->next) {
		if (it->kind != ITEM_PUT || it->skip)
			continue;
		if (b->c.bytes + need + it->alen > s->budget) {
			it->skip = 1;
			pfs_add(&s->st_dropped, 1);
			if (s->evict == PFS_SSD_EVICT_NONE)
				pfs_store(&s->full, 1);
			continue;
		}
		need += it->alen;
	}
	if (!b->changed) {
		mdb_txn_abort(txn);
		return 0;
	}
	if ((rc = put_counters(s, txn, &b->c)))
		goto abort;
	if ((rc = mdb_txn_commit(txn)))
		return commit_err(s, rc);
	return 0;
abort:
	mdb_txn_abort(txn);
	s->next_seq = seq0;
	return rc;
}

/* After txn A's commit: give the freed space back to the file system. */
static void reclaim(struct pfs_ssd *s, struct batch *b)
{
	static int warned_punch;
	char path[4096];
	struct segfd *f;

	for (size_t i = 0; i < b->ndead; i++) {
		ssd_seg_forget(s, b->dead[i]);
		ssd_seg_path(s, b->dead[i], path);
		if (unlink(path) && errno != ENOENT)
			pfs_warn("ssd_dir %s: unlink %s: %s", s->dir, path, strerror(errno));
	}
	for (size_t i = 0; i < b->npunch; i++) {
		if (ssd_seg_get(s, b->punch[i].seg, 0, &f))
			continue;
		if (fallocate(f->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			      (off_t)b->punch[i].off, (off_t)b->punch[i].alen) &&
		    !__atomic_exchange_n(&warned_punch, 1, __ATOMIC_RELAXED))
			pfs_warn("ssd_dir %s: cannot punch holes (%s): space comes back only "
				 "when a whole segment is emptied", s->dir, strerror(errno));
		ssd_seg_put(s, f);
	}
	b->ndead = b->npunch = 0;
	if (b->changed && pfs_load(&s->st_bytes) > b->c.bytes)
		pfs_store(&s->full, 0);
	publish(s, &b->c);
}

static int sync_dir(struct pfs_ssd *s)
{
	int fd = open(s->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), rc = 0;
	if (fd < 0)
		return -errno;
	if (fsync(fd))
		rc = -errno;
	close(fd);
	return rc;
}


#define SEGW_MAX 64

struct segw {
	uint32_t id;
	uint64_t live_add, end;
	struct segfd *f;
};

/* Appends the admitted blocks (rotating segments when full), makes them
 * durable, then indexes them in txn B. On error *what says which step. */
static int phase_b(struct pfs_ssd *s, struct item *items, struct batch *b, const char **what)
{
	unsigned char val[sizeof(struct ent) + PFS_SSD_ETAG_MAX];
	struct segw sw[SEGW_MAX];
	uint32_t rotated[SEGW_MAX];
	int nsw = 0, nrot = 0, created = 0, rc = 0, i;
	struct segrec r;
	struct item *it;
	MDB_txn *txn;
	struct segfd *f;

	*what = "segment write";
	for (it = items; it; it = it->next) {
		if (it->kind != ITEM_PUT || it->skip)
			continue;
		if (!s->cur_seg || (s->cur_end > 0 && s->cur_end + it->alen > s->seg_size) ||
		    nsw == 0 || sw[nsw - 1].id != s->cur_seg) {
			int rotate = !s->cur_seg ||
				(s->cur_end > 0 && s->cur_end + it->alen > s->seg_size);
			if (nsw == SEGW_MAX) { /* tiny segments: the rest waits for no one */
				it->skip = 1;
				pfs_add(&s->st_dropped, 1);
				continue;
			}
			if ((rc = ssd_append_flush(s)))
				goto release;
			if (rotate) {
				if (s->cur_seg)
					rotated[nrot++] = s->cur_seg;
				if ((rc = ssd_seg_get(s, s->next_seg, 1, &f)))
					goto release;
				s->cur_seg = s->next_seg++;
				s->cur_end = 0;
				created = 1;
			} else if ((rc = ssd_seg_get(s, s->cur_seg, 0, &f))) {
				goto release;
			}
			sw[nsw++] = (struct segw){ s->cur_seg, 0, s->cur_end, f };
			ssd_append_begin(s, f, s->cur_end);
		}
		if ((rc = ssd_append(s, it->stored, it->slen, it->alen)))
			goto release;
		ssd_item_data_done(s, it); /* staged: the RAM tier may free it now */
		it->seg = s->cur_seg;
		it->off = s->cur_end;
		s->cur_end += it->alen;
		sw[nsw - 1].live_add += it->alen;
		sw[nsw - 1].end = s->cur_end;
	}
	if ((rc = ssd_append_flush(s)))
		goto release;
	if (nsw == 0 && nrot == 0)
		return 0;
	*what = "segment sync";
	for (i = 0; i < nsw; i++)
		if (fdatasync(sw[i].f->fd)) {
			rc = -errno;
			goto release;
		}
	if (created && (rc = sync_dir(s)))
		goto release;

	*what = "index update";
	if ((rc = mdb_txn_begin(s->env, NULL, 0, &txn))) {
		rc = ssd_mdb_err(rc);
		goto release;
	}
	for (it = items; it; it = it->next) {
		if (it->kind != ITEM_PUT || it->skip)
			continue;
		size_t el = strlen(it->etag);
		struct ent e = { .off = it->off, .sum = it->sum, .fp = it->fp,
				 .seq = s->next_seq++, .seg = it->seg, .slen = it->slen,
				 .rlen = (uint32_t)it->len, .codec = it->codec,
				 .etag_len = (uint8_t)el };
		memcpy(val, &e, sizeof(e));
		memcpy(val + sizeof(e), it->etag, el);
		MDB_val k = { it->klen, it->key }, d = { sizeof(e) + el, val };
		if ((rc = ssd_mdb_err(mdb_put(txn, s->db_blocks, &k, &d, 0))) ||
		    (rc = lru_put(s, txn, e.seq, it->key, it->klen)))
			goto abort;
		b->c.bytes += it->alen;
		b->c.raw += it->len;
		b->c.entries++;
	}
	for (i = 0; i < nsw; i++) {
		if ((rc = seg_rec(s, txn, sw[i].id, &r)))
			goto abort;
		r.live += sw[i].live_add;
		r.end = sw[i].end;
		if ((rc = seg_rec_put(s, txn, sw[i].id, &r)))
			goto abort;
	}
	for (i = 0; i < nrot; i++) { /* left behind already empty: unlink */
		if ((rc = seg_rec(s, txn, rotated[i], &r)))
			goto abort;
		if (r.live == 0) {
			if ((rc = seg_rec_put(s, txn, rotated[i], NULL)) ||
			    (rc = grow((void **)&b->dead, &b->capdead, b->ndead, sizeof(*b->dead))))
				goto abort;
			b->dead[b->ndead++] = rotated[i];
		}
	}
	b->changed = 1;
	if ((rc = put_counters(s, txn, &b->c)))
		goto abort;
	if ((rc = mdb_txn_commit(txn))) {
		rc = commit_err(s, rc);
		goto release;
	}
	for (it = items; it; it = it->next)
		if (it->kind == ITEM_PUT && !it->skip && it->codec == CODEC_ZSTD)
			pfs_add(&s->st_comp, 1);
	goto release;
abort:
	mdb_txn_abort(txn);
release:
	for (i = 0; i < nsw; i++)
		ssd_seg_put(s, sw[i].f);
	return rc;
}

void ssd_run_batch(struct pfs_ssd *s, struct item *items, struct touch *touches)
{
	struct batch b = { 0 };
	const char *what = "index update";
	struct item *it, *jt;
	int rc;

	/* Two puts of one key in a batch: the later one wins. */
	for (it = items; it; it = it->next)
		if (it->kind == ITEM_PUT)
			it->khash = XXH3_64bits(it->key, it->klen);
	for (it = items; it; it = it->next) {
		if (it->kind != ITEM_PUT)
			continue;
		for (jt = it->next; jt && !it->skip; jt = jt->next)
			if (jt->kind == ITEM_PUT && jt->khash == it->khash &&
			    jt->klen == it->klen && !memcmp(jt->key, it->key, it->klen))
				it->skip = 1;
		if (!it->skip)
			prepare(s, it);
	}
	b.c.bytes = pfs_load(&s->st_bytes);
	b.c.raw = pfs_load(&s->st_raw);
	b.c.entries = pfs_load(&s->st_entries);
	if ((rc = phase_a(s, items, touches, &b)))
		goto fail;
	reclaim(s, &b);
	if (b.sweep_done) /* after the counters it changed are published */
		pfs_store(&s->sweep_below, 0);
	if ((rc = phase_b(s, items, &b, &what)))
		goto fail;
	reclaim(s, &b);
	goto out;
fail:
	ssd_disable(s, rc, what);
out:
	free(b.punch);
	free(b.dead);
}
