/* test_htmlindex.c - unit tests for origin/http/htmlindex.c.
 *
 * NGINX_EXACT and NGINX_ROUNDED are real pages: nginx 1.22.1 (Debian 12)
 * with "autoindex on;" (and "autoindex_exact_size off;" for the second),
 * serving a directory holding names with spaces, '%', '&', '<', quotes,
 * '#', '?', unicode and a name longer than nginx's 50-column display. The
 * Apache, lighttpd and python pages are written after those servers'
 * templates (mod_autoindex HTMLTable, mod_dirlisting, http.server).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "../../origin/http/htmlindex.h"

static const char NGINX_EXACT[] =
	"<html>\r\n"
	"<head><title>Index of /</title></head>\r\n"
	"<body>\r\n"
	"<h1>Index of /</h1><hr><pre><a href=\"../\">../</a>\r\n"
	"<a href=\"empty/\">empty/</a>                                             22-Nov-2026 17:45                   -\r\n"
	"<a href=\"sub%20dir/\">sub dir/</a>                                           22-Nov-2026 17:45                   -\r\n"
	"<a href=\"a_very_long_file_name_that_exceeds_fifty_characters_for_sure.dat\">a_very_long_file_name_that_exceeds_fifty_charac..&gt;</a> 22-Nov-2026 17:45                   5\r\n"
	"<a href=\"amp%26%3Clt%3E%22q%22.txt\">amp&amp;&lt;lt&gt;&quot;q&quot;.txt</a>                                    22-Nov-2026 17:45                   2\r\n"
	"<a href=\"big%20file.bin\">big file.bin</a>                                       22-Nov-2026 17:45              123457\r\n"
	"<a href=\"hash%23q%3F.txt\">hash#q?.txt</a>                                        22-Nov-2026 17:45                   2\r\n"
	"<a href=\"hello.txt\">hello.txt</a>                                          12-Mar-2024 10:11                   6\r\n"
	"<a href=\"it%27s.txt\">it's.txt</a>                                           22-Nov-2026 17:45                   3\r\n"
	"<a href=\"per%25cent.txt\">per%cent.txt</a>                                       22-Nov-2026 17:45                   2\r\n"
	"<a href=\"zero.bin\">zero.bin</a>                                           22-Nov-2026 17:45                   0\r\n"
	"<a href=\"%C3%BCn%C3%AFc%C3%B8d%C3%A9-%E5%90%8D%E5%89%8D.txt\">\xc3\xbcn\xc3\xaf""c\xc3\xb8""d\xc3\xa9-\xe5\x90\x8d\xe5\x89\x8d.txt</a>                             22-Nov-2026 17:45                   2\r\n"
	"</pre><hr></body>\r\n"
	"</html>\r\n";

static const char NGINX_ROUNDED[] =
	"<html>\r\n"
	"<head><title>Index of /rounded/</title></head>\r\n"
	"<body>\r\n"
	"<h1>Index of /rounded/</h1><hr><pre><a href=\"../\">../</a>\r\n"
	"<a href=\"empty/\">empty/</a>                                             22-Nov-2026 17:45       -\r\n"
	"<a href=\"sub%20dir/\">sub dir/</a>                                           22-Nov-2026 17:45       -\r\n"
	"<a href=\"a_very_long_file_name_that_exceeds_fifty_characters_for_sure.dat\">a_very_long_file_name_that_exceeds_fifty_charac..&gt;</a> 22-Nov-2026 17:45       5\r\n"
	"<a href=\"amp%26%3Clt%3E%22q%22.txt\">amp&amp;&lt;lt&gt;&quot;q&quot;.txt</a>                                    22-Nov-2026 17:45       2\r\n"
	"<a href=\"big%20file.bin\">big file.bin</a>                                       22-Nov-2026 17:45    121K\r\n"
	"<a href=\"hash%23q%3F.txt\">hash#q?.txt</a>                                        22-Nov-2026 17:45       2\r\n"
	"<a href=\"hello.txt\">hello.txt</a>                                          12-Mar-2024 10:11       6\r\n"
	"<a href=\"it%27s.txt\">it's.txt</a>                                           22-Nov-2026 17:45       3\r\n"
	"<a href=\"per%25cent.txt\">per%cent.txt</a>                                       22-Nov-2026 17:45       2\r\n"
	"<a href=\"zero.bin\">zero.bin</a>                                           22-Nov-2026 17:45       0\r\n"
	"<a href=\"%C3%BCn%C3%AFc%C3%B8d%C3%A9-%E5%90%8D%E5%89%8D.txt\">\xc3\xbcn\xc3\xaf""c\xc3\xb8""d\xc3\xa9-\xe5\x90\x8d\xe5\x89\x8d.txt</a>                             22-Nov-2026 17:45       2\r\n"
	"</pre><hr></body>\r\n"
	"</html>\r\n";

/* 2024-03-12 10:11 UTC */
#define T_2024_03_12_1011 INT64_C(1710238260)
#define T_2026_11_22_1745 INT64_C(1795369500)

