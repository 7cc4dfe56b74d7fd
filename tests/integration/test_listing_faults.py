"""Listings that cannot be mounted as they are (issue 17, part 1b).

- A size no origin can hold (above 2^62) is refused when the listing is
  loaded: the mount fails, exits non-zero, and the message names the
  manifest line, or the file for other listings (here an HTTP index).
- In an HTTP autoindex without exact sizes, one file whose HEAD gives no
  usable answer (no Content-Length, 500, 404) is retried, then left out
  with one warning naming it and listing.skipped = 1; the mount comes up
  and every other file reads back byte-exact. When most HEADs fail, the
  mount fails instead.
"""
import hashlib
import os
import random
import subprocess

import pytest

from helpers.compare import read_all
from helpers.faultyindex import FaultyIndex
from helpers.mount import Mount, MountError

RETRIES = 2
OPTS = {"retries": RETRIES, "timeout": 3}

FILES = {
    "a.bin": 3000,
    "d/bad.bin": 5000,
    "d/good.bin": (1 << 20) + 12345,   # two blocks
    "d/sub/c.txt": 10,
    "e.bin": 100 * 1024,
}


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "src"
    rng = random.Random(17)
    for rel, size in FILES.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(rng.randbytes(size))
    return root


@pytest.fixture
def faulty():
    servers = []

    def start(root, faults=None):
        s = FaultyIndex(root, faults).start()
        servers.append(s)
        return s

    yield start
    for s in servers:
        s.stop()


def sha(b):
    return hashlib.sha256(b).hexdigest()


def expect_mount_failure(origin, mnt, options, binary):
    """Starts a mount that must fail; unmounts it if it came up anyway."""
    m = Mount(origin, mnt, options, binary=binary, ready_timeout=30)
    try:
        with pytest.raises(MountError) as ei:
            m.start()
    finally:
        m.stop()
    assert m.returncode not in (None, 0), ei.value
    assert not os.path.ismount(mnt)
    return m.stderr_text()


# -- sizes above 2^62 ----------------------------------------------------------

@pytest.mark.parametrize("size", [2**63, 2**64 - 1])
def test_manifest_size_too_large_fails_mount(tree, tmp_path, prestofs_bin, size):
    manifest = tmp_path / "list.manifest"
    manifest.write_text("#prestofs-manifest 1\n"
                        "a.bin\t3000\t1700000000\t-\n"
                        f"huge.bin\t{size}\t1700000000\t-\n")
    want = f"manifest line 3: size {size} too large (max 2^62)"
    # Foreground.
    log = expect_mount_failure(tree, tmp_path / "mnt", {"manifest": manifest}, prestofs_bin)
    assert want in log, log
    # Daemon mode: the parent reports the child's failure, with the message.
    r = subprocess.run([str(prestofs_bin), str(tree), str(tmp_path / "mnt"),
                        "-o", f"manifest={manifest}"],
                       capture_output=True, text=True, timeout=60)
    if os.path.ismount(tmp_path / "mnt"):   # came up after all: leave nothing
        subprocess.run(["fusermount3", "-u", str(tmp_path / "mnt")], timeout=30)
    assert r.returncode != 0, r
    assert want in r.stderr, r.stderr
    assert not os.path.ismount(tmp_path / "mnt")


def test_index_size_too_large_fails_mount(tree, tmp_path, faulty, prestofs_bin):
    """The generic listing path (here an HTTP index with an exact size)."""
    (tree / "huge.bin").write_bytes(b"x")
    srv = faulty(tree, {"huge.bin": "size:9223372036854775808"})
    log = expect_mount_failure(srv.url, tmp_path / "mnt", OPTS, prestofs_bin)
    assert "'huge.bin': size 9223372036854775808 too large (max 2^62)" in log, log
    assert srv.count("HEAD", "huge.bin") == 0   # an exact size: never HEADed


# -- one bad HEAD --------------------------------------------------------------

@pytest.mark.parametrize("fault", ["head-no-length", "head-500", "head-404"])
def test_bad_head_leaves_one_file_out(tree, faulty, mount, fault):
    srv = faulty(tree, {"d/bad.bin": fault})
    m = mount(srv.url, OPTS)
    # The file is absent; everything else is there and byte-exact.
    assert not os.path.exists(m.path / "d" / "bad.bin")
    assert sorted(os.listdir(m.path / "d")) == ["good.bin", "sub"]
    for rel in FILES:
        if rel == "d/bad.bin":
            continue
        assert os.stat(m.path / rel).st_size == FILES[rel], rel
        assert sha(read_all(m.path / rel)) == sha((tree / rel).read_bytes()), rel
    st = m.stats()
    assert st["listing"]["skipped"] == 1, st
    # Retried like any request, except a 404 (a final answer).
    want = 1 if fault == "head-404" else RETRIES + 1
    assert srv.count("HEAD", "d/bad.bin") == want
    for rel in FILES:
        if rel != "d/bad.bin":
            assert srv.count("HEAD", rel) == 1, rel
    lines = [l for l in m.stderr_text(10**7).splitlines()
             if "d/bad.bin" in l and "left out of the mount" in l]
    assert len(lines) == 1, lines
    assert "WARN" in lines[0], lines


def test_most_heads_failing_fails_mount(tree, tmp_path, faulty, prestofs_bin):
    """More than half of the HEADs fail: not a bad file but a bad server."""
    srv = faulty(tree, {"a.bin": "head-500", "d/bad.bin": "head-no-length",
                        "e.bin": "head-404"})
    log = expect_mount_failure(srv.url, tmp_path / "mnt", OPTS, prestofs_bin)
    assert "3 of 5 HEAD requests gave no usable size" in log, log
