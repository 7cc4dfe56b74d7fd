/* transform/resample.c — Pillow's BILINEAR resize, reimplemented for bit-exactness.
 *
 * Training pipelines resize with torchvision's Resize on PIL images, which calls Pillow's
 * Image.resize(size, BILINEAR). A view must give the same pixels, so this file follows
 * Pillow 9's src/libImaging/Resample.c (precompute_coeffs, normalize_coeffs_8bpc,
 * ImagingResampleHorizontal_8bpc / Vertical_8bpc, ImagingResampleInner) step by step:
 *
 *  - a separable triangle filter (support 1) whose support is widened by the scale when
 *    downscaling (antialiasing): filterscale = max(in/out, 1), support = filterscale;
 *  - for output index i: center = (i + 0.5) * scale, taps from (int)(center - support
 *    + 0.5) to (int)(center + support + 0.5) clipped to the image, weights
 *    filter((x - center + 0.5) / filterscale) normalised to sum 1, in double;
 *  - weights to fixed point with PRECISION_BITS = 32 - 8 - 2 = 22, rounded half away
 *    from zero; accumulators start at 1 << 21 (rounding) and are clipped to 0..255;
 *  - the horizontal pass first (only over the source rows the vertical pass will read),
 *    then the vertical pass; a pass whose size does not change is skipped.
 *
 * Why not a library: libswscale, libvips, pixman and stb_image_resize all use different
 * filter supports, centring or fixed-point rounding, so none reproduces Pillow's bytes.
 *
 * The only liberty taken: we compute just an output window (the centre crop), which
 * is bit-identical because every output pixel depends only on its own coefficients.
 * Floating point must not be contracted into FMAs (x86-64 baseline has none), or
 * coefficients could differ from Pillow's in the last bit.
 */
#include "resample.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define PRECISION_BITS (32 - 8 - 2)

struct coeffs {
	int ksize;          /* stride between outputs' weight lists */
	int *bounds;        /* per output: first input index, number of taps */
	int32_t *k;         /* fixed-point weights, ksize per output */
};

static double bilinear_filter(double x)
{
	if (x < 0.0)
		x = -x;
	if (x < 1.0)
		return 1.0 - x;
	return 0.0;
}

static void coeffs_free(struct coeffs *c)
{
	free(c->bounds);
	free(c->k);
}

/* Pillow's precompute_coeffs + normalize_coeffs_8bpc for outputs [from, from+count) of
 * an in_size -> out_size axis (box = the whole input). */
static int coeffs_init(struct coeffs *c, int in_size, int out_size, int from, int count)
{
	double scale, filterscale, support, *w = NULL;
	int rc = -ENOMEM;

	memset(c, 0, sizeof(*c));
	filterscale = scale = (double)((float)in_size - 0.0f) / out_size;
	if (filterscale < 1.0)
		filterscale = 1.0;
	support = 1.0 * filterscale;
	c->ksize = (int)ceil(support) * 2 + 1;

	c->bounds = malloc((size_t)count * 2 * sizeof(int));
	c->k = calloc((size_t)count * (size_t)c->ksize, sizeof(int32_t));
	w = malloc((size_t)c->ksize * sizeof(double));
	if (!c->bounds || !c->k || !w)
		goto fail_alloc;

	for (int i = 0; i < count; i++) {
		int xx = from + i, xmin, xmax;
		double center = 0.0 + (xx + 0.5) * scale, ww = 0.0, ss = 1.0 / filterscale;
		int32_t *k = &c->k[(size_t)i * (size_t)c->ksize];

		xmin = (int)(center - support + 0.5);
		if (xmin < 0)
			xmin = 0;
		xmax = (int)(center + support + 0.5);
		if (xmax > in_size)
			xmax = in_size;
		xmax -= xmin;
		for (int x = 0; x < xmax; x++) {
			w[x] = bilinear_filter((x + xmin - center + 0.5) * ss);
			ww += w[x];
		}
		for (int x = 0; x < xmax; x++) {
			double v = ww != 0.0 ? w[x] / ww : w[x];
			if (v < 0)
				k[x] = (int32_t)(-0.5 + v * (1 << PRECISION_BITS));
			else
				k[x] = (int32_t)(0.5 + v * (1 << PRECISION_BITS));
		}
		c->bounds[i * 2] = xmin;
		c->bounds[i * 2 + 1] = xmax;
	}
	rc = 0;
	free(w);
	return rc;

fail_alloc:
	free(w);
	coeffs_free(c);
	return rc;
}

static uint8_t clip8(int32_t in)
{
	int32_t v = in >> PRECISION_BITS;   /* arithmetic shift, as Pillow's lookup index */

	if (v < 0)
		return 0;
	if (v > 255)
		return 255;
	return (uint8_t)v;
}

