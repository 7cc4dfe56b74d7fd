/* warm.c - see warm.h.
 *
 * Job states (guarded by w->lock):
 *   ADDING  -- #start -->  RUNNING  -- last worker ends --> DONE
 *                                   -- #cancel, then last worker ends --> CANCELLED
 * While ADDING, writes append to nodes[] (a bitmap drops repeats); from
 * RUNNING on nodes[] is read-only and workers take indexes from `next`.
 * A job leaves the table (threads joined, freed) only when it is not
 * RUNNING: replaced by a newer one, or at destroy.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "fs_int.h"
#include "warm.h"
#include "../catalog/ftable.h"
#include "../util/atomic.h"
#include "../util/clock.h"
#include "../util/log.h"

#define MAX_JOBS 16
#define ID_MAX 48
#define THREADS_DEFAULT 32
#define THREADS_MAX 256
#define LINE_MAX_BYTES 4096

enum mode { WARM, CHECK };
enum state { ADDING, RUNNING, DONE, CANCELLED };
static const char *const state_names[] = {"adding", "running", "done", "cancelled"};

/* What the job found or did, in bytes unless named files (all atomic). */
struct tally {
	uint64_t done_files, done_bytes, ram_bytes, ssd_bytes, cached_bytes;
	uint64_t fetched_bytes, nofit_bytes, failed_files, complete_files;
};

struct job {
	struct pfs_warm *w;
	char id[ID_MAX + 1];
	enum mode mode;
	enum state state;       /* guarded by w->lock */
	uint64_t seq;           /* creation order */
	unsigned nthreads;
	pthread_t *threads;     /* RUNNING and after: nthreads of them */
	unsigned live;          /* atomic: workers not yet ended */
	int cancel;             /* atomic */
	uint32_t *nodes;        /* ADDING: guarded by w->lock; then read-only */
	size_t n, cap;
	uint8_t *seen;          /* ADDING: bitmap of nodes taken; freed at start */
	uint64_t bytes, unknown; /* guarded by w->lock while ADDING */
	size_t next;            /* atomic: the next index a worker takes */
	int first_err;          /* atomic: 0, or the first failed file's errno */
	double t0, t1;          /* guarded by w->lock: start, end */
	struct tally t;
};

struct pfs_warm {
	struct pfs_fs *fs;
	pthread_mutex_t lock;
	struct job *jobs[MAX_JOBS]; /* guarded by lock; NULL: a free slot */
	uint64_t seq;               /* guarded by lock */
};

int pfs_warm_create(struct pfs_fs *fs, struct pfs_warm **out)
{
	struct pfs_warm *w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->fs = fs;
	pthread_mutex_init(&w->lock, NULL);
	*out = w;
	return 0;
}

/* Joins a job's workers (it must not be RUNNING, or be cancelled) and
 * frees it. No lock held: the workers take w->lock when they end. */
static void job_free(struct job *j)
{
	if (!j)
		return;
	for (unsigned i = 0; j->threads && i < j->nthreads; i++)
		pthread_join(j->threads[i], NULL);
	free(j->threads);
	free(j->nodes);
	free(j->seen);
	free(j);
}

void pfs_warm_destroy(struct pfs_warm *w)
{
	if (!w)
		return;
	for (int i = 0; i < MAX_JOBS; i++)
		if (w->jobs[i])
			pfs_store(&w->jobs[i]->cancel, 1);
	for (int i = 0; i < MAX_JOBS; i++)
		job_free(w->jobs[i]);
	pthread_mutex_destroy(&w->lock);
	free(w);
}

/* ---- the work ---------------------------------------------------------- */

