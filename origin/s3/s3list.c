/* s3list.c - ListObjectsV2 page parser (see s3list.h).
 *
 * Design: a tiny state machine on element depth. Only the elements we use
 * are captured (ListBucketResult/{IsTruncated, NextContinuationToken,
 * EncodingType}, Contents/{Key, Size, LastModified, ETag},
 * CommonPrefixes/Prefix); the text of anything else is dropped unread, so
 * unknown elements (Owner, StorageClass, ChecksumAlgorithm...) cost
 * nothing. Captured text goes into one fixed buffer of
 * PFS_S3LIST_TEXT_MAX bytes; a longer element is an error, not a
 * truncation. Keys are percent-decoded at the end of the page only if the
 * page said <EncodingType>url</EncodingType> (S3 encodes a space as '+').
 * Servers that ignore encoding-type=url (s3rver, some gateways) put raw
 * control bytes of keys into the XML, which XML 1.0 forbids everywhere:
 * each such byte (0x01-0x1f but TAB, LF, CR) is fed to expat as 0x7f, so
 * the page still parses and pfs_path_valid() rejects that one key.
 *
 * The key-range helpers at the end are plain string work on keys already
 * decoded; they keep the listing's arithmetic testable without a server.
 */
#include <errno.h>
#include <expat.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "s3list.h"
#include "../../util/url.h"

enum field {
	F_NONE, F_TRUNC, F_TOKEN, F_ENCTYPE, F_KEY, F_SIZE, F_MTIME, F_ETAG,
	F_PREFIX,
};

enum ctx { C_NONE, C_CONTENTS, C_PREFIXES };

struct ent {
	char *key;
	char *etag;
	uint64_t size;
	int64_t mtime;
};

struct pfs_s3list {
	XML_Parser xp;
	int failed;     /* sticky error */
	int done;       /* final feed succeeded */
	int depth;
	enum ctx ctx;   /* which depth-2 container we are in */
	enum field cap; /* element whose text is being captured */
	size_t tlen;
	char text[PFS_S3LIST_TEXT_MAX + 1];

	struct ent cur; /* Contents being built */
	int cur_has_key;
	int cur_has_size;

	struct pfs_s3list_entry *ents; /* strings owned, freed via ent_free */
	size_t nents, ents_cap;
	char **prefixes;
	size_t nprefixes, prefixes_cap;

	int truncated;
	int url_encoded;
	char *token;
	char err[256];
};

