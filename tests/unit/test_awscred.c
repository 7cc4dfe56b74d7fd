/* test_awscred.c - AWS credentials chain, with injected environments. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "../../origin/s3/awscred.h"

#define SECRET "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"

static char dir[] = "/tmp/pfs-awscred-XXXXXX";
static char path[sizeof(dir) + 32];
static char fileenv[sizeof(path) + 64];

static int setup(void **state)
{
	(void)state;
	if (!mkdtemp(dir))
		return -1;
	snprintf(path, sizeof(path), "%s/credentials", dir);
	snprintf(fileenv, sizeof(fileenv), "AWS_SHARED_CREDENTIALS_FILE=%s",
		 path);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	unlink(path);
	char conf[sizeof(dir) + 16];
	snprintf(conf, sizeof(conf), "%s/config", dir);
	unlink(conf);
	rmdir(dir);
	return 0;
}

static void write_file(const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
}

static const char ini[] =
	"# comment\n"
	"; another = comment\n"
	"[default]\n"
	"aws_access_key_id = AKIDDEFAULT\n"
	"aws_secret_access_key=" SECRET "\n"
	"\n"
	"[prod]\r\n"
	"AWS_Access_Key_Id   =   AKIDPROD  \r\n"
	"aws_secret_access_key = pr#od:se=cret\r\n"
	"aws_session_token = TOKEN/prod+1==\r\n"
	"region = eu-west-1\r\n"
	"s3 =\r\n"
	"    max_concurrent_requests = 20\r\n"
	"[half]\n"
	"aws_access_key_id = AKIDHALF\n";

static void test_env_first(void **state)
{
	const char *env[] = {"AWS_ACCESS_KEY_ID=AKIDENV",
			     "AWS_SECRET_ACCESS_KEY=envsecret",
			     "AWS_SESSION_TOKEN=envtok", fileenv, NULL};
	struct pfs_awscred *c;
	char err[256];

	(void)state;
	write_file(ini);
	assert_int_equal(pfs_awscred_load(NULL, env, &c, err, sizeof(err)), 0);
	assert_false(pfs_awscred_anonymous(c));
	assert_string_equal(pfs_awscred_access_key(c), "AKIDENV");
	assert_string_equal(pfs_awscred_secret_key(c), "envsecret");
	assert_string_equal(pfs_awscred_session_token(c), "envtok");
	assert_string_equal(pfs_awscred_source(c), "environment");
	pfs_awscred_destroy(c);
}

static void test_env_partial(void **state)
{
	const char *env1[] = {"AWS_ACCESS_KEY_ID=AKIDENV", fileenv, NULL};
	const char *env2[] = {"AWS_SECRET_ACCESS_KEY=" SECRET, NULL};
	struct pfs_awscred *c = NULL;
	char err[256];

	(void)state;
	assert_int_equal(pfs_awscred_load(NULL, env1, &c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "AWS_SECRET_ACCESS_KEY is not"));
	assert_int_equal(pfs_awscred_load(NULL, env2, &c, err, sizeof(err)), -EINVAL);
	assert_null(strstr(err, SECRET));
	assert_null(c);
}

static void test_file_default(void **state)
{
	/* Empty env vars count as unset. */
	const char *env[] = {"AWS_ACCESS_KEY_ID=", "AWS_PROFILE=", fileenv,
			     NULL};
	struct pfs_awscred *c;
	char err[256], src[300];

	(void)state;
	write_file(ini);
	assert_int_equal(pfs_awscred_load(NULL, env, &c, err, sizeof(err)), 0);
	assert_string_equal(pfs_awscred_access_key(c), "AKIDDEFAULT");
	assert_string_equal(pfs_awscred_secret_key(c), SECRET);
	assert_null(pfs_awscred_session_token(c));
	snprintf(src, sizeof(src), "%s [default]", path);
	assert_string_equal(pfs_awscred_source(c), src);
	pfs_awscred_destroy(c);
}

static void test_file_profile(void **state)
{
	const char *env[] = {"AWS_PROFILE=prod", fileenv, NULL};
	struct pfs_awscred *c;
	char err[256];

	(void)state;
	write_file(ini);
	assert_int_equal(pfs_awscred_load(NULL, env, &c, err, sizeof(err)), 0);
	assert_string_equal(pfs_awscred_access_key(c), "AKIDPROD");
	/* '#', ':' and '=' inside a value are kept; CR and blanks trimmed. */
	assert_string_equal(pfs_awscred_secret_key(c), "pr#od:se=cret");
	assert_string_equal(pfs_awscred_session_token(c), "TOKEN/prod+1==");
	pfs_awscred_destroy(c);
}