struct parsed {
	struct pfs_htmlindex_entry *v;
	size_t n;
};

static struct parsed parse(const char *page, size_t len, const char *url)
{
	struct parsed p;

	assert_int_equal(pfs_htmlindex_parse(page, len, url, 1000, &p.v, &p.n), 0);
	for (size_t i = 1; i < p.n; i++) /* sorted, unique */
		assert_true(strcmp(p.v[i - 1].name, p.v[i].name) < 0);
	return p;
}

static const struct pfs_htmlindex_entry *find(const struct parsed *p,
					      const char *name)
{
	for (size_t i = 0; i < p->n; i++)
		if (strcmp(p->v[i].name, name) == 0)
			return &p->v[i];
	fail_msg("entry \"%s\" missing", name);
	return NULL;
}

static int has(const struct parsed *p, const char *name)
{
	for (size_t i = 0; i < p->n; i++)
		if (strcmp(p->v[i].name, name) == 0)
			return 1;
	return 0;
}

static void check_file(const struct parsed *p, const char *name,
		       enum pfs_htmlindex_size kind, uint64_t size, int64_t mtime)
{
	const struct pfs_htmlindex_entry *e = find(p, name);

	assert_int_equal(e->is_dir, 0);
	assert_int_equal(e->size_kind, kind);
	assert_int_equal(e->size, size);
	assert_int_equal(e->mtime, mtime);
}

static void check_dir(const struct parsed *p, const char *name, int64_t mtime)
{
	const struct pfs_htmlindex_entry *e = find(p, name);

	assert_int_equal(e->is_dir, 1);
	assert_int_equal(e->size_kind, PFS_HTMLINDEX_SIZE_NONE);
	assert_int_equal(e->mtime, mtime);
}

static const char UNICODE_NAME[] =
	"\xc3\xbcn\xc3\xaf""c\xc3\xb8""d\xc3\xa9-\xe5\x90\x8d\xe5\x89\x8d.txt";
static const char LONG_NAME[] =
	"a_very_long_file_name_that_exceeds_fifty_characters_for_sure.dat";

static void test_nginx_exact(void **state)
{
	(void)state;
	struct parsed p = parse(NGINX_EXACT, strlen(NGINX_EXACT),
				"http://127.0.0.1:18081/");

	assert_int_equal(p.n, 11);
	assert_false(has(&p, ".."));
	check_dir(&p, "empty", T_2026_11_22_1745);
	check_dir(&p, "sub dir", T_2026_11_22_1745);
	check_file(&p, "hello.txt", PFS_HTMLINDEX_SIZE_EXACT, 6, T_2024_03_12_1011);
	check_file(&p, "big file.bin", PFS_HTMLINDEX_SIZE_EXACT, 123457,
		   T_2026_11_22_1745);
	check_file(&p, "zero.bin", PFS_HTMLINDEX_SIZE_EXACT, 0, T_2026_11_22_1745);
	check_file(&p, "amp&<lt>\"q\".txt", PFS_HTMLINDEX_SIZE_EXACT, 2,
		   T_2026_11_22_1745);
	check_file(&p, "hash#q?.txt", PFS_HTMLINDEX_SIZE_EXACT, 2, T_2026_11_22_1745);
	check_file(&p, "it's.txt", PFS_HTMLINDEX_SIZE_EXACT, 3, T_2026_11_22_1745);
	check_file(&p, "per%cent.txt", PFS_HTMLINDEX_SIZE_EXACT, 2, T_2026_11_22_1745);
	check_file(&p, UNICODE_NAME, PFS_HTMLINDEX_SIZE_EXACT, 2, T_2026_11_22_1745);
	/* The href, not nginx's truncated "...charac..&gt;" text. */
	check_file(&p, LONG_NAME, PFS_HTMLINDEX_SIZE_EXACT, 5, T_2026_11_22_1745);
	pfs_htmlindex_free(p.v, p.n);
}

