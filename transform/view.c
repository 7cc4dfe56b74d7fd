/* transform/view.c — decode, resample, crop and encode a view (see view.h).
 *
 * Order of work in pfs_view_apply, chosen so that nothing is allocated for an input
 * that will be refused: read the JPEG header -> compute the whole geometry from the
 * declared size -> check every buffer against max_pixels -> decode (DCT-scaled with
 * `fast`) -> CMYK to RGB as PIL does -> resample only the crop window, straight into
 * the output canvas -> serialise (ppm/npy write the header in front of the pixels;
 * jpeg re-encodes).
 *
 * TurboJPEG: one handle per call, created and destroyed here; its error state never
 * leaves the function that made the call. Every failure of tjDecompress2, including
 * the non-fatal TJERR_WARNING it reports for truncated or corrupt data, becomes -EIO:
 * a view must never serve a silently grey-filled image.
 *
 * PIL compatibility of the decode: tjDecompress2 with accurate DCT and fancy upsampling
 * (its defaults) is what PIL's JpegDecode.c gets from the same libjpeg-turbo. CMYK
 * JPEGs: PIL always assumes Adobe polarity (JpegImagePlugin: rawmode "CMYK;I"), i.e.
 * inverts the stored values, then converts with Convert.c's cmyk2rgb:
 *     nk = 255 - k; r = nk - MULDIV255(c, nk), MULDIV255(a, b) = (t = a*b + 128,
 *     ((t >> 8) + t) >> 8)    (checked against PIL 9.4 for all 65536 (c, k) pairs).
 */
#include "view.h"
#include "resample.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jconfig.h> /* LIBJPEG_TURBO_VERSION_NUMBER */
#include <turbojpeg.h>

#define PFS_VIEW_TRANSFORM_VERSION 1

uint64_t pfs_view_version(void)
{
	return (uint64_t)PFS_VIEW_TRANSFORM_VERSION << 32 | (uint64_t)LIBJPEG_TURBO_VERSION_NUMBER;
}

struct header {
	int w, h, subsamp, colorspace;
};

/* The one place TurboJPEG header errors are translated. */
static int read_header(const void *jpeg, size_t len, struct header *hd)
{
	tjhandle tj;
	int rc = 0;

	/* TurboJPEG 2.x answers 0 without touching the outputs for a tables-only stream
	 * (or one cut before its frame header): zero them so that reads as corrupt. */
	memset(hd, 0, sizeof(*hd));
	if (!jpeg || len < 4 || len > (unsigned long)-1)
		return -EIO;
	tj = tjInitDecompress();
	if (!tj)
		return -ENOMEM;
	if (tjDecompressHeader3(tj, jpeg, (unsigned long)len, &hd->w, &hd->h, &hd->subsamp,
			&hd->colorspace) != 0 || hd->w <= 0 || hd->h <= 0)
		rc = -EIO;
	tjDestroy(tj);
	return rc;
}

static int plan(const struct pfs_view_spec *s, const void *jpeg, size_t len,
		uint64_t max_pixels, struct header *hd, struct pfs_view_geom *g)
{
	int rc = read_header(jpeg, len, hd);

	if (rc)
		return rc;
	/* The bomb check, on the declared size, before anything else. */
	if ((uint64_t)hd->w * (uint64_t)hd->h > max_pixels)
		return -E2BIG;
	rc = pfs_view_geometry(s, (uint32_t)hd->w, (uint32_t)hd->h, g);
	if (rc)
		return rc == -EINVAL ? -EIO : rc;
	if (g->work_pixels > max_pixels)
		return -E2BIG;
	return 0;
}

static size_t ppm_header(char *buf, size_t cap, uint32_t w, uint32_t h)
{
	return (size_t)snprintf(buf, cap, "P6\n%u %u\n255\n", w, h);
}

/* numpy.save's format 1.0 header for a (h, w, 3) uint8 C-order array: the dict, then
 * numpy >= 1.23's growth padding (21 - digits of shape[0] spaces), then spaces up to a
 * multiple of 64 bytes in total with a final newline. */
static size_t npy_header(char *buf, size_t cap, uint32_t w, uint32_t h)
{
	char dict[160];
	int n = snprintf(dict, sizeof(dict),
			"{'descr': '|u1', 'fortran_order': False, 'shape': (%u, %u, 3), }", h, w);
	int digits = snprintf(NULL, 0, "%u", h);
	size_t hlen = (size_t)n + (size_t)(21 - digits) + 1;    /* + '\n' */
	size_t total = 10 + hlen;

	total = (total + 63) / 64 * 64;
	if (total > cap)
		return 0;
	hlen = total - 10;
	memcpy(buf, "\x93NUMPY\x01\x00", 8);
	buf[8] = (char)(hlen & 0xff);
	buf[9] = (char)(hlen >> 8);
	memset(buf + 10, ' ', hlen);
	memcpy(buf + 10, dict, (size_t)n);
	buf[total - 1] = '\n';
	return total;
}

