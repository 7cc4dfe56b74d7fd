/* ssd_base.c - the SSD tier's helpers every other file of it uses (see
 * ssd_int.h): LMDB codes to errnos, an index record's decoding, a queued
 * item's release, and disabling the tier. The bottom of the tier's files:
 * it calls none of them, so their calls point one way (ssd.c -> ssd_read.c,
 * ssd_queue.c -> ssd_store.c -> ssd_files.c, ssd_base.c).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "bufpool.h"
#include "ssd_int.h"
#include "../util/atomic.h"
#include "../util/log.h"

int ssd_mdb_err(int rc)
{
	switch (rc) {
	case MDB_SUCCESS: return 0;
	case MDB_NOTFOUND: return -ENOENT;
	case MDB_MAP_FULL: case MDB_TXN_FULL: case MDB_PAGE_FULL: return -ENOSPC;
	case MDB_READERS_FULL: return -EAGAIN;
	case MDB_DBS_FULL: return -EINVAL;
	}
	if (rc > 0)
		return -rc;
	return ssd_mdb_corrupt(rc) ? E_CORRUPT : -EIO;
}

int ssd_mdb_corrupt(int rc)
{
	return rc == MDB_INVALID || rc == MDB_CORRUPTED || rc == MDB_VERSION_MISMATCH ||
	       rc == MDB_PAGE_NOTFOUND || rc == MDB_INCOMPATIBLE || rc == MDB_BAD_VALSIZE ||
	       rc == EINVAL || rc == E_CORRUPT;
}

int ssd_ent_decode(const MDB_val *v, struct ent *e, char *etag)
{
	if (v->mv_size < sizeof(*e))
		return -EIO;
	memcpy(e, v->mv_data, sizeof(*e));
	if (v->mv_size != sizeof(*e) + e->etag_len || e->etag_len >= PFS_SSD_ETAG_MAX ||
	    e->codec > CODEC_ZSTD || !e->seg || !e->rlen ||
	    (e->codec == CODEC_RAW && e->slen != e->rlen))
		return -EIO;
	if (etag) {
		memcpy(etag, (const char *)v->mv_data + sizeof(*e), e->etag_len);
		etag[e->etag_len] = 0;
	}
	return 0;
}

void ssd_item_data_done(struct pfs_ssd *s, struct item *it)
{
	if (it->stored && it->stored != it->data)
		free(it->stored);
	if (it->release)
		it->release(it->rel_arg);
	else
		pfs_bufpool_free(it->data, it->len);
	it->stored = it->data = NULL;
	it->release = NULL;
}

void ssd_item_free(struct pfs_ssd *s, struct item *it)
{
	if (!it)
		return;
	if (it->kind == ITEM_PUT)
		ssd_item_data_done(s, it);
	else
		free(it->data);
	free(it);
}

void ssd_disable(struct pfs_ssd *s, int err, const char *what)
{
	struct item *it;
	struct touch *t;

	pfs_add(&s->st_werr, 1);
	if (__atomic_exchange_n(&s->disabled, 1, __ATOMIC_SEQ_CST))
		return;
	pfs_err("ssd_dir %s: %s: %s; SSD tier disabled: queued blocks dropped, no more "
		"writes, reads of stored blocks go on", s->dir, what, strerror(-err));
	pthread_mutex_lock(&s->q_lock);
	while ((it = s->q_head)) {
		s->q_head = it->next;
		s->q_bytes -= it->cost;
		if (it->kind == ITEM_PUT) {
			s->q_alen -= ssd_alignup(it->len);
			pfs_add(&s->st_dropped, 1);
		} else {
			s->q_drops--;
		}
		ssd_item_free(s, it);
	}
	s->q_tail = &s->q_head;
	while ((t = s->t_head)) {
		s->t_head = t->next;
		free(t);
	}
	s->t_tail = &s->t_head;
	s->t_count = 0;
	s->done_ticket = s->enq_ticket;
	pthread_cond_broadcast(&s->q_done);
	pthread_mutex_unlock(&s->q_lock);
}