static void test_nginx_rounded(void **state)
{
	(void)state;
	struct parsed p = parse(NGINX_ROUNDED, strlen(NGINX_ROUNDED),
				"http://127.0.0.1:18081/rounded/");

	assert_int_equal(p.n, 11);
	/* 123457 bytes shown as "121K": approximate, to be resolved by HEAD. */
	check_file(&p, "big file.bin", PFS_HTMLINDEX_SIZE_ROUNDED, 121 * 1024,
		   T_2026_11_22_1745);
	/* Small sizes print as plain byte counts: exact. */
	check_file(&p, "hello.txt", PFS_HTMLINDEX_SIZE_EXACT, 6, T_2024_03_12_1011);
	check_dir(&p, "sub dir", T_2026_11_22_1745);
	pfs_htmlindex_free(p.v, p.n);
}

/* Apache 2.4 mod_autoindex, IndexOptions FancyIndexing HTMLTable. */
static const char APACHE_TABLE[] =
	"<!DOCTYPE HTML PUBLIC \"-//W3C//DTD HTML 3.2 Final//EN\">\n"
	"<html>\n <head>\n  <title>Index of /data/sub</title>\n </head>\n <body>\n"
	"<h1>Index of /data/sub</h1>\n  <table>\n"
	"   <tr><th valign=\"top\"><img src=\"/icons/blank.gif\" alt=\"[ICO]\"></th>"
	"<th><a href=\"?C=N;O=D\">Name</a></th><th><a href=\"?C=M;O=A\">Last modified</a></th>"
	"<th><a href=\"?C=S;O=A\">Size</a></th><th><a href=\"?C=D;O=A\">Description</a></th></tr>\n"
	"   <tr><th colspan=\"5\"><hr></th></tr>\n"
	"<tr><td valign=\"top\"><img src=\"/icons/back.gif\" alt=\"[PARENTDIR]\"></td>"
	"<td><a href=\"/data/\">Parent Directory</a></td><td>&nbsp;</td>"
	"<td align=\"right\">  - </td><td>&nbsp;</td></tr>\n"
	"<tr><td valign=\"top\"><img src=\"/icons/folder.gif\" alt=\"[DIR]\"></td>"
	"<td><a href=\"images/\">images/</a></td><td align=\"right\">2024-03-12 10:11  </td>"
	"<td align=\"right\">  - </td><td>&nbsp;</td></tr>\n"
	"<tr><td valign=\"top\"><img src=\"/icons/compressed.gif\" alt=\"[   ]\"></td>"
	"<td><a href=\"archive.tar.gz\">archive.tar.gz</a></td><td align=\"right\">2024-01-05 09:30  </td>"
	"<td align=\"right\">5.0M</td><td>&nbsp;</td></tr>\n"
	"<tr><td valign=\"top\"><img src=\"/icons/text.gif\" alt=\"[TXT]\"></td>"
	"<td><a href=\"notes%20&amp;%20more.txt\">notes &amp; more.txt</a></td>"
	"<td align=\"right\">2024-03-12 10:11  </td><td align=\"right\">1.2K</td>"
	"<td>Notes, 2020-01-01 00:00 1G</td></tr>\n"
	"<tr><td valign=\"top\"><img src=\"/icons/text.gif\" alt=\"[TXT]\"></td>"
	"<td><a href=\"./a:b.txt\">a:b.txt</a></td><td align=\"right\">2024-03-12 10:11  </td>"
	"<td align=\"right\"> 17 </td><td>&nbsp;</td></tr>\n"
	"<tr><td valign=\"top\"><img src=\"/icons/unknown.gif\" alt=\"[   ]\"></td>"
	"<td><a href=\"huge.bin\">huge.bin</a></td><td align=\"right\">2023-12-31 23:59  </td>"
	"<td align=\"right\">3.1G</td><td>&nbsp;</td></tr>\n"
	"   <tr><th colspan=\"5\"><hr></th></tr>\n</table>\n"
	"<address>Apache/2.4.57 (Debian) Server at example.org Port 80</address>\n"
	"</body></html>\n";

