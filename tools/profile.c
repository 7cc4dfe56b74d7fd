/* profile.c - `prestofs profile MOUNT [SUBDIR]`: PRESTO's profiler.
 *
 * Design notes.
 * - Sampling: one readdir walk of MOUNT[/SUBDIR] (".prestofs" skipped) with
 *   reservoir sampling (seeded splitmix64), so the walk holds N paths, not the
 *   whole listing; it also counts the JPEGs, from which totals are
 *   extrapolated (mean per sample x count).
 * - Every strategy is measured on the same samples: a sample on which one
 *   available strategy fails is left out of all means (and counted).
 * - Costs (wall clock, one thread, so "per core"; each timed op is the median
 *   of REPS runs):
 *     loader  raw: warm read of the JPEG through the mount + tjDecompress2 to
 *             RGB (what a PIL/libjpeg-turbo loader does); views: warm read of
 *             MOUNT/.prestofs/views/SPEC/REL (read twice, second timed), or a
 *             memcpy of the output size when that read fails or differs from
 *             the in-process output; zstd variants add ZSTD_decompress and read
 *             the compressed size (the warm read time scaled by the ratio).
 *     prep    one time per sample: pfs_view_apply in-process (0 for raw), plus
 *             ZSTD_compress (level 3) for the zstd variants.
 *     storage bytes kept per sample: JPEG size, view output size, zstd size.
 * - Score (PRESTO: throughput first, storage and preprocessing as weights):
 *     score = thr/thr_max - w_s * storage/storage_max - w_p * prep/prep_max
 *   defaults w_s = 0.25, w_p = 0.10 (--storage-weight, --prep-weight).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <turbojpeg.h>
#include <zstd.h>
#include <zstd_errors.h>

#include "profile.h"
#include "../transform/view.h"
#include "../util/clock.h"

#define DEFAULT_SAMPLES 64
#define MAX_SAMPLES 100000
#define MAX_DEPTH 64
#define MAX_JPEG_BYTES (256u << 20)      /* a bigger "JPEG" is skipped */
#define MAX_PIXELS 64000000ull           /* = the daemon's view_max_pixels default */
#define ZSTD_LEVEL 3
#define REPS 3
#define NSTRAT 4                         /* raw + 3 views, each plain and zstd */

static const char *const strat_spec[NSTRAT] = {
	NULL, "decode", "resize=256", "resize=256,crop=224",
};

struct cost {
	double storage, prep, loader; /* bytes, seconds, seconds */
};

struct strat {
	char canon[PFS_VIEW_CANON_MAX];
	struct pfs_view_spec spec;
	int usable;              /* parsed (raw: always) */
	int ok_any;              /* succeeded on at least one sample */
	int first_err;           /* first failure, negative errno */
	unsigned read_fallback;  /* samples timed with memcpy instead of a mount read */
	int read_err;            /* first mount read error (negative errno) */
	unsigned mismatch;       /* mount bytes differ from the in-process output */
	struct cost sum[2];      /* [plain, zstd] over the used samples */
};

struct prof {
	const char *mount;
	char *subdir;            /* normalised: no leading or trailing '/'; "" = all */
	unsigned want;
	uint64_t seed, rng;
	double w_storage, w_prep;
	char **sample;           /* relative to mount; want slots */
	uint64_t njpeg, nfiles;
	int tty;
	double last_progress;    /* when progress last printed */
	struct strat st[NSTRAT];
	tjhandle tj;
	ZSTD_CCtx *zc;
	ZSTD_DCtx *zd;
	char parse_err[256];
};

static double median3(const double t[REPS])
{
	double a = t[0], b = t[1], c = t[2];
	if (a > b) { double x = a; a = b; b = x; }
	if (b > c) b = c;
	return a > b ? a : b;
}

/* Runs stmt up to REPS times, stopping when rc turns negative; med = the
 * median wall time. The loader pays the typical cost, not the first one. */
#define TIME_MEDIAN(med, rc, stmt)                                            \
	do {                                                                  \
		double t_[REPS] = {0};                                        \
		for (int r_ = 0; r_ < REPS && (rc) == 0; r_++) {              \
			double t0_ = pfs_clock_s();                                 \
			stmt;                                                 \
			t_[r_] = pfs_clock_s() - t0_;                               \
		}                                                             \
		(med) = median3(t_);                                          \
	} while (0)

