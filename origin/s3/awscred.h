/* awscred.h - AWS credentials: environment, shared credentials file, or
 * anonymous.
 *
 * The chain, first match wins:
 *   1. AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY (+ AWS_SESSION_TOKEN);
 *      only one of the first two set is an error.
 *   2. The shared credentials file, AWS_SHARED_CREDENTIALS_FILE or
 *      $HOME/.aws/credentials, section [AWS_PROFILE or "default"], keys
 *      aws_access_key_id, aws_secret_access_key, aws_session_token.
 *      A missing default file or a missing "default" section falls
 *      through; a missing file named by AWS_SHARED_CREDENTIALS_FILE, a
 *      missing profile named by AWS_PROFILE, a malformed file or a
 *      profile with only half a key pair is an error.
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

/* Resolves the chain. `envp` is an environ-style NULL-terminated array of
 * "NAME=VALUE" strings to read instead of the process environment (for
 * tests), or NULL for getenv(). On success returns 0 and *out (the caller
 * frees it with pfs_awscred_destroy()); anonymous is a success too. On
 * error returns -EINVAL, -ENOENT, -EFBIG, -ENOMEM or the open error, with
 * a secret-free message in err (errcap bytes, NUL-terminated). */
int pfs_awscred_load(const char *const *envp, struct pfs_awscred **out,
		     char *err, size_t errcap);
void pfs_awscred_destroy(struct pfs_awscred *c);

/* 1 if no credentials were found (requests go unsigned). */
int pfs_awscred_anonymous(const struct pfs_awscred *c);
/* Owned by c; NULL when anonymous (the token also when there is none). */
const char *pfs_awscred_access_key(const struct pfs_awscred *c);
const char *pfs_awscred_secret_key(const struct pfs_awscred *c);
const char *pfs_awscred_session_token(const struct pfs_awscred *c);
/* Secret-free description of where they came from: "environment",
 * "/root/.aws/credentials [prod]" or "anonymous". Owned by c. */
const char *pfs_awscred_source(const struct pfs_awscred *c);

#endif
