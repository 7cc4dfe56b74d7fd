/* permreader.c - read a list of files in the given order with many threads,
 * recording each file's latency, the way a shuffling data loader does.
 *
 *   permreader THREADS LISTFILE [DEADLINE_S]
 *
 * LISTFILE holds one path per line, already in the order to read (a random
 * permutation for an epoch). THREADS threads take the next path from a
 * shared counter, so files are requested in list order; each thread opens
 * its file, reads it to EOF in 1 MiB reads and closes it, timing open to
 * close. With DEADLINE_S (seconds, > 0) no thread starts a new file after
 * that long: a slow scenario then measures a prefix of the epoch.
 *
 * Prints one line:
 *   files=N total=N bytes=N seconds=S errors=N p50_ms=X p90_ms=X p99_ms=X max_ms=X
 * (files: read; total: in the list). Exits 1 if any file failed.
 *
 * Same approach as readers.c (C, so the benchmark measures the filesystem,
 * not Python's GIL); percentiles are nearest-rank over the files read.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static char **paths;
static size_t npaths;
static size_t next_idx;                 /* atomic */
static size_t ndone;                    /* atomic */
static unsigned long long total_bytes;  /* atomic */
static size_t nerrors;                  /* atomic */
static uint64_t *lat_ns;                /* per list index; 0: not read */
static uint64_t deadline_ns;            /* 0: none */

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void *worker(void *arg)
{
	char *buf = malloc(1 << 20);
	(void)arg;
	if (!buf)
		return NULL;
	for (;;) {
		if (deadline_ns && now_ns() >= deadline_ns)
			break;
		size_t i = __atomic_fetch_add(&next_idx, 1, __ATOMIC_RELAXED);
		if (i >= npaths)
			break;
		uint64_t t0 = now_ns();
		int fd = open(paths[i], O_RDONLY);
		if (fd < 0) {
			fprintf(stderr, "permreader: %s: %s\n", paths[i], strerror(errno));
			__atomic_add_fetch(&nerrors, 1, __ATOMIC_RELAXED);
			continue;
		}
		unsigned long long n = 0;
		int bad = 0;
		for (;;) {
			ssize_t r = read(fd, buf, 1 << 20);
			if (r > 0) {
				n += (unsigned long long)r;
				continue;
			}
			if (r < 0) {
				fprintf(stderr, "permreader: %s: %s\n", paths[i], strerror(errno));
				__atomic_add_fetch(&nerrors, 1, __ATOMIC_RELAXED);
				bad = 1;
			}
			break;
		}
		close(fd);
		uint64_t dt = now_ns() - t0;
		if (!bad) {
			lat_ns[i] = dt ? dt : 1;
			__atomic_add_fetch(&ndone, 1, __ATOMIC_RELAXED);
		}
		__atomic_add_fetch(&total_bytes, n, __ATOMIC_RELAXED);
	}
	free(buf);
	return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Nearest-rank percentile of sorted v[0..n), in ms. */
static double pct_ms(const uint64_t *v, size_t n, double p)
{
	if (n == 0)
		return 0.0;
	size_t k = (size_t)(p / 100.0 * (double)n + 0.999999);
	if (k < 1)
		k = 1;
	if (k > n)
		k = n;
	return (double)v[k - 1] / 1e6;
}

int main(int argc, char **argv)
{
	if (argc != 3 && argc != 4) {
		fprintf(stderr, "usage: permreader THREADS LISTFILE [DEADLINE_S]\n");
		return 2;
	}
	int nthreads = atoi(argv[1]);
	FILE *f = fopen(argv[2], "r");
	double deadline_s = argc == 4 ? atof(argv[3]) : 0.0;
	if (nthreads < 1 || nthreads > 1024 || !f || deadline_s < 0) {
		fprintf(stderr, "permreader: bad thread count, list file or deadline\n");
		return 2;
	}
	size_t cap = 0;
	char *line = NULL;
	size_t lcap = 0;
	ssize_t len;
	while ((len = getline(&line, &lcap, f)) > 0) {
		if (line[len - 1] == '\n')
			line[--len] = '\0';
		if (len == 0)
			continue;
		if (npaths == cap) {
			cap = cap ? 2 * cap : 1024;
			paths = realloc(paths, cap * sizeof(*paths));
			if (!paths)
				return 2;
		}
		paths[npaths++] = strdup(line);
	}
	free(line);
	fclose(f);
	lat_ns = calloc(npaths ? npaths : 1, sizeof(*lat_ns));
	pthread_t *tids = calloc((size_t)nthreads, sizeof(*tids));
	if (!lat_ns || !tids)
		return 2;

	uint64_t t0 = now_ns();
	if (deadline_s > 0)
		deadline_ns = t0 + (uint64_t)(deadline_s * 1e9);
	for (int i = 0; i < nthreads; i++)
		if (pthread_create(&tids[i], NULL, worker, NULL) != 0)
			return 2;
	for (int i = 0; i < nthreads; i++)
		pthread_join(tids[i], NULL);
	double secs = (double)(now_ns() - t0) / 1e9;

	size_t m = 0;
	for (size_t i = 0; i < npaths; i++)
		if (lat_ns[i])
			lat_ns[m++] = lat_ns[i];
	qsort(lat_ns, m, sizeof(*lat_ns), cmp_u64);
	printf("files=%zu total=%zu bytes=%llu seconds=%.6f errors=%zu "
	       "p50_ms=%.3f p90_ms=%.3f p99_ms=%.3f max_ms=%.3f\n",
	       ndone, npaths, total_bytes, secs, nerrors, pct_ms(lat_ns, m, 50),
	       pct_ms(lat_ns, m, 90), pct_ms(lat_ns, m, 99), m ? (double)lat_ns[m - 1] / 1e6 : 0.0);
	return nerrors ? 1 : 0;
}
