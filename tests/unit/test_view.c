/* Unit tests for transform/ (views): the spec grammar and its canonical forms, the
 * geometry against torchvision 0.14's formulas, output sizes and headers, and refusal of
 * bombs, garbage and truncated files. Pixel exactness against PIL is proved by
 * tests/integration/test_view_exact.py. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <turbojpeg.h>

#include "transform/view.h"

#define MAXPIX 100000000ull

static void canon_of(const char *spec, const char *want)
{
	struct pfs_view_spec s;
	char canon[PFS_VIEW_CANON_MAX], err[512];
	int rc = pfs_view_parse(spec, &s, canon, sizeof(canon), err, sizeof(err));

	if (rc != 0)
		fail_msg("'%s' refused: %s", spec, err);
	if (strcmp(canon, want) != 0)
		fail_msg("'%s' -> '%s', want '%s'", spec, canon, want);
	/* The canonical form is a fixed point. */
	rc = pfs_view_parse(want, &s, canon, sizeof(canon), err, sizeof(err));
	assert_int_equal(rc, 0);
	assert_string_equal(canon, want);
}

static void test_canonical(void **state)
{
	static const char *const t[][2] = {
		{ "decode", "decode" },
		{ "fmt=ppm", "decode" },
		{ "decode,fmt=ppm", "decode" },
		{ "fast", "decode" },                       /* fast without resize: no-op */
		{ "resize=256", "resize=256" },
		{ "resize=0256", "resize=256" },
		{ "resize=256,decode", "resize=256" },
		{ "decode,resize=256", "resize=256" },
		{ "resize=224x224", "resize=224x224" },     /* differs from resize=224 */
		{ "resize=300x200", "resize=300x200" },
		{ "crop=224", "crop=224" },
		{ "crop=224x224", "crop=224" },
		{ "crop=224x100", "crop=224x100" },
		{ "resize=256,crop=224", "resize=256,crop=224" },
		{ "crop=224,resize=256", "resize=256,crop=224" },
		{ "crop=224x224,resize=256,decode", "resize=256,crop=224" },
		{ "fmt=npy,crop=224,resize=256", "resize=256,crop=224,fmt=npy" },
		{ "resize=256,crop=224,fmt=npy", "resize=256,crop=224,fmt=npy" },
		{ "fast,resize=256", "resize=256,fast" },
		{ "crop=224,fast,resize=256", "resize=256,fast,crop=224" },
		{ "fmt=jpeg", "fmt=jpeg" },
		{ "fmt=jpeg,q=90", "fmt=jpeg" },
		{ "q=90,fmt=jpeg", "fmt=jpeg" },
		{ "q=75,fmt=jpeg", "fmt=jpeg,q=75" },
		{ "fmt=jpeg,q=100,resize=1x1,fast,crop=1", "resize=1x1,fast,crop=1,fmt=jpeg,q=100" },
		{ "resize=65500x65500,fast,crop=65500x1,fmt=jpeg,q=1",
		  "resize=65500x65500,fast,crop=65500x1,fmt=jpeg,q=1" },
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		canon_of(t[i][0], t[i][1]);
}

static void test_parsed_fields(void **state)
{
	struct pfs_view_spec s;

	assert_int_equal(pfs_view_parse("crop=10x20,resize=30x40,fmt=jpeg,q=5", &s, NULL, 0,
			NULL, 0), 0);
	assert_int_equal(s.resize, PFS_VIEW_RESIZE_EXACT);
	assert_int_equal(s.resize_w, 30);
	assert_int_equal(s.resize_h, 40);
	assert_int_equal(s.crop_w, 10);
	assert_int_equal(s.crop_h, 20);
	assert_int_equal(s.fmt, PFS_VIEW_FMT_JPEG);
	assert_int_equal(s.quality, 5);
	assert_int_equal(pfs_view_parse("resize=7", &s, NULL, 0, NULL, 0), 0);
	assert_int_equal(s.resize, PFS_VIEW_RESIZE_SHORT);
	assert_int_equal(s.quality, PFS_VIEW_DEFAULT_QUALITY);
}

static void test_bad_specs(void **state)
{
	static const char *const t[][2] = {   /* spec, part of the message */
		{ "", "empty spec" },
		{ "resize", "unknown item 'resize'" },
		{ "resize=", "bad size" },
		{ "resize=0", "bad size" },
		{ "resize=65501", "bad size" },
		{ "resize=99999999999999", "bad size" },
		{ "resize=-5", "bad size" },
		{ "resize=+5", "bad size" },
		{ "resize= 5", "bad size" },
		{ "resize=5x", "bad size" },
		{ "resize=x5", "bad size" },
		{ "resize=5x5x5", "bad size" },
		{ "resize=5X5", "bad size" },
		{ "resize=256,resize=256", "repeated key 'resize=256'" },
		{ "crop=0", "bad size" },
		{ "fmt=png", "unknown format" },
		{ "fmt=PPM", "unknown format" },
		{ "fmt=jpeg,fmt=jpeg", "repeated key" },
		{ "q=90", "q= needs fmt=jpeg" },
		{ "fmt=npy,q=50", "q= needs fmt=jpeg" },
		{ "fmt=jpeg,q=0", "bad quality" },
		{ "fmt=jpeg,q=101", "bad quality" },
		{ "fast,fast,resize=3", "repeated item 'fast'" },
		{ "decode,decode", "repeated item" },
		{ "resize=256,", "empty item" },
		{ ",resize=256", "empty item" },
		{ "resize=256,,crop=224", "empty item" },
		{ "Resize=256", "unknown item 'Resize=256'" },
		{ "decoder", "unknown item 'decoder'" },
		{ "resize=256;crop=224", "bad size" },
		{ "resize=256/crop=224", "bad size" },
	};
	struct pfs_view_spec s;
	char canon[PFS_VIEW_CANON_MAX], err[512];

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		int rc = pfs_view_parse(t[i][0], &s, canon, sizeof(canon), err, sizeof(err));
		if (rc != -EINVAL)
			fail_msg("'%s' accepted (rc %d)", t[i][0], rc);
		if (!strstr(err, t[i][1]) || !strstr(err, "grammar: decode | resize=N"))
			fail_msg("'%s': message '%s' lacks '%s' or the grammar", t[i][0], err, t[i][1]);
	}
	/* Too long, and NULL/no-err-buffer callers. */
	{
		char lng[PFS_VIEW_SPEC_MAX + 10];
		memset(lng, 'a', sizeof(lng) - 1);
		lng[sizeof(lng) - 1] = '\0';
		assert_int_equal(pfs_view_parse(lng, &s, NULL, 0, err, sizeof(err)), -EINVAL);
		assert_non_null(strstr(err, "too long"));
	}
	assert_int_equal(pfs_view_parse(NULL, &s, NULL, 0, NULL, 0), -EINVAL);
	assert_int_equal(pfs_view_parse("bogus", &s, NULL, 0, NULL, 0), -EINVAL);
	/* A canon buffer too small. */
	assert_int_equal(pfs_view_parse("resize=256", &s, canon, 4, NULL, 0), -ERANGE);
}

