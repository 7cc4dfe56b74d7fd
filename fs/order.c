/* order.c - see order.h. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "../catalog/ftable.h"
#include "order.h"
#include "views.h"
#include "../prefetch/prefetch.h"

#define LINE_MAX_BYTES 4096
#define BATCH 256
#define SESSIONS 64
#define STREAM_LINE "#stream "

/* One writer's order being written: the writes of one thread from offset
 * 0 on (the kernel sends no opens here, see fs.c, so a writer is known
 * only by the thread id of its requests). */
struct session {
	int used;                 /* 0: a free slot */
	int32_t tid;              /* the writer (0 when the kernel could not
				   * name it: another pid namespace) */
	uint64_t stream;          /* its prefetch stream; 0 before the first line */
	int started;              /* the first line was taken */
	uint64_t last;            /* a clock for replacement */
	size_t line_len;
	int line_too_long;
	char line[LINE_MAX_BYTES]; /* the partial last line */
};

struct pfs_order {
	const struct pfs_ftable *ft;
	struct pfs_prefetch *prefetch;
	struct pfs_views *views;
	pthread_mutex_t lock;
	struct session s[SESSIONS]; /* guarded by lock */
	uint64_t clock;             /* guarded by lock */
};

int pfs_order_create(const struct pfs_ftable *ft, struct pfs_prefetch *prefetch,
		     struct pfs_views *views, struct pfs_order **out)
{
	struct pfs_order *o = calloc(1, sizeof(*o));
	if (!o)
		return -ENOMEM;
	o->ft = ft;
	o->prefetch = prefetch;
	o->views = views;
	pthread_mutex_init(&o->lock, NULL);
	*out = o;
	return 0;
}

void pfs_order_destroy(struct pfs_order *o)
{
	if (!o)
		return;
	pthread_mutex_destroy(&o->lock);
	free(o);
}

/* tid's session, or NULL (lock held). */
static struct session *find(struct pfs_order *o, int32_t tid)
{
	for (int i = 0; i < SESSIONS; i++)
		if (o->s[i].used && o->s[i].tid == tid)
			return &o->s[i];
	return NULL;
}

/* A new session for tid, in its old slot, a free one, or the least
 * recently written one (lock held). */
static struct session *begin(struct pfs_order *o, int32_t tid)
{
	struct session *s = find(o, tid);
	for (int i = 0; !s && i < SESSIONS; i++)
		if (!o->s[i].used)
			s = &o->s[i];
	if (!s) {
		s = &o->s[0];
		for (int i = 1; i < SESSIONS; i++)
			if (o->s[i].last < s->last)
				s = &o->s[i];
	}
	s->used = 1;
	s->tid = tid;
	s->stream = 0;
	s->started = 0;
	s->line_len = 0;
	s->line_too_long = 0;
	return s;
}

void pfs_order_reset(struct pfs_order *o, int32_t tid)
{
	pthread_mutex_lock(&o->lock);
	struct session *s = find(o, tid);
	if (s)
		s->used = 0; /* its next write starts a new order */
	pthread_mutex_unlock(&o->lock);
}

#define VIEWS_PREFIX PFS_CTL_NAME "/views/"

enum pfs_order_line pfs_order_parse_line(char *s, size_t n, char **spec, char **path)
{
	if (n && s[n - 1] == '\r')
		n--;
	s[n] = '\0';
	while (*s == '/')
		s++;
	if (!*s)
		return PFS_ORDER_LINE_EMPTY; /* empty lines are allowed */
	if (strncmp(s, VIEWS_PREFIX, strlen(VIEWS_PREFIX))) {
		*path = s;
		return PFS_ORDER_LINE_FILE;
	}
	char *name = s + strlen(VIEWS_PREFIX);
	char *slash = strchr(name, '/');
	if (!slash)
		return PFS_ORDER_LINE_BAD;
	*slash = '\0';
	*spec = name;
	*path = slash + 1;
	return PFS_ORDER_LINE_VIEW;
}

