/* transform/spec.c — the view SPEC grammar, its canonical form, and the geometry.
 *
 * The geometry mirrors torchvision 0.14 exactly (transforms/functional.py):
 *   _compute_resized_output_size: short, long = sides; new_long = int(s * long / short)
 *     (Python's true division of two ints is correctly rounded to a double, and so is
 *     the C division of two doubles that hold the exact integers; int() truncates);
 *   center_crop: pads with zeros (left/top (c - s) // 2) when the crop exceeds the
 *     image, then offset = int(round((s - c) / 2.0)); Python's round() is half-to-even.
 */
#include "view.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <turbojpeg.h>

#define GRAMMAR "grammar: decode | resize=N | resize=WxH | crop=N | crop=WxH | fast | " \
	"fmt=ppm|npy|jpeg | q=1..100, joined by commas in any order, N/W/H in 1..65500"

static int fail(char *err, size_t errcap, const char *spec, const char *what, const char *item,
		size_t item_len)
{
	if (err && errcap)
		snprintf(err, errcap, "bad view spec '%.*s': %s '%.*s'; %s",
				PFS_VIEW_SPEC_MAX, spec, what, (int)item_len, item, GRAMMAR);
	return -EINVAL;
}

/* Decimal in [lo, hi] from s[0..len); leading zeros allowed, no sign, no spaces. */
static int parse_uint(const char *s, size_t len, uint32_t lo, uint32_t hi, uint32_t *v)
{
	uint64_t x = 0;

	if (len == 0 || len > 10)
		return -1;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		x = x * 10 + (uint64_t)(s[i] - '0');
	}
	if (x < lo || x > hi)
		return -1;
	*v = (uint32_t)x;
	return 0;
}

/* "N" or "WxH" -> w, h; square reports whether it was the one-number form. */
static int parse_size(const char *s, size_t len, uint32_t *w, uint32_t *h, int *square)
{
	const char *x = memchr(s, 'x', len);

	if (!x) {
		if (parse_uint(s, len, 1, PFS_VIEW_MAX_DIM, w))
			return -1;
		*h = *w;
		*square = 1;
		return 0;
	}
	if (parse_uint(s, (size_t)(x - s), 1, PFS_VIEW_MAX_DIM, w) ||
			parse_uint(x + 1, len - (size_t)(x - s) - 1, 1, PFS_VIEW_MAX_DIM, h))
		return -1;
	*square = 0;
	return 0;
}

static int key_is(const char *item, size_t len, const char *key, const char **val, size_t *vlen)
{
	size_t k = strlen(key);

	if (len < k || memcmp(item, key, k) != 0)
		return 0;
	if (key[k - 1] == '=') {
		*val = item + k;
		*vlen = len - k;
		return 1;
	}
	return len == k;
}