static void test_jpeg_name(void **state)
{
	assert_true(pfs_view_is_jpeg_name("a.jpg"));
	assert_true(pfs_view_is_jpeg_name("dir/b.JPG"));
	assert_true(pfs_view_is_jpeg_name("c.JpEg"));
	assert_true(pfs_view_is_jpeg_name("x.y.jpeg"));
	assert_false(pfs_view_is_jpeg_name(".jpg"));
	assert_false(pfs_view_is_jpeg_name("a.jpgx"));
	assert_false(pfs_view_is_jpeg_name("a.png"));
	assert_false(pfs_view_is_jpeg_name("ajpg"));
	assert_false(pfs_view_is_jpeg_name(""));
	assert_false(pfs_view_is_jpeg_name(NULL));
}

static struct pfs_view_spec spec_of(const char *text)
{
	struct pfs_view_spec s;
	assert_int_equal(pfs_view_parse(text, &s, NULL, 0, NULL, 0), 0);
	return s;
}

/* torchvision 0.14 _compute_resized_output_size with one int; new sizes computed by
 * torchvision itself (kept as data) and by exact integer arithmetic: floor(s*L/S)
 * equals Python's int(s * L / S) here because the quotient's distance to an integer is
 * at least 1/S >= 1/65500, far above double rounding at these magnitudes. */