static uint64_t splitmix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* zstd's size_t errors, translated here only. */
static int zstd_errno(size_t r)
{
	if (!ZSTD_isError(r))
		return 0;
	return ZSTD_getErrorCode(r) == ZSTD_error_memory_allocation ? -ENOMEM : -EIO;
}

/* ---- walk and reservoir sampling ---- */

static void progress(struct prof *p, const char *what, uint64_t done, uint64_t total)
{
	double t = pfs_clock_s(), last = p->last_progress;
	int final = total && done == total;
	if (p->tty) {
		if (!final && t - last < 0.1)
			return;
		p->last_progress = t;
		if (!total) {
			fprintf(stderr, "\rprestofs profile: %s %llu files", what,
				(unsigned long long)done);
			return;
		}
		int w = 30, fill = (int)(done * (uint64_t)w / total);
		fprintf(stderr, "\rprestofs profile: %s [%.*s%*s] %llu/%llu", what, fill,
			"##############################", w - fill, "",
			(unsigned long long)done, (unsigned long long)total);
		if (final)
			fputc('\n', stderr);
	} else if (total && (final || t - last >= 10.0)) {
		p->last_progress = t;
		fprintf(stderr, "prestofs profile: %s %llu/%llu\n", what,
			(unsigned long long)done, (unsigned long long)total);
	}
}

static int offer(struct prof *p, const char *rel)
{
	uint64_t i = p->njpeg++;
	uint64_t slot = i < p->want ? i : splitmix64(&p->rng) % (i + 1);
	if (slot >= p->want)
		return 0;
	char *s = strdup(rel);
	if (!s)
		return -ENOMEM;
	free(p->sample[slot]);
	p->sample[slot] = s;
	return 0;
}

/* rel (PATH_MAX bytes): fd's directory relative to the mount ("" = the
 * root); names are appended and removed again. Takes ownership of fd. */
static int walk(struct prof *p, int fd, char *rel, size_t rel_len, int depth)
{
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -errno;
	}
	int rc = 0;
	struct dirent *e;
	while (rc == 0 && (errno = 0, e = readdir(d))) {
		const char *n = e->d_name;
		if (!strcmp(n, ".") || !strcmp(n, "..") || !strcmp(n, ".prestofs"))
			continue;
		size_t nl = strlen(n);
		if (rel_len + 1 + nl + 1 > PATH_MAX) {
			rc = -ENAMETOOLONG;
			break;
		}
		int is_dir = e->d_type == DT_DIR, is_reg = e->d_type == DT_REG;
		if (e->d_type == DT_UNKNOWN) {
			struct stat sb;
			if (fstatat(dirfd(d), n, &sb, AT_SYMLINK_NOFOLLOW) < 0) {
				rc = -errno;
				break;
			}
			is_dir = S_ISDIR(sb.st_mode);
			is_reg = S_ISREG(sb.st_mode);
		}
		size_t l = rel_len;
		if (l)
			rel[l++] = '/';
		memcpy(rel + l, n, nl + 1);
		if (is_dir && depth < MAX_DEPTH) {
			int sub = openat(dirfd(d), n, O_RDONLY | O_DIRECTORY);
			rc = sub < 0 ? -errno : walk(p, sub, rel, l + nl, depth + 1);
		} else if (is_reg) {
			p->nfiles++;
			if (pfs_view_is_jpeg_name(n))
				rc = offer(p, rel);
			progress(p, "scanning:", p->nfiles, 0);
		}
		rel[rel_len] = '\0';
	}
	if (rc == 0 && errno)
		rc = -errno;
	closedir(d);
	return rc;
}

/* ---- reading files ---- */

/* Reads up to cap bytes of path from offset 0 into buf; *got = bytes read. */
static int read_into(const char *path, void *buf, size_t cap, size_t *got)
{
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return -errno;
	ssize_t r = 1;
	size_t n = 0;
	while (n < cap && (r = pread(fd, (char *)buf + n, cap - n, (off_t)n)) != 0) {
		if (r < 0 && errno != EINTR)
			break;
		n += r > 0 ? (size_t)r : 0;
	}
	int rc = r < 0 ? -errno : 0;
	close(fd);
	*got = n;
	return rc;
}

/* Reads path twice (the first warms the caches), returns the second read's
 * time in *secs. The caller's buf holds cap bytes. */