/* Output columns (coefficients ch) of rows src[0..nrows) into dst rows. src points at the
 * first row; src_stride/dst_stride in bytes. */
static void pass_horizontal(const uint8_t *src, size_t src_stride, int nrows,
		const struct coeffs *ch, int ncols, uint8_t *dst, size_t dst_stride)
{
	for (int y = 0; y < nrows; y++) {
		const uint8_t *row = src + (size_t)y * src_stride;
		uint8_t *o = dst + (size_t)y * dst_stride;

		for (int xx = 0; xx < ncols; xx++) {
			int xmin = ch->bounds[xx * 2], xmax = ch->bounds[xx * 2 + 1];
			const int32_t *k = &ch->k[(size_t)xx * (size_t)ch->ksize];
			const uint8_t *p = row + (size_t)xmin * 3;
			int32_t s0 = 1 << (PRECISION_BITS - 1), s1 = s0, s2 = s0;

			for (int x = 0; x < xmax; x++) {
				s0 += p[x * 3 + 0] * k[x];
				s1 += p[x * 3 + 1] * k[x];
				s2 += p[x * 3 + 2] * k[x];
			}
			o[xx * 3 + 0] = clip8(s0);
			o[xx * 3 + 1] = clip8(s1);
			o[xx * 3 + 2] = clip8(s2);
		}
	}
}

/* Output rows (coefficients cv, whose bounds are rows of the image src starts at
 * row_base of) for ncols columns. */
static void pass_vertical(const uint8_t *src, size_t src_stride, int row_base,
		const struct coeffs *cv, int nrows, int ncols, uint8_t *dst, size_t dst_stride)
{
	for (int yy = 0; yy < nrows; yy++) {
		int ymin = cv->bounds[yy * 2] - row_base, ymax = cv->bounds[yy * 2 + 1];
		const int32_t *k = &cv->k[(size_t)yy * (size_t)cv->ksize];
		uint8_t *o = dst + (size_t)yy * dst_stride;

		for (int xx = 0; xx < ncols; xx++) {
			const uint8_t *p = src + (size_t)ymin * src_stride + (size_t)xx * 3;
			int32_t s0 = 1 << (PRECISION_BITS - 1), s1 = s0, s2 = s0;

			for (int y = 0; y < ymax; y++, p += src_stride) {
				s0 += p[0] * k[y];
				s1 += p[1] * k[y];
				s2 += p[2] * k[y];
			}
			o[xx * 3 + 0] = clip8(s0);
			o[xx * 3 + 1] = clip8(s1);
			o[xx * 3 + 2] = clip8(s2);
		}
	}
}

int pfs_view_resample(const uint8_t *src, uint32_t sw, uint32_t sh, uint32_t tw, uint32_t th,
		uint32_t wx, uint32_t wy, uint32_t ww, uint32_t wh, uint8_t *out, size_t out_stride)
{
	int need_h = tw != sw, need_v = th != sh;
	size_t src_stride = (size_t)sw * 3;
	struct coeffs ch = { 0 }, cv = { 0 };
	uint8_t *tmp = NULL;
	int rc;

	if (!need_h && !need_v) {
		for (uint32_t y = 0; y < wh; y++)
			memcpy(out + y * out_stride, src + (wy + y) * src_stride + (size_t)wx * 3,
					(size_t)ww * 3);
		return 0;
	}
	if (need_v) {
		rc = coeffs_init(&cv, (int)sh, (int)th, (int)wy, (int)wh);
		if (rc)
			goto out_coeffs;
	}
	if (need_h) {
		rc = coeffs_init(&ch, (int)sw, (int)tw, (int)wx, (int)ww);
		if (rc)
			goto out_coeffs;
	}

	if (need_h && need_v) {
		/* Only the source rows the vertical pass reads (bounds are monotonic). */
		int first = cv.bounds[0];
		int last = cv.bounds[(wh - 1) * 2] + cv.bounds[(wh - 1) * 2 + 1];
		size_t tmp_stride = (size_t)ww * 3;

		tmp = malloc((size_t)(last - first) * tmp_stride);
		rc = -ENOMEM;
		if (!tmp)
			goto out_coeffs;
		pass_horizontal(src + (size_t)first * src_stride, src_stride, last - first,
				&ch, (int)ww, tmp, tmp_stride);
		pass_vertical(tmp, tmp_stride, first, &cv, (int)wh, (int)ww, out, out_stride);
	} else if (need_h) {
		pass_horizontal(src + (size_t)wy * src_stride, src_stride, (int)wh, &ch, (int)ww,
				out, out_stride);
	} else {
		pass_vertical(src + (size_t)wx * 3, src_stride, 0, &cv, (int)wh, (int)ww,
				out, out_stride);
	}
	rc = 0;

	free(tmp);
out_coeffs:
	coeffs_free(&ch);
	coeffs_free(&cv);
	return rc;
}
