/* notify.c - see notify.h. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "notify.h"

int pfs_notify(const char *state)
{
	const char *name = getenv("NOTIFY_SOCKET");
	if (!name || !*name)
		return 0;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	size_t n = strlen(name);
	if ((name[0] != '/' && name[0] != '@') || n >= sizeof(sa.sun_path))
		return -EINVAL;
	memcpy(sa.sun_path, name, n);
	if (name[0] == '@')
		sa.sun_path[0] = '\0'; /* the abstract namespace */
	socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n);
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	int rc = 1;
	if (sendto(fd, state, strlen(state), MSG_NOSIGNAL | MSG_DONTWAIT,
		   (struct sockaddr *)&sa, len) < 0)
		rc = -errno;
	close(fd);
	return rc;
}
