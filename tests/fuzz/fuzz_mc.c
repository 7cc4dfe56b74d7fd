/* fuzz_mc.c - cache/mc.c: what the shared tier's memcached client makes
 * of any answer a server may send (issue 27: a server that answers
 * oddly must cost a miss, never a crash, a hang or an allocation of what
 * it declares).
 *
 * Input: one byte choosing the exchange (get, set, add, delete: its low
 * two bits), then the server's whole answer. A server thread of this
 * target accepts the client's connection on 127.0.0.1, sends the answer,
 * then reads until the client closes; each input gets a fresh
 * pfs_mc_server (no idle connection from an earlier input).
 *
 * Invariants: the result is one of the errors mc.h names; a get that
 * returns 0 gives exactly the bytes an independent parse of the answer
 * finds ("VALUE k F N\r\n", N <= the cap, N bytes, "\r\nEND\r\n");
 * a set returns 0 only on an answer that starts "STORED\r\n"; every
 * exchange ends within its deadline.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "fuzz.h"
#include "cache/mc.h"
#include "util/clock.h"

#define CAP 4096

static int listener = -1;
static unsigned port;

struct answer {
	const uint8_t *data;
	size_t len;
};

static void *serve(void *arg)
{
	const struct answer *a = arg;
	int c = accept(listener, NULL, NULL);
	if (c < 0)
		return NULL;
	size_t off = 0;
	while (off < a->len) {
		ssize_t w = send(c, a->data + off, a->len - off, MSG_NOSIGNAL);
		if (w <= 0)
			break;
		off += (size_t)w;
	}
	shutdown(c, SHUT_WR);
	char buf[4096];
	struct timeval tv = {2, 0};
	setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	while (recv(c, buf, sizeof(buf), 0) > 0)
		;
	close(c);
	return NULL;
}

static void listen_once(void)
{
	if (listener >= 0)
		return;
	listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t l = sizeof(sa);
	FUZZ_CHECK(listener >= 0 && bind(listener, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
		   listen(listener, 8) == 0 &&
		   getsockname(listener, (struct sockaddr *)&sa, &l) == 0);
	port = ntohs(sa.sin_port);
}

static int allowed(int rc)
{
	switch (rc) {
	case 0: case -ENOENT: case -EEXIST: case -E2BIG: case -ENOSPC: case -EFBIG:
	case -EPROTO: case -ETIMEDOUT: case -ECONNRESET: case -EPIPE: case -ECONNREFUSED:
	case -ENOMEM:
		return 1;
	default:
		return 0;
	}
}

/* The value an honest parse finds in a get's answer for key "k", or -1. */
static long expected_value(const uint8_t *d, size_t n, size_t *at)
{
	const char *p = (const char *)d;
	const char *eol = memmem(p, n, "\r\n", 2);
	if (!eol || (size_t)(eol - p) > 500)
		return -1;
	char line[512];
	memcpy(line, p, (size_t)(eol - p));
	line[eol - p] = 0;
	unsigned flags;
	unsigned long long bytes;
	int pos = 0;
	if (sscanf(line, "VALUE k %u %llu%n", &flags, &bytes, &pos) != 2 || line[pos] ||
	    bytes > CAP)
		return -1;
	size_t start = (size_t)(eol - p) + 2;
	if (n < start + bytes + 7 || memcmp(p + start + bytes, "\r\nEND\r\n", 7))
		return -1;
	*at = start;
	return (long)bytes;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	listen_once();
	int op = data[0] & 3;
	struct answer a = {data + 1, size - 1};
	pthread_t t;
	FUZZ_CHECK(pthread_create(&t, NULL, serve, &a) == 0);
	struct pfs_mc_server *sv;
	FUZZ_CHECK(pfs_mc_server_create("127.0.0.1", port, &sv) == 0);
	uint64_t t0 = pfs_clock_ns(), deadline = t0 + 2000000000ull;
	int rc;
	if (op == 0) {
		struct pfs_mc_value v = {0};
		rc = pfs_mc_get(sv, "k", 1, CAP, deadline, &v);
		size_t at = 0;
		long want = expected_value(a.data, a.len, &at);
		if (rc == 0) {
			FUZZ_CHECK(want >= 0 && v.len == (size_t)want);
			FUZZ_CHECK(!memcmp(v.data, a.data + at, v.len));
			pfs_mc_value_done(sv, &v);
		}
	} else if (op == 3) {
		rc = pfs_mc_delete(sv, "k", 1, deadline);
	} else {
		struct iovec iov = {"value", 5};
		rc = pfs_mc_set(sv, op == 2, "k", 1, &iov, 1, 0, deadline);
		if (rc == 0)
			FUZZ_CHECK(a.len >= 8 && !memcmp(a.data, "STORED\r\n", 8));
	}
	if (!allowed(rc))
		fprintf(stderr, "unexpected result %d\n", rc);
	FUZZ_CHECK(allowed(rc));
	/* The deadline, and a little for the scheduler. */
	FUZZ_CHECK(pfs_clock_ns() - t0 < 2500000000ull);
	pfs_mc_server_destroy(sv);
	pthread_join(t, NULL);
	return 0;
}
