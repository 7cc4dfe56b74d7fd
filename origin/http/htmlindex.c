/* htmlindex.c - parser for HTML directory index pages.
 *
 * Not an HTML parser: a single forward scan for <a ...> tags (comments
 * skipped, attribute quotes honoured), linear in the page size whatever the
 * input. Each href is resolved as RFC 3986 says: entities decoded, then
 * joined with the page URL, dot segments removed, then percent-decoded; it
 * is kept only if the result is the page's directory plus one component
 * (and an optional '/'). Comparing decoded paths makes "sub%20dir/" and
 * "sub dir/" the same place. Any '?' or '#' in an href disqualifies it:
 * a real name holding them is percent-encoded by the server.
 *
 * Size and date come from the text after </a> up to the end of the line
 * (nginx, Apache without HTMLTable), the end of the table row (Apache
 * HTMLTable, lighttpd) or the next link, bounded to INFO_MAX bytes. Plain
 * byte counts are exact (nginx's and Apache's rounded formats print small
 * sizes exactly too); a K/M/G suffix is rounded and the caller must ask the
 * server. Dates carry no zone: read as UTC (nginx's default).
 *
 * The href half (entities, RFC 3986 resolution against the page's URL,
 * percent-decoding) is htmlurl.c, behind the private htmlurl.h.
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "htmlindex.h"
#include "htmlurl.h"

#define INFO_MAX 4096

struct entry_vec {
	struct pfs_htmlindex_entry *v;
	size_t n, cap, max;
};

static int ci_prefix(const char *p, const char *end, const char *word)
{
	size_t n = strlen(word);

	if ((size_t)(end - p) < n)
		return 0;
	return strncasecmp(p, word, n) == 0;
}

/* --- size and date ---------------------------------------------------- */

static int month_of(const char *s)
{
	static const char m[] = "janfebmaraprmayjunjulaugsepoctnovdec";

	for (int i = 0; i < 12; i++)
		if (strncasecmp(s, m + 3 * i, 3) == 0)
			return i + 1;
	return 0;
}

static int digits(const char *s, size_t n, int *v)
{
	*v = 0;
	for (size_t i = 0; i < n; i++) {
		if (!isdigit((unsigned char)s[i]))
			return -1;
		*v = *v * 10 + (s[i] - '0');
	}
	return 0;
}

/* "12-Mar-2024", "2024-03-12" or "2024-Mar-12" (length n). */
static int parse_date(const char *s, size_t n, int *y, int *mo, int *d)
{
	if (n == 10 && s[4] == '-' && s[7] == '-')
		return (digits(s, 4, y) || digits(s + 5, 2, mo) ||
			digits(s + 8, 2, d)) ? -1 : 0;
	if (n == 11 && s[4] == '-' && s[8] == '-') {
		*mo = month_of(s + 5);
		return (digits(s, 4, y) || digits(s + 9, 2, d) || !*mo) ? -1 : 0;
	}
	if ((n == 11 || n == 10) && s[n - 5] == '-' && s[n - 9] == '-') {
		*mo = month_of(s + n - 8);
		return (digits(s, n - 9, d) || digits(s + n - 4, 4, y) || !*mo)
			       ? -1 : 0;
	}
	return -1;
}

static int parse_time(const char *s, size_t n, int *h, int *mi, int *sec)
{
	*sec = 0;
	if ((n != 5 && n != 8) || s[2] != ':' || (n == 8 && s[5] != ':'))
		return -1;
	if (digits(s, 2, h) || digits(s + 3, 2, mi) ||
	    (n == 8 && digits(s + 6, 2, sec)))
		return -1;
	return 0;
}

static void parse_size(const char *s, size_t n, enum pfs_htmlindex_size *kind,
		       uint64_t *size)
{
	uint64_t v = 0;
	double frac = 0, scale = 0.1;
	size_t i = 0;
	int has_frac = 0, shift = 0;

	*kind = PFS_HTMLINDEX_SIZE_NONE;
	*size = 0;
	for (; i < n && isdigit((unsigned char)s[i]); i++) {
		uint64_t d = (uint64_t)(s[i] - '0');
		if (v > (UINT64_MAX - d) / 10)
			return;
		v = v * 10 + d;
	}
	if (i == 0)
		return;
	if (i < n && s[i] == '.') {
		has_frac = 1;
		for (i++; i < n && isdigit((unsigned char)s[i]); i++, scale /= 10)
			frac += (s[i] - '0') * scale;
	}
	if (i == n) {
		if (has_frac)
			return;
		*kind = PFS_HTMLINDEX_SIZE_EXACT;
		*size = v;
		return;
	}
	const char *units = "KMGTPE", *u = strchr(units, toupper((unsigned char)s[i]));
	if (!u || s[i] == '\0')
		return;
	shift = 10 * (int)(u - units + 1);
	i++;
	if (i < n && (s[i] == 'i' || s[i] == 'I'))
		i++;
	if (i < n && (s[i] == 'B' || s[i] == 'b'))
		i++;
	if (i != n)
		return;
	double bytes = ((double)v + frac) * (double)(1ULL << shift);
	if (bytes >= 18446744073709551615.0)
		return;
	*kind = PFS_HTMLINDEX_SIZE_ROUNDED;
	*size = (uint64_t)bytes;
}

