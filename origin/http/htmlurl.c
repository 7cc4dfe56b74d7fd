/* htmlurl.c - see htmlurl.h: the hrefs of an index page, resolved as
 * RFC 3986 says (entities decoded, joined with the page URL, dot segments
 * removed, then percent-decoded) and kept only when they name a direct
 * child of the page's directory. Comparing decoded paths makes
 * "sub%20dir/" and "sub dir/" the same place; any '?' or '#' in an href
 * disqualifies it (a real name holding them is percent-encoded by the
 * server).
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "htmlurl.h"
#include "../../util/url.h"

/* Percent-decodes s into a new string. A '%' not followed by two hex
 * digits stays literal (lenient, as browsers are). NULL when the result
 * would hold a NUL byte, or on ENOMEM. */
static char *pct_decode(const char *s)
{
	size_t n = strlen(s);
	char *d = malloc(n + 1), *o = d;

	if (!d)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		int hi, lo;

		if (s[i] == '%' && i + 2 < n &&
		    (hi = pfs_url_hexval((unsigned char)s[i + 1])) >= 0 &&
		    (lo = pfs_url_hexval((unsigned char)s[i + 2])) >= 0) {
			if (hi == 0 && lo == 0) {
				free(d);
				return NULL;
			}
			*o++ = (char)(hi * 16 + lo);
			i += 2;
		} else {
			*o++ = s[i];
		}
	}
	*o = '\0';
	return d;
}

