/* s3scan.c - the S3 backend's listing without a manifest: ListObjectsV2
 * pages, fetched in parallel by key range (see s3_int.h).
 *
 * Design notes:
 * - Listing starts with one flat (non-delimited) page of PREFIX: it is
 *   complete whatever the server reports in CommonPrefixes, so a page that
 *   is not truncated is the whole listing, and only such a page can say
 *   "nothing under PREFIX". Nothing is ever inferred from a delimited page
 *   (s3rver, like some other servers, leaves a directory that holds only
 *   subdirectories out of CommonPrefixes).
 * - No objects under PREFIX fails the listing with -ENOENT and a message
 *   naming the prefix (a mistyped prefix would otherwise mount as an empty
 *   directory), unless -o allow_empty.
 * - The rest of a truncated listing is listed in parallel by key range.
 *   Delimited pages give CommonPrefixes, used merely as hints: first for
 *   PREFIX, then, while there are too few after the last key already
 *   listed, for the directory one level deeper that holds that key (at
 *   most HINT_LEVELS pages, so one dataset directory under the prefix,
 *   "imagenet/train/cNN/", still splits). Up to threads *
 *   RANGES_PER_THREAD - 1 of them become bounds b1 < b2 < ... < bn, all
 *   after the last key k0 of the first page, that cut the rest of the key
 *   space into ranges (k0, b1], (b1, b2], ..., (bn, +inf). Workers
 *   (PRESTOFS_S3_LIST_THREADS, default 8) each take a range and page
 *   through a flat listing from start-after=b(i) until a key passes
 *   b(i+1). Every key lies in exactly one range, so nothing is missed or
 *   listed twice, whichever hints the server gave: a missing hint only
 *   makes a range longer. Costs over a flat listing: the hint pages, plus
 *   at most one page per range. Needs the server to order keys as
 *   strcmp() does (S3: UTF-8 binary order). Only the directory holding k0
 *   is looked into: its siblings each stay one range.
 * - Listing callbacks (pfs_list_fn) are serialized by lister.lock; a worker
 *   parses a whole page before taking the lock, so no I/O happens under it.
 * - Keys the filesystem cannot show (pfs_path_valid fails, or a "dir/"
 *   object with data, or a duplicate answered -EEXIST) are skipped with
 *   one warning each, the first WARN_MAX of them, then a count. A key
 *   beside a "directory" of its name ("a" and "a/b") is the file table's
 *   to settle, in either order: it keeps the directory (catalog/ftable.h).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../manifest.h"
#include "../../util/log.h"
#include "s3_int.h"
#include "s3list.h"
#include "s3url.h"

#define PAGE_CAP (16u << 20)          /* bytes of one listing page */
#define RANGES_PER_THREAD 4
#define HINT_LEVELS 4                 /* delimited pages asked for hints */
#define WARN_MAX 20
#define EMPTY_PAGES_MAX 64            /* truncated pages in a row with no key */

/* State of one pfs_origin_list() call. */
struct lister {
	struct s3_origin *s;
	pfs_list_fn fn;
	void *ctx;
	pthread_mutex_t lock;
	int err;               /* first error; guarded by lock */
	unsigned skipped;      /* guarded by lock */
	uint64_t delivered;    /* entries the callback took; guarded by lock */
	/* Set before the workers start, read-only while they run: */
	char *start;           /* keys <= start are listed (NULL: none) */
	char **hints;          /* owned strings, any order */
	size_t nhints, hints_cap;
	const char **bounds;   /* range bounds, increasing, > start; into hints */
	size_t nbounds;
	size_t rnext;          /* next range to list; guarded by lock */
};

/* A printable copy of a key for log lines (control bytes become '?'). */
static void printable(const char *key, char *out, size_t cap)
{
	size_t i = 0;

	for (; key[i] && i + 1 < cap; i++)
		out[i] = ((unsigned char)key[i] < 0x20 || key[i] == 0x7f) ?
				 '?' : key[i];
	out[i] = '\0';
}

static void skip_key(struct lister *l, const char *key, const char *why)
{
	char pk[256];

	/* Called with l->lock held. */
	if (++l->skipped > WARN_MAX)
		return;
	printable(key, pk, sizeof(pk));
	pfs_warn("%s: skipping key '%s': %s%s", l->s->base.name, pk, why,
		 l->skipped == WARN_MAX ? " (further skips not shown)" : "");
}

