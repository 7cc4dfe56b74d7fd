/* stat.c - see stat.h. */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "stat.h"
#include "../util/clock.h"

#define METRICS_MAX (1 << 20)
#define HEADER_EVERY 20

/* The counters a row is made of (Prometheus names, without "prestofs_"). */
enum {
	M_READS, M_READ_BYTES, M_RAM_HITS, M_RAM_MISSES, M_SSD_HITS, M_SSD_MISSES,
	M_ORIGIN_REQ, M_ORIGIN_BYTES, M_ORIGIN_INFLIGHT, M_PF_USED, M_PF_WASTED,
	M_STALL, M_EPOCH, M_STREAMS, M_SHR_HITS, M_SHR_MISSES, M__COUNT
};
static const char *const names[M__COUNT] = {
	"served_reads_total", "served_bytes_total", "ram_hits_total", "ram_misses_total",
	"ssd_hits_total", "ssd_misses_total", "origin_requests_total", "origin_bytes_total",
	"origin_inflight", "prefetch_bytes_used_total", "prefetch_bytes_wasted_total",
	"stall_seconds_total", "epoch_number", "prefetch_order_streams",
	"shared_hits_total", "shared_misses_total",
};

struct sample {
	double t;          /* CLOCK_MONOTONIC seconds */
	double v[M__COUNT];
	int have[M__COUNT];
};

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

/* Reads the metrics file into s. Returns 0, or -errno. */
static int sample(const char *path, char *buf, struct sample *s)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return -errno;
	size_t n = fread(buf, 1, METRICS_MAX - 1, f);
	int err = ferror(f) ? -EIO : 0;
	fclose(f);
	if (err)
		return err;
	buf[n] = '\0';
	memset(s, 0, sizeof(*s));
	s->t = pfs_clock_s();
	for (char *line = buf, *next; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (strncmp(line, "prestofs_", 9))
			continue; /* "# TYPE" */
		char *name = line + 9, *sp = strchr(name, ' ');
		if (!sp || strchr(name, '{'))
			continue; /* per-stream rows: not in the summary */
		*sp = '\0';
		for (int i = 0; i < M__COUNT; i++)
			if (!strcmp(name, names[i])) {
				s->v[i] = strtod(sp + 1, NULL);
				s->have[i] = 1;
			}
	}
	return s->have[M_READS] ? 0 : -EPROTO;
}

static double rate(const struct sample *a, const struct sample *b, int m, double dt)
{
	return dt > 0 ? (b->v[m] - a->v[m]) / dt : 0;
}

/* A hit share in %, or -1 when there were no lookups. */
static double share(const struct sample *a, const struct sample *b, int hit, int miss)
{
	double h = b->v[hit] - a->v[hit], m = b->v[miss] - a->v[miss];
	return h + m > 0 ? 100.0 * h / (h + m) : -1;
}

static void print_pct(double p)
{
	if (p < 0)
		printf(" %6s", "-");
	else
		printf(" %6.1f", p);
}

static void row_text(const struct sample *a, const struct sample *b, unsigned k)
{
	double dt = b->t - a->t;
	if (k % HEADER_EVERY == 0)
		printf("%9s %8s %6s %6s %6s %8s %8s %5s %8s %8s %7s %5s %7s\n", "reads/s",
		       "MB/s", "ram%", "ssd%", "shr%", "orig/s", "origMB/s", "infl", "pfuseMB", "pfwstMB",
		       "stall/s", "epoch", "streams");
	printf("%9.0f %8.1f", rate(a, b, M_READS, dt), rate(a, b, M_READ_BYTES, dt) / 1e6);
	print_pct(share(a, b, M_RAM_HITS, M_RAM_MISSES));
	print_pct(share(a, b, M_SSD_HITS, M_SSD_MISSES));
	print_pct(share(a, b, M_SHR_HITS, M_SHR_MISSES));
	printf(" %8.0f %8.1f %5.0f %8.1f %8.1f %7.2f %5.0f %7.0f\n", rate(a, b, M_ORIGIN_REQ, dt),
	       rate(a, b, M_ORIGIN_BYTES, dt) / 1e6, b->v[M_ORIGIN_INFLIGHT],
	       rate(a, b, M_PF_USED, dt) / 1e6, rate(a, b, M_PF_WASTED, dt) / 1e6,
	       rate(a, b, M_STALL, dt), b->v[M_EPOCH], b->v[M_STREAMS]);
}

static void json_num(const char *key, double v, int last)
{
	if (v == floor(v) && fabs(v) < 1e15)
		printf("\"%s\": %.0f%s", key, v, last ? "" : ", ");
	else
		printf("\"%s\": %.6g%s", key, v, last ? "" : ", ");
}