static void fail(struct pfs_s3list *p, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void fail(struct pfs_s3list *p, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (p->failed)
		return;
	p->failed = 1;
	n = snprintf(p->err, sizeof(p->err), "line %lu: ",
		     (unsigned long)XML_GetCurrentLineNumber(p->xp));
	if (n < 0 || (size_t)n >= sizeof(p->err))
		n = 0;
	va_start(ap, fmt);
	vsnprintf(p->err + n, sizeof(p->err) - (size_t)n, fmt, ap);
	va_end(ap);
	XML_StopParser(p->xp, XML_FALSE);
}

static void ent_clear(struct ent *e)
{
	free(e->key);
	free(e->etag);
	memset(e, 0, sizeof(*e));
	e->mtime = -1;
}

static int days_from_civil(int y, int m, int d, int64_t *days)
{
	static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
	int64_t era, yoe, doy, doe;

	if (m < 1 || m > 12 || d < 1 || d > mdays[m - 1] ||
	    (m == 2 && d == 29 && !leap))
		return -EINVAL;
	/* Howard Hinnant's days_from_civil. */
	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	*days = era * 146097 + doe - 719468;
	return 0;
}

static int digits(const char **s, int n, int *out)
{
	int v = 0;

	for (int i = 0; i < n; i++) {
		if ((*s)[i] < '0' || (*s)[i] > '9')
			return -EINVAL;
		v = v * 10 + ((*s)[i] - '0');
	}
	*s += n;
	*out = v;
	return 0;
}

int pfs_s3list_parse_time(const char *s, int64_t *out)
{
	int y, mo, d, h, mi, se, oh = 0, om = 0, sign = 0;
	int64_t days;

	if (digits(&s, 4, &y) || *s++ != '-' || digits(&s, 2, &mo) ||
	    *s++ != '-' || digits(&s, 2, &d) || (*s != 'T' && *s != 't'))
		return -EINVAL;
	s++;
	if (digits(&s, 2, &h) || *s++ != ':' || digits(&s, 2, &mi) ||
	    *s++ != ':' || digits(&s, 2, &se))
		return -EINVAL;
	if (*s == '.') {
		s++;
		if (*s < '0' || *s > '9')
			return -EINVAL;
		while (*s >= '0' && *s <= '9')
			s++;
	}
	if (*s == 'Z' || *s == 'z') {
		s++;
	} else if (*s == '+' || *s == '-') {
		sign = *s++ == '-' ? -1 : 1;
		if (digits(&s, 2, &oh) || *s++ != ':' || digits(&s, 2, &om) ||
		    oh > 23 || om > 59)
			return -EINVAL;
	} else {
		return -EINVAL;
	}
	if (*s != '\0' || h > 23 || mi > 59 || se > 60)
		return -EINVAL;
	if (days_from_civil(y, mo, d, &days))
		return -EINVAL;
	*out = days * 86400 + h * 3600 + mi * 60 + se -
	       sign * (oh * 3600 + om * 60);
	return 0;
}

static int parse_u64(const char *s, uint64_t *out)
{
	uint64_t v = 0;

	if (*s == '\0')
		return -EINVAL;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -EINVAL;
		if (v > (UINT64_MAX - (uint64_t)(*s - '0')) / 10)
			return -EINVAL;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	*out = v;
	return 0;
}

/* In place, as Python's unquote_plus. A decoded NUL becomes 0x7f so the
 * string stays whole and pfs_path_valid() rejects it. */
static void url_decode(char *s)
{
	char *w = s;

	for (const char *r = s; *r; r++) {
		int hi, lo;

		if (*r == '+') {
			*w++ = ' ';
		} else if (*r == '%' && (hi = pfs_url_hexval(r[1])) >= 0 &&
			   (lo = pfs_url_hexval(r[2])) >= 0) {
			char c = (char)(hi * 16 + lo);
			*w++ = c ? c : 0x7f;
			r += 2;
		} else {
			*w++ = *r;
		}
	}
	*w = '\0';
}

static int grow(void **arr, size_t *cap, size_t n, size_t elem)
{
	size_t ncap;
	void *na;

	if (n < *cap)
		return 0;
	ncap = *cap ? *cap * 2 : 64;
	na = realloc(*arr, ncap * elem);
	if (!na)
		return -ENOMEM;
	*arr = na;
	*cap = ncap;
	return 0;
}

static int room(struct pfs_s3list *p)
{
	if (p->nents + p->nprefixes >= PFS_S3LIST_MAX_ENTRIES) {
		fail(p, "more than %d entries in one page",
		     PFS_S3LIST_MAX_ENTRIES);
		return -EINVAL;
	}
	return 0;
}

static void XMLCALL on_start(void *ud, const XML_Char *name,
			     const XML_Char **atts)
{
	struct pfs_s3list *p = ud;

	(void)atts;
	p->depth++;
	p->cap = F_NONE;
	if (p->depth == 1) {
		if (strcmp(name, "ListBucketResult") != 0)
			fail(p, "root element is <%.64s>, not "
				"<ListBucketResult>", name);
	} else if (p->depth == 2) {
		if (!strcmp(name, "Contents")) {
			p->ctx = C_CONTENTS;
			ent_clear(&p->cur);
			p->cur_has_key = p->cur_has_size = 0;
		} else if (!strcmp(name, "CommonPrefixes")) {
			p->ctx = C_PREFIXES;
		} else if (!strcmp(name, "IsTruncated")) {
			p->cap = F_TRUNC;
		} else if (!strcmp(name, "NextContinuationToken")) {
			p->cap = F_TOKEN;
		} else if (!strcmp(name, "EncodingType")) {
			p->cap = F_ENCTYPE;
		}
	} else if (p->depth == 3 && p->ctx == C_CONTENTS) {
		if (!strcmp(name, "Key"))
			p->cap = F_KEY;
		else if (!strcmp(name, "Size"))
			p->cap = F_SIZE;
		else if (!strcmp(name, "LastModified"))
			p->cap = F_MTIME;
		else if (!strcmp(name, "ETag"))
			p->cap = F_ETAG;
	} else if (p->depth == 3 && p->ctx == C_PREFIXES) {
		if (!strcmp(name, "Prefix"))
			p->cap = F_PREFIX;
	}
	p->tlen = 0;
}

static void XMLCALL on_text(void *ud, const XML_Char *s, int len)
{
	struct pfs_s3list *p = ud;

	if (p->cap == F_NONE || len <= 0)
		return;
	if ((size_t)len > PFS_S3LIST_TEXT_MAX - p->tlen) {
		fail(p, "element text longer than %d bytes",
		     PFS_S3LIST_TEXT_MAX);
		return;
	}
	memcpy(p->text + p->tlen, s, (size_t)len);
	p->tlen += (size_t)len;
}

static int dup_text(struct pfs_s3list *p, char **dst)
{
	char *s = strdup(p->text);

	if (!s) {
		fail(p, "out of memory");
		return -ENOMEM;
	}
	free(*dst);
	*dst = s;
	return 0;
}

static void end_field(struct pfs_s3list *p)
{
	p->text[p->tlen] = '\0';
	if (strlen(p->text) != p->tlen) {
		fail(p, "NUL character in element text");
		return;
	}
	switch (p->cap) {
	case F_TRUNC:
		if (!strcmp(p->text, "true"))
			p->truncated = 1;
		else if (!strcmp(p->text, "false"))
			p->truncated = 0;
		else
			fail(p, "IsTruncated is neither true nor false");
		break;
	case F_TOKEN:
		if (p->tlen)
			dup_text(p, &p->token);
		break;
	case F_ENCTYPE:
		p->url_encoded = !strcmp(p->text, "url");
		break;
	case F_KEY:
		if (!dup_text(p, &p->cur.key))
			p->cur_has_key = 1;
		break;
	case F_SIZE:
		if (parse_u64(p->text, &p->cur.size))
			fail(p, "bad Size \"%.32s\"", p->text);
		else
			p->cur_has_size = 1;
		break;
	case F_MTIME:
		if (pfs_s3list_parse_time(p->text, &p->cur.mtime))
			fail(p, "bad LastModified \"%.40s\"", p->text);
		break;
	case F_ETAG:
		dup_text(p, &p->cur.etag);
		break;
	case F_PREFIX:
		if (room(p) || grow((void **)&p->prefixes, &p->prefixes_cap,
				    p->nprefixes, sizeof(char *))) {
			fail(p, "out of memory");
			break;
		}
		p->prefixes[p->nprefixes] = strdup(p->text);
		if (!p->prefixes[p->nprefixes])
			fail(p, "out of memory");
		else
			p->nprefixes++;
		break;
	case F_NONE:
		break;
	}
}

static void end_contents(struct pfs_s3list *p)
{
	if (!p->cur_has_key || !p->cur_has_size) {
		fail(p, "<Contents> without %s",
		     p->cur_has_key ? "<Size>" : "<Key>");
		return;
	}
	if (room(p) || grow((void **)&p->ents, &p->ents_cap, p->nents,
			    sizeof(p->ents[0]))) {
		fail(p, "out of memory");
		return;
	}
	p->ents[p->nents++] = (struct pfs_s3list_entry){
		.key = p->cur.key, .etag = p->cur.etag, /* moved */
		.size = p->cur.size, .mtime = p->cur.mtime,
	};
	memset(&p->cur, 0, sizeof(p->cur));
	p->cur.mtime = -1;
}

static void XMLCALL on_end(void *ud, const XML_Char *name)
{
	struct pfs_s3list *p = ud;

	(void)name;
	if (p->cap != F_NONE) {
		end_field(p);
		p->cap = F_NONE;
	}
	if (p->depth == 2) {
		if (p->ctx == C_CONTENTS)
			end_contents(p);
		p->ctx = C_NONE;
	}
	p->depth--;
}

static void XMLCALL on_doctype(void *ud, const XML_Char *name,
			       const XML_Char *sysid, const XML_Char *pubid,
			       int has_internal)
{
	(void)name; (void)sysid; (void)pubid; (void)has_internal;
	fail(ud, "DOCTYPE not allowed");
}

static void XMLCALL on_entity(void *ud, const XML_Char *name, int is_param,
			      const XML_Char *value, int value_len,
			      const XML_Char *base, const XML_Char *sysid,
			      const XML_Char *pubid, const XML_Char *notation)
{
	(void)name; (void)is_param; (void)value; (void)value_len; (void)base;
	(void)sysid; (void)pubid; (void)notation;
	fail(ud, "entity declarations not allowed");
}

int pfs_s3list_create(struct pfs_s3list **out)
{
	struct pfs_s3list *p = calloc(1, sizeof(*p));

	if (!p)
		return -ENOMEM;
	p->xp = XML_ParserCreate("UTF-8");
	if (!p->xp) {
		free(p);
		return -ENOMEM;
	}
	p->cur.mtime = -1;
	XML_SetUserData(p->xp, p);
	XML_SetElementHandler(p->xp, on_start, on_end);
	XML_SetCharacterDataHandler(p->xp, on_text);
	XML_SetStartDoctypeDeclHandler(p->xp, on_doctype);
	XML_SetEntityDeclHandler(p->xp, on_entity);
	*out = p;
	return 0;
}

void pfs_s3list_destroy(struct pfs_s3list *p)
{
	if (!p)
		return;
	XML_ParserFree(p->xp);
	ent_clear(&p->cur);
	for (size_t i = 0; i < p->nents; i++) {
		free((char *)p->ents[i].key);
		free((char *)p->ents[i].etag);
	}
	free(p->ents);
	for (size_t i = 0; i < p->nprefixes; i++)
		free(p->prefixes[i]);
	free(p->prefixes);
	free(p->token);
	free(p);
}

static int feed(struct pfs_s3list *p, const char *buf, size_t len,
		int final);

static int is_ctl(char c)
{
	return (unsigned char)c < 0x20 && c != '\t' && c != '\n' && c != '\r' &&
	       c != '\0';
}

/* Returns buf itself, or a copy with control bytes replaced (*copy set,
 * to be freed), or NULL on ENOMEM. */
static const char *sanitize(const char *buf, size_t len, char **copy)
{
	size_t i = 0;

	*copy = NULL;
	while (i < len && !is_ctl(buf[i]))
		i++;
	if (i == len)
		return buf;
	*copy = malloc(len);
	if (!*copy)
		return NULL;
	memcpy(*copy, buf, len);
	for (; i < len; i++)
		if (is_ctl((*copy)[i]))
			(*copy)[i] = 0x7f;
	return *copy;
}

int pfs_s3list_feed(struct pfs_s3list *p, const char *buf, size_t len,
		    int final)
{
	char *copy;
	int rc;

	if (p->failed || p->done)
		return feed(p, buf, len, final);
	buf = sanitize(buf, len, &copy);
	if (!buf) {
		snprintf(p->err, sizeof(p->err), "out of memory");
		p->failed = 1;
		return -ENOMEM;
	}
	rc = feed(p, buf, len, final);
	free(copy);
	return rc;
}

static int feed(struct pfs_s3list *p, const char *buf, size_t len, int final)
{
	if (p->failed || p->done) {
		if (!p->failed)
			snprintf(p->err, sizeof(p->err), "fed after the end");
		p->failed = 1;
		return -EINVAL;
	}
	while (len > 0 || final) {
		int chunk = len > (1 << 30) ? (1 << 30) : (int)len;
		int last = final && (size_t)chunk == len;

		if (XML_Parse(p->xp, buf, chunk, last) != XML_STATUS_OK) {
			if (!p->failed) /* not already our own message */
				fail(p, "%s", XML_ErrorString(
						      XML_GetErrorCode(p->xp)));
			p->failed = 1;
			return -EINVAL;
		}
		buf += chunk;
		len -= (size_t)chunk;
		if (last)
			break;
	}
	if (p->failed)
		return -EINVAL;
	if (final) {
		p->done = 1;
		if (p->url_encoded) {
			for (size_t i = 0; i < p->nents; i++)
				url_decode((char *)p->ents[i].key);
			for (size_t i = 0; i < p->nprefixes; i++)
				url_decode(p->prefixes[i]);
		}
	}
	return 0;
}

size_t pfs_s3list_count(const struct pfs_s3list *p)
{
	return p->done ? p->nents : 0;
}

const struct pfs_s3list_entry *pfs_s3list_get(const struct pfs_s3list *p,
					      size_t i)
{
	return p->done && i < p->nents ? &p->ents[i] : NULL;
}

size_t pfs_s3list_prefix_count(const struct pfs_s3list *p)
{
	return p->done ? p->nprefixes : 0;
}

const char *pfs_s3list_prefix(const struct pfs_s3list *p, size_t i)
{
	return p->done && i < p->nprefixes ? p->prefixes[i] : NULL;
}

int pfs_s3list_truncated(const struct pfs_s3list *p)
{
	return p->done && p->truncated;
}

const char *pfs_s3list_next_token(const struct pfs_s3list *p)
{
	return p->done ? p->token : NULL;
}

const char *pfs_s3list_error(const struct pfs_s3list *p)
{
	return p->err;
}

size_t pfs_s3list_subdir(const char *dir, const char *key)
{
	size_t dlen = strlen(dir);
	const char *slash;

	if (strncmp(key, dir, dlen) != 0)
		return 0;
	slash = strchr(key + dlen, '/');
	/* "dir//x" has no name one level down: no progress, no descent. */
	if (!slash || slash == key + dlen)
		return 0;
	return (size_t)(slash - key) + 1;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

size_t pfs_s3list_pick_bounds(const char **hints, size_t n, const char *after,
			      size_t max, const char **out)
{
	size_t u = 0, nr;

	if (!n || !max)
		return 0;
	qsort(hints, n, sizeof(*hints), cmp_str);
	/* Usable hints (> after, distinct) to the front, in order; the
	 * others are swapped behind them, so the caller still owns them all. */
	for (size_t i = 0; i < n; i++) {
		const char *h = hints[i];

		if ((after && strcmp(h, after) <= 0) ||
		    (u && !strcmp(h, hints[u - 1])))
			continue;
		hints[i] = hints[u];
		hints[u++] = h;
	}
	nr = (u < max ? u : max) + 1; /* ranges */
	for (size_t j = 1; j < nr; j++)
		out[j - 1] = hints[j * u / nr];
	return nr - 1;
}
