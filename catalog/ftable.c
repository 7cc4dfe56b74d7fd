/* ftable.c - see ftable.h.
 *
 * While building, a hash on (parent, name) finds existing nodes so that
 * implicit parents are created once and duplicates are caught. finish()
 * replaces it with one array of child indices where each directory owns a
 * contiguous slice sorted by name: lookups are a binary search, readdir is
 * a walk over the slice, and the hash's memory is given back.
 *
 * A file and a directory of one name (S3 keys "a" and "a/b", an index
 * linking "x" and "x/", a manifest listing both) cannot both be shown, and
 * one such pair must not keep a dataset offline. The directory wins,
 * whichever comes first: it may hold any number of files, the file is one.
 * A file already in the table becomes that directory (its bytes leave
 * total_bytes; it has no children, and its index stays below those added
 * after it, as finish's mtime pass needs); a file that arrives at a
 * directory is dropped. Either way add returns 0, so every listing source
 * (S3, HTTP crawl, manifest, the saved listing) gets the same rule from
 * this one place; the file is named in a warning (the first
 * CLASH_WARN_MAX) and counted, and finish adds the count to
 * listing.skipped, so only the listing actually mounted is counted.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "ftable.h"
#include "listing.h"
#include "../util/log.h"
#include "../util/atomic.h"

#define F_DIR 1u
#define F_EXPLICIT 2u
#define CLASH_WARN_MAX 20

struct node {
	uint64_t size;
	int64_t mtime;
	uint64_t fp;         /* listing fingerprint: size, mtime, listing ETag */
	uint32_t parent;
	uint32_t name_off;   /* into names */
	uint32_t child_off;  /* directories: first index into children */
	uint32_t nchild : 31; /* directories: number of children */
	uint32_t is_dir : 1;
};

struct pfs_ftable {
	struct node *nodes;
	uint32_t n, cap;
	char *names;
	size_t names_len, names_cap;
	uint32_t *children;  /* after finish */
	char **etags;        /* per node, set once (atomic pointer CAS) */
	uint64_t total_bytes;
	/* build-time only */
	uint32_t *hash;      /* node index + 1; 0 = empty */
	size_t hash_cap;
	uint8_t *explicit_dir;
	uint32_t clashes;    /* files left out for a directory of their name */
};

static uint64_t hash_key(uint32_t parent, const char *name, size_t len)
{
	uint64_t h = 1469598103934665603ull ^ parent;
	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)name[i]) * 1099511628211ull;
	return h ^ (h >> 29);
}

struct pfs_ftable *pfs_ftable_create(void)
{
	struct pfs_ftable *ft = calloc(1, sizeof(*ft));
	if (!ft)
		return NULL;
	ft->cap = 1024;
	ft->nodes = malloc(ft->cap * sizeof(*ft->nodes));
	ft->explicit_dir = calloc(ft->cap, 1);
	ft->names_cap = 16384;
	ft->names = malloc(ft->names_cap);
	ft->hash_cap = 4096;
	ft->hash = calloc(ft->hash_cap, sizeof(*ft->hash));
	if (!ft->nodes || !ft->names || !ft->hash || !ft->explicit_dir) {
		pfs_ftable_destroy(ft);
		return NULL;
	}
	ft->names[0] = '\0';
	ft->names_len = 1;
	ft->nodes[0] = (struct node){.is_dir = 1, .mtime = INT64_MIN};
	ft->explicit_dir[0] = 0; /* root mtime: its newest child's */
	ft->n = 1;
	return ft;
}

void pfs_ftable_destroy(struct pfs_ftable *ft)
{
	if (!ft)
		return;
	if (ft->etags)
		for (uint32_t i = 0; i < ft->n; i++)
			free(ft->etags[i]);
	free(ft->etags);
	free(ft->nodes);
	free(ft->names);
	free(ft->children);
	free(ft->hash);
	free(ft->explicit_dir);
	free(ft);
}

static int hash_grow(struct pfs_ftable *ft)
{
	size_t cap = ft->hash_cap * 2;
	uint32_t *h = calloc(cap, sizeof(*h));
	if (!h)
		return -ENOMEM;
	for (uint32_t i = 1; i < ft->n; i++) {
		const char *nm = ft->names + ft->nodes[i].name_off;
		size_t pos = hash_key(ft->nodes[i].parent, nm, strlen(nm)) & (cap - 1);
		while (h[pos])
			pos = (pos + 1) & (cap - 1);
		h[pos] = i + 1;
	}
	free(ft->hash);
	ft->hash = h;
	ft->hash_cap = cap;
	return 0;
}

/* Finds (parent, name[0..len)); returns the node or UINT32_MAX, and the
 * slot where it would go. */
