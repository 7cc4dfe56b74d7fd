/* fuzz_awscred.c - origin/s3/awscred.c: the shared credentials file
 * (botocore's INI dialect) through the whole chain, as
 * AWS_SHARED_CREDENTIALS_FILE, for AWS_PROFILE=prod when the input holds
 * "prod", else for [default].
 *
 * Invariants: the result is 0, -EINVAL or -ENOMEM (the file exists and is
 * small); credentials found are non-empty, trimmed, one line each, and the
 * access key id has no ':'; an error message is one of the secret-free
 * shapes awscred.h promises, checked word for word, so no byte of a
 * secret can reach it.
 */
#include <errno.h>
#include <string.h>

#include "fuzz.h"
#include "origin/s3/awscred.h"

static void check_key(const char *k)
{
	size_t n = strlen(k);
	FUZZ_CHECK(n > 0);
	FUZZ_CHECK(k[0] != ' ' && k[0] != '\t');
	FUZZ_CHECK(k[n - 1] != ' ' && k[n - 1] != '\t' && k[n - 1] != '\r');
	FUZZ_CHECK(!strchr(k, '\n'));
}

/* "PATH: line N: WHAT" with one of the known WHATs. */
static int line_message(const char *err, const char *path)
{
	static const char *const what[] = {
		"NUL byte", "section header without ']'",
		"neither a section, a comment nor key = value",
	};
	size_t pl = strlen(path);
	if (strncmp(err, path, pl) || strncmp(err + pl, ": line ", 7))
		return 0;
	const char *p = err + pl + 7;
	if (*p < '0' || *p > '9')
		return 0;
	while (*p >= '0' && *p <= '9')
		p++;
	if (p[0] != ':' || p[1] != ' ')
		return 0;
	for (size_t i = 0; i < sizeof(what) / sizeof(what[0]); i++)
		if (!strcmp(p + 2, what[i]))
			return 1;
	return 0;
}

static void load(const char *path, const char *profile)
{
	char env_file[96], env_profile[64], err[512], want[512];
	const char *envp[3] = {env_file, NULL, NULL};
	struct pfs_awscred *c = NULL;
	const char *prof = profile ? profile : "default";

	snprintf(env_file, sizeof(env_file), "AWS_SHARED_CREDENTIALS_FILE=%s", path);
	if (profile) {
		snprintf(env_profile, sizeof(env_profile), "AWS_PROFILE=%s", profile);
		envp[1] = env_profile;
	}
	int rc = pfs_awscred_load(NULL, envp, &c, err, sizeof(err));
	if (rc == 0) {
		FUZZ_CHECK(c && pfs_awscred_source(c));
		if (!pfs_awscred_anonymous(c)) {
			check_key(pfs_awscred_access_key(c));
			check_key(pfs_awscred_secret_key(c));
			FUZZ_CHECK(!strchr(pfs_awscred_access_key(c), ':'));
			if (pfs_awscred_session_token(c))
				check_key(pfs_awscred_session_token(c));
			snprintf(want, sizeof(want), "%s [%s]", path, prof);
			FUZZ_CHECK(!strcmp(pfs_awscred_source(c), want));
		} else {
			FUZZ_CHECK(!profile); /* a named profile must exist */
		}
		pfs_awscred_destroy(c);
		return;
	}
	FUZZ_CHECK(rc == -EINVAL || rc == -ENOMEM);
	if (rc == -ENOMEM)
		return;
	if (line_message(err, path))
		return;
	/* No HOME, no AWS_CONFIG_FILE: no config file is read. */
	snprintf(want, sizeof(want), "no keys for profile [%s] in %s or (no config file)", prof,
		 path);
	if (profile && !strcmp(err, want))
		return;
	snprintf(want, sizeof(want), "%s: [%s] lacks aws_secret_access_key", path, prof);
	if (!strcmp(err, want))
		return;
	snprintf(want, sizeof(want), "%s: [%s] lacks aws_access_key_id", path, prof);
	if (!strcmp(err, want))
		return;
	snprintf(want, sizeof(want), "access key id from %s [%s] contains ':'", path, prof);
	if (!strcmp(err, want))
		return;
	fprintf(stderr, "unexpected message: '%s'\n", err);
	abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[64];

	if (size > PFS_AWSCRED_FILE_MAX)
		return 0;
	fuzz_file(data, size, path, sizeof(path));
	/* One load per input (each costs a 1 MiB buffer): a file that
	 * mentions "prod" is read for AWS_PROFILE=prod, others for [default]. */
	load(path, memmem(data, size, "prod", 4) ? "prod" : NULL);
	return 0;
}
