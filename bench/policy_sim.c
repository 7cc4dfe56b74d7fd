/* policy_sim.c - trace-driven benchmark of the RAM tier's replacement
 * policies, run against the real cache (cache/bcache.c), with a fill
 * function that counts origin requests instead of fetching.
 *
 * The trace is what a training job does: every epoch reads each of N files
 * once, in a fresh random permutation (seeded). Tables:
 *  1. lru, minio, epoch, single-block files, cache fraction f = 10..100%:
 *     hit rate per epoch and origin requests per epoch, against the
 *     formulas (minio/epoch: f from epoch 2; lru: f + (1-f) ln(1-f);
 *     epoch 1: 0, the cache starts cold). PASS/FAIL per row against the
 *     acceptance criteria: minio/epoch fetch (1-f) N blocks per epoch
 *     within 1% in every epoch from 2 on; lru's hit rate is within 2
 *     points of its formula in every epoch from 2 on (for N >= 10000;
 *     2 * sqrt(10000 / N) points below, as the spread grows).
 *  2. The same with a prefetcher running L files ahead (epoch vs lru):
 *     epoch keeps its resident set and stages the rest.
 *  3. resident = any/small/large with variable file sizes (minio): hit
 *     rate and hit bytes in the last epoch, replacements per epoch.
 * Exit status 1 if any row FAILs.
 *
 *   policy_sim [-n files] [-e epochs] [-s seed] [-l lookahead]
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../cache/bcache.h"

#define MAX_EPOCHS 32

static uint64_t origin_requests;

static int count_fill(void *ctx, void *buf, size_t len)
{
	(void)ctx;
	(void)buf;
	(void)len;
	origin_requests++;
	return 0;
}

/* splitmix64: a small seeded generator, the same on every machine. */
static uint64_t rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static void shuffle(uint32_t *v, uint32_t n, uint64_t *rng)
{
	for (uint32_t i = 0; i < n; i++)
		v[i] = i;
	for (uint32_t i = n - 1; i > 0; i--) {
		uint32_t j = (uint32_t)(rng_next(rng) % (i + 1));
		uint32_t t = v[i];
		v[i] = v[j];
		v[j] = t;
	}
}

struct run {
	uint32_t nfiles, epochs, lookahead;
	const size_t *size;       /* per file; all one block */
	size_t block_size;
	uint64_t seed;
	struct pfs_bcache_opts opts;
	/* results, per epoch */
	uint64_t origin[MAX_EPOCHS], hits[MAX_EPOCHS], hit_bytes[MAX_EPOCHS];
	uint64_t replaced[MAX_EPOCHS], bytes_read[MAX_EPOCHS];
	uint64_t staged_max;
};

static void read_file(struct pfs_bcache *c, struct run *r, uint32_t f, unsigned flags)
{
	struct pfs_block *b = NULL;
	if (pfs_bcache_get(c, f + 1, 0, r->size[f], r->size[f], flags, count_fill, NULL, &b) < 0) {
		fprintf(stderr, "policy_sim: get failed\n");
		exit(2);
	}
	pfs_bcache_put(c, b);
}

/* Replays the trace; the permutations depend on the seed only, so every
 * policy sees the same reads. */
