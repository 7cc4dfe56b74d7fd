/* log.h - leveled logging for prestofs.
 *
 * One sink for the whole process: stderr (foreground) or syslog (daemon).
 * The level is checked before the arguments are evaluated. libfuse's own
 * messages are routed here too (see pfs_log_route_fuse()).
 * Thread-safe: any thread may log at any time.
 */
#ifndef PFS_LOG_H
#define PFS_LOG_H

#include <stdint.h>

enum pfs_log_level {
	PFS_LOG_ERR = 0,
	PFS_LOG_WARN = 1,
	PFS_LOG_INFO = 2,
	PFS_LOG_DEBUG = 3,
};

/* Current threshold; read without a lock (a racy read only changes verbosity). */
extern int pfs_log_threshold;

void pfs_log_set_level(enum pfs_log_level level);
/* Level names: "error", "warn", "info", "debug". parse: 0, or -EINVAL for
 * another string (*out untouched). name: NULL past debug. Pure. */
int pfs_log_level_parse(const char *s, enum pfs_log_level *out);
const char *pfs_log_level_name(enum pfs_log_level level);
/* Send messages to syslog (ident "prestofs") instead of stderr. */
void pfs_log_use_syslog(int on);
/* Route libfuse's fuse_log() into this module. */
void pfs_log_route_fuse(void);

void pfs_log_msg(enum pfs_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#define pfs_log(lvl, ...)                                                     \
	do {                                                                  \
		if ((int)(lvl) <= pfs_log_threshold)                          \
			pfs_log_msg((lvl), __VA_ARGS__);                      \
	} while (0)
/* Repeated warnings, rate-limited. `key` names what the message is about
 * (kind and object, e.g. "stale:train/x.jpg"): the first message for a key
 * is logged; the same key's next ones within PFS_LOG_LIMIT_WINDOW_S are
 * only counted, and the first after the window says how many were dropped.
 * Over all keys at most PFS_LOG_LIMIT_BURST limited lines are written per
 * window, so a storm over many objects cannot flood the log either; the
 * next line written says how many others were dropped. Returns 1 if the
 * line was written (or would have been, below the threshold), 0 if not. */
#define PFS_LOG_LIMIT_WINDOW_S 60
#define PFS_LOG_LIMIT_BURST 20
int pfs_log_limited(enum pfs_log_level level, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The decision alone, at time now_ns (for tests): 1 to write, 0 to drop.
 * *dropped_key / *dropped_all: how many lines of this key / of all keys
 * were dropped since the last one written. */
int pfs_log_limit_check(const char *key, uint64_t now_ns, uint64_t *dropped_key,
			uint64_t *dropped_all);
/* Lines dropped by the limiter since start (all keys). */
uint64_t pfs_log_limit_dropped(void);

#define pfs_err(...) pfs_log(PFS_LOG_ERR, __VA_ARGS__)
#define pfs_warn(...) pfs_log(PFS_LOG_WARN, __VA_ARGS__)
#define pfs_info(...) pfs_log(PFS_LOG_INFO, __VA_ARGS__)
#define pfs_debug(...) pfs_log(PFS_LOG_DEBUG, __VA_ARGS__)

#endif