static void test_apache_table(void **state)
{
	(void)state;
	struct parsed p = parse(APACHE_TABLE, strlen(APACHE_TABLE),
				"http://example.org/data/sub/");

	assert_int_equal(p.n, 5);
	check_dir(&p, "images", T_2024_03_12_1011);
	check_file(&p, "archive.tar.gz", PFS_HTMLINDEX_SIZE_ROUNDED,
		   5 * 1024 * 1024, INT64_C(1704447000));
	/* 1.2 * 1024 = 1228.8; the description's date and size are ignored. */
	check_file(&p, "notes & more.txt", PFS_HTMLINDEX_SIZE_ROUNDED, 1228,
		   T_2024_03_12_1011);
	check_file(&p, "a:b.txt", PFS_HTMLINDEX_SIZE_EXACT, 17, T_2024_03_12_1011);
	check_file(&p, "huge.bin", PFS_HTMLINDEX_SIZE_ROUNDED,
		   (uint64_t)(3.1 * 1024 * 1024 * 1024), INT64_C(1704067140));
	pfs_htmlindex_free(p.v, p.n);
}

/* Apache FancyIndexing without HTMLTable, IconsAreLinks: each name is
 * linked twice, first around its icon (nothing after that link on the
 * line but the second link). */
static const char APACHE_PRE[] =
	"<html><head><title>Index of /d</title></head><body><h1>Index of /d</h1>\n"
	"<pre><img src=\"/icons/blank.gif\" alt=\"Icon \"> <a href=\"?C=N;O=D\">Name</a>"
	"                    <a href=\"?C=M;O=A\">Last modified</a>      <a href=\"?C=S;O=A\">Size</a>"
	"  <a href=\"?C=D;O=A\">Description</a><hr>"
	"<a href=\"/\"><img src=\"/icons/back.gif\" alt=\"[PARENTDIR]\"></a> "
	"<a href=\"/\">Parent Directory</a>                             -   \n"
	"<a href=\"x.txt\"><img src=\"/icons/text.gif\" alt=\"[TXT]\"></a> "
	"<a href=\"x.txt\">x.txt</a>                      2024-03-12 10:11  976   \n"
	"<a href=\"y.dat\"><img src=\"/icons/unknown.gif\" alt=\"[   ]\"></a> "
	"<a href=\"y.dat\">y.dat</a>                      2024-03-12 10:11   12K  \n"
	"<hr></pre>\n</body></html>\n";

static void test_apache_pre_duplicates(void **state)
{
	(void)state;
	struct parsed p = parse(APACHE_PRE, strlen(APACHE_PRE), "http://h/d/");

	assert_int_equal(p.n, 2);
	check_file(&p, "x.txt", PFS_HTMLINDEX_SIZE_EXACT, 976, T_2024_03_12_1011);
	check_file(&p, "y.dat", PFS_HTMLINDEX_SIZE_ROUNDED, 12 * 1024,
		   T_2024_03_12_1011);
	pfs_htmlindex_free(p.v, p.n);
}

/* lighttpd mod_dirlisting and python's http.server (no sizes at all). */
static const char LIGHTTPD[] =
	"<table summary=\"Directory Listing\" cellpadding=\"0\" cellspacing=\"0\">\n"
	"<thead><tr><th class=\"n\">Name</th><th class=\"m\">Last Modified</th>"
	"<th class=\"s\">Size</th><th class=\"t\">Type</th></tr></thead>\n<tbody>\n"
	"<tr class=\"d\"><td class=\"n\"><a href=\"../\">..</a>/</td><td class=\"m\">&nbsp;</td>"
	"<td class=\"s\">- &nbsp;</td><td class=\"t\">Directory</td></tr>\n"
	"<tr class=\"d\"><td class=\"n\"><a href=\"sub/\">sub</a>/</td>"
	"<td class=\"m\">2024-Mar-12 10:11:05</td><td class=\"s\">- &nbsp;</td>"
	"<td class=\"t\">Directory</td></tr>\n"
	"<tr><td class=\"n\"><a href=\"f.bin\">f.bin</a></td>"
	"<td class=\"m\">2024-Mar-12 10:11:05</td><td class=\"s\">2.5M</td>"
	"<td class=\"t\">application/octet-stream</td></tr>\n</tbody>\n</table>\n";

static const char PYTHON[] =
	"<!DOCTYPE HTML>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
	"<title>Directory listing for /</title>\n</head>\n<body>\n"
	"<h1>Directory listing for /</h1>\n<hr>\n<ul>\n"
	"<li><a href=\"a%20b.txt\">a b.txt</a></li>\n"
	"<li><a href=\"d/\">d/</a></li>\n"
	"<li><a href=\"l%26.txt\">l&amp;.txt</a></li>\n"
	"</ul>\n<hr>\n</body>\n</html>\n";

