"""`prestofs warm` (issue 15): fills the cache through the daemon's control
file, never past a tier's room, and says so in its exit status.

- A warm-up of everything, then the origin stopped: every byte still reads
  exact (sha256), the warm-up served no data through FUSE and counted no
  demand read; `--check` gives the bytes the stats file gives per tier.
- Over budget: the RAM tier takes only free room (a job's resident blocks
  stay, nothing is evicted), the SSD tier stops at its budget (no eviction);
  exit status 3, the bytes that did not fit are reported, and `--check`
  agrees with the warm-up's own numbers.
- The progress bar through a pty; nothing but one line without a terminal.
- SIGINT cancels the job in the daemon (exit 130), and the mount goes on.
- Lists (`--from FILE`, `-`), duplicates, absolute paths, unknown paths,
  bad arguments; a file the origin fails is counted, the rest is cached.
- Readers of the same files while a warm-up runs get exact bytes.
Every wait is bounded; no verdict depends on timing.
"""
import hashlib
import json
import os
import pty
import random
import re
import select
import signal
import subprocess
import threading
import time

import pytest

from helpers.compare import drop_page_cache, read_all
from helpers.dataset import make_random_files

KiB = 1 << 10
MiB = 1 << 20
WAIT = 60.0


def make_flat(root, count, lo, hi, seed, prefix="f"):
    return make_random_files(root, count, lo, hi, seed, dirs=4, prefix=prefix, width=4)