void pfs_htmlindex_parse_info(const char *text, size_t len, int64_t *mtime,
			      enum pfs_htmlindex_size *kind, uint64_t *size)
{
	char buf[INFO_MAX];
	size_t o = 0;
	const char *tok[32];
	size_t tlen[32], nt = 0;

	*mtime = -1;
	*kind = PFS_HTMLINDEX_SIZE_NONE;
	*size = 0;
	/* Tags and entities become spaces: dates and sizes contain neither. */
	for (size_t i = 0; i < len && o < sizeof(buf) - 1; i++) {
		if (text[i] == '<') {
			const char *gt = memchr(text + i, '>', len - i);
			if (!gt)
				break;
			i = (size_t)(gt - text);
			buf[o++] = ' ';
		} else if (text[i] == '&') {
			size_t j = i + 1;
			while (j < len && j - i < 10 && isalnum((unsigned char)text[j]))
				j++;
			if (j < len && text[j] == ';')
				i = j;
			buf[o++] = ' ';
		} else {
			buf[o++] = text[i];
		}
	}
	buf[o] = '\0';
	for (char *p = buf; *p && nt < 32;) {
		while (*p && htmlurl_is_space((unsigned char)*p))
			p++;
		if (!*p)
			break;
		tok[nt] = p;
		while (*p && !htmlurl_is_space((unsigned char)*p))
			p++;
		tlen[nt] = (size_t)(p - tok[nt]);
		nt++;
	}
	for (size_t t = 0; t + 1 < nt; t++) {
		int y, mo, d, h, mi, s;
		struct tm tm;

		if (parse_date(tok[t], tlen[t], &y, &mo, &d) < 0 ||
		    parse_time(tok[t + 1], tlen[t + 1], &h, &mi, &s) < 0)
			continue;
		if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 ||
		    s > 60 || y < 1900 || y > 9999)
			continue;
		memset(&tm, 0, sizeof(tm));
		tm.tm_year = y - 1900;
		tm.tm_mon = mo - 1;
		tm.tm_mday = d;
		tm.tm_hour = h;
		tm.tm_min = mi;
		tm.tm_sec = s;
		*mtime = (int64_t)timegm(&tm);
		if (t + 2 < nt)
			parse_size(tok[t + 2], tlen[t + 2], kind, size);
		return;
	}
}

/* --- page scan ---------------------------------------------------------- */