static void test_home_default_path(void **state)
{
	char home[sizeof(dir) + 8], awsdir[sizeof(dir) + 16];
	char cpath[sizeof(dir) + 40];
	const char *env[] = {home, NULL};
	struct pfs_awscred *c;
	char err[256];
	FILE *f;

	(void)state;
	snprintf(home, sizeof(home), "HOME=%s", dir);
	snprintf(awsdir, sizeof(awsdir), "%s/.aws", dir);
	snprintf(cpath, sizeof(cpath), "%s/credentials", awsdir);
	/* No ~/.aws/credentials: anonymous, not an error. */
	assert_int_equal(pfs_awscred_load(NULL, env, &c, err, sizeof(err)), 0);
	assert_true(pfs_awscred_anonymous(c));
	assert_null(pfs_awscred_access_key(c));
	assert_null(pfs_awscred_secret_key(c));
	assert_string_equal(pfs_awscred_source(c), "anonymous");
	pfs_awscred_destroy(c);

	assert_int_equal(mkdir(awsdir, 0700), 0);
	f = fopen(cpath, "w");
	assert_non_null(f);
	fputs("[default]\naws_access_key_id=AKIDHOME\n"
	      "aws_secret_access_key=homesecret\n", f);
	fclose(f);
	assert_int_equal(pfs_awscred_load(NULL, env, &c, err, sizeof(err)), 0);
	assert_string_equal(pfs_awscred_access_key(c), "AKIDHOME");
	pfs_awscred_destroy(c);
	unlink(cpath);
	rmdir(awsdir);
}

static void test_missing(void **state)
{
	const char *none[] = {NULL};
	const char *nodefault[] = {fileenv, NULL};
	const char *noprofile[] = {"AWS_PROFILE=nope", fileenv, NULL};
	const char *nofile[] = {"AWS_SHARED_CREDENTIALS_FILE=/nonexistent/x",
				NULL};
	struct pfs_awscred *c;
	char err[256];

	(void)state;
	assert_int_equal(pfs_awscred_load(NULL, none, &c, err, sizeof(err)), 0);
	assert_true(pfs_awscred_anonymous(c));
	pfs_awscred_destroy(c);

	/* A file without [default]: anonymous. */
	write_file("[other]\naws_access_key_id=A\naws_secret_access_key=B\n");
	assert_int_equal(pfs_awscred_load(NULL, nodefault, &c, err, sizeof(err)), 0);
	assert_true(pfs_awscred_anonymous(c));
	pfs_awscred_destroy(c);

	/* But a profile asked for by name must exist. */
	assert_int_equal(pfs_awscred_load(NULL, noprofile, &c, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "profile [nope]"));
	/* And so must a file named explicitly. */
	assert_int_equal(pfs_awscred_load(NULL, nofile, &c, err, sizeof(err)),
			 -ENOENT);
	assert_non_null(strstr(err, "/nonexistent/x"));
}

static void test_malformed(void **state)
{
	const char *env[] = {fileenv, NULL};
	const char *half[] = {"AWS_PROFILE=half", fileenv, NULL};
	struct pfs_awscred *c = NULL;
	char err[256];

	(void)state;
	write_file("[default]\naws_access_key_id = A\n" SECRET "\n");
	assert_int_equal(pfs_awscred_load(NULL, env, &c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "line 3"));
	assert_null(strstr(err, SECRET)); /* the bad line is not echoed */
	assert_null(strstr(err, "wJalr"));

	write_file("[default\naws_access_key_id = A\n");
	assert_int_equal(pfs_awscred_load(NULL, env, &c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "line 1"));

	/* A malformed line in another section still fails. */
	write_file("[default]\naws_access_key_id=A\naws_secret_access_key=B\n"
		   "[x]\ngarbage\n");
	assert_int_equal(pfs_awscred_load(NULL, env, &c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "line 5"));

	write_file(ini);
	assert_int_equal(pfs_awscred_load(NULL, half, &c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "lacks aws_secret_access_key"));

	write_file("[default]\naws_access_key_id = A:B\n"
		   "aws_secret_access_key = " SECRET "\n");
	assert_int_equal(pfs_awscred_load(NULL, env, &c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "contains ':'"));
	assert_null(strstr(err, SECRET));
	assert_null(c);
}

static void test_too_big(void **state)
{
	const char *env[] = {fileenv, NULL};
	struct pfs_awscred *c = NULL;
	char err[256];
	FILE *f = fopen(path, "w");

	(void)state;
	assert_non_null(f);
	for (int i = 0; i < PFS_AWSCRED_FILE_MAX / 16 + 1; i++)
		fputs("# padding......\n", f);
	fclose(f);
	assert_int_equal(pfs_awscred_load(NULL, env, &c, err, sizeof(err)), -EFBIG);
	assert_null(c);
}

/* -o aws_profile / aws_credentials_file win over the environment's keys;
 * the config file's [profile NAME] is read when the credentials file has
 * no such profile; a named profile without keys is an error. */
