/* validator.c - see validator.h. */
#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "validator.h"

/* Copies an ETag in canonical form: W/ kept, the opaque part quoted.
 * Servers send it bare now and then (abc), or quoted ("abc"). */
static int make_etag(const char *e, char *out, size_t cap)
{
	int weak = 0;
	while (*e == ' ' || *e == '\t')
		e++;
	if (e[0] == 'W' && e[1] == '/') {
		weak = 1;
		e += 2;
	}
	size_t n = strlen(e);
	while (n && (e[n - 1] == ' ' || e[n - 1] == '\t'))
		n--;
	if (n >= 2 && e[0] == '"' && e[n - 1] == '"') {
		e++;
		n -= 2;
	}
	if (n == 0 && !weak)
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)e[i] < 0x20 || e[i] == 0x7f || e[i] == '"')
			return -EINVAL;
	int w = snprintf(out, cap, "%s\"%.*s\"", weak ? "W/" : "", (int)n, e);
	return w < 0 || (size_t)w >= cap ? -EINVAL : 0;
}

int pfs_validator_make(const char *etag, const char *last_modified, char *out, size_t cap)
{
	if (cap < 2)
		return -EINVAL;
	if (etag && etag[0])
		return make_etag(etag, out, cap);
	if (last_modified && last_modified[0]) {
		time_t t = curl_getdate(last_modified, NULL);
		if (t > 0) {
			int w = snprintf(out, cap, "lm:%" PRId64, (int64_t)t);
			return w < 0 || (size_t)w >= cap ? -EINVAL : 0;
		}
	}
	memcpy(out, PFS_VALIDATOR_NONE, sizeof(PFS_VALIDATOR_NONE));
	return 0;
}

int pfs_validator_condition(const char *v, char *out, size_t cap)
{
	int w;
	if (v[0] == '"') {
		w = snprintf(out, cap, "If-Match: %s", v);
	} else if (!strncmp(v, "lm:", 3)) {
		char *end;
		long long s = strtoll(v + 3, &end, 10);
		time_t t = (time_t)s;
		struct tm tm;
		if (*end || s <= 0 || !gmtime_r(&t, &tm))
			return 0;
		char date[64];
		strftime(date, sizeof(date), "%a, %d %b %Y %H:%M:%S GMT", &tm);
		w = snprintf(out, cap, "If-Unmodified-Since: %s", date);
	} else {
		return 0;
	}
	return w < 0 || (size_t)w >= cap ? -ENOSPC : 1;
}

int pfs_validator_valid(const char *v)
{
	char tmp[512];
	if (!strcmp(v, PFS_VALIDATOR_NONE))
		return 1;
	if (!strncmp(v, "lm:", 3)) {
		char *end;
		long long s = strtoll(v + 3, &end, 10);
		return v[3] && !*end && s > 0;
	}
	return (v[0] == '"' || !strncmp(v, "W/\"", 3)) &&
	       make_etag(v, tmp, sizeof(tmp)) == 0 && !strcmp(tmp, v);
}
