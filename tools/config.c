/* config.c - see config.h.
 *
 * libinih does the splitting into sections, keys and values, but it is
 * given the file through our own line reader, for three reasons:
 *  - the handler of Debian's libinih gets no line number, and every error
 *    here must name its line: the reader counts the lines, and inih calls
 *    the handler for a line before it asks for the next one;
 *  - inih never calls the handler for a section without keys, nor for a
 *    line it cannot parse, and it does not stop at the first error: the
 *    reader checks each line's shape first (section name, '=' present,
 *    length) and ends the stream (returns NULL) at the first error;
 *  - inih treats an indented line after a key as the continuation of
 *    that key's value; the reader strips leading blanks, so indenting
 *    keys under their section is harmless and there are no continuations.
 * Values are trimmed by inih, and it strips inline comments that start
 * with ';' after a blank; '#' starts a comment only at the start of a line.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <ini.h>

#include "config.h"
#include "options.h"

struct ctx {
	struct pfs_opts *o;
	struct pfs_opts scratch; /* where keys that -o set are checked */
	uint64_t skip;
	const char *path;
	FILE *f;
	int lineno;              /* of the line inih is working on */
	size_t bytes;            /* read so far */
	int line_of[64];         /* where key i was set, 0 when not yet */
	int failed;
	char *err;
	size_t errcap;
};

__attribute__((format(printf, 2, 3)))
static void fail(struct ctx *c, const char *fmt, ...)
{
	if (c->failed)
		return;
	c->failed = 1;
	int n = snprintf(c->err, c->errcap, "%s:%d: ", c->path, c->lineno);
	if (n < 0 || (size_t)n >= c->errcap)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(c->err + n, c->errcap - (size_t)n, fmt, ap);
	va_end(ap);
}

static int is_blank(char ch)
{
	return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n' || ch == '\v' ||
	       ch == '\f';
}

/* The first of `chars` in s, or of an inline comment (';' after a blank),
 * or the end: as inih's ini_find_chars_or_comment() finds it. */
static const char *find_or_comment(const char *s, const char *chars)
{
	int was_blank = 0;
	for (; *s && !strchr(chars, *s) && !(was_blank && *s == ';'); s++)
		was_blank = is_blank(*s);
	return s;
}

static int known_section(const char *name, size_t len)
{
	for (size_t i = 0; i < pfs_opts_nsections(); i++) {
		const char *s = pfs_opts_section_name(i);
		if (strlen(s) == len && !memcmp(s, name, len))
			return 1;
	}
	return 0;
}

/* "[origin], [cache], ..." in the table's order, for messages. */
static void section_list(char *out, size_t cap)
{
	size_t n = 0;
	out[0] = '\0';
	for (size_t i = 0; i < pfs_opts_nsections() && n < cap; i++)
		n += (size_t)snprintf(out + n, cap - n, "%s[%s]", i ? ", " : "",
				      pfs_opts_section_name(i));
}

/* Checks the shape of one line (leading blanks already gone). */
static void check_line(struct ctx *c, const char *line)
{
	size_t len = strlen(line);
	while (len && is_blank(line[len - 1]))
		len--;
	if (!len || line[0] == ';' || line[0] == '#')
		return;
	if (line[0] == '[') {
		const char *end = memchr(line, ']', len);
		if (!end) {
			fail(c, "section header '%.*s' has no closing ']'", (int)len, line);
			return;
		}
		const char *name = line + 1;
		size_t nl = (size_t)(end - name);
		while (nl && is_blank(*name))
			name++, nl--;
		while (nl && is_blank(name[nl - 1]))
			nl--;
		if (!known_section(name, nl)) {
			char list[128];
			section_list(list, sizeof(list));
			fail(c, "unknown section [%.*s] (sections: %s)", (int)nl, name, list);
			return;
		}
		const char *rest = end + 1;
		while (is_blank(*rest))
			rest++;
		if (*rest && *rest != ';' && *rest != '#')
			fail(c, "unexpected '%.*s' after section header [%.*s]",
			     (int)(line + len - rest), rest, (int)nl, name);
		return;
	}
	const char *sep = find_or_comment(line, "=:");
	if (*sep != '=' && *sep != ':')
		fail(c, "expected 'key = value', '[section]' or a comment, got '%.*s'",
		     (int)(len > 64 ? 64 : len), line);
}