static void test_options_and_config(void **state)
{
	char conf[sizeof(dir) + 16], confenv[sizeof(conf) + 32];
	struct pfs_awscred *c;
	char err[512];

	(void)state;
	snprintf(conf, sizeof(conf), "%s/config", dir);
	snprintf(confenv, sizeof(confenv), "AWS_CONFIG_FILE=%s", conf);
	write_file(ini);
	FILE *f = fopen(conf, "w");
	assert_non_null(f);
	fputs("[default]\nregion = eu-west-1\n"
	      "[profile cfg]\naws_access_key_id = AKIDCFG\naws_secret_access_key = cfgsecret\n"
	      "[profile prod]\naws_access_key_id = AKIDNOTTHIS\naws_secret_access_key = x\n"
	      "[profile regiononly]\nregion = us-east-2\n"
	      "[cfg]\naws_access_key_id = AKIDWRONGSECTION\naws_secret_access_key = x\n", f);
	assert_int_equal(fclose(f), 0);
	const char *env[] = {"AWS_ACCESS_KEY_ID=AKIDENV", "AWS_SECRET_ACCESS_KEY=envsecret",
			     "AWS_PROFILE=half", fileenv, confenv, NULL};

	/* The option's profile, not the environment's keys or AWS_PROFILE. */
	struct pfs_awscred_opts o = {.profile = "prod"};
	assert_int_equal(pfs_awscred_load(&o, env, &c, err, sizeof(err)), 0);
	assert_string_equal(pfs_awscred_access_key(c), "AKIDPROD"); /* credentials first */
	assert_non_null(strstr(pfs_awscred_source(c), "credentials [prod]"));
	pfs_awscred_destroy(c);
	/* From the config file, as "[profile cfg]" (not "[cfg]"). */
	o.profile = "cfg";
	assert_int_equal(pfs_awscred_load(&o, env, &c, err, sizeof(err)), 0);
	assert_string_equal(pfs_awscred_access_key(c), "AKIDCFG");
	assert_string_equal(pfs_awscred_secret_key(c), "cfgsecret");
	assert_non_null(strstr(pfs_awscred_source(c), "config [profile cfg]"));
	pfs_awscred_destroy(c);
	/* Named but without keys anywhere: an error naming both files. */
	o.profile = "regiononly";
	assert_int_equal(pfs_awscred_load(&o, env, &c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "profile [regiononly]"));
	assert_non_null(strstr(err, conf));
	assert_null(strstr(err, "secret"));
	o.profile = "missing";
	assert_int_equal(pfs_awscred_load(&o, env, &c, err, sizeof(err)), -EINVAL);
	/* The file option alone: its [default], still not the environment. */
	struct pfs_awscred_opts fo = {.credentials_file = path};
	const char *env2[] = {"AWS_ACCESS_KEY_ID=AKIDENV", "AWS_SECRET_ACCESS_KEY=envsecret",
			      confenv, NULL};
	assert_int_equal(pfs_awscred_load(&fo, env2, &c, err, sizeof(err)), 0);
	assert_string_equal(pfs_awscred_access_key(c), "AKIDDEFAULT");
	pfs_awscred_destroy(c);
	fo.credentials_file = "/nonexistent/creds";
	assert_int_equal(pfs_awscred_load(&fo, env2, &c, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "/nonexistent/creds"));
	/* Without options the environment still comes first. */
	assert_int_equal(pfs_awscred_load(NULL, env2, &c, err, sizeof(err)), 0);
	assert_string_equal(pfs_awscred_access_key(c), "AKIDENV");
	pfs_awscred_destroy(c);
	/* AWS_PROFILE reads the config file too; [default] there has no keys:
	 * anonymous, as without any file. */
	const char *env3[] = {"AWS_PROFILE=cfg", "AWS_SHARED_CREDENTIALS_FILE=/nonexistent/y",
			      confenv, NULL};
	assert_int_equal(pfs_awscred_load(NULL, env3, &c, err, sizeof(err)), -ENOENT);
	const char *env4[] = {"AWS_PROFILE=cfg", "HOME=/nonexistent-home", confenv, NULL};
	assert_int_equal(pfs_awscred_load(NULL, env4, &c, err, sizeof(err)), 0);
	assert_string_equal(pfs_awscred_access_key(c), "AKIDCFG");
	pfs_awscred_destroy(c);
	const char *env5[] = {"HOME=/nonexistent-home", confenv, NULL};
	assert_int_equal(pfs_awscred_load(NULL, env5, &c, err, sizeof(err)), 0);
	assert_true(pfs_awscred_anonymous(c));
	pfs_awscred_destroy(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_env_first),
		cmocka_unit_test(test_env_partial),
		cmocka_unit_test(test_file_default),
		cmocka_unit_test(test_file_profile),
		cmocka_unit_test(test_home_default_path),
		cmocka_unit_test(test_missing),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_too_big),
		cmocka_unit_test(test_options_and_config),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