static void test_other_servers(void **state)
{
	(void)state;
	struct parsed p = parse(LIGHTTPD, strlen(LIGHTTPD), "https://h/x/");

	assert_int_equal(p.n, 2);
	check_dir(&p, "sub", T_2024_03_12_1011 + 5);
	check_file(&p, "f.bin", PFS_HTMLINDEX_SIZE_ROUNDED, 5 * 512 * 1024,
		   T_2024_03_12_1011 + 5);
	pfs_htmlindex_free(p.v, p.n);

	p = parse(PYTHON, strlen(PYTHON), "http://127.0.0.1:8000/");
	assert_int_equal(p.n, 3);
	check_file(&p, "a b.txt", PFS_HTMLINDEX_SIZE_NONE, 0, -1);
	check_file(&p, "l&.txt", PFS_HTMLINDEX_SIZE_NONE, 0, -1);
	check_dir(&p, "d", -1);
	pfs_htmlindex_free(p.v, p.n);
}

/* Which hrefs are children of the page "http://u:p@Example.ORG:80/my%20d/". */
static void test_link_filtering(void **state)
{
	(void)state;
	static const char page[] =
		"<a href=\"../\">up</a><a href=\"./\">self</a><a href=\".\">dot</a>"
		"<a href=\"?C=N;O=D\">sort</a><a href=\"#top\">frag</a>"
		"<a href=\"f.txt#x\">frag2</a><a href=\"g.txt?dl=1\">query</a>"
		"<a href=\"http://other.example/my%20d/o.txt\">other host</a>"
		"<a href=\"http://example.org:8080/my%20d/o.txt\">other port</a>"
		"<a href=\"https://example.org/my%20d/o.txt\">other scheme</a>"
		"<a href=\"mailto:a@example.org\">mail</a>"
		"<a href=\"javascript:void(0)\">js</a>"
		"<a href=\"/other/x.txt\">outside</a>"
		"<a href=\"../sibling/y.txt\">outside2</a>"
		"<a href=\"two/levels.txt\">deep</a>"
		"<a href=\"a%2Fb.txt\">encoded slash</a>"
		"<a href=\"%2e%2e/\">encoded dotdot</a>"
		"<a href=\"nul%00.txt\">nul</a>"
		"<a name=\"anchor\">no href</a>"
		"<a href=\"\">empty</a>"
		/* kept: */
		"<a href=\"http://EXAMPLE.org/my%20d/abs.txt\">abs</a>"
		"<a href=\"//example.org:80/my%20d/net.txt\">net</a>"
		"<a href=\"/my d/rooted.txt\">rooted, raw space</a>"
		"<a href=\"x/../back.txt\">dotdot inside</a>"
		"<A HREF='single.txt'>upper, single quotes</A>"
		"<a class=x href=unq.txt title=\"t\">unquoted</a>"
		"<a\nhref = \" spaced.txt \"\n>spaces</a>"
		"<a href=\"&#x41;&#66;c&#233;.txt\">numeric entities</a>"
		"<a href=\"100%.txt\">lone percent</a>"
		"<a href=\"d%C3%A9j%C3%A0/\">dir</a>"
		"<!-- <a href=\"commented.txt\">c</a> -->";
	struct parsed p = parse(page, strlen(page),
				"http://u:p@Example.ORG:80/my%20d/");
	static const char *const want[] = {
		"100%.txt", "ABc\xc3\xa9.txt", "abs.txt", "back.txt",
		"d\xc3\xa9j\xc3\xa0", "net.txt", "rooted.txt", "single.txt",
		"spaced.txt", "unq.txt",
	};

	for (size_t i = 0; i < p.n; i++)
		print_message("got \"%s\"\n", p.v[i].name);
	assert_int_equal(p.n, sizeof(want) / sizeof(want[0]));
	for (size_t i = 0; i < p.n; i++)
		assert_string_equal(p.v[i].name, want[i]);
	assert_true(find(&p, "d\xc3\xa9j\xc3\xa0")->is_dir);
	pfs_htmlindex_free(p.v, p.n);
}

