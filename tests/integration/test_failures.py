"""Origin failures: a dead, stalled or restarted origin gives EIO within the
documented bound (never a hang, never wrong bytes) and recovers without a
remount; a file changed on the origin is never served as old+new bytes.

Documented bound before EIO: (retries+1)*timeout + backoff (<= 2 s per retry).
"""
import errno
import os
import random
import threading
import time

import pytest

from helpers.compare import read_all
from helpers.manifest import served_copy
from helpers.mount import Mount, MountError
from helpers.nginx import free_port

MiB = 1 << 20
TIMEOUT, RETRIES = 1, 2
# Demand reads only: background prefetch would add requests and in-flight
# fetches to the counters these tests check.
OPTS = {"timeout": TIMEOUT, "retries": RETRIES, "prefetch": "off"}
SLACK = 2.0  # scheduling, connection setup, the FUSE round trip
BOUND = (RETRIES + 1) * TIMEOUT + 2 * RETRIES + SLACK


def _expect_eio(res, what):
    if isinstance(res, bytes):
        pytest.fail(f"{what}: got {len(res)} bytes from a dead origin (expected EIO)")
    assert isinstance(res, OSError), f"{what}: {res!r}"
    assert res.errno == errno.EIO, f"{what}: {res!r} (expected EIO)"


def test_origin_killed_then_restarted(dataset, tmp_path, nginx, mount, run_bounded):
    src = served_copy(dataset, tmp_path)
    ng = nginx(src, autoindex=False)
    m = mount(ng.url, OPTS)
    m.allow_errors(r".*")  # failed fetches are logged at ERROR: expected here
    warm = (src / "blk-exact.bin").read_bytes()
    cold = (src / "multi.bin").read_bytes()
    assert read_all(m.path / "blk-exact.bin") == warm

    ng.kill()
    s0 = m.stats()
    res, elapsed = run_bounded(lambda: read_all(m.path / "multi.bin"), BOUND + 15, m.path)
    _expect_eio(res, "cold read after the origin died")
    assert elapsed <= BOUND, f"EIO after {elapsed:.1f}s, documented bound {BOUND:.1f}s"
    s1 = m.stats()
    assert s1["origin"]["errors"] > s0["origin"]["errors"], (s0, s1)
    assert s1["origin"]["retries"] >= s0["origin"]["retries"] + RETRIES, (s0, s1)
    assert s1["origin"]["inflight"] == 0, s1

    # Already-read data: served from cache, or EIO; never something else.
    res, _ = run_bounded(lambda: read_all(m.path / "blk-exact.bin"), BOUND + 15, m.path)
    if not isinstance(res, bytes):
        _expect_eio(res, "warm re-read")
    else:
        assert res == warm

    ng.start()  # same port
    res, elapsed = run_bounded(lambda: read_all(m.path / "multi.bin"), BOUND + 15, m.path)
    assert isinstance(res, bytes), f"no recovery after the origin came back: {res!r}"
    assert res == cold


def test_origin_killed_mid_transfer(dataset, tmp_path, nginx, delay_proxy, mount, run_bounded):
    """nginx dies while a 6 MiB read is on the wire (200 ms away): the read
    gives all the right bytes (if they had all left nginx) or EIO."""
    src = served_copy(dataset, tmp_path)
    ng = nginx(src, autoindex=False)
    px = delay_proxy(ng.port, delay_ms=100)
    m = mount(px.url, OPTS)
    m.allow_errors(r".*")
    want = (src / "big.bin").read_bytes()
    box = {}

    def reader():
        try:
            box["r"] = read_all(m.path / "big.bin")
        except OSError as e:
            box["r"] = e

    t = threading.Thread(target=reader, daemon=True)
    t.start()
    time.sleep(0.15)  # trigger point: the first requests are in flight
    ng.kill()
    t.join(BOUND + 15 + 2)
    assert not t.is_alive(), "read hung after the origin died"
    if isinstance(box["r"], bytes):
        assert box["r"] == want, "wrong bytes after the origin died"
    else:
        _expect_eio(box["r"], "read interrupted by origin death")
    ng.start()
    res, _ = run_bounded(lambda: read_all(m.path / "big.bin"), BOUND + 15, m.path)
    assert res == want


def test_origin_stalls(dataset, tmp_path, nginx, delay_proxy, mount, run_bounded):
    """The origin accepts but never answers: each attempt must time out."""
    src = served_copy(dataset, tmp_path)
    ng = nginx(src, autoindex=False)
    px = delay_proxy(ng.port, delay_ms=1)
    m = mount(px.url, OPTS)
    m.allow_errors(r".*")
    assert read_all(m.path / "tiny.txt") == (src / "tiny.txt").read_bytes()

    px.blackhole(True)
    s0 = m.stats()
    res, elapsed = run_bounded(lambda: read_all(m.path / "two-blocks.bin"), BOUND + 15, m.path)
    _expect_eio(res, "read from a stalled origin")
    assert elapsed <= BOUND, f"EIO after {elapsed:.1f}s, documented bound {BOUND:.1f}s"
    assert elapsed >= TIMEOUT * 0.9, f"EIO after {elapsed:.2f}s: no attempt waited for timeout"
    s1 = m.stats()
    assert s1["origin"]["retries"] - s0["origin"]["retries"] >= RETRIES, (s0, s1)

    px.blackhole(False)
    res, _ = run_bounded(lambda: read_all(m.path / "two-blocks.bin"), BOUND + 15, m.path)
    assert res == (src / "two-blocks.bin").read_bytes(), f"no recovery: {res!r}"[:200]


