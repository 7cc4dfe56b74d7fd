"""Views through a real mount: MOUNT/.prestofs/views/SPEC/REL/PATH.
Bit-exact decode against PIL (RGB, grayscale, progressive, CMYK), stat
sizes equal to what a read returns, ImageFolder sees the same classes,
non-JPEGs pass through, bad JPEGs and bad specs fail cleanly, equivalent
spellings share one cache entry, order hints prefetch views."""
import errno
import json
import os
import time
from pathlib import Path

import numpy as np
import pytest
from PIL import Image


def _dataset(root):
    rng = np.random.default_rng(5)
    (root / "train" / "a").mkdir(parents=True)
    (root / "train" / "b").mkdir(parents=True)
    for i in range(3):
        arr = (rng.random((60 + 7 * i, 80 + 5 * i, 3)) * 255).astype("uint8")
        Image.fromarray(arr).save(root / "train" / "a" / f"{i}.JPEG", quality=90)
    Image.fromarray((rng.random((33, 47)) * 255).astype("uint8"), "L").save(
        root / "train" / "b" / "gray.jpg")
    Image.fromarray((rng.random((40, 50, 3)) * 255).astype("uint8")).save(
        root / "train" / "b" / "prog.jpeg", progressive=True, quality=85)
    Image.new("CMYK", (31, 23), (10, 200, 30, 40)).save(root / "train" / "b" / "cmyk.jpg")
    (root / "train" / "b" / "notes.txt").write_bytes(b"not an image\n")
    (root / "train" / "b" / "broken.jpg").write_bytes(b"\xff\xd8\xff\xe0 truncated")
    return root


@pytest.fixture
def vmount(tmp_path, mount):
    src = _dataset(tmp_path / "src")
    m = mount(src, {"ram_size": "64M"}, allow_errors=[r"view"])
    return src, m


def _jpegs(src):
    return sorted(p.relative_to(src) for p in src.rglob("*")
                  if p.suffix.lower() in (".jpg", ".jpeg") and p.name != "broken.jpg")


def test_decode_bit_exact_and_stat_size(vmount):
    src, m = vmount
    view = m.path / ".prestofs" / "views" / "decode"
    for rel in _jpegs(src):
        want = np.asarray(Image.open(src / rel).convert("RGB"))
        data = (view / rel).read_bytes()
        assert os.stat(view / rel).st_size == len(data), rel
        assert data.startswith(b"P6\n"), rel
        got = np.asarray(Image.open(view / rel))
        assert got.shape == want.shape and (got == want).all(), rel


def test_resize_crop_npy_geometry(vmount):
    src, m = vmount
    views = m.path / ".prestofs" / "views"
    rel = "train/a/1.JPEG"
    w, h = Image.open(src / rel).size
    short = 32
    want_w, want_h = (short, int(short * h / w)) if w <= h else (int(short * w / h), short)
    r = Image.open(views / f"resize={short}" / rel)
    assert r.size == (want_w, want_h)
    c = np.load(views / "crop=24,fmt=npy,resize=32" / rel)
    assert c.shape == (24, 24, 3) and c.dtype == np.uint8


def test_spellings_share_one_entry(vmount):
    src, m = vmount
    views = m.path / ".prestofs" / "views"
    rel = "train/a/0.JPEG"
    a = (views / "resize=32,crop=24" / rel).read_bytes()
    s0 = m.stats()
    b = (views / "crop=24,resize=32,fmt=ppm" / rel).read_bytes()
    s1 = m.stats()
    assert a == b
    assert s1["ram"]["misses"] == s0["ram"]["misses"], (s0["ram"], s1["ram"])


def test_imagefolder_same_classes(vmount):
    torchvision = pytest.importorskip("torchvision")
    src, m = vmount
    raw = torchvision.datasets.ImageFolder(str(src / "train"))
    view = torchvision.datasets.ImageFolder(str(m.path / ".prestofs/views/decode/train"))
    assert raw.classes == view.classes
    assert [Path(p).relative_to(src / "train") for p, _ in raw.samples] == \
        [Path(p).relative_to(m.path / ".prestofs/views/decode/train") for p, _ in view.samples]


def test_passthrough_bad_jpeg_bad_spec(vmount):
    src, m = vmount
    views = m.path / ".prestofs" / "views"
    assert (views / "decode/train/b/notes.txt").read_bytes() == b"not an image\n"
    with pytest.raises(OSError) as e:
        (views / "decode/train/b/broken.jpg").read_bytes()
    assert e.value.errno == errno.EIO
    with pytest.raises(FileNotFoundError):
        os.listdir(views / "resize=abc")
    assert "grammar" in m.stderr_text()
    # The mount keeps serving after bad input.
    assert (m.path / "train/b/notes.txt").read_bytes() == b"not an image\n"
    assert "views" not in os.listdir(m.path)