def warm(bin_, mnt, *args, stdin=None, timeout=WAIT):
    p = subprocess.run([str(bin_), "warm", str(mnt), *args], input=stdin,
                       capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def warm_json(bin_, mnt, *args, **kw):
    rc, out, err = warm(bin_, mnt, "--json", *args, **kw)
    assert out.strip(), (rc, err)
    r = json.loads(out)
    assert r["exit"] == rc, (r, rc)
    return rc, r


def status_lines(mnt):
    with open(mnt / ".prestofs" / "warm") as f:
        return [ln for ln in f.read().split("\n") if ln.strip()]


def job_status(mnt, prefix):
    for ln in status_lines(mnt):
        if ln.startswith(prefix):
            kv = dict(t.split("=", 1) for t in ln.split()[1:])
            return ln.split()[0], kv
    return None, None


def sha_of(path):
    drop_page_cache(path)
    return hashlib.sha256(read_all(path)).hexdigest()


def test_warm_everything_then_origin_gone(tmp_path, nginx, mount, prestofs_bin):
    src = tmp_path / "src"
    files = make_flat(src, 60, 1, 300 * KiB, 1)
    (src / "empty.bin").write_bytes(b"")
    files["empty.bin"] = hashlib.sha256(b"").hexdigest()
    total = sum((src / r).stat().st_size for r in files)
    ng = nginx(src)
    m = mount(ng.url, {"ram_size": "64M", "block_size": "128K",
                       "ssd_dir": str(tmp_path / "ssd"), "prefetch": "off"})
    before = m.stats()
    rc, r = warm_json(prestofs_bin, m.path)
    assert rc == 0, r
    assert r["state"] == "done" and r["files"] == len(files) and r["bytes"] == total
    assert r["cached_bytes"] == total and r["nofit_bytes"] == 0 and r["failed_files"] == 0
    assert r["complete_files"] == len(files) and r["unknown"] == 0
    assert r["fetched_bytes"] == total  # nothing was cached before
    s = m.stats()
    # No data crossed FUSE, and no demand read was counted.
    assert s["served"]["reads"] == before["served"]["reads"]
    assert s["ram"]["hits"] == before["ram"]["hits"]
    assert s["ram"]["misses"] == before["ram"]["misses"]

    rc, c = warm_json(prestofs_bin, m.path, "--check")
    assert rc == 0, c
    s = m.stats()
    assert c["ram_bytes"] == s["ram"]["resident_bytes"] == total
    assert c["ssd_bytes"] == s["ssd"]["raw_bytes"] == total
    assert c["fetched_bytes"] == 0

    # Whatever the origin does now, every byte is served from the cache.
    ng.stop()
    for rel, digest in files.items():
        assert sha_of(m.path / rel) == digest, rel
    assert m.stats()["origin"]["requests"] == s["origin"]["requests"]


def test_over_budget_never_evicts(tmp_path, nginx, mount, prestofs_bin):
    src = tmp_path / "src"
    files = make_flat(src, 80, 100 * KiB, 300 * KiB, 2)
    total = sum((src / r).stat().st_size for r in files)
    ng = nginx(src)
    m = mount(ng.url, {"ram_size": "4M", "block_size": "256K", "policy": "lru",
                       "ssd_dir": str(tmp_path / "ssd"), "ssd_size": "6M",
                       "prefetch": "off"})
    # A running job's working set: read, so resident (and in the SSD tier).
    job = sorted(files)[:4]
    job_bytes = sum((src / r).stat().st_size for r in job)
    for rel in job:
        assert sha_of(m.path / rel) == files[rel]
    rc, j0 = warm_json(prestofs_bin, m.path, "--check", *job)
    assert rc == 0 and j0["ram_bytes"] == job_bytes, j0
    s0 = m.stats()

    rc, w = warm_json(prestofs_bin, m.path)
    assert rc == 3, w                       # not everything fit
    assert w["nofit_bytes"] > 0 and w["failed_files"] == 0
    assert w["cached_bytes"] + w["nofit_bytes"] == total
    s = m.stats()
    assert s["ram"]["replaced"] == s0["ram"]["replaced"] == 0
    assert s["ssd"]["evictions"] == s0["ssd"]["evictions"] == 0
    assert s["ram"]["resident_bytes"] <= s["ram"]["budget"]
    assert s["ssd"]["bytes"] <= s["ssd"]["budget"]
    # The job's blocks are still resident.
    rc, j1 = warm_json(prestofs_bin, m.path, "--check", *job)
    assert rc == 0 and j1["ram_bytes"] == job_bytes, j1
    # The check agrees with the warm-up and with the tiers' own counters.
    rc, c = warm_json(prestofs_bin, m.path, "--check")
    assert rc == 3
    assert c["ram_bytes"] == w["ram_bytes"] == s["ram"]["resident_bytes"]
    assert c["ssd_bytes"] == w["ssd_bytes"] == s["ssd"]["raw_bytes"]
    assert c["cached_bytes"] == w["cached_bytes"]
    # A second warm-up finds nothing new to take, and fetches nothing.
    rc, w2 = warm_json(prestofs_bin, m.path)
    assert rc == 3 and w2["fetched_bytes"] == 0, w2
    # And every byte read afterwards is exact, cached or not.
    for rel, digest in files.items():
        assert sha_of(m.path / rel) == digest, rel


def test_ram_only_over_budget(tmp_path, nginx, mount, prestofs_bin):
    src = tmp_path / "src"
    files = make_flat(src, 40, 100 * KiB, 200 * KiB, 3)
    ng = nginx(src)
    m = mount(ng.url, {"ram_size": "2M", "block_size": "128K", "policy": "lru",
                       "prefetch": "off"})
    rc, w = warm_json(prestofs_bin, m.path, "-j", "4")
    assert rc == 3 and w["ssd_bytes"] == 0 and w["nofit_bytes"] > 0, w
    s = m.stats()
    assert s["ram"]["replaced"] == 0
    assert w["ram_bytes"] == s["ram"]["resident_bytes"] <= s["ram"]["budget"]
    rc, out, _ = warm(prestofs_bin, m.path)
    assert rc == 3 and "did not fit" in out and out.count("\n") == 1


def test_progress_bar_on_a_terminal(tmp_path, nginx, delay_proxy, mount, prestofs_bin):
    src = tmp_path / "src"
    make_flat(src, 60, 20 * KiB, 60 * KiB, 4)
    ng = nginx(src)
    px = delay_proxy(ng.port, delay_ms=40)
    m = mount(px.url, {"ram_size": "64M", "prefetch": "off"})
    master, slave = pty.openpty()
    p = subprocess.Popen([str(prestofs_bin), "warm", str(m.path), "-j", "2"],
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=slave,
                         text=False)
    os.close(slave)
    screen = b""
    deadline = time.monotonic() + WAIT
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.5)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:   # EIO: the last writer closed the pty
                    break
                if not chunk:
                    break
                screen += chunk
            elif p.poll() is not None:
                break
        out = p.stdout.read().decode()
        assert p.wait(WAIT) == 0, screen
    finally:
        if p.poll() is None:
            p.kill()
        os.close(master)
    frames = [f for f in screen.decode().split("\r") if f.strip()]
    bars = [f for f in frames if f.startswith("warm [")]
    assert len(bars) >= 3, screen          # 60 files at 40 ms, 2 at a time
    done = []
    for f in bars:
        mm = re.search(r"\] +(\d+)%  (\d+)/(\d+) files  (\S+ \S+)/(\S+ \S+)  (\S+ \S+)/s  ETA (\S+)",
                       f)
        assert mm, f
        assert int(mm.group(3)) == 60
        done.append(int(mm.group(2)))
    assert done == sorted(done) and done[-1] == 60 and done[0] < 60
    assert bars[-1].split("]")[1].strip().startswith("100%")
    assert out.startswith("warmed 60 of 60 files") and out.count("\n") == 1

    # Not a terminal: no bar, one line.
    rc, out2, err2 = warm(prestofs_bin, m.path)
    assert rc == 0 and "\r" not in out2 + err2 and out2.count("\n") == 1, (out2, err2)


