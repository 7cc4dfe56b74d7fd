/* awscred.h - AWS credentials: mount options, environment, the shared
 * credentials and config files, or anonymous.
 *
 * The chain, first match wins:
 *   0. With -o aws_profile or -o aws_credentials_file (struct
 *      pfs_awscred_opts): the files of step 2 for that profile, and
 *      nothing else: they win over the environment's keys (a mount from
 *      fstab or systemd names its identity), and finding no keys for the
 *      profile is an error, not anonymous.
 *   1. AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY (+ AWS_SESSION_TOKEN);
 *      only one of the first two set is an error.
 *   2. The profile (opts->profile, else AWS_PROFILE, else "default"):
 *      a. the shared credentials file (opts->credentials_file, else
 *         AWS_SHARED_CREDENTIALS_FILE, else $HOME/.aws/credentials),
 *         section [PROFILE];
 *      b. else the config file (AWS_CONFIG_FILE, else $HOME/.aws/config),
 *         section [profile PROFILE] ([default] for the default profile),
 *         as the AWS CLI reads it;
 *      keys aws_access_key_id, aws_secret_access_key, aws_session_token.
 *      A missing default file or a missing "default" section falls
 *      through; a missing file named by an option or a variable, a named
 *      profile found in neither file (or found without keys), a malformed
 *      file or a profile with only half a key pair is an error.
 *   3. Anonymous: no credentials, requests are not signed.
 *
 * Secrets never appear in error messages; the memory that held them
 * (including the file's bytes) is zeroed before it is freed.
 * Pure apart from reading the file; no logging. Thread-safe (no globals).
 */
#ifndef PFS_AWSCRED_H
#define PFS_AWSCRED_H

#include <stddef.h>

#define PFS_AWSCRED_FILE_MAX (1 << 20) /* bytes of a credentials file */

struct pfs_awscred;

/* What the mount options say (step 0); both NULL: the usual chain. */
struct pfs_awscred_opts {
	const char *profile;          /* -o aws_profile */
	const char *credentials_file; /* -o aws_credentials_file */
};

/* Resolves the chain. opts may be NULL. `envp` is an environ-style
 * NULL-terminated array of "NAME=VALUE" strings to read instead of the
 * process environment (for tests), or NULL for getenv(). On success
 * returns 0 and *out (the caller frees it with pfs_awscred_destroy());
 * anonymous is a success too. On error returns -EINVAL, -ENOENT, -EFBIG,
 * -ENOMEM or the open error, with a secret-free message in err (errcap
 * bytes, NUL-terminated). */
int pfs_awscred_load(const struct pfs_awscred_opts *opts, const char *const *envp,
		     struct pfs_awscred **out, char *err, size_t errcap);
void pfs_awscred_destroy(struct pfs_awscred *c);

/* 1 if no credentials were found (requests go unsigned). */
int pfs_awscred_anonymous(const struct pfs_awscred *c);
/* Owned by c; NULL when anonymous (the token also when there is none). */
const char *pfs_awscred_access_key(const struct pfs_awscred *c);
const char *pfs_awscred_secret_key(const struct pfs_awscred *c);
const char *pfs_awscred_session_token(const struct pfs_awscred *c);
/* Secret-free description of where they came from: "environment",
 * "/root/.aws/credentials [prod]", "/root/.aws/config [profile prod]" or
 * "anonymous". Owned by c. */
const char *pfs_awscred_source(const struct pfs_awscred *c);

#endif