static void test_geometry_resize(void **state)
{
	static const uint32_t tv[][5] = {      /* w, h, s, new_w, new_h (torchvision) */
		{333, 211, 256, 404, 256}, {211, 333, 256, 256, 404}, {640, 480, 256, 341, 256},
		{500, 375, 256, 341, 256}, {1, 1, 256, 256, 256}, {17, 13, 224, 292, 224},
		{65500, 1, 1, 65500, 1}, {1000, 999, 7, 7, 7}, {4032, 3024, 256, 341, 256},
		{3, 65500, 2, 2, 43666}, {1280, 720, 160, 284, 160}, {719, 1281, 333, 333, 593},
	};
	struct pfs_view_geom g;
	char text[64];

	for (size_t i = 0; i < sizeof(tv) / sizeof(tv[0]); i++) {
		struct pfs_view_spec s;
		snprintf(text, sizeof(text), "resize=%u", tv[i][2]);
		s = spec_of(text);
		assert_int_equal(pfs_view_geometry(&s, tv[i][0], tv[i][1], &g), 0);
		assert_int_equal(g.rs_w, tv[i][3]);
		assert_int_equal(g.rs_h, tv[i][4]);
		assert_int_equal(g.out_w, tv[i][3]);
		assert_int_equal(g.out_h, tv[i][4]);
	}
	/* Many sizes against the integer formula. */
	for (uint32_t w = 1; w < 700; w += 7) {
		for (uint32_t h = 1; h < 700; h += 11) {
			static const uint32_t sizes[] = { 1, 7, 32, 224, 256, 333, 1000 };
			for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
				uint32_t n = sizes[k], sh = w <= h ? w : h, lo = w <= h ? h : w;
				uint64_t nl = (uint64_t)n * lo / sh;
				struct pfs_view_spec s;
				snprintf(text, sizeof(text), "resize=%u", n);
				s = spec_of(text);
				if (nl > PFS_VIEW_MAX_DIM) {
					assert_int_equal(pfs_view_geometry(&s, w, h, &g), -E2BIG);
					continue;
				}
				assert_int_equal(pfs_view_geometry(&s, w, h, &g), 0);
				assert_int_equal(g.rs_w, w <= h ? n : nl);
				assert_int_equal(g.rs_h, w <= h ? nl : n);
				assert_int_equal(g.resample, g.rs_w != w || g.rs_h != h);
			}
		}
	}
	/* Exact sizes, no resize. */
	{
		struct pfs_view_spec s = spec_of("resize=300x20");
		assert_int_equal(pfs_view_geometry(&s, 7, 9, &g), 0);
		assert_int_equal(g.rs_w, 300);
		assert_int_equal(g.rs_h, 20);
		s = spec_of("decode");
		assert_int_equal(pfs_view_geometry(&s, 7, 9, &g), 0);
		assert_int_equal(g.out_w, 7);
		assert_int_equal(g.out_h, 9);
		assert_false(g.resample);
		assert_int_equal(pfs_view_geometry(&s, 0, 9, &g), -EINVAL);
		/* The long side would pass JPEG's limit. */
		s = spec_of("resize=65500");
		assert_int_equal(pfs_view_geometry(&s, 65500, 2, &g), -E2BIG);
	}
}

/* torchvision 0.14 center_crop: offsets with round-half-even, zero padding when the crop
 * is larger (rows computed by torchvision on marked tensors). */
static void test_geometry_crop(void **state)
{
	static const uint32_t tv[][8] = {  /* iw, ih, cw, ch, crop_x, crop_y, pad_x, pad_y */
		{256, 341, 224, 224, 16, 58, 0, 0}, {257, 300, 224, 224, 16, 38, 0, 0},
		{255, 255, 224, 224, 16, 16, 0, 0}, {11, 11, 4, 4, 4, 4, 0, 0},
		{10, 9, 3, 3, 4, 3, 0, 0}, {5, 5, 8, 8, 0, 0, 1, 1}, {6, 9, 3, 12, 2, 0, 0, 1},
		{7, 4, 6, 6, 0, 0, 0, 1},
	};
	struct pfs_view_geom g;
	char text[64];

	for (size_t i = 0; i < sizeof(tv) / sizeof(tv[0]); i++) {
		struct pfs_view_spec s;
		snprintf(text, sizeof(text), "crop=%ux%u", tv[i][2], tv[i][3]);
		s = spec_of(text);
		assert_int_equal(pfs_view_geometry(&s, tv[i][0], tv[i][1], &g), 0);
		assert_int_equal(g.out_w, tv[i][2]);
		assert_int_equal(g.out_h, tv[i][3]);
		assert_int_equal(g.crop_x, tv[i][4]);
		assert_int_equal(g.crop_y, tv[i][5]);
		assert_int_equal(g.pad_x, tv[i][6]);
		assert_int_equal(g.pad_y, tv[i][7]);
		assert_int_equal(g.copy_w, tv[i][2] < tv[i][0] ? tv[i][2] : tv[i][0]);
		assert_int_equal(g.copy_h, tv[i][3] < tv[i][1] ? tv[i][3] : tv[i][1]);
	}
	/* Half-to-even for every difference 0..40. */
	for (uint32_t d = 0; d <= 40; d++) {
		struct pfs_view_spec s = spec_of("crop=10x10");
		uint32_t want = d / 2 + ((d % 2) && ((d / 2) % 2) ? 1 : 0);
		assert_int_equal(pfs_view_geometry(&s, 10 + d, 10 + d, &g), 0);
		assert_int_equal(g.crop_x, want);
		assert_int_equal(g.crop_y, want);
	}
	/* Crop after resize. */
	{
		struct pfs_view_spec s = spec_of("resize=256,crop=224");
		assert_int_equal(pfs_view_geometry(&s, 500, 375, &g), 0);
		assert_int_equal(g.rs_w, 341);
		assert_int_equal(g.crop_x, 58);   /* round(58.5) = 58 */
		assert_int_equal(g.crop_y, 16);
	}
}