static int warm_read(const char *path, void *buf, size_t cap, size_t *got, double *secs)
{
	int rc = read_into(path, buf, cap, got);
	if (rc < 0)
		return rc;
	double t0 = pfs_clock_s();
	rc = read_into(path, buf, cap, got);
	*secs = pfs_clock_s() - t0;
	return rc;
}

/* The whole JPEG into a new buffer (caller frees), at most MAX_JPEG_BYTES;
 * *secs: its warm read. */
static int read_raw(const char *path, void **out, size_t *len, double *secs)
{
	struct stat sb;
	if (stat(path, &sb) < 0)
		return -errno;
	if (sb.st_size <= 0 || (uint64_t)sb.st_size > MAX_JPEG_BYTES)
		return -EFBIG;
	*len = (size_t)sb.st_size;
	size_t got = 0;
	int rc = (*out = malloc(*len)) ? warm_read(path, *out, *len, &got, secs) : -ENOMEM;
	return rc < 0 ? rc : got == *len ? 0 : -EIO;
}

/* A memcpy the compiler cannot drop as a dead store. */
static void *(*volatile copy_fn)(void *, const void *, size_t) = memcpy;

/* ---- measurements ---- */

/* Decode to RGB as a loader would; TurboJPEG's error state stays in here. */
static int tj_decode_time(tjhandle tj, const void *jpeg, size_t len, double *secs)
{
	int w, h, sub, cs;
	if (tjDecompressHeader3(tj, jpeg, (unsigned long)len, &w, &h, &sub, &cs) < 0)
		return -EIO;
	if (w <= 0 || h <= 0 || (uint64_t)w * (uint64_t)h > MAX_PIXELS)
		return -E2BIG;
	unsigned char *rgb = malloc((size_t)w * (size_t)h * 3);
	if (!rgb)
		return -ENOMEM;
	int rc = 0;
	TIME_MEDIAN(*secs, rc,
		    if (tjDecompress2(tj, jpeg, (unsigned long)len, rgb, w, 0, h, TJPF_RGB, 0) < 0
			&& tjGetErrorCode(tj) == TJERR_FATAL) rc = -EIO);
	free(rgb);
	return rc;
}

/* zstd variant of a stored blob: size, compress and decompress times. */
static int zstd_cost(struct prof *p, const void *src, size_t len, size_t *csize,
		     double *comp_s, double *decomp_s)
{
	size_t bound = ZSTD_compressBound(len);
	char *c = malloc(bound), *d = malloc(len ? len : 1);
	int rc = (c && d) ? 0 : -ENOMEM;
	size_t n = 0, m = 0;
	TIME_MEDIAN(*comp_s, rc, n = ZSTD_compressCCtx(p->zc, c, bound, src, len, ZSTD_LEVEL);
		    rc = zstd_errno(n));
	TIME_MEDIAN(*decomp_s, rc, m = ZSTD_decompressDCtx(p->zd, d, len, c, n);
		    rc = zstd_errno(m));
	if (rc == 0 && (m != len || memcmp(d, src, len)))
		rc = -EIO; /* a round trip that loses bytes measures nothing */
	*csize = n;
	free(d);
	free(c);
	return rc;
}

/* Loader-side cost of reading one view's bytes: through the mount if that
 * works and matches the in-process output, else a memcpy of the size. */
static int view_read_cost(struct prof *p, struct strat *s, const char *rel,
			  const void *out, size_t len, double *secs)
{
	char path[PATH_MAX + 64];
	int n = snprintf(path, sizeof(path), "%s/.prestofs/views/%s/%s", p->mount, s->canon, rel);
	char *buf = malloc(len + 1);
	if (!buf)
		return -ENOMEM;
	size_t got = 0;
	int rc = n < (int)sizeof(path) ? warm_read(path, buf, len + 1, &got, secs) : -ENAMETOOLONG;
	if (rc == 0 && (got != len || memcmp(buf, out, len))) {
		s->mismatch++;
		rc = -EIO;
	} else if (rc < 0 && !s->read_err) {
		s->read_err = rc;
	}
	if (rc < 0) {
		rc = 0;
		TIME_MEDIAN(*secs, rc, copy_fn(buf, out, len));
		s->read_fallback++;
	}
	free(buf);
	return 0;
}

