/* delayproxy.c - a TCP delay line for simulating a far origin on loopback.
 *
 *   delayproxy --upstream HOST:PORT [--listen HOST:PORT] [--delay-ms MS]
 *
 * The same program as bench/delayproxy.py (same options, output and
 * signals), in C so that the proxy's own CPU time does not distort a
 * benchmark on a 2-core machine.
 *
 * Every chunk read from one side is stamped with its arrival time and
 * written to the other side at arrival + delay. Chunks queue up rather than
 * wait for each other, so the proxy adds latency without capping throughput;
 * only a full queue (4 MiB per direction) pauses reading. EOF travels through
 * the same line (shutdown(SHUT_WR) after the delay). One thread, epoll, timed
 * with epoll_pwait2 for sub-millisecond deadlines.
 *
 * Prints "PORT n" once listening. SIGUSR1: black hole (drop every byte read
 * from now on, in both directions; prints "BLACKHOLE 1"). SIGUSR2: forward
 * again ("BLACKHOLE 0"). SIGTERM/SIGINT: exit.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define CHUNK (64 * 1024)
#define HIGH_WATER (4u << 20)

struct chunk {
	struct chunk *next;
	uint64_t due_ns;
	size_t len, off;
	int eof;
	char data[];
};

struct dir {
	int src, dst;
	struct chunk *head, *tail;
	size_t queued;
	int src_eof;   /* read side saw EOF/error: read no more */
	int done;      /* EOF delivered to dst */
	int blocked;   /* dst said EAGAIN: wait for EPOLLOUT, not the clock */
};

struct conn {
	struct conn *next;
	int cfd, ufd;
	int connected;  /* upstream connect finished */
	int dead;
	struct dir up, down; /* client->upstream, upstream->client */
	uint32_t cev, uev;  /* registered epoll events */
	int cdel, udel;     /* fd taken out of epoll after HUP/ERR (level-
			     * triggered HUP would otherwise spin until the
			     * delayed EOF is delivered) */
};

static int epfd;
static uint64_t delay_ns;
static int blackhole;
static struct conn *conns;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int parse_hostport(const char *s, struct sockaddr_in *sa)
{
	char host[64];
	const char *colon = strrchr(s, ':');
	if (!colon || (size_t)(colon - s) >= sizeof(host))
		return -1;
	memcpy(host, s, (size_t)(colon - s));
	host[colon - s] = '\0';
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_port = htons((uint16_t)atoi(colon + 1));
	if (host[0] == '\0')
		strcpy(host, "127.0.0.1");
	return inet_pton(AF_INET, host, &sa->sin_addr) == 1 ? 0 : -1;
}

