"""The tiered cache (RAM + persistent SSD tier) and the config file, mounted
for real: a remount comes up and serves everything from the SSD tier with
the origin stopped; kill -9 mid-fill never leaves a wrong byte; a corrupted
SSD block is detected, dropped and refetched; one ssd_dir, one mount; the
config file and its errors.
"""
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from helpers.compare import compare_bytes, compare_tree, list_files, read_all
from helpers.manifest import served_copy
from helpers.mount import Mount, MountError, abort_connection, is_mounted


def _opts(ssd, **kw):
    o = {"ssd_dir": str(ssd), "timeout": 1, "retries": 1, "ram_size": "4M",
         "block_size": "256K"}
    o.update(kw)
    return o


def test_remount_with_origin_down_serves_from_ssd(dataset, tmp_path, nginx, mount):
    src = served_copy(dataset, tmp_path)
    ssd = tmp_path / "ssd"
    ng = nginx(src, autoindex=False)
    m = mount(ng.url, _opts(ssd), name="first")
    compare_bytes(src, m.path, ranges_per_file=2)
    first = m.stats()
    assert first["origin"]["requests"] > 0
    m.check_stop()  # unmount waits for pending SSD writes

    ng.kill()
    t0 = time.monotonic()
    # The failed listing attempt is logged at ERROR by the backend.
    m2 = mount(ng.url, _opts(ssd), name="second", allow_errors=[r"Input/output error"])
    took = time.monotonic() - t0
    # One attempt (timeout=1) at the listing, then the saved one.
    assert took < 8, f"remount with the origin down took {took:.1f}s"
    assert "saved in" in m2.stderr_text(), m2.stderr_text()
    compare_tree(src, m2.path, mtime="s")
    compare_bytes(src, m2.path, ranges_per_file=4, seed=7)
    s = m2.stats()
    assert s["ssd"]["hits"] > 0, s
    assert s["origin"]["bytes"] == 0, s  # not one byte from the (dead) origin
    assert s["ssd"]["checksum_failures"] == 0, s


def test_kill9_mid_fill_then_remount_is_exact(dataset, tmp_path, nginx, prestofs_bin, mount):
    src = served_copy(dataset, tmp_path)
    ssd = tmp_path / "ssd"
    ng = nginx(src, autoindex=False)
    mnt = tmp_path / "victim"
    victim = Mount(ng.url, mnt, _opts(ssd), binary=prestofs_bin)
    victim.start()
    files = list_files(src)
    stop = threading.Event()

    def reader():
        for rel in files:
            if stop.is_set():
                return
            try:
                read_all(mnt / rel)
            except OSError:
                return

    t = threading.Thread(target=reader, daemon=True)
    t.start()
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # until some blocks reached the SSD tier
            st = victim.stats()
            if st["ssd"]["entries"] + st["ssd"]["queued"] >= 3:
                break
            time.sleep(0.01)
    finally:  # the victim is not the fixture's: never leave it behind
        os.killpg(victim.proc.pid, signal.SIGKILL)
        victim.proc.wait(10)
        stop.set()
        abort_connection(mnt)
        subprocess.run(["fusermount3", "-u", "-z", str(mnt)], capture_output=True, timeout=30)
        t.join(30)
    assert not is_mounted(mnt)

    m = mount(ng.url, _opts(ssd), name="after")
    compare_bytes(src, m.path, ranges_per_file=4, seed=3)
    s = m.stats()
    assert s["ssd"]["checksum_failures"] == 0, s


def test_corrupt_ssd_block_is_dropped_and_refetched(dataset, tmp_path, nginx, mount):
    src = served_copy(dataset, tmp_path)
    ssd = tmp_path / "ssd"
    ng = nginx(src, autoindex=False)
    m = mount(ng.url, _opts(ssd, ssd_compress="off"), name="fill")
    compare_bytes(src, m.path, ranges_per_file=0)
    m.check_stop()
    # Flip a byte in every 4 KiB page of every data file the tier manages
    # (not its LMDB index, lock or saved listing): entries start on page
    # boundaries, so every stored block is hit whatever the layout.
    flipped = 0
    for p in sorted(ssd.rglob("*")):
        if not p.is_file() or ".mdb" in p.name or p.name in ("lock",) \
                or "listing" in p.name or p.stat().st_size < 4096:
            continue
        with open(p, "r+b") as f:
            for off in range(100, p.stat().st_size, 4096):
                f.seek(off)
                b = f.read(1)
                if not b:
                    break
                f.seek(off)
                f.write(bytes([b[0] ^ 0xFF]))
        flipped += 1
    assert flipped > 0, "no SSD data file found to corrupt"
    m2 = mount(ng.url, _opts(ssd, ssd_compress="off"), name="check")
    compare_bytes(src, m2.path, ranges_per_file=0)
    s = m2.stats()
    assert s["ssd"]["checksum_failures"] >= 1, s
    assert s["origin"]["bytes"] > 0, s  # the dropped blocks were refetched


def test_ssd_dir_cannot_be_shared(dataset, tmp_path, mount, prestofs_bin):
    ssd = tmp_path / "ssd"
    mount(dataset, _opts(ssd), name="a")
    second = Mount(dataset, tmp_path / "b", _opts(ssd), binary=prestofs_bin)
    with pytest.raises(MountError) as e:
        second.start()
    assert str(ssd) in str(e.value), str(e.value)


