/* policy.h - names of the RAM tier's replacement policies and resident-set
 * preferences, and their parsing (shared by the cache and the options).
 *
 * The one definition of these enums and their names: tools/options.c
 * parses option values with pfs_policy_parse / pfs_resident_parse.
 *
 *   lru    classic least-recently-used; for comparison.
 *   minio  admit until full, then never replace (MinIO, "Analyzing and
 *          Mitigating Data Stalls in DNN Training"): every epoch after the
 *          first hits exactly the cached fraction, which is optimal for
 *          one random permutation per epoch.
 *   epoch  minio's resident set plus a bounded staging area for prefetched
 *          blocks, each dropped once read in the current epoch (NoPFS).
 *          Without prefetching, identical to minio. The default.
 *
 *   resident any    the resident set is whatever came first (minio).
 *   resident small  prefer blocks of the smallest objects (latency-bound
 *                   origins: more hits per cached byte).
 *   resident large  prefer blocks of the largest objects (bandwidth-bound).
 * See docs/POLICIES.md for the maths.
 */
#ifndef PFS_POLICY_H
#define PFS_POLICY_H

enum pfs_policy { PFS_POLICY_LRU, PFS_POLICY_MINIO, PFS_POLICY_EPOCH };
enum pfs_resident { PFS_RESIDENT_ANY, PFS_RESIDENT_SMALL, PFS_RESIDENT_LARGE };

/* Parse "lru", "minio", "epoch" (resp. "any", "small", "large"); exact,
 * lower case. Return 0, or -EINVAL leaving *out untouched. */
int pfs_policy_parse(const char *s, enum pfs_policy *out);
int pfs_resident_parse(const char *s, enum pfs_resident *out);

/* Static strings; "?" for a value outside the enum. */
const char *pfs_policy_name(enum pfs_policy p);
const char *pfs_resident_name(enum pfs_resident r);

#endif