int pfs_view_parse(const char *spec, struct pfs_view_spec *out, char *canon, size_t canon_cap,
		char *err, size_t errcap)
{
	struct pfs_view_spec s = { .quality = PFS_VIEW_DEFAULT_QUALITY };
	int seen_resize = 0, seen_crop = 0, seen_fast = 0, seen_fmt = 0, seen_q = 0;
	int seen_decode = 0;
	size_t n;
	const char *p;

	if (err && errcap)
		err[0] = '\0';
	if (!spec)
		return fail(err, errcap, "", "no spec", "", 0);
	n = strnlen(spec, PFS_VIEW_SPEC_MAX + 1);
	if (n == 0)
		return fail(err, errcap, spec, "empty spec", "", 0);
	if (n > PFS_VIEW_SPEC_MAX)
		return fail(err, errcap, spec, "spec too long, starting", spec, 16);

	p = spec;
	for (;;) {
		const char *comma = strchr(p, ',');
		size_t len = comma ? (size_t)(comma - p) : strlen(p);
		const char *v = NULL;
		size_t vlen = 0;
		int square;
		uint32_t q;

		if (len == 0)
			return fail(err, errcap, spec, "empty item", p, 0);
		if (key_is(p, len, "decode", &v, &vlen)) {
			if (seen_decode++)
				return fail(err, errcap, spec, "repeated item", p, len);
		} else if (key_is(p, len, "fast", &v, &vlen)) {
			if (seen_fast++)
				return fail(err, errcap, spec, "repeated item", p, len);
			s.fast = 1;
		} else if (key_is(p, len, "resize=", &v, &vlen)) {
			if (seen_resize++)
				return fail(err, errcap, spec, "repeated key", p, len);
			if (parse_size(v, vlen, &s.resize_w, &s.resize_h, &square))
				return fail(err, errcap, spec, "bad size (N or WxH, 1..65500) in", p, len);
			s.resize = square ? PFS_VIEW_RESIZE_SHORT : PFS_VIEW_RESIZE_EXACT;
		} else if (key_is(p, len, "crop=", &v, &vlen)) {
			if (seen_crop++)
				return fail(err, errcap, spec, "repeated key", p, len);
			if (parse_size(v, vlen, &s.crop_w, &s.crop_h, &square))
				return fail(err, errcap, spec, "bad size (N or WxH, 1..65500) in", p, len);
		} else if (key_is(p, len, "fmt=", &v, &vlen)) {
			if (seen_fmt++)
				return fail(err, errcap, spec, "repeated key", p, len);
			if (vlen == 3 && memcmp(v, "ppm", 3) == 0)
				s.fmt = PFS_VIEW_FMT_PPM;
			else if (vlen == 3 && memcmp(v, "npy", 3) == 0)
				s.fmt = PFS_VIEW_FMT_NPY;
			else if (vlen == 4 && memcmp(v, "jpeg", 4) == 0)
				s.fmt = PFS_VIEW_FMT_JPEG;
			else
				return fail(err, errcap, spec, "unknown format (ppm, npy or jpeg) in",
						p, len);
		} else if (key_is(p, len, "q=", &v, &vlen)) {
			if (seen_q++)
				return fail(err, errcap, spec, "repeated key", p, len);
			if (parse_uint(v, vlen, 1, 100, &q))
				return fail(err, errcap, spec, "bad quality (1..100) in", p, len);
			s.quality = (int)q;
		} else {
			return fail(err, errcap, spec, "unknown item", p, len);
		}
		if (!comma)
			break;
		p = comma + 1;
	}
	if (seen_q && s.fmt != PFS_VIEW_FMT_JPEG)
		return fail(err, errcap, spec, "q= needs fmt=jpeg, found", "q=", 2);
	if (s.resize == PFS_VIEW_RESIZE_NONE)
		s.fast = 0;     /* nothing to scale: same meaning without it */

	if (canon) {
		int rc = pfs_view_canon(&s, canon, canon_cap);
		if (rc)
			return rc;
	}
	*out = s;
	return 0;
}

int pfs_view_canon(const struct pfs_view_spec *s, char *canon, size_t canon_cap)
{
	char buf[PFS_VIEW_CANON_MAX * 2];
	size_t n = 0;

#define ADD(...) n += (size_t)snprintf(buf + n, sizeof(buf) - n, __VA_ARGS__)
	if (s->resize == PFS_VIEW_RESIZE_SHORT)
		ADD("resize=%u", s->resize_w);
	else if (s->resize == PFS_VIEW_RESIZE_EXACT)
		ADD("resize=%ux%u", s->resize_w, s->resize_h);
	if (s->fast && s->resize != PFS_VIEW_RESIZE_NONE)
		ADD("%sfast", n ? "," : "");
	if (s->crop_w && s->crop_w == s->crop_h)
		ADD("%scrop=%u", n ? "," : "", s->crop_w);
	else if (s->crop_w)
		ADD("%scrop=%ux%u", n ? "," : "", s->crop_w, s->crop_h);
	if (s->fmt == PFS_VIEW_FMT_NPY)
		ADD("%sfmt=npy", n ? "," : "");
	else if (s->fmt == PFS_VIEW_FMT_JPEG)
		ADD("%sfmt=jpeg", n ? "," : "");
	if (s->fmt == PFS_VIEW_FMT_JPEG && s->quality != PFS_VIEW_DEFAULT_QUALITY)
		ADD(",q=%d", s->quality);
	if (n == 0)
		ADD("decode");
#undef ADD
	if (n + 1 > canon_cap)
		return -ERANGE;
	memcpy(canon, buf, n + 1);
	return 0;
}

int pfs_view_is_jpeg_name(const char *name)
{
	size_t n = name ? strlen(name) : 0;

	if (n > 4 && strcasecmp(name + n - 4, ".jpg") == 0)
		return 1;
	if (n > 5 && strcasecmp(name + n - 5, ".jpeg") == 0)
		return 1;
	return 0;
}

