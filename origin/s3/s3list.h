/* s3list.h - parser for one S3 ListObjectsV2 answer page (expat), and
 * the pure key arithmetic of a listing split into key ranges.
 *
 * Feed the page's bytes in any chunks, then read the entries. Entries are
 * kept until the page ends because with encoding-type=url the
 * <EncodingType> element (which says whether keys are percent-encoded) may
 * come after the <Contents>; a page holds at most PFS_S3LIST_MAX_ENTRIES
 * entries and prefixes, each string at most PFS_S3LIST_TEXT_MAX bytes, so
 * memory per page is bounded. DOCTYPEs and entity declarations are refused
 * (no entity expansion attacks). Pure: no I/O, no logging. One parser is
 * used by one thread at a time.
 */
#ifndef PFS_S3LIST_H
#define PFS_S3LIST_H

#include <stddef.h>
#include <stdint.h>

#define PFS_S3LIST_TEXT_MAX 4096     /* bytes of one element's text */
#define PFS_S3LIST_MAX_ENTRIES 100000 /* Contents + CommonPrefixes per page */

struct pfs_s3list;

struct pfs_s3list_entry {
	const char *key;  /* decoded key, never NULL */
	uint64_t size;
	int64_t mtime;    /* unix seconds, UTC; -1 if no LastModified */
	const char *etag; /* as given, quotes kept; NULL if none */
};

/* Returns 0 or -ENOMEM. The caller frees *out with pfs_s3list_destroy(). */
int pfs_s3list_create(struct pfs_s3list **out);
void pfs_s3list_destroy(struct pfs_s3list *p);

/* Feeds len bytes; `final` is 1 with the last chunk (len may be 0).
 * Returns 0, -ENOMEM or -EINVAL (malformed XML, not a ListBucketResult, a bad
 * number or date, an element over PFS_S3LIST_TEXT_MAX, too many entries,
 * a Contents without Key) with a message in pfs_s3list_error(). After an
 * error every later call fails. */
int pfs_s3list_feed(struct pfs_s3list *p, const char *buf, size_t len,
		    int final);

/* Valid after a successful final feed. Strings are owned by p and valid
 * until pfs_s3list_destroy(). */
size_t pfs_s3list_count(const struct pfs_s3list *p);
const struct pfs_s3list_entry *pfs_s3list_get(const struct pfs_s3list *p,
					      size_t i);
size_t pfs_s3list_prefix_count(const struct pfs_s3list *p);
const char *pfs_s3list_prefix(const struct pfs_s3list *p, size_t i);
int pfs_s3list_truncated(const struct pfs_s3list *p);
/* NULL when absent (or empty). */
const char *pfs_s3list_next_token(const struct pfs_s3list *p);
/* Message for the last error ("" if none); owned by p. */
const char *pfs_s3list_error(const struct pfs_s3list *p);

/* Parses an ISO 8601 UTC date-time as S3 gives it
 * ("2009-10-12T17:50:30.000Z"; fraction optional; "Z" or "+00:00" or any
 * +hh:mm/-hh:mm offset) into unix seconds. Returns 0 or -EINVAL. */
int pfs_s3list_parse_time(const char *s, int64_t *out);

/* Key ranges. A listing is cut into ranges (b(i-1), b(i)] by bounds that
 * are only hints (CommonPrefixes): any strictly increasing strings cut the
 * key space into ranges that hold every key exactly once. */

/* Length of the directory one level below `dir` ("" or ending in '/')
 * that holds `key` ("a/b/" for dir "a/" and key "a/b/c/x"), or 0 when key
 * is not under dir, sits directly in it, or has an empty component there.
 * Always longer than dir when not 0, so a descent by it ends. */
size_t pfs_s3list_subdir(const char *dir, const char *key);

/* Chooses at most `max` bounds out of n hints (any order, duplicates
 * allowed): sorts hints in place (strcmp order; pointers are only moved,
 * never dropped), ignores those <= after (after NULL: none ignored), and
 * writes evenly spaced ones, strictly increasing, to out (room for max).
 * Returns how many; out points at hints' strings. */
size_t pfs_s3list_pick_bounds(const char **hints, size_t n, const char *after,
			      size_t max, const char **out);

#endif
