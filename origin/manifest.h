/* manifest.h - the prestofs manifest, format 1 (paths are checked by
 * catalog/listing.h).
 *
 *   #prestofs-manifest 1
 *   PATH<TAB>SIZE<TAB>MTIME<TAB>ETAG      (one entry per line)
 *
 * PATH is relative and '/'-separated; one ending in '/' declares a
 * directory (SIZE 0). ETAG is opaque (at most PFS_ETAG_MAX - 1 bytes, no
 * control characters) or "-". Lines may end in "\n" or
 * "\r\n"; a final line without newline is accepted; empty lines are not.
 */
#ifndef PFS_MANIFEST_H
#define PFS_MANIFEST_H

#include <stdio.h>
#include "origin.h"

#define PFS_MANIFEST_NAME "prestofs.manifest"
#define PFS_MANIFEST_MAGIC "#prestofs-manifest 1"

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
