/* units.c - see units.h. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "units.h"

int pfs_parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	if (!s || !isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

int pfs_parse_size(const char *s, uint64_t *out)
{
	if (!s || !isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno)
		return -EINVAL;
	unsigned shift = 0;
	switch (toupper((unsigned char)*end)) {
	case '\0': break;
	case 'K': shift = 10; end++; break;
	case 'M': shift = 20; end++; break;
	case 'G': shift = 30; end++; break;
	case 'T': shift = 40; end++; break;
	case 'B': break; /* plain bytes, "4096B" */
	default: return -EINVAL;
	}
	if (shift && (!strcasecmp(end, "iB") || !strcasecmp(end, "B")))
		end += strlen(end);
	else if (!shift && !strcasecmp(end, "B"))
		end++;
	if (*end)
		return -EINVAL;
	if (shift && v > (UINT64_MAX >> shift))
		return -EINVAL;
	*out = (uint64_t)v << shift;
	return 0;
}

int pfs_parse_seconds(const char *s, double *out)
{
	if (!s || !*s || strspn(s, "0123456789.") != strlen(s))
		return -EINVAL; /* decimal only: strtod would take hex and exponents */
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || *end || !isfinite(v) || v < 0 || v > 86400.0 * 365)
		return -EINVAL;
	*out = v;
	return 0;
}
