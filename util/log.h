/* log.h - leveled logging for prestofs.
 *
 * One sink for the whole process: stderr (foreground) or syslog (daemon).
 * The level is checked before the arguments are evaluated. libfuse's own
 * messages are routed here too (see pfs_log_route_fuse()).
 * Thread-safe: any thread may log at any time.
 */
#ifndef PFS_LOG_H
#define PFS_LOG_H

enum pfs_log_level {
	PFS_LOG_ERR = 0,
	PFS_LOG_WARN = 1,
	PFS_LOG_INFO = 2,
	PFS_LOG_DEBUG = 3,
};

/* Current threshold; read without a lock (a racy read only changes verbosity). */
extern int pfs_log_threshold;

void pfs_log_set_level(enum pfs_log_level level);
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
#define pfs_err(...) pfs_log(PFS_LOG_ERR, __VA_ARGS__)
#define pfs_warn(...) pfs_log(PFS_LOG_WARN, __VA_ARGS__)
#define pfs_info(...) pfs_log(PFS_LOG_INFO, __VA_ARGS__)
#define pfs_debug(...) pfs_log(PFS_LOG_DEBUG, __VA_ARGS__)

#endif