static int vec_add(struct entry_vec *ev, char *name, int is_dir,
		   const char *info, size_t info_len)
{
	if (ev->n == ev->cap) {
		size_t cap = ev->cap ? ev->cap * 2 : 64;
		struct pfs_htmlindex_entry *v = realloc(ev->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		ev->v = v;
		ev->cap = cap;
	}
	struct pfs_htmlindex_entry *e = &ev->v[ev->n++];
	e->name = name;
	e->is_dir = is_dir;
	pfs_htmlindex_parse_info(info, info_len, &e->mtime, &e->size_kind,
				 &e->size);
	if (is_dir) {
		e->size_kind = PFS_HTMLINDEX_SIZE_NONE;
		e->size = 0;
	}
	return 0;
}

/* Start of an <a> tag at p (p[0] == '<')? */
static int is_a_open(const char *p, const char *end)
{
	return end - p >= 3 && (p[1] == 'a' || p[1] == 'A') &&
	       (htmlurl_is_space((unsigned char)p[2]) || p[2] == '>');
}

/* Parses the attributes of a tag starting after its name; copies the raw
 * href value into href (NUL-terminated, empty if none or too long).
 * Returns the position after '>', or NULL if the tag never ends. */
static const char *scan_attrs(const char *p, const char *end, char *href,
			      size_t cap)
{
	href[0] = '\0';
	while (p < end) {
		while (p < end && htmlurl_is_space((unsigned char)*p))
			p++;
		if (p >= end)
			return NULL;
		if (*p == '>')
			return p + 1;
		const char *name = p;
		while (p < end && !htmlurl_is_space((unsigned char)*p) && *p != '=' &&
		       *p != '>')
			p++;
		size_t nl = (size_t)(p - name);
		while (p < end && htmlurl_is_space((unsigned char)*p))
			p++;
		if (p >= end || *p != '=') {
			if (nl == 0)
				p++; /* stray byte */
			continue;
		}
		p++;
		while (p < end && htmlurl_is_space((unsigned char)*p))
			p++;
		const char *v = p, *ve;
		if (p < end && (*p == '"' || *p == '\'')) {
			const char *q = memchr(p + 1, *p, (size_t)(end - p - 1));
			if (!q)
				return NULL;
			v = p + 1;
			ve = q;
			p = q + 1;
		} else {
			while (p < end && !htmlurl_is_space((unsigned char)*p) && *p != '>')
				p++;
			ve = p;
		}
		if (nl == 4 && strncasecmp(name, "href", 4) == 0 &&
		    htmlurl_entity_decode(v, (size_t)(ve - v), href, cap) < 0)
			href[0] = '\0';
	}
	return NULL;
}

/* By name, then a file before a directory of the same name. */
static int cmp_entry(const void *a, const void *b)
{
	const struct pfs_htmlindex_entry *x = a, *y = b;
	int c = strcmp(x->name, y->name);
	return c ? c : x->is_dir - y->is_dir;
}

/* Sorts and merges duplicate entries (same name, same kind), keeping the
 * best date and size. "x" and "x/" are not duplicates: both are kept (a
 * merge made one of them vanish, and which one depended on qsort). */
static void merge_dups(struct entry_vec *ev)
{
	size_t o = 0;

	if (ev->n == 0)
		return;
	qsort(ev->v, ev->n, sizeof(ev->v[0]), cmp_entry);
	for (size_t i = 1; i < ev->n; i++) {
		struct pfs_htmlindex_entry *k = &ev->v[o], *e = &ev->v[i];
		if (strcmp(k->name, e->name) != 0 || k->is_dir != e->is_dir) {
			ev->v[++o] = *e;
			continue;
		}
		if (e->size_kind > k->size_kind) {
			k->size_kind = e->size_kind;
			k->size = e->size;
		}
		if (k->mtime < 0)
			k->mtime = e->mtime;
		free(e->name);
	}
	ev->n = o + 1;
}

int pfs_htmlindex_parse(const char *page, size_t len, const char *page_url,
			size_t max_entries, struct pfs_htmlindex_entry **out,
			size_t *n)
{
	struct page_url u;
	struct entry_vec ev = {0};
	const char *p = page, *end = page + len;
	char *href;
	int rc;

	*out = NULL;
	*n = 0;
	rc = htmlurl_page_init(&u, page_url);
	if (rc < 0)
		return rc;
	href = malloc(PFS_HTMLINDEX_HREF_MAX);
	if (!href) {
		rc = -ENOMEM;
		goto err_url;
	}
	/* Raw links may repeat a name (IconsAreLinks): allow twice as many
	 * before merging, then check again. */
	ev.max = max_entries > SIZE_MAX / 2 - 2 ? SIZE_MAX : max_entries * 2 + 2;

	while (p < end) {
		const char *lt = memchr(p, '<', (size_t)(end - p));
		if (!lt)
			break;
		if (ci_prefix(lt, end, "<!--")) {
			const char *c = memmem(lt + 4, (size_t)(end - lt - 4), "-->", 3);
			if (!c)
				break;
			p = c + 3;
			continue;
		}
		if (!is_a_open(lt, end)) {
			p = lt + 1;
			continue;
		}
		const char *body = scan_attrs(lt + 2, end, href, PFS_HTMLINDEX_HREF_MAX);
		if (!body)
			break;
		/* Find </a>; another <a> first means this one is unclosed. */
		const char *q = body, *info = NULL;
		while ((q = memchr(q, '<', (size_t)(end - q))) != NULL) {
			if (ci_prefix(q, end, "</a")) {
				const char *gt = memchr(q, '>', (size_t)(end - q));
				info = gt ? gt + 1 : end;
				break;
			}
			if (is_a_open(q, end))
				break;
			q++;
		}
		const char *info_end = info ? info : body;
		if (info) {
			while (info_end < end && info_end - info < INFO_MAX &&
			       *info_end != '\n' &&
			       !(*info_end == '<' && (is_a_open(info_end, end) ||
						     ci_prefix(info_end, end, "</tr") ||
						     ci_prefix(info_end, end, "<!--"))))
				info_end++;
		}
		p = info ? info_end : (q ? q : end);

		int is_dir = 0;
		char *name = href[0] ? htmlurl_resolve(&u, href, &is_dir) : NULL;
		if (!name)
			continue;
		if (ev.n >= ev.max) {
			free(name);
			rc = -E2BIG;
			goto err_vec;
		}
		rc = vec_add(&ev, name, is_dir, info ? info : body,
			     (size_t)(info_end - (info ? info : body)));
		if (rc < 0) {
			free(name);
			goto err_vec;
		}
	}
	merge_dups(&ev);
	if (ev.n > max_entries) {
		rc = -E2BIG;
		goto err_vec;
	}
	free(href);
	htmlurl_page_finish(&u);
	*out = ev.v;
	*n = ev.n;
	return 0;

err_vec:
	pfs_htmlindex_free(ev.v, ev.n);
	free(href);
err_url:
	htmlurl_page_finish(&u);
	return rc;
}

void pfs_htmlindex_free(struct pfs_htmlindex_entry *v, size_t n)
{
	if (!v)
		return;
	for (size_t i = 0; i < n; i++)
		free(v[i].name);
	free(v);
}
