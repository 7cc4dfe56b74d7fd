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

struct pfs_order {
	const struct pfs_ftable *ft;
	struct pfs_prefetch *prefetch;
	struct pfs_views *views;
	pthread_mutex_t lock;
	char line[LINE_MAX_BYTES]; /* the partial last line; guarded by lock */
	size_t line_len;
	int line_too_long;
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

static void begin(struct pfs_order *o)
{
	o->line_len = 0;
	o->line_too_long = 0;
	if (o->prefetch)
		pfs_prefetch_order_begin(o->prefetch);
}

void pfs_order_reset(struct pfs_order *o)
{
	pthread_mutex_lock(&o->lock);
	begin(o);
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

int pfs_order_write(struct pfs_order *o, uint64_t off, const char *buf, size_t len)
{
	uint64_t batch[BATCH];
	size_t nb = 0, unknown = 0;
	pthread_mutex_lock(&o->lock);
	if (off == 0)
		begin(o);
	for (size_t i = 0; i < len; i++) {
		if (buf[i] != '\n') {
			if (o->line_len + 1 < sizeof(o->line))
				o->line[o->line_len++] = buf[i];
			else
				o->line_too_long = 1;
			continue;
		}
		if (o->line_too_long)
			unknown++;
		else
			take_line(o, o->line, o->line_len, batch, &nb, &unknown);
		o->line_len = 0;
		o->line_too_long = 0;
		if (nb == BATCH) {
			if (o->prefetch)
				pfs_prefetch_order_add(o->prefetch, batch, nb, unknown);
			nb = unknown = 0;
		}
	}
	if ((nb || unknown) && o->prefetch)
		pfs_prefetch_order_add(o->prefetch, batch, nb, unknown);
	pthread_mutex_unlock(&o->lock);
	return 0;
}