static void test_geometry_fast(void **state)
{
	struct pfs_view_spec s = spec_of("resize=256,fast");
	struct pfs_view_geom g;

	/* 4032x3024 -> 341x256: 1/8 gives 504x378 >= 341x256. */
	assert_int_equal(pfs_view_geometry(&s, 4032, 3024, &g), 0);
	assert_int_equal(g.dec_w, 504);
	assert_int_equal(g.dec_h, 378);
	/* 640x480 -> 341x256: 5/8 = 400x300 (4/8 = 320 < 341). */
	assert_int_equal(pfs_view_geometry(&s, 640, 480, &g), 0);
	assert_int_equal(g.dec_w, 400);
	assert_int_equal(g.dec_h, 300);
	/* Upscaling: full size. */
	assert_int_equal(pfs_view_geometry(&s, 100, 80, &g), 0);
	assert_int_equal(g.dec_w, 100);
	assert_int_equal(g.dec_h, 80);
	/* Rounding up in TJSCALED: 17x13 to 3x3 at 1/8 = 3x2 is too small -> 2/8 = 5x4. */
	s = spec_of("resize=3x3,fast");
	assert_int_equal(pfs_view_geometry(&s, 17, 13, &g), 0);
	assert_int_equal(g.dec_w, 5);
	assert_int_equal(g.dec_h, 4);
	/* Without fast the decode is full size. */
	s = spec_of("resize=256");
	assert_int_equal(pfs_view_geometry(&s, 4032, 3024, &g), 0);
	assert_int_equal(g.dec_w, 4032);
}

/* A small JPEG made with TurboJPEG (gradient). Caller tjFree()s. */
static unsigned char *make_jpeg(int w, int h, int samp, unsigned long *len)
{
	unsigned char *rgb = malloc((size_t)w * h * 3), *jpeg = NULL;
	tjhandle tj = tjInitCompress();

	assert_non_null(rgb);
	assert_non_null(tj);
	for (int i = 0; i < w * h * 3; i++)
		rgb[i] = (unsigned char)((i * 7) ^ (i / (w * 3)) * 13);
	*len = 0;
	assert_int_equal(tjCompress2(tj, rgb, w, 0, h, TJPF_RGB, &jpeg, len, samp, 85, 0), 0);
	tjDestroy(tj);
	free(rgb);
	return jpeg;
}

