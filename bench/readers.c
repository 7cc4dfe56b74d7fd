/* readers.c - read many files with many threads, the way a data loader does.
 *
 *   readers THREADS LISTFILE
 *
 * LISTFILE holds one path per line. THREADS threads take the next path from
 * a shared counter, open it, read it to EOF in 1 MiB reads, close it. Prints
 * one line: "files=N bytes=N seconds=S errors=N". Exits 1 if any file failed.
 *
 * Written in C so the benchmark measures the filesystem, not Python's GIL.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static char **paths;
static size_t npaths;
static size_t next_idx;     /* atomic */
static unsigned long long total_bytes; /* atomic */
static size_t nerrors;      /* atomic */

static void *worker(void *arg)
{
	char *buf = malloc(1 << 20);
	(void)arg;
	if (!buf)
		return NULL;
	for (;;) {
		size_t i = __atomic_fetch_add(&next_idx, 1, __ATOMIC_RELAXED);
		if (i >= npaths)
			break;
		int fd = open(paths[i], O_RDONLY);
		if (fd < 0) {
			fprintf(stderr, "readers: %s: %s\n", paths[i], strerror(errno));
			__atomic_add_fetch(&nerrors, 1, __ATOMIC_RELAXED);
			continue;
		}
		unsigned long long n = 0;
		for (;;) {
			ssize_t r = read(fd, buf, 1 << 20);
			if (r > 0) {
				n += (unsigned long long)r;
				continue;
			}
			if (r < 0) {
				fprintf(stderr, "readers: %s: %s\n", paths[i], strerror(errno));
				__atomic_add_fetch(&nerrors, 1, __ATOMIC_RELAXED);
			}
			break;
		}
		close(fd);
		__atomic_add_fetch(&total_bytes, n, __ATOMIC_RELAXED);
	}
	free(buf);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: readers THREADS LISTFILE\n");
		return 2;
	}
	int nthreads = atoi(argv[1]);
	FILE *f = fopen(argv[2], "r");
	if (nthreads < 1 || nthreads > 1024 || !f) {
		fprintf(stderr, "readers: bad thread count or list file\n");
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

	pthread_t *tids = calloc((size_t)nthreads, sizeof(*tids));
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 0; i < nthreads; i++)
		if (pthread_create(&tids[i], NULL, worker, NULL) != 0)
			return 2;
	for (int i = 0; i < nthreads; i++)
		pthread_join(tids[i], NULL);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	printf("files=%zu bytes=%llu seconds=%.6f errors=%zu\n", npaths, total_bytes, secs, nerrors);
	return nerrors ? 1 : 0;
}
