/* retry.c - see retry.h. */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>

#include "retry.h"

double pfs_retry_delay(int attempt, double retry_after, double rnd)
{
	if (attempt < 1)
		return 0;
	double ceil = PFS_RETRY_BASE;
	for (int i = 1; i < attempt && ceil < PFS_RETRY_CAP; i++)
		ceil *= 2;
	if (ceil > PFS_RETRY_CAP)
		ceil = PFS_RETRY_CAP;
	double d = ceil * rnd;
	if (retry_after > d)
		d = retry_after > PFS_RETRY_CAP ? PFS_RETRY_CAP : retry_after;
	return d;
}

int pfs_retry_status(long status)
{
	return (status >= 500 && status <= 599) || status == 429 || status == 408;
}

int pfs_retry_errno(long status)
{
	switch (status) {
	case 404: case 410: return -ENOENT;
	case 401: case 403: return -EACCES;
	case 416: return -ESTALE; /* the object shrank */
	case 412: return -ESTALE; /* If-Match refused: another version */
	default: return -EIO;
	}
}

double pfs_retry_after_parse(const char *value)
{
	if (!value)
		return -1;
	while (*value == ' ' || *value == '\t')
		value++;
	if (!isdigit((unsigned char)*value))
		return -1;
	char *end;
	long v = strtol(value, &end, 10);
	while (*end == ' ' || *end == '\t' || *end == '\r' || *end == '\n')
		end++;
	if (*end || v < 0)
		return -1;
	return (double)v;
}
