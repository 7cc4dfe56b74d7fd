/* transform/view.h — image "views": JPEG decode / resize / centre crop / re-encode.
 *
 * MOUNT/.prestofs/views/SPEC/REL/PATH serves dataset file REL/PATH transformed by SPEC.
 * This module is the pure transform: bytes in, bytes out. It depends on nothing else in
 * prestofs (no logging, no config): every function returns 0 or a negative errno and
 * never prints. The fs layer decides what to cache and how to report errors.
 *
 * SPEC grammar (comma-separated items, any order, each key at most once):
 *
 *     decode                 the plain decode (also implied by every other item)
 *     resize=N               shorter side to N, aspect kept, the long side computed as
 *                            torchvision 0.14 Resize(N): long = int(N * long / short)
 *     resize=WxH             exact size, W wide and H high (torchvision Resize((H, W)))
 *     crop=N | crop=WxH      centre crop after the resize, torchvision CenterCrop: offsets
 *                            int(round((size - crop) / 2.0)) (round half to even); a crop
 *                            larger than the image pads with black, as CenterCrop does
 *     fast                   decode at the smallest libjpeg DCT scale M/8 that is still
 *                            >= the resize target, then resample (approximate; ~30 dB)
 *     fmt=ppm|npy|jpeg       output format, default ppm
 *     q=1..100               JPEG quality, default 90; only valid with fmt=jpeg
 *
 *  N, W, H are decimal integers in 1..PFS_VIEW_MAX_DIM.
 *
 * Canonical form (one per meaning, so equivalent spellings share a cache entry):
 *   keys in the order resize, fast, crop, fmt, q; defaults omitted (fmt=ppm, q=90);
 *   crop=NxN written crop=N; leading zeros dropped; fast dropped without resize (it
 *   changes nothing then); "decode" dropped when anything else remains, and the empty
 *   transform is written "decode". So "fmt=ppm", "decode,fmt=ppm" -> "decode";
 *   "crop=224x224,resize=256,decode" -> "resize=256,crop=224". "resize=N" and
 *   "resize=NxN" differ in meaning and stay distinct. q without fmt=jpeg is an error
 *   (not silently dropped): it is almost certainly a mistake.
 *
 * Outputs (always 8-bit RGB; grayscale and CMYK JPEGs are converted as PIL does):
 *   ppm   b"P6\n%d %d\n255\n" + rows   (byte-identical to PIL's Image.save(f, "PPM"))
 *   npy   numpy .npy 1.0, uint8, shape (H, W, 3), C order; header byte-identical to
 *         numpy.save (1.24: dict + growth padding, padded to a multiple of 64 bytes)
 *   jpeg  baseline, 4:2:0, accurate DCT, quality q (the settings of PIL's save(quality=q))
 *
 * Exactness: decode is bit-identical to PIL's Image.open(f).convert("RGB"); resize is
 * Pillow 9's Image.resize(size, BILINEAR) (what torchvision's Resize does to a PIL image),
 * reimplemented in transform/resample.c.
 *
 * Limits: every image buffer the transform allocates holds at most max_pixels pixels,
 * and the JPEG's declared width*height is checked against max_pixels from the header,
 * before anything is allocated (decompression bombs). JPEGs whose sampling factors
 * TurboJPEG 2.x cannot classify (rare, exotic) are refused with -EIO.
 *
 * Threads: all functions are reentrant; each pfs_view_apply/pfs_view_output_size call
 * creates and destroys its own TurboJPEG handle.
 */
#ifndef PFS_TRANSFORM_VIEW_H
#define PFS_TRANSFORM_VIEW_H

#include <stddef.h>
#include <stdint.h>

#define PFS_VIEW_MAX_DIM 65500u      /* JPEG's own limit on a side */
#define PFS_VIEW_SPEC_MAX 256        /* longest SPEC accepted */
#define PFS_VIEW_CANON_MAX 64        /* canon buffer that always suffices */
#define PFS_VIEW_DEFAULT_QUALITY 90

enum pfs_view_fmt { PFS_VIEW_FMT_PPM = 0, PFS_VIEW_FMT_NPY, PFS_VIEW_FMT_JPEG };
enum pfs_view_resize { PFS_VIEW_RESIZE_NONE = 0, PFS_VIEW_RESIZE_SHORT, PFS_VIEW_RESIZE_EXACT };

/* A parsed, canonical spec. Plain data: copy it freely; fill it only with pfs_view_parse. */
struct pfs_view_spec {
	enum pfs_view_resize resize;
	uint32_t resize_w, resize_h;     /* SHORT: both hold N; EXACT: W, H */
	uint32_t crop_w, crop_h;         /* 0 = no crop */
	int fast;                        /* only set together with a resize */
	enum pfs_view_fmt fmt;
	int quality;                     /* 1..100; PFS_VIEW_DEFAULT_QUALITY unless fmt=jpeg */
};

