/* ssd_queue.c - the SSD tier's queue and the writer thread's loop (see
 * ssd.c for the design). Callers of pfs_ssd_put, and readers that record a
 * hit or ask for a drop, append to the queue under q_lock and wake the
 * writer; the writer takes everything queued at once and runs it as one
 * batch (ssd_store.c) with no lock held, then retires the batch's tickets
 * so that pfs_ssd_flush returns. A write error disables the tier once and
 * empties the queue (ssd_disable).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bufpool.h"
#include "ssd_int.h"
#include "../util/log.h"

/* ---- producers ---- */

/* Asks the writer to remove key's entry if it is still the one at
 * (seg, off); seg UINT32_MAX: whatever is there. Best effort. */
void ssd_queue_drop(struct pfs_ssd *s, const char *key, size_t klen, uint32_t seg,
		    uint64_t off)
{
	struct item *it;
	if (pfs_load(&s->disabled) || !(it = calloc(1, sizeof(*it) + klen)))
		return;
	it->kind = ITEM_DROP;
	it->seg = seg;
	it->off = off;
	it->klen = klen;
	it->cost = sizeof(*it) + klen;
	memcpy(it->key, key, klen);
	pthread_mutex_lock(&s->q_lock);
	if (s->q_drops >= SSD_DROP_MAX || pfs_load(&s->disabled)) {
		pthread_mutex_unlock(&s->q_lock);
		free(it);
		return;
	}
	*s->q_tail = it;
	s->q_tail = &it->next;
	s->q_bytes += it->cost;
	s->q_drops++;
	s->enq_ticket++;
	pthread_cond_signal(&s->q_wake);
	pthread_mutex_unlock(&s->q_lock);
}

void ssd_record_hit(struct pfs_ssd *s, const char *key, size_t klen)
{
	struct touch *t;
	if (s->evict != PFS_SSD_EVICT_LRU || pfs_load(&s->disabled) ||
	    !(t = malloc(sizeof(*t) + klen)))
		return;
	t->klen = klen;
	memcpy(t->key, key, klen);
	pthread_mutex_lock(&s->q_lock);
	if (s->t_count >= SSD_TOUCH_MAX) { /* the writer is behind: recency is a hint */
		pthread_mutex_unlock(&s->q_lock);
		free(t);
		return;
	}
	t->next = NULL;
	*s->t_tail = t;
	s->t_tail = &t->next;
	if (++s->t_count == SSD_TOUCH_BATCH)
		pthread_cond_signal(&s->q_wake);
	pthread_mutex_unlock(&s->q_lock);
}

/* Queues a put of data[0..len): a copy, or (release set) the caller's
 * bytes, released once the writer is done with them or the put is
 * refused. */
static int put(struct pfs_ssd *s, const char *path, uint64_t block, uint64_t fp,
	       const char *etag, const void *buf, size_t len, int noevict,
	       void (*release)(void *), void *arg)
{
	char key[SSD_KEY_MAX];
	size_t klen, el = etag ? strlen(etag) : 0;
	uint64_t alen = ssd_alignup(len);
	struct item *it = NULL;
	int rc;

	if (!s || !len || len > UINT32_MAX || el >= PFS_SSD_ETAG_MAX) {
		rc = -EINVAL;
		goto invalid;
	}
	if (!(klen = ssd_make_key(key, path, block))) {
		rc = -ENAMETOOLONG;
		goto invalid;
	}
	if (pfs_load(&s->disabled)) {
		rc = -EAGAIN;
		goto refuse;
	}
	if (!(it = calloc(1, sizeof(*it) + klen))) {
		rc = -EAGAIN;
		goto refuse;
	}
	it->kind = ITEM_PUT;
	it->len = len;
	if (release) {
		it->data = (void *)buf; /* read only, by the writer */
		it->release = release;
		it->rel_arg = arg;
		release = NULL;         /* the item releases it now */
	} else if ((it->data = pfs_bufpool_alloc(len))) {
		/* Most likely a buffer the writer gave back moments ago, its
		 * pages already in: the tier lends queue_max to the pool's idle
		 * cap (pfs_ssd_open). */
		memcpy(it->data, buf, len);
	} else {
		rc = -EAGAIN;
		goto refuse;
	}
	it->fp = ssd_entry_fp(s, fp);
	it->klen = klen;
	it->cost = sizeof(*it) + klen + len;
	memcpy(it->key, key, klen);
	memcpy(it->etag, etag ? etag : "", el + 1);

	pthread_mutex_lock(&s->q_lock);
	if (pfs_load(&s->disabled))
		rc = -EAGAIN;
	else if ((s->evict == PFS_SSD_EVICT_NONE || noevict) &&
		 (pfs_load(&s->full) || pfs_load(&s->st_bytes) + s->q_alen + alen > s->budget))
		rc = -ENOSPC; /* counts raw sizes: a compressible block may be refused early */
	else if (s->q_bytes + it->cost > s->queue_max)
		rc = -EAGAIN;
	else
		rc = 0;
	if (rc == 0) {
		*s->q_tail = it;
		s->q_tail = &it->next;
		s->q_bytes += it->cost;
		s->q_alen += alen;
		s->enq_ticket++;
		pthread_cond_signal(&s->q_wake);
	}
	pthread_mutex_unlock(&s->q_lock);
	if (rc == 0) {
		pfs_add(&s->st_queued, 1);
		return 0;
	}
refuse:
	pfs_add(&s->st_dropped, 1);
	if (it)
		ssd_item_free(s, it);
invalid:
	if (release)
		release(arg);
	return rc;
}