static void set_nodelay(int fd)
{
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/* Events one fd needs: read while its outgoing queue has room, write while
 * the direction into it has a due chunk it could not write. */
static uint32_t want(struct conn *c, int fd)
{
	struct dir *out = fd == c->cfd ? &c->up : &c->down;
	struct dir *in = fd == c->cfd ? &c->down : &c->up;
	uint32_t ev = 0;
	if (fd == c->ufd && !c->connected)
		return EPOLLOUT;
	if (!out->src_eof && out->queued < HIGH_WATER && c->connected)
		ev |= EPOLLIN;
	if (in->head && in->head->due_ns <= now_ns())
		ev |= EPOLLOUT;
	return ev;
}

static void update(struct conn *c)
{
	uint32_t ce = want(c, c->cfd), ue = want(c, c->ufd);
	struct epoll_event e = {.data.ptr = c};
	if (ce != c->cev && !c->cdel) {
		e.events = ce;
		epoll_ctl(epfd, EPOLL_CTL_MOD, c->cfd, &e);
		c->cev = ce;
	}
	if (ue != c->uev && !c->udel) {
		e.events = ue;
		e.data.ptr = (char *)c + 1; /* tag: upstream fd */
		epoll_ctl(epfd, EPOLL_CTL_MOD, c->ufd, &e);
		c->uev = ue;
	}
}

static void push(struct dir *d, const char *buf, size_t len, int eof)
{
	struct chunk *ch = malloc(sizeof(*ch) + len);
	if (!ch)
		abort();
	ch->next = NULL;
	ch->due_ns = now_ns() + delay_ns;
	ch->len = len;
	ch->off = 0;
	ch->eof = eof;
	memcpy(ch->data, buf, len);
	if (d->tail)
		d->tail->next = ch;
	else
		d->head = ch;
	d->tail = ch;
	d->queued += len;
}

static void pump_in(struct conn *c, struct dir *d)
{
	char buf[CHUNK];
	for (int i = 0; i < 16 && !d->src_eof && d->queued < HIGH_WATER; i++) {
		ssize_t n = read(d->src, buf, sizeof(buf));
		if (n > 0) {
			if (!blackhole)
				push(d, buf, (size_t)n, 0);
			continue;
		}
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		d->src_eof = 1; /* EOF or error: deliver EOF after the delay */
		push(d, NULL, 0, 1);
	}
	(void)c;
}

/* Writes due chunks; returns -1 when the destination is gone. */
static int pump_out(struct dir *d)
{
	uint64_t now = now_ns();
	d->blocked = 0;
	while (d->head && d->head->due_ns <= now) {
		struct chunk *ch = d->head;
		if (ch->eof) {
			shutdown(d->dst, SHUT_WR);
			d->done = 1;
		} else {
			while (ch->off < ch->len) {
				ssize_t n = write(d->dst, ch->data + ch->off, ch->len - ch->off);
				if (n < 0 && errno == EAGAIN) {
					d->blocked = 1;
					return 0;
				}
				if (n < 0 && errno == EINTR)
					continue;
				if (n < 0)
					return -1;
				ch->off += (size_t)n;
			}
		}
		d->head = ch->next;
		if (!d->head)
			d->tail = NULL;
		d->queued -= ch->len;
		free(ch);
	}
	return 0;
}

static void free_dir(struct dir *d)
{
	while (d->head) {
		struct chunk *ch = d->head;
		d->head = ch->next;
		free(ch);
	}
}

static void kill_conn(struct conn *c)
{
	if (c->dead)
		return;
	c->dead = 1;
	close(c->cfd);
	close(c->ufd);
	free_dir(&c->up);
	free_dir(&c->down);
}

static void service(struct conn *c)
{
	if (c->dead)
		return;
	if (c->connected) {
		pump_in(c, &c->up);
		pump_in(c, &c->down);
	}
	if ((c->connected && pump_out(&c->up) < 0) || pump_out(&c->down) < 0 ||
	    (c->up.done && c->down.done)) {
		kill_conn(c);
		return;
	}
	update(c);
}

static void accept_all(int lfd, const struct sockaddr_in *up)
{
	for (;;) {
		int cfd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (cfd < 0)
			return;
		int ufd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (ufd < 0) {
			close(cfd);
			continue;
		}
		set_nodelay(cfd);
		set_nodelay(ufd);
		struct conn *c = calloc(1, sizeof(*c));
		if (!c)
			abort();
		c->cfd = cfd;
		c->ufd = ufd;
		c->up = (struct dir){.src = cfd, .dst = ufd};
		c->down = (struct dir){.src = ufd, .dst = cfd};
		int r = connect(ufd, (const struct sockaddr *)up, sizeof(*up));
		if (r < 0 && errno != EINPROGRESS) {
			close(cfd);
			close(ufd);
			free(c);
			continue;
		}
		c->connected = r == 0;
		struct epoll_event e = {.events = 0, .data.ptr = c};
		epoll_ctl(epfd, EPOLL_CTL_ADD, cfd, &e);
		e.data.ptr = (char *)c + 1;
		epoll_ctl(epfd, EPOLL_CTL_ADD, ufd, &e);
		c->next = conns;
		conns = c;
		update(c);
	}
}

int main(int argc, char **argv)
{
	struct sockaddr_in lsa, usa;
	const char *listen_s = "127.0.0.1:0", *up_s = NULL;
	double delay_ms = 10;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--listen") && i + 1 < argc)
			listen_s = argv[++i];
		else if (!strcmp(argv[i], "--upstream") && i + 1 < argc)
			up_s = argv[++i];
		else if (!strcmp(argv[i], "--delay-ms") && i + 1 < argc)
			delay_ms = atof(argv[++i]);
		else {
			fprintf(stderr, "usage: delayproxy --upstream HOST:PORT [--listen HOST:PORT] [--delay-ms MS]\n");
			return 2;
		}
	}
	if (!up_s || parse_hostport(up_s, &usa) || parse_hostport(listen_s, &lsa) || delay_ms < 0) {
		fprintf(stderr, "delayproxy: bad arguments\n");
		return 2;
	}
	delay_ns = (uint64_t)(delay_ms * 1e6);
	signal(SIGPIPE, SIG_IGN);

	int lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	int one = 1;
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(lfd, (struct sockaddr *)&lsa, sizeof(lsa)) || listen(lfd, 1024)) {
		perror("delayproxy: bind/listen");
		return 1;
	}
	socklen_t sl = sizeof(lsa);
	getsockname(lfd, (struct sockaddr *)&lsa, &sl);

	sigset_t ss;
	sigemptyset(&ss);
	sigaddset(&ss, SIGUSR1);
	sigaddset(&ss, SIGUSR2);
	sigaddset(&ss, SIGTERM);
	sigaddset(&ss, SIGINT);
	sigprocmask(SIG_BLOCK, &ss, NULL);
	int sfd = signalfd(-1, &ss, SFD_NONBLOCK | SFD_CLOEXEC);

	epfd = epoll_create1(EPOLL_CLOEXEC);
	static char lmark, smark; /* tags for the two non-connection fds */
	struct epoll_event e = {.events = EPOLLIN, .data.ptr = &lmark};
	epoll_ctl(epfd, EPOLL_CTL_ADD, lfd, &e);
	e.data.ptr = &smark;
	epoll_ctl(epfd, EPOLL_CTL_ADD, sfd, &e);
	printf("PORT %d\n", ntohs(lsa.sin_port));
	fflush(stdout);

	struct epoll_event evs[256];
	for (;;) {
		/* Sleep until the earliest due chunk that is not already waiting
		 * for EPOLLOUT, or forever. */
		uint64_t now = now_ns(), next = UINT64_MAX;
		for (struct conn *c = conns; c; c = c->next) {
			if (c->dead)
				continue;
			if (c->up.head && c->connected && !c->up.blocked &&
			    c->up.head->due_ns < next)
				next = c->up.head->due_ns;
			if (c->down.head && !c->down.blocked && c->down.head->due_ns < next)
				next = c->down.head->due_ns;
		}
		struct timespec ts, *tp = NULL;
		if (next != UINT64_MAX) {
			uint64_t wait = next > now ? next - now : 0;
			ts.tv_sec = (time_t)(wait / 1000000000u);
			ts.tv_nsec = (long)(wait % 1000000000u);
			tp = &ts;
		}
		int n = epoll_pwait2(epfd, evs, 256, tp, NULL);
		if (n < 0 && errno != EINTR) {
			perror("delayproxy: epoll");
			return 1;
		}
		for (int i = 0; i < n; i++) {
			void *p = evs[i].data.ptr;
			if (p == &lmark) {
				accept_all(lfd, &usa);
			} else if (p == &smark) {
				struct signalfd_siginfo si;
				while (read(sfd, &si, sizeof(si)) == sizeof(si)) {
					if (si.ssi_signo == SIGUSR1 || si.ssi_signo == SIGUSR2) {
						blackhole = si.ssi_signo == SIGUSR1;
						printf("BLACKHOLE %d\n", blackhole);
						fflush(stdout);
					} else {
						return 0;
					}
				}
			} else if ((uintptr_t)p & 1) {
				struct conn *c = (struct conn *)((char *)p - 1);
				if (!c->connected && !c->dead) {
					int err = 0;
					socklen_t el = sizeof(err);
					getsockopt(c->ufd, SOL_SOCKET, SO_ERROR, &err, &el);
					if (err) {
						kill_conn(c);
						continue;
					}
					c->connected = 1;
				}
				service(c);
				if (!c->dead && (evs[i].events & (EPOLLHUP | EPOLLERR))) {
					epoll_ctl(epfd, EPOLL_CTL_DEL, c->ufd, NULL);
					c->udel = 1;
				}
			} else {
				struct conn *c = p;
				service(c);
				if (!c->dead && (evs[i].events & (EPOLLHUP | EPOLLERR))) {
					epoll_ctl(epfd, EPOLL_CTL_DEL, c->cfd, NULL);
					c->cdel = 1;
				}
			}
		}
		/* Deliver whatever fell due (no reads: those wait for EPOLLIN),
		 * drop finished connections. */
		struct conn **pp = &conns;
		now = now_ns();
		while (*pp) {
			struct conn *c = *pp;
			if (!c->dead && c->connected &&
			    ((c->up.head && !c->up.blocked && c->up.head->due_ns <= now) ||
			     (c->down.head && !c->down.blocked && c->down.head->due_ns <= now))) {
				if (pump_out(&c->up) < 0 || pump_out(&c->down) < 0 ||
				    (c->up.done && c->down.done))
					kill_conn(c);
				else
					update(c);
			}
			if (c->dead) {
				*pp = c->next;
				free(c);
			} else {
				pp = &c->next;
			}
		}
	}
}
