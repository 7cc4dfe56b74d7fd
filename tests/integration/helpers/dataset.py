"""Seeded dataset generators.

Every generator is deterministic for a given seed (contents, names and
mtimes), so a failure can be reproduced byte for byte.

make_tree()        - the integration-test tree: nested dirs, an empty dir, a
                     0-byte file, sizes at 1 MiB block boundaries, names with
                     spaces, unicode, '%', '#', '&', '+'. About 16 MB.
make_imagefolder() - a torchvision ImageFolder of JPEGs (class dirs).
make_flat()        - N files of ~size bytes for the benchmark.
make_random_files() - N files of random sizes in a few dirs, with their
                     sha256 (the warm-up and shared-tier tests).
"""
import hashlib
import io
import os
import random
from pathlib import Path

KiB = 1 << 10
MiB = 1 << 20

# Fixed mtime base (2020-09-13); each entry gets base + k seconds + some ns so
# that second-granular and nanosecond-granular comparisons both mean something.
MTIME_BASE = 1_600_000_000

# (relative path, size). Directories are implied by the paths; EMPTY_DIRS
# lists the ones that must exist without content.
TREE_FILES = [
    ("empty.bin", 0),
    ("tiny.txt", 13),
    ("one-byte", 1),
    ("blk-minus-1.bin", MiB - 1),
    ("blk-exact.bin", MiB),
    ("blk-plus-1.bin", MiB + 1),
    ("two-blocks.bin", 2 * MiB),
    ("multi.bin", 3 * MiB + 12345),
    ("big.bin", 6 * MiB + 7),
    ("a/b/c/deep.bin", 200 * KiB + 3),
    ("a/b/sibling.bin", 4 * KiB),
    ("a/top-of-a.txt", 100),
    ("dir with space/file #1.bin", 70 * KiB),
    ("dir with space/100% done.bin", 64 * KiB + 1),
    ("ünïcödé-日本/データ.bin", 33 * KiB),
    ("ünïcödé-日本/émoji-🚀.txt", 55),
    ("weird/a&b+c=d.bin", 5000),
    ("weird/hash#tag?.bin", 4097),
    ("weird/%41%2F.bin", 123),
    ("weird/semi;colon,comma'quote.bin", 321),
]
EMPTY_DIRS = ["empty-dir", "a/empty-sub"]
# Small files (0..64 KiB) in a flat dir, to exercise listing and many opens.
N_SMALL = 40


def _mtime_ns(rng, k):
    return (MTIME_BASE + 1000 * k + rng.randrange(1000)) * 10**9 + rng.randrange(10**9)


def _set_dir_mtimes(root, rng):
    """Give every directory below root a seeded mtime, deepest first (writing
    into a dir changes its mtime, so parents must come after children)."""
    dirs = [Path(dp) for dp, _, _ in os.walk(root)]
    dirs.sort(key=lambda p: len(p.parts), reverse=True)
    for k, d in enumerate(dirs):
        if d == Path(root):
            continue
        t = _mtime_ns(rng, 5000 + k)
        os.utime(d, ns=(t, t))


def random_bytes(rng, n):
    return rng.randbytes(n) if n else b""


def make_tree(root, seed=1234):
    """Creates the test tree under root (must not exist or be empty).
    Returns the list of relative file paths written."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    written = []
    files = list(TREE_FILES)
    for i in range(N_SMALL):
        files.append((f"smalls/s{i:03d}.dat", rng.randrange(0, 64 * KiB)))
    for k, (rel, size) in enumerate(files):
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(random_bytes(rng, size))
        t = _mtime_ns(rng, k)
        os.utime(p, ns=(t, t))
        written.append(rel)
    for d in EMPTY_DIRS:
        (root / d).mkdir(parents=True, exist_ok=True)
    _set_dir_mtimes(root, rng)
    return written


def _jpeg(rng, width, height, quality, pil_image):
    """A seeded JPEG: a smooth gradient plus noise (noise keeps the file big
    enough to be realistic; the gradient keeps it decodable-looking)."""
    import numpy as np
    nrng = np.random.default_rng(rng.randrange(2**32))
    y, x = np.mgrid[0:height, 0:width]
    base = np.stack([
        (x * 255 // max(width - 1, 1)),
        (y * 255 // max(height - 1, 1)),
        ((x + y) * 127 // max(width + height - 2, 1)),
    ], axis=-1).astype(np.int16)
    noise = nrng.integers(-60, 61, size=(height, width, 3), dtype=np.int16)
    arr = np.clip(base + noise, 0, 255).astype(np.uint8)
    buf = io.BytesIO()
    pil_image.fromarray(arr, "RGB").save(buf, format="JPEG", quality=quality)
    return buf.getvalue()


def make_imagefolder(root, classes=3, per_class=4, width=64, height=48,
                     quality=90, seed=7):
    """Creates root/class_XX/img_YYYY.jpg (seeded). With width=height=256 and
    quality=90 each image is roughly 100 KB. Returns the number of bytes."""
    from PIL import Image
    root = Path(root)
    rng = random.Random(seed)
    total = 0
    for c in range(classes):
        d = root / f"class_{c:02d}"
        d.mkdir(parents=True, exist_ok=True)
        for i in range(per_class):
            w = width + rng.randrange(0, max(width // 8, 1))
            h = height + rng.randrange(0, max(height // 8, 1))
            data = _jpeg(rng, w, h, quality, Image)
            p = d / f"img_{i:04d}.jpg"
            p.write_bytes(data)
            t = _mtime_ns(rng, c * 10000 + i)
            os.utime(p, ns=(t, t))
            total += len(data)
    _set_dir_mtimes(root, rng)
    return total


def make_flat(root, count=2000, size=100 * KiB, spread=0.2, per_dir=500, seed=99):
    """count files of size*(1±spread) bytes in dirs of per_dir files each.
    Returns (list of relative paths, total bytes)."""
    root = Path(root)
    rng = random.Random(seed)
    lo, hi = int(size * (1 - spread)), int(size * (1 + spread))
    paths, total = [], 0
    for i in range(count):
        rel = f"d{i // per_dir:03d}/f{i:06d}.bin"
        p = root / rel
        if i % per_dir == 0:
            p.parent.mkdir(parents=True, exist_ok=True)
        n = rng.randrange(lo, hi + 1)
        p.write_bytes(rng.randbytes(n))
        paths.append(rel)
        total += n
    return paths, total


def make_random_files(root, count, lo, hi, seed, dirs=4, prefix="f", width=4):
    """count files of lo..hi random bytes under root/d{i % dirs}/, named
    {prefix}{i} zero-padded to width digits. Returns {relative path:
    sha256 hex}."""
    rng = random.Random(seed)
    out = {}
    for i in range(count):
        rel = f"d{i % dirs}/{prefix}{i:0{width}d}.bin"
        p = Path(root) / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        data = rng.randbytes(rng.randint(lo, hi))
        p.write_bytes(data)
        out[rel] = hashlib.sha256(data).hexdigest()
    return out
