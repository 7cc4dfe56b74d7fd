/* url.c - see url.h. */
#include <stdio.h>
#include <string.h>

#include "url.h"

void pfs_url_redact(const char *url, char *out, size_t cap)
{
	const char *host = strstr(url, "://");
	size_t sl = host ? (size_t)(host + 3 - url) : 0;
	host = host ? host + 3 : url;
	size_t hl = strcspn(host, "/?#");
	/* The last '@' of the authority ends the userinfo (a password may
	 * hold an unescaped '@'). */
	const char *at = NULL;
	for (const char *p = host; p < host + hl; p++)
		if (*p == '@')
			at = p;
	const char *rest = sl && at ? at + 1 : host;
	size_t n = strcspn(rest, "?#");
	if (cap)
		snprintf(out, cap, "%.*s%.*s", (int)sl, url, (int)n, rest);
}

int pfs_url_hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}