static uint32_t hash_find(const struct pfs_ftable *ft, uint32_t parent, const char *name,
			  size_t len, size_t *slot)
{
	size_t pos = hash_key(parent, name, len) & (ft->hash_cap - 1);
	while (ft->hash[pos]) {
		uint32_t i = ft->hash[pos] - 1;
		const char *nm = ft->names + ft->nodes[i].name_off;
		if (ft->nodes[i].parent == parent && !strncmp(nm, name, len) && nm[len] == '\0') {
			*slot = pos;
			return i;
		}
		pos = (pos + 1) & (ft->hash_cap - 1);
	}
	*slot = pos;
	return UINT32_MAX;
}

uint64_t pfs_ftable_fingerprint(uint64_t size, int64_t mtime, const char *etag)
{
	char buf[16 + PFS_ETAG_MAX];
	size_t el = etag ? strnlen(etag, PFS_ETAG_MAX - 1) : 0;
	memcpy(buf, &size, 8);
	memcpy(buf + 8, &mtime, 8);
	if (el)
		memcpy(buf + 16, etag, el);
	return XXH3_64bits(buf, 16 + el);
}

/* A file left out for a directory of the same name (see the top of this
 * file): path[0..len) names it. */
static void clash_skip(struct pfs_ftable *ft, const char *path, size_t len)
{
	if (++ft->clashes > CLASH_WARN_MAX)
		return;
	pfs_warn("listing: file '%.*s' left out: a directory of the same name "
		 "is listed (the directory wins)%s", (int)(len > 300 ? 300 : len),
		 path, ft->clashes == CLASH_WARN_MAX ? "; further ones not shown" : "");
}

/* Node i, a file, becomes a directory: implicit (its mtime its newest
 * child's, set by finish) unless `explicit`, then with `mtime`. */
static void file_to_dir(struct pfs_ftable *ft, uint32_t i, int explicit, int64_t mtime)
{
	struct node *n = &ft->nodes[i];

	ft->total_bytes -= n->size;
	n->size = 0;
	n->fp = 0;
	n->is_dir = 1;
	n->mtime = explicit ? mtime : INT64_MIN;
	ft->explicit_dir[i] = explicit ? 1 : 0;
}

static int new_node(struct pfs_ftable *ft, uint32_t parent, const char *name, size_t len,
		    int is_dir, uint64_t size, int64_t mtime, uint32_t *out)
{
	if (ft->n >= PFS_FTABLE_MAX_NODES)
		return -EFBIG;
	if ((ft->n + 1) * 2 > ft->hash_cap && hash_grow(ft) < 0)
		return -ENOMEM;
	if (ft->n == ft->cap) {
		uint32_t cap = ft->cap * 2;
		struct node *nn = realloc(ft->nodes, cap * sizeof(*nn));
		if (!nn)
			return -ENOMEM;
		ft->nodes = nn;
		uint8_t *ed = realloc(ft->explicit_dir, cap);
		if (!ed)
			return -ENOMEM;
		memset(ed + ft->cap, 0, cap - ft->cap);
		ft->explicit_dir = ed;
		ft->cap = cap;
	}
	if (ft->names_len + len + 1 > UINT32_MAX)
		return -EFBIG;
	if (ft->names_len + len + 1 > ft->names_cap) {
		size_t cap = ft->names_cap * 2;
		while (cap < ft->names_len + len + 1)
			cap *= 2;
		char *nm = realloc(ft->names, cap);
		if (!nm)
			return -ENOMEM;
		ft->names = nm;
		ft->names_cap = cap;
	}
	uint32_t off = (uint32_t)ft->names_len;
	memcpy(ft->names + off, name, len);
	ft->names[off + len] = '\0';
	ft->names_len += len + 1;
	size_t slot;
	hash_find(ft, parent, name, len, &slot);
	uint32_t i = ft->n++;
	ft->nodes[i] = (struct node){.size = is_dir ? 0 : size, .mtime = mtime,
				     .parent = parent, .name_off = off, .is_dir = is_dir ? 1 : 0};
	ft->hash[slot] = i + 1;
	ft->nodes[parent].nchild++;
	if (!is_dir)
		ft->total_bytes += size;
	*out = i;
	return 0;
}