static void test_parse_info(void **state)
{
	(void)state;
	enum pfs_htmlindex_size k;
	uint64_t sz;
	int64_t mt;
	static const struct {
		const char *text;
		int64_t mtime;
		enum pfs_htmlindex_size kind;
		uint64_t size;
	} cases[] = {
		{"   12-Mar-2024 10:11    18446744073709551615\r",
		 T_2024_03_12_1011, PFS_HTMLINDEX_SIZE_EXACT, UINT64_MAX},
		{" 12-Mar-2024 10:11  184467440737095516150", T_2024_03_12_1011,
		 PFS_HTMLINDEX_SIZE_NONE, 0}, /* overflow */
		{"</td><td align=\"right\">2024-03-12 10:11  </td><td>1.5K</td>",
		 T_2024_03_12_1011, PFS_HTMLINDEX_SIZE_ROUNDED, 1536},
		{"2024-Mar-12 10:11:05 - &nbsp;", T_2024_03_12_1011 + 5,
		 PFS_HTMLINDEX_SIZE_NONE, 0},
		{"1-Jan-1970 00:00 2k", 0, PFS_HTMLINDEX_SIZE_ROUNDED, 2048},
		{"2024-03-12 10:11 7MiB", T_2024_03_12_1011,
		 PFS_HTMLINDEX_SIZE_ROUNDED, 7 << 20},
		{"2024-03-12 10:11 7MB", T_2024_03_12_1011,
		 PFS_HTMLINDEX_SIZE_ROUNDED, 7 << 20},
		{"2024-03-12 10:11 7Q", T_2024_03_12_1011, PFS_HTMLINDEX_SIZE_NONE, 0},
		{"2024-03-12 10:11 1.5", T_2024_03_12_1011, PFS_HTMLINDEX_SIZE_NONE, 0},
		{"2024-03-12 10:11", T_2024_03_12_1011, PFS_HTMLINDEX_SIZE_NONE, 0},
		{"32-Mar-2024 10:11 5", -1, PFS_HTMLINDEX_SIZE_NONE, 0},
		{"12-Foo-2024 10:11 5", -1, PFS_HTMLINDEX_SIZE_NONE, 0},
		{"2024-13-01 10:11 5", -1, PFS_HTMLINDEX_SIZE_NONE, 0},
		{"2024-03-12 24:00 5", -1, PFS_HTMLINDEX_SIZE_NONE, 0},
		{"2024-03-12 1011 5", -1, PFS_HTMLINDEX_SIZE_NONE, 0},
		{"5 2024-03-12", -1, PFS_HTMLINDEX_SIZE_NONE, 0},
		{"junk 2024-03-12 10:11 9 2020-01-01 00:00 1", T_2024_03_12_1011,
		 PFS_HTMLINDEX_SIZE_EXACT, 9},
		{"<unterminated 2024-03-12 10:11 9", -1, PFS_HTMLINDEX_SIZE_NONE, 0},
		{"", -1, PFS_HTMLINDEX_SIZE_NONE, 0},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		print_message("case %zu: %s\n", i, cases[i].text);
		pfs_htmlindex_parse_info(cases[i].text, strlen(cases[i].text),
					 &mt, &k, &sz);
		assert_int_equal(mt, cases[i].mtime);
		assert_int_equal(k, cases[i].kind);
		assert_int_equal(sz, cases[i].size);
	}
	/* len bounds the text: the size after byte 17 is not seen. */
	pfs_htmlindex_parse_info("2024-03-12 10:11 9", 17, &mt, &k, &sz);
	assert_int_equal(mt, T_2024_03_12_1011);
	assert_int_equal(k, PFS_HTMLINDEX_SIZE_NONE);
}

