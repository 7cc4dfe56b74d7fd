/* test_usage.c - the option table (tools/options.h) and what is printed
 * from it (tools/usage.h): every row complete and its default valid, the
 * defaults of pfs_opts_init() those of the table, --help naming every key
 * with its default and help line, the shipped docs/prestofs.conf.example
 * exactly what the table prints, and --version.
 *
 * When the table changes, test_example_matches_table fails and leaves the
 * new text in prestofs.conf.example.new, in the directory the test runs in
 * (under `meson test`, the build directory): copy it over the shipped one.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <curl/curl.h>
#include <lmdb.h>
#include <zstd.h>
#include <fuse_lowlevel.h>
#include <cmocka.h>

#include "../../tools/config.h"
#include "../../tools/options.h"
#include "../../tools/usage.h"
#include "opts_fixture.h"

/* What f printed, NUL-terminated; free() it. */
struct capture {
	FILE *f;
	char *text;
	size_t len;
};

static void capture_start(struct capture *c)
{
	c->text = NULL;
	c->len = 0;
	c->f = open_memstream(&c->text, &c->len);
	assert_non_null(c->f);
}

static char *capture_end(struct capture *c)
{
	assert_int_equal(fclose(c->f), 0);
	return c->text;
}

/* Every run of blanks and newlines becomes one space, in place: wrapped
 * text compares with the one line it was made of. */
static char *squeeze(char *s)
{
	char *w = s;
	for (const char *r = s; *r; r++) {
		if (isspace((unsigned char)*r)) {
			if (w > s && w[-1] != ' ')
				*w++ = ' ';
		} else {
			*w++ = *r;
		}
	}
	*w = '\0';
	return s;
}

/* ---- the table -------------------------------------------------------- */

static void test_table_rows(void **state)
{
	(void)state;
	size_t n = pfs_opts_nkeys();
	size_t ns = pfs_opts_nsections();
	assert_int_equal(ns, 6);
	assert_null(pfs_opts_section_name(ns));
	assert_null(pfs_opts_section_help(ns));
	struct pfs_opt_doc d;
	assert_int_equal(pfs_opts_key_doc(n, &d), -ENOENT);
	size_t sec = 0; /* the section of the key before: sections stay in order */
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(pfs_opts_key_doc(i, &d), 0);
		assert_string_equal(d.name, pfs_opts_key_name(i));
		assert_string_equal(d.section, pfs_opts_key_section(i));
		assert_int_equal(pfs_opts_key_find(d.name), (int)i);
		while (sec < ns && strcmp(pfs_opts_section_name(sec), d.section))
			sec++;
		if (sec == ns)
			fail_msg("'%s': section [%s] unknown or out of order", d.name, d.section);
		/* A help line, and a default or else an example. */
		assert_non_null(d.help);
		assert_true(d.help[0] && d.help[strlen(d.help) - 1] != '.');
		assert_true(!d.def != !d.example);
		char hint[128];
		assert_true(pfs_opts_key_hint(i, hint, sizeof(hint))[0] != '\0');
		/* The value shown is valid; a flag is valid bare. */
		struct pfs_opts o;
		pfs_opts_init(&o);
		char err[256] = "";
		const char *v = d.def ? d.def : d.example;
		if (pfs_opts_set(&o, d.name, v, err, sizeof(err)))
			fail_msg("'%s = %s' is refused: %s", d.name, v, err);
		if (!d.metavar && pfs_opts_set(&o, d.name, NULL, err, sizeof(err)))
			fail_msg("'%s' has no metavar but is no flag: %s", d.name, err);
		pfs_opts_finish(&o);
	}
	for (size_t s = 0; s < ns; s++)
		assert_true(pfs_opts_section_help(s)[0] != '\0');
}

static void test_defaults_are_the_table(void **state)
{
	(void)state;
	/* Setting each key to its default on fresh options changes nothing:
	 * pfs_opts_init() set exactly that. */
	struct pfs_opts def, o;
	pfs_opts_init(&def);
	pfs_opts_init(&o);
	struct pfs_opt_doc d;
	for (size_t i = 0; pfs_opts_key_doc(i, &d) == 0; i++) {
		char err[256];
		if (d.def)
			assert_int_equal(pfs_opts_set(&o, d.name, d.def, err, sizeof(err)), 0);
	}
	assert_same_settings(&o, &def);
	pfs_opts_finish(&o);
	pfs_opts_finish(&def);
}

/* ---- --help ----------------------------------------------------------- */

static int fake_run(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return 0;
}

