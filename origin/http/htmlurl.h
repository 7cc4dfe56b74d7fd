/* htmlurl.h - private to origin/http/htmlindex.c and htmlurl.c: the hrefs
 * of an HTML index page, entity-decoded and resolved against the page's
 * URL. Pure functions; thread-safe. Nothing outside origin/http/ includes
 * this. */
#ifndef PFS_HTMLURL_H
#define PFS_HTMLURL_H

#include <stddef.h>

/* The page's URL, split once for every href of the page. */
struct page_url {
	int https;
	char auth[256]; /* host[:port], lowercased, default port dropped */
	char *dir;      /* raw path of the directory, starting and ending in '/' */
	char *ddir;     /* the same, percent-decoded */
	size_t ddir_len;
};

/* HTML's white space, in hrefs and in the page around them. */
static inline int htmlurl_is_space(int c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f';
}

/* Splits url (an absolute http(s) URL; its path is cut after the last '/',
 * as RFC 3986 merging does). Returns 0, -EINVAL (not an absolute http(s)
 * URL, or a path that decodes to a NUL) or -ENOMEM; on success the caller
 * calls htmlurl_page_finish(). */
int htmlurl_page_init(struct page_url *u, const char *url);
/* Frees what htmlurl_page_init() allocated. */
void htmlurl_page_finish(struct page_url *u);

/* Decodes the HTML entities of an attribute value s[0..n) into dst (cap
 * bytes, NUL-terminated): the named ones servers emit and numeric ones.
 * Unknown entities stay literal. Returns the length, or -1 if too long or
 * if it would produce a NUL. */
long htmlurl_entity_decode(const char *s, size_t n, char *dst, size_t cap);

/* Resolves the entity-decoded href against the page. Returns a new name
 * (malloc'd, the caller frees; decoded, one path component, never "", "."
 * or "..") and sets *is_dir (the href ended in '/'), or NULL to skip the
 * link (elsewhere, not a direct child, a query or fragment, or ENOMEM). */
char *htmlurl_resolve(const struct page_url *u, const char *href, int *is_dir);

#endif