/* Delivers one listed object to the callback. Called with l->lock held. */
static int deliver(struct lister *l, const struct pfs_s3list_entry *e)
{
	size_t plen = strlen(l->s->prefix), rlen;
	const char *rel = e->key + plen;
	char path[4097];
	int is_dir, rc;

	if (strncmp(e->key, l->s->prefix, plen) != 0) {
		skip_key(l, e->key, "outside the prefix");
		return 0;
	}
	rlen = strlen(rel);
	if (rlen == 0)
		return 0; /* the prefix's own directory marker */
	is_dir = rel[rlen - 1] == '/';
	if (is_dir) {
		rlen--;
		if (e->size != 0) {
			skip_key(l, e->key, "ends in '/' but holds data");
			return 0;
		}
	} else if (!strcmp(rel, PFS_MANIFEST_NAME)) {
		return 0;
	}
	if (rlen >= sizeof(path)) {
		skip_key(l, e->key, "path too long");
		return 0;
	}
	memcpy(path, rel, rlen);
	path[rlen] = '\0';
	if (!pfs_path_valid(path)) {
		skip_key(l, e->key, "not a valid file name");
		return 0;
	}
	rc = l->fn(l->ctx, path, is_dir, e->size, e->mtime,
		   e->etag && strlen(e->etag) < PFS_ETAG_MAX ? e->etag : NULL);
	if (rc == -EEXIST) {
		skip_key(l, e->key, "listed twice");
		return 0;
	}
	if (!rc)
		l->delivered++;
	return rc;
}

static int stopped(struct lister *l)
{
	int err;

	pthread_mutex_lock(&l->lock);
	err = l->err;
	pthread_mutex_unlock(&l->lock);
	return err;
}

/* Fetches and parses one listing page of `prefix` into *out (the caller
 * destroys). */
static int fetch_page(struct lister *l, const char *prefix, const char *delim,
		      const char *token, const char *start_after,
		      unsigned page, struct pfs_s3list **out)
{
	struct s3_origin *s = l->s;
	struct pfs_s3list *p = NULL;
	char *url, *body = NULL;
	size_t len;
	int rc;

	url = pfs_s3url_list(s->url_base, prefix, delim, token, start_after,
			     s->max_keys);
	if (!url)
		return -ENOMEM;
	rc = pfs_xfer_get(s->xfer, url, PAGE_CAP, &body, &len);
	free(url);
	if (rc) {
		pfs_err("%s: listing page %u: %s", s->base.name, page,
			strerror(-rc));
		return rc;
	}
	rc = pfs_s3list_create(&p);
	if (!rc) {
		rc = pfs_s3list_feed(p, body, len, 1);
		if (rc)
			pfs_err("%s: listing page %u: %s", s->base.name, page,
				pfs_s3list_error(p));
	}
	free(body);
	if (rc) {
		pfs_s3list_destroy(p);
		return rc;
	}
	*out = p;
	return 0;
}

/* Delivers a page's entries up to and including `stop` (NULL: all). Sets
 * *past when an entry beyond `stop` was seen. */
static int deliver_page(struct lister *l, const struct pfs_s3list *p,
			const char *stop, int *past)
{
	int rc = 0;

	pthread_mutex_lock(&l->lock);
	for (size_t i = 0; !rc && i < pfs_s3list_count(p); i++) {
		const struct pfs_s3list_entry *e = pfs_s3list_get(p, i);

		if (stop && strcmp(e->key, stop) > 0) {
			*past = 1;
			break;
		}
		rc = deliver(l, e);
	}
	pthread_mutex_unlock(&l->lock);
	return rc;
}

/* A listing must move forward: S3 returns keys in order, so a page whose
 * first key is not past the last key of the page before, or too many empty
 * truncated pages in a row, is a server going round in circles (two
 * continuation tokens naming each other) and would list forever. Keeps
 * the page's last key in *last. */
