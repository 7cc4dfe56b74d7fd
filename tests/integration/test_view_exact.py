"""Exactness of views (transform/) against PIL, numpy and torchvision.

Run with Debian's interpreter:  /usr/bin/python3 -m pytest tests/integration/test_view_exact.py
The C side is the test driver transform/viewtool (built by meson); set PRESTOFS_VIEWTOOL
to its path (default: build/transform/viewtool). Needs no mount and no network.

Proved here, on a JPEG set generated with PIL (baseline, progressive, restart markers,
grayscale, 4:2:0 / 4:2:2 / 4:4:4, CMYK, odd sizes 1x1 .. 333x211 .. 640x480):
  - decode is bit-identical to PIL.Image.open(f).convert("RGB"), ppm bytes identical to
    PIL's save(f, "PPM");
  - resize=N / resize=WxH are bit-identical to torchvision Resize on the PIL image
    (Pillow BILINEAR), and in any case >= 40 dB;
  - fast is >= 25 dB against the full-quality result on photo-like images (values
    printed; a block-aligned checkerboard is reported separately as the worst case);
  - crop matches torchvision CenterCrop (padding included), npy equals numpy.save bytes;
  - fmt=jpeg equals PIL's save(quality=q) bytes for the same pixels;
  - pfs_view_output_size answers the exact size; bad inputs give EIO / E2BIG.
"""
import io
import os
import subprocess

import numpy as np
import pytest
from PIL import Image

torch = pytest.importorskip("torch")
import torchvision.transforms as T  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VIEWTOOL = os.environ.get("PRESTOFS_VIEWTOOL", os.path.join(ROOT, "build", "transform", "viewtool"))

EXIT_EIO, EXIT_E2BIG, EXIT_EAGAIN = 3, 4, 5

SIZES = [(1, 1), (17, 13), (13, 17), (333, 211), (211, 333), (640, 480), (256, 256), (300, 7)]
VARIANTS = {
    "base420": dict(mode="RGB", kw=dict()),
    "s444": dict(mode="RGB", kw=dict(subsampling=0)),
    "s422": dict(mode="RGB", kw=dict(subsampling=1)),
    "progressive": dict(mode="RGB", kw=dict(progressive=True)),
    "restart": dict(mode="RGB", kw=dict(restart_marker_blocks=1)),
    "gray": dict(mode="L", kw=dict()),
    "cmyk": dict(mode="CMYK", kw=dict()),
}


