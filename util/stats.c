/* stats.c - see stats.h. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stats.h"
#include "atomic.h"
#include "log.h"

int pfs_stat_list_add(struct pfs_stat_list *l, const char *name, double value,
		      int is_gauge)
{
	static int logged; /* atomic */
	if (l->n >= PFS_STAT_LIST_MAX) {
		if (!__atomic_exchange_n(&logged, 1, __ATOMIC_RELAXED))
			pfs_err("statistics: more than %d values, %s and later ones dropped "
				"(raise PFS_STAT_LIST_MAX)", PFS_STAT_LIST_MAX, name);
		return -ENOSPC;
	}
	l->kv[l->n++] = (struct pfs_stat_kv){name, NULL, value, is_gauge};
	return 0;
}

int pfs_stat_list_add_labeled(struct pfs_stat_list *l, const char *name, const char *label,
			      double value, int is_gauge)
{
	size_t n = strlen(label);
	if (n == 0 || n >= PFS_STAT_LABEL_MAX || strspn(label, "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
		"abcdefghijklmnopqrstuvwxyz0123456789._:-") != n)
		return -EINVAL;
	/* Consecutive values of one instance share its copy. */
	const char *copy = NULL;
	if (l->n && l->kv[l->n - 1].label && !strcmp(l->kv[l->n - 1].label, label))
		copy = l->kv[l->n - 1].label;
	if (!copy) {
		if (l->labels_used + n + 1 > sizeof(l->labels)) {
			pfs_err("statistics: labels full, %s of %s dropped "
				"(raise PFS_STAT_LABELS_BYTES)", name, label);
			return -ENOSPC;
		}
		copy = memcpy(l->labels + l->labels_used, label, n + 1);
		l->labels_used += n + 1;
	}
	int rc = pfs_stat_list_add(l, name, value, is_gauge);
	if (rc == 0)
		l->kv[l->n - 1].label = copy;
	return rc;
}

void pfs_stat_list_add_rows(struct pfs_stat_list *l, const struct pfs_stat_row *rows,
			    size_t nrows, const void *snapshot)
{
	for (size_t i = 0; i < nrows; i++) {
		uint64_t v;
		memcpy(&v, (const char *)snapshot + rows[i].offset, sizeof(v));
		pfs_stat_list_add(l, rows[i].name, (double)v, rows[i].is_gauge);
	}
}

void pfs_stat_list_add_live(struct pfs_stat_list *l, const struct pfs_stat_row *rows,
			    size_t nrows, const void *live)
{
	for (size_t i = 0; i < nrows; i++) {
		const uint64_t *v = (const uint64_t *)((const char *)live + rows[i].offset);
		pfs_stat_list_add(l, rows[i].name, (double)pfs_load(v), rows[i].is_gauge);
	}
}

/* Appends to buf while keeping track of the would-be length. */
#define APPEND(...)                                                          \
	do {                                                                 \
		int n_ = snprintf(buf + (len < cap ? len : cap),             \
				  len < cap ? cap - len : 0, __VA_ARGS__);   \
		if (n_ > 0)                                                  \
			len += (size_t)n_;                                   \
	} while (0)

static int cmp_label(const char *a, const char *b)
{
	return a && b ? strcmp(a, b) : (a != NULL) - (b != NULL);
}

/* Prometheus: a family's samples together (by name, then instance). */
static int cmp_by_name(const void *pa, const void *pb)
{
	const struct pfs_stat_kv *a = pa, *b = pb;
	int c = strcmp(a->name, b->name);
	return c ? c : cmp_label(a->label, b->label);
}

/* JSON: an instance's fields together (group, then instance, then name). */
static int cmp_by_instance(const void *pa, const void *pb)
{
	const struct pfs_stat_kv *a = pa, *b = pb;
	size_t ga = strcspn(a->name, "."), gb = strcspn(b->name, ".");
	int c = strncmp(a->name, b->name, ga < gb ? ga : gb);
	if (!c && ga != gb)
		c = ga < gb ? -1 : 1;
	if (!c)
		c = cmp_label(a->label, b->label);
	return c ? c : strcmp(a->name, b->name);
}