static void test_help(void **state)
{
	(void)state;
	static const struct pfs_command cmds[] = {
		{"index", "DIR > OUT", "the first command's line", fake_run},
		{"profile", "MOUNT [SUBDIR]", "the second command's line", fake_run},
	};
	struct capture c;
	capture_start(&c);
	pfs_usage_help(c.f, "prestofs", cmds, 2);
	char *text = capture_end(&c);
	/* No line reaches 80 columns. */
	for (const char *l = text; *l;) {
		size_t len = strcspn(l, "\n");
		if (len >= 80)
			fail_msg("help line of %zu columns: %.*s", len, (int)len, l);
		l += len + (l[len] == '\n');
	}
	assert_non_null(strstr(text, "prestofs index DIR > OUT\n"));
	assert_non_null(strstr(text, "prestofs profile MOUNT [SUBDIR]\n"));
	squeeze(text);
	assert_non_null(strstr(text, " index the first command's line "));
	assert_non_null(strstr(text, " profile the second command's line "));
	assert_non_null(strstr(text, " -o config=PATH "));
	for (size_t s = 0; s < pfs_opts_nsections(); s++) {
		char want[64];
		snprintf(want, sizeof(want), " [%s] ", pfs_opts_section_name(s));
		if (!strstr(text, want))
			fail_msg("help lacks section%s", want);
	}
	struct pfs_opt_doc d;
	for (size_t i = 0; pfs_opts_key_doc(i, &d) == 0; i++) {
		char want[512], line[512];
		snprintf(want, sizeof(want), " -o %s%s%s %s%s%s%s ", d.name, d.metavar ? "=" : "",
			 d.metavar ? d.metavar : "", d.help, d.def ? " (default " : "",
			 d.def ? d.def : "", d.def ? ")" : "");
		snprintf(line, sizeof(line), "%s", want);
		if (!strstr(text, squeeze(line)))
			fail_msg("help lacks '%s'", line);
	}
	free(text);
}

/* ---- the example file ------------------------------------------------- */

static char *read_example(char *path, size_t cap)
{
	if (find_example(path, cap))
		fail_msg("docs/prestofs.conf.example not found (tried %s); "
			 "set PFS_SOURCE_ROOT", path);
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	char *text = malloc(PFS_CONFIG_MAX_BYTES + 1);
	assert_non_null(text);
	size_t n = fread(text, 1, PFS_CONFIG_MAX_BYTES, f);
	fclose(f);
	text[n] = '\0';
	return text;
}

static void test_example_matches_table(void **state)
{
	(void)state;
	char path[PATH_MAX + 64];
	char *shipped = read_example(path, sizeof(path));
	struct capture c;
	capture_start(&c);
	pfs_usage_example(c.f);
	char *printed = capture_end(&c);
	if (strcmp(shipped, printed)) {
		FILE *f = fopen("prestofs.conf.example.new", "w");
		if (f) {
			fputs(printed, f);
			fclose(f);
		}
		fail_msg("%s is not what the option table prints: see "
			 "prestofs.conf.example.new in the test's directory", path);
	}
	free(printed);
	free(shipped);
}

static void test_example_is_defaults(void **state)
{
	(void)state;
	char path[PATH_MAX + 64];
	char *text = read_example(path, sizeof(path));
	struct pfs_opts o, def;
	pfs_opts_init(&o);
	pfs_opts_init(&def);
	char err[512] = "";
	int rc = pfs_config_load(&o, path, 0, err, sizeof(err));
	if (rc)
		fail_msg("example: %s", err);
	assert_same_settings(&o, &def);
	pfs_opts_finish(&o);
	pfs_opts_finish(&def);

	/* Every key is in it, as a setting or a commented-out one, under
	 * its section; with its default when it has one. */
	struct pfs_opt_doc d;
	for (size_t i = 0; pfs_opts_key_doc(i, &d) == 0; i++) {
		char sec[64], set[128], commented[128];
		snprintf(sec, sizeof(sec), "\n[%s]\n", d.section);
		if (d.def)
			snprintf(set, sizeof(set), "\n%s = %s\n", d.name, d.def);
		else
			snprintf(set, sizeof(set), "\n%s = ", d.name);
		snprintf(commented, sizeof(commented), "\n;%s = ", d.name);
		const char *s = strstr(text, sec);
		if (!s)
			fail_msg("example has no [%s]", d.section);
		const char *end = strstr(s + 1, "\n[");
		const char *k = strstr(s, set);
		if (!k && !d.def)
			k = strstr(s, commented);
		if (!k || (end && k > end))
			fail_msg("example lacks '%s' in [%s]", set + 1, d.section);
	}
	free(text);
}

/* ---- --version -------------------------------------------------------- */

static void test_version(void **state)
{
	(void)state;
	struct capture c;
	capture_start(&c);
	pfs_usage_version(c.f);
	char *text = capture_end(&c);
	char want[128];
	int major, minor, patch;
	mdb_version(&major, &minor, &patch);
	const char *lines[] = {"prestofs " PFS_VERSION "\n", NULL, NULL, NULL, NULL,
			       "\nlibjpeg-turbo "};
	char fuse[64], curl[64], zstd[64];
	snprintf(fuse, sizeof(fuse), "\nlibfuse %s\n", fuse_pkgversion());
	snprintf(curl, sizeof(curl), "\nlibcurl %s\n",
		 curl_version_info(CURLVERSION_NOW)->version);
	snprintf(zstd, sizeof(zstd), "\nzstd %s\n", ZSTD_versionString());
	snprintf(want, sizeof(want), "\nLMDB %d.%d.%d\n", major, minor, patch);
	lines[1] = fuse;
	lines[2] = curl;
	lines[3] = zstd;
	lines[4] = want;
	assert_int_equal(strncmp(text, lines[0], strlen(lines[0])), 0);
	for (size_t i = 1; i < sizeof(lines) / sizeof(lines[0]); i++)
		if (!strstr(text, lines[i]))
			fail_msg("version lacks '%s' in:\n%s", lines[i], text);
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table_rows),
		cmocka_unit_test(test_defaults_are_the_table),
		cmocka_unit_test(test_help),
		cmocka_unit_test(test_example_matches_table),
		cmocka_unit_test(test_example_is_defaults),
		cmocka_unit_test(test_version),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