static void check_apply(const char *spec, const unsigned char *jpeg, unsigned long len,
		uint32_t want_w, uint32_t want_h)
{
	struct pfs_view_spec s = spec_of(spec);
	uint64_t size = 0;
	void *out = NULL;
	size_t out_len = 0;
	char hdr[64];

	assert_int_equal(pfs_view_apply(&s, jpeg, len, MAXPIX, &out, &out_len), 0);
	assert_non_null(out);
	if (s.fmt == PFS_VIEW_FMT_JPEG) {
		int w, h, sub, cs;
		tjhandle tj = tjInitDecompress();
		assert_int_equal(pfs_view_output_size(&s, jpeg, len, MAXPIX, &size), -EAGAIN);
		assert_int_equal(tjDecompressHeader3(tj, out, out_len, &w, &h, &sub, &cs), 0);
		assert_int_equal(w, want_w);
		assert_int_equal(h, want_h);
		assert_int_equal(sub, TJSAMP_420);
		tjDestroy(tj);
	} else {
		assert_int_equal(pfs_view_output_size(&s, jpeg, len, MAXPIX, &size), 0);
		assert_int_equal(size, out_len);
		if (s.fmt == PFS_VIEW_FMT_PPM) {
			int n = snprintf(hdr, sizeof(hdr), "P6\n%u %u\n255\n", want_w, want_h);
			assert_memory_equal(out, hdr, n);
			assert_int_equal(out_len, n + (size_t)want_w * want_h * 3);
		} else {
			assert_int_equal(out_len % 64, (size_t)want_w * want_h * 3 % 64);
			assert_memory_equal(out, "\x93NUMPY\x01\x00", 8);
		}
	}
	free(out);
}

static void test_apply_shapes(void **state)
{
	static const int samps[] = { TJSAMP_444, TJSAMP_422, TJSAMP_420, TJSAMP_GRAY };
	for (size_t i = 0; i < sizeof(samps) / sizeof(samps[0]); i++) {
		unsigned long len;
		unsigned char *j = make_jpeg(37, 23, samps[i], &len);

		check_apply("decode", j, len, 37, 23);
		check_apply("fmt=npy", j, len, 37, 23);
		check_apply("resize=10", j, len, 16, 10);
		check_apply("resize=10,fast", j, len, 16, 10);
		check_apply("resize=50x7", j, len, 50, 7);
		check_apply("crop=5x100", j, len, 5, 100);
		check_apply("resize=30,crop=20,fmt=npy", j, len, 20, 20);
		check_apply("resize=30,crop=20,fmt=jpeg,q=50", j, len, 20, 20);
		check_apply("fmt=jpeg", j, len, 37, 23);
		tjFree(j);
	}
}

/* Sizing from the header alone (what fs/views.c does with a prefix of the source): for
 * every spec form above, the size from the bytes through the first SOS equals the length
 * of the real output, and so does the memory estimate from the whole file; one byte
 * fewer asks for more. Baseline and progressive, every sampling, and a file with a
 * 60 KB APP segment in front (a prefix of 64 KiB then holds the whole header only just). */
static unsigned char *with_app(const unsigned char *j, unsigned long len, size_t app,
		unsigned long *out_len)
{
	unsigned char *o = malloc(len + 4 + app);

	assert_non_null(o);
	memcpy(o, j, 2);
	o[2] = 0xFF;
	o[3] = 0xE5;
	o[4] = (unsigned char)((app + 2) >> 8);
	o[5] = (unsigned char)(app + 2);
	memset(o + 6, 0xAB, app);
	memcpy(o + 6 + app, j + 2, len - 2);
	*out_len = len + 4 + app;
	return o;
}