static size_t header_for(enum pfs_view_fmt fmt, char *buf, size_t cap, uint32_t w, uint32_t h)
{
	if (fmt == PFS_VIEW_FMT_NPY)
		return npy_header(buf, cap, w, h);
	return ppm_header(buf, cap, w, h);
}

int pfs_view_output_size(const struct pfs_view_spec *s, const void *jpeg, size_t len,
		uint64_t max_pixels, uint64_t *size)
{
	struct header hd;
	struct pfs_view_geom g;
	char hbuf[256];
	int rc = plan(s, jpeg, len, max_pixels, &hd, &g);

	if (rc)
		return rc;
	if (s->fmt == PFS_VIEW_FMT_JPEG)
		return -EAGAIN;
	*size = header_for(s->fmt, hbuf, sizeof(hbuf), g.out_w, g.out_h) +
			(uint64_t)g.out_w * g.out_h * 3;
	return 0;
}

/* The SOFn markers: C0-CF but DHT (C4), JPG (C8) and DAC (CC). */
static int is_sof(uint8_t m)
{
	return m >= 0xC0 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC;
}

/* Marker segments from SOI to the first SOS (see pfs_view_header_end); notes whether
 * the frame is progressive and its number of components. */
static int scan_markers(const uint8_t *p, size_t len, size_t *end, int *progressive,
		int *ncomp)
{
	size_t i = 2;

	if (len >= 2 && (p[0] != 0xFF || p[1] != 0xD8))
		return -EIO;
	for (;;) {
		size_t seg;
		uint8_t m;

		if (i + 2 > len || p[i] != 0xFF)
			return -EAGAIN;
		m = p[i + 1];
		if (m == 0xFF) {                        /* fill byte */
			i++;
			continue;
		}
		if (m == 0x01 || (m >= 0xD0 && m <= 0xD8)) {    /* no length */
			i += 2;
			continue;
		}
		if (m == 0xD9 || i + 4 > len)
			return -EAGAIN;
		seg = (size_t)p[i + 2] << 8 | p[i + 3];
		if (seg < 2)
			return -EAGAIN;
		if (is_sof(m) && i + 10 <= len) {
			*progressive = (m & 3) == 2;
			*ncomp = p[i + 9];
		}
		if (m == 0xDA) {
			if (i + 2 + seg > len)
				return -EAGAIN;
			*end = i + 2 + seg;
			return 0;
		}
		i += 2 + seg;
	}
}

int pfs_view_header_end(const void *jpeg, size_t len, size_t *end)
{
	int progressive = 0, ncomp = 0;

	return scan_markers(jpeg, len, end, &progressive, &ncomp);
}

int pfs_view_work_bytes(const struct pfs_view_spec *s, const void *jpeg, size_t len,
		uint64_t max_pixels, uint64_t *bytes)
{
	struct header hd;
	struct pfs_view_geom g;
	size_t end;
	int progressive = 0, ncomp = 4, cmyk;
	uint64_t rgb, canvas, tmp, coefs, decode, resample, encode = 0;
	int rc = plan(s, jpeg, len, max_pixels, &hd, &g);

	if (rc)
		return rc;
	(void)scan_markers(jpeg, len, &end, &progressive, &ncomp);
	cmyk = hd.colorspace == TJCS_CMYK || hd.colorspace == TJCS_YCCK;
	rgb = (uint64_t)g.dec_w * g.dec_h * (cmyk ? 4 : 3);
	canvas = 256 + (uint64_t)g.out_w * g.out_h * 3;
	/* resample.c: a temporary of copy_w x dec_h pixels; per output row and column its
	 * bounds and about 2 x (dec/rs) + 3 int32 weights. */
	tmp = g.resample ? (uint64_t)g.copy_w * g.dec_h * 3 : 0;
	coefs = 32 * ((uint64_t)g.dec_w + g.dec_h + g.copy_w + g.copy_h);
	/* libjpeg keeps every DCT coefficient of a progressive frame: 2 bytes per sample,
	 * at most ncomp samples per pixel (no subsampling). */
	decode = rgb + (progressive ? 2ull * (uint64_t)hd.w * (uint64_t)hd.h * (uint64_t)ncomp : 0);
	resample = rgb + canvas + tmp + coefs;
	if (s->fmt == PFS_VIEW_FMT_JPEG)
		encode = canvas + tjBufSize((int)g.out_w, (int)g.out_h, TJSAMP_420);
	*bytes = (decode > resample ? decode : resample);
	if (encode > *bytes)
		*bytes = encode;
	*bytes += 256 << 10; /* libjpeg's own state and row buffers */
	return 0;
}