static size_t put_utf8(char *o, unsigned long cp)
{
	if (cp < 0x80) {
		o[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (char)(0xc0 | (cp >> 6));
		o[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = (char)(0xe0 | (cp >> 12));
		o[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		o[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	o[0] = (char)(0xf0 | (cp >> 18));
	o[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
	o[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
	o[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/* Decodes the HTML entities of an attribute value s[0..n) into dst (cap
 * bytes, NUL-terminated): the named ones servers emit and numeric ones.
 * Unknown entities stay literal. Returns the length, or -1 if too long or
 * if it would produce a NUL. */
long htmlurl_entity_decode(const char *s, size_t n, char *dst, size_t cap)
{
	static const struct { const char *name; char c; } named[] = {
		{"amp;", '&'}, {"lt;", '<'}, {"gt;", '>'},
		{"quot;", '"'}, {"apos;", '\''},
	};
	size_t o = 0;

	for (size_t i = 0; i < n;) {
		char tmp[4];
		size_t tn = 0, adv = 1;

		if (s[i] == '&' && i + 1 < n && s[i + 1] == '#') {
			size_t j = i + 2;
			int hex = j < n && (s[j] == 'x' || s[j] == 'X');
			unsigned long cp = 0;
			size_t digits = 0;

			j += hex;
			for (; j < n && digits < 8; j++, digits++) {
				int v = hex ? pfs_url_hexval((unsigned char)s[j])
					    : (isdigit((unsigned char)s[j]) ? s[j] - '0' : -1);
				if (v < 0)
					break;
				cp = cp * (hex ? 16 : 10) + (unsigned long)v;
			}
			if (digits > 0 && j < n && s[j] == ';' && cp <= 0x10ffff) {
				if (cp == 0)
					return -1;
				tn = put_utf8(tmp, cp);
				adv = j + 1 - i;
			}
		} else if (s[i] == '&') {
			for (size_t k = 0; k < sizeof(named) / sizeof(named[0]); k++) {
				size_t ln = strlen(named[k].name);
				if (n - i - 1 >= ln &&
				    memcmp(s + i + 1, named[k].name, ln) == 0) {
					tmp[0] = named[k].c;
					tn = 1;
					adv = ln + 1;
					break;
				}
			}
		}
		if (tn == 0) {
			if (s[i] == '\0')
				return -1;
			tmp[0] = s[i];
			tn = 1;
		}
		if (o + tn >= cap)
			return -1;
		memcpy(dst + o, tmp, tn);
		o += tn;
		i += adv;
	}
	dst[o] = '\0';
	return (long)o;
}

/* RFC 3986 5.2.4 on an absolute path (starts with '/'), in place. */
static void remove_dot_segments(char *path)
{
	char *in = path, *out = path;
	size_t olen = 0;

	/* out never overtakes in: each step writes at most what it consumed. */
	while (*in) {
		if (strncmp(in, "/./", 3) == 0) {
			in += 2;
		} else if (strcmp(in, "/.") == 0) {
			in[1] = '/';
			in += 1;
		} else if (strncmp(in, "/../", 4) == 0 || strcmp(in, "/..") == 0) {
			if (in[3] == '\0') { /* "/.." -> "/" */
				in[2] = '/';
				in += 2;
			} else {
				in += 3;
			}
			/* drop the last output segment and its '/' */
			while (olen > 0 && out[olen - 1] != '/')
				olen--;
			if (olen > 0)
				olen--;
		} else {
			size_t seg = 1 + strcspn(in + 1, "/");
			memmove(out + olen, in, seg);
			olen += seg;
			in += seg;
		}
	}
	out[olen] = '\0';
}

/* Normalises "Host:Port" (userinfo dropped) into buf. 0, or -1 if bad. */
static int norm_authority(const char *a, size_t n, int https, char *buf,
			  size_t cap)
{
	const char *at = NULL;
	size_t o = 0;

	for (size_t i = 0; i < n; i++)
		if (a[i] == '@')
			at = a + i;
	if (at) {
		n -= (size_t)(at + 1 - a);
		a = at + 1;
	}
	if (n == 0 || n >= cap)
		return -1;
	for (size_t i = 0; i < n; i++)
		buf[o++] = (char)tolower((unsigned char)a[i]);
	buf[o] = '\0';
	const char *dflt = https ? ":443" : ":80";
	size_t dl = strlen(dflt);
	if (o > dl && strcmp(buf + o - dl, dflt) == 0)
		buf[o -= dl] = '\0';
	if (o > 0 && buf[o - 1] == ':') /* "host:" */
		buf[--o] = '\0';
	return 0;
}

/* Splits "scheme://authority/path" (s[0..n)). Returns 0 and sets *https,
 * auth and *path (pointer into s, may be empty), or -1. */
static int split_abs(const char *s, size_t n, int *https, char *auth,
		     size_t cap, const char **path)
{
	size_t skip;

	if (n >= 7 && strncasecmp(s, "http://", 7) == 0) {
		*https = 0;
		skip = 7;
	} else if (n >= 8 && strncasecmp(s, "https://", 8) == 0) {
		*https = 1;
		skip = 8;
	} else {
		return -1;
	}
	const char *a = s + skip, *end = s + n, *p = a;
	while (p < end && *p != '/' && *p != '?' && *p != '#')
		p++;
	if (norm_authority(a, (size_t)(p - a), *https, auth, cap) < 0)
		return -1;
	*path = p;
	return 0;
}

void htmlurl_page_finish(struct page_url *u)
{
	free(u->dir);
	free(u->ddir);
}

int htmlurl_page_init(struct page_url *u, const char *url)
{
	const char *path;
	size_t plen;

	memset(u, 0, sizeof(*u));
	if (split_abs(url, strlen(url), &u->https, u->auth, sizeof(u->auth),
		      &path) < 0)
		return -EINVAL;
	plen = strcspn(path, "?#");
	u->dir = malloc(plen + 3);
	if (!u->dir)
		return -ENOMEM;
	if (plen == 0) {
		u->dir[plen++] = '/'; /* "http://host" */
	} else {
		memcpy(u->dir, path, plen);
	}
	u->dir[plen] = '\0';
	/* A page URL names a directory: its path is cut after the last '/'
	 * as RFC 3986 merging does. */
	*(strrchr(u->dir, '/') + 1) = '\0';
	remove_dot_segments(u->dir);
	u->ddir = pct_decode(u->dir);
	if (!u->ddir) {
		htmlurl_page_finish(u);
		return -EINVAL;
	}
	u->ddir_len = strlen(u->ddir);
	return 0;
}

/* Resolves the entity-decoded href against the page. Returns a new name
 * (decoded, one component) and sets *is_dir, or NULL to skip the link. */
char *htmlurl_resolve(const struct page_url *u, const char *href, int *is_dir)
{
	char auth[256];
	const char *path = NULL;
	char *abs = NULL, *dec = NULL, *name = NULL;
	size_t n;
	int https;

	while (htmlurl_is_space((unsigned char)*href))
		href++;
	n = strlen(href);
	while (n > 0 && htmlurl_is_space((unsigned char)href[n - 1]))
		n--;
	if (n == 0 || memchr(href, '?', n) || memchr(href, '#', n))
		return NULL;

	size_t sl = strspn(href, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-");
	if (sl > 0 && sl < n && href[sl] == ':' && isalpha((unsigned char)href[0])) {
		if (split_abs(href, n, &https, auth, sizeof(auth), &path) < 0 ||
		    https != u->https || strcmp(auth, u->auth) != 0)
			return NULL; /* other scheme, host or port */
	} else if (n >= 2 && href[0] == '/' && href[1] == '/') {
		const char *a = href + 2, *p = a;
		while (p < href + n && *p != '/')
			p++;
		if (norm_authority(a, (size_t)(p - a), u->https, auth,
				   sizeof(auth)) < 0 ||
		    strcmp(auth, u->auth) != 0)
			return NULL;
		path = p;
	}
	if (path) { /* "" or "/...": split_abs stops at the first '/' */
		size_t pl = (size_t)(href + n - path);
		abs = pl ? strndup(path, pl) : strdup("/");
	} else if (href[0] == '/') {
		abs = strndup(href, n);
	} else {
		size_t dl = strlen(u->dir);
		abs = malloc(dl + n + 1);
		if (abs) {
			memcpy(abs, u->dir, dl);
			memcpy(abs + dl, href, n);
			abs[dl + n] = '\0';
		}
	}
	if (!abs)
		return NULL;
	remove_dot_segments(abs);
	dec = pct_decode(abs);
	if (!dec || strncmp(dec, u->ddir, u->ddir_len) != 0)
		goto out;

	char *rest = dec + u->ddir_len;
	size_t rl = strlen(rest);
	*is_dir = rl > 0 && rest[rl - 1] == '/';
	if (*is_dir)
		rest[--rl] = '\0';
	if (rl == 0 || strchr(rest, '/') || strcmp(rest, ".") == 0 ||
	    strcmp(rest, "..") == 0)
		goto out;
	name = strdup(rest);
out:
	free(dec);
	free(abs);
	return name;
}