/* One strategy on one sample: c[0] plain, c[1] zstd. */
static int measure(struct prof *p, int k, const char *rel, const void *jpeg, size_t jlen,
		   double raw_read_s, struct cost c[2])
{
	struct strat *s = &p->st[k];
	const void *blob = jpeg;
	size_t blen = jlen;
	void *out = NULL;
	double prep = 0, read_s = raw_read_s, decode_s = 0;
	int rc;
	if (!strat_spec[k]) {
		rc = tj_decode_time(p->tj, jpeg, jlen, &decode_s);
	} else {
		rc = 0;
		TIME_MEDIAN(prep, rc, free(out); out = NULL;
			    rc = pfs_view_apply(&s->spec, jpeg, jlen, MAX_PIXELS, &out, &blen));
		if (rc == 0) {
			blob = out;
			rc = view_read_cost(p, s, rel, out, blen, &read_s);
		}
	}
	size_t csize = 0;
	double comp_s = 0, decomp_s = 0;
	if (rc == 0)
		rc = zstd_cost(p, blob, blen, &csize, &comp_s, &decomp_s);
	if (rc == 0) {
		c[0] = (struct cost){(double)blen, prep, read_s + decode_s};
		c[1] = (struct cost){(double)csize, prep + comp_s,
				     read_s * (double)csize / (double)blen + decomp_s + decode_s};
	} else if (!s->first_err) {
		s->first_err = rc;
	}
	free(out);
	return rc;
}

/* ---- report ---- */

#define strat_name(k) (strat_spec[k] ? strat_spec[k] : "raw")

static void report(struct prof *p, unsigned used, unsigned skipped)
{
	double best_thr = 0, max_st = 0, max_prep = 0, score[NSTRAT][2];
	struct cost m[NSTRAT][2];
	for (int k = 0; k < NSTRAT; k++)
		for (int z = 0; z < 2; z++) {
			struct cost *s = &p->st[k].sum[z];
			m[k][z] = (struct cost){s->storage / used, s->prep / used, s->loader / used};
			if (!p->st[k].ok_any)
				continue;
			double thr = 1.0 / m[k][z].loader;
			best_thr = thr > best_thr ? thr : best_thr;
			max_st = m[k][z].storage > max_st ? m[k][z].storage : max_st;
			max_prep = m[k][z].prep > max_prep ? m[k][z].prep : max_prep;
		}
	int bk = 0, bz = 0;
	for (int k = 0; k < NSTRAT; k++)
		for (int z = 0; z < 2; z++) {
			if (!p->st[k].ok_any)
				continue;
			score[k][z] = (1.0 / m[k][z].loader) / best_thr -
				      p->w_storage * m[k][z].storage / max_st -
				      (max_prep > 0 ? p->w_prep * m[k][z].prep / max_prep : 0);
			if (score[k][z] > score[bk][bz])
				bk = k, bz = z;
		}

	printf("prestofs profile: %s%s%s: %u of %llu JPEGs measured (%u skipped), seed %llu\n",
	       p->mount, *p->subdir ? "/" : "", p->subdir, used, (unsigned long long)p->njpeg,
	       skipped, (unsigned long long)p->seed);
	printf("%-22s %-6s %12s %12s %12s %12s %14s %7s\n", "strategy", "stored", "KB/sample",
	       "total_MB", "prep_ms", "loader_ms", "samples/s/core", "score");
	for (int k = 0; k < NSTRAT; k++)
		for (int z = 0; z < 2; z++) {
			struct cost *c = &m[k][z];
			printf("%-22s %-6s ", strat_name(k), z ? "zstd" : "plain");
			if (!p->st[k].ok_any)
				printf("%12s %12s %12s %12s %14s %7s\n", "n/a", "n/a", "n/a", "n/a",
				       "n/a", "n/a");
			else
				printf("%12.2f %12.2f %12.3f %12.4f %14.1f %7.3f\n", c->storage / 1e3,
				       c->storage * (double)p->njpeg / 1e6, c->prep * 1e3,
				       c->loader * 1e3, 1.0 / c->loader, score[k][z]);
		}
	printf("KB = 1000 bytes; total = KB/sample x %llu JPEGs; score = throughput/best"
	       " - %.2f*storage/max - %.2f*prep/max\n", (unsigned long long)p->njpeg,
	       p->w_storage, p->w_prep);

	for (int k = 1; k < NSTRAT; k++) {
		struct strat *s = &p->st[k];
		if (!s->ok_any)
			printf("note: %s unavailable: %s\n", strat_name(k), s->usable ?
			       strerror(-s->first_err) : p->parse_err);
		else if (s->read_fallback)
			printf("note: %s: the view read through the mount failed for %u samples"
			       " (%u with other bytes; first error: %s): loader cost = memcpy of"
			       " the output size\n", strat_name(k), s->read_fallback, s->mismatch,
			       s->read_err ? strerror(-s->read_err) : "none");
	}

	struct cost *b = &m[bk][bz], *r = &m[0][0];
	printf("recommend %s (%s): %.1fx the throughput of raw at %.1fx its storage,"
	       " %.2f ms/sample once to prepare (best score %.3f); ",
	       strat_name(bk), bz ? "zstd" : "plain", r->loader / b->loader,
	       b->storage / r->storage, b->prep * 1e3, score[bk][bz]);
	const char *sep = *p->subdir ? "/" : "";
	if (bk == 0)
		printf("use %s%s%s/... as is%s\n", p->mount, sep, p->subdir,
		       bz ? ", compressed with zstd -3 by your pipeline" : "");
	else
		printf("use %s/.prestofs/views/%s%s%s/...%s\n", p->mount, p->st[bk].canon, sep,
		       p->subdir, bz ? " (stored zstd -3 compressed by your pipeline: views are"
				       " served uncompressed)" : "");
}

