/* usage.c - see usage.h.
 *
 * The help and the example file walk the option table section by section
 * (pfs_opts_section_name, then every key whose section it is), so a key
 * added to the table shows up in both, with its default and help line, and
 * tests/unit/test_usage.c holds the shipped example to what is printed here.
 * Only the text around the keys is written here.
 */
#include <ctype.h>
#include <string.h>
#include <curl/curl.h>
#include <fuse_lowlevel.h>
#include <jconfig.h> /* LIBJPEG_TURBO_VERSION */
#include <lmdb.h>
#include <zstd.h>

#include "usage.h"
#include "options.h"

#define WIDTH 79      /* longest line printed */
#define HELP_COL 28   /* where --help's descriptions start */

/* Prints `text` word by word from column `col`, breaking lines before
 * WIDTH; a continuation line starts with `lead`. Ends the line. */
static void wrap(FILE *f, size_t col, const char *lead, const char *text)
{
	int line_start = 1;
	for (;;) {
		text += strspn(text, " ");
		if (!*text)
			break;
		size_t n = strcspn(text, " ");
		if (!line_start && col + 1 + n > WIDTH) {
			fprintf(f, "\n%s", lead);
			col = strlen(lead);
			line_start = 1;
		}
		if (!line_start) {
			fputc(' ', f);
			col++;
		}
		fwrite(text, 1, n, f);
		col += n;
		text += n;
		line_start = 0;
	}
	fputc('\n', f);
}

/* "  LEFT                      text that wraps under itself". */
static void item(FILE *f, const char *left, const char *text)
{
	static const char lead[] = "                            ";
	_Static_assert(sizeof(lead) - 1 == HELP_COL, "lead is HELP_COL blanks");
	size_t n = strlen(left);
	fputs(left, f);
	if (n + 1 > HELP_COL)
		fprintf(f, "\n%s", lead);
	else
		fprintf(f, "%*s", (int)(HELP_COL - n), "");
	wrap(f, HELP_COL, lead, text);
}

void pfs_usage_help(FILE *f, const char *prog, const struct pfs_command *cmds,
		    size_t ncmds)
{
	fprintf(f, "usage: %s [-f] [-d] [-o OPT[,OPT...]] ORIGIN MOUNTPOINT\n"
		"       %s ORIGIN MOUNTPOINT -o OPT[,OPT...]\n", prog, prog);
	for (size_t i = 0; i < ncmds; i++)
		fprintf(f, "       %s %s %s\n", prog, cmds[i].name, cmds[i].args);
	fprintf(f, "       %s -h | --help | -V | --version\n"
		"\n"
		"Mounts ORIGIN read-only at MOUNTPOINT. ORIGIN: /local/dir, file:///dir,\n"
		"http(s)://host/prefix/, s3://bucket/prefix\n"
		"\n"
		"Commands:\n", prog);
	for (size_t i = 0; i < ncmds; i++) {
		char left[64];
		snprintf(left, sizeof(left), "  %s", cmds[i].name);
		item(f, left, cmds[i].help);
	}
	fputs("\nOptions:\n", f);
	item(f, "  -f", "stay in the foreground, log to stderr");
	item(f, "  -d", "debug output (implies -f)");
	item(f, "  -h, --help", "this help");
	item(f, "  -V, --version", "versions of prestofs and of its libraries");
	item(f, "  -o config=PATH", "read the keys below from an INI file, in the "
	     "[sections] shown; -o wins over it");
	for (size_t s = 0; s < pfs_opts_nsections(); s++) {
		const char *sec = pfs_opts_section_name(s);
		char head[32];
		snprintf(head, sizeof(head), "[%s]", sec);
		item(f, head, pfs_opts_section_help(s));
		struct pfs_opt_doc d;
		for (size_t i = 0; pfs_opts_key_doc(i, &d) == 0; i++) {
			if (strcmp(d.section, sec))
				continue;
			char left[96], text[256];
			snprintf(left, sizeof(left), "  -o %s%s%s", d.name, d.metavar ? "=" : "",
				 d.metavar ? d.metavar : "");
			if (d.def)
				snprintf(text, sizeof(text), "%s (default %s)", d.help, d.def);
			else
				snprintf(text, sizeof(text), "%s", d.help);
			item(f, left, text);
		}
	}
	fputs("\nSizes take K, M, G or T (1K = 1024). Flags take yes/no, on/off,\n"
	      "true/false or 1/0; alone, they mean yes.\n"
	      "Unmount with: fusermount3 -u MOUNTPOINT. See prestofs(1), prestofs.conf(5).\n",
	      f);
}

