/* ftable.h - the dataset's namespace, built once from the origin listing.
 *
 * Nodes are numbered 0..n-1 (0 is the root directory); the FUSE layer uses
 * node + 1 as inode number. Building is single-threaded (add..., then
 * finish); after pfs_ftable_finish() the table is immutable except for each
 * file's validator, and every query is thread-safe without locks.
 *
 * Memory after finish: 52 bytes per node plus its name and NUL, plus a
 * validator string for files that were read (see docs/ARCHITECTURE.md).
 */
#ifndef PFS_FTABLE_H
#define PFS_FTABLE_H

#include <stddef.h>
#include <stdint.h>

#define PFS_FTABLE_ROOT 0u
#define PFS_FTABLE_MAX_NODES 0x7fffffffu

struct pfs_ftable;

struct pfs_fnode {
	uint64_t size;  /* bytes; 0 for directories */
	int64_t mtime;  /* unix seconds */
	uint64_t fp;    /* files: pfs_ftable_fingerprint() of the listing entry */
	uint32_t parent;
	int is_dir;
};

struct pfs_ftable *pfs_ftable_create(void);
void pfs_ftable_destroy(struct pfs_ftable *ft);

/* Adds an entry (a pfs_list_fn: ctx is the table). Parents are created
 * implicitly (their mtime becomes their newest child's). A file and a
 * directory of the same name, in either order (a file "a" and "a/b", or
 * "a/"), is no error: the directory wins, the file is left out with a
 * warning naming it (the first 20), and finish() adds the count to
 * listing.skipped. Returns 0, -EEXIST for a duplicate (the same path twice
 * as a file, or declared twice as a directory), -EINVAL for an invalid
 * path, -ENOMEM/-EFBIG when full, -EFBIG (logged) for a file size above
 * PFS_FILE_SIZE_MAX (2^62). */
int pfs_ftable_add(void *ft, const char *path, int is_dir, uint64_t size,
		   int64_t mtime, const char *etag);

/* Sorts directories and frees build-time state; logs and counts the files
 * left out for a directory (listing.skipped). Call once, after the last
 * add and before any query. */
int pfs_ftable_finish(struct pfs_ftable *ft);

/* 64-bit hash of a listing entry's size, mtime and listing ETag (NULL ok):
 * equal fingerprints mean "the same object version" across mounts. */
uint64_t pfs_ftable_fingerprint(uint64_t size, int64_t mtime, const char *etag);

uint32_t pfs_ftable_count(const struct pfs_ftable *ft);
uint64_t pfs_ftable_total_bytes(const struct pfs_ftable *ft);
/* Bytes of memory the table holds (for the docs and stats). */
size_t pfs_ftable_memory(const struct pfs_ftable *ft);

/* Child `name` of directory `dir`: 0 and *out, or -ENOENT / -ENOTDIR. */
int pfs_ftable_lookup(const struct pfs_ftable *ft, uint32_t dir, const char *name,
		      uint32_t *out);
/* Node of a relative '/'-separated path ("" is the root): 0 and *out, or
 * -ENOENT / -ENOTDIR. Leading, trailing and repeated '/' are ignored. */
int pfs_ftable_resolve(const struct pfs_ftable *ft, const char *path, uint32_t *out);
/* Fills *info; -ENOENT if node is out of range. */
int pfs_ftable_get(const struct pfs_ftable *ft, uint32_t node, struct pfs_fnode *info);
/* Name of node (the root's is ""); valid as long as the table. */
const char *pfs_ftable_name(const struct pfs_ftable *ft, uint32_t node);
/* Children of a directory, sorted by name: count and the k-th. */
uint32_t pfs_ftable_nchildren(const struct pfs_ftable *ft, uint32_t dir);
uint32_t pfs_ftable_child(const struct pfs_ftable *ft, uint32_t dir, uint32_t k);
/* Relative path of node into buf ("" for the root); -ENAMETOOLONG. */
int pfs_ftable_path(const struct pfs_ftable *ft, uint32_t node, char *buf, size_t cap);

/* The validator the origin gave for a file's content, copied into out
 * (PFS_ETAG_MAX bytes; "" if none yet). */
void pfs_ftable_etag(const struct pfs_ftable *ft, uint32_t node, char *out);
/* Pins a file's validator: the first call with a non-empty etag wins (an
 * atomic compare-and-set) and later calls keep it. Returns 0 when `etag`
 * is now the pinned validator (it won, or equals the winner), -ESTALE when
 * another one is pinned (the caller must not serve or cache what came with
 * `etag`), -EINVAL for "" or a bad node, -ENOMEM. Thread-safe. */
int pfs_ftable_set_etag(struct pfs_ftable *ft, uint32_t node, const char *etag);

#endif
