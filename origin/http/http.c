/* http.c - the HTTP(S) backend: any web server publishing a directory.
 *
 * ORIGIN is http[s]://[user:pass@]host[:port]/prefix[/], always taken as
 * a directory (a missing final '/' is added). Object URLs are the base plus
 * the percent-encoded path (pfs_url_escape(path, 1)); reads are plain
 * range GETs through xfer.
 *
 * Listing, in order of preference:
 *   1. -o manifest=URL|PATH: that manifest; any failure fails the mount.
 *   2. BASE/prestofs.manifest. 404 (or 403, as S3 website hosting answers
 *      for a missing key), or a 200 body without the manifest magic (a
 *      catch-all HTML page), falls through to 3; other errors fail.
 *   3. A crawl of the HTML directory index (nginx/Apache autoindex...):
 *      one GET per directory, never a request per file at mount time,
 *      except where the index gives no exact size (Apache's "1.2K",
 *      nginx's autoindex_exact_size off, python's bare lists): those files
 *      get a HEAD each. The issue allows resolving sizes lazily; we do it
 *      at mount, before the listing returns, because the FUSE layer needs
 *      exact sizes for getattr/readdir and a size that changed after the
 *      first stat would confuse every reader. The cost is hidden by
 *      running directory GETs and HEADs on one pool of CRAWL_THREADS
 *      threads sharing xfer's connection cache.
 *      A HEAD that still fails after xfer's retries (no Content-Length,
 *      an error, 404 for a file the index listed) leaves that one file
 *      out, with a warning naming it and the listing.skipped counter: a
 *      file of unknown size cannot be served, and one bad file must not
 *      keep a dataset offline. When more than half of the HEADs fail, the
 *      crawl fails instead (checked once SKIP_EARLY files were skipped,
 *      and at the end): that is a server without usable HEAD answers or
 *      an origin going down, and a listing missing most of its files must
 *      not be mounted (nor saved in the SSD tier over a good one).
 *
 * Limits: an index page is at most PAGE_CAP bytes, a manifest
 * MANIFEST_CAP, a listing MAX_ENTRIES entries, directories MAX_DEPTH deep
 * (server-side symlink loops end there). Dates in index pages are read as
 * UTC; a HEAD's Last-Modified replaces them. If the server redirects a
 * directory page, its links are still resolved against the URL we asked
 * for. The name (pfs_origin_name) is the base URL without userinfo; our
 * log messages use it, never the URL holding credentials.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "htmlindex.h"
#include "../backend.h"
#include "../manifest.h"
#include "../xfer.h"
#include "../../util/log.h"
#include "../../catalog/listing.h"

#define PAGE_CAP ((size_t)64 << 20)
#define MANIFEST_CAP ((size_t)1 << 30)
#define MAX_ENTRIES ((size_t)10 * 1000 * 1000)
#define MAX_DEPTH 128
#define CRAWL_THREADS 32
#define SKIP_EARLY 64

struct http_origin {
	struct pfs_origin base;
	struct pfs_xfer *x;
	char *url;      /* base URL ending in '/', userinfo kept for curl */
	char *manifest; /* -o manifest=, or NULL */
};

/* --- URLs ------------------------------------------------------------- */

/* Checks the origin URL; returns a new copy ending in '/', or NULL after
 * logging (the message names only the secret-free part). */
static char *base_url(const char *url, const char *safe)
{
	const char *auth = strstr(url, "://") + 3;
	size_t hl = strcspn(auth, "/");
	const char *at = memrchr(auth, '@', hl);
	size_t n = strlen(url);

	if ((at ? (size_t)(auth + hl - at - 1) : hl) == 0) {
		pfs_err("%s: no host in the origin URL", safe);
		return NULL;
	}
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)url[i];
		if (c <= 0x20 || c == 0x7f || c == '?' || c == '#') {
			pfs_err("%s: origin URL must not contain spaces, control "
				"characters, a query or a fragment (percent-encode "
				"them)", safe);
			return NULL;
		}
	}
	char *b = malloc(n + 2);
	if (!b)
		return NULL;
	memcpy(b, url, n + 1);
	if (b[n - 1] != '/')
		strcpy(b + n, "/");
	return b;
}

/* The URL with any "user:pass@", query and fragment removed, ending in
 * '/' (for a directory) or as given (dir = 0). New string or NULL. */