static void test_limits_and_errors(void **state)
{
	(void)state;
	struct pfs_htmlindex_entry *v = (void *)1;
	size_t n = 99;

	assert_int_equal(pfs_htmlindex_parse(NGINX_EXACT, strlen(NGINX_EXACT),
					     "http://h/", 10, &v, &n), -E2BIG);
	assert_null(v);
	assert_int_equal(n, 0);
	assert_int_equal(pfs_htmlindex_parse(NGINX_EXACT, strlen(NGINX_EXACT),
					     "http://h/", 11, &v, &n), 0);
	assert_int_equal(n, 11);
	pfs_htmlindex_free(v, n);
	assert_int_equal(pfs_htmlindex_parse("", 0, "ftp://h/", 10, &v, &n), -EINVAL);
	assert_int_equal(pfs_htmlindex_parse("", 0, "/local/", 10, &v, &n), -EINVAL);
	assert_int_equal(pfs_htmlindex_parse("", 0, "http:///", 10, &v, &n), -EINVAL);
	assert_int_equal(pfs_htmlindex_parse("", 0, "http://h/", 10, &v, &n), 0);
	assert_int_equal(n, 0);
	pfs_htmlindex_free(NULL, 0);

	/* An href longer than the limit is skipped, not truncated. */
	static char page[PFS_HTMLINDEX_HREF_MAX + 200];
	size_t big = PFS_HTMLINDEX_HREF_MAX + 100;
	strcpy(page, "<a href=\"");
	memset(page + 9, 'x', big);
	strcpy(page + 9 + big, "\">x</a><a href=\"ok\">ok</a>");
	assert_int_equal(pfs_htmlindex_parse(page, strlen(page), "http://h/", 10,
					     &v, &n), 0);
	assert_int_equal(n, 1);
	assert_string_equal(v[0].name, "ok");
	pfs_htmlindex_free(v, n);
}

/* Every prefix of a real page, broken markup and random bytes: no crash
 * (run under ASan in CI), and never an entry that is not in the page. */
static void test_malformed(void **state)
{
	(void)state;
	struct pfs_htmlindex_entry *v;
	size_t n, full = strlen(NGINX_EXACT);
	static const char *const broken[] = {
		"<", "<a", "<a ", "<a href", "<a href=", "<a href=\"", "<a href='x",
		"<a href=\"x\"", "<a href=\"x\">", "<a href=\"x\">x</a", "<!--",
		"<!-- <a href=\"x\">", "<a href=x><a href=y>y</a>", "&#;&#x;&#99999999;",
		"<a href=\"&#0;x\">nul entity</a>", "<a href=\"&#x110000;\">big</a>",
		"<a href=\"%\">p</a><a href=\"%4\">p</a><a href=\"%zz\">p</a>",
		"<a href=\"/\">root</a>", "<a href=\"//\">x</a>", "<a href=\"http:\">x</a>",
		"<a href=\"http://\">x</a>", "<a href=\"https://h\">x</a>", "<a\0href=\"z\">",
	};

	for (size_t len = 0; len <= full; len++) {
		assert_int_equal(pfs_htmlindex_parse(NGINX_EXACT, len, "http://h/",
						     100, &v, &n), 0);
		assert_true(n <= 11);
		pfs_htmlindex_free(v, n);
	}
	for (size_t i = 0; i < sizeof(broken) / sizeof(broken[0]); i++) {
		assert_int_equal(pfs_htmlindex_parse(broken[i], strlen(broken[i]),
						     "http://h/", 100, &v, &n), 0);
		for (size_t j = 0; j < n; j++)
			print_message("%zu: \"%s\"\n", i, v[j].name);
		/* Only "<a href=x>" from "...<a href=y>y</a>" and "y" itself may
		 * appear, and the percent literals. */
		for (size_t j = 0; j < n; j++)
			assert_true(strlen(v[j].name) <= 3);
		pfs_htmlindex_free(v, n);
	}

	/* Random bytes over an alphabet rich in markup (fixed seed). */
	static const char alpha[] = "<a href=\"'/>#?%&;.xX0\n -";
	char buf[512];
	uint32_t seed = 12345;
	for (int round = 0; round < 5000; round++) {
		size_t len = (size_t)(round % (int)sizeof(buf));
		for (size_t i = 0; i < len; i++) {
			seed = seed * 1103515245u + 12345u;
			buf[i] = alpha[(seed >> 16) % (sizeof(alpha) - 1)];
		}
		assert_int_equal(pfs_htmlindex_parse(buf, len, "http://h/d/", 1000,
						     &v, &n), 0);
		for (size_t j = 0; j < n; j++) {
			assert_true(v[j].name[0] != '\0');
			assert_null(strchr(v[j].name, '/'));
		}
		pfs_htmlindex_free(v, n);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nginx_exact),
		cmocka_unit_test(test_nginx_rounded),
		cmocka_unit_test(test_apache_table),
		cmocka_unit_test(test_apache_pre_duplicates),
		cmocka_unit_test(test_other_servers),
		cmocka_unit_test(test_link_filtering),
		cmocka_unit_test(test_parse_info),
		cmocka_unit_test(test_limits_and_errors),
		cmocka_unit_test(test_malformed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