/* The ini_reader: one line into str (num bytes), counted and checked. */
static char *read_line(char *str, int num, void *stream)
{
	struct ctx *c = stream;
	if (c->failed || !fgets(str, num, c->f)) {
		if (!c->failed && ferror(c->f))
			fail(c, "read error: %s", strerror(errno));
		return NULL;
	}
	c->lineno++;
	size_t n = strlen(str);
	c->bytes += n;
	if (c->bytes > PFS_CONFIG_MAX_BYTES) {
		fail(c, "file longer than %u bytes", PFS_CONFIG_MAX_BYTES);
		return NULL;
	}
	if (n && str[n - 1] != '\n') {
		int ch = getc(c->f);
		if (ch != EOF) {
			fail(c, "line longer than %d characters", num - 2);
			return NULL;
		}
	}
	if (c->lineno == 1 && n >= 3 && !strncmp(str, "\xEF\xBB\xBF", 3)) {
		memmove(str, str + 3, n - 2);
		n -= 3;
	}
	/* Every blank inih's isspace() knows, '\v' and '\f' too: a line
	 * inih saw as indented would continue the previous key's value. */
	size_t lead = 0;
	while (lead < n && is_blank(str[lead]) && str[lead] != '\n')
		lead++;
	memmove(str, str + lead, n - lead + 1);
	check_line(c, str);
	return c->failed ? NULL : str;
}

/* `section` trimmed into out. */
static void trim_section(const char *section, char *out, size_t cap)
{
	while (is_blank(*section))
		section++;
	size_t n = strlen(section);
	while (n && is_blank(section[n - 1]))
		n--;
	snprintf(out, cap, "%.*s", (int)n, section);
}

static int handle(void *user, const char *section, const char *name, const char *value)
{
	struct ctx *c = user;
	if (c->failed)
		return 0;
	char sec[64];
	trim_section(section, sec, sizeof(sec));
	if (!strcmp(name, "config")) {
		fail(c, "'config' cannot be set in a configuration file, only with -o");
		return 0;
	}
	int i = pfs_opts_key_find(name);
	if (i < 0) {
		if (*sec)
			fail(c, "unknown key '%s' in [%s]", name, sec);
		else
			fail(c, "unknown key '%s'", name);
		return 0;
	}
	const char *home = pfs_opts_key_section((size_t)i);
	if (!*sec) {
		fail(c, "key '%s' is outside any section: it belongs in [%s]", name, home);
		return 0;
	}
	if (strcmp(sec, home)) {
		fail(c, "key '%s' belongs in [%s], not in [%s]", name, home, sec);
		return 0;
	}
	if (c->line_of[i]) {
		fail(c, "duplicate key '%s' (already set on line %d)", name, c->line_of[i]);
		return 0;
	}
	c->line_of[i] = c->lineno;
	/* A key that -o set is still checked, so that a broken file shows
	 * up now rather than when the -o goes away. */
	struct pfs_opts *to = (c->skip >> i) & 1 ? &c->scratch : c->o;
	char msg[384];
	int rc = pfs_opts_set(to, name, value, msg, sizeof(msg));
	if (rc == -ENOMEM) {
		fail(c, "out of memory setting '%s'", name);
		return 0;
	}
	if (rc < 0) {
		const char *hash = strchr(value, '#');
		if (hash && hash > value && is_blank(hash[-1]))
			fail(c, "%s; '#' starts a comment only at the start of a line, "
			     "use ';' after a value", msg);
		else
			fail(c, "%s", msg);
		return 0;
	}
	return 1;
}

int pfs_config_load(struct pfs_opts *o, const char *path, uint64_t skip,
		    char *err, size_t errcap)
{
	struct ctx c = {.o = o, .skip = skip, .path = path, .err = err, .errcap = errcap};
	_Static_assert(sizeof(c.line_of) / sizeof(c.line_of[0]) >= 64,
		       "one line_of slot per bit of skip");
	int rc = -EINVAL;
	c.f = fopen(path, "re");
	if (!c.f) {
		snprintf(err, errcap, "config file '%s': %s", path, strerror(errno));
		return -EINVAL;
	}
	struct stat st;
	if (fstat(fileno(c.f), &st) < 0) {
		snprintf(err, errcap, "config file '%s': %s", path, strerror(errno));
		goto out_close;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, errcap, "config file '%s': not a regular file", path);
		goto out_close;
	}
	if (st.st_size > PFS_CONFIG_MAX_BYTES) {
		snprintf(err, errcap, "config file '%s': larger than %u bytes", path,
			 PFS_CONFIG_MAX_BYTES);
		goto out_close;
	}
	pfs_opts_init(&c.scratch);
	int line = ini_parse_stream(read_line, &c, handle, &c);
	if (c.failed)
		goto out_scratch;
	if (line == -2) {
		snprintf(err, errcap, "config file '%s': out of memory", path);
		goto out_scratch;
	}
	if (line != 0) {
		/* Something the line checks let through and inih refused. */
		snprintf(err, errcap, "%s:%d: syntax error", path, line);
		goto out_scratch;
	}
	rc = 0;
out_scratch:
	pfs_opts_finish(&c.scratch);
out_close:
	fclose(c.f);
	return rc;
}
