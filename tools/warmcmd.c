/* warmcmd.c - see warmcmd.h. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "warmcmd.h"
#include "../util/clock.h"

#define CHUNK (60 * 1024) /* a write the kernel never splits (fs/warm.h) */
#define STATUS_MAX (64 * 1024)
#define LINE_MAX_BYTES 4096

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

/* One job's status line (fs/warm.h), parsed. */
enum {
	K_FILES, K_BYTES, K_UNKNOWN, K_DONE_FILES, K_DONE_BYTES, K_RAM, K_SSD, K_CACHED,
	K_FETCHED, K_NOFIT, K_FAILED, K_COMPLETE, K_ERRNO, K_SECONDS, K__COUNT
};
static const char *const keys[K__COUNT] = {
	"files", "bytes", "unknown", "done_files", "done_bytes", "ram_bytes", "ssd_bytes",
	"cached_bytes", "fetched_bytes", "nofit_bytes", "failed_files", "complete_files",
	"errno", "seconds",
};
struct status {
	char state[16];
	double v[K__COUNT];
};

/* The writer of requests: whole lines, each write under CHUNK bytes and
 * starting with the job's command line. */
struct req {
	int fd;
	char head[96];
	char buf[CHUNK];
	size_t len;
	int err;
	int sent;  /* a write went out */
};

static int req_flush(struct req *r)
{
	if (r->err || !r->len)
		return r->err;
	ssize_t n = write(r->fd, r->buf, r->len);
	if (n != (ssize_t)r->len)
		r->err = n < 0 ? errno : EIO;
	r->len = 0;
	r->sent = 1;
	return r->err;
}

/* The last write; a job without paths (an empty --from list) is still
 * created, so that it can start, and ends at once. */
static int req_finish(struct req *r)
{
	if (!r->err && !r->len && !r->sent) {
		r->len = strlen(r->head);
		memcpy(r->buf, r->head, r->len);
	}
	return req_flush(r);
}

static void req_line(struct req *r, const char *path)
{
	size_t n = strlen(path);
	if (r->len && r->len + n + 1 > sizeof(r->buf))
		req_flush(r);
	if (!r->len) {
		memcpy(r->buf, r->head, strlen(r->head));
		r->len = strlen(r->head);
	}
	memcpy(r->buf + r->len, path, n);
	r->buf[r->len + n] = '\n';
	r->len += n + 1;
}

static int send_cmd(int fd, const char *cmd, const char *id)
{
	char line[128];
	int n = snprintf(line, sizeof(line), "#%s %s\n", cmd, id);
	return write(fd, line, (size_t)n) == n ? 0 : errno ? errno : EIO;
}

/* The mount-relative form of a PATH argument into out; -1 if it is an
 * absolute path outside the mount. */
static int relative(const char *root, const char *arg, char *out, size_t cap)
{
	char real[PATH_MAX];
	if (arg[0] != '/') {
		snprintf(out, cap, "%s", arg);
		return 0;
	}
	const char *p = realpath(arg, real) ? real : arg;
	size_t n = strlen(root);
	if (strncmp(p, root, n) || (p[n] && p[n] != '/'))
		return -1;
	snprintf(out, cap, "/%s", p[n] ? p + n + 1 : "");
	return 0;
}

static int add_arg(struct req *r, const char *root, const char *arg)
{
	char rel[LINE_MAX_BYTES + 2];
	if (strlen(arg) >= LINE_MAX_BYTES) {
		fprintf(stderr, "prestofs warm: path too long: %.60s...\n", arg);
		return -1;
	}
	if (relative(root, arg, rel, sizeof(rel)) < 0) {
		fprintf(stderr, "prestofs warm: %s is not inside the mount %s\n", arg, root);
		return -1;
	}
	req_line(r, rel[0] ? rel : "/");
	return 0;
}

static int add_list(struct req *r, const char *root, const char *file)
{
	FILE *f = strcmp(file, "-") ? fopen(file, "re") : stdin;
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int rc = 0;
	if (!f) {
		fprintf(stderr, "prestofs warm: --from %s: %s\n", file, strerror(errno));
		return -1;
	}
	while (rc == 0 && (n = getline(&line, &cap, f)) >= 0) {
		while (n && (line[n - 1] == '\n' || line[n - 1] == '\r'))
			line[--n] = '\0';
		if (n)
			rc = add_arg(r, root, line);
	}
	free(line);
	if (f != stdin)
		fclose(f);
	return rc;
}

/* Reads the status file and finds job id's line. 0, -ENOENT (no such job),
 * or -errno. */
