/* fuzz_spec.c - transform/spec.c: the view SPEC grammar, its canonical
 * form and the geometry it gives (fuzz_view.c covers the decoder).
 *
 * Input: the spec (up to its first NUL). Invariants: a refusal is -EINVAL
 * with a message; a parsed spec's canonical form fits PFS_VIEW_CANON_MAX,
 * parses to the same spec and to itself, and equals pfs_view_canon()'s;
 * for a few image sizes the geometry keeps every stage inside
 * PFS_VIEW_MAX_DIM, the copied block inside both the resized image and the
 * output, and work_pixels covers every buffer.
 */
#include <errno.h>
#include <string.h>

#include "fuzz.h"
#include "transform/view.h"

static void check_geometry(const struct pfs_view_spec *s, uint32_t w, uint32_t h)
{
	struct pfs_view_geom g;
	int rc = pfs_view_geometry(s, w, h, &g);

	if (rc) {
		FUZZ_CHECK(rc == -E2BIG);
		return;
	}
	FUZZ_CHECK(g.src_w == w && g.src_h == h);
	FUZZ_CHECK(g.rs_w >= 1 && g.rs_h >= 1 && g.rs_w <= PFS_VIEW_MAX_DIM &&
		   g.rs_h <= PFS_VIEW_MAX_DIM);
	FUZZ_CHECK(g.dec_w >= 1 && g.dec_h >= 1 && g.dec_w <= w && g.dec_h <= h);
	FUZZ_CHECK(!s->fast || (g.dec_w >= g.rs_w && g.dec_h >= g.rs_h) ||
		   (g.dec_w == w && g.dec_h == h));
	FUZZ_CHECK(g.resample == (g.dec_w != g.rs_w || g.dec_h != g.rs_h));
	if (s->crop_w)
		FUZZ_CHECK(g.out_w == s->crop_w && g.out_h == s->crop_h);
	else
		FUZZ_CHECK(g.out_w == g.rs_w && g.out_h == g.rs_h);
	FUZZ_CHECK(g.copy_w >= 1 && g.copy_h >= 1);
	FUZZ_CHECK((uint64_t)g.crop_x + g.copy_w <= g.rs_w);
	FUZZ_CHECK((uint64_t)g.crop_y + g.copy_h <= g.rs_h);
	FUZZ_CHECK((uint64_t)g.pad_x + g.copy_w <= g.out_w);
	FUZZ_CHECK((uint64_t)g.pad_y + g.copy_h <= g.out_h);
	FUZZ_CHECK(g.work_pixels >= (uint64_t)g.dec_w * g.dec_h);
	FUZZ_CHECK(g.work_pixels >= (uint64_t)g.out_w * g.out_h);
	FUZZ_CHECK(!g.resample || g.work_pixels >= (uint64_t)g.copy_w * g.dec_h);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint32_t sizes[][2] = {
		{1, 1}, {17, 13}, {640, 480}, {480, 640}, {65500, 1}, {1, 65500},
		{65500, 65500}, {333, 334},
	};
	struct pfs_view_spec s, s2;
	char spec[PFS_VIEW_SPEC_MAX + 8], canon[PFS_VIEW_CANON_MAX], canon2[PFS_VIEW_CANON_MAX];
	char canon3[PFS_VIEW_CANON_MAX], err[1024];
	size_t n = size < sizeof(spec) - 1 ? size : sizeof(spec) - 1;

	memcpy(spec, data, n);
	spec[n] = '\0';
	int rc = pfs_view_parse(spec, &s, canon, sizeof(canon), err, sizeof(err));
	FUZZ_CHECK(pfs_view_parse(spec, &s2, NULL, 0, NULL, 0) == rc);
	if (rc) {
		FUZZ_CHECK(rc == -EINVAL);
		FUZZ_CHECK(!strncmp(err, "bad view spec '", 15));
		return 0;
	}
	FUZZ_CHECK(!memcmp(&s, &s2, sizeof(s)));
	FUZZ_CHECK(pfs_view_canon(&s, canon3, sizeof(canon3)) == 0 && !strcmp(canon, canon3));
	FUZZ_CHECK(pfs_view_parse(canon, &s2, canon2, sizeof(canon2), err, sizeof(err)) == 0);
	FUZZ_CHECK(!strcmp(canon, canon2) && !memcmp(&s, &s2, sizeof(s)));
	FUZZ_CHECK(s.quality >= 1 && s.quality <= 100);
	FUZZ_CHECK(s.fmt == PFS_VIEW_FMT_JPEG || s.quality == PFS_VIEW_DEFAULT_QUALITY);
	FUZZ_CHECK(!s.fast || s.resize != PFS_VIEW_RESIZE_NONE);
	FUZZ_CHECK((s.crop_w == 0) == (s.crop_h == 0));
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		check_geometry(&s, sizes[i][0], sizes[i][1]);
	return 0;
}