def test_mount_with_dead_origin_fails(tmp_path, prestofs_bin):
    """Nothing listens: the mount gives up (non-zero exit) within the bound."""
    port = free_port()
    opts = {"timeout": TIMEOUT, "retries": 1}
    bound = 2 * TIMEOUT + 2 + SLACK
    m = Mount(f"http://127.0.0.1:{port}/", tmp_path / "mnt", opts, binary=prestofs_bin,
              ready_timeout=bound + 15)
    t0 = time.monotonic()
    with pytest.raises(MountError) as ei:
        m.start()
        m.stop()
    elapsed = time.monotonic() - t0
    assert "exited with" in str(ei.value), ei.value
    assert elapsed <= bound, f"gave up after {elapsed:.1f}s (bound {bound:.1f}s)"


@pytest.mark.parametrize("kind", ["local", "http"])
def test_file_deleted_on_origin(dataset, tmp_path, nginx, mount, run_bounded, kind):
    src = served_copy(dataset, tmp_path)
    origin = src if kind == "local" else nginx(src, autoindex=False).url
    m = mount(origin, OPTS)
    m.allow_errors(r".*")
    os.unlink(src / "multi.bin")
    res, elapsed = run_bounded(lambda: read_all(m.path / "multi.bin"), BOUND + 15, m.path)
    assert isinstance(res, OSError), f"read a deleted file: got {type(res)}"
    assert res.errno in (errno.EIO, errno.ENOENT, errno.ESTALE), res
    assert elapsed <= BOUND


# --- a file changed on the origin while mounted -----------------------------

def _replace(path, how, seed):
    """Same size, different bytes, mtime +100 s (so every validator changes)."""
    st = path.stat()
    new = random.Random(seed).randbytes(st.st_size)
    t = st.st_mtime_ns + 100 * 10**9
    if how == "rename":
        tmp = path.with_name(".tmp-" + path.name)
        tmp.write_bytes(new)
        os.utime(tmp, ns=(t, t))
        os.rename(tmp, path)
    else:
        with open(path, "r+b") as f:
            f.write(new)
        os.utime(path, ns=(t, t))
    return new


def _classify(res, old, new, off, length):
    if isinstance(res, OSError):
        return f"errno {errno.errorcode.get(res.errno, res.errno)}"
    want_len = max(0, min(length, len(old) - off))
    if len(res) > want_len or (want_len and not res):
        return f"bad length {len(res)}/{want_len}"
    # A short read that stops where an error starts is POSIX-correct (the
    # kernel returns the pages it has before the failing one); its bytes
    # still must all come from one version.
    if res == old[off:off + len(res)]:
        return "old"
    if res == new[off:off + len(res)]:
        return "new"
    return "mixed"


@pytest.mark.parametrize("kind", ["local", "http"])
@pytest.mark.parametrize("how", ["rename", "inplace"])
def test_changed_file_never_mixed(dataset, tmp_path, nginx, mount, run_bounded, kind, how):
    src = served_copy(dataset, tmp_path)
    origin = src if kind == "local" else nginx(src, autoindex=False).url
    m = mount(origin, {"timeout": TIMEOUT, "retries": 1})
    m.allow_errors(r".*")
    rel = "multi.bin"
    old = (src / rel).read_bytes()
    fd = os.open(m.path / rel, os.O_RDONLY)
    try:
        assert os.pread(fd, 4096, 0) == old[:4096]
        new = _replace(src / rel, how, seed=4242)
        seen = {}
        for off in (MiB, 2 * MiB + 5, 3 * MiB, 0, 100, MiB - 10):
            res, _ = run_bounded(lambda o=off: os.pread(fd, 4096, o), BOUND + 15, m.path)
            seen[off] = _classify(res, old, new, off, 4096)
    finally:
        os.close(fd)
    bad = {o: c for o, c in seen.items() if c not in ("old", "errno EIO")}
    assert not bad, f"after the origin changed, one open file served: {seen}"

    # A fresh open: all old, all new, or EIO; never a mix.
    res, _ = run_bounded(lambda: read_all(m.path / rel), BOUND + 15, m.path)
    c = _classify(res, old, new, 0, len(old))
    assert c in ("old", "new", "errno EIO"), f"fresh read after change: {c}"
