/* transform/resample.h — private to transform/: Pillow's BILINEAR resize of RGB8 images. */
#ifndef PFS_TRANSFORM_RESAMPLE_H
#define PFS_TRANSFORM_RESAMPLE_H

#include <stddef.h>
#include <stdint.h>

/* Resizes the packed RGB image src (sw x sh, rows of sw*3 bytes) to tw x th exactly as
 * Pillow 9's Image.resize((tw, th), BILINEAR) does, but computes only the output window
 * [wx, wx+ww) x [wy, wy+wh) (each output pixel depends only on its own coefficients, so
 * the window is bit-identical to cropping the full result). The window is written to out,
 * rows out_stride bytes apart. The window must lie inside tw x th and be non-empty.
 * Allocates a temporary of at most ww x sh pixels. 0 or -ENOMEM. */
int pfs_view_resample(const uint8_t *src, uint32_t sw, uint32_t sh, uint32_t tw, uint32_t th,
		uint32_t wx, uint32_t wy, uint32_t ww, uint32_t wh, uint8_t *out, size_t out_stride);

#endif
