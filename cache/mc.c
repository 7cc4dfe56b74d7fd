/* mc.c - see mc.h.
 *
 * Every wait is a poll() with what is left of the exchange's deadline, so
 * however the server drips its answer, the exchange ends by the deadline.
 * A connection's read side is one buffer: answer lines are parsed from
 * it, and a VALUE's bytes are read into it after its line (grown to the
 * declared length, which was checked against the cap first).
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "mc.h"
#include "../util/clock.h"

#define LINE_MAX_BYTES 512 /* "VALUE <250-byte key> <flags> <bytes>\r\n" fits */

struct conn {
	int fd;
	int reused;     /* taken from the idle stack for this exchange */
	size_t rx;      /* bytes received in this exchange */
	char *buf;      /* read buffer: [off, end) not yet parsed */
	size_t cap, off, end;
	struct conn *next; /* idle stack */
};

struct pfs_mc_server {
	char host[256];
	char port[8];
	pthread_mutex_t lock;       /* guards all below */
	struct sockaddr_storage addr;
	socklen_t addrlen;          /* 0: not resolved yet */
	struct conn *idle;
	unsigned nidle;
};

int pfs_mc_is_dead(int err)
{
	switch (err) {
	case -ECONNREFUSED: case -ECONNRESET: case -EPIPE: case -EHOSTUNREACH:
	case -ENETUNREACH: case -EADDRNOTAVAIL: case -ECONNABORTED:
		return 1;
	default:
		return 0;
	}
}

/* ---- server and connections -------------------------------------------- */

static int resolve(struct pfs_mc_server *sv)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_family = AF_UNSPEC}, *ai;
	if (getaddrinfo(sv->host, sv->port, &hints, &ai) != 0 || !ai)
		return -EHOSTUNREACH;
	pthread_mutex_lock(&sv->lock);
	memcpy(&sv->addr, ai->ai_addr, ai->ai_addrlen);
	sv->addrlen = ai->ai_addrlen;
	pthread_mutex_unlock(&sv->lock);
	freeaddrinfo(ai);
	return 0;
}

int pfs_mc_server_create(const char *host, unsigned port, struct pfs_mc_server **out)
{
	struct pfs_mc_server *sv = calloc(1, sizeof(*sv));
	if (!sv)
		return -ENOMEM;
	snprintf(sv->host, sizeof(sv->host), "%s", host);
	snprintf(sv->port, sizeof(sv->port), "%u", port);
	if (pthread_mutex_init(&sv->lock, NULL)) {
		free(sv);
		return -ENOMEM;
	}
	resolve(sv); /* a name that does not resolve yet: again at connect */
	*out = sv;
	return 0;
}

static void conn_close(struct conn *c)
{
	if (!c)
		return;
	close(c->fd);
	free(c->buf);
	free(c);
}

void pfs_mc_server_destroy(struct pfs_mc_server *sv)
{
	if (!sv)
		return;
	while (sv->idle) {
		struct conn *c = sv->idle;
		sv->idle = c->next;
		conn_close(c);
	}
	pthread_mutex_destroy(&sv->lock);
	free(sv);
}

/* ms left before the deadline, rounded up; 0 when it has passed. */
static int left_ms(uint64_t deadline_ns)
{
	uint64_t now = pfs_clock_ns();
	if (now >= deadline_ns)
		return 0;
	uint64_t ms = (deadline_ns - now + 999999) / 1000000;
	return ms > 60000 ? 60000 : (int)ms;
}

/* Waits for `events` on c->fd until the deadline: 0, or -ETIMEDOUT, or
 * the socket's error. */
static int wait_fd(struct conn *c, short events, uint64_t deadline_ns)
{
	for (;;) {
		int ms = left_ms(deadline_ns);
		if (ms == 0)
			return -ETIMEDOUT;
		struct pollfd p = {.fd = c->fd, .events = events};
		int n = poll(&p, 1, ms);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			continue; /* the loop's clock decides */
		if (p.revents & (POLLERR | POLLNVAL)) {
			int err = 0;
			socklen_t l = sizeof(err);
			getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &l);
			return err ? -err : -ECONNRESET;
		}
		return 0; /* readable, writable or hung up: the read says which */
	}
}