def make_image(w, h, seed):
    """Smooth gradients, edges and noise: exercises both the filter and clipping."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w]
    a = np.stack([x * 255 // max(w - 1, 1), y * 255 // max(h - 1, 1),
                  ((x // 8 + y // 8) % 2) * 200 + 20], -1).astype(np.int32)
    a += rng.integers(-30, 30, a.shape)
    return Image.fromarray(np.clip(a, 0, 255).astype(np.uint8), "RGB")


@pytest.fixture(scope="module")
def jpegs(tmp_path_factory):
    if not os.access(VIEWTOOL, os.X_OK):
        pytest.skip(f"viewtool not built at {VIEWTOOL} (set PRESTOFS_VIEWTOOL)")
    d = tmp_path_factory.mktemp("jpegs")
    out = []
    for i, (w, h) in enumerate(SIZES):
        for name, v in VARIANTS.items():
            p = d / f"{name}_{w}x{h}.jpg"
            make_image(w, h, i).convert(v["mode"]).save(p, "JPEG", quality=88, **v["kw"])
            out.append(str(p))
    return out


def run_view(spec, path, *extra, check=True):
    r = subprocess.run([VIEWTOOL, *extra, spec, path], capture_output=True, timeout=60)
    if check and r.returncode != 0:
        raise AssertionError(f"viewtool {spec} {path}: exit {r.returncode}: {r.stderr!r}")
    return r


def view_array(spec, path):
    r = run_view(spec, path)
    return np.asarray(Image.open(io.BytesIO(r.stdout)).convert("RGB")), r.stdout


def psnr(a, b):
    mse = np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2)
    return float("inf") if mse == 0 else 10 * np.log10(255.0 ** 2 / mse)


def pil_rgb(path):
    return Image.open(path).convert("RGB")


def test_decode_bit_identical(jpegs):
    for p in jpegs:
        ref = pil_rgb(p)
        got, raw = view_array("decode", p)
        assert got.shape == np.asarray(ref).shape, p
        assert np.array_equal(got, np.asarray(ref)), f"{p}: max diff " \
            f"{np.abs(got.astype(int) - np.asarray(ref)).max()}"
        buf = io.BytesIO()
        ref.save(buf, "PPM")
        assert raw == buf.getvalue(), f"{p}: ppm bytes differ from PIL's"
        size = run_view("decode", p, "-s").stdout
        assert int(size) == len(raw)


RESIZES = ["resize=256", "resize=224", "resize=7", "resize=1", "resize=100x50",
           "resize=224x224", "resize=5x300", "resize=1000x3"]


def torchvision_resize(img, spec):
    val = spec.split("=")[1]
    if "x" in val:
        w, h = (int(v) for v in val.split("x"))
        return T.Resize((h, w))(img)
    return T.Resize(int(val))(img)


def test_resize_matches_pillow(jpegs, capsys):
    total = identical = 0
    worst = float("inf")
    maxdiff = 0
    for p in jpegs:
        img = pil_rgb(p)
        for spec in RESIZES:
            ref = np.asarray(torchvision_resize(img, spec))
            got, raw = view_array(spec, p)
            assert got.shape == ref.shape, (p, spec)
            total += 1
            identical += np.array_equal(got, ref)
            worst = min(worst, psnr(got, ref))
            maxdiff = max(maxdiff, int(np.abs(got.astype(int) - ref).max()))
            assert int(run_view(spec, p, "-s").stdout) == len(raw)
    with capsys.disabled():
        print(f"\nresize: {identical}/{total} bit-identical to PIL, max diff {maxdiff}, "
              f"min PSNR {worst:.1f} dB")
    assert worst >= 40.0
    assert identical == total


def make_photo(w, h, seed):
    """Photo-like content: smooth colour fields (bicubic-upscaled noise), a hard-edged
    disc and mild sensor noise. `fast` is judged on these: DCT scaling is a box filter,
    so it departs from Pillow's triangle filter most on energy near the block frequency,
    which real photos have little of (see test_fast_worst_case for the opposite)."""
    rng = np.random.default_rng(seed)
    small = rng.integers(0, 256, (max(h // 24, 2), max(w // 24, 2), 3), dtype=np.uint8)
    a = np.asarray(Image.fromarray(small).resize((w, h), Image.BICUBIC)).astype(np.int32)
    y, x = np.mgrid[0:h, 0:w]
    a += ((((x - w / 3) ** 2 + (y - h / 2) ** 2) < (min(w, h) / 4) ** 2) * 60)[..., None]
    a += rng.normal(0, 6, a.shape).astype(np.int32)
    return Image.fromarray(np.clip(a, 0, 255).astype(np.uint8), "RGB")


@pytest.fixture(scope="module")
def photos(tmp_path_factory):
    if not os.access(VIEWTOOL, os.X_OK):
        pytest.skip(f"viewtool not built at {VIEWTOOL} (set PRESTOFS_VIEWTOOL)")
    d = tmp_path_factory.mktemp("photos")
    out = []
    for i, (w, h) in enumerate([(640, 480), (500, 375), (1024, 768), (333, 211), (2000, 1500)]):
        for name, mode, kw in [("s420", "RGB", {}), ("s444", "RGB", dict(subsampling=0)),
                               ("prog", "RGB", dict(progressive=True)), ("gray", "L", {}),
                               ("cmyk", "CMYK", {})]:
            p = d / f"{name}_{w}x{h}.jpg"
            make_photo(w, h, i).convert(mode).save(p, "JPEG", quality=90, **kw)
            out.append(str(p))
    return out


FAST_SPECS = [("resize=256", T.Resize(256)), ("resize=224x224", T.Resize((224, 224))),
              ("resize=160", T.Resize(160)), ("resize=64", T.Resize(64)),
              ("resize=256,crop=224", T.Compose([T.Resize(256), T.CenterCrop(224)]))]


def fast_psnrs(files, specs):
    vals = []
    for p in files:
        img = pil_rgb(p)
        for spec, tf in specs:
            ref = np.asarray(tf(img))
            s = spec.split(",")
            got, _ = view_array(",".join([s[0], "fast"] + s[1:]), p)
            assert got.shape == ref.shape, (p, spec)
            vals.append((psnr(got, ref), spec, os.path.basename(p)))
    vals.sort()
    return vals


def test_fast_psnr(photos, capsys):
    vals = fast_psnrs(photos, FAST_SPECS)
    finite = [v for v, _, _ in vals if v != float("inf")]
    with capsys.disabled():
        print(f"\nfast (photo-like): {len(vals)} views, PSNR vs full-quality PIL resize: "
              f"min {vals[0][0]:.1f} dB ({vals[0][1]} {vals[0][2]}), "
              f"median {np.median(finite):.1f} dB, {len(vals) - len(finite)} identical")
    assert vals[0][0] >= 25.0


def test_fast_worst_case(jpegs, capsys):
    """The synthetic set has an 8-pixel checkerboard aligned with the DCT blocks plus
    uniform noise: the worst case for DCT scaling. Reported, bounded loosely."""
    big = [p for p in jpegs if min(Image.open(p).size) >= 64]
    vals = fast_psnrs(big, [("resize=64", T.Resize(64)), ("resize=32", T.Resize(32))])
    with capsys.disabled():
        print(f"\nfast (block-aligned checkerboard + noise): min {vals[0][0]:.1f} dB "
              f"({vals[0][1]} {vals[0][2]}), median {np.median([v for v, _, _ in vals]):.1f} dB")
    assert vals[0][0] >= 12.0


def test_crop_matches_torchvision(jpegs):
    specs = [("resize=256,crop=224", T.Compose([T.Resize(256), T.CenterCrop(224)])),
             ("crop=5", T.CenterCrop(5)),
             ("crop=400x9", T.CenterCrop((9, 400))),          # pads horizontally
             ("crop=3x500", T.CenterCrop((500, 3))),
             ("resize=30x20,crop=29x21", T.Compose([T.Resize((20, 30)), T.CenterCrop((21, 29))]))]
    for p in jpegs:
        img = pil_rgb(p)
        for spec, tf in specs:
            ref = np.asarray(tf(img))
            got, raw = view_array(spec, p)
            assert got.shape == ref.shape, (p, spec)
            assert np.array_equal(got, ref), (p, spec)
            assert int(run_view(spec, p, "-s").stdout) == len(raw)


def test_npy_equals_numpy_save(jpegs):
    for p in jpegs[::3]:
        img = pil_rgb(p)
        for spec, tf in [("fmt=npy", None), ("resize=256,crop=224,fmt=npy",
                                              T.Compose([T.Resize(256), T.CenterCrop(224)]))]:
            arr = np.asarray(tf(img) if tf else img)
            buf = io.BytesIO()
            np.save(buf, arr)
            raw = run_view(spec, p).stdout
            assert raw == buf.getvalue(), (p, spec)
            assert np.array_equal(np.load(io.BytesIO(raw)), arr)
            assert int(run_view(spec, p, "-s").stdout) == len(raw)


def test_jpeg_output(jpegs):
    for p in jpegs[::4]:
        for q in (90, 50):
            spec = "resize=64,fmt=jpeg" + ("" if q == 90 else f",q={q}")
            raw = run_view(spec, p).stdout
            pix = Image.fromarray(np.asarray(T.Resize(64)(pil_rgb(p))))
            buf = io.BytesIO()
            pix.save(buf, "JPEG", quality=q)
            assert raw == buf.getvalue(), (p, spec)
            assert run_view(spec, p, "-s", check=False).returncode == EXIT_EAGAIN


def test_bad_inputs(tmp_path, jpegs):
    good = open(jpegs[3], "rb").read()
    cases = {"random": np.random.default_rng(0).integers(0, 256, 5000, dtype=np.uint8).tobytes(),
             "empty": b"", "truncated": good[: len(good) // 2], "soi_only": good[:2],
             "no_eoi": good[:-2]}
    for name, data in cases.items():
        p = tmp_path / f"{name}.jpg"
        p.write_bytes(data)
        r = run_view("resize=16", str(p), check=False)
        assert r.returncode == EXIT_EIO, (name, r.returncode, r.stderr)
        assert r.stdout == b""
    # A tiny file declaring 60000x60000.
    img = Image.new("RGB", (16, 16), (1, 2, 3))
    buf = io.BytesIO()
    img.save(buf, "JPEG")
    data = bytearray(buf.getvalue())
    sof = data.index(b"\xff\xc0")
    data[sof + 5: sof + 9] = (60000).to_bytes(2, "big") * 2
    p = tmp_path / "bomb.jpg"
    p.write_bytes(bytes(data))
    for spec in ("decode", "resize=16,fast"):
        r = run_view(spec, str(p), check=False)
        assert r.returncode == EXIT_E2BIG, r.stderr
        assert run_view(spec, str(p), "-s", check=False).returncode == EXIT_E2BIG


def test_canonical_spellings():
    if not os.access(VIEWTOOL, os.X_OK):
        pytest.skip(f"viewtool not built at {VIEWTOOL} (set PRESTOFS_VIEWTOOL)")
    same = ["resize=256,crop=224,fmt=npy", "fmt=npy,crop=224x224,resize=0256",
            "crop=224,decode,resize=256,fmt=npy"]
    outs = {subprocess.run([VIEWTOOL, "-c", s], capture_output=True, check=True).stdout
            for s in same}
    assert outs == {b"resize=256,crop=224,fmt=npy\n"}
    r = subprocess.run([VIEWTOOL, "-c", "resize=256,q=80"], capture_output=True)
    assert r.returncode == 2 and b"grammar" in r.stderr