/* Python round(x / 2.0) for x >= 0: half to even. */
static uint32_t half_round_even(uint32_t d)
{
	uint32_t k = d / 2;

	if (d % 2 == 0)
		return k;
	return (k % 2 == 0) ? k : k + 1;
}

/* One axis of CenterCrop: image size s, crop c. */
static void crop_axis(uint32_t s, uint32_t c, uint32_t *src_off, uint32_t *dst_off, uint32_t *n)
{
	if (c > s) {
		*dst_off = (c - s) / 2;   /* torchvision pads (c - s) // 2 before, then offset 0 */
		*src_off = 0;
		*n = s;
	} else {
		*dst_off = 0;
		*src_off = half_round_even(s - c);
		*n = c;
	}
}

/* Smallest DCT scale M/8 (M <= 8) whose output still covers tw x th. */
static void fast_scale(uint32_t w, uint32_t h, uint32_t tw, uint32_t th, uint32_t *dw, uint32_t *dh)
{
	int nsf = 0;
	tjscalingfactor *sf = tjGetScalingFactors(&nsf);

	*dw = w;
	*dh = h;
	if (!sf)
		return;
	for (int i = 0; i < nsf; i++) {
		uint64_t sw, sh;

		if (sf[i].num <= 0 || sf[i].denom <= 0 || sf[i].num > sf[i].denom)
			continue;   /* only downscaling */
		sw = ((uint64_t)w * (uint64_t)sf[i].num + (uint64_t)sf[i].denom - 1) / (uint64_t)sf[i].denom;
		sh = ((uint64_t)h * (uint64_t)sf[i].num + (uint64_t)sf[i].denom - 1) / (uint64_t)sf[i].denom;
		if (sw >= tw && sh >= th && sw * sh < (uint64_t)*dw * *dh) {
			*dw = (uint32_t)sw;
			*dh = (uint32_t)sh;
		}
	}
}

static uint64_t max64(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

int pfs_view_geometry(const struct pfs_view_spec *s, uint32_t w, uint32_t h,
		struct pfs_view_geom *g)
{
	uint64_t rw = w, rh = h;

	memset(g, 0, sizeof(*g));
	if (w == 0 || h == 0)
		return -EINVAL;
	if (w > PFS_VIEW_MAX_DIM || h > PFS_VIEW_MAX_DIM)
		return -E2BIG;
	g->src_w = w;
	g->src_h = h;

	if (s->resize == PFS_VIEW_RESIZE_SHORT) {
		uint64_t sh = w <= h ? w : h, lo = w <= h ? h : w;
		uint64_t n = s->resize_w;
		uint64_t nl = (uint64_t)((double)(n * lo) / (double)sh);

		rw = w <= h ? n : nl;
		rh = w <= h ? nl : n;
	} else if (s->resize == PFS_VIEW_RESIZE_EXACT) {
		rw = s->resize_w;
		rh = s->resize_h;
	}
	if (rw > PFS_VIEW_MAX_DIM || rh > PFS_VIEW_MAX_DIM)
		return -E2BIG;
	g->rs_w = (uint32_t)rw;
	g->rs_h = (uint32_t)rh;

	g->dec_w = w;
	g->dec_h = h;
	if (s->fast && s->resize != PFS_VIEW_RESIZE_NONE)
		fast_scale(w, h, g->rs_w, g->rs_h, &g->dec_w, &g->dec_h);
	g->resample = g->dec_w != g->rs_w || g->dec_h != g->rs_h;

	if (s->crop_w) {
		g->out_w = s->crop_w;
		g->out_h = s->crop_h;
		crop_axis(g->rs_w, s->crop_w, &g->crop_x, &g->pad_x, &g->copy_w);
		crop_axis(g->rs_h, s->crop_h, &g->crop_y, &g->pad_y, &g->copy_h);
	} else {
		g->out_w = g->rs_w;
		g->out_h = g->rs_h;
		g->copy_w = g->rs_w;
		g->copy_h = g->rs_h;
	}

	/* Buffers: the decoded image, the output, and with a resample the horizontal pass's
	 * intermediate (copy_w columns by at most dec_h source rows). */
	g->work_pixels = max64((uint64_t)g->dec_w * g->dec_h, (uint64_t)g->out_w * g->out_h);
	if (g->resample)
		g->work_pixels = max64(g->work_pixels, (uint64_t)g->copy_w * g->dec_h);
	return 0;
}
