/* macbench.c - the CPU one shared-tier value costs to seal and to check
 * (issue 27): HMAC-SHA256 as cache/shared.c computes it (a keyed context
 * duplicated per value, header + validator + block), against the XXH3
 * checksum it replaces without a key file. Run by bench/cpu --mac.
 *
 *   macbench BLOCK_BYTES REPS   ->  one line per method:
 *   METHOD BLOCK_BYTES median_us_per_block min_us max_us MB_per_s
 * Times are CPU time (CLOCK_THREAD_CPUTIME_ID) of batches of 64 values,
 * REPS batches, median reported.
 */
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <xxhash.h>

#define BATCH 64

static double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static void report(const char *name, size_t len, double *t, int reps)
{
	qsort(t, (size_t)reps, sizeof(*t), cmp);
	double med = t[reps / 2];
	printf("%s %zu %.1f %.1f %.1f %.0f\n", name, len, med, t[0], t[reps - 1],
	       (double)len / med);
}

int main(int argc, char **argv)
{
	size_t len = argc > 1 ? strtoull(argv[1], NULL, 0) : (1u << 20);
	int reps = argc > 2 ? atoi(argv[2]) : 21;
	if (reps < 1 || len == 0)
		return 2;
	unsigned char *block = malloc(len), hdr[40] = {0}, out[32];
	const char v[] = "\"5f2c1a-100000\"";
	unsigned char key[44];
	for (size_t i = 0; i < len; i++)
		block[i] = (unsigned char)(i * 131 + 7);
	memset(key, 'k', sizeof(key));
	EVP_MAC *mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
	EVP_MAC_CTX *tmpl = EVP_MAC_CTX_new(mac);
	char digest[] = "SHA256";
	OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
			       OSSL_PARAM_construct_end()};
	if (!tmpl || !EVP_MAC_init(tmpl, key, sizeof(key), params))
		return 1;
	double *t = calloc((size_t)reps, sizeof(*t));
	uint64_t sink = 0;
	for (int r = 0; r < reps; r++) {
		double t0 = now_us();
		for (int i = 0; i < BATCH; i++) {
			EVP_MAC_CTX *c = EVP_MAC_CTX_dup(tmpl);
			size_t ol;
			EVP_MAC_update(c, hdr, sizeof(hdr));
			EVP_MAC_update(c, (const unsigned char *)v, sizeof(v) - 1);
			EVP_MAC_update(c, block, len);
			EVP_MAC_final(c, out, &ol, sizeof(out));
			EVP_MAC_CTX_free(c);
			sink += out[0];
		}
		t[r] = (now_us() - t0) / BATCH;
	}
	report("hmac-sha256", len, t, reps);
	for (int r = 0; r < reps; r++) {
		double t0 = now_us();
		for (int i = 0; i < BATCH; i++)
			sink += XXH3_64bits_withSeed(block, len, XXH3_64bits(v, sizeof(v) - 1) ^ (uint64_t)i);
		t[r] = (now_us() - t0) / BATCH;
	}
	report("xxh3", len, t, reps);
	fprintf(stderr, "(sink %llu)\n", (unsigned long long)sink);
	EVP_MAC_CTX_free(tmpl);
	EVP_MAC_free(mac);
	free(block);
	free(t);
	return 0;
}
