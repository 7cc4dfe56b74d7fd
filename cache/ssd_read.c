/* ssd_read.c - the SSD tier's read path (see ssd.c for the design): one
 * LMDB read txn, one pread, the checksum, a decompression when the entry
 * is zstd. Never writes: a hit's recency and a bad or stale entry's drop
 * go to the writer through the queue (ssd_queue.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "ssd_int.h"
#include "../util/log.h"

static int lookup(struct pfs_ssd *s, const char *key, size_t klen, struct ent *e, char *etag)
{
	MDB_val k = { klen, (void *)key }, v;
	MDB_txn *txn;
	int rc;

	if ((rc = mdb_txn_begin(s->env, NULL, MDB_RDONLY, &txn)))
		return ssd_mdb_err(rc);
	rc = mdb_get(txn, s->db_blocks, &k, &v);
	rc = rc ? ssd_mdb_err(rc) : ssd_ent_decode(&v, e, etag) ? -EUCLEAN : 0;
	mdb_txn_abort(txn);
	return rc;
}

static ZSTD_DCtx *dctx_take(struct pfs_ssd *s)
{
	ZSTD_DCtx *d = NULL;
	pthread_mutex_lock(&s->dctx_lock);
	if (s->ndctx)
		d = s->dctx[--s->ndctx];
	pthread_mutex_unlock(&s->dctx_lock);
	return d ? d : ZSTD_createDCtx();
}

static void dctx_give(struct pfs_ssd *s, ZSTD_DCtx *d)
{
	pthread_mutex_lock(&s->dctx_lock);
	if (s->ndctx < SSD_DCTX_KEEP) {
		s->dctx[s->ndctx++] = d;
		d = NULL;
	}
	pthread_mutex_unlock(&s->dctx_lock);
	ZSTD_freeDCtx(d);
}

/* Reads and verifies e's bytes into buf (len == e->rlen). 0 or -EIO. */
static int read_block(struct pfs_ssd *s, const struct ent *e, void *buf, size_t len)
{
	struct segfd *f;
	void *tmp = NULL;
	ZSTD_DCtx *d;
	size_t n;
	int rc;

	if (ssd_seg_get(s, e->seg, 0, &f))
		return -EIO;
	if (e->codec == CODEC_RAW) {
		rc = ssd_pread_full(f->fd, buf, len, e->off);
		if (!rc && XXH3_64bits(buf, len) != e->sum)
			rc = -EIO;
		goto put_seg;
	}
	if (!(tmp = malloc(e->slen))) {
		rc = -ENOMEM;
		goto put_seg;
	}
	rc = ssd_pread_full(f->fd, tmp, e->slen, e->off);
	if (!rc && XXH3_64bits(tmp, e->slen) != e->sum)
		rc = -EIO;
	if (!rc) {
		if (!(d = dctx_take(s))) {
			rc = -ENOMEM;
			goto put_seg;
		}
		n = ZSTD_decompressDCtx(d, buf, len, tmp, e->slen);
		if (ZSTD_isError(n) || n != len)
			rc = -EIO;
		dctx_give(s, d);
	}
put_seg:
	free(tmp);
	ssd_seg_put(s, f);
	return rc < 0 && rc != -ENOMEM ? -EIO : rc;
}

int pfs_ssd_get(struct pfs_ssd *s, const char *path, uint64_t block, uint64_t fp,
		void *buf, size_t len, char *etag)
{
	char key[SSD_KEY_MAX];
	struct ent e, e2;
	size_t klen;
	int rc;

	if (!s || !s->env || !(klen = ssd_make_key(key, path, block)))
		goto miss;
	for (int attempt = 0; attempt < 2; attempt++) {
		rc = lookup(s, key, klen, &e, etag);
		if (rc == -EUCLEAN) { /* a malformed record: never serve it */
			pfs_add(&s->st_csum, 1);
			pfs_warn("ssd_dir %s: bad index record for %s block %llu; dropped",
				 s->dir, path, (unsigned long long)block);
			ssd_queue_drop(s, key, klen, UINT32_MAX, 0);
			return -EIO;
		}
		if (rc)
			goto miss; /* -ENOENT, or the index unreadable: a miss either way */
		if (e.fp != ssd_entry_fp(s, fp) || e.rlen != len) {
			pfs_add(&s->st_stale, 1);
			ssd_queue_drop(s, key, klen, e.seg, e.off);
			return -ESTALE;
		}
		rc = read_block(s, &e, buf, len);
		if (rc == 0) {
			pfs_add(&s->st_hits, 1);
			ssd_record_hit(s, key, klen);
			return 0;
		}
		if (rc == -ENOMEM)
			goto miss;
		/* Evicted (punched) under us, or really bad? Ask the index again. */
		if (lookup(s, key, klen, &e2, NULL) == 0 && e2.seg == e.seg && e2.off == e.off &&
		    e2.sum == e.sum) {
			pfs_add(&s->st_csum, 1);
			pfs_warn("ssd_dir %s: %s block %llu failed its checksum (segment %u "
				 "offset %llu); dropped", s->dir, path, (unsigned long long)block,
				 e.seg, (unsigned long long)e.off);
			ssd_queue_drop(s, key, klen, e.seg, e.off);
			return -EIO;
		}
	}
miss:
	if (s)
		pfs_add(&s->st_misses, 1);
	return -ENOENT;
}

int pfs_ssd_has(struct pfs_ssd *s, const char *path, uint64_t block, uint64_t fp, size_t len,
		char *etag)
{
	char key[SSD_KEY_MAX], tag[PFS_SSD_ETAG_MAX];
	struct ent e;
	size_t klen;

	if (!s || !s->env || !(klen = ssd_make_key(key, path, block)))
		return 0;
	if (lookup(s, key, klen, &e, etag ? etag : tag))
		return 0;
	return e.fp == ssd_entry_fp(s, fp) && e.rlen == len;
}
