/* Fuzz target for transform/ (views): the spec parser and pfs_view_apply on arbitrary
 * bytes.
 *
 * Input layout: byte 0 = n (spec length, n % 64), bytes 1..n = SPEC, the rest = the
 * "JPEG". A spec that does not parse is replaced by one of a fixed table (chosen by byte
 * 0) so that every input also reaches the decoder. Checked invariants, beyond "no crash,
 * no sanitizer report": a parsed spec's canonical form parses to itself; for ppm/npy an
 * answer from pfs_view_output_size equals the length pfs_view_apply produces.
 *
 * Builds (tests/fuzz/meson.build):
 *   - with -DPFS_FUZZ_LIBFUZZER there is no main() here: linked with libFuzzer, it is
 *     fuzz_view (scripts/fuzz view); linked with tests/fuzz/replay.c, the unit test
 *     replay_view runs tests/fuzz/corpus/view and tests/fuzz/regress/view once;
 *   - without it (the unit test random_view, tests/fuzz/meson.build): main() below runs
 *       fuzz_view [ITERATIONS [SEED]]     (default 20000, seed 1)
 *       fuzz_view DIR...                  each file in DIR (a libFuzzer corpus) once
 *     mixing random bytes, random specs and mutations (bit flips, byte sets, cuts,
 *     inserted markers) of small valid JPEGs made with TurboJPEG at start.
 */
#include <dirent.h>
#include <sys/stat.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <turbojpeg.h>

#include "transform/view.h"

#define FUZZ_MAX_PIXELS (1u << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const fallback_specs[] = {
	"decode", "fmt=npy", "resize=7", "resize=5x9,fmt=npy", "resize=16,fast,crop=8",
	"crop=40x3", "resize=3,crop=5,fmt=jpeg,q=30", "resize=33,fast",
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pfs_view_spec s, s2;
	char spec[65], canon[PFS_VIEW_CANON_MAX], canon2[PFS_VIEW_CANON_MAX], err[512];
	size_t n, out_len = 0;
	uint64_t want = 0;
	void *out = NULL;
	int rc, rc_size;

	if (size == 0)
		return 0;
	n = data[0] % 64;
	if (n > size - 1)
		n = size - 1;
	memcpy(spec, data + 1, n);
	spec[n] = '\0';
	if (pfs_view_parse(spec, &s, canon, sizeof(canon), err, sizeof(err)) == 0) {
		if (pfs_view_parse(canon, &s2, canon2, sizeof(canon2), err, sizeof(err)) != 0 ||
				strcmp(canon, canon2) != 0 || memcmp(&s, &s2, sizeof(s)) != 0) {
			fprintf(stderr, "canonical form of '%s' ('%s') is not a fixed point\n", spec,
					canon);
			abort();
		}
	} else {
		if (err[0] == '\0')
			abort();   /* a refusal always explains itself */
		rc = pfs_view_parse(fallback_specs[data[0] % 8], &s, NULL, 0, NULL, 0);
		if (rc)
			abort();
	}
	data += 1 + n;
	size -= 1 + n;

	rc_size = pfs_view_output_size(&s, data, size, FUZZ_MAX_PIXELS, &want);
	rc = pfs_view_apply(&s, data, size, FUZZ_MAX_PIXELS, &out, &out_len);
	if (rc == 0 && rc_size == 0 && want != out_len) {
		fprintf(stderr, "output_size %llu != apply %zu\n", (unsigned long long)want, out_len);
		abort();
	}
	if (rc == 0 && s.fmt != PFS_VIEW_FMT_JPEG && rc_size != 0)
		abort();   /* apply succeeded where the header said no */
	if (rc != 0 && (out != NULL || out_len != 0))
		abort();
	if (rc != 0 && rc != -EIO && rc != -E2BIG && rc != -ENOMEM)
		abort();
	free(out);
	return 0;
}

#ifndef PFS_FUZZ_LIBFUZZER

static uint64_t rng_state;

static uint32_t rnd(void)
{
	/* xorshift64*: reproducible from the seed, independent of libc's rand(). */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return (uint32_t)((rng_state * 2685821657736338717ull) >> 32);
}

struct seed {
	unsigned char *data;
	unsigned long len;
};

static int make_seeds(struct seed *seeds, int n)
{
	static const int dims[][2] = { { 1, 1 }, { 17, 13 }, { 40, 24 }, { 9, 64 } };
	static const int samps[] = { TJSAMP_444, TJSAMP_422, TJSAMP_420, TJSAMP_GRAY };
	tjhandle tj = tjInitCompress();

	if (!tj)
		return -1;
	for (int i = 0; i < n; i++) {
		int w = dims[i % 4][0], h = dims[i % 4][1], samp = samps[(i / 4) % 4];
		unsigned char *rgb = malloc((size_t)w * h * 3);

		if (!rgb)
			return -1;
		for (int k = 0; k < w * h * 3; k++)
			rgb[k] = (unsigned char)rnd();
		seeds[i].data = NULL;
		seeds[i].len = 0;
		if (tjCompress2(tj, rgb, w, 0, h, TJPF_RGB, &seeds[i].data, &seeds[i].len, samp,
				50 + i, i % 3 == 0 ? TJFLAG_PROGRESSIVE : 0) != 0) {
			free(rgb);
			return -1;
		}
		free(rgb);
	}
	tjDestroy(tj);
	return 0;
}

