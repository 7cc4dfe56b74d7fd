/* views.c - see views.h. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "views.h"
#include "../transform/view.h"
#include "../util/log.h"

#define SIZE_SLOTS 65536 /* remembered output sizes (a cache: may forget) */

struct job {
	const struct pfs_view_spec *spec;
	const void *src;
	size_t len;
	void *out;
	size_t out_len;
	int rc, done;
	struct job *next;
};

struct size_slot {
	uint64_t key;  /* 0: empty */
	uint64_t size;
	int err;       /* a failure is remembered too: logged once */
};

struct pfs_views {
	uint64_t max_pixels, max_source;
	pthread_mutex_t lock;
	pthread_cond_t work, done;
	/* guarded by lock */
	struct pfs_view_spec specs[PFS_VIEWS_MAX_SPECS];
	char *canon[PFS_VIEWS_MAX_SPECS];
	uint32_t nspecs;
	char *bad[64];             /* invalid spellings already logged */
	unsigned nbad;
	struct job *head, *tail;
	int stop;
	struct size_slot sizes[SIZE_SLOTS];
	pthread_t *threads;
	unsigned nthreads;
};

static void *worker(void *arg)
{
	struct pfs_views *v = arg;
	pthread_mutex_lock(&v->lock);
	for (;;) {
		while (!v->head && !v->stop)
			pthread_cond_wait(&v->work, &v->lock);
		if (!v->head)
			break;
		struct job *j = v->head;
		v->head = j->next;
		if (!v->head)
			v->tail = NULL;
		pthread_mutex_unlock(&v->lock);
		j->rc = pfs_view_apply(j->spec, j->src, j->len, v->max_pixels, &j->out, &j->out_len);
		if (j->rc == 0 && j->out_len > PFS_VIEWS_MAX_OUTPUT) {
			free(j->out);
			j->out = NULL;
			j->rc = -EFBIG;
		}
		pthread_mutex_lock(&v->lock);
		j->done = 1;
		pthread_cond_broadcast(&v->done);
	}
	pthread_mutex_unlock(&v->lock);
	return NULL;
}

int pfs_views_create(const struct pfs_views_opts *o, struct pfs_views **out)
{
	unsigned workers = o->workers;
	struct pfs_views *v = calloc(1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	v->max_source = o->max_source ? o->max_source : PFS_VIEWS_MAX_OUTPUT;
	if (!workers) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);
		workers = n > 0 ? (unsigned)n : 1;
	}
	v->max_pixels = o->max_pixels;
	pthread_mutex_init(&v->lock, NULL);
	pthread_cond_init(&v->work, NULL);
	pthread_cond_init(&v->done, NULL);
	v->threads = calloc(workers, sizeof(*v->threads));
	for (unsigned i = 0; v->threads && i < workers; i++)
		if (pthread_create(&v->threads[i], NULL, worker, v) == 0)
			v->nthreads++;
	if (!v->nthreads) {
		pfs_views_destroy(v);
		return -ENOMEM;
	}
	*out = v;
	return 0;
}

void pfs_views_destroy(struct pfs_views *v)
{
	if (!v)
		return;
	pthread_mutex_lock(&v->lock);
	v->stop = 1;
	pthread_cond_broadcast(&v->work);
	pthread_mutex_unlock(&v->lock);
	for (unsigned i = 0; i < v->nthreads; i++)
		pthread_join(v->threads[i], NULL);
	free(v->threads);
	for (uint32_t i = 0; i < v->nspecs; i++)
		free(v->canon[i]);
	for (unsigned i = 0; i < v->nbad; i++)
		free(v->bad[i]);
	pthread_mutex_destroy(&v->lock);
	pthread_cond_destroy(&v->work);
	pthread_cond_destroy(&v->done);
	free(v);
}