static int read_status(const char *path, const char *id, char *buf, struct status *st)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	size_t len = 0;
	ssize_t n;
	while (len < STATUS_MAX - 1 && (n = read(fd, buf + len, STATUS_MAX - 1 - len)) > 0)
		len += (size_t)n;
	int err = n < 0 ? -errno : 0;
	close(fd);
	if (err)
		return err;
	buf[len] = '\0';
	size_t idlen = strlen(id);
	for (char *line = buf, *next; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (strncmp(line, id, idlen) || line[idlen] != ' ')
			continue;
		memset(st, 0, sizeof(*st));
		char *save, *tok = strtok_r(line + idlen, " ", &save);
		for (; tok; tok = strtok_r(NULL, " ", &save)) {
			char *eq = strchr(tok, '=');
			if (!eq)
				continue;
			*eq = '\0';
			if (!strcmp(tok, "state"))
				snprintf(st->state, sizeof(st->state), "%s", eq + 1);
			for (int k = 0; k < K__COUNT; k++)
				if (!strcmp(tok, keys[k]))
					st->v[k] = strtod(eq + 1, NULL);
		}
		return 0;
	}
	return -ENOENT;
}

static void human(double bytes, char *out, size_t cap)
{
	const char *u[] = {"B", "KB", "MB", "GB", "TB", "PB"};
	int i = 0;
	while (bytes >= 1000 && i < 5) {
		bytes /= 1000;
		i++;
	}
	snprintf(out, cap, i ? "%.1f %s" : "%.0f %s", bytes, u[i]);
}

static void bar(const struct status *st, int check)
{
	double frac = st->v[K_BYTES] > 0 ? st->v[K_DONE_BYTES] / st->v[K_BYTES]
					  : (st->v[K_FILES] > 0 ? st->v[K_DONE_FILES] / st->v[K_FILES] : 0);
	double secs = st->v[K_SECONDS], rate = secs > 0 ? st->v[K_DONE_BYTES] / secs : 0;
	char done[32], total[32], rt[32], eta[32] = "--:--";
	int w = 24, fill = (int)(frac * w + 0.5);
	human(st->v[K_DONE_BYTES], done, sizeof(done));
	human(st->v[K_BYTES], total, sizeof(total));
	human(rate, rt, sizeof(rt));
	if (rate > 0 && frac < 1) {
		long left = lround((st->v[K_BYTES] - st->v[K_DONE_BYTES]) / rate);
		snprintf(eta, sizeof(eta), "%ld:%02ld", left / 60, left % 60);
	}
	fprintf(stderr, "\r%s [", check ? "check" : "warm");
	for (int i = 0; i < w; i++)
		fputc(i < fill ? '#' : '-', stderr);
	fprintf(stderr, "] %3.0f%%  %.0f/%.0f files  %s/%s  %s/s  ETA %s\033[K",
		frac * 100, st->v[K_DONE_FILES], st->v[K_FILES], done, total, rt, eta);
	fflush(stderr);
}

static int exit_status(const struct status *st, int check, int interrupted)
{
	if (interrupted)
		return 130;
	if (st->v[K_UNKNOWN] > 0 || st->v[K_FAILED] > 0)
		return 1;
	if (st->v[K_CACHED] < st->v[K_BYTES] || st->v[K_COMPLETE] < st->v[K_FILES])
		return 3;
	(void)check;
	return 0;
}

static void report(const struct status *st, int check, int json, int code)
{
	if (json) {
		printf("{\"mode\": \"%s\", \"state\": \"%s\"", check ? "check" : "warm", st->state);
		for (int k = 0; k < K__COUNT; k++)
			printf(k == K_SECONDS ? ", \"%s\": %.3f" : ", \"%s\": %.0f", keys[k], st->v[k]);
		printf(", \"exit\": %d}\n", code);
		return;
	}
	char total[32], cached[32], ram[32], ssd[32], fetched[32], nofit[32], rt[32];
	human(st->v[K_BYTES], total, sizeof(total));
	human(st->v[K_CACHED], cached, sizeof(cached));
	human(st->v[K_RAM], ram, sizeof(ram));
	human(st->v[K_SSD], ssd, sizeof(ssd));
	human(st->v[K_FETCHED], fetched, sizeof(fetched));
	human(st->v[K_NOFIT], nofit, sizeof(nofit));
	double b = st->v[K_BYTES] > 0 ? st->v[K_BYTES] : 1;
	if (check) {
		printf("%.0f files, %s: %s cached (%.1f%%): RAM %s (%.1f%%), SSD %s (%.1f%%); "
		       "%.0f of %.0f files whole", st->v[K_FILES], total, cached,
		       100 * st->v[K_CACHED] / b, ram, 100 * st->v[K_RAM] / b, ssd,
		       100 * st->v[K_SSD] / b, st->v[K_COMPLETE], st->v[K_FILES]);
	} else {
		double secs = st->v[K_SECONDS];
		human(secs > 0 ? st->v[K_DONE_BYTES] / secs : 0, rt, sizeof(rt));
		printf("%s %.0f of %.0f files, %s, in %.1f s (%s/s): %s cached (RAM %s, SSD %s), "
		       "%s fetched, %s did not fit, %.0f files failed",
		       code == 130 ? "interrupted after" : "warmed", st->v[K_DONE_FILES],
		       st->v[K_FILES], total, secs, rt, cached, ram, ssd, fetched, nofit,
		       st->v[K_FAILED]);
	}
	if (st->v[K_UNKNOWN] > 0)
		printf("; %.0f paths not in the dataset", st->v[K_UNKNOWN]);
	if (st->v[K_ERRNO] > 0)
		printf("; first error: %s", strerror((int)st->v[K_ERRNO]));
	printf("\n");
}