static int conn_open(struct pfs_mc_server *sv, uint64_t deadline_ns, struct conn **out)
{
	pthread_mutex_lock(&sv->lock);
	struct conn *c = sv->idle;
	if (c) {
		sv->idle = c->next;
		sv->nidle--;
	}
	struct sockaddr_storage addr = sv->addr;
	socklen_t alen = sv->addrlen;
	pthread_mutex_unlock(&sv->lock);
	if (c) {
		c->next = NULL;
		c->reused = 1;
		c->rx = 0;
		*out = c;
		return 0;
	}
	if (!alen) {
		int rc = resolve(sv);
		if (rc < 0)
			return rc;
		pthread_mutex_lock(&sv->lock);
		addr = sv->addr;
		alen = sv->addrlen;
		pthread_mutex_unlock(&sv->lock);
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->fd = socket(addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (c->fd < 0) {
		free(c);
		return -errno;
	}
	int one = 1;
	setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	int rc = 0;
	if (connect(c->fd, (struct sockaddr *)&addr, alen) < 0) {
		rc = errno == EINPROGRESS ? 0 : -errno;
		if (rc == 0)
			rc = wait_fd(c, POLLOUT, deadline_ns);
		if (rc == 0) {
			int err = 0;
			socklen_t l = sizeof(err);
			getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &l);
			rc = err ? -err : 0;
		}
	}
	if (rc < 0) {
		conn_close(c);
		return rc;
	}
	*out = c;
	return 0;
}

/* An idle connection the server closed meanwhile (its idle timeout, a
 * restart) fails at once with nothing received: that says nothing about
 * the server, so the exchange is sent once more on a new connection. */
static int stale_idle(const struct conn *c, int rc)
{
	return c->reused && c->rx == 0 && pfs_mc_is_dead(rc);
}

/* An exchange that ended cleanly: the connection is kept for the next. */
static void conn_keep(struct pfs_mc_server *sv, struct conn *c)
{
	c->off = c->end = 0;
	pthread_mutex_lock(&sv->lock);
	if (sv->nidle < PFS_MC_IDLE_MAX) {
		c->next = sv->idle;
		sv->idle = c;
		sv->nidle++;
		c = NULL;
	}
	pthread_mutex_unlock(&sv->lock);
	conn_close(c);
}

/* ---- I/O ------------------------------------------------------------------ */

static int send_all(struct conn *c, struct iovec *iov, int n, uint64_t deadline_ns)
{
	while (n > 0) {
		struct msghdr m = {.msg_iov = iov, .msg_iovlen = (size_t)n};
		ssize_t w = sendmsg(c->fd, &m, MSG_NOSIGNAL);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				return -errno;
			int rc = wait_fd(c, POLLOUT, deadline_ns);
			if (rc < 0)
				return rc;
			continue;
		}
		size_t done = (size_t)w;
		while (n > 0 && done >= iov->iov_len) {
			done -= iov->iov_len;
			iov++;
			n--;
		}
		if (n > 0) {
			iov->iov_base = (char *)iov->iov_base + done;
			iov->iov_len -= done;
		}
	}
	return 0;
}

static int grow(struct conn *c, size_t want)
{
	if (want <= c->cap)
		return 0;
	char *nb = realloc(c->buf, want);
	if (!nb)
		return -ENOMEM;
	c->buf = nb;
	c->cap = want;
	return 0;
}

/* Reads until c->end - c->off >= need (the buffer holds at least need
 * bytes from off). */