const char *pfs_order_stream_line(const char *s)
{
	return strncmp(s, STREAM_LINE, strlen(STREAM_LINE)) ? NULL : s + strlen(STREAM_LINE);
}

/* Resolves one complete line into the batch. */
static void take_line(struct pfs_order *o, char *s, size_t n, uint64_t *batch,
		      size_t *nb, size_t *unknown)
{
	char *spec = NULL, *path = NULL;
	uint32_t view = 0, idx, node;
	switch (pfs_order_parse_line(s, n, &spec, &path)) {
	case PFS_ORDER_LINE_EMPTY:
		return;
	case PFS_ORDER_LINE_BAD:
		(*unknown)++;
		return;
	case PFS_ORDER_LINE_VIEW:
		if (!o->views || pfs_views_spec(o->views, spec, &idx) < 0) {
			(*unknown)++;
			return;
		}
		view = idx + 1;
		break;
	case PFS_ORDER_LINE_FILE:
		break;
	}
	struct pfs_fnode info;
	if (pfs_ftable_resolve(o->ft, path, &node) < 0 ||
	    pfs_ftable_get(o->ft, node, &info) < 0 || info.is_dir) {
		(*unknown)++;
		return;
	}
	if (view && !pfs_views_transforms(pfs_ftable_name(o->ft, node)))
		view = 0; /* passed through: the same bytes as the file */
	batch[(*nb)++] = PFS_PREFETCH_OBJ(node, view);
}

/* The session's first complete line: "#stream NAME" picks the stream,
 * anything else is the unnamed stream's first entry. Returns 1 if the
 * line was the stream line (consumed). */
static int first_line(struct pfs_order *o, struct session *s, char *line, size_t n,
		      size_t *unknown)
{
	s->started = 1;
	line[n] = '\0';
	if (n && line[n - 1] == '\r')
		line[--n] = '\0';
	const char *name = pfs_order_stream_line(line);
	if (o->prefetch) {
		s->stream = pfs_prefetch_order_begin(o->prefetch, name);
		if (!s->stream && name) {
			/* Not a valid name: the unnamed stream, the line unknown. */
			s->stream = pfs_prefetch_order_begin(o->prefetch, NULL);
			(*unknown)++;
		}
	}
	return name != NULL;
}

int pfs_order_write(struct pfs_order *o, int32_t tid, uint64_t off, const char *buf,
		    size_t len)
{
	uint64_t batch[BATCH];
	size_t nb = 0, unknown = 0;
	pthread_mutex_lock(&o->lock);
	struct session *s = off == 0 ? NULL : find(o, tid);
	if (!s) {
		s = begin(o, tid);
		/* Past offset 0 with no order of this writer known (another
		 * thread of it, or one of more than 64 writers): the lines
		 * continue the unnamed stream, as a writer of one order did. */
		s->started = off != 0;
		if (off != 0 && o->prefetch) {
			s->stream = pfs_prefetch_order_find(o->prefetch, NULL);
			if (!s->stream)
				s->stream = pfs_prefetch_order_begin(o->prefetch, NULL);
		}
	}
	s->last = ++o->clock;
	for (size_t i = 0; i < len; i++) {
		if (buf[i] != '\n') {
			if (s->line_len + 1 < sizeof(s->line))
				s->line[s->line_len++] = buf[i];
			else
				s->line_too_long = 1;
			continue;
		}
		if (s->line_too_long)
			unknown++;
		int taken = !s->started &&
			    first_line(o, s, s->line, s->line_too_long ? 0 : s->line_len, &unknown);
		if (!taken && !s->line_too_long)
			take_line(o, s->line, s->line_len, batch, &nb, &unknown);
		s->line_len = 0;
		s->line_too_long = 0;
		if (nb == BATCH) {
			if (o->prefetch)
				pfs_prefetch_order_add(o->prefetch, s->stream, batch, nb, unknown);
			nb = unknown = 0;
		}
	}
	if ((nb || unknown) && o->prefetch)
		pfs_prefetch_order_add(o->prefetch, s->stream, batch, nb, unknown);
	pthread_mutex_unlock(&o->lock);
	return 0;
}