int pfs_ftable_add(void *ctx, const char *path, int is_dir, uint64_t size,
		   int64_t mtime, const char *etag)
{
	struct pfs_ftable *ft = ctx;
	/* The listing's ETag is never sent as a validator; it only takes part
	 * in the fingerprint that says whether a persistent cache entry still
	 * belongs to this object. */
	if (!ft->hash || !pfs_path_valid(path))
		return -EINVAL;
	/* Every listing (S3, HTTP crawl, directory, manifest) passes here: a
	 * size no origin can hold is refused before the mount, naming the
	 * file, instead of mounting and failing each stat with EIO. */
	if (!is_dir && size > PFS_FILE_SIZE_MAX) {
		pfs_err("listing: '%.300s': size %" PRIu64 " too large (max 2^62)",
			path, size);
		return -EFBIG;
	}
	uint32_t cur = PFS_FTABLE_ROOT;
	const char *c = path;
	for (;;) {
		const char *slash = strchr(c, '/');
		size_t len = slash ? (size_t)(slash - c) : strlen(c);
		size_t slot;
		uint32_t i = hash_find(ft, cur, c, len, &slot);
		int last = slash == NULL;
		if (!last) {
			if (i == UINT32_MAX) {
				int rc = new_node(ft, cur, c, len, 1, 0, INT64_MIN, &i);
				if (rc < 0)
					return rc;
			} else if (!ft->nodes[i].is_dir) {
				/* A file listed earlier: the directory wins. */
				clash_skip(ft, path, (size_t)(c - path) + len);
				file_to_dir(ft, i, 0, 0);
			}
			cur = i;
			c = slash + 1;
			continue;
		}
		if (i != UINT32_MAX) {
			int was_dir = ft->nodes[i].is_dir;
			/* A directory first seen as a parent may be declared later. */
			if (is_dir && was_dir && !ft->explicit_dir[i]) {
				ft->explicit_dir[i] = 1;
				ft->nodes[i].mtime = mtime;
				return 0;
			}
			if (is_dir == was_dir)
				return -EEXIST;
			/* A file and a directory of this name: the directory wins. */
			clash_skip(ft, path, strlen(path));
			if (is_dir)
				file_to_dir(ft, i, 1, mtime);
			return 0;
		}
		int rc = new_node(ft, cur, c, len, is_dir, size, mtime, &i);
		if (rc == 0 && is_dir)
			ft->explicit_dir[i] = 1;
		else if (rc == 0)
			ft->nodes[i].fp = pfs_ftable_fingerprint(size, mtime, etag);
		return rc;
	}
}

static const struct pfs_ftable *sort_ft; /* qsort has no context argument */
static int cmp_child(const void *a, const void *b)
{
	const struct node *na = &sort_ft->nodes[*(const uint32_t *)a];
	const struct node *nb = &sort_ft->nodes[*(const uint32_t *)b];
	return strcmp(sort_ft->names + na->name_off, sort_ft->names + nb->name_off);
}

int pfs_ftable_finish(struct pfs_ftable *ft)
{
	ft->children = malloc((ft->n ? ft->n : 1) * sizeof(*ft->children));
	ft->etags = calloc(ft->n, sizeof(*ft->etags));
	if (!ft->children || !ft->etags)
		return -ENOMEM;
	uint32_t off = 0;
	for (uint32_t i = 0; i < ft->n; i++) {
		if (ft->nodes[i].is_dir) {
			ft->nodes[i].child_off = off;
			off += ft->nodes[i].nchild;
			ft->nodes[i].nchild = 0;
		}
	}
	for (uint32_t i = 1; i < ft->n; i++) {
		struct node *p = &ft->nodes[ft->nodes[i].parent];
		ft->children[p->child_off + p->nchild++] = i;
	}
	static pthread_mutex_t sort_lock = PTHREAD_MUTEX_INITIALIZER;
	pthread_mutex_lock(&sort_lock);
	sort_ft = ft;
	for (uint32_t i = 0; i < ft->n; i++)
		if (ft->nodes[i].is_dir && ft->nodes[i].nchild > 1)
			qsort(ft->children + ft->nodes[i].child_off, ft->nodes[i].nchild,
			      sizeof(uint32_t), cmp_child);
	pthread_mutex_unlock(&sort_lock);
	/* Implicit directories take their newest child's mtime. Children have
	 * higher indices than parents, so one backward pass suffices. */
	for (uint32_t i = ft->n; i-- > 1;) {
		struct node *p = &ft->nodes[ft->nodes[i].parent];
		if (!ft->explicit_dir[ft->nodes[i].parent] && ft->nodes[i].mtime > p->mtime)
			p->mtime = ft->nodes[i].mtime;
	}
	for (uint32_t i = 0; i < ft->n; i++)
		if (ft->nodes[i].mtime == INT64_MIN)
			ft->nodes[i].mtime = 0;
	free(ft->hash);
	ft->hash = NULL;
	free(ft->explicit_dir);
	ft->explicit_dir = NULL;
	/* Give back the slack of the growth arrays. */
	struct node *nn = realloc(ft->nodes, ft->n * sizeof(*nn));
	if (nn)
		ft->nodes = nn;
	char *nm = realloc(ft->names, ft->names_len);
	if (nm)
		ft->names = nm;
	ft->cap = ft->n;
	ft->names_cap = ft->names_len;
	if (ft->clashes) {
		pfs_warn("listing: %" PRIu32 " file%s left out for a directory of the "
			 "same name (see listing.skipped)", ft->clashes,
			 ft->clashes == 1 ? "" : "s");
		pfs_listing_note_skipped(ft->clashes);
	}
	return 0;
}