static char *safe_name(const char *url, int dir)
{
	const char *auth = strstr(url, "://") + 3;
	size_t hl = strcspn(auth, "/?#");
	const char *at = memrchr(auth, '@', hl);
	const char *host = at ? at + 1 : auth;
	size_t pre = (size_t)(auth - url), rest = strcspn(host, "?#");
	char *s = malloc(pre + rest + 2);

	if (!s)
		return NULL;
	memcpy(s, url, pre);
	memcpy(s + pre, host, rest);
	s[pre + rest] = '\0';
	if (dir && (rest == 0 || host[rest - 1] != '/'))
		strcat(s, "/");
	return s;
}

/* base + escaped path + suffix ("" or "/"). New string or NULL. */
static char *object_url(const struct http_origin *ho, const char *path,
			const char *suffix)
{
	char *esc = pfs_url_escape(path, 1), *u = NULL;

	if (esc && asprintf(&u, "%s%s%s", ho->url, esc, suffix) < 0)
		u = NULL;
	free(esc);
	return u;
}

/* --- manifest ----------------------------------------------------------- */

static int read_local(const char *file, size_t cap, char **buf, size_t *len)
{
	FILE *f = fopen(file, "rb");
	size_t n = 0, bcap = 1 << 16;
	char *b = NULL;
	int rc = 0;

	if (!f)
		return -errno;
	for (;;) {
		if (n + 1 >= bcap || !b) {
			char *nb = realloc(b, bcap *= 2);
			if (!nb) {
				rc = -ENOMEM;
				goto err_buf;
			}
			b = nb;
		}
		size_t r = fread(b + n, 1, bcap - n - 1, f);
		n += r;
		if (n > cap) {
			rc = -EFBIG;
			goto err_buf;
		}
		if (r == 0)
			break;
	}
	if (ferror(f)) {
		rc = -EIO;
		goto err_buf;
	}
	fclose(f);
	b[n] = '\0';
	*buf = b;
	*len = n;
	return 0;

err_buf:
	free(b);
	fclose(f);
	return rc;
}

/* Returns 0 after listing from a manifest, -ENOENT when the default one is
 * absent (crawl instead), or another error after logging. */
static int list_manifest(struct http_origin *ho, pfs_list_fn fn, void *ctx)
{
	const char *where = ho->manifest;
	char *url = NULL, *buf = NULL, *shown = NULL, err[256] = "";
	size_t len;
	int rc;

	if (!where) {
		if (asprintf(&url, "%s%s", ho->url, PFS_MANIFEST_NAME) < 0)
			return -ENOMEM;
		rc = pfs_xfer_get(ho->x, url, MANIFEST_CAP, &buf, &len);
		free(url);
		if (rc == -ENOENT || rc == -EACCES) {
			pfs_info("%s: no %s (%s), crawling the directory index",
				 ho->base.name, PFS_MANIFEST_NAME, strerror(-rc));
			return -ENOENT;
		}
		if (rc == 0 && strncmp(buf, PFS_MANIFEST_MAGIC,
				       strlen(PFS_MANIFEST_MAGIC)) != 0) {
			pfs_warn("%s%s is not a prestofs manifest, ignored",
				 ho->base.name, PFS_MANIFEST_NAME);
			free(buf);
			return -ENOENT;
		}
		where = PFS_MANIFEST_NAME;
	} else if (!strncasecmp(where, "http://", 7) ||
		   !strncasecmp(where, "https://", 8)) {
		rc = pfs_xfer_get(ho->x, where, MANIFEST_CAP, &buf, &len);
		if (!(where = shown = safe_name(where, 0))) /* no credentials */
			where = "manifest URL";
	} else if (strstr(where, "://")) {
		pfs_err("-o manifest: only http(s) URLs or local paths");
		return -EINVAL;
	} else {
		rc = read_local(where, MANIFEST_CAP, &buf, &len);
	}
	if (rc < 0) {
		pfs_err("%s: %s: %s", ho->base.name, where,
			rc == -EFBIG ? "larger than 1 GiB" : strerror(-rc));
		rc = rc == -ENOENT ? -EIO : rc; /* -ENOENT means "crawl" here */
		goto out;
	}
	rc = pfs_manifest_parse(buf, len, fn, ctx, err, sizeof(err));
	if (rc < 0 && err[0])
		pfs_err("%s: %s: %s", ho->base.name, where, err);
	free(buf);
	if (rc == -ENOENT)
		rc = -EIO;
out:
	free(shown);
	return rc;
}

/* --- crawl ------------------------------------------------------------------- */

struct ent {
	char *path;   /* relative, valid (pfs_path_valid) */
	char *etag;   /* from HEAD, or NULL */
	uint64_t size;
	int64_t mtime;
	int is_dir;
	int depth;    /* components in path */
	int gone;     /* no usable HEAD answer (or vanished): not listed */
};