static void test_header_prefix(void **state)
{
	static const char *const specs[] = {
		"decode", "fmt=npy", "resize=10", "resize=10,fast", "resize=50x7", "crop=5x100",
		"resize=30,crop=20,fmt=npy", "resize=30,crop=20,fmt=jpeg,q=50", "fmt=jpeg",
		"resize=256,crop=224", "crop=224,fast,resize=256",
	};
	static const int samps[] = { TJSAMP_444, TJSAMP_422, TJSAMP_420, TJSAMP_GRAY };
	(void)state;
	for (int k = 0; k < 3 * 4; k++) {
		unsigned long len, len0;
		unsigned char *j0 = make_jpeg(37, 23, samps[k % 4], &len0), *j = j0;
		size_t end = 0, end2;
		uint64_t work_whole, work_head;

		if (k / 4 == 1) {       /* progressive */
			unsigned char *rgb;
			int w = 37, h = 23;
			tjhandle tj = tjInitDecompress();

			rgb = malloc((size_t)w * h * 3);
			assert_int_equal(tjDecompress2(tj, j0, len0, rgb, w, 0, h, TJPF_RGB, 0), 0);
			tjDestroy(tj);
			tj = tjInitCompress();
			j = NULL;
			len = 0;
			assert_int_equal(tjCompress2(tj, rgb, w, 0, h, TJPF_RGB, &j, &len, samps[k % 4],
					85, TJFLAG_PROGRESSIVE), 0);
			tjDestroy(tj);
			free(rgb);
		} else if (k / 4 == 2) {
			j = with_app(j0, len0, 60000, &len);
		} else {
			len = len0;
		}
		assert_int_equal(pfs_view_header_end(j, len, &end), 0);
		assert_true(end > 20 && end < len);
		assert_int_equal(pfs_view_header_end(j, end - 1, &end2), -EAGAIN);
		assert_int_equal(pfs_view_header_end(j, 1, &end2), -EAGAIN);
		for (size_t i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
			struct pfs_view_spec s = spec_of(specs[i]);
			uint64_t size = 0;
			void *out;
			size_t out_len;

			assert_int_equal(pfs_view_apply(&s, j, len, MAXPIX, &out, &out_len), 0);
			if (s.fmt == PFS_VIEW_FMT_JPEG) {
				assert_int_equal(pfs_view_output_size(&s, j, end, MAXPIX, &size), -EAGAIN);
			} else {
				assert_int_equal(pfs_view_output_size(&s, j, end, MAXPIX, &size), 0);
				assert_int_equal(size, out_len);
			}
			assert_int_equal(pfs_view_work_bytes(&s, j, end, MAXPIX, &work_head), 0);
			assert_int_equal(pfs_view_work_bytes(&s, j, len, MAXPIX, &work_whole), 0);
			assert_int_equal(work_head, work_whole);
			assert_true(work_head >= out_len);
			free(out);
		}
		if (j != j0) {
			if (k / 4 == 1)
				tjFree(j);
			else
				free(j);
		}
		tjFree(j0);
	}
	{
		size_t end;
		assert_int_equal(pfs_view_header_end("GIF89a", 6, &end), -EIO);
	}
}

/* numpy.save(np.zeros((2, 3, 3), np.uint8)), first 128 bytes (numpy 1.24.2). */
static void test_npy_header(void **state)
{
	static const char want[] = "\x93NUMPY\x01\x00v\x00{'descr': '|u1', 'fortran_order': "
		"False, 'shape': (2, 3, 3), }                                                   "
		"    \n";
	struct pfs_view_spec s = spec_of("resize=3x2,fmt=npy");
	unsigned long len;
	unsigned char *j = make_jpeg(8, 8, TJSAMP_444, &len);
	void *out;
	size_t out_len;

	assert_int_equal(sizeof(want) - 1, 128);
	assert_int_equal(pfs_view_apply(&s, j, len, MAXPIX, &out, &out_len), 0);
	assert_int_equal(out_len, 128 + 18);
	assert_memory_equal(out, want, 128);
	free(out);
	tjFree(j);
}

/* Crop larger than the image: the borders are black. */
static void test_crop_padding(void **state)
{
	struct pfs_view_spec s = spec_of("crop=12x3");
	unsigned long len;
	unsigned char *j = make_jpeg(8, 8, TJSAMP_444, &len), *px;
	void *out;
	size_t out_len, hl = strlen("P6\n12 3\n255\n");

	assert_int_equal(pfs_view_apply(&s, j, len, MAXPIX, &out, &out_len), 0);
	px = (unsigned char *)out + hl;
	for (int y = 0; y < 3; y++)
		for (int x = 0; x < 12; x++) {
			int inside = x >= 2 && x < 10;
			int zero = !px[(y * 12 + x) * 3] && !px[(y * 12 + x) * 3 + 1] &&
					!px[(y * 12 + x) * 3 + 2];
			if (!inside)
				assert_true(zero);
		}
	free(out);
	tjFree(j);
}

/* Patch every SOFn frame header's height and width. */
static void set_declared_size(unsigned char *j, unsigned long len, int w, int h)
{
	for (unsigned long i = 2; i + 9 < len; i++) {
		if (j[i] == 0xFF && j[i + 1] == 0xC0) {
			j[i + 5] = (unsigned char)(h >> 8);
			j[i + 6] = (unsigned char)h;
			j[i + 7] = (unsigned char)(w >> 8);
			j[i + 8] = (unsigned char)w;
			return;
		}
	}
	fail_msg("no SOF0");
}