uint32_t pfs_ftable_count(const struct pfs_ftable *ft)
{
	return ft->n;
}

uint64_t pfs_ftable_total_bytes(const struct pfs_ftable *ft)
{
	return ft->total_bytes;
}

size_t pfs_ftable_memory(const struct pfs_ftable *ft)
{
	return sizeof(*ft) + (size_t)ft->cap * sizeof(struct node) + ft->names_cap +
	       (size_t)ft->n * (sizeof(uint32_t) + sizeof(char *));
}

int pfs_ftable_lookup(const struct pfs_ftable *ft, uint32_t dir, const char *name,
		      uint32_t *out)
{
	if (dir >= ft->n)
		return -ENOENT;
	const struct node *d = &ft->nodes[dir];
	if (!d->is_dir)
		return -ENOTDIR;
	const uint32_t *kids = ft->children + d->child_off;
	size_t lo = 0, hi = d->nchild;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = strcmp(name, ft->names + ft->nodes[kids[mid]].name_off);
		if (c == 0) {
			*out = kids[mid];
			return 0;
		}
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return -ENOENT;
}

int pfs_ftable_get(const struct pfs_ftable *ft, uint32_t node, struct pfs_fnode *info)
{
	if (node >= ft->n)
		return -ENOENT;
	const struct node *n = &ft->nodes[node];
	*info = (struct pfs_fnode){.size = n->size, .mtime = n->mtime, .fp = n->fp,
				   .parent = n->parent, .is_dir = n->is_dir};
	return 0;
}

const char *pfs_ftable_name(const struct pfs_ftable *ft, uint32_t node)
{
	return node < ft->n ? ft->names + ft->nodes[node].name_off : "";
}

uint32_t pfs_ftable_nchildren(const struct pfs_ftable *ft, uint32_t dir)
{
	return dir < ft->n && ft->nodes[dir].is_dir ? ft->nodes[dir].nchild : 0;
}

uint32_t pfs_ftable_child(const struct pfs_ftable *ft, uint32_t dir, uint32_t k)
{
	return ft->children[ft->nodes[dir].child_off + k];
}

int pfs_ftable_path(const struct pfs_ftable *ft, uint32_t node, char *buf, size_t cap)
{
	if (node >= ft->n || cap == 0)
		return -ENOENT;
	/* Build right to left, then move into place. */
	size_t pos = cap - 1;
	buf[pos] = '\0';
	while (node != PFS_FTABLE_ROOT) {
		const char *nm = ft->names + ft->nodes[node].name_off;
		size_t len = strlen(nm);
		size_t need = len + (pos != cap - 1 ? 1 : 0);
		if (need > pos)
			return -ENAMETOOLONG;
		if (pos != cap - 1)
			buf[--pos] = '/';
		pos -= len;
		memcpy(buf + pos, nm, len);
		node = ft->nodes[node].parent;
	}
	memmove(buf, buf + pos, cap - pos);
	return 0;
}

void pfs_ftable_etag(const struct pfs_ftable *ft, uint32_t node, char *out)
{
	const char *e = node < ft->n ? pfs_load_acq(&ft->etags[node]) : NULL;
	if (e)
		memcpy(out, e, strlen(e) + 1);
	else
		out[0] = '\0';
}

int pfs_ftable_set_etag(struct pfs_ftable *ft, uint32_t node, const char *etag)
{
	if (node >= ft->n || !etag[0])
		return -EINVAL;
	char *cur = pfs_load_acq(&ft->etags[node]);
	if (!cur) {
		char *copy = strdup(etag);
		if (!copy)
			return -ENOMEM;
		if (__atomic_compare_exchange_n(&ft->etags[node], &cur, copy, 0,
						__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			return 0;
		free(copy); /* lost the race: cur is the winner */
	}
	return strcmp(cur, etag) ? -ESTALE : 0;
}

int pfs_ftable_resolve(const struct pfs_ftable *ft, const char *path, uint32_t *out)
{
	uint32_t cur = PFS_FTABLE_ROOT;
	char name[256];
	while (*path) {
		size_t n = strcspn(path, "/");
		if (n >= sizeof(name))
			return -ENOENT;
		if (n) {
			memcpy(name, path, n);
			name[n] = '\0';
			int rc = pfs_ftable_lookup(ft, cur, name, &cur);
			if (rc < 0)
				return rc;
		}
		path += n + (path[n] == '/');
	}
	*out = cur;
	return 0;
}