/* Decodes to packed RGB at g->dec_w x g->dec_h into a new buffer. */
static int decode_rgb(const void *jpeg, size_t len, const struct header *hd,
		const struct pfs_view_geom *g, uint8_t **rgb)
{
	int cmyk = hd->colorspace == TJCS_CMYK || hd->colorspace == TJCS_YCCK;
	size_t npix = (size_t)g->dec_w * g->dec_h;
	uint8_t *buf;
	tjhandle tj;
	int rc = 0;

	*rgb = NULL;
	buf = malloc(npix * (cmyk ? 4 : 3));
	if (!buf)
		return -ENOMEM;
	tj = tjInitDecompress();
	if (!tj) {
		rc = -ENOMEM;
		goto fail_buf;
	}
	/* Any -1, warnings included (tjGetErrorCode == TJERR_WARNING), is a failure. */
	if (tjDecompress2(tj, jpeg, (unsigned long)len, buf, (int)g->dec_w, 0, (int)g->dec_h,
			cmyk ? TJPF_CMYK : TJPF_RGB, TJFLAG_LIMITSCANS) != 0)
		rc = -EIO;
	tjDestroy(tj);
	if (rc)
		goto fail_buf;

	if (cmyk) {
		/* In place, front to back: pixel i's RGB never overtakes CMYK pixel i. */
		for (size_t i = 0; i < npix; i++) {
			int c = 255 - buf[i * 4], m = 255 - buf[i * 4 + 1];
			int y = 255 - buf[i * 4 + 2], k = 255 - buf[i * 4 + 3];
			int nk = 255 - k, t;

#define MULDIV255(a, b) (t = (a) * (b) + 128, ((t >> 8) + t) >> 8)
			buf[i * 3 + 0] = (uint8_t)(nk - MULDIV255(c, nk));
			buf[i * 3 + 1] = (uint8_t)(nk - MULDIV255(m, nk));
			buf[i * 3 + 2] = (uint8_t)(nk - MULDIV255(y, nk));
#undef MULDIV255
		}
	}
	*rgb = buf;
	return 0;

fail_buf:
	free(buf);
	return rc;
}

/* tjCompress2 into a malloc'd buffer of the worst-case size, then shrunk. */
static int encode_jpeg(const uint8_t *rgb, uint32_t w, uint32_t h, int quality,
		void **out, size_t *out_len)
{
	unsigned long cap = tjBufSize((int)w, (int)h, TJSAMP_420), size = cap;
	unsigned char *buf;
	tjhandle tj;
	int rc = 0;

	if (cap == (unsigned long)-1)
		return -E2BIG;
	buf = malloc(cap);
	if (!buf)
		return -ENOMEM;
	tj = tjInitCompress();
	if (!tj) {
		rc = -ENOMEM;
		goto fail_buf;
	}
	/* PIL's save(quality=q): baseline, 4:2:0, islow DCT, no Huffman optimisation. */
	if (tjCompress2(tj, rgb, (int)w, 0, (int)h, TJPF_RGB, &buf, &size, TJSAMP_420, quality,
			TJFLAG_NOREALLOC | TJFLAG_ACCURATEDCT) != 0)
		rc = tjGetErrorCode(tj) == TJERR_WARNING ? -EIO : -ENOMEM;
	tjDestroy(tj);
	if (rc)
		goto fail_buf;
	{
		void *shrunk = realloc(buf, size);
		*out = shrunk ? shrunk : buf;
	}
	*out_len = size;
	return 0;

fail_buf:
	free(buf);
	return rc;
}

int pfs_view_apply(const struct pfs_view_spec *s, const void *jpeg, size_t len,
		uint64_t max_pixels, void **out, size_t *out_len)
{
	struct header hd;
	struct pfs_view_geom g;
	uint8_t *rgb = NULL, *res = NULL, *pix;
	char hbuf[256];
	size_t hlen = 0, out_stride;
	int rc;

	*out = NULL;
	*out_len = 0;
	rc = plan(s, jpeg, len, max_pixels, &hd, &g);
	if (rc)
		return rc;
	rc = decode_rgb(jpeg, len, &hd, &g, &rgb);
	if (rc)
		return rc;

	/* The output canvas: header (ppm/npy) followed by out_w x out_h RGB pixels. */
	if (s->fmt != PFS_VIEW_FMT_JPEG)
		hlen = header_for(s->fmt, hbuf, sizeof(hbuf), g.out_w, g.out_h);
	out_stride = (size_t)g.out_w * 3;
	res = (g.copy_w != g.out_w || g.copy_h != g.out_h)
			? calloc(1, hlen + out_stride * g.out_h)     /* padded: black borders */
			: malloc(hlen + out_stride * g.out_h);
	if (!res) {
		rc = -ENOMEM;
		goto out_rgb;
	}
	memcpy(res, hbuf, hlen);
	pix = res + hlen;

	rc = pfs_view_resample(rgb, g.dec_w, g.dec_h, g.rs_w, g.rs_h, g.crop_x, g.crop_y,
			g.copy_w, g.copy_h, pix + (size_t)g.pad_y * out_stride + (size_t)g.pad_x * 3,
			out_stride);
	if (rc)
		goto out_res;
	free(rgb);
	rgb = NULL;

	if (s->fmt == PFS_VIEW_FMT_JPEG) {
		rc = encode_jpeg(pix, g.out_w, g.out_h, s->quality, out, out_len);
		goto out_res;
	}
	*out = res;
	*out_len = hlen + out_stride * g.out_h;
	return 0;

out_res:
	free(res);
out_rgb:
	free(rgb);
	return rc;
}