static int fill(struct conn *c, size_t need, uint64_t deadline_ns)
{
	if (c->end - c->off >= need)
		return 0;
	if (c->off) { /* compact */
		memmove(c->buf, c->buf + c->off, c->end - c->off);
		c->end -= c->off;
		c->off = 0;
	}
	int rc = grow(c, need < 4096 ? 4096 : need);
	if (rc < 0)
		return rc;
	while (c->end < need) {
		ssize_t r = recv(c->fd, c->buf + c->end, c->cap - c->end, 0);
		if (r > 0) {
			c->end += (size_t)r;
			c->rx += (size_t)r;
			continue;
		}
		if (r == 0)
			return -ECONNRESET; /* closed mid-answer */
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return -errno;
		if ((rc = wait_fd(c, POLLIN, deadline_ns)) < 0)
			return rc;
	}
	return 0;
}

/* The next answer line (without "\r\n", NUL-terminated in place), at most
 * LINE_MAX_BYTES. */
static int read_line(struct conn *c, char **line, uint64_t deadline_ns)
{
	size_t scanned = 0;
	for (;;) {
		char *s = c->buf ? c->buf + c->off : NULL;
		size_t have = c->end - c->off;
		for (; s && scanned + 1 < have; scanned++) {
			if (s[scanned] == '\r' && s[scanned + 1] == '\n') {
				/* A NUL inside would end the line for strcmp early:
				 * "STORED\0anything" is not an answer. */
				if (memchr(s, 0, scanned))
					return -EPROTO;
				s[scanned] = 0;
				*line = s;
				c->off += scanned + 2;
				return 0;
			}
		}
		if (have >= LINE_MAX_BYTES)
			return -EPROTO;
		int rc = fill(c, have + 1, deadline_ns);
		if (rc < 0)
			return rc;
	}
}

/* Same rules as memcached: 1 to 250 bytes, no space or control byte. */
static int key_ok(const char *key, size_t klen)
{
	if (klen == 0 || klen > PFS_MC_KEY_MAX)
		return 0;
	for (size_t i = 0; i < klen; i++)
		if ((unsigned char)key[i] <= ' ' || key[i] == 0x7f)
			return 0;
	return 1;
}

/* A server error line, as an errno. */
static int error_line(const char *l)
{
	if (!strncmp(l, "SERVER_ERROR object too large", 29))
		return -E2BIG;
	if (!strncmp(l, "SERVER_ERROR out of memory", 26))
		return -ENOSPC; /* -M: full, and told not to evict */
	return -EPROTO;
}

/* ---- exchanges ------------------------------------------------------------ */

#define IOV_MAX_REQ 12

/* Sends iov[0..n) on a connection of sv and reads the answer's first line:
 * 0, *out (end it with conn_keep or conn_close) and *line, valid until the
 * next read on it; or an error, the connection closed. A reused
 * connection the server had closed is replaced (stale_idle). */
static int request(struct pfs_mc_server *sv, const struct iovec *iov, int n,
		   uint64_t deadline_ns, struct conn **out, char **line)
{
	struct iovec v[IOV_MAX_REQ];
	if (n > IOV_MAX_REQ)
		return -EINVAL;
	for (;;) {
		struct conn *c = NULL;
		int rc = conn_open(sv, deadline_ns, &c);
		if (rc < 0)
			return rc;
		memcpy(v, iov, sizeof(*iov) * (size_t)n); /* send_all moves them */
		if ((rc = send_all(c, v, n, deadline_ns)) == 0 &&
		    (rc = read_line(c, line, deadline_ns)) == 0) {
			*out = c;
			return 0;
		}
		int again = stale_idle(c, rc);
		conn_close(c);
		if (!again)
			return rc;
	}
}

