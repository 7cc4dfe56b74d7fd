/* log.c - see log.h. Messages are formatted into one buffer and written
 * with a single call so lines from different threads don't interleave. */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>
#include <fuse_log.h>

#include "log.h"
#include "atomic.h"
#include "clock.h"

int pfs_log_threshold = PFS_LOG_INFO;
static int use_syslog;

static const char *const level_names[] = {"ERROR", "WARN", "INFO", "DEBUG"};
static const int syslog_prio[] = {LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG};

void pfs_log_set_level(enum pfs_log_level level)
{
	pfs_log_threshold = level;
}

/* As -o log_level spells them. */
static const char *const option_names[] = {"error", "warn", "info", "debug"};

int pfs_log_level_parse(const char *s, enum pfs_log_level *out)
{
	for (int i = 0; i < (int)(sizeof(option_names) / sizeof(option_names[0])); i++)
		if (!strcmp(s, option_names[i])) {
			*out = (enum pfs_log_level)i;
			return 0;
		}
	return -EINVAL;
}

const char *pfs_log_level_name(enum pfs_log_level level)
{
	return (unsigned)level < sizeof(option_names) / sizeof(option_names[0]) ?
	       option_names[level] : NULL;
}

void pfs_log_use_syslog(int on)
{
	if (on && !use_syslog)
		openlog("prestofs", LOG_PID, LOG_DAEMON);
	else if (!on && use_syslog)
		closelog();
	use_syslog = on;
}

__attribute__((format(printf, 2, 0)))
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
	int len;
	if (pfs_log_threshold >= PFS_LOG_DEBUG) {
		/* A debug log is read for timing: each line says when, in
		 * seconds on the monotonic clock (thread id for who). */
		uint64_t ns = pfs_clock_ns();
		len = snprintf(line, sizeof(line), "prestofs: %s: [%llu.%03llu %ld] %s\n",
			       level_names[level], (unsigned long long)(ns / 1000000000u),
			       (unsigned long long)(ns / 1000000u % 1000u), (long)gettid(), msg);
	} else {
		len = snprintf(line, sizeof(line), "prestofs: %s: %s\n", level_names[level], msg);
	}
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

__attribute__((format(printf, 2, 0)))
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

/* The rate limiter: a small table of keys (by hash; a collision only makes
 * a key start a new window early) and one budget for all keys. */
#define LIMIT_SLOTS 256
#define WINDOW_NS ((uint64_t)PFS_LOG_LIMIT_WINDOW_S * 1000000000ull)

struct limit_slot {
	uint64_t hash;
	uint64_t start_ns; /* when this key's window began; 0: free */
	uint64_t dropped;  /* lines of this key dropped in the window */
};

static pthread_mutex_t limit_lock = PTHREAD_MUTEX_INITIALIZER;
static struct limit_slot limit_slots[LIMIT_SLOTS]; /* guarded by limit_lock */
static uint64_t budget_start_ns, budget_used;         /* guarded by limit_lock */
static uint64_t dropped_all_pending;                  /* guarded by limit_lock */
static uint64_t dropped_total;                        /* atomic */

static uint64_t key_hash(const char *key)
{
	uint64_t h = 1469598103934665603ull; /* FNV-1a */
	for (const unsigned char *p = (const unsigned char *)key; *p; p++)
		h = (h ^ *p) * 1099511628211ull;
	return h ? h : 1;
}

int pfs_log_limit_check(const char *key, uint64_t now_ns, uint64_t *dropped_key,
			uint64_t *dropped_all)
{
	uint64_t h = key_hash(key);
	int write_it = 0;
	*dropped_key = *dropped_all = 0;
	pthread_mutex_lock(&limit_lock);
	struct limit_slot *s = &limit_slots[h % LIMIT_SLOTS];
	int fresh = s->start_ns == 0 || s->hash != h || now_ns - s->start_ns >= WINDOW_NS;
	if (budget_start_ns == 0 || now_ns - budget_start_ns >= WINDOW_NS) {
		budget_start_ns = now_ns ? now_ns : 1;
		budget_used = 0;
	}
	if (fresh && budget_used < PFS_LOG_LIMIT_BURST) {
		*dropped_key = s->hash == h ? s->dropped : 0;
		*dropped_all = dropped_all_pending;
		dropped_all_pending = 0;
		s->hash = h;
		s->start_ns = now_ns ? now_ns : 1;
		s->dropped = 0;
		budget_used++;
		write_it = 1;
	} else if (!fresh) {
		s->dropped++;
	} else {
		dropped_all_pending++;
	}
	pthread_mutex_unlock(&limit_lock);
	if (!write_it)
		pfs_add(&dropped_total, 1);
	return write_it;
}

uint64_t pfs_log_limit_dropped(void)
{
	return pfs_load(&dropped_total);
}

int pfs_log_limited(enum pfs_log_level level, const char *key, const char *fmt, ...)
{
	uint64_t dk, da;
	if ((int)level > pfs_log_threshold)
		return 1;
	if (!pfs_log_limit_check(key, pfs_clock_ns(), &dk, &da))
		return 0;
	char msg[900];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (dk || da)
		pfs_log_msg(level, "%s (dropped since the last such line: %llu like it, %llu other)",
			    msg, (unsigned long long)dk, (unsigned long long)da);
	else
		pfs_log_msg(level, "%s", msg);
	return 1;
}
