/* replay.c - main() for a fuzz target without libFuzzer: runs each input
 * once through LLVMFuzzerTestOneInput (see fuzz.h).
 *
 *   replay_TARGET PATH...    PATH: a file, or a directory whose files run
 *                            in name order; a missing directory is noted
 *                            and skipped (a target may have no regressions)
 *
 * Exit status 0 when every input ran; a broken invariant aborts, so meson
 * reports the test failed with the target's message on stderr.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	unsigned char *buf = NULL;
	long len;
	int rc = -1;

	if (!f) {
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		return -1;
	}
	if (fseek(f, 0, SEEK_END) != 0 || (len = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0)
		goto out;
	/* An exact-size copy: ASan sees a read one byte past the input. */
	buf = malloc(len ? (size_t)len : 1);
	if (!buf || fread(buf, 1, (size_t)len, f) != (size_t)len)
		goto out;
	LLVMFuzzerTestOneInput(buf, (size_t)len);
	rc = 0;
out:
	if (rc)
		fprintf(stderr, "%s: cannot read\n", path);
	free(buf);
	fclose(f);
	return rc;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

static int run_dir(const char *dir)
{
	struct dirent **names;
	int n = scandir(dir, &names, NULL, by_name), count = 0, rc = 0;

	if (n < 0) {
		if (errno == ENOENT) {
			printf("%s: none\n", dir);
			return 0;
		}
		fprintf(stderr, "%s: %s\n", dir, strerror(errno));
		return -1;
	}
	for (int i = 0; i < n; i++) {
		char path[4096];
		struct stat st;

		snprintf(path, sizeof(path), "%s/%s", dir, names[i]->d_name);
		if (names[i]->d_name[0] != '.' && stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
			rc |= run_file(path);
			count++;
		}
		free(names[i]);
	}
	free(names);
	printf("%s: %d inputs\n", dir, count);
	return rc;
}

int main(int argc, char **argv)
{
	int rc = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: %s FILE|DIR...\n", argv[0]);
		return 2;
	}
	for (int i = 1; i < argc; i++) {
		struct stat st;

		if (stat(argv[i], &st) == 0 && S_ISREG(st.st_mode))
			rc |= run_file(argv[i]);
		else
			rc |= run_dir(argv[i]);
	}
	return rc ? 1 : 0;
}