int pfs_mc_get(struct pfs_mc_server *sv, const char *key, size_t klen, size_t cap,
	       uint64_t deadline_ns, struct pfs_mc_value *out)
{
	if (!key_ok(key, klen))
		return -EINVAL;
	struct iovec iov[3] = {{"get ", 4}, {(void *)key, klen}, {"\r\n", 2}};
	struct conn *c;
	char *line;
	int rc = request(sv, iov, 3, deadline_ns, &c, &line);
	if (rc < 0)
		return rc;
	if (!strcmp(line, "END")) {
		conn_keep(sv, c);
		return -ENOENT;
	}
	/* VALUE <key> <flags> <bytes> */
	char got[PFS_MC_KEY_MAX + 1];
	unsigned flags;
	unsigned long long bytes;
	int pos = 0;
	if (sscanf(line, "VALUE %250s %u %llu%n", got, &flags, &bytes, &pos) != 3 ||
	    line[pos] || strlen(got) != klen || memcmp(got, key, klen)) {
		rc = -EPROTO;
		goto fail;
	}
	if (bytes > cap) {
		rc = -EFBIG; /* refused before a byte of it is read */
		goto fail;
	}
	size_t vlen = (size_t)bytes;
	/* The value, then "\r\nEND\r\n". */
	if ((rc = fill(c, vlen + 7, deadline_ns)) < 0)
		goto fail;
	if (memcmp(c->buf + c->off + vlen, "\r\nEND\r\n", 7)) {
		rc = -EPROTO;
		goto fail;
	}
	out->data = c->buf + c->off;
	out->len = vlen;
	out->conn = c;
	c->off += vlen + 7;
	return 0;
fail:
	conn_close(c);
	return rc;
}

void pfs_mc_value_done(struct pfs_mc_server *sv, struct pfs_mc_value *v)
{
	if (v->conn)
		conn_keep(sv, v->conn);
	v->conn = NULL;
	v->data = NULL;
}

int pfs_mc_set(struct pfs_mc_server *sv, int add, const char *key, size_t klen,
	       const struct iovec *data, int n, unsigned ttl, uint64_t deadline_ns)
{
	if (!key_ok(key, klen) || n < 0 || n > IOV_MAX_REQ - 4)
		return -EINVAL;
	size_t total = 0;
	for (int i = 0; i < n; i++)
		total += data[i].iov_len;
	char head[64], tail[] = "\r\n";
	int hl = snprintf(head, sizeof(head), " 0 %u %zu\r\n", ttl, total);
	struct iovec iov[IOV_MAX_REQ];
	int k = 0;
	iov[k++] = (struct iovec){add ? "add " : "set ", 4};
	iov[k++] = (struct iovec){(void *)key, klen};
	iov[k++] = (struct iovec){head, (size_t)hl};
	for (int i = 0; i < n; i++)
		iov[k++] = data[i];
	iov[k++] = (struct iovec){tail, 2};
	struct conn *c;
	char *line;
	int rc = request(sv, iov, k, deadline_ns, &c, &line);
	if (rc < 0)
		return rc;
	if (!strcmp(line, "STORED")) {
		rc = 0;
	} else if (!strcmp(line, "NOT_STORED") || !strcmp(line, "EXISTS")) {
		rc = -EEXIST;
	} else {
		/* memcached answers "object too large" before it has read the
		 * data, then reads on: the connection is not in step. */
		rc = error_line(line);
		conn_close(c);
		return rc;
	}
	conn_keep(sv, c);
	return rc;
}

int pfs_mc_delete(struct pfs_mc_server *sv, const char *key, size_t klen,
		  uint64_t deadline_ns)
{
	if (!key_ok(key, klen))
		return -EINVAL;
	struct iovec iov[3] = {{"delete ", 7}, {(void *)key, klen}, {"\r\n", 2}};
	struct conn *c;
	char *line;
	int rc = request(sv, iov, 3, deadline_ns, &c, &line);
	if (rc < 0)
		return rc;
	if (strcmp(line, "DELETED") && strcmp(line, "NOT_FOUND")) {
		conn_close(c);
		return -EPROTO;
	}
	rc = strcmp(line, "DELETED") ? -ENOENT : 0;
	conn_keep(sv, c);
	return rc;
}