/* The labels keep pointing into l's storage, which outlives out. */
static void sorted(const struct pfs_stat_list *l, struct pfs_stat_list *out,
		   int (*cmp)(const void *, const void *))
{
	out->n = l->n;
	memcpy(out->kv, l->kv, l->n * sizeof(l->kv[0]));
	qsort(out->kv, out->n, sizeof(out->kv[0]), cmp);
}

static size_t finish(char *buf, size_t cap, size_t len)
{
	if (cap)
		buf[len < cap ? len : cap - 1] = '\0';
	return len < cap ? len : cap - 1;
}

/* Number formatting: integers print without a fraction. */
static void fmt_num(double v, char *out, size_t cap)
{
	if (v == (double)(long long)v)
		snprintf(out, cap, "%lld", (long long)v);
	else
		snprintf(out, cap, "%.6g", v);
}

size_t pfs_stats_render_json(const struct pfs_stat_list *l, char *buf, size_t cap)
{
	static struct pfs_stat_list s; /* sorted copy: too big for a stack */
	static pthread_mutex_t s_lock = PTHREAD_MUTEX_INITIALIZER;
	pthread_mutex_lock(&s_lock);
	sorted(l, &s, cmp_by_instance);
	size_t len = 0;
	char open[64] = "";      /* the group now open, "" for none */
	const char *inst = NULL; /* the instance open inside it, or NULL */
	APPEND("{");
	for (size_t i = 0; i < s.n; i++) {
		const char *name = s.kv[i].name, *label = s.kv[i].label;
		const char *dot = strchr(name, '.');
		size_t gl = dot ? (size_t)(dot - name) : 0;
		int same = gl && strlen(open) == gl && !strncmp(open, name, gl);
		if (inst && (!same || cmp_label(inst, label))) {
			APPEND("}");
			inst = NULL;
		}
		if (open[0] && !same) {
			APPEND("}");
			open[0] = '\0';
		}
		APPEND("%s\n  ", i ? "," : "");
		if (gl && !same) {
			snprintf(open, sizeof(open), "%.*s", (int)gl, name);
			APPEND("\"%s\": {", open);
		}
		if (gl && label && !inst) {
			inst = label;
			APPEND("\"%s\": {", label);
		}
		char num[64];
		fmt_num(s.kv[i].value, num, sizeof(num));
		APPEND("\"%s\": %s", gl ? dot + 1 : name, num);
	}
	if (inst)
		APPEND("}");
	if (open[0])
		APPEND("}");
	APPEND("\n}\n");
	pthread_mutex_unlock(&s_lock);
	return finish(buf, cap, len);
}

size_t pfs_stats_render_prometheus(const struct pfs_stat_list *l, char *buf, size_t cap)
{
	static struct pfs_stat_list s; /* sorted copy: too big for a stack */
	static pthread_mutex_t s_lock = PTHREAD_MUTEX_INITIALIZER;
	pthread_mutex_lock(&s_lock);
	sorted(l, &s, cmp_by_name);
	size_t len = 0;
	for (size_t i = 0; i < s.n; i++) {
		char metric[96];
		snprintf(metric, sizeof(metric), "prestofs_%s%s", s.kv[i].name,
			 s.kv[i].is_gauge ? "" : "_total");
		for (char *c = metric; *c; c++)
			if (*c == '.')
				*c = '_';
		char num[64];
		fmt_num(s.kv[i].value, num, sizeof(num));
		/* One TYPE line per family: its samples are adjacent. */
		if (!i || strcmp(s.kv[i - 1].name, s.kv[i].name))
			APPEND("# TYPE %s %s\n", metric, s.kv[i].is_gauge ? "gauge" : "counter");
		if (s.kv[i].label)
			APPEND("%s{%.*s=\"%s\"} %s\n", metric, (int)strcspn(s.kv[i].name, "."),
			       s.kv[i].name, s.kv[i].label, num);
		else
			APPEND("%s %s\n", metric, num);
	}
	pthread_mutex_unlock(&s_lock);
	return finish(buf, cap, len);
}