def test_config_file_and_o_precedence(dataset, tmp_path, mount):
    conf = tmp_path / "p.conf"
    conf.write_text("# a comment\n[origin]\ntimeout = 3 ; seconds\n"
                    "[cache]\nram_size = 8M\nblock_size = 64K\npolicy = minio\n")
    m = mount(dataset, {"config": str(conf), "block_size": "128K"})
    compare_bytes(dataset, m.path, ranges_per_file=2)


@pytest.mark.parametrize("text,needle", [
    ("[cache]\nram_sise = 8M\n", ":2:"),
    ("[cache]\nram_size = 8Q\n", "ram_size"),
    ("[nosuch]\nx = 1\n", "nosuch"),
])
def test_bad_config_fails_before_mounting(dataset, tmp_path, prestofs_bin, text, needle):
    conf = tmp_path / "bad.conf"
    conf.write_text(text)
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    r = subprocess.run([str(prestofs_bin), "-f", str(dataset), str(mnt), "-o",
                        f"config={conf}"], capture_output=True, text=True, timeout=30)
    assert r.returncode != 0
    assert str(conf) in r.stderr and needle in r.stderr, r.stderr
    assert not is_mounted(mnt)


# Block sizes before and after a remount on the same ssd_dir. Each pair has
# a file whose last block under the second size is as long as a whole block
# under the first (1.5 x the second size, or the first's), so an entry keyed
# by block index alone passes the length check with another byte range.
LAYOUT_CHANGES = [("512K", "1M"), ("1M", "512K"), ("1M", "256K"), ("2M", "1M"),
                  ("256K", "512K")]


@pytest.mark.parametrize("first,second", LAYOUT_CHANGES)
def test_remount_with_another_block_size_is_exact(tmp_path, nginx, mount, first, second):
    """An SSD entry names a byte range, not a block index: after a remount
    with another block_size every byte is the origin's (before the fix,
    512K -> 1M served bytes [1M, 1.5M) of a 1.5 MiB file from offset 512K,
    with every checksum passing)."""
    import hashlib
    import random
    KiB = 1024
    src = tmp_path / "src"
    src.mkdir()
    rng = random.Random(f"{first}-{second}")
    for kib in (384, 768, 1536, 3072, 1000):
        (src / f"f{kib}.bin").write_bytes(rng.randbytes(kib * KiB))
    want = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in src.iterdir()}
    srv = served_copy(src, tmp_path)
    ng = nginx(srv, autoindex=False)
    ssd = tmp_path / "ssd"
    for i, bs in enumerate((first, second)):
        m = mount(ng.url, {"ssd_dir": str(ssd), "block_size": bs, "prefetch": "off"},
                  name=f"m{i}")
        got = {n: hashlib.sha256((m.path / n).read_bytes()).hexdigest() for n in want}
        s = m.stats()["ssd"]
        m.check_stop()  # unmount waits for the SSD writes
        bad = sorted(n for n in want if got[n] != want[n])
        assert not bad, f"block_size {first} -> {bs}: wrong bytes in {bad} ({s})"
        if i == 1:
            assert s["checksum_failures"] == 0, s
            assert s["hits"] == 0, f"an entry of block_size {first} was served under {bs}: {s}"


def test_layout_change_sweeps_old_entries(tmp_path, nginx, mount):
    """The epoch policy admits until full and never replaces: entries of an
    old block_size would hold the budget forever. A remount with another
    block_size sweeps them in the background (ssd.swept), so the new
    layout's blocks are stored and a third mount serves every byte from the
    SSD tier (before: the new puts were dropped, the budget full of
    entries no mount could use)."""
    import hashlib
    import random
    KiB = 1024
    src = tmp_path / "src"
    src.mkdir()
    rng = random.Random(2611)
    for kib in (384, 768, 1536, 3072, 1000):
        (src / f"f{kib}.bin").write_bytes(rng.randbytes(kib * KiB))
    want = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in src.iterdir()}
    ng = nginx(served_copy(src, tmp_path), autoindex=False)
    ssd = tmp_path / "ssd"
    opts = {"ssd_dir": str(ssd), "ssd_size": "8M", "prefetch": "off"}  # policy: epoch

    def read_all_exact(m):
        for n in want:
            assert hashlib.sha256((m.path / n).read_bytes()).hexdigest() == want[n], n

    m = mount(ng.url, dict(opts, block_size="512K"), name="m0")
    read_all_exact(m)
    first = m.stats()["ssd"]
    m.check_stop()
    m = mount(ng.url, dict(opts, block_size="1M"), name="m1")
    deadline = time.monotonic() + 10
    while m.stats()["ssd"]["sweep_pending"] and time.monotonic() < deadline:
        time.sleep(0.05)
    s = m.stats()["ssd"]
    assert s["sweep_pending"] == 0 and s["swept"] >= 8, (first, s)  # 14 blocks of 512K
    assert s["entries"] == 0, s
    read_all_exact(m)
    m.check_stop()
    m = mount(ng.url, dict(opts, block_size="1M"), name="m2")
    read_all_exact(m)
    s, o = m.stats()["ssd"], m.stats()["origin"]
    assert s["swept"] == 0 and s["dropped"] == 0, s
    # Every block from the SSD tier (8 blocks of 1M); the origin sent only
    # the listing.
    assert s["hits"] == 8 and o["bytes"] < 4096, (o, s)
