/* manifest.h - the prestofs manifest, format 1, and path validation.
 *
 *   #prestofs-manifest 1
 *   PATH<TAB>SIZE<TAB>MTIME<TAB>ETAG      (one entry per line)
 *
 * PATH is relative and '/'-separated; one ending in '/' declares a
 * directory (SIZE 0). ETAG is opaque or "-". Lines may end in "\n" or
 * "\r\n"; a final line without newline is accepted; empty lines are not.
 */
#ifndef PFS_MANIFEST_H
#define PFS_MANIFEST_H

#include <stdio.h>
#include "origin.h"

#define PFS_MANIFEST_NAME "prestofs.manifest"
#define PFS_MANIFEST_MAGIC "#prestofs-manifest 1"

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

/* Parses a whole manifest held in buf[0..len) and calls fn per entry
 * (directory paths passed without their trailing '/', is_dir = 1). A size
 * above PFS_FILE_SIZE_MAX is an error, as is any malformed line.
 * On error returns -EINVAL (or fn's error) and writes a message naming the
 * line number into err (cap bytes, NUL-terminated). */
int pfs_manifest_parse(const char *buf, size_t len, pfs_list_fn fn, void *ctx,
		       char *err, size_t errcap);

/* Writes one manifest line for an entry (directories get a trailing '/'). */
int pfs_manifest_write_entry(FILE *out, const char *path, int is_dir,
			     uint64_t size, int64_t mtime, const char *etag);

#endif