static void run_trace(struct run *r)
{
	struct pfs_bcache *c = NULL;
	if (pfs_bcache_create(&r->opts, &c) < 0) {
		fprintf(stderr, "policy_sim: cannot create the cache\n");
		exit(2);
	}
	uint32_t n = r->nfiles;
	uint32_t *perm = malloc(sizeof(*perm) * n * 2); /* this epoch, next */
	if (!perm)
		exit(2);
	uint64_t rng = r->seed;
	shuffle(perm, n, &rng);
	shuffle(perm + n, n, &rng);
	r->staged_max = 0;
	for (uint32_t e = 0; e < r->epochs; e++) {
		pfs_bcache_set_epoch(c, e + 1);
		struct pfs_bcache_stats st0, st;
		pfs_bcache_stats(c, &st0);
		uint64_t o0 = origin_requests;
		r->hits[e] = r->hit_bytes[e] = r->bytes_read[e] = 0;
		for (uint32_t i = 0; i < n; i++) {
			if (r->lookahead) {
				if (e == 0 && i == 0)
					for (uint32_t k = 0; k < r->lookahead && k < n; k++)
						read_file(c, r, perm[k], PFS_BCACHE_PREFETCH);
				uint32_t k = i + r->lookahead; /* may be next epoch's */
				if (k < 2 * n && (k < n || e + 1 < r->epochs))
					read_file(c, r, perm[k], PFS_BCACHE_PREFETCH);
			}
			uint32_t f = perm[i];
			uint64_t before = origin_requests;
			read_file(c, r, f, 0);
			if (origin_requests == before) {
				r->hits[e]++;
				r->hit_bytes[e] += r->size[f];
			}
			r->bytes_read[e] += r->size[f];
			pfs_bcache_stats(c, &st);
			if (st.staged_bytes > r->staged_max)
				r->staged_max = st.staged_bytes;
		}
		pfs_bcache_stats(c, &st);
		r->origin[e] = origin_requests - o0;
		r->replaced[e] = st.replaced - st0.replaced;
		memmove(perm, perm + n, sizeof(*perm) * n);
		shuffle(perm + n, n, &rng);
	}
	free(perm);
	pfs_bcache_destroy(c);
}

static double lru_formula(double f)
{
	return f >= 1 ? 1 : f + (1 - f) * log(1 - f);
}

static int failures;

/* Table 1. */
static void table_policies(uint32_t n, uint32_t epochs, uint64_t seed)
{
	const size_t bs = 4096;
	size_t *size = malloc(sizeof(*size) * n);
	for (uint32_t i = 0; i < n; i++)
		size[i] = bs;
	static const enum pfs_policy pols[] = {PFS_POLICY_LRU, PFS_POLICY_MINIO, PFS_POLICY_EPOCH};
	/* LRU's hit rate per epoch is random, with a spread ~ 1/sqrt(N):
	 * 2 points at the default N = 10000, wider for smaller traces. */
	double lru_tol = n >= 10000 ? 0.02 : 0.02 * sqrt(10000.0 / n);
	printf("## 1. Hit rate per epoch: %u single-block files, %u epochs, seed %llu\n\n",
	       n, epochs, (unsigned long long)seed);
	printf("Expected: epoch 1 = 0 (cold); from epoch 2, lru = f + (1-f) ln(1-f), "
	       "minio/epoch = f (the optimum).\n");
	printf("origin/ep = origin requests per epoch, worst epoch >= 2; "
	       "expected = (1 - expected hit) N.\n");
	printf("check (f = 10..90%%): minio/epoch origin/ep within 1%% of expected in every "
	       "epoch >= 2; lru hit within %.1f points of expected in every epoch >= 2.\n\n",
	       100 * lru_tol);
	printf("| policy | f | hit %% per epoch 1..%u | expected hit %% | origin/ep (worst) | expected | check |\n",
	       epochs);
	printf("|---|---|---|---|---|---|---|\n");
	for (size_t p = 0; p < sizeof(pols) / sizeof(pols[0]); p++) {
		for (int fi = 1; fi <= 10; fi++) {
			double f = fi / 10.0;
			struct run r = {.nfiles = n, .epochs = epochs, .size = size, .block_size = bs,
					.seed = seed,
					.opts = {.budget = (uint64_t)(f * n + 0.5) * bs, .block_size = bs,
						 .policy = pols[p], .resident = PFS_RESIDENT_ANY}};
			r.opts.stage_budget = r.opts.budget / 4;
			run_trace(&r);
			double want = pols[p] == PFS_POLICY_LRU ? lru_formula(f) : f;
			double want_origin = (1 - want) * n;
			char hits[256];
			size_t o = 0;
			uint64_t worst = 0;
			double worst_dev = 0;
			int ok = 1;
			for (uint32_t e = 0; e < epochs; e++) {
				double h = (double)r.hits[e] / n;
				o += (size_t)snprintf(hits + o, sizeof(hits) - o, "%s%.1f",
						      e ? " " : "", 100 * h);
				if (e == 0) {
					ok &= r.hits[0] == 0;
					continue;
				}
				double dev = fabs((double)r.origin[e] - want_origin);
				if (dev >= worst_dev) {
					worst_dev = dev;
					worst = r.origin[e];
				}
				if (pols[p] == PFS_POLICY_LRU)
					ok &= fabs(h - want) <= lru_tol;
				else
					ok &= dev <= 0.01 * want_origin + 0.5;
			}
			int checked = fi < 10;
			if (checked && !ok)
				failures++;
			printf("| %s | %d%% | %s | %.1f | %llu | %.0f | %s |\n",
			       pfs_policy_name(pols[p]), fi * 10, hits, 100 * want,
			       (unsigned long long)worst, want_origin,
			       !checked ? (ok ? "(ok)" : "(off)") : ok ? "PASS" : "FAIL");
		}
	}
	printf("\n");
	free(size);
}