/* ---- main ---- */

static void usage(FILE *f)
{
	fprintf(f, "usage: prestofs profile [-n N] [--seed S] [--storage-weight W]"
		   " [--prep-weight W] MOUNT [SUBDIR]\n");
}

static int parse_num(const char *s, double lo, double hi, double *out)
{
	char *end;
	errno = 0;
	*out = strtod(s, &end);
	return errno || end == s || *end || !(*out >= lo && *out <= hi) ? -EINVAL : 0;
}

static int parse_args(struct prof *p, int argc, char **argv)
{
	static const struct option lo[] = {
		{"samples", required_argument, NULL, 'n'},
		{"seed", required_argument, NULL, 's'},
		{"storage-weight", required_argument, NULL, 'S'},
		{"prep-weight", required_argument, NULL, 'P'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	double v;
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "n:h", lo, NULL)) != -1) {
		switch (c) {
		case 'n':
			if (parse_num(optarg, 1, MAX_SAMPLES, &v) < 0 || v != (unsigned)v)
				goto bad;
			p->want = (unsigned)v;
			break;
		case 's':
			if (parse_num(optarg, 0, 1e18, &v) < 0)
				goto bad;
			p->seed = (uint64_t)v;
			break;
		case 'S':
		case 'P':
			if (parse_num(optarg, 0, 100, &v) < 0)
				goto bad;
			*(c == 'S' ? &p->w_storage : &p->w_prep) = v;
			break;
		case 'h':
			usage(stdout);
			return 1;
		default:
			goto usage;
		}
	}
	if (argc - optind < 1 || argc - optind > 2)
		goto usage;
	p->mount = argv[optind];
	const char *sd = argc - optind == 2 ? argv[optind + 1] : "";
	sd += strspn(sd, "/");
	if (!(p->subdir = strdup(sd)))
		return -ENOMEM;
	for (size_t l = strlen(p->subdir); l && p->subdir[l - 1] == '/';)
		p->subdir[--l] = '\0';
	return 0;
bad:
	fprintf(stderr, "prestofs profile: bad value: %s\n", optarg);
usage:
	usage(stderr);
	return -EINVAL;
}

/* Measures every sample, then keeps the samples on which raw and every
 * strategy that worked at least once all worked (so all means cover the
 * same samples); a strategy failing everywhere (no transform) stays out. */
static unsigned run_samples(struct prof *p, unsigned nsamp, unsigned *skipped)
{
	struct cost (*c)[NSTRAT][2] = calloc(nsamp, sizeof(*c));
	int (*good)[NSTRAT] = calloc(nsamp, sizeof(*good));
	unsigned used = 0;
	*skipped = 0;
	if (!c || !good)
		goto out;
	for (unsigned i = 0; i < nsamp; i++) {
		const char *rel = p->sample[i];
		char path[PATH_MAX + 64];
		snprintf(path, sizeof(path), "%s/%s", p->mount, rel);
		void *jpeg = NULL;
		size_t jlen = 0;
		double raw_read_s = 0;
		if (read_raw(path, &jpeg, &jlen, &raw_read_s) == 0)
			for (int k = 0; k < NSTRAT; k++)
				if (p->st[k].usable)
					good[i][k] = measure(p, k, rel, jpeg, jlen, raw_read_s,
							     c[i][k]) == 0;
		free(jpeg);
		for (int k = 0; k < NSTRAT; k++)
			p->st[k].ok_any |= good[i][k];
		progress(p, "measuring", i + 1, nsamp);
	}
	for (unsigned i = 0; i < nsamp; i++) {
		int ok = good[i][0];
		for (int k = 1; ok && k < NSTRAT; k++)
			ok = good[i][k] || !p->st[k].ok_any;
		if (!ok) {
			(*skipped)++;
			fprintf(stderr, "prestofs profile: %s: skipped (a strategy failed on it)\n",
				p->sample[i]);
			continue;
		}
		used++;
		for (int k = 0; k < NSTRAT; k++)
			for (int z = 0; good[i][k] && z < 2; z++) {
				p->st[k].sum[z].storage += c[i][k][z].storage;
				p->st[k].sum[z].prep += c[i][k][z].prep;
				p->st[k].sum[z].loader += c[i][k][z].loader;
			}
	}
out:
	free(good);
	free(c);
	return used;
}

