/* s3.c - S3-compatible backend: s3://BUCKET[/PREFIX].
 *
 * Design notes:
 * - Credentials come from awscred.c once, at create. They are handed to
 *   xfer (which copies them) and the copies here are zeroed at once; this
 *   backend keeps no secret after pfs_origin_s3_create() returns.
 * - The dataset is described, in this order, by -o manifest= (http(s)://
 *   URL fetched unsigned, s3://BUCKET/KEY fetched signed, else a local
 *   file), by the object PREFIX/prestofs.manifest (404 or 403 falls back),
 *   or by ListObjectsV2. The manifest object is never listed as a file.
 * - Without a manifest, the bucket is listed by s3scan.c (ListObjectsV2 in
 *   parallel by key range; its design notes are at its top).
 * - PRESTOFS_S3_MAX_KEYS (1..1000) sets max-keys per page: a testing knob
 *   to force pagination on small buckets. PRESTOFS_S3_LIST_THREADS (1..64,
 *   default 8) sets the listing threads.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../manifest.h"
#include "../../util/log.h"
#include "awscred.h"
#include "s3_int.h"
#include "s3url.h"

#define MANIFEST_CAP (256u << 20)     /* bytes of a manifest */
#define LIST_THREADS_DEFAULT 8

static int env_int(const char *name, int def, int lo, int hi)
{
	const char *v = getenv(name);
	char *end;
	long n;

	if (!v || !*v)
		return def;
	n = strtol(v, &end, 10);
	if (*end || n < lo || n > hi) {
		pfs_warn("%s=%s ignored: not in %d..%d", name, v, lo, hi);
		return def;
	}
	return (int)n;
}

struct mf_ctx {
	pfs_list_fn fn;
	void *ctx;
};

static int mf_entry(void *ctx, const char *path, int is_dir, uint64_t size,
		    int64_t mtime, const char *etag)
{
	struct mf_ctx *m = ctx;

	if (!is_dir && !strcmp(path, PFS_MANIFEST_NAME))
		return 0;
	return m->fn(m->ctx, path, is_dir, size, mtime, etag);
}

static int read_local(const char *file, char **buf, size_t *len)
{
	struct stat st;
	size_t got = 0;
	int fd, rc = 0;

	fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		rc = -errno;
		goto out_fd;
	}
	if ((uint64_t)st.st_size > MANIFEST_CAP) {
		rc = -EFBIG;
		goto out_fd;
	}
	*buf = malloc((size_t)st.st_size + 1);
	if (!*buf) {
		rc = -ENOMEM;
		goto out_fd;
	}
	while (got < (size_t)st.st_size) {
		ssize_t n = read(fd, *buf + got, (size_t)st.st_size - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			rc = n < 0 ? -errno : -EIO;
			free(*buf);
			*buf = NULL;
			goto out_fd;
		}
		got += (size_t)n;
	}
	(*buf)[got] = '\0';
	*len = got;
out_fd:
	close(fd);
	return rc;
}

/* Fetches the manifest named by -o manifest= into *buf. */
static int fetch_manifest_opt(struct s3_origin *s, char **buf, size_t *len)
{
	const char *m = s->manifest;
	char err[256], *base = NULL, *url = NULL, *bucket = NULL;
	struct pfs_xfer *plain;
	const char *key;
	int rc;

	if (!strncasecmp(m, "http://", 7) || !strncasecmp(m, "https://", 8)) {
		/* Another server: never send it our signature. */
		rc = pfs_xfer_create(&s->plain_opts, &plain);
		if (rc)
			return rc;
		rc = pfs_xfer_get(plain, m, MANIFEST_CAP, buf, len);
		pfs_xfer_destroy(plain);
		return rc;
	}
	if (strncasecmp(m, "s3://", 5) != 0)
		return read_local(m, buf, len);
	key = strchr(m + 5, '/');
	if (!key || !key[1] || !(bucket = strndup(m + 5, (size_t)(key - m - 5))))
		return key && key[1] ? -ENOMEM : -EINVAL;
	rc = pfs_s3url_base(s->endpoint, s->region, bucket, s->path_style,
			    &base, err, sizeof(err));
	if (rc == -EINVAL)
		pfs_err("manifest %s: %s", m, err);
	if (!rc && !(url = pfs_s3url_object(base, key + 1)))
		rc = -ENOMEM;
	if (!rc)
		rc = pfs_xfer_get(s->xfer, url, MANIFEST_CAP, buf, len);
	free(url);
	free(base);
	free(bucket);
	return rc;
}

static int s3_list(struct pfs_origin *o, pfs_list_fn fn, void *ctx)
{
	struct s3_origin *s = (struct s3_origin *)o;
	struct mf_ctx m = {fn, ctx};
	char *buf = NULL, *url = NULL, *key = NULL, err[256];
	const char *where;
	size_t len = 0;
	int rc;

	if (s->manifest) {
		where = s->manifest;
		rc = fetch_manifest_opt(s, &buf, &len);
	} else {
		if (asprintf(&key, "%s%s", s->prefix, PFS_MANIFEST_NAME) < 0)
			return -ENOMEM;
		url = pfs_s3url_object(s->url_base, key);
		free(key);
		if (!url)
			return -ENOMEM;
		where = PFS_MANIFEST_NAME;
		rc = pfs_xfer_get(s->xfer, url, MANIFEST_CAP, &buf, &len);
		free(url);
		if (rc == -ENOENT || rc == -EACCES) {
			pfs_debug("%s: no readable %s (%s): listing", o->name,
				  PFS_MANIFEST_NAME, strerror(-rc));
			return s3_list_objects(s, fn, ctx);
		}
	}
	if (rc) {
		pfs_err("%s: manifest %s: %s", o->name, where, strerror(-rc));
		return rc;
	}
	rc = pfs_manifest_parse(buf, len, mf_entry, &m, err, sizeof(err));
	if (rc == -EINVAL)
		pfs_err("%s: manifest %s: %s", o->name, where, err);
	free(buf);
	return rc;
}

