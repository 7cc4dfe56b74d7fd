/* log.c - see log.h. Messages are formatted into one buffer and written
 * with a single call so lines from different threads don't interleave. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>
#include <fuse_log.h>

#include "log.h"

int pfs_log_threshold = PFS_LOG_INFO;
static int use_syslog;

static const char *const level_names[] = {"ERROR", "WARN", "INFO", "DEBUG"};
static const int syslog_prio[] = {LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG};

void pfs_log_set_level(enum pfs_log_level level)
{
	pfs_log_threshold = level;
}

void pfs_log_use_syslog(int on)
{
	if (on && !use_syslog)
		openlog("prestofs", LOG_PID, LOG_DAEMON);
	else if (!on && use_syslog)
		closelog();
	use_syslog = on;
}

static void vlog(enum pfs_log_level level, const char *fmt, va_list ap)
{
	char msg[1024];
	vsnprintf(msg, sizeof(msg), fmt, ap);
	size_t n = strlen(msg);
	while (n > 0 && msg[n - 1] == '\n')
		msg[--n] = '\0';
	if (use_syslog) {
		syslog(syslog_prio[level], "%s", msg);
		return;
	}
	char line[1200];
	int len = snprintf(line, sizeof(line), "prestofs: %s: %s\n",
			   level_names[level], msg);
	if (len > (int)sizeof(line))
		len = sizeof(line);
	if (write(STDERR_FILENO, line, (size_t)len) < 0) {
		/* nowhere left to report it */
	}
}

void pfs_log_msg(enum pfs_log_level level, const char *fmt, ...)
{
	va_list ap;
	if (level > PFS_LOG_DEBUG)
		level = PFS_LOG_DEBUG;
	va_start(ap, fmt);
	vlog(level, fmt, ap);
	va_end(ap);
}

static void fuse_sink(enum fuse_log_level level, const char *fmt, va_list ap)
{
	enum pfs_log_level l = level <= FUSE_LOG_ERR ? PFS_LOG_ERR :
			       level <= FUSE_LOG_WARNING ? PFS_LOG_WARN :
			       level <= FUSE_LOG_INFO ? PFS_LOG_INFO : PFS_LOG_DEBUG;
	if ((int)l <= pfs_log_threshold)
		vlog(l, fmt, ap);
}

void pfs_log_route_fuse(void)
{
	fuse_set_log_func(fuse_sink);
}
