/* htmlindex.h - entries of an HTML directory index page (nginx and Apache
 * autoindex, lighttpd dirlisting, python http.server and the like).
 *
 * An entry is an <a href="..."> whose target, resolved against the page's
 * URL, is a direct child of the page's directory: "../", links to other
 * hosts, query links ("?C=N;O=D"), fragments, other schemes and anything
 * outside the directory are skipped. Names are the percent-decoded href
 * (never the link text, which servers truncate); a trailing '/' means a
 * directory. The text after the link, up to the end of its line or table
 * row, may give a date and a size (see pfs_htmlindex_parse_info()).
 * Pure functions; thread-safe.
 */
#ifndef PFS_HTMLINDEX_H
#define PFS_HTMLINDEX_H

#include <stddef.h>
#include <stdint.h>

/* Longest href accepted (after entity decoding); longer links are skipped. */
#define PFS_HTMLINDEX_HREF_MAX 16384

enum pfs_htmlindex_size {
	PFS_HTMLINDEX_SIZE_NONE = 0, /* no size shown, or "-" */
	PFS_HTMLINDEX_SIZE_ROUNDED,  /* "1.2K", "121K", "5M": approximate */
	PFS_HTMLINDEX_SIZE_EXACT,    /* a plain byte count */
};

struct pfs_htmlindex_entry {
	char *name;  /* one decoded path component, never "", "." or ".." */
	int is_dir;  /* the href ended in '/' */
	enum pfs_htmlindex_size size_kind;
	uint64_t size; /* bytes (approximate when ROUNDED, 0 when NONE) */
	int64_t mtime; /* seconds since the epoch, read as UTC; -1 unknown */
};

/* Parses page[0..len) (need not be NUL-terminated), fetched from page_url
 * (an absolute http(s) URL of the directory, ending in '/'). On success
 * *out is an array of *n entries sorted by name (bytewise), a name listed
 * twice merged into one entry (Apache's IconsAreLinks links each file
 * twice); a name given both as a file and as a directory ("x" and "x/")
 * stays two entries, the file first: the caller decides. Free it with
 * pfs_htmlindex_free(). Returns 0, -EINVAL (page_url
 * not an absolute http(s) URL), -E2BIG (more than max_entries entries) or
 * -ENOMEM; nothing to free on error. Malformed HTML is never an error:
 * what can be read is returned. */
int pfs_htmlindex_parse(const char *page, size_t len, const char *page_url,
			size_t max_entries, struct pfs_htmlindex_entry **out,
			size_t *n);

/* Frees an array returned by pfs_htmlindex_parse(); accepts NULL. */
void pfs_htmlindex_free(struct pfs_htmlindex_entry *v, size_t n);

/* Reads the date and size shown after a link in text[0..len), tags and
 * entities already allowed in it: the first date ("12-Mar-2024 10:11"
 * (nginx), "2024-03-12 10:11" (Apache), "2024-Mar-12 10:11:12" (lighttpd),
 * seconds optional) and the token right after it as size ("-", "123",
 * "1.2K", "121M", K = 1024). Sets *mtime (-1 if no date), *kind and *size.
 * Never fails. */
void pfs_htmlindex_parse_info(const char *text, size_t len, int64_t *mtime,
			      enum pfs_htmlindex_size *kind, uint64_t *size);

#endif