static int check_advance(struct lister *l, const struct pfs_s3list *p, unsigned page,
			 char **last, unsigned *empty)
{
	size_t n = pfs_s3list_count(p);
	if (n == 0) {
		if (pfs_s3list_truncated(p) && ++*empty > EMPTY_PAGES_MAX) {
			pfs_err("%s: listing page %u: %u truncated pages in a row without a "
				"key; the server's continuation tokens go round in circles",
				l->s->base.name, page, *empty);
			return -EIO;
		}
		return 0;
	}
	*empty = 0;
	const char *first = pfs_s3list_get(p, 0)->key;
	if (*last && strcmp(first, *last) <= 0) {
		pfs_err("%s: listing page %u does not move forward ('%.200s' after "
			"'%.200s'); the server's continuation tokens go round in circles",
			l->s->base.name, page, first, *last);
		return -EIO;
	}
	char *k = strdup(pfs_s3list_get(p, n - 1)->key);
	if (!k)
		return -ENOMEM;
	free(*last);
	*last = k;
	return 0;
}

/* Lists the keys k with after < k <= upto (NULL: unbounded), page by page. */
static int list_range(struct lister *l, const char *after, const char *upto)
{
	struct pfs_s3list *p = NULL;
	char *token = NULL, *last = NULL;
	unsigned page = 0, empty = 0;
	int rc, past = 0;

	do {
		if ((rc = stopped(l)))
			break;
		/* start-after only on the first page; then the token rules. */
		rc = fetch_page(l, l->s->prefix, NULL, token,
				token ? NULL : after, ++page, &p);
		if (rc)
			break;
		rc = check_advance(l, p, page, &last, &empty);
		if (!rc)
			rc = deliver_page(l, p, upto, &past);
		if (!rc && !past && pfs_s3list_truncated(p)) {
			const char *next = pfs_s3list_next_token(p);

			if (!next || (token && !strcmp(next, token))) {
				pfs_err("%s: listing page %u is truncated "
					"without a new continuation token",
					l->s->base.name, page);
				rc = -EIO;
			} else {
				free(token);
				if (!(token = strdup(next)))
					rc = -ENOMEM;
			}
		} else {
			free(token);
			token = NULL;
		}
		pfs_s3list_destroy(p);
		p = NULL;
	} while (!rc && token);
	free(token);
	free(last);
	return rc;
}

static void *worker(void *arg)
{
	struct lister *l = arg;

	for (;;) {
		size_t i;
		int rc;

		pthread_mutex_lock(&l->lock);
		if (l->err || l->rnext >= l->nbounds + 1) {
			pthread_mutex_unlock(&l->lock);
			break;
		}
		i = l->rnext++;
		pthread_mutex_unlock(&l->lock);
		/* Range i is (bounds[i-1], bounds[i]]; range 0 starts after
		 * the first page. */
		rc = list_range(l, i > 0 ? l->bounds[i - 1] : l->start,
				i < l->nbounds ? l->bounds[i] : NULL);
		if (rc) {
			pthread_mutex_lock(&l->lock);
			if (!l->err)
				l->err = rc;
			pthread_mutex_unlock(&l->lock);
		}
	}
	return NULL;
}

/* Keeps the page's CommonPrefixes after l->start as hints; *usable counts
 * them. */
static int add_hints(struct lister *l, const struct pfs_s3list *p,
		     size_t *usable)
{
	for (size_t i = 0; i < pfs_s3list_prefix_count(p); i++) {
		const char *h = pfs_s3list_prefix(p, i);

		if (l->start && strcmp(h, l->start) <= 0)
			continue; /* listed already: no use as a bound */
		if (l->nhints == l->hints_cap) {
			size_t cap = l->hints_cap ? l->hints_cap * 2 : 64;
			char **n = realloc(l->hints, cap * sizeof(*n));

			if (!n)
				return -ENOMEM;
			l->hints = n;
			l->hints_cap = cap;
		}
		if (!(l->hints[l->nhints] = strdup(h)))
			return -ENOMEM;
		l->nhints++;
		(*usable)++;
	}
	return 0;
}

/* Collects CommonPrefixes as range hints: those of PREFIX, then, while
 * fewer than `want`, those of the directory one level deeper that holds
 * l->start. A directory the server leaves out of CommonPrefixes is still
 * descended into, since the way down is read from a key, not a prefix. */
