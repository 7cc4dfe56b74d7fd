/* awscred.c - AWS credentials chain (see awscred.h).
 *
 * The credentials file is INI as botocore reads it with ConfigParser:
 * "[name]" sections, "key = value" or "key: value" lines, whole-line
 * comments starting with '#' or ';', key names case-insensitive, values
 * trimmed, no inline comments (a '#' may be part of a secret). Indented
 * lines continue the previous value (nested settings in the config file):
 * they are skipped. The last occurrence of a key in a section wins.
 * The whole file is read into one buffer that is zeroed before free, and
 * secrets are copied out only from the chosen section.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "awscred.h"

struct pfs_awscred {
	char *access_key; /* NULL when anonymous; zeroed on free */
	char *secret_key; /* zeroed on free */
	char *token;      /* may be NULL; zeroed on free */
	char *source;
};

static void errf(char *err, size_t cap, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void errf(char *err, size_t cap, const char *fmt, ...)
{
	va_list ap;

	if (!cap)
		return;
	va_start(ap, fmt);
	vsnprintf(err, cap, fmt, ap);
	va_end(ap);
}

static const char *env_get(const char *const *envp, const char *name)
{
	size_t n = strlen(name);

	if (!envp)
		return getenv(name);
	for (; *envp; envp++)
		if (!strncmp(*envp, name, n) && (*envp)[n] == '=')
			return *envp + n + 1;
	return NULL;
}

static const char *env_nonempty(const char *const *envp, const char *name)
{
	const char *v = env_get(envp, name);

	return v && *v ? v : NULL;
}

static void free_secret(char *s)
{
	if (s) {
		explicit_bzero(s, strlen(s));
		free(s);
	}
}

void pfs_awscred_destroy(struct pfs_awscred *c)
{
	if (!c)
		return;
	free_secret(c->access_key);
	free_secret(c->secret_key);
	free_secret(c->token);
	free(c->source);
	free(c);
}

static char *dupn(const char *s, size_t n)
{
	char *d = malloc(n + 1);

	if (d) {
		memcpy(d, s, n);
		d[n] = '\0';
	}
	return d;
}

static int set_keys(struct pfs_awscred *c, const char *ak, size_t akn,
		    const char *sk, size_t skn, const char *tok, size_t tokn)
{
	c->access_key = dupn(ak, akn);
	c->secret_key = dupn(sk, skn);
	c->token = tok && tokn ? dupn(tok, tokn) : NULL;
	if (!c->access_key || !c->secret_key || (tok && tokn && !c->token))
		return -ENOMEM;
	return 0;
}

/* Reads a whole file (at most PFS_AWSCRED_FILE_MAX) into a NUL-terminated
 * buffer the caller zeroes and frees. */
static int read_file(const char *path, char **buf, size_t *len)
{
	struct stat st;
	size_t got = 0;
	char *b;
	int fd, rc = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		rc = -errno;
		goto out_fd;
	}
	if (!S_ISREG(st.st_mode)) {
		rc = -EINVAL;
		goto out_fd;
	}
	if (st.st_size > PFS_AWSCRED_FILE_MAX) {
		rc = -EFBIG;
		goto out_fd;
	}
	b = malloc(PFS_AWSCRED_FILE_MAX + 1);
	if (!b) {
		rc = -ENOMEM;
		goto out_fd;
	}
	while (got < PFS_AWSCRED_FILE_MAX + 1) {
		ssize_t n = read(fd, b + got, PFS_AWSCRED_FILE_MAX + 1 - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = -errno;
			break;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	if (!rc && got > PFS_AWSCRED_FILE_MAX)
		rc = -EFBIG;
	if (rc) {
		explicit_bzero(b, got);
		free(b);
		goto out_fd;
	}
	b[got] = '\0';
	*buf = b;
	*len = got;
out_fd:
	close(fd);
	return rc;
}

struct span {
	const char *p;
	size_t n;
};

static struct span trim(const char *p, size_t n)
{
	while (n && (*p == ' ' || *p == '\t')) {
		p++;
		n--;
	}
	while (n && (p[n - 1] == ' ' || p[n - 1] == '\t' || p[n - 1] == '\r'))
		n--;
	return (struct span){p, n};
}

static int span_eq(struct span s, const char *lit)
{
	return s.n == strlen(lit) && !strncasecmp(s.p, lit, s.n);
}

/* Finds `profile` in the file text; fills the three values (spans into
 * buf, n == 0 when absent). Returns 1 if the section exists, 0 if not,
 * -EINVAL with a message for a malformed line anywhere in the file. */
static int parse_ini(const char *buf, size_t len, const char *profile,
		     struct span *ak, struct span *sk, struct span *tok,
		     char *err, size_t errcap)
{
	const char *p = buf, *end = buf + len;
	int in_sect = 0, found = 0;
	unsigned line = 0;

	*ak = *sk = *tok = (struct span){NULL, 0};
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
		struct span s = trim(p, n);
		int indented = n && (*p == ' ' || *p == '\t');
		const char *sep;

		line++;
		p += n + (nl ? 1 : 0);
		if (!s.n || s.p[0] == '#' || s.p[0] == ';')
			continue;
		if (memchr(s.p, '\0', s.n)) {
			errf(err, errcap, "line %u: NUL byte", line);
			return -EINVAL;
		}
		if (s.p[0] == '[') {
			struct span name;

			if (s.p[s.n - 1] != ']') {
				errf(err, errcap, "line %u: section header "
				     "without ']'", line);
				return -EINVAL;
			}
			name = trim(s.p + 1, s.n - 2);
			in_sect = name.n == strlen(profile) &&
				  !strncmp(name.p, profile, name.n);
			found |= in_sect;
			continue;
		}
		if (indented)
			continue; /* continuation of a nested value */
		sep = memchr(s.p, '=', s.n);
		{
			const char *colon = memchr(s.p, ':', s.n);
			if (!sep || (colon && colon < sep))
				sep = colon;
		}
		if (!sep) {
			/* Never echo the line: it may hold a secret. */
			errf(err, errcap, "line %u: neither a section, a "
			     "comment nor key = value", line);
			return -EINVAL;
		}
		if (in_sect) {
			struct span key = trim(s.p, (size_t)(sep - s.p));
			struct span val = trim(sep + 1,
					       (size_t)(s.p + s.n - sep - 1));

			if (span_eq(key, "aws_access_key_id"))
				*ak = val;
			else if (span_eq(key, "aws_secret_access_key"))
				*sk = val;
			else if (span_eq(key, "aws_session_token"))
				*tok = val;
		}
	}
	return found;
}

/* Looks for section `sect` in the file at path (explicit: named by an
 * option or a variable, so a missing file is an error). Returns 1 with
 * the keys set (and c->source), 0 when the file or the section is not
 * there (or, with allow_empty, the section has no keys), or an error. */
static int from_file(const char *path, int explicit_path, const char *sect,
		     int allow_empty, struct pfs_awscred *c, char *err, size_t errcap)
{
	char *buf = NULL;
	struct span ak, sk, tok;
	size_t len = 0;
	int rc = read_file(path, &buf, &len);

	if (rc == -ENOENT && !explicit_path)
		return 0;
	if (rc) {
		errf(err, errcap, "%s: %s", path, strerror(-rc));
		return rc;
	}
	rc = parse_ini(buf, len, sect, &ak, &sk, &tok, err, errcap);
	if (rc == -EINVAL) {
		/* Prefix the path to the line message. */
		char tmp[256];

		snprintf(tmp, sizeof(tmp), "%s", err);
		errf(err, errcap, "%s: %s", path, tmp);
		goto out;
	}
	if (rc == 0 || (allow_empty && !ak.n && !sk.n)) {
		rc = 0; /* not here */
		goto out;
	}
	if (!ak.n || !sk.n) {
		errf(err, errcap, "%s: [%s] lacks %s", path, sect,
		     ak.n ? "aws_secret_access_key" : "aws_access_key_id");
		rc = -EINVAL;
		goto out;
	}
	rc = set_keys(c, ak.p, ak.n, sk.p, sk.n, tok.p, tok.n);
	if (!rc && asprintf(&c->source, "%s [%s]", path, sect) < 0) {
		c->source = NULL;
		rc = -ENOMEM;
	}
	if (!rc)
		rc = 1;
out:
	explicit_bzero(buf, len);
	free(buf);
	return rc;
}

/* Step 2 (and 0): the profile in the credentials file, else in the config
 * file. `named`: a profile or a file was asked for by name (an option or
 * AWS_PROFILE), so finding no keys is an error. */
static int from_files(const struct pfs_awscred_opts *o, const char *const *envp,
		      struct pfs_awscred *c, int *matched, char *err, size_t errcap)
{
	const char *profile = o && o->profile ? o->profile : env_nonempty(envp, "AWS_PROFILE");
	const char *cred = o && o->credentials_file ? o->credentials_file :
			   env_nonempty(envp, "AWS_SHARED_CREDENTIALS_FILE");
	const char *conf = env_nonempty(envp, "AWS_CONFIG_FILE");
	const char *home = env_nonempty(envp, "HOME");
	int named = profile || (o && (o->profile || o->credentials_file));
	char *cred_def = NULL, *conf_def = NULL, *sect = NULL;
	int rc = 0;

	*matched = 0;
	if (!profile)
		profile = "default";
	if ((!cred && home && asprintf(&cred_def, "%s/.aws/credentials", home) < 0) ||
	    (!conf && home && asprintf(&conf_def, "%s/.aws/config", home) < 0)) {
		rc = -ENOMEM;
		goto out;
	}
	if (cred || cred_def) {
		rc = from_file(cred ? cred : cred_def, cred != NULL, profile, 0, c, err, errcap);
		if (rc)
			goto out;
	}
	/* The config file names profiles "[profile NAME]", but "[default]". */
	if (asprintf(&sect, strcmp(profile, "default") ? "profile %s" : "%s", profile) < 0) {
		sect = NULL;
		rc = -ENOMEM;
		goto out;
	}
	if (conf || conf_def) {
		rc = from_file(conf ? conf : conf_def, conf != NULL, sect, 1, c, err, errcap);
		if (rc)
			goto out;
	}
	if (named)
		errf(err, errcap, "no keys for profile [%s] in %s or %s", profile,
		     cred ? cred : cred_def ? cred_def : "(no credentials file: HOME unset)",
		     conf ? conf : conf_def ? conf_def : "(no config file)");
	rc = named ? -EINVAL : 0;
out:
	if (rc == 1) {
		*matched = 1;
		rc = 0;
	}
	free(cred_def);
	free(conf_def);
	free(sect);
	return rc;
}

int pfs_awscred_load(const struct pfs_awscred_opts *opts, const char *const *envp,
		     struct pfs_awscred **out, char *err, size_t errcap)
{
	const char *ak = env_nonempty(envp, "AWS_ACCESS_KEY_ID");
	const char *sk = env_nonempty(envp, "AWS_SECRET_ACCESS_KEY");
	const char *tok = env_nonempty(envp, "AWS_SESSION_TOKEN");
	int by_option = opts && (opts->profile || opts->credentials_file);
	struct pfs_awscred *c;
	int rc, matched = 0;

	errf(err, errcap, "%s", "");
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	if (!by_option && (ak || sk)) {
		if (!ak || !sk) {
			errf(err, errcap, "%s is set but %s is not",
			     ak ? "AWS_ACCESS_KEY_ID" : "AWS_SECRET_ACCESS_KEY",
			     ak ? "AWS_SECRET_ACCESS_KEY" : "AWS_ACCESS_KEY_ID");
			rc = -EINVAL;
			goto fail;
		}
		rc = set_keys(c, ak, strlen(ak), sk, strlen(sk), tok,
			      tok ? strlen(tok) : 0);
		if (rc)
			goto fail;
		c->source = strdup("environment");
		matched = 1;
	} else {
		rc = from_files(opts, envp, c, &matched, err, errcap);
		if (rc)
			goto fail;
	}
	if (!matched)
		c->source = strdup("anonymous");
	if (!c->source) {
		rc = -ENOMEM;
		goto fail;
	}
	if (matched && strchr(c->access_key, ':')) {
		/* curl splits user:password at the first ':'. */
		errf(err, errcap, "access key id from %s contains ':'",
		     c->source);
		rc = -EINVAL;
		goto fail;
	}
	*out = c;
	return 0;
fail:
	if (rc == -ENOMEM && err && errcap)
		errf(err, errcap, "out of memory");
	pfs_awscred_destroy(c);
	return rc;
}

int pfs_awscred_anonymous(const struct pfs_awscred *c)
{
	return c->access_key == NULL;
}

const char *pfs_awscred_access_key(const struct pfs_awscred *c)
{
	return c->access_key;
}

const char *pfs_awscred_secret_key(const struct pfs_awscred *c)
{
	return c->secret_key;
}

const char *pfs_awscred_session_token(const struct pfs_awscred *c)
{
	return c->token;
}

const char *pfs_awscred_source(const struct pfs_awscred *c)
{
	return c->source;
}
