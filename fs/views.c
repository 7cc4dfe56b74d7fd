/* views.c - see views.h. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "views.h"
#include "../transform/view.h"
#include "../util/atomic.h"
#include "../util/budget.h"
#include "../util/log.h"
#include "../util/stats.h"

#define SIZE_SLOTS 65536 /* remembered output sizes (a cache: may forget) */
#define PROBE_FIRST (64u << 10) /* the first prefix read for a header */

struct job {
	const struct pfs_view_spec *spec;
	const void *src;
	size_t len;
	void *out;
	size_t out_len;
	int rc, done;
	struct job *next;
};

/* A size slot is empty (key 0), busy (one caller computes it; the others
 * wait on `sized`), or done (size, or a failure remembered so that it is
 * logged once). */
struct size_slot {
	uint64_t key;  /* view key + 1; 0: empty */
	uint64_t size;
	uint64_t work; /* pfs_view_work_bytes; 0: unknown */
	int err;
	int busy;
};

struct pfs_views {
	uint64_t max_pixels, max_source;
	pthread_mutex_t lock;
	pthread_cond_t work, done, sized;
	struct pfs_budget *budget;
	uint64_t too_big, size_waits; /* atomic */
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
	uint64_t memory = o->memory ? o->memory : 2 * v->max_source;
	if (pfs_budget_create(memory < v->max_source ? v->max_source : memory, &v->budget)) {
		free(v);
		return -ENOMEM;
	}
	pthread_mutex_init(&v->lock, NULL);
	pthread_cond_init(&v->work, NULL);
	pthread_cond_init(&v->done, NULL);
	pthread_cond_init(&v->sized, NULL);
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
	pthread_cond_destroy(&v->sized);
	pfs_budget_destroy(v->budget);
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

/* Runs one transform on the pool and waits for it. */
static int pool_apply(struct pfs_views *v, uint32_t idx, const void *src, size_t len,
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

int pfs_views_apply(struct pfs_views *v, uint32_t idx, const void *src, size_t len,
		    void **out, size_t *out_len)
{
	uint64_t work = 0;
	if (pfs_view_work_bytes(spec_of(v, idx), src, len, v->max_pixels, &work) < 0)
		work = 0; /* refused at once by the transform itself */
	pfs_budget_take(v->budget, work);
	int rc = pool_apply(v, idx, src, len, out, out_len);
	pfs_budget_give(v->budget, work);
	return rc;
}

/* A failed read of the source: not a property of the file, never cached. */
struct outcome {
	int rc;
	int read_failed;
};

/* The header of src: read prefixes (each within the budget) until one
 * holds it, or the whole file does. out.rc: 0 (and *size), -EAGAIN (jpeg
 * output: only the transform tells the size), or an error; *work: the
 * transform's estimated memory besides its source (0 if unknown). */
static struct outcome probe(struct pfs_views *v, uint32_t idx, const struct pfs_views_src *src,
			    uint64_t *size, uint64_t *work)
{
	struct outcome o = {0, 0};
	size_t n = src->size < PROBE_FIRST ? (size_t)src->size : PROBE_FIRST;
	*work = 0;
	for (;;) {
		pfs_budget_take(v->budget, n);
		char *buf = malloc(n ? n : 1);
		if (!buf) {
			o.rc = -ENOMEM;
		} else if ((o.rc = src->read(src->ctx, buf, n)) < 0) {
			o.read_failed = 1;
		} else {
			size_t end;
			if (pfs_view_header_end(buf, n, &end) == -EAGAIN && n < src->size) {
				free(buf);
				pfs_budget_give(v->budget, n);
				n = src->size / 2 < n ? (size_t)src->size : 2 * n;
				continue;
			}
			o.rc = pfs_view_output_size(spec_of(v, idx), buf, n, v->max_pixels, size);
			if ((o.rc == 0 || o.rc == -EAGAIN) &&
			    pfs_view_work_bytes(spec_of(v, idx), buf, n, v->max_pixels, work) < 0)
				*work = 0;
		}
		free(buf);
		pfs_budget_give(v->budget, n);
		return o;
	}
}

/* The whole transform of src within the budget: source + work bytes held
 * while it runs. dst NULL: only *out_len. */
static struct outcome run(struct pfs_views *v, uint32_t idx, const struct pfs_views_src *src,
			  uint64_t work, void *dst, size_t cap, size_t *out_len)
{
	struct outcome o = {0, 0};
	if (!work) { /* not remembered: the header tells */
		uint64_t unused;
		o = probe(v, idx, src, &unused, &work);
		if (o.rc < 0 && o.rc != -EAGAIN)
			return o;
		o.rc = 0;
	}
	uint64_t need = src->size + work;
	pfs_budget_take(v->budget, need);
	char *buf = malloc(src->size ? (size_t)src->size : 1);
	void *out = NULL;
	if (!buf) {
		o.rc = -ENOMEM;
	} else if ((o.rc = src->read(src->ctx, buf, (size_t)src->size)) < 0) {
		o.read_failed = 1;
	} else {
		o.rc = pool_apply(v, idx, buf, (size_t)src->size, &out, out_len);
		free(buf);
		buf = NULL;
		if (o.rc == 0 && dst) {
			if (*out_len != cap)
				o.rc = -EIO; /* the size reported by stat must hold */
			else
				memcpy(dst, out, cap);
		}
		free(out);
	}
	free(buf);
	pfs_budget_give(v->budget, need);
	return o;
}

static struct size_slot *slot_of(struct pfs_views *v, uint64_t key)
{
	return &v->sizes[(key * 0x9e3779b97f4a7c15ull) >> 48];
}

static int too_big(struct pfs_views *v, const struct pfs_views_src *src)
{
	if (src->size <= v->max_source)
		return 0;
	pfs_add(&v->too_big, 1);
	return 1;
}

int pfs_views_output(struct pfs_views *v, uint32_t idx, const struct pfs_views_src *src,
		     void *buf, size_t len)
{
	if (too_big(v, src))
		return -EFBIG;
	struct size_slot *slot = slot_of(v, src->key);
	pthread_mutex_lock(&v->lock);
	uint64_t work = slot->key == src->key + 1 && !slot->busy ? slot->work : 0;
	pthread_mutex_unlock(&v->lock);
	size_t out_len;
	return run(v, idx, src, work, buf, len, &out_len).rc;
}

int pfs_views_size(struct pfs_views *v, uint32_t idx, const struct pfs_views_src *src,
		   uint64_t *size)
{
	if (too_big(v, src))
		return -EFBIG;
	uint64_t key = src->key + 1;
	struct size_slot *slot = slot_of(v, src->key);
	pthread_mutex_lock(&v->lock);
	if (slot->key == key && slot->busy) /* another caller computes it */
		pfs_add(&v->size_waits, 1);
	while (slot->key == key && slot->busy)
		pthread_cond_wait(&v->sized, &v->lock);
	if (slot->key == key) {
		uint64_t sz = slot->size;
		int err = slot->err;
		pthread_mutex_unlock(&v->lock);
		*size = sz;
		return err == -EIO || err == -E2BIG ? -ENODATA : err;
	}
	int own = !slot->busy; /* else another key's: computed, not cached */
	if (own) {
		slot->key = key;
		slot->busy = 1;
	}
	pthread_mutex_unlock(&v->lock);

	uint64_t sz = 0, work = 0;
	struct outcome o = probe(v, idx, src, &sz, &work);
	if (o.rc == -EAGAIN) { /* jpeg output: only a full transform tells */
		size_t n = 0;
		o = run(v, idx, src, work, NULL, 0, &n);
		sz = n;
	}
	int keep = !o.read_failed && (o.rc == 0 || o.rc == -EIO || o.rc == -E2BIG);
	if (own) {
		pthread_mutex_lock(&v->lock);
		if (keep) {
			slot->size = sz;
			slot->work = work;
			slot->err = o.rc;
		} else {
			slot->key = 0; /* e.g. ENOMEM: waiters try themselves */
		}
		slot->busy = 0;
		pthread_cond_broadcast(&v->sized);
		pthread_mutex_unlock(&v->lock);
	}
	if (o.rc < 0)
		return o.rc;
	*size = sz;
	return 0;
}

void pfs_views_collect(void *ctx, struct pfs_stat_list *l)
{
	struct pfs_views *v = ctx;
	struct pfs_budget_stats b = {0};
	if (v)
		pfs_budget_stats(v->budget, &b);
	/* Gauges: the budget, what is held now, the most ever held; counters
	 * the rest. */
	pfs_stat_list_add(l, "views.memory_limit", (double)b.limit, 1);
	pfs_stat_list_add(l, "views.memory_used", (double)b.used, 1);
	pfs_stat_list_add(l, "views.memory_peak", (double)b.peak, 1);
	pfs_stat_list_add(l, "views.memory_waits", (double)b.waits, 0);
	pfs_stat_list_add(l, "views.too_big", v ? (double)pfs_load(&v->too_big) : 0, 0);
	pfs_stat_list_add(l, "views.size_waits", v ? (double)pfs_load(&v->size_waits) : 0, 0);
}