static void row_json(const struct sample *a, const struct sample *b)
{
	double dt = b->t - a->t;
	double ram = share(a, b, M_RAM_HITS, M_RAM_MISSES);
	double ssd = share(a, b, M_SSD_HITS, M_SSD_MISSES);
	double shr = share(a, b, M_SHR_HITS, M_SHR_MISSES);
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	printf("{\"time\": %lld.%03ld, ", (long long)now.tv_sec, now.tv_nsec / 1000000);
	json_num("interval", dt, 0);
	json_num("reads_per_s", rate(a, b, M_READS, dt), 0);
	json_num("mb_per_s", rate(a, b, M_READ_BYTES, dt) / 1e6, 0);
	if (ram < 0)
		printf("\"ram_hit_pct\": null, ");
	else
		json_num("ram_hit_pct", ram, 0);
	if (ssd < 0)
		printf("\"ssd_hit_pct\": null, ");
	else
		json_num("ssd_hit_pct", ssd, 0);
	if (shr < 0)
		printf("\"shared_hit_pct\": null, ");
	else
		json_num("shared_hit_pct", shr, 0);
	json_num("origin_requests_per_s", rate(a, b, M_ORIGIN_REQ, dt), 0);
	json_num("origin_mb_per_s", rate(a, b, M_ORIGIN_BYTES, dt) / 1e6, 0);
	json_num("origin_inflight", b->v[M_ORIGIN_INFLIGHT], 0);
	json_num("prefetch_used_mb_per_s", rate(a, b, M_PF_USED, dt) / 1e6, 0);
	json_num("prefetch_wasted_mb_per_s", rate(a, b, M_PF_WASTED, dt) / 1e6, 0);
	json_num("stall_s_per_s", rate(a, b, M_STALL, dt), 0);
	json_num("epoch", b->v[M_EPOCH], 0);
	json_num("streams", b->v[M_STREAMS], 0);
	/* The counters themselves, so a reader can check or re-derive. */
	printf("\"totals\": {");
	for (int i = 0; i < M__COUNT; i++)
		json_num(names[i], b->v[i], i == M__COUNT - 1);
	printf("}}\n");
}

static int usage(void)
{
	fprintf(stderr, "usage: prestofs stat MOUNT [-i SECONDS] [-c COUNT] [--json]\n");
	return 2;
}

int pfs_stat_main(int argc, char **argv)
{
	const char *mount = NULL;
	double interval = 1.0;
	long count = 0; /* 0: until interrupted */
	int json = 0;
	for (int i = 2; i < argc; i++) {
		char *end;
		if (!strcmp(argv[i], "--json")) {
			json = 1;
		} else if (!strcmp(argv[i], "-i") && i + 1 < argc) {
			interval = strtod(argv[++i], &end);
			if (*end || !(interval >= 0.01 && interval <= 3600)) {
				fprintf(stderr, "prestofs stat: -i: seconds from 0.01 to 3600, "
					"not '%s'\n", argv[i]);
				return 2;
			}
		} else if (!strcmp(argv[i], "-c") && i + 1 < argc) {
			count = strtol(argv[++i], &end, 10);
			if (*end || count < 1) {
				fprintf(stderr, "prestofs stat: -c: a count of 1 or more, not '%s'\n",
					argv[i]);
				return 2;
			}
		} else if (argv[i][0] == '-' || mount) {
			fprintf(stderr, "prestofs stat: unknown argument '%s'\n", argv[i]);
			return usage();
		} else {
			mount = argv[i];
		}
	}
	if (!mount)
		return usage();
	char path[4200];
	snprintf(path, sizeof(path), "%s/.prestofs/metrics", mount);
	char *buf = malloc(METRICS_MAX);
	if (!buf)
		return 1;
	struct sample prev, cur;
	int rc = sample(path, buf, &prev);
	if (rc < 0) {
		fprintf(stderr, "prestofs stat: %s is not a prestofs mount (%s: %s)\n", mount,
			path, strerror(-rc));
		free(buf);
		return 1;
	}
	struct sigaction sa = {.sa_handler = on_signal};
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	setvbuf(stdout, NULL, _IOLBF, 0);
	int status = 0;
	for (unsigned k = 0; !stop && (!count || k < (unsigned long)count); k++) {
		/* Sleep to the next tick of the interval's grid (no drift). */
		double until = prev.t + interval;
		for (double now = pfs_clock_s(); !stop && now < until; now = pfs_clock_s()) {
			double d = until - now;
			struct timespec ts = {(time_t)d, (long)((d - floor(d)) * 1e9)};
			nanosleep(&ts, NULL);
		}
		if (stop)
			break;
		rc = sample(path, buf, &cur);
		if (rc < 0) {
			fprintf(stderr, "prestofs stat: %s: %s (unmounted?)\n", path, strerror(-rc));
			status = 1;
			break;
		}
		if (json)
			row_json(&prev, &cur);
		else
			row_text(&prev, &cur, k);
		prev = cur;
	}
	free(buf);
	return status;
}
