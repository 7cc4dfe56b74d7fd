/* readahead.c - prefetch_int.h's readahead source: blocks queued ahead of
 * each sequential reader of a large file (prefetch.h, source 1). Lock
 * held in every function.
 */
#include "prefetch_int.h"

int pf_ra_next(struct pfs_prefetch *p, uint64_t *obj, uint64_t *blk, size_t *len)
{
	struct pf_readahead *ra = &p->ra;
	int is_dir;
	while (ra->n) {
		struct pf_ra_item it = ra->q[ra->head];
		ra->head = (ra->head + 1) % PF_RA_QUEUE;
		ra->n--;
		uint64_t size = pf_file_size(p, it.node, &is_dir);
		if (is_dir || it.blk * p->o.block_size >= size)
			continue;
		*obj = it.node;
		*blk = it.blk;
		*len = pf_block_len(p, size, it.blk);
		p->st.readahead_blocks++;
		return 1;
	}
	return 0;
}

int pf_ra_note(struct pfs_prefetch *p, uint32_t node, uint64_t size, uint64_t off, size_t len)
{
	struct pf_readahead *ra = &p->ra;
	struct pf_reader *r = NULL, *victim = &ra->readers[0];
	for (int i = 0; i < PF_RA_READERS; i++) {
		struct pf_reader *c = &ra->readers[i];
		if (c->window && c->node == node && c->next_off == off) {
			r = c;
			break;
		}
		if (c->last_use < victim->last_use)
			victim = c;
	}
	uint64_t bs = p->o.block_size;
	uint64_t cur = (off + len - 1) / bs;
	if (!r) { /* a new reader: no readahead until it proves sequential */
		*victim = (struct pf_reader){node, off + len, cur + 1, 1, ++ra->clock};
		return 0;
	}
	r->next_off = off + len;
	r->last_use = ++ra->clock;
	if (r->queued_to > cur + 1 + r->window / 2)
		return 0; /* still well ahead */
	if (r->window < PFS_PREFETCH_RA_MAX)
		r->window *= 2;
	uint64_t nblk = (size + bs - 1) / bs;
	uint64_t from = r->queued_to > cur + 1 ? r->queued_to : cur + 1;
	uint64_t to = cur + 1 + r->window;
	for (uint64_t b = from; b < to && b < nblk && ra->n < PF_RA_QUEUE; b++) {
		ra->q[(ra->head + ra->n++) % PF_RA_QUEUE] = (struct pf_ra_item){node, b};
		r->queued_to = b + 1;
	}
	return 1;
}
