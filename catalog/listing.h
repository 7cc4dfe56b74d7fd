/* listing.h - what a listing is made of: entry paths, sizes and
 * validators, as origins deliver them and the file table takes them, and
 * the count of entries left out (listing.skipped). It sits low (catalog/
 * uses only util/), so origin/, prefetch/ and fs/ share one definition.
 * Pure but for that counter; any thread.
 */
#ifndef PFS_LISTING_H
#define PFS_LISTING_H

#include <stddef.h>
#include <stdint.h>

/* Room for a validator (ETag or equivalent), NUL included. Longer ETags
 * are rejected as invalid answers. */
#define PFS_ETAG_MAX 128

/* The largest file size any listing may give: 2^62 bytes (4 EiB). A file
 * is served through signed 64-bit offsets (off_t, st_size: 2^63 - 1), and
 * offset + block length and sums of a few sizes must not wrap; the block
 * index (size / block_size, block_size >= 4 KiB) then stays below 2^50,
 * far inside the 64-bit block numbers of the RAM tier (ino, idx) and the
 * SSD tier's 8-byte key. No real origin holds an object this large: a
 * bigger size is a corrupt listing, refused at mount. */
#define PFS_FILE_SIZE_MAX ((uint64_t)1 << 62)

/* 1 if `path` is a valid relative entry path: non-empty, no leading or
 * trailing '/', no empty, "." or ".." component, no control characters
 * (bytes < 0x20 and 0x7f), at most 4095 bytes, components at most 255. */
int pfs_path_valid(const char *path);

/* 1 if `etag` can stand in a listing as given: 1 to PFS_ETAG_MAX - 1
 * bytes, no control characters (bytes < 0x20 and 0x7f), not "-" (a
 * manifest's "none"). A manifest line carries exactly these, so a listing
 * kept as manifest text reads back as the same listing. */
int pfs_etag_listable(const char *etag);

/* Called once per listed entry. `path` is relative, '/'-separated, without
 * a leading or trailing '/', already checked by pfs_path_valid(); parents
 * may be implicit (never listed). `etag` is NULL or pfs_etag_listable()
 * (pfs_origin_list() drops any other ETag an origin gives). The strings are only
 * valid during the call. Returns 0, or a negative errno that stops the
 * listing and is returned by the lister (-EEXIST for a duplicate path). */
typedef int (*pfs_list_fn)(void *ctx, const char *path, int is_dir,
			   uint64_t size, int64_t mtime, const char *etag);

/* Listed files left out of the mount (no usable size, or a directory of
 * the same name): counted by whoever leaves them out (an origin's parser,
 * the file table), process-wide, lock-free. */
void pfs_listing_note_skipped(uint64_t n);
uint64_t pfs_listing_skipped(void);
/* Appends listing.skipped to l; ctx unused. A pfs_stats_fn. */
struct pfs_stat_list;
void pfs_listing_collect(void *ctx, struct pfs_stat_list *l);

#endif
