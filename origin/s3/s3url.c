/* s3url.c - see s3url.h.
 *
 * Listing URLs are BASE?QUERY (no '/' before '?'), as botocore sends
 * them for path style; curl turns "https://bucket.host?q" into "GET /?q".
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "s3url.h"
#include "../manifest.h"
#include "../xfer.h"

static void errf(char *err, size_t cap, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void errf(char *err, size_t cap, const char *fmt, ...)
{
	va_list ap;

	if (!cap)
		return;
	va_start(ap, fmt);
	vsnprintf(err, cap, fmt, ap);
	va_end(ap);
}

static int bucket_char(char c, int dns)
{
	if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
	    c == '.')
		return 1;
	return !dns && ((c >= 'A' && c <= 'Z') || c == '_');
}

int pfs_s3url_parse(const char *url, char **bucket, char **prefix,
		    char *err, size_t errcap)
{
	const char *b, *slash;
	size_t blen;
	char *pre = NULL, *w;

	if (strncasecmp(url, "s3://", 5) != 0) {
		errf(err, errcap, "not an s3:// URL");
		return -EINVAL;
	}
	b = url + 5;
	slash = strchr(b, '/');
	blen = slash ? (size_t)(slash - b) : strlen(b);
	if (blen == 0 || blen > PFS_S3URL_BUCKET_MAX) {
		errf(err, errcap, "bucket name must have 1 to %d characters",
		     PFS_S3URL_BUCKET_MAX);
		return -EINVAL;
	}
	for (size_t i = 0; i < blen; i++) {
		if (!bucket_char(b[i], 0)) {
			errf(err, errcap, "bad character in bucket name");
			return -EINVAL;
		}
	}
	/* Prefix: fold repeated slashes, drop leading/trailing ones, then
	 * add exactly one trailing '/'. */
	pre = malloc(slash ? strlen(slash) + 2 : 1);
	if (!pre)
		return -ENOMEM;
	w = pre;
	for (const char *r = slash ? slash : ""; *r; r++) {
		if (*r == '/' && (w == pre || w[-1] == '/'))
			continue;
		*w++ = *r;
	}
	if (w > pre && w[-1] == '/')
		w--;
	*w = '\0';
	if (*pre && !pfs_path_valid(pre)) {
		errf(err, errcap, "invalid prefix in S3 URL");
		free(pre);
		return -EINVAL;
	}
	if (*pre) {
		*w++ = '/';
		*w = '\0';
	}
	*bucket = strndup(b, blen);
	if (!*bucket) {
		free(pre);
		return -ENOMEM;
	}
	*prefix = pre;
	return 0;
}

int pfs_s3url_base(const char *endpoint, const char *region,
		   const char *bucket, int path_style, char **out,
		   char *err, size_t errcap)
{
	char *def = NULL, *res = NULL;
	const char *host, *scheme_end;
	size_t elen;
	int rc = 0;

	if (!region || !*region)
		region = "us-east-1";
	for (const char *r = region; *r; r++) {
		if (!((*r >= 'a' && *r <= 'z') || (*r >= '0' && *r <= '9') ||
		      *r == '-')) {
			errf(err, errcap, "bad region name");
			return -EINVAL;
		}
	}
	if (!endpoint || !*endpoint) {
		if (asprintf(&def, "https://s3.%s.amazonaws.com", region) < 0)
			return -ENOMEM;
		endpoint = def;
	}
	scheme_end = strstr(endpoint, "://");
	if (!scheme_end || (strncasecmp(endpoint, "http://", 7) != 0 &&
			    strncasecmp(endpoint, "https://", 8) != 0)) {
		errf(err, errcap, "endpoint must start with http:// or https://");
		rc = -EINVAL;
		goto out;
	}
	host = scheme_end + 3;
	if (!*host || *host == '/' || strpbrk(endpoint, "@?# \t\r\n")) {
		errf(err, errcap, "endpoint must be SCHEME://HOST[:PORT][/PATH] "
		     "without user, query or fragment");
		rc = -EINVAL;
		goto out;
	}
	elen = strlen(endpoint);
	while (elen > (size_t)(host - endpoint) && endpoint[elen - 1] == '/')
		elen--;
	if (path_style) {
		if (asprintf(&res, "%.*s/%s", (int)elen, endpoint, bucket) < 0)
			rc = -ENOMEM;
	} else {
		for (const char *r = bucket; *r; r++) {
			if (!bucket_char(*r, 1)) {
				errf(err, errcap, "bucket name is not DNS-safe: "
				     "use -o s3_path_style");
				rc = -EINVAL;
				goto out;
			}
		}
		if (asprintf(&res, "%.*s%s.%.*s", (int)(host - endpoint),
			     endpoint, bucket, (int)(elen - (size_t)(host - endpoint)),
			     host) < 0)
			rc = -ENOMEM;
	}
	if (rc == -ENOMEM)
		res = NULL;
	*out = res;
out:
	free(def);
	return rc;
}

char *pfs_s3url_object(const char *base, const char *key)
{
	char *esc = pfs_url_escape(key, 1), *res;

	if (!esc)
		return NULL;
	if (asprintf(&res, "%s/%s", base, esc) < 0)
		res = NULL;
	free(esc);
	return res;
}

/* Appends "&name=escaped(value)" (without '&' first) to a growing string. */
static int add_param(char **q, const char *name, const char *value)
{
	char *esc = pfs_url_escape(value, 0), *nq;
	int rc;

	if (!esc)
		return -ENOMEM;
	rc = asprintf(&nq, "%s%s%s=%s", *q ? *q : "", *q ? "&" : "", name, esc);
	free(esc);
	if (rc < 0)
		return -ENOMEM;
	free(*q);
	*q = nq;
	return 0;
}

char *pfs_s3url_list(const char *base, const char *prefix, const char *delim,
		     const char *token, const char *start_after, int max_keys)
{
	char *q = NULL, *res = NULL, mk[16];

	/* Sorted by name: SigV4 requires it and curl 7.88 does not sort. */
	if (token && add_param(&q, "continuation-token", token))
		goto out;
	if (delim && add_param(&q, "delimiter", delim))
		goto out;
	if (add_param(&q, "encoding-type", "url") ||
	    add_param(&q, "list-type", "2"))
		goto out;
	snprintf(mk, sizeof(mk), "%d", max_keys);
	if (max_keys > 0 && add_param(&q, "max-keys", mk))
		goto out;
	if (prefix && *prefix && add_param(&q, "prefix", prefix))
		goto out;
	if (start_after && add_param(&q, "start-after", start_after))
		goto out;
	if (asprintf(&res, "%s?%s", base, q) < 0)
		res = NULL;
out:
	free(q);
	return res;
}