static void do_file(struct job *j, uint32_t node)
{
	struct pfs_fs *fs = j->w->fs;
	struct pfs_fnode info = {0};
	struct pfs_blocks_obj o;
	int rc = pfs_ftable_get(fs->ft, node, &info);
	pfs_blocks_file(fs->blocks, node, &info, &o);
	int whole = 1;
	for (uint64_t b = 0; rc == 0 && b * fs->block_size < info.size; b++) {
		if (pfs_load(&j->cancel))
			return; /* not counted as done */
		size_t len = pfs_blocks_len(&o, b);
		struct pfs_blocks_place p;
		rc = j->mode == CHECK ? pfs_blocks_where(fs->blocks, &o, b, &p)
				      : pfs_blocks_warm(fs->blocks, &o, b, &p);
		if (rc < 0)
			break;
		pfs_add(&j->t.fetched_bytes, p.fetched ? len : 0);
		pfs_add(&j->t.done_bytes, len);
		pfs_add(&j->t.ram_bytes, p.ram ? len : 0);
		pfs_add(&j->t.ssd_bytes, p.ssd ? len : 0);
		pfs_add(&j->t.cached_bytes, p.ram || p.ssd ? len : 0);
		pfs_add(&j->t.nofit_bytes, p.ram || p.ssd ? 0 : len);
		whole &= p.ram || p.ssd;
	}
	if (rc < 0) {
		int zero = 0;
		pfs_add(&j->t.failed_files, 1);
		__atomic_compare_exchange_n(&j->first_err, &zero, -rc, 0, __ATOMIC_RELAXED,
					    __ATOMIC_RELAXED);
		whole = 0;
	}
	pfs_add(&j->t.complete_files, whole ? 1 : 0);
	pfs_add(&j->t.done_files, 1);
}

static void *worker(void *arg)
{
	struct job *j = arg;
	for (;;) {
		size_t i = __atomic_fetch_add(&j->next, 1, __ATOMIC_RELAXED);
		if (i >= j->n || pfs_load(&j->cancel))
			break;
		do_file(j, j->nodes[i]);
	}
	if (pfs_sub(&j->live, 1) == 0) {
		/* The last one out: what was queued for the SSD tier is durable
		 * before the job says done (a check then finds it). */
		if (j->mode == WARM)
			pfs_blocks_flush(j->w->fs->blocks);
		pthread_mutex_lock(&j->w->lock);
		j->state = pfs_load(&j->cancel) ? CANCELLED : DONE;
		j->t1 = pfs_clock_s();
		pthread_mutex_unlock(&j->w->lock);
	}
	return NULL;
}

/* ---- requests ---------------------------------------------------------- */

static int valid_id(const char *s)
{
	size_t n = strlen(s);
	if (n < 1 || n > ID_MAX)
		return 0;
	return strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._:-") == n;
}

static struct job *find(struct pfs_warm *w, const char *id)
{
	for (int i = 0; i < MAX_JOBS; i++)
		if (w->jobs[i] && !strcmp(w->jobs[i]->id, id))
			return w->jobs[i];
	return NULL;
}

/* A slot for a new job: a free one, else the oldest job not running,
 * which *old receives (the caller frees it after unlocking). Lock held.
 * -EBUSY when every job runs. */
static int take_slot(struct pfs_warm *w, struct job **old)
{
	int best = -1;
	*old = NULL;
	for (int i = 0; i < MAX_JOBS; i++) {
		if (!w->jobs[i])
			return i;
		if (w->jobs[i]->state != RUNNING &&
		    (best < 0 || w->jobs[i]->seq < w->jobs[best]->seq))
			best = i;
	}
	if (best < 0)
		return -EBUSY;
	*old = w->jobs[best];
	w->jobs[best] = NULL;
	return best;
}