def test_decompression_bomb_refused(tmp_path, mount):
    src = tmp_path / "src"
    src.mkdir()
    # A valid tiny JPEG whose SOF0 header is patched to declare 60000x60000.
    Image.new("RGB", (8, 8)).save(src / "bomb.jpg", quality=50)
    data = bytearray((src / "bomb.jpg").read_bytes())
    i = data.find(b"\xff\xc0")
    data[i + 5:i + 9] = (60000).to_bytes(2, "big") + (60000).to_bytes(2, "big")
    (src / "bomb.jpg").write_bytes(bytes(data))
    m = mount(src, {"view_max_pixels": "1000000"}, allow_errors=[r"view"])
    with pytest.raises(OSError) as e:
        (m.path / ".prestofs/views/decode/bomb.jpg").read_bytes()
    assert e.value.errno == errno.EIO
    assert "view_max_pixels" in m.stderr_text()


def test_order_hints_prefetch_views(vmount):
    src, m = vmount
    paths = [f".prestofs/views/resize=32/{rel}" for rel in _jpegs(src)]
    with open(m.path / ".prestofs" / "order", "w") as f:
        f.write("".join(p + "\n" for p in paths))
    deadline = time.monotonic() + 30
    while m.stats()["prefetch"]["blocks"] < len(paths):
        assert time.monotonic() < deadline, m.stats()["prefetch"]
        time.sleep(0.02)
    s0 = m.stats()
    for p in paths:
        (m.path / p).read_bytes()
    s1 = m.stats()
    assert s1["ram"]["misses"] == s0["ram"]["misses"], (s0["ram"], s1["ram"])
    assert s1["prefetch"]["bytes_used"] > 0


def test_daemon_mode_threads_survive(tmp_path, prestofs_bin):
    """Without -f the daemon forks; the transform pool, the SSD writer and
    the prefetchers must exist in the process that serves the mount (a
    fork keeps only the calling thread: view reads used to hang)."""
    import subprocess
    from helpers.mount import is_mounted
    src = _dataset(tmp_path / "src")
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    ssd = tmp_path / "ssd"
    r = subprocess.run([str(prestofs_bin), str(src), str(mnt), "-o", f"ssd_dir={ssd}"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    try:
        assert is_mounted(mnt)
        out = subprocess.run(["head", "-c", "2", str(mnt / ".prestofs/views/decode/train/a/0.JPEG")],
                             capture_output=True, timeout=20)
        assert out.stdout == b"P6"
        deadline = time.monotonic() + 20
        while json.loads((mnt / ".prestofs/stats").read_text())["ssd"]["entries"] < 1:
            assert time.monotonic() < deadline, "the SSD writer never wrote"
            time.sleep(0.05)
    finally:
        subprocess.run(["fusermount3", "-u", str(mnt)], capture_output=True, timeout=30)
    deadline = time.monotonic() + 20
    while is_mounted(mnt):
        assert time.monotonic() < deadline
        time.sleep(0.05)


# ---- memory bounds (issue 26 finding 4) ------------------------------------

def _noise_jpeg(path, w, h, seed=7, quality=95):
    """A JPEG of noise: about 1.2 bytes per pixel at quality 95."""
    rng = np.random.default_rng(seed)
    arr = (rng.random((h, w, 3)) * 255).astype("uint8")
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(arr).save(path, quality=quality)
    return path


def test_view_max_source_efbig(tmp_path, mount):
    """A JPEG larger than view_max_source: EFBIG at stat and at read of
    its view, before any byte of it is fetched; the same file through the
    dataset, and a large file that is no JPEG through the views, read
    exactly. Before: the view was sized by reading the whole source."""
    src = tmp_path / "src"
    big = _noise_jpeg(src / "big.jpg", 1400, 1900)
    assert big.stat().st_size > 2 << 20
    (src / "big.bin").write_bytes(np.random.default_rng(3).bytes(3 << 20))
    _noise_jpeg(src / "small.jpg", 64, 48)
    m = mount(src, {"view_max_source": "1M", "ram_size": "16M"})
    view = m.path / ".prestofs/views/resize=32"
    for fn in (os.stat, lambda p: p.read_bytes(), lambda p: open(p, "rb").read(10)):
        with pytest.raises(OSError) as e:
            fn(view / "big.jpg")
        assert e.value.errno == errno.EFBIG
    assert m.stats()["origin"]["bytes"] == 0
    assert (view / "big.bin").read_bytes() == (src / "big.bin").read_bytes()
    assert (m.path / "big.jpg").read_bytes() == big.read_bytes()
    assert Image.open(view / "small.jpg").size == (42, 32)
