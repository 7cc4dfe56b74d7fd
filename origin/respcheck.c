/* respcheck.c - see respcheck.h. Moved out of xfer.c unchanged in
 * behaviour; xfer.c keeps the transfers, retries and logging. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "respcheck.h"
#include "retry.h"
#include "validator.h"

void pfs_resp_init(struct pfs_resp *r)
{
	memset(r, 0, sizeof(*r));
	r->retry_after = -1;
	r->content_length = -1;
}

int pfs_resp_header_value(const char *line, size_t n, const char *name, char *out,
			  size_t cap)
{
	size_t nl = strlen(name);
	if (n <= nl || strncasecmp(line, name, nl) || line[nl] != ':')
		return 0;
	const char *v = line + nl + 1;
	const char *end = line + n;
	while (v < end && (*v == ' ' || *v == '\t'))
		v++;
	while (end > v && isspace((unsigned char)end[-1]))
		end--;
	if ((size_t)(end - v) >= cap)
		return -1;
	memcpy(out, v, (size_t)(end - v));
	out[end - v] = '\0';
	return 1;
}

void pfs_resp_header(struct pfs_resp *r, const char *line, size_t n)
{
	char tmp[64];
	/* A new status line (redirect, 100-continue) starts a new header set. */
	if (n > 5 && !strncmp(line, "HTTP/", 5)) {
		/* The line need not be NUL-terminated: the code is read from a
		 * bounded copy of what follows the first space. */
		const char *sp = memchr(line, ' ', n);
		char code[32] = "";
		if (sp) {
			size_t k = (size_t)(line + n - (sp + 1));
			k = k < sizeof(code) - 1 ? k : sizeof(code) - 1;
			memcpy(code, sp + 1, k);
			code[k] = '\0';
		}
		r->status = sp ? strtol(code, NULL, 10) : 0;
		r->content_range[0] = r->etag[0] = r->last_modified[0] = '\0';
		r->etag_bad = 0;
		r->retry_after = -1;
		r->content_length = -1;
	}
	if (pfs_resp_header_value(line, n, "Content-Length", tmp, sizeof(tmp)) > 0) {
		char *end;
		errno = 0;
		unsigned long long v = strtoull(tmp, &end, 10);
		r->content_length = (*end || !tmp[0] || tmp[0] == '-' || errno ||
				     v > INT64_MAX) ? -1 : (int64_t)v;
	}
	if (pfs_resp_header_value(line, n, "Content-Range", r->content_range,
				  sizeof(r->content_range)) < 0)
		r->content_range[0] = '\0';
	if (pfs_resp_header_value(line, n, "ETag", r->etag, sizeof(r->etag)) < 0)
		r->etag_bad = 1;
	if (pfs_resp_header_value(line, n, "Last-Modified", r->last_modified,
				  sizeof(r->last_modified)) < 0)
		r->last_modified[0] = '\0';
	if (pfs_resp_header_value(line, n, "Retry-After", tmp, sizeof(tmp)) > 0)
		r->retry_after = pfs_retry_after_parse(tmp);
}

int pfs_resp_check_range(const struct pfs_resp *r, long status, uint64_t size, uint64_t off,
			 size_t len, size_t got, const char *pinned, char *validator,
			 uint64_t *total)
{
	*total = size;
	int size_known = 1;
	if (status == 206) {
		unsigned long long a, b;
		char tot[32];
		if (sscanf(r->content_range, "bytes %llu-%llu/%31s", &a, &b, tot) != 3)
			return -EAGAIN;
		if (strcmp(tot, "*")) {
			char *end;
			unsigned long long t = strtoull(tot, &end, 10);
			if (*end || !tot[0] || tot[0] == '-')
				return -EAGAIN;
			*total = t;
			if (t != size)
				return -ESTALE;
		} else {
			size_known = 0; /* "bytes a-b/ *": checked below */
		}
		if (a != off || b != off + len - 1)
			return -EAGAIN;
	} else if (status == 200) {
		/* The whole object, whatever was asked (a server that ignores
		 * Range): the caller kept the asked part of it. Its length is
		 * the object's. */
		if (r->content_length >= 0) {
			*total = (uint64_t)r->content_length;
			if (*total != size)
				return -ESTALE;
		} else {
			size_known = 0;
		}
	} else if (status == 416) {
		/* Content-Range "bytes *\/N": the object has N bytes. */
		unsigned long long t;
		if (sscanf(r->content_range, "bytes */%llu", &t) == 1)
			*total = t;
		return -ESTALE;
	} else if (status == 412) {
		return -ESTALE; /* If-Match / If-Unmodified-Since refused */
	} else if (pfs_retry_status(status)) {
		return -EAGAIN;
	} else {
		return pfs_retry_errno(status);
	}
	if (r->etag_bad ||
	    pfs_validator_make(r->etag, r->last_modified, validator, PFS_ETAG_MAX) < 0)
		return -EIO;
	/* Without the object's length (Content-Range total "*", or a 200
	 * without Content-Length) only a validator tells this version from
	 * one of another size: none at all, and nothing can be checked. */
	if (!size_known && !strcmp(validator, PFS_VALIDATOR_NONE))
		return -EIO;
	if (pinned[0] && strcmp(pinned, validator))
		return -ESTALE;
	if (got != len)
		return -EAGAIN; /* short body */
	return 0;
}