static void test_bomb(void **state)
{
	struct pfs_view_spec s = spec_of("decode");
	unsigned long len;
	unsigned char *j = make_jpeg(16, 16, TJSAMP_420, &len);
	void *out = (void *)1;
	size_t out_len = 7;
	uint64_t size;

	set_declared_size(j, len, 60000, 60000);
	assert_int_equal(pfs_view_output_size(&s, j, len, MAXPIX, &size), -E2BIG);
	assert_int_equal(pfs_view_apply(&s, j, len, MAXPIX, &out, &out_len), -E2BIG);
	assert_null(out);
	assert_int_equal(out_len, 0);
	s = spec_of("resize=16,fast");   /* even when a DCT-scaled decode would be small */
	assert_int_equal(pfs_view_apply(&s, j, len, MAXPIX, &out, &out_len), -E2BIG);
	tjFree(j);

	/* A small image blown up by the spec: the output is over the limit too. */
	j = make_jpeg(16, 16, TJSAMP_420, &len);
	s = spec_of("resize=20000");
	assert_int_equal(pfs_view_output_size(&s, j, len, MAXPIX, &size), -E2BIG);
	assert_int_equal(pfs_view_apply(&s, j, len, MAXPIX, &out, &out_len), -E2BIG);
	/* The limit is inclusive. */
	s = spec_of("decode");
	assert_int_equal(pfs_view_output_size(&s, j, len, 256, &size), 0);
	assert_int_equal(pfs_view_output_size(&s, j, len, 255, &size), -E2BIG);
	tjFree(j);

	/* The horizontal pass's intermediate is bounded too: 1x300 -> 300x1 would need
	 * 300 columns x 300 rows. */
	j = make_jpeg(1, 300, TJSAMP_444, &len);
	s = spec_of("resize=300x1");
	assert_int_equal(pfs_view_apply(&s, j, len, 300 * 300 - 1, &out, &out_len), -E2BIG);
	assert_int_equal(pfs_view_apply(&s, j, len, 300 * 300, &out, &out_len), 0);
	free(out);
	tjFree(j);
}

static void test_garbage_and_truncation(void **state)
{
	struct pfs_view_spec s = spec_of("resize=8,fmt=npy");
	unsigned char rnd[4096];
	unsigned long len;
	unsigned char *j = make_jpeg(64, 48, TJSAMP_420, &len);
	void *out = NULL;
	size_t out_len;
	uint64_t size;

	srand(7);
	for (size_t i = 0; i < sizeof(rnd); i++)
		rnd[i] = (unsigned char)rand();
	assert_int_equal(pfs_view_apply(&s, rnd, sizeof(rnd), MAXPIX, &out, &out_len), -EIO);
	assert_int_equal(pfs_view_output_size(&s, rnd, sizeof(rnd), MAXPIX, &size), -EIO);
	assert_int_equal(pfs_view_apply(&s, "", 0, MAXPIX, &out, &out_len), -EIO);
	assert_int_equal(pfs_view_apply(&s, NULL, 0, MAXPIX, &out, &out_len), -EIO);
	rnd[0] = 0xFF;
	rnd[1] = 0xD8;   /* a JPEG start, then noise */
	assert_int_equal(pfs_view_apply(&s, rnd, sizeof(rnd), MAXPIX, &out, &out_len), -EIO);

	/* Every truncation of a valid JPEG fails with -EIO: with the header intact,
	 * libjpeg's "premature end" warning is an error too. */
	for (unsigned long cut = 0; cut < len - 2; cut += 1 + cut / 16) {
		int rc = pfs_view_apply(&s, j, cut, MAXPIX, &out, &out_len);
		if (rc != -EIO)
			fail_msg("cut at %lu of %lu: rc %d", cut, len, rc);
		assert_null(out);
	}
	/* The header alone is enough for the size. */
	assert_int_equal(pfs_view_output_size(&s, j, 700 < len ? 700 : len, MAXPIX, &size), 0);
	assert_int_equal(pfs_view_apply(&s, j, len, MAXPIX, &out, &out_len), 0);
	assert_int_equal(size, out_len);
	free(out);
	tjFree(j);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_canonical),
		cmocka_unit_test(test_parsed_fields),
		cmocka_unit_test(test_bad_specs),
		cmocka_unit_test(test_jpeg_name),
		cmocka_unit_test(test_geometry_resize),
		cmocka_unit_test(test_geometry_crop),
		cmocka_unit_test(test_geometry_fast),
		cmocka_unit_test(test_apply_shapes),
		cmocka_unit_test(test_header_prefix),
		cmocka_unit_test(test_npy_header),
		cmocka_unit_test(test_crop_padding),
		cmocka_unit_test(test_bomb),
		cmocka_unit_test(test_garbage_and_truncation),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
