/* retry.h - the retry policy shared by the HTTP and S3 backends.
 *
 * Exponential backoff with full jitter: before retry n (n >= 1) wait a
 * random time in [0, min(cap, base * 2^(n-1))], or the server's
 * Retry-After when it asks for longer (bounded by cap). Worst case before
 * EIO: (retries + 1) * timeout + sum of the delays <= retries * cap.
 * Pure functions; thread-safe.
 */
#ifndef PFS_RETRY_H
#define PFS_RETRY_H

#define PFS_RETRY_BASE 0.1 /* seconds */
#define PFS_RETRY_CAP 2.0  /* seconds */

/* Delay in seconds before retry `attempt` (1-based). `retry_after` is the
 * server's Retry-After in seconds, or < 0 if none; `rnd` is in [0, 1). */
double pfs_retry_delay(int attempt, double retry_after, double rnd);

/* 1 if an HTTP status is worth retrying (500-599, 429, 408), else 0. */
int pfs_retry_status(long status);

/* Maps a final HTTP status to a negative errno: 404/410 -> -ENOENT,
 * 401/403 -> -EACCES, 416 -> -ESTALE (the object shrank), anything else
 * -> -EIO. */
int pfs_retry_errno(long status);

/* Parses a Retry-After header value (delta-seconds only; HTTP dates give
 * -1). */
double pfs_retry_after_parse(const char *value);

#endif