static int add_node(struct job *j, uint32_t node, uint64_t size)
{
	if (j->seen[node / 8] & (1u << (node % 8)))
		return 0;
	if (j->n == j->cap) {
		size_t cap = j->cap ? j->cap * 2 : 1024;
		uint32_t *p = realloc(j->nodes, cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		j->nodes = p;
		j->cap = cap;
	}
	j->seen[node / 8] |= (uint8_t)(1u << (node % 8));
	j->nodes[j->n++] = node;
	j->bytes += size;
	return 0;
}

/* Adds the file at node, or every file under it (depth first, an explicit
 * stack: trees may be deep). Lock held. */
static int add_tree(struct pfs_warm *w, struct job *j, uint32_t top)
{
	const struct pfs_ftable *ft = w->fs->ft;
	struct pfs_fnode info;
	size_t cap = 64, n = 0;
	uint32_t *stack = malloc(cap * sizeof(*stack));
	int rc = 0;
	if (!stack)
		return -ENOMEM;
	stack[n++] = top;
	while (n && rc == 0) {
		uint32_t node = stack[--n];
		if (pfs_ftable_get(ft, node, &info) < 0)
			continue;
		if (!info.is_dir) {
			rc = add_node(j, node, info.size);
			continue;
		}
		uint32_t k = pfs_ftable_nchildren(ft, node);
		if (n + k > cap) {
			cap = (n + k) * 2;
			uint32_t *p = realloc(stack, cap * sizeof(*p));
			if (!p) {
				rc = -ENOMEM;
				break;
			}
			stack = p;
		}
		/* Reversed, so files come out in the listing's order. */
		for (uint32_t i = k; i-- > 0;)
			stack[n++] = pfs_ftable_child(ft, node, i);
	}
	free(stack);
	return rc;
}

static int add_path(struct pfs_warm *w, struct job *j, char *line)
{
	size_t n = strlen(line);
	uint32_t node;
	if (n && line[n - 1] == '\r')
		line[--n] = '\0';
	while (*line == '/')
		line++;
	if (!strncmp(line, PFS_CTL_NAME, strlen(PFS_CTL_NAME)) &&
	    (line[strlen(PFS_CTL_NAME)] == '/' || !line[strlen(PFS_CTL_NAME)])) {
		j->unknown++;
		return 0;
	}
	if (pfs_ftable_resolve(w->fs->ft, line, &node) < 0) {
		j->unknown++;
		return 0;
	}
	return add_tree(w, j, node);
}

/* "#job ID MODE [THREADS]": the job to add to, created if new. Lock held;
 * *old: a replaced job for the caller to free. */
static int job_line(struct pfs_warm *w, char *args, struct job **out, struct job **old)
{
	char *save, *id = strtok_r(args, " ", &save), *mode = strtok_r(NULL, " ", &save);
	char *th = strtok_r(NULL, " ", &save), *end;
	unsigned long threads = THREADS_DEFAULT;
	if (!id || !valid_id(id) || !mode || strtok_r(NULL, " ", &save))
		return -EINVAL;
	if (strcmp(mode, "warm") && strcmp(mode, "check"))
		return -EINVAL;
	if (th && ((threads = strtoul(th, &end, 10)) < 1 || threads > THREADS_MAX || *end))
		return -EINVAL;
	struct job *j = find(w, id);
	if (j) {
		if (j->state != ADDING)
			return -EINVAL;
		*out = j;
		return 0;
	}
	int slot = take_slot(w, old);
	if (slot < 0)
		return slot;
	uint32_t count = pfs_ftable_count(w->fs->ft);
	j = calloc(1, sizeof(*j));
	if (!j || !(j->seen = calloc((size_t)count / 8 + 1, 1))) {
		free(j);
		return -ENOMEM;
	}
	j->w = w;
	snprintf(j->id, sizeof(j->id), "%s", id);
	j->mode = strcmp(mode, "warm") ? CHECK : WARM;
	j->nthreads = (unsigned)threads;
	j->seq = ++w->seq;
	j->state = ADDING;
	w->jobs[slot] = j;
	*out = j;
	return 0;
}

/* Lock held. */
static int start(struct pfs_warm *w, struct job *j)
{
	if (j->state != ADDING)
		return -EINVAL;
	free(j->seen);
	j->seen = NULL;
	if (j->nthreads > j->n)
		j->nthreads = j->n ? (unsigned)j->n : 1;
	j->threads = calloc(j->nthreads, sizeof(*j->threads));
	if (!j->threads)
		return -ENOMEM;
	j->t0 = pfs_clock_s();
	j->state = RUNNING;
	pfs_store(&j->live, j->nthreads);
	for (unsigned i = 0; i < j->nthreads; i++) {
		if (pthread_create(&j->threads[i], NULL, worker, j) == 0)
			continue;
		/* Those started do the work; if they already ended, or none
		 * started, the job ends here. */
		unsigned missing = j->nthreads - i;
		j->nthreads = i;
		if (pfs_sub(&j->live, missing) == 0) {
			j->state = pfs_load(&j->cancel) ? CANCELLED : DONE;
			j->t1 = pfs_clock_s();
		}
		if (i == 0)
			return -EAGAIN;
		break;
	}
	pfs_debug("warm job %s: %s of %zu files (%" PRIu64 " bytes), %u threads", j->id,
		  j->mode == WARM ? "warm-up" : "check", j->n, j->bytes, j->nthreads);
	return 0;
}

int pfs_warm_write(struct pfs_warm *w, const char *buf, size_t len)
{
	char *text = malloc(len + 1), *save = NULL;
	struct job *j = NULL, *old = NULL;
	int rc = 0;
	if (!text)
		return -ENOMEM;
	memcpy(text, buf, len);
	text[len] = '\0';
	char *cmd = strtok_r(text, "\n", &save);
	if (cmd && cmd[strlen(cmd) - 1] == '\r')
		cmd[strlen(cmd) - 1] = '\0';
	pthread_mutex_lock(&w->lock);
	if (!cmd) {
		rc = -EINVAL;
	} else if (!strncmp(cmd, "#job ", 5)) {
		rc = job_line(w, cmd + 5, &j, &old);
		for (char *line; rc == 0 && (line = strtok_r(NULL, "\n", &save));)
			rc = strlen(line) < LINE_MAX_BYTES ? add_path(w, j, line) : -EINVAL;
	} else if (!strncmp(cmd, "#start ", 7) || !strncmp(cmd, "#cancel ", 8)) {
		int is_start = cmd[1] == 's';
		j = find(w, cmd + (is_start ? 7 : 8));
		if (!j || strtok_r(NULL, "\n", &save))
			rc = -EINVAL;
		else if (is_start)
			rc = start(w, j);
		else
			pfs_store(&j->cancel, 1);
	} else {
		rc = -EINVAL;
	}
	pthread_mutex_unlock(&w->lock);
	job_free(old);
	free(text);
	return rc;
}

size_t pfs_warm_render(void *p, char *buf, size_t cap)
{
	struct pfs_warm *w = p;
	struct job *order[MAX_JOBS];
	int n = 0;
	size_t len = 0;
	buf[0] = '\0';
	pthread_mutex_lock(&w->lock);
	for (int i = 0; i < MAX_JOBS; i++)
		if (w->jobs[i])
			order[n++] = w->jobs[i];
	for (int a = 1; a < n; a++) /* oldest first */
		for (int b = a; b > 0 && order[b]->seq < order[b - 1]->seq; b--) {
			struct job *t = order[b];
			order[b] = order[b - 1];
			order[b - 1] = t;
		}
	double now = pfs_clock_s();
	for (int i = 0; i < n && len < cap; i++) {
		struct job *j = order[i];
		double secs = j->state == ADDING ? 0 : (j->state == RUNNING ? now : j->t1) - j->t0;
		int k = snprintf(buf + len, cap - len,
			"%s mode=%s state=%s threads=%u files=%zu bytes=%" PRIu64 " unknown=%" PRIu64
			" done_files=%" PRIu64 " done_bytes=%" PRIu64 " ram_bytes=%" PRIu64
			" ssd_bytes=%" PRIu64 " cached_bytes=%" PRIu64 " fetched_bytes=%" PRIu64
			" nofit_bytes=%" PRIu64 " failed_files=%" PRIu64 " complete_files=%" PRIu64
			" errno=%d seconds=%.3f\n",
			j->id, j->mode == WARM ? "warm" : "check", state_names[j->state], j->nthreads,
			j->n, j->bytes, j->unknown, pfs_load(&j->t.done_files),
			pfs_load(&j->t.done_bytes), pfs_load(&j->t.ram_bytes),
			pfs_load(&j->t.ssd_bytes), pfs_load(&j->t.cached_bytes),
			pfs_load(&j->t.fetched_bytes), pfs_load(&j->t.nofit_bytes),
			pfs_load(&j->t.failed_files), pfs_load(&j->t.complete_files),
			pfs_load(&j->first_err), secs);
		if (k < 0 || (size_t)k >= cap - len) {
			buf[len] = '\0';
			break;
		}
		len += (size_t)k;
	}
	pthread_mutex_unlock(&w->lock);
	return len;
}