#define ROOT_JOB ((size_t)-1)

struct crawl {
	struct http_origin *ho;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct ent *ents;    /* guarded by lock (strings immutable once set) */
	size_t n, cap;       /* guarded by lock */
	size_t *jobs;        /* pending: entry indices or ROOT_JOB; guarded */
	size_t njobs, jcap;  /* guarded by lock */
	size_t busy;         /* workers inside a job; guarded */
	size_t pages, heads; /* counts for the log; guarded */
	size_t skipped;      /* files left out (HEAD failed); guarded */
	int too_many;        /* most HEADs failed: the crawl fails; guarded */
	int err;             /* first error; guarded */
};

/* Called with c->lock held. */
static int push_job(struct crawl *c, size_t job)
{
	if (c->njobs == c->jcap) {
		size_t cap = c->jcap ? c->jcap * 2 : 256;
		size_t *j = realloc(c->jobs, cap * sizeof(*j));
		if (!j)
			return -ENOMEM;
		c->jobs = j;
		c->jcap = cap;
	}
	c->jobs[c->njobs++] = job;
	return 0;
}

/* Called with c->lock held. Adds dir/name from an index page. */
static int add_entry(struct crawl *c, const char *dir, int depth,
		     const struct pfs_htmlindex_entry *e)
{
	struct ent *en;
	char *path;

	if (depth == 0 && strcmp(e->name, PFS_MANIFEST_NAME) == 0)
		return 0; /* metadata, not data (as the file backend) */
	if (asprintf(&path, "%s%s%s", dir, *dir ? "/" : "", e->name) < 0)
		return -ENOMEM;
	if (!pfs_path_valid(path)) {
		char shown[301];
		size_t i = 0;
		for (; path[i] && i < sizeof(shown) - 1; i++) /* no raw controls */
			shown[i] = (unsigned char)path[i] < 0x20 ? '?' : path[i];
		shown[i] = '\0';
		pfs_warn("%s: skipping '%s': not a valid dataset path",
			 c->ho->base.name, shown);
		free(path);
		return 0;
	}
	if (c->n >= MAX_ENTRIES) {
		pfs_err("%s: more than %zu entries", c->ho->base.name, MAX_ENTRIES);
		free(path);
		return -E2BIG;
	}
	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 256;
		struct ent *v = realloc(c->ents, cap * sizeof(*v));
		if (!v) {
			free(path);
			return -ENOMEM;
		}
		c->ents = v;
		c->cap = cap;
	}
	en = &c->ents[c->n];
	*en = (struct ent){.path = path, .size = e->size, .mtime = e->mtime,
			   .is_dir = e->is_dir, .depth = depth + 1};
	c->n++;
	if (e->is_dir) {
		if (depth + 1 >= MAX_DEPTH) {
			pfs_warn("%s: '%.300s' is deeper than %d levels, not listed",
				 c->ho->base.name, path, MAX_DEPTH);
			return 0;
		}
		return push_job(c, c->n - 1);
	}
	if (e->size_kind != PFS_HTMLINDEX_SIZE_EXACT)
		return push_job(c, c->n - 1);
	return 0;
}

/* One GET of a directory page; adds its entries. No lock held on entry. */
static int crawl_dir(struct crawl *c, const char *dir, int depth)
{
	struct http_origin *ho = c->ho;
	struct pfs_htmlindex_entry *v = NULL;
	size_t n = 0, len;
	char *url, *page = NULL;
	int rc;

	url = *dir ? object_url(ho, dir, "/") : strdup(ho->url);
	if (!url)
		return -ENOMEM;
	rc = pfs_xfer_get(ho->x, url, PAGE_CAP, &page, &len);
	if (rc == 0) {
		rc = pfs_htmlindex_parse(page, len, url, MAX_ENTRIES, &v, &n);
		free(page);
	}
	free(url);
	if (rc == -ENOENT && *dir) {
		pfs_warn("%s%s/: vanished during the crawl, skipped",
			 ho->base.name, dir);
		return 0;
	}
	if (rc < 0) {
		pfs_err("%s%s%s: cannot read the directory index: %s%s",
			ho->base.name, dir, *dir ? "/" : "",
			rc == -EFBIG ? "page larger than 64 MiB" : strerror(-rc),
			*dir ? "" : " (and there is no " PFS_MANIFEST_NAME ")");
		return rc;
	}
	if (n == 0 && !*dir)
		pfs_warn("%s: the directory index lists no entries", ho->base.name);

	pthread_mutex_lock(&c->lock);
	c->pages++;
	for (size_t i = 0; i < n && rc == 0; i++)
		rc = add_entry(c, dir, depth, &v[i]);
	pthread_mutex_unlock(&c->lock);
	pfs_htmlindex_free(v, n);
	return rc;
}

