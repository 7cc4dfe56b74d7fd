"""`prestofs profile MOUNT [SUBDIR]`: PRESTO's profiler over a real mount.
The table has the 8 strategy rows with numeric columns, storage equals the
exact sizes of the view outputs, the views were read through the mount (not
the memcpy fallback), the recommendation names a strategy, seeds and weights
work, and the error cases exit non-zero with a message."""
import re
import shutil
import subprocess

import pytest
from PIL import Image

from helpers.dataset import make_imagefolder

STRATEGIES = ["raw", "decode", "resize=256", "resize=256,crop=224"]
ROW = re.compile(r"^(raw|decode|resize=256|resize=256,crop=224)\s+(plain|zstd)\s+(.*)$")
PPM_HEADER = "P6\n{} {}\n255\n"


def _profile(prestofs_bin, *args):
    return subprocess.run([str(prestofs_bin), "profile", *map(str, args)],
                          capture_output=True, text=True, timeout=120)


def _table(stdout):
    """{(strategy, stored): [KB/sample, total_MB, prep_ms, loader_ms, samples/s, score]}"""
    rows = {}
    for line in stdout.splitlines():
        m = ROW.match(line)
        if m:
            rows[(m.group(1), m.group(2))] = [float(x) for x in m.group(3).split()]
    return rows


def _resized(w, h, n=256):
    # torchvision 0.14 Resize(n): shorter side to n, long = int(n * long / short)
    if w <= h:
        return n, int(n * h / w)
    return int(n * w / h), n


@pytest.fixture
def imgs(tmp_path, mount):
    src = tmp_path / "src"
    make_imagefolder(src, classes=3, per_class=4, width=96, height=72)
    (src / "class_00" / "notes.txt").write_bytes(b"not an image\n")
    shutil.copy(src / "class_02" / "img_0000.jpg", src / "class_02" / "upper.JPEG")
    return src, mount(src, {"ram_size": "64M"})


def test_table_storage_and_recommendation(imgs, prestofs_bin):
    src, m = imgs
    r = _profile(prestofs_bin, m.path, "-n", 16)
    assert r.returncode == 0, r.stderr
    jpegs = sorted(p for p in src.rglob("*") if p.suffix.lower() in (".jpg", ".jpeg"))
    assert len(jpegs) == 13
    assert f"13 of 13 JPEGs measured" in r.stdout
    rows = _table(r.stdout)
    assert sorted(rows) == sorted((s, z) for s in STRATEGIES for z in ("plain", "zstd"))
    for key, cols in rows.items():
        assert len(cols) == 6, (key, cols)
        kb, total_mb, prep_ms, loader_ms, per_s, _score = cols
        assert kb > 0 and loader_ms > 0 and prep_ms >= 0, key
        assert total_mb == pytest.approx(kb * 13 / 1000, rel=0.01, abs=0.01), key
        assert per_s == pytest.approx(1000 / loader_ms, rel=0.01), key
    assert rows[("raw", "plain")][2] == 0  # nothing to prepare

    # Storage is exact: every file was sampled, so the mean is over all 13.
    sizes = [Image.open(p).size for p in jpegs]
    mean_kb = lambda xs: sum(xs) / len(xs) / 1000  # noqa: E731
    raw = mean_kb([p.stat().st_size for p in jpegs])
    dec = mean_kb([3 * w * h + len(PPM_HEADER.format(w, h)) for w, h in sizes])
    rs = mean_kb([3 * a * b + len(PPM_HEADER.format(a, b))
                  for a, b in (_resized(w, h) for w, h in sizes)])
    crop = mean_kb([3 * 224 * 224 + len(PPM_HEADER.format(224, 224))])
    assert rows[("raw", "plain")][0] == pytest.approx(raw, abs=0.006)
    assert rows[("decode", "plain")][0] == pytest.approx(dec, abs=0.006)
    assert rows[("decode", "plain")][0] > rows[("raw", "plain")][0]
    assert rows[("resize=256", "plain")][0] == pytest.approx(rs, abs=0.006)
    assert rows[("resize=256,crop=224", "plain")][0] == pytest.approx(crop, abs=0.006)
    # Views are cheaper to load than decoding the JPEG.
    assert rows[("decode", "plain")][3] < rows[("raw", "plain")][3]

    # The views were read through the mount, and matched the in-process bytes.
    assert "memcpy" not in r.stdout, r.stdout
    assert "unavailable" not in r.stdout, r.stdout
    rec = [line for line in r.stdout.splitlines() if line.startswith("recommend ")]
    assert len(rec) == 1, r.stdout
    mt = re.match(r"recommend (\S+) \((plain|zstd)\): [\d.]+x the throughput of raw"
                  r" at [\d.]+x its storage.*; use (\S+)", rec[0])
    assert mt and mt.group(1) in STRATEGIES, rec[0]
    if mt.group(1) != "raw":
        assert mt.group(3).startswith(f"{m.path}/.prestofs/views/{mt.group(1)}/"), rec[0]
    # Not a tty: periodic progress lines, no carriage returns.
    assert "measuring 13/13" in r.stderr and "\r" not in r.stderr


def test_subdir_seed_and_weights(imgs, prestofs_bin):
    src, m = imgs
    a = _profile(prestofs_bin, m.path, "class_01/", "-n", 2, "--seed", 5)
    b = _profile(prestofs_bin, "--seed", 5, "-n", 2, m.path, "class_01")
    assert a.returncode == 0 and b.returncode == 0, a.stderr + b.stderr
    assert "2 of 4 JPEGs measured" in a.stdout
    # Same seed, same samples: same storage.
    assert _table(a.stdout)[("raw", "plain")][0] == _table(b.stdout)[("raw", "plain")][0]
    rec = [line for line in a.stdout.splitlines() if line.startswith("recommend ")][0]
    assert f"{m.path}/" in rec and "class_01/..." in rec, rec
    # Preprocessing weighted heavily: raw (nothing to prepare) wins.
    c = _profile(prestofs_bin, m.path, "-n", 4, "--prep-weight", 100)
    assert c.returncode == 0, c.stderr
    assert "recommend raw (plain)" in c.stdout, c.stdout
    assert "0.25*storage/max - 100.00*prep/max" in c.stdout


def test_errors(tmp_path, mount, prestofs_bin):
    plain = tmp_path / "plain"
    make_imagefolder(plain, classes=1, per_class=1)
    r = _profile(prestofs_bin, plain)
    assert r.returncode == 1 and "not a prestofs mount" in r.stderr, r.stderr

    empty = tmp_path / "nojpeg"
    (empty / "a").mkdir(parents=True)
    (empty / "a" / "x.png").write_bytes(b"\x89PNG not really\n")
    m = mount(empty, name="mnt2")
    r = _profile(prestofs_bin, m.path)
    assert r.returncode == 1 and "no JPEG files" in r.stderr, r.stderr
    r = _profile(prestofs_bin, m.path, "missing")
    assert r.returncode == 1 and "missing" in r.stderr, r.stderr

    for bad in (["-n", "0"], ["--storage-weight", "x"], []):
        r = _profile(prestofs_bin, *bad, *([m.path] if bad else []))
        assert r.returncode == 2 and "usage: prestofs profile" in r.stderr, (bad, r.stderr)