/* Table 2. */
static void table_prefetch(uint32_t n, uint32_t epochs, uint64_t seed, uint32_t look)
{
	const size_t bs = 4096;
	size_t *size = malloc(sizeof(*size) * n);
	for (uint32_t i = 0; i < n; i++)
		size[i] = bs;
	printf("## 2. With a prefetcher %u files ahead (stage_budget = budget/4)\n\n", look);
	printf("demand hit %% and origin requests: mean over epochs 2..%u; replaced: resident "
	       "blocks evicted in those epochs.\n\n", epochs);
	printf("| policy | f | demand hit %% | origin/ep | (1-f) N | replaced | staged max (blocks) |\n");
	printf("|---|---|---|---|---|---|---|\n");
	static const enum pfs_policy pols[] = {PFS_POLICY_LRU, PFS_POLICY_EPOCH};
	for (size_t p = 0; p < 2; p++) {
		for (int fi = 1; fi <= 9; fi += 2) {
			double f = fi / 10.0;
			struct run r = {.nfiles = n, .epochs = epochs, .size = size, .block_size = bs,
					.seed = seed, .lookahead = look,
					.opts = {.budget = (uint64_t)(f * n + 0.5) * bs, .block_size = bs,
						 .policy = pols[p]}};
			r.opts.stage_budget = r.opts.budget / 4;
			run_trace(&r);
			uint64_t hits = 0, origin = 0, repl = 0;
			for (uint32_t e = 1; e < epochs; e++) {
				hits += r.hits[e];
				origin += r.origin[e];
				repl += r.replaced[e];
			}
			double ne = epochs - 1;
			printf("| %s | %d%% | %.1f | %.0f | %.0f | %llu | %llu |\n",
			       pfs_policy_name(pols[p]), fi * 10, 100.0 * hits / (ne * n),
			       origin / ne, (1 - f) * n, (unsigned long long)repl,
			       (unsigned long long)(r.staged_max / bs));
		}
	}
	printf("\n");
	free(size);
}

static int cmp_size(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;
	return x < y ? -1 : x > y;
}