/* Where each stage's pixels go, from the declared JPEG size alone. */
struct pfs_view_geom {
	uint32_t src_w, src_h;           /* declared by the JPEG */
	uint32_t dec_w, dec_h;           /* what libjpeg decodes to (DCT-scaled with fast) */
	uint32_t rs_w, rs_h;             /* after the resize (= src without one) */
	uint32_t out_w, out_h;           /* final image (= crop size with a crop) */
	uint32_t crop_x, crop_y;         /* first resized pixel copied to the output */
	uint32_t pad_x, pad_y;           /* where it lands in the output (>0 only when padding) */
	uint32_t copy_w, copy_h;         /* size of the copied block */
	int resample;                    /* a resampling pass runs (dec size != rs size) */
	uint64_t work_pixels;            /* largest buffer the transform allocates, in pixels */
};

/* Parses SPEC (NUL-terminated). On success fills *out and, when canon is not NULL, the
 * canonical spelling (canon_cap >= PFS_VIEW_CANON_MAX always suffices; -ERANGE if too
 * small). On a bad spec returns -EINVAL and writes into err (when not NULL) a one-line
 * message naming the problem and showing the grammar. */
int pfs_view_parse(const char *spec, struct pfs_view_spec *out, char *canon, size_t canon_cap,
		char *err, size_t errcap);

/* Writes the canonical spelling of a parsed spec; -ERANGE if canon_cap is too small. */
int pfs_view_canon(const struct pfs_view_spec *s, char *canon, size_t canon_cap);

/* 1 when name ends in .jpg or .jpeg (any case), else 0. Other files pass through. */
int pfs_view_is_jpeg_name(const char *name);

/* The geometry of spec s applied to a w x h JPEG (pure arithmetic, torchvision's
 * formulas). -EINVAL for a zero size, -E2BIG if a stage would exceed PFS_VIEW_MAX_DIM.
 * Does not apply max_pixels: callers compare g->work_pixels themselves. */
int pfs_view_geometry(const struct pfs_view_spec *s, uint32_t w, uint32_t h,
		struct pfs_view_geom *g);

/* Exact output size from the JPEG header alone (jpeg may be just the file's first bytes,
 * as long as they hold the frame header). ppm and npy: 0 and *size. jpeg: -EAGAIN (the
 * size is known only after encoding: the caller runs pfs_view_apply once and keeps the
 * result). -EIO: not a JPEG or a corrupt header. -E2BIG: declared width*height, or any
 * buffer the transform would need, over max_pixels. */
int pfs_view_output_size(const struct pfs_view_spec *s, const void *jpeg, size_t len,
		uint64_t max_pixels, uint64_t *size);

/* Where a JPEG's header ends: just past its first start-of-scan segment, all that
 * pfs_view_output_size and pfs_view_work_bytes read (and so a prefix of the file that
 * long answers them as the whole file does). Follows the marker segments from SOI:
 * 0 and *end (<= len) when that segment lies within the len bytes given; -EAGAIN when
 * more bytes are needed, or the markers cannot be followed (a stray byte, EOI first:
 * ask again with the whole file, which gives the answer); -EIO: no SOI marker. */
int pfs_view_header_end(const void *jpeg, size_t len, size_t *end);

/* The most bytes pfs_view_apply holds at once besides its input, from the header alone
 * (as pfs_view_output_size; jpeg may be a prefix through pfs_view_header_end): decoded
 * pixels, libjpeg's whole-image coefficients of a progressive JPEG, the resample
 * temporary and coefficients, the output canvas, the encoder's buffer. An upper bound,
 * for a memory budget. Errors as pfs_view_output_size, never -EAGAIN. */
int pfs_view_work_bytes(const struct pfs_view_spec *s, const void *jpeg, size_t len,
		uint64_t max_pixels, uint64_t *bytes);

/* What an output depends on besides its source and its spec: the version
 * of these transforms (PFS_VIEW_TRANSFORM_VERSION, raised whenever an
 * output's bytes may change) and of the libjpeg-turbo they were built with.
 * Stored outputs (the SSD tier) are keyed by it, so an upgrade of either
 * never serves an output the new code would not make. */
uint64_t pfs_view_version(void);

/* The transform. On 0, *out is a new malloc'd buffer of *out_len bytes that the caller
 * frees with free(). On error *out is NULL. -EIO: not a JPEG, corrupt or truncated (a
 * TurboJPEG warning counts as an error); -E2BIG: over max_pixels (checked before
 * decoding); -ENOMEM. For ppm and npy, *out_len equals pfs_view_output_size's answer. */
int pfs_view_apply(const struct pfs_view_spec *s, const void *jpeg, size_t len,
		uint64_t max_pixels, void **out, size_t *out_len);

#endif
