/* units.h - parsing of sizes and durations given by users (options, config).
 * All functions return 0 or -EINVAL; they never log.
 */
#ifndef PFS_UNITS_H
#define PFS_UNITS_H

#include <stdint.h>

/* "4096", "64K", "1M", "8G", "1T" (binary multiples, optional trailing 'B'
 * or 'iB', case-insensitive). Rejects negatives, overflow, garbage. */
int pfs_parse_size(const char *s, uint64_t *out);
/* Non-negative decimal seconds: "10", "0.5". */
int pfs_parse_seconds(const char *s, double *out);
/* Non-negative decimal integer within [min, max]. */
int pfs_parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out);

#endif
