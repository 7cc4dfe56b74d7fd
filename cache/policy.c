/* policy.c - see policy.h. */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "policy.h"

static const char *const policy_names[] = {
	[PFS_POLICY_LRU] = "lru", [PFS_POLICY_MINIO] = "minio", [PFS_POLICY_EPOCH] = "epoch",
};
static const char *const resident_names[] = {
	[PFS_RESIDENT_ANY] = "any", [PFS_RESIDENT_SMALL] = "small",
	[PFS_RESIDENT_LARGE] = "large",
};
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static int lookup(const char *const *names, size_t n, const char *s)
{
	for (size_t i = 0; s && i < n; i++)
		if (strcmp(s, names[i]) == 0)
			return (int)i;
	return -EINVAL;
}

int pfs_policy_parse(const char *s, enum pfs_policy *out)
{
	int i = lookup(policy_names, COUNT(policy_names), s);
	if (i < 0)
		return i;
	*out = (enum pfs_policy)i;
	return 0;
}

int pfs_resident_parse(const char *s, enum pfs_resident *out)
{
	int i = lookup(resident_names, COUNT(resident_names), s);
	if (i < 0)
		return i;
	*out = (enum pfs_resident)i;
	return 0;
}

const char *pfs_policy_name(enum pfs_policy p)
{
	return (unsigned)p < COUNT(policy_names) ? policy_names[p] : "?";
}

const char *pfs_resident_name(enum pfs_resident r)
{
	return (unsigned)r < COUNT(resident_names) ? resident_names[r] : "?";
}