/* Table 3. */
static void table_resident(uint32_t n, uint32_t epochs, uint64_t seed)
{
	const size_t bs = 16384, lo = 256;
	size_t *size = malloc(sizeof(*size) * n), *sorted = malloc(sizeof(*size) * n);
	uint64_t rng = seed ^ 0x5eed, total = 0;
	for (uint32_t i = 0; i < n; i++) {
		/* log-uniform in [256 B, 16 KiB] */
		double u = (double)(rng_next(&rng) >> 11) / (double)(1ull << 53);
		size[i] = (size_t)(lo * pow((double)bs / lo, u));
		total += size[i];
		sorted[i] = size[i];
	}
	qsort(sorted, n, sizeof(*sorted), cmp_size);
	printf("## 3. resident = any / small / large (minio), %u files of 256 B..16 KiB "
	       "(log-uniform, %.1f MiB in all)\n\n", n, total / 1048576.0);
	printf("Last epoch: hit %% of reads and of bytes read; ideal = the best set for that "
	       "preference (smallest / largest files that fit). replaced: per epoch 1..%u.\n\n",
	       epochs);
	printf("| f (bytes) | resident | hit %% | hit bytes %% | ideal hit %% | ideal bytes %% | replaced per epoch |\n");
	printf("|---|---|---|---|---|---|---|\n");
	static const enum pfs_resident res[] = {PFS_RESIDENT_ANY, PFS_RESIDENT_SMALL,
						PFS_RESIDENT_LARGE};
	for (int fi = 1; fi <= 5; fi += 2) {
		uint64_t budget = total * (uint64_t)fi / 10;
		for (size_t k = 0; k < 3; k++) {
			struct run r = {.nfiles = n, .epochs = epochs, .size = size, .block_size = bs,
					.seed = seed,
					.opts = {.budget = budget, .block_size = bs,
						 .policy = PFS_POLICY_MINIO, .resident = res[k]}};
			run_trace(&r);
			uint32_t last = epochs - 1;
			/* The ideal set: greedy from the preferred end. */
			uint64_t used = 0, cnt = 0, bytes = 0;
			for (uint32_t i = 0; i < n; i++) {
				size_t s = res[k] == PFS_RESIDENT_LARGE ? sorted[n - 1 - i] : sorted[i];
				if (used + s > budget)
					break;
				used += s;
				cnt++;
				bytes += s;
			}
			char repl[256];
			size_t o = 0;
			for (uint32_t e = 0; e < epochs; e++)
				o += (size_t)snprintf(repl + o, sizeof(repl) - o, "%s%llu", e ? " " : "",
						      (unsigned long long)r.replaced[e]);
			if (res[k] == PFS_RESIDENT_ANY)
				printf("| %d%% | any | %.1f | %.1f | %s | %s | %s |\n", fi * 10,
				       100.0 * r.hits[last] / n,
				       100.0 * r.hit_bytes[last] / r.bytes_read[last], "-", "-", repl);
			else
				printf("| %d%% | %s | %.1f | %.1f | %.1f | %.1f | %s |\n", fi * 10,
				       pfs_resident_name(res[k]), 100.0 * r.hits[last] / n,
				       100.0 * r.hit_bytes[last] / r.bytes_read[last],
				       100.0 * cnt / n, 100.0 * bytes / total, repl);
		}
	}
	printf("\n");
	free(size);
	free(sorted);
}

int main(int argc, char **argv)
{
	uint32_t n = 10000, epochs = 5, look = 32;
	uint64_t seed = 1;
	int opt;
	while ((opt = getopt(argc, argv, "n:e:s:l:h")) != -1) {
		switch (opt) {
		case 'n': n = (uint32_t)strtoul(optarg, NULL, 10); break;
		case 'e': epochs = (uint32_t)strtoul(optarg, NULL, 10); break;
		case 's': seed = strtoull(optarg, NULL, 10); break;
		case 'l': look = (uint32_t)strtoul(optarg, NULL, 10); break;
		default:
			fprintf(stderr, "usage: %s [-n files] [-e epochs] [-s seed] [-l lookahead]\n",
				argv[0]);
			return opt == 'h' ? 0 : 2;
		}
	}
	if (n < 10 || epochs < 2 || epochs > MAX_EPOCHS) {
		fprintf(stderr, "policy_sim: need -n >= 10 and 2 <= -e <= %d\n", MAX_EPOCHS);
		return 2;
	}
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	table_policies(n, epochs, seed);
	table_prefetch(n, epochs, seed, look);
	table_resident(n, epochs, seed);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("%s: %d row(s) failed; %.1f s\n", failures ? "FAIL" : "PASS", failures,
	       (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
	return failures ? 1 : 0;
}
