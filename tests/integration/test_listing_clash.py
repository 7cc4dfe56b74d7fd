"""A key beside a "directory" of the same name (issue 26, finding 2).

Object stores and manifests can hold a file "a" and a file "a/b"; a
filesystem can show only one "a". Before, the second entry failed the
listing ("Not a directory" from S3, "manifest line N: 'a/b' is below a
file" from a manifest) and nothing mounted. Now the directory wins, in
either order: the mount comes up, "a" is a directory whose files read back
byte-exact, the file "a" is named once in a warning and counted in
listing.skipped.

- A format-1 manifest served by nginx, the file line before and after the
  lines below it: "a" beside "a/b", "x/y" beside "x/y/z/w.bin".
- An S3 bucket (s3rver) with keys a, a/b, x/y, x/y/z/w.bin, and m beside
  the directory marker m/ (an empty directory then). s3rver lists a
  directory's keys before the key of its name ("a/b" before "a"); the old
  code skipped such a file with a warning but no count.
- The same keys in S3's own order ("a" before "a/b": UTF-8 binary order),
  from the torture harness's S3 origin (tests/torture/origin.py): the
  order that failed the mount with "Not a directory".

Run: PRESTOFS=build/prestofs /usr/bin/python3 -m pytest -q tests/integration/test_listing_clash.py
The S3 test needs s3rver (scripts/install-deps) and python3-botocore.
"""
import hashlib
import os
import random
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from helpers.compare import read_all  # noqa: E402
from helpers.manifest import MAGIC, NAME  # noqa: E402
from s3_fixtures import (ACCESS_KEY, SECRET, make_bucket, s3_client,  # noqa: E402,F401
                         s3rver)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "torture"))
from origin import VersionedOrigin  # noqa: E402

MTIME = 1700000000
# The files that are served. In the manifest case the clashing files ("a",
# "x/y") are manifest lines alone (a filesystem cannot hold them beside
# these); the S3 buckets hold them as objects (CLASH_OBJECTS).
FILES = {"a/b": 3000, "x/y/z/w.bin": (1 << 20) + 777, "keep.bin": 10}
CLASHING = ["a", "x/y"]
CLASH_OBJECTS = {"a": b"file a", "x/y": b"file x/y", "m": b"file m", "m/": b""}


def sha(b):
    return hashlib.sha256(b).hexdigest()


def _data():
    rng = random.Random(26)
    return {rel: rng.randbytes(size) for rel, size in FILES.items()}


def _check(m, data, clashing, empty_dirs=()):
    """Every clashing name is a directory, its files byte-exact; each
    left-out file named once in the log; listing.skipped counts them."""
    for rel, want in data.items():
        p = m.path / rel
        assert os.stat(p).st_size == len(want), rel
        assert sha(read_all(p)) == sha(want), rel
    for name in clashing:
        assert os.path.isdir(m.path / name), name
    assert sorted(os.listdir(m.path / "a")) == ["b"]
    assert sorted(os.listdir(m.path / "x" / "y")) == ["z"]
    for d in empty_dirs:
        assert os.path.isdir(m.path / d) and os.listdir(m.path / d) == [], d
    log = m.stderr_text(10**7).splitlines()
    for name in clashing:
        lines = [l for l in log if f"file '{name}' left out" in l]
        assert len(lines) == 1, (name, lines)
        assert "WARN" in lines[0] and "directory" in lines[0], lines
    st = m.stats()
    assert st["listing"]["skipped"] == len(clashing), st["listing"]


@pytest.mark.parametrize("order", ["file_first", "dir_first"])
def test_manifest_file_beside_directory(tmp_path, nginx, mount, order):
    data = _data()
    root = tmp_path / "served"
    for rel, b in data.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(b)
    files = [f"{rel}\t{len(b)}\t{MTIME}\t-" for rel, b in data.items()]
    clashes = [f"{name}\t5\t{MTIME}\t-" for name in CLASHING]
    lines = clashes + files if order == "file_first" else files + clashes
    (root / NAME).write_text("\n".join([MAGIC] + lines) + "\n")
    m = mount(nginx(root, autoindex=False).url, {"timeout": 5, "retries": 1})
    _check(m, data, CLASHING)


def test_s3_key_beside_directory(tmp_path, s3rver, mount):
    data = _data()
    objects = dict(data)
    objects.update(CLASH_OBJECTS)
    make_bucket(s3_client(s3rver.url), "pfs-clash", objects)
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(HOME=str(tmp_path), AWS_ACCESS_KEY_ID=ACCESS_KEY,
               AWS_SECRET_ACCESS_KEY=SECRET)
    m = mount("s3://pfs-clash/", {"endpoint": s3rver.url, "s3_path_style": True,
                                  "timeout": 5, "retries": 1}, env=env)
    _check(m, data, CLASHING + ["m"], empty_dirs=["m"])


@pytest.fixture
def s3_sorted():
    o = VersionedOrigin(flavour="s3").start()
    yield o
    o.stop()


def test_s3_key_order_file_first(s3_sorted, mount):
    data = _data()
    for name, b in list(data.items()) + list(CLASH_OBJECTS.items()):
        s3_sorted.put(name, b)
    opts = dict(s3_sorted.mount_options(), timeout=5, retries=1)
    m = mount(s3_sorted.mount_origin, opts, env=s3_sorted.mount_env(os.environ))
    _check(m, data, CLASHING + ["m"], empty_dirs=["m"])