static int usage(void)
{
	fprintf(stderr, "usage: prestofs warm MOUNT [PATH...] [--from FILE|-] [--check] [-j N] "
		"[--json]\n");
	return 2;
}

int pfs_warmcmd_main(int argc, char **argv)
{
	const char *mount = NULL, *from = NULL;
	int check = 0, json = 0, npaths = 0;
	const char **paths = calloc((size_t)argc, sizeof(*paths));
	if (!paths)
		return 1;
	long threads = 0;
	for (int i = 2; i < argc; i++) {
		char *end;
		if (!strcmp(argv[i], "--check")) {
			check = 1;
		} else if (!strcmp(argv[i], "--json")) {
			json = 1;
		} else if (!strcmp(argv[i], "--from") && i + 1 < argc) {
			from = argv[++i];
		} else if (!strcmp(argv[i], "-j") && i + 1 < argc) {
			threads = strtol(argv[++i], &end, 10);
			if (*end || threads < 1 || threads > 256) {
				fprintf(stderr, "prestofs warm: -j: 1 to 256 fetches at a time, "
					"not '%s'\n", argv[i]);
				free(paths);
				return 2;
			}
		} else if (argv[i][0] == '-' && argv[i][1]) {
			fprintf(stderr, "prestofs warm: unknown argument '%s'\n", argv[i]);
			free(paths);
			return usage();
		} else if (!mount) {
			mount = argv[i];
		} else {
			paths[npaths++] = argv[i];
		}
	}
	if (!mount) {
		free(paths);
		return usage();
	}
	char root[PATH_MAX], ctl[PATH_MAX + 32];
	if (!realpath(mount, root)) {
		fprintf(stderr, "prestofs warm: %s: %s\n", mount, strerror(errno));
		free(paths);
		return 1;
	}
	snprintf(ctl, sizeof(ctl), "%s/.prestofs/warm", root);
	int fd = open(ctl, O_WRONLY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "prestofs warm: %s is not a prestofs mount with warm-up (%s: %s)\n",
			mount, ctl, strerror(errno));
		free(paths);
		return 1;
	}
	struct req *r = calloc(1, sizeof(*r));
	char *buf = malloc(STATUS_MAX), id[64];
	int code = 1;
	if (!r || !buf)
		goto out;
	snprintf(id, sizeof(id), "%s-%ld", check ? "check" : "warm", (long)getpid());
	r->fd = fd;
	if (threads)
		snprintf(r->head, sizeof(r->head), "#job %s %s %ld\n", id, check ? "check" : "warm",
			 threads);
	else
		snprintf(r->head, sizeof(r->head), "#job %s %s\n", id, check ? "check" : "warm");
	/* The paths, in the order given: arguments, then --from. */
	for (int i = 0; i < npaths; i++)
		if (add_arg(r, root, paths[i]) < 0)
			goto out;
	if (from && add_list(r, root, from) < 0)
		goto out;
	if (!npaths && !from)
		req_line(r, "/");
	int err = req_finish(r);
	if (!err)
		err = send_cmd(fd, "start", id);
	if (err) {
		fprintf(stderr, "prestofs warm: the daemon refused the job (%s)\n", strerror(err));
		goto out;
	}

	struct sigaction sa = {.sa_handler = on_signal};
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	int tty = isatty(STDERR_FILENO) && !json, cancelled = 0;
	struct status st = {0};
	for (;;) {
		int rc = read_status(ctl, id, buf, &st);
		if (rc < 0) {
			fprintf(stderr, "\nprestofs warm: %s: %s (unmounted?)\n", ctl, strerror(-rc));
			goto out;
		}
		if (tty)
			bar(&st, check);
		if (!strcmp(st.state, "done") || !strcmp(st.state, "cancelled"))
			break;
		if (stop && !cancelled) {
			cancelled = send_cmd(fd, "cancel", id) == 0;
			if (!cancelled) {
				fprintf(stderr, "\nprestofs warm: could not cancel job %s\n", id);
				goto out;
			}
		}
		struct timespec ts = {0, tty ? 200000000L : 100000000L};
		nanosleep(&ts, NULL);
	}
	if (tty)
		fputc('\n', stderr);
	code = exit_status(&st, check, cancelled || !strcmp(st.state, "cancelled"));
	report(&st, check, json, code);
out:
	close(fd);
	free(buf);
	free(r);
	free(paths);
	return code;
}