/* 1 if the skipped files are too many for a partial listing (see the
 * top of this file). Called with c->lock held. */
static int too_many_skips(const struct crawl *c)
{
	return c->skipped * 2 > c->heads;
}

/* One HEAD for a file whose index gave no exact size. A failure other than
 * ENOMEM leaves the file out (see the top of this file). */
static int crawl_head(struct crawl *c, size_t idx, const char *path)
{
	struct http_origin *ho = c->ho;
	char etag[PFS_ETAG_MAX] = "", *url = object_url(ho, path, "");
	uint64_t size;
	int64_t mtime;
	int rc;

	if (!url)
		return -ENOMEM;
	rc = pfs_xfer_head(ho->x, url, &size, &mtime, etag);
	free(url);
	if (rc < 0 && rc != -ENOMEM) {
		char key[512];
		snprintf(key, sizeof(key), "listing-skip:%s%s", ho->base.name, path);
		if (rc == -ENOENT)
			pfs_log_limited(PFS_LOG_WARN, key, "%s%.300s: listed in the index "
					"but HEAD answers 404: left out of the mount",
					ho->base.name, path);
		else
			pfs_log_limited(PFS_LOG_WARN, key, "%s%.300s: HEAD gave no usable "
					"size (%s): left out of the mount", ho->base.name,
					path, strerror(-rc));
	}
	pthread_mutex_lock(&c->lock);
	c->heads++;
	struct ent *e = &c->ents[idx];
	if (rc == 0) {
		e->size = size;
		if (mtime >= 0)
			e->mtime = mtime;
		if (etag[0] && !(e->etag = strdup(etag)))
			rc = -ENOMEM;
	} else if (rc != -ENOMEM) {
		e->gone = 1;
		c->skipped++;
		rc = 0;
		if (c->skipped >= SKIP_EARLY && too_many_skips(c)) {
			c->too_many = 1; /* stop now rather than HEAD them all */
			rc = -EIO;
		}
	}
	pthread_mutex_unlock(&c->lock);
	return rc;
}

