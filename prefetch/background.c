/* background.c - prefetch_int.h's background fill (prefetch.h, source 3):
 * while no order stream is live, the files of the subtree being read (the
 * scope) that were not read yet this epoch, in a random permutation made
 * anew for each scope and epoch. Lock held in every function.
 */
#include <errno.h>
#include <stdlib.h>

#include "prefetch_int.h"
#include "../cache/epoch.h"
#include "../util/clock.h"

static uint64_t next_rand(struct pf_background *bg)
{
	bg->rng ^= bg->rng << 13;
	bg->rng ^= bg->rng >> 7;
	bg->rng ^= bg->rng << 17;
	return bg->rng;
}

/* The permutation: the files below `dir` (iteratively: datasets can be
 * deep), shuffled. */
static int collect_files(struct pfs_prefetch *p, uint32_t dir)
{
	struct pf_background *bg = &p->bg;
	size_t cap = 1024, n = 0, sp = 0, scap = 64;
	uint32_t *files = malloc(cap * sizeof(*files));
	uint32_t *stack = malloc(scap * sizeof(*stack));
	if (!files || !stack)
		goto fail;
	stack[sp++] = dir;
	while (sp) {
		uint32_t d = stack[--sp];
		uint32_t nc = pfs_ftable_nchildren(p->o.ft, d);
		for (uint32_t k = 0; k < nc; k++) {
			uint32_t c = pfs_ftable_child(p->o.ft, d, k);
			int is_dir;
			uint64_t size = pf_file_size(p, c, &is_dir);
			if (is_dir) {
				if (sp == scap) {
					uint32_t *s2 = realloc(stack, (scap *= 2) * sizeof(*s2));
					if (!s2)
						goto fail;
					stack = s2;
				}
				stack[sp++] = c;
			} else if (size > 0) {
				if (n == cap) {
					uint32_t *f2 = realloc(files, (cap *= 2) * sizeof(*f2));
					if (!f2)
						goto fail;
					files = f2;
				}
				files[n++] = c;
			}
		}
	}
	for (size_t i = n; i > 1; i--) { /* Fisher-Yates */
		size_t j = next_rand(bg) % i;
		uint32_t t = files[i - 1];
		files[i - 1] = files[j];
		files[j] = t;
	}
	free(stack);
	free(bg->perm);
	bg->perm = files;
	bg->n = n;
	bg->next = 0;
	return 0;
fail:
	free(files);
	free(stack);
	return -ENOMEM;
}

int pf_bg_next(struct pfs_prefetch *p, uint64_t *obj)
{
	struct pf_background *bg = &p->bg;
	for (;;) {
		if (bg->scope == PF_NO_SCOPE)
			return 0;
		uint64_t epoch = pfs_epoch_current(p->o.epoch);
		/* Several jobs reading one mount make the epoch tracker see
		 * many short "epochs" (each job re-reads what the other read):
		 * rebuild when the last permutation is used up, else at most
		 * once a second. */
		double t = pfs_clock_s();
		if (bg->scope_changed ||
		    (bg->epoch != epoch && (bg->next >= bg->n || t - bg->made >= 1.0))) {
			bg->scope_changed = 0;
			bg->epoch = epoch;
			bg->made = t;
			if (collect_files(p, bg->scope) < 0)
				return 0;
		}
		if (bg->next >= bg->n)
			return 0;
		uint32_t node = bg->perm[bg->next++];
		if (pfs_epoch_is_read(p->o.epoch, node))
			continue; /* read already this epoch */
		p->st.background_files++;
		*obj = node;
		return 1;
	}
}

/* The scope: the top-level directory of the files being read, widened to
 * the whole dataset when reads span several. */
int pf_bg_note(struct pfs_prefetch *p, uint32_t node)
{
	struct pf_background *bg = &p->bg;
	uint32_t top = node;
	for (;;) {
		struct pfs_fnode info;
		if (pfs_ftable_get(p->o.ft, top, &info) < 0)
			goto out;
		if (info.parent == PFS_FTABLE_ROOT || top == PFS_FTABLE_ROOT)
			break;
		top = info.parent;
	}
	int is_dir;
	pf_file_size(p, top, &is_dir);
	if (!is_dir)
		top = PFS_FTABLE_ROOT;
	if (bg->scope == PF_NO_SCOPE || (bg->scope != top && bg->scope != PFS_FTABLE_ROOT)) {
		bg->scope = bg->scope == PF_NO_SCOPE ? top : PFS_FTABLE_ROOT;
		bg->scope_changed = 1;
	}
out:
	return bg->scope_changed || pfs_epoch_current(p->o.epoch) != bg->epoch;
}

void pf_bg_free(struct pfs_prefetch *p)
{
	free(p->bg.perm);
	p->bg.perm = NULL;
	p->bg.n = p->bg.next = 0;
}
