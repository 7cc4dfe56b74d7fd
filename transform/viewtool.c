/* transform/viewtool.c — test driver: applies a view SPEC to one JPEG file.
 *
 *   viewtool [-m MAX_PIXELS] SPEC FILE      writes the view to stdout
 *   viewtool -s [-m MAX_PIXELS] SPEC FILE   prints pfs_view_output_size's answer
 *   viewtool -c SPEC                        prints the canonical spec
 *
 * Exit status: 0 ok, 2 bad spec (message on stderr), 3 -EIO, 4 -E2BIG, 5 -EAGAIN (-s on
 * fmt=jpeg), 1 anything else. Used by tests/integration/test_view_exact.py.
 */
#include "view.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int status_of(int rc)
{
	switch (rc) {
	case 0: return 0;
	case -EINVAL: return 2;
	case -EIO: return 3;
	case -E2BIG: return 4;
	case -EAGAIN: return 5;
	default: return 1;
	}
}

static int read_file(const char *path, unsigned char **buf, size_t *len)
{
	FILE *f = fopen(path, "rb");
	size_t cap = 1 << 16, n = 0;
	unsigned char *b = NULL;

	if (!f)
		return -errno;
	for (;;) {
		unsigned char *nb = realloc(b, cap);
		if (!nb) {
			free(b);
			fclose(f);
			return -ENOMEM;
		}
		b = nb;
		n += fread(b + n, 1, cap - n, f);
		if (n < cap)
			break;
		cap *= 2;
	}
	fclose(f);
	*buf = b;
	*len = n;
	return 0;
}

int main(int argc, char **argv)
{
	struct pfs_view_spec spec;
	char canon[PFS_VIEW_CANON_MAX], err[512];
	uint64_t max_pixels = 100000000, size;
	int opt, size_only = 0, canon_only = 0, rc;
	unsigned char *in = NULL;
	size_t in_len = 0, out_len = 0;
	void *out = NULL;

	while ((opt = getopt(argc, argv, "scm:")) != -1) {
		if (opt == 's')
			size_only = 1;
		else if (opt == 'c')
			canon_only = 1;
		else if (opt == 'm')
			max_pixels = strtoull(optarg, NULL, 10);
		else
			return 1;
	}
	if (optind >= argc || (!canon_only && optind + 2 != argc)) {
		fprintf(stderr, "usage: viewtool [-s] [-m MAX_PIXELS] SPEC FILE | viewtool -c SPEC\n");
		return 1;
	}
	rc = pfs_view_parse(argv[optind], &spec, canon, sizeof(canon), err, sizeof(err));
	if (rc) {
		fprintf(stderr, "%s\n", err);
		return status_of(rc);
	}
	if (canon_only) {
		printf("%s\n", canon);
		return 0;
	}
	rc = read_file(argv[optind + 1], &in, &in_len);
	if (rc) {
		fprintf(stderr, "%s: %s\n", argv[optind + 1], strerror(-rc));
		return 1;
	}
	if (size_only) {
		rc = pfs_view_output_size(&spec, in, in_len, max_pixels, &size);
		if (rc == 0)
			printf("%llu\n", (unsigned long long)size);
	} else {
		rc = pfs_view_apply(&spec, in, in_len, max_pixels, &out, &out_len);
		if (rc == 0 && fwrite(out, 1, out_len, stdout) != out_len)
			rc = -EPIPE;
	}
	if (rc)
		fprintf(stderr, "viewtool: %s\n", strerror(-rc));
	free(out);
	free(in);
	return status_of(rc);
}