static int gather_hints(struct lister *l, size_t want)
{
	char *dir = strdup(l->s->prefix);
	size_t usable = 0;
	int rc = 0;

	if (!dir)
		return -ENOMEM;
	for (unsigned level = 0; level < HINT_LEVELS; level++) {
		struct pfs_s3list *p = NULL;
		size_t sub;

		rc = fetch_page(l, dir, "/", NULL, l->start, 0, &p);
		if (rc)
			break;
		rc = add_hints(l, p, &usable);
		pfs_s3list_destroy(p);
		if (rc || usable >= want || !l->start)
			break;
		sub = pfs_s3list_subdir(dir, l->start);
		if (!sub)
			break; /* l->start sits in dir itself */
		free(dir);
		if (!(dir = strndup(l->start, sub))) {
			rc = -ENOMEM;
			break;
		}
	}
	free(dir);
	return rc;
}

/* Lists what follows the first (truncated) flat page, in key ranges cut
 * by the hints, on up to list_threads threads. */
static int list_rest(struct lister *l, const struct pfs_s3list *first)
{
	struct s3_origin *s = l->s;
	size_t n = pfs_s3list_count(first), nranges = s->list_threads > 1 ?
		(size_t)s->list_threads * RANGES_PER_THREAD : 1;
	pthread_t tids[S3_LIST_THREADS_MAX];
	int nthreads = 0, rc;

	if (n && !(l->start = strdup(pfs_s3list_get(first, n - 1)->key)))
		return -ENOMEM;
	if (nranges > 1) {
		rc = gather_hints(l, nranges - 1);
		if (rc)
			return rc;
		l->bounds = calloc(nranges - 1, sizeof(*l->bounds));
		if (!l->bounds)
			return -ENOMEM;
		l->nbounds = pfs_s3list_pick_bounds((const char **)l->hints,
						    l->nhints, l->start,
						    nranges - 1, l->bounds);
	}
	for (; nthreads + 1 < s->list_threads &&
	       (size_t)nthreads + 1 < l->nbounds + 1; nthreads++) {
		if (pthread_create(&tids[nthreads], NULL, worker, l))
			break; /* run with fewer; this thread works too */
	}
	worker(l);
	for (int i = 0; i < nthreads; i++)
		pthread_join(tids[i], NULL);
	pfs_debug("%s: listed %zu key ranges after the first page with %d "
		  "threads (%zu hints)", s->base.name, l->nbounds + 1,
		  nthreads + 1, l->nhints);
	return l->err;
}

/* Called once the listing is complete, which a flat listing alone can say. */
static int check_found(struct lister *l)
{
	const char *pre = l->s->prefix;

	if (l->delivered)
		return 0;
	if (l->s->allow_empty) {
		pfs_info("%s: no objects under the prefix: mounted empty "
			 "(allow_empty)", l->s->base.name);
		return 0;
	}
	pfs_err("%s: no objects %s%s%s%s; a mistyped prefix? (-o allow_empty "
		"mounts it as an empty directory)", l->s->base.name,
		*pre ? "under the prefix '" : "in the bucket", pre,
		*pre ? "'" : "", l->skipped ? " that can be shown as files" : "");
	return -ENOENT;
}

int s3_list_objects(struct s3_origin *s, pfs_list_fn fn, void *ctx)
{
	struct lister l = {.s = s, .fn = fn, .ctx = ctx};
	struct pfs_s3list *first = NULL;
	int rc, past = 0;

	pthread_mutex_init(&l.lock, NULL);
	rc = fetch_page(&l, s->prefix, NULL, NULL, NULL, 1, &first);
	if (!rc)
		rc = deliver_page(&l, first, NULL, &past);
	if (!rc && pfs_s3list_truncated(first))
		rc = list_rest(&l, first);
	if (!rc)
		rc = check_found(&l);
	if (!rc && l.skipped)
		pfs_warn("%s: skipped %u keys that cannot be shown as files",
			 s->base.name, l.skipped);
	pfs_s3list_destroy(first);
	for (size_t i = 0; i < l.nhints; i++)
		free(l.hints[i]);
	free(l.hints);
	free(l.bounds);
	free(l.start);
	pthread_mutex_destroy(&l.lock);
	return rc;
}