static const char *const spec_words[] = {
	"decode", "fast", "resize=", "crop=", "fmt=", "q=", "ppm", "npy", "jpeg", "x", ",", "=",
	"0", "1", "7", "32", "65500", "65501", "100", "101", "999999999999",
};

static size_t random_spec(char *buf, size_t cap)
{
	size_t n = 0;
	int words = (int)(rnd() % 7);

	for (int i = 0; i < words; i++) {
		const char *w = spec_words[rnd() % (sizeof(spec_words) / sizeof(spec_words[0]))];
		size_t l = strlen(w);
		if (n + l >= cap)
			break;
		memcpy(buf + n, w, l);
		n += l;
	}
	if (rnd() % 8 == 0 && n < cap)
		buf[n++] = (char)rnd();
	return n;
}

static void one_random(const struct seed *seeds, int nseeds, unsigned char *buf, size_t cap)
{
	char spec[64];
	size_t sn = random_spec(spec, sizeof(spec) - 1), body = 0, total;
	unsigned char *b = buf + 1 + sn;
	size_t room = cap - 1 - sn;

	buf[0] = (unsigned char)(sn + 64 * (rnd() % 4));
	memcpy(buf + 1, spec, sn);
	if (rnd() % 8 == 0) {
		body = rnd() % 600;          /* pure noise */
		for (size_t i = 0; i < body; i++)
			b[i] = (unsigned char)rnd();
	} else {
		const struct seed *sd = &seeds[rnd() % (uint32_t)nseeds];
		int muts = 1 + (int)(rnd() % 4);

		body = sd->len < room ? sd->len : room;
		memcpy(b, sd->data, body);
		for (int m = 0; m < muts && body > 0; m++) {
			size_t at = rnd() % body;
			switch (rnd() % 6) {
			case 0: b[at] ^= (unsigned char)(1u << (rnd() % 8)); break;
			case 1: b[at] = (unsigned char)rnd(); break;
			case 2: body = at; break;                              /* truncate */
			case 3: b[at] = 0xFF; break;                           /* fake marker */
			case 4: b[at] = (unsigned char)(rnd() % 2 ? 0x00 : 0xFF); break;
			default:                                               /* big sizes */
				b[at] = 0xFF;
				if (at + 1 < body)
					b[at + 1] = (unsigned char)(0xC0 + rnd() % 3);
				break;
			}
		}
	}
	total = 1 + sn + body;
	LLVMFuzzerTestOneInput(buf, total);
}

static int run_dir(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	int count = 0;

	if (!d) {
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		return -1;
	}
	while ((e = readdir(d)) != NULL) {
		char file[4096];
		FILE *f;
		unsigned char *buf;
		long len;

		if (e->d_name[0] == '.')
			continue;
		snprintf(file, sizeof(file), "%s/%s", path, e->d_name);
		f = fopen(file, "rb");
		if (!f)
			continue;
		if (fseek(f, 0, SEEK_END) != 0 || (len = ftell(f)) < 0 || fseek(f, 0, SEEK_SET)) {
			fclose(f);
			continue;
		}
		buf = malloc((size_t)len + 1);
		if (buf && fread(buf, 1, (size_t)len, f) == (size_t)len) {
			LLVMFuzzerTestOneInput(buf, (size_t)len);
			count++;
		}
		free(buf);
		fclose(f);
	}
	closedir(d);
	printf("%s: %d inputs\n", path, count);
	return 0;
}

int main(int argc, char **argv)
{
	enum { NSEEDS = 16 };
	struct seed seeds[NSEEDS];
	unsigned char buf[1 << 16];
	long iterations = 20000;
	struct stat st;
	int rc = 0;

	if (argc > 1 && stat(argv[1], &st) == 0 && S_ISDIR(st.st_mode)) {
		for (int i = 1; i < argc; i++)
			rc |= run_dir(argv[i]) != 0;
		return rc;
	}
	if (argc > 1)
		iterations = strtol(argv[1], NULL, 10);
	rng_state = argc > 2 ? strtoull(argv[2], NULL, 10) : 1;
	if (rng_state == 0)
		rng_state = 1;
	if (make_seeds(seeds, NSEEDS) != 0) {
		fprintf(stderr, "could not make seed JPEGs\n");
		return 1;
	}
	for (long i = 0; i < iterations; i++)
		one_random(seeds, NSEEDS, buf, sizeof(buf));
	for (int i = 0; i < NSEEDS; i++)
		tjFree(seeds[i].data);
	printf("fuzz_view: %ld inputs, no failure\n", iterations);
	return 0;
}

#endif