int pfs_profile_main(int argc, char **argv)
{
	struct prof p = {.want = DEFAULT_SAMPLES, .seed = 1, .w_storage = 0.25, .w_prep = 0.10};
	int ret = 1, rc;
	unsigned nsamp, used = 0, skipped = 0;
	char rel[PATH_MAX];
	p.tty = isatty(STDERR_FILENO);
	p.last_progress = pfs_clock_s();

	rc = parse_args(&p, argc - 1, argv + 1);
	if (rc != 0) {
		ret = rc > 0 ? 0 : 2;
		goto out_args;
	}
	p.rng = p.seed;
	char ctl[PATH_MAX + 16];
	struct stat sb;
	snprintf(ctl, sizeof(ctl), "%s/.prestofs", p.mount);
	if (stat(ctl, &sb) < 0 || !S_ISDIR(sb.st_mode)) {
		fprintf(stderr, "prestofs profile: %s is not a prestofs mount (no %s directory)\n",
			p.mount, ctl);
		goto out_args;
	}
	for (int k = 0; k < NSTRAT; k++)
		p.st[k].usable = !strat_spec[k] ||
			pfs_view_parse(strat_spec[k], &p.st[k].spec, p.st[k].canon,
				       sizeof(p.st[k].canon), p.parse_err, sizeof(p.parse_err)) == 0;
	p.sample = calloc(p.want, sizeof(*p.sample));
	if (!p.sample)
		goto out_args;

	snprintf(rel, sizeof(rel), "%s", p.subdir);
	char top[PATH_MAX + 16];
	snprintf(top, sizeof(top), "%s%s%s", p.mount, *p.subdir ? "/" : "", p.subdir);
	int fd = open(top, O_RDONLY | O_DIRECTORY);
	rc = fd < 0 ? -errno : walk(&p, fd, rel, strlen(rel), 0);
	fprintf(stderr, "%sprestofs profile: %llu JPEGs among %llu files\n", p.tty ? "\r" : "",
		(unsigned long long)p.njpeg, (unsigned long long)p.nfiles);
	if (rc < 0) {
		fprintf(stderr, "prestofs profile: %s: %s\n", top, strerror(-rc));
		goto out_sample;
	}
	if (!p.njpeg) {
		fprintf(stderr, "prestofs profile: no JPEG files (*.jpg, *.jpeg) under %s\n", top);
		goto out_sample;
	}
	nsamp = p.njpeg < p.want ? (unsigned)p.njpeg : p.want;

	p.tj = tjInitDecompress();
	p.zc = ZSTD_createCCtx();
	p.zd = ZSTD_createDCtx();
	if (!p.tj || !p.zc || !p.zd) {
		fprintf(stderr, "prestofs profile: out of memory\n");
		goto out_libs;
	}
	used = run_samples(&p, nsamp, &skipped);
	if (!used) {
		fprintf(stderr, "prestofs profile: none of the %u sampled JPEGs could be decoded\n",
			nsamp);
		goto out_libs;
	}
	report(&p, used, skipped);
	ret = fflush(stdout) == 0 ? 0 : 1;
out_libs:
	ZSTD_freeDCtx(p.zd);
	ZSTD_freeCCtx(p.zc);
	if (p.tj)
		tjDestroy(p.tj);
out_sample:
	for (unsigned i = 0; i < p.want; i++)
		free(p.sample[i]);
	free(p.sample);
out_args:
	free(p.subdir);
	return ret;
}