int pfs_views_spec(struct pfs_views *v, const char *name, uint32_t *idx)
{
	struct pfs_view_spec spec;
	char canon[256], err[512];
	if (pfs_view_parse(name, &spec, canon, sizeof(canon), err, sizeof(err)) < 0) {
		pthread_mutex_lock(&v->lock);
		int seen = 0;
		for (unsigned i = 0; i < v->nbad; i++)
			seen |= !strcmp(v->bad[i], name);
		if (!seen && v->nbad < 64)
			v->bad[v->nbad++] = strdup(name);
		pthread_mutex_unlock(&v->lock);
		if (!seen)
			pfs_warn("views: '%.100s': %s", name, err);
		return -ENOENT;
	}
	int rc = 0;
	pthread_mutex_lock(&v->lock);
	uint32_t i;
	for (i = 0; i < v->nspecs; i++)
		if (!strcmp(v->canon[i], canon))
			break;
	if (i == v->nspecs) {
		if (v->nspecs == PFS_VIEWS_MAX_SPECS) {
			rc = -ENOSPC;
		} else if (!(v->canon[i] = strdup(canon))) {
			rc = -ENOMEM;
		} else {
			v->specs[i] = spec;
			v->nspecs++;
		}
	}
	pthread_mutex_unlock(&v->lock);
	if (rc == 0)
		*idx = i;
	return rc;
}

uint64_t pfs_views_max_source(const struct pfs_views *v)
{
	return v->max_source;
}

const char *pfs_views_canon(struct pfs_views *v, uint32_t idx)
{
	return idx < PFS_VIEWS_MAX_SPECS ? v->canon[idx] : "";
}

int pfs_views_transforms(const char *name)
{
	return pfs_view_is_jpeg_name(name);
}

/* Specs are never removed or changed once interned: a pointer to one
 * stays valid. */
static const struct pfs_view_spec *spec_of(struct pfs_views *v, uint32_t idx)
{
	return &v->specs[idx];
}

int pfs_views_apply(struct pfs_views *v, uint32_t idx, const void *src, size_t len,
		    void **out, size_t *out_len)
{
	struct job j = {.spec = spec_of(v, idx), .src = src, .len = len};
	pthread_mutex_lock(&v->lock);
	if (v->tail)
		v->tail->next = &j;
	else
		v->head = &j;
	v->tail = &j;
	pthread_cond_signal(&v->work);
	while (!j.done)
		pthread_cond_wait(&v->done, &v->lock);
	pthread_mutex_unlock(&v->lock);
	if (j.rc == 0) {
		*out = j.out;
		*out_len = j.out_len;
	}
	return j.rc;
}

int pfs_views_size(struct pfs_views *v, uint32_t idx, uint64_t key, const void *src,
		   size_t len, uint64_t *size)
{
	struct size_slot *slot = &v->sizes[(key * 0x9e3779b97f4a7c15ull) >> 48];
	pthread_mutex_lock(&v->lock);
	int hit = slot->key == key + 1;
	uint64_t sz = slot->size;
	int err = slot->err;
	pthread_mutex_unlock(&v->lock);
	if (hit) {
		*size = sz;
		return err == -EIO || err == -E2BIG ? -ENODATA : err;
	}
	if (!src)
		return -EAGAIN;
	int rc = pfs_view_output_size(spec_of(v, idx), src, len, v->max_pixels, &sz);
	if (rc == -EAGAIN) { /* only a full transform tells (jpeg output) */
		void *out;
		rc = pfs_views_apply(v, idx, src, len, &out, &sz);
		if (rc == 0)
			free(out);
	}
	if (rc < 0 && rc != -EIO && rc != -E2BIG)
		return rc; /* e.g. ENOMEM: not a property of the file */
	pthread_mutex_lock(&v->lock);
	slot->key = key + 1;
	slot->size = sz;
	slot->err = rc;
	pthread_mutex_unlock(&v->lock);
	if (rc < 0)
		return rc;
	*size = sz;
	return 0;
}