int pfs_ssd_put(struct pfs_ssd *s, const char *path, uint64_t block, uint64_t fp,
		const char *etag, const void *buf, size_t len)
{
	return put(s, path, block, fp, etag, buf, len, 0, NULL, NULL);
}

int pfs_ssd_put_ref(struct pfs_ssd *s, const char *path, uint64_t block, uint64_t fp,
		    const char *etag, const void *buf, size_t len, void (*release)(void *),
		    void *arg)
{
	return put(s, path, block, fp, etag, buf, len, 0, release, arg);
}

int pfs_ssd_put_noevict(struct pfs_ssd *s, const char *path, uint64_t block, uint64_t fp,
			const char *etag, const void *buf, size_t len)
{
	return put(s, path, block, fp, etag, buf, len, 1, NULL, NULL);
}

uint64_t pfs_ssd_room(struct pfs_ssd *s)
{
	uint64_t room = 0;
	if (!s || pfs_load(&s->disabled) || pfs_load(&s->full))
		return 0;
	pthread_mutex_lock(&s->q_lock);
	uint64_t used = pfs_load(&s->st_bytes) + s->q_alen;
	if (used < s->budget)
		room = s->budget - used;
	pthread_mutex_unlock(&s->q_lock);
	return room;
}

void pfs_ssd_drop(struct pfs_ssd *s, const char *path, uint64_t block)
{
	char key[SSD_KEY_MAX];
	size_t klen = s ? ssd_make_key(key, path, block) : 0;
	if (klen)
		ssd_queue_drop(s, key, klen, UINT32_MAX, 0);
}

void pfs_ssd_flush(struct pfs_ssd *s)
{
	uint64_t target;
	if (!s || !s->writer_started)
		return;
	pthread_mutex_lock(&s->q_lock);
	target = ++s->enq_ticket;
	s->want_pass = 1;
	pthread_cond_signal(&s->q_wake);
	while (s->done_ticket < target)
		pthread_cond_wait(&s->q_done, &s->q_lock);
	pthread_mutex_unlock(&s->q_lock);
}

/* ---- the writer thread ---- */

void *ssd_writer_main(void *arg)
{
	struct pfs_ssd *s = arg;
	struct item *items, *it;
	struct touch *touches, *t;
	uint64_t ticket, bytes, alen;
	unsigned drops;

	pthread_mutex_lock(&s->q_lock);
	for (;;) {
		while (!s->stop && !s->q_head && !s->want_pass && s->t_count < SSD_TOUCH_BATCH &&
		       !(pfs_load(&s->sweep_below) && !pfs_load(&s->disabled)))
			pthread_cond_wait(&s->q_wake, &s->q_lock);
		if (s->stop && !s->q_head && !s->want_pass && !s->t_head)
			break; /* recorded hits are applied before closing too */
		items = s->q_head;
		s->q_head = NULL;
		s->q_tail = &s->q_head;
		touches = s->t_head;
		s->t_head = NULL;
		s->t_tail = &s->t_head;
		s->t_count = 0;
		s->want_pass = 0;
		ticket = s->enq_ticket;
		pthread_mutex_unlock(&s->q_lock);

		if (!pfs_load(&s->disabled))
			ssd_run_batch(s, items, touches);
		bytes = alen = 0;
		drops = 0;
		while ((it = items)) {
			items = it->next;
			bytes += it->cost;
			if (it->kind == ITEM_PUT)
				alen += ssd_alignup(it->len);
			else
				drops++;
			ssd_item_free(s, it);
		}
		while ((t = touches)) {
			touches = t->next;
			free(t);
		}

		pthread_mutex_lock(&s->q_lock);
		s->q_bytes -= bytes;
		s->q_alen -= alen;
		s->q_drops -= drops;
		if (s->done_ticket < ticket)
			s->done_ticket = ticket;
		pthread_cond_broadcast(&s->q_done);
	}
	pthread_mutex_unlock(&s->q_lock);
	return NULL;
}