static void *crawl_worker(void *arg)
{
	struct crawl *c = arg;

	pthread_mutex_lock(&c->lock);
	for (;;) {
		while (c->njobs == 0 && c->busy > 0 && !c->err)
			pthread_cond_wait(&c->cond, &c->lock);
		if (c->err || (c->njobs == 0 && c->busy == 0))
			break;
		size_t job = c->jobs[--c->njobs];
		/* Copy what the job needs: ents may move while unlocked, but
		 * a path string lives until the crawl ends. */
		const char *path = job == ROOT_JOB ? "" : c->ents[job].path;
		int is_dir = job == ROOT_JOB || c->ents[job].is_dir;
		int depth = job == ROOT_JOB ? 0 : c->ents[job].depth;
		c->busy++;
		pthread_mutex_unlock(&c->lock);

		int rc = is_dir ? crawl_dir(c, path, depth)
				: crawl_head(c, job, path);

		pthread_mutex_lock(&c->lock);
		c->busy--;
		if (rc < 0 && !c->err)
			c->err = rc;
		pthread_cond_broadcast(&c->cond);
	}
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

/* By path, a directory before a file of the same path: the listing's
 * order (and so the inode numbers) does not depend on the threads' timing. */
static int cmp_ent(const void *a, const void *b)
{
	const struct ent *x = a, *y = b;
	int c = strcmp(x->path, y->path);
	return c ? c : y->is_dir - x->is_dir;
}

static int list_crawl(struct http_origin *ho, pfs_list_fn fn, void *ctx)
{
	struct crawl c = {.ho = ho};
	pthread_t tid[CRAWL_THREADS - 1];
	size_t nt = 0;
	int rc;

	if (pthread_mutex_init(&c.lock, NULL) != 0)
		return -ENOMEM;
	if (pthread_cond_init(&c.cond, NULL) != 0) {
		rc = -ENOMEM;
		goto out_mutex;
	}
	rc = push_job(&c, ROOT_JOB);
	if (rc < 0)
		goto out_cond;
	/* The calling thread works too, so a failed pthread_create only
	 * means less parallelism. */
	for (; nt < CRAWL_THREADS - 1; nt++)
		if (pthread_create(&tid[nt], NULL, crawl_worker, &c) != 0)
			break;
	crawl_worker(&c);
	for (size_t i = 0; i < nt; i++)
		pthread_join(tid[i], NULL);
	rc = c.err;
	if (c.too_many || (rc == 0 && too_many_skips(&c))) {
		pfs_err("%s: %zu of %zu HEAD requests gave no usable size: not "
			"mounting a listing missing that much (does the server "
			"answer HEAD with a Content-Length?)", ho->base.name,
			c.skipped, c.heads);
		rc = -EIO;
	}
	if (rc < 0)
		goto out_ents;
	pfs_listing_note_skipped(c.skipped);

	size_t listed = 0;
	for (size_t i = 0; i < c.n; i++)
		listed += !c.ents[i].gone;
	pfs_info("%s: %zu entries from %zu index pages and %zu HEAD requests",
		 ho->base.name, listed, c.pages, c.heads);
	if (c.skipped)
		pfs_warn("%s: %zu listed file%s left out: no usable size (see "
			 "listing.skipped)", ho->base.name, c.skipped,
			 c.skipped == 1 ? "" : "s");
	/* A page may link a name both as a file and as a directory ("x" and
	 * "x/": an index generated from an object store holding both): the
	 * file table keeps the directory and leaves the file out, as for
	 * every listing (catalog/ftable.h). */
	qsort(c.ents, c.n, sizeof(*c.ents), cmp_ent);
	for (size_t i = 0; i < c.n && rc == 0; i++) {
		const struct ent *e = &c.ents[i];
		if (e->gone)
			continue;
		rc = fn(ctx, e->path, e->is_dir, e->is_dir ? 0 : e->size, e->mtime, e->etag);
	}

out_ents:
	for (size_t i = 0; i < c.n; i++) {
		free(c.ents[i].path);
		free(c.ents[i].etag);
	}
	free(c.ents);
	free(c.jobs);
out_cond:
	pthread_cond_destroy(&c.cond);
out_mutex:
	pthread_mutex_destroy(&c.lock);
	return rc;
}

/* --- ops ---------------------------------------------------------------------- */

static int http_list(struct pfs_origin *o, pfs_list_fn fn, void *ctx)
{
	struct http_origin *ho = (struct http_origin *)o;
	int rc = list_manifest(ho, fn, ctx);

	if (rc != -ENOENT)
		return rc;
	return list_crawl(ho, fn, ctx);
}

static int http_read(struct pfs_origin *o, const char *path, uint64_t size,
		     uint64_t off, size_t len, void *buf, char *etag,
		     const struct pfs_origin_req *req)
{
	struct http_origin *ho = (struct http_origin *)o;
	char *url = object_url(ho, path, "");
	int rc;

	if (!url)
		return -ENOMEM;
	rc = pfs_xfer_get_range(ho->x, url, size, off, len, buf, etag, req->spill,
				req->deadline_ns);
	free(url);
	return rc;
}

static void http_destroy(struct pfs_origin *o)
{
	struct http_origin *ho = (struct http_origin *)o;

	pfs_xfer_destroy(ho->x);
	free(ho->url);
	free(ho->manifest);
	free(ho);
}

static const struct pfs_origin_ops http_ops = {
	.list = http_list,
	.read = http_read,
	.destroy = http_destroy,
};

int pfs_origin_http_create(const char *url, const struct pfs_origin_opts *opts,
			   struct pfs_origin **out)
{
	struct pfs_xfer_opts xo = {.timeout = opts->timeout, .retries = opts->retries,
				   .bandwidth = opts->bandwidth};
	struct http_origin *ho;
	int rc = -ENOMEM;

	*out = NULL;
	if (!strstr(url, "://"))
		return -EINVAL;
	ho = calloc(1, sizeof(*ho));
	if (!ho)
		return -ENOMEM;
	ho->base.ops = &http_ops;
	ho->base.name = safe_name(url, 1);
	if (!ho->base.name)
		goto err_ho;
	ho->url = base_url(url, ho->base.name);
	if (!ho->url) {
		rc = -EINVAL;
		goto err_name;
	}
	if (opts->manifest && !(ho->manifest = strdup(opts->manifest)))
		goto err_url;
	xo.stop = &ho->base.stopping;
	rc = pfs_xfer_create(&xo, &ho->x);
	if (rc < 0) {
		pfs_err("%s: cannot set up HTTP transfers: %s", ho->base.name,
			strerror(-rc));
		goto err_manifest;
	}
	*out = &ho->base;
	return 0;

err_manifest:
	free(ho->manifest);
err_url:
	free(ho->url);
err_name:
	free(ho->base.name);
err_ho:
	free(ho);
	return rc;
}