def test_sigint_cancels_in_the_daemon(tmp_path, nginx, delay_proxy, mount, prestofs_bin):
    src = tmp_path / "src"
    files = make_flat(src, 150, 10 * KiB, 30 * KiB, 5)
    ng = nginx(src)
    px = delay_proxy(ng.port, delay_ms=40)
    m = mount(px.url, {"ram_size": "64M", "prefetch": "off"})
    p = subprocess.Popen([str(prestofs_bin), "warm", str(m.path), "-j", "1", "--json"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            _, st = job_status(m.path, f"warm-{p.pid}")
            if st and int(st["done_files"]) >= 3:
                break
            time.sleep(0.05)
        else:
            pytest.fail("the job never progressed")
        p.send_signal(signal.SIGINT)
        assert p.wait(WAIT) == 130
        r = json.loads(p.stdout.read())
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert r["state"] == "cancelled" and r["exit"] == 130
    assert 3 <= r["done_files"] < 150, r
    _, st = job_status(m.path, f"warm-{p.pid}")
    assert st["state"] == "cancelled" and int(st["done_files"]) == r["done_files"]
    # The mount goes on: a new warm-up finishes the rest, bytes exact.
    rc, w = warm_json(prestofs_bin, m.path, "-j", "16")
    assert rc == 0 and w["fetched_bytes"] < w["bytes"], w
    for rel, digest in random.Random(1).sample(sorted(files.items()), 20):
        assert sha_of(m.path / rel) == digest


def test_lists_paths_and_errors(tmp_path, nginx, mount, prestofs_bin):
    src = tmp_path / "src"
    files = make_flat(src, 20, 1 * KiB, 50 * KiB, 6)
    ng = nginx(src)
    m = mount(ng.url, {"ram_size": "64M", "prefetch": "off"})
    d0 = sorted(r for r in files if r.startswith("d0/"))
    d0_bytes = sum((src / r).stat().st_size for r in d0)
    lst = tmp_path / "list.txt"
    # A directory, a file inside it again, an absolute path, a blank line.
    lst.write_text(f"d0\n{d0[0]}\n\n{m.path / d0[1]}\n")
    rc, r = warm_json(prestofs_bin, m.path, "--from", str(lst))
    assert rc == 0 and r["files"] == len(d0) and r["bytes"] == d0_bytes, r
    # From stdin, with a path the dataset lacks: exit 1, counted.
    rc, r = warm_json(prestofs_bin, m.path, "--from", "-", stdin="d1\nno/such/file\n")
    assert rc == 1 and r["unknown"] == 1 and r["files"] == 5, r
    # The control tree is no dataset path.
    rc, r = warm_json(prestofs_bin, m.path, ".prestofs/stats")
    assert rc == 1 and r["unknown"] == 1 and r["files"] == 0
    # Check of a subtree only counts that subtree.
    rc, c = warm_json(prestofs_bin, m.path, "--check", "d0", "d1")
    assert rc == 0 and c["files"] == 10 and c["cached_bytes"] == c["bytes"], c
    rc, c = warm_json(prestofs_bin, m.path, "--check", "d2")
    assert rc == 3 and c["cached_bytes"] == 0, c
    # Bad arguments and places.
    for args in (["-j", "0"], ["-j", "x"], ["--bogus"]):
        rc, _, err = warm(prestofs_bin, m.path, *args)
        assert rc == 2 and err, args
    rc, _, err = warm(prestofs_bin, m.path, "/etc/passwd")
    assert rc == 1 and "not inside the mount" in err
    rc, _, err = warm(prestofs_bin, tmp_path)
    assert rc == 1 and "not a prestofs mount" in err
    rc, _, err = warm(prestofs_bin, m.path, "--from", str(tmp_path / "none"))
    assert rc == 1 and "none" in err
    # The daemon refuses a malformed request itself.
    for bad in (b"#job x?y warm\nd0\n", b"#job ok frob\n", b"d0\n", b"#start nosuch\n",
                b"#job ok warm 0\n", b"#job ok warm 999\n"):
        fd = os.open(m.path / ".prestofs" / "warm", os.O_WRONLY)
        try:
            with pytest.raises(OSError) as e:
                os.write(fd, bad)
            assert e.value.errno == 22, bad
        finally:
            os.close(fd)


def test_failed_file_is_counted(tmp_path, nginx, mount, prestofs_bin):
    src = tmp_path / "src"
    files = make_flat(src, 12, 10 * KiB, 40 * KiB, 7)
    ng = nginx(src)
    m = mount(ng.url, {"ram_size": "64M", "prefetch": "off", "retries": "1"},
              allow_errors=(r"read of .* failed",))
    gone = sorted(files)[3]
    (src / gone).unlink()                     # listed, but now a 404
    rc, r = warm_json(prestofs_bin, m.path)
    assert rc == 1 and r["failed_files"] == 1 and r["errno"] != 0, r
    assert r["complete_files"] == len(files) - 1
    assert r["cached_bytes"] == r["bytes"] - (m.path / gone).stat().st_size
    with pytest.raises(OSError):
        read_all(m.path / gone)
    for rel, digest in files.items():
        if rel != gone:
            assert sha_of(m.path / rel) == digest


def test_readers_during_warm_get_exact_bytes(tmp_path, nginx, delay_proxy, mount,
                                             prestofs_bin):
    src = tmp_path / "src"
    files = make_flat(src, 80, 50 * KiB, 400 * KiB, 8)
    ng = nginx(src)
    px = delay_proxy(ng.port, delay_ms=5)
    m = mount(px.url, {"ram_size": "8M", "block_size": "64K", "policy": "lru",
                       "ssd_dir": str(tmp_path / "ssd"), "ssd_size": "12M"})
    bad, stop = [], threading.Event()

    def reader(seed):
        rng = random.Random(seed)
        names = sorted(files)
        while not stop.is_set():
            rel = rng.choice(names)
            if sha_of(m.path / rel) != files[rel]:
                bad.append(rel)

    ts = [threading.Thread(target=reader, args=(i,)) for i in range(6)]
    for t in ts:
        t.start()
    try:
        rc, w = warm_json(prestofs_bin, m.path, "-j", "16")
        rc2, _ = warm_json(prestofs_bin, m.path)
    finally:
        stop.set()
        for t in ts:
            t.join(WAIT)
    assert not bad, bad[:5]
    assert rc in (0, 3) and w["failed_files"] == 0, w
    assert rc2 in (0, 3)
