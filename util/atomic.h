/* atomic.h - the one set of atomic accessors prestofs uses.
 *
 * Counters, gauges and flags that threads read without a lock. All are
 * relaxed: they order nothing else, so a field that publishes data to
 * another thread needs a lock or an explicit acquire/release instead
 * (pfs_load_acq / pfs_store_rel). Each takes a pointer to a naturally
 * aligned integer or pointer field.
 */
#ifndef PFS_ATOMIC_H
#define PFS_ATOMIC_H

#define pfs_load(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define pfs_store(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)
/* Both return the new value. */
#define pfs_add(p, n) __atomic_add_fetch((p), (n), __ATOMIC_RELAXED)
#define pfs_sub(p, n) __atomic_sub_fetch((p), (n), __ATOMIC_RELAXED)
/* Raises *p to v if v is larger (a high-water mark). */
#define pfs_store_max(p, v)                                                        \
	do {                                                                       \
		__typeof__(*(p)) pfs_max_v_ = (v);                                 \
		__typeof__(*(p)) pfs_max_o_ = pfs_load(p);                         \
		while (pfs_max_o_ < pfs_max_v_ &&                                  \
		       !__atomic_compare_exchange_n((p), &pfs_max_o_, pfs_max_v_, \
						    1, __ATOMIC_RELAXED,            \
						    __ATOMIC_RELAXED))              \
			;                                                          \
	} while (0)
/* For a field that hands data to another thread. */
#define pfs_load_acq(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define pfs_store_rel(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)

#endif