#define STR_(x) #x
#define STR(x) STR_(x)

void pfs_usage_version(FILE *f)
{
	int major = 0, minor = 0, patch = 0;
	mdb_version(&major, &minor, &patch);
	const curl_version_info_data *curl = curl_version_info(CURLVERSION_NOW);
	fprintf(f, "prestofs %s\n", PFS_VERSION);
	fprintf(f, "libfuse %s\n", fuse_pkgversion());
	fprintf(f, "libcurl %s\n", curl && curl->version ? curl->version : "?");
	fprintf(f, "zstd %s\n", ZSTD_versionString());
	fprintf(f, "LMDB %d.%d.%d\n", major, minor, patch);
	/* TurboJPEG 2.x has no call that names the library's version. */
	fprintf(f, "libjpeg-turbo %s (built with)\n", STR(LIBJPEG_TURBO_VERSION));
}

static const char example_head[] =
	"# prestofs.conf - example configuration file for prestofs, see prestofs.conf(5).\n"
	"#\n"
	"# Use it with:   prestofs -o config=/etc/prestofs/imagenet.conf ORIGIN MOUNTPOINT\n"
	"# or in fstab:   ORIGIN MOUNTPOINT fuse.prestofs "
	"ro,_netdev,config=/etc/prestofs/imagenet.conf 0 0\n"
	"#\n"
	"# Every key is shown at its default (a key with no default is shown\n"
	"# commented out, with an example value): a file with only comments behaves\n"
	"# as no file at all. Each key may also be given as -o key=value, and -o\n"
	"# always wins over this file, whatever the order on the command line.\n"
	"#\n"
	"# Comments: a line whose first non-blank character is '#' or ';'; after a\n"
	"# value, only ';' (with a blank before it) starts a comment. A '#' after a\n"
	"# value is part of the value, and usually makes it invalid.\n"
	"#\n"
	"# Sizes take K, M, G or T (binary multiples: 1K = 1024 bytes). Flags take\n"
	"# yes/no, on/off, true/false or 1/0.\n"
	"#\n"
	"# Printed by the option table (tools/options.c); tests/unit/test_usage.c\n"
	"# checks that this file is what it prints.\n";

/* "# A sentence made of a and b." wrapped, first letter upper case. */
static void comment(FILE *f, const char *a, const char *b)
{
	char text[512];
	snprintf(text, sizeof(text), "%s%s.", a, b);
	text[0] = (char)toupper((unsigned char)text[0]);
	fputs("# ", f);
	wrap(f, 2, "# ", text);
}

void pfs_usage_example(FILE *f)
{
	fputs(example_head, f);
	for (size_t s = 0; s < pfs_opts_nsections(); s++) {
		const char *sec = pfs_opts_section_name(s);
		fprintf(f, "\n[%s]\n", sec);
		comment(f, pfs_opts_section_help(s), "");
		struct pfs_opt_doc d;
		for (size_t i = 0; pfs_opts_key_doc(i, &d) == 0; i++) {
			if (strcmp(d.section, sec))
				continue;
			char hint[128];
			fputc('\n', f);
			comment(f, d.help, "");
			comment(f, "value: ", pfs_opts_key_hint(i, hint, sizeof(hint)));
			if (d.def)
				fprintf(f, "%s = %s\n", d.name, d.def);
			else
				fprintf(f, ";%s = %s\n", d.name, d.example);
		}
	}
}