static int s3_read(struct pfs_origin *o, const char *path, uint64_t size,
		   uint64_t off, size_t len, void *buf, char *etag,
		   const struct pfs_origin_req *req)
{
	struct s3_origin *s = (struct s3_origin *)o;
	char *key, *url;
	int rc;

	if (asprintf(&key, "%s%s", s->prefix, path) < 0)
		return -ENOMEM;
	url = pfs_s3url_object(s->url_base, key);
	free(key);
	if (!url)
		return -ENOMEM;
	rc = pfs_xfer_get_range(s->xfer, url, size, off, len, buf, etag, req->spill,
				req->deadline_ns);
	free(url);
	return rc;
}

static void s3_destroy(struct pfs_origin *o)
{
	struct s3_origin *s = (struct s3_origin *)o;

	pfs_xfer_destroy(s->xfer);
	free(s->url_base);
	free(s->prefix);
	free(s->manifest);
	free(s->endpoint);
	free(s->region);
	free(s);
}

static const struct pfs_origin_ops s3_ops = {
	.list = s3_list,
	.read = s3_read,
	.destroy = s3_destroy,
};

static int make_xfer(struct s3_origin *s, const struct pfs_awscred *cred)
{
	struct pfs_xfer_opts xo = s->plain_opts;
	char *sigv4 = NULL, *userpwd = NULL;
	int rc;

	if (!pfs_awscred_anonymous(cred)) {
		if (asprintf(&sigv4, "aws:amz:%s:s3", s->region) < 0)
			return -ENOMEM;
		if (asprintf(&userpwd, "%s:%s", pfs_awscred_access_key(cred),
			     pfs_awscred_secret_key(cred)) < 0) {
			free(sigv4);
			return -ENOMEM;
		}
		xo.sigv4 = sigv4;
		xo.userpwd = userpwd;
		xo.session_token = pfs_awscred_session_token(cred);
	}
	rc = pfs_xfer_create(&xo, &s->xfer);
	if (userpwd) {
		explicit_bzero(userpwd, strlen(userpwd));
		free(userpwd);
	}
	free(sigv4);
	return rc;
}

int pfs_origin_s3_create(const char *url, const struct pfs_origin_opts *opts,
			 struct pfs_origin **out)
{
	struct pfs_awscred *cred = NULL;
	struct s3_origin *s;
	char err[512], *bucket = NULL;
	int rc;

	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->base.ops = &s3_ops;
	s->plain_opts.timeout = opts ? opts->timeout : 0;
	s->plain_opts.retries = opts ? opts->retries : 0;
	s->plain_opts.bandwidth = opts ? opts->bandwidth : 0;
	s->plain_opts.stop = &s->base.stopping;
	s->path_style = opts && opts->s3_path_style;
	s->region = strdup(opts && opts->region ? opts->region : "us-east-1");
	s->endpoint = opts && opts->endpoint ? strdup(opts->endpoint) : NULL;
	s->manifest = opts && opts->manifest ? strdup(opts->manifest) : NULL;
	if (!s->region || (opts && opts->endpoint && !s->endpoint) ||
	    (opts && opts->manifest && !s->manifest)) {
		rc = -ENOMEM;
		goto fail;
	}
	s->max_keys = env_int("PRESTOFS_S3_MAX_KEYS", 0, 1, 1000);
	s->list_threads = env_int("PRESTOFS_S3_LIST_THREADS",
				  LIST_THREADS_DEFAULT, 1, S3_LIST_THREADS_MAX);
	s->allow_empty = opts && opts->allow_empty;

	rc = pfs_s3url_parse(url, &bucket, &s->prefix, err, sizeof(err));
	if (!rc)
		rc = pfs_s3url_base(s->endpoint, s->region, bucket,
				    s->path_style, &s->url_base, err,
				    sizeof(err));
	if (rc == -EINVAL)
		pfs_err("origin %s: %s", url, err);
	if (rc)
		goto fail;
	if (asprintf(&s->base.name, "s3://%s/%s (%s)", bucket, s->prefix,
		     s->url_base) < 0) {
		s->base.name = NULL;
		rc = -ENOMEM;
		goto fail;
	}

	struct pfs_awscred_opts co = {.profile = opts ? opts->aws_profile : NULL,
				      .credentials_file = opts ? opts->aws_credentials_file : NULL};
	rc = pfs_awscred_load(&co, NULL, &cred, err, sizeof(err));
	if (rc) {
		pfs_err("%s: AWS credentials: %s", s->base.name, err);
		goto fail;
	}
	pfs_info("%s: credentials from %s", s->base.name,
		 pfs_awscred_source(cred));
	rc = make_xfer(s, cred);
	pfs_awscred_destroy(cred);
	if (rc)
		goto fail;
	free(bucket);
	*out = &s->base;
	return 0;
fail:
	free(bucket);
	free(s->base.name);
	s3_destroy(&s->base);
	return rc;
}
