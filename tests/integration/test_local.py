"""Local-directory origin: bytes, metadata, read-only semantics, the control
directory, option and manifest errors, `prestofs index`, FUSE request counts."""
import errno
import json
import mmap
import re
import os
import subprocess
import threading
import time
from pathlib import Path

import pytest

from helpers.compare import compare_bytes, compare_tree, drop_page_cache, list_files, read_all
from helpers.manifest import MAGIC, NAME as MANIFEST_NAME, parse_manifest, walk_entries
from helpers.mount import Mount, MountError, is_mounted

MiB = 1 << 20


def test_every_byte_and_tree(dataset, mount):
    m = mount(dataset)
    n = compare_bytes(dataset, m.path, ranges_per_file=12)
    assert n > 10 * MiB
    compare_tree(dataset, m.path, mtime="s")


def test_mtime_whole_seconds(dataset, mount):
    """Every origin's listing carries whole seconds (the manifest's unit, and
    all HTTP and S3 give): a local origin's mtimes are exact to the second,
    with no fraction (documented in prestofs(1))."""
    m = mount(dataset)
    compare_tree(dataset, m.path, mtime="s")
    for rel in ("tiny.txt", "blk-plus-1.bin"):
        assert os.stat(m.path / rel).st_mtime_ns % 1_000_000_000 == 0


def test_file_url_origin(dataset, mount):
    m = mount(f"file://{dataset}")
    compare_tree(dataset, m.path, mtime="s")
    compare_bytes(dataset, m.path, files=["tiny.txt", "blk-plus-1.bin", "ünïcödé-日本/データ.bin"])


def test_small_blocks_small_cache(dataset, mount):
    """64 KiB blocks and a RAM budget smaller than the biggest file: many
    block boundaries, evictions, still every byte right (read twice)."""
    m = mount(dataset, {"block_size": "64K", "ram_size": "4M", "policy": "lru"})
    for seed in (1, 2):
        compare_bytes(dataset, m.path, ranges_per_file=10, seed=seed, block_size=64 << 10)
    s = m.stats()
    assert s["ram"]["evictions"] > 0, s
    assert s["ram"]["bytes"] <= 4 * MiB, s


def test_concurrent_readers(dataset, mount):
    """8 threads reading every file in different orders through one mount."""
    m = mount(dataset, {"ram_size": "8M", "policy": "lru"})
    files = list_files(dataset)
    want = {f: (dataset / f).read_bytes() for f in files}
    bad = []

    def worker(k):
        order = files[k:] + files[:k]
        for f in order:
            if read_all(m.path / f) != want[f]:
                bad.append((k, f))

    threads = [threading.Thread(target=worker, args=(k * 7,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads), "readers hung"
    assert not bad, bad[:10]


def test_mmap_read(dataset, mount):
    m = mount(dataset)
    for rel in ("big.bin", "blk-plus-1.bin"):
        want = (dataset / rel).read_bytes()
        with open(m.path / rel, "rb") as f, mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ) as mm:
            assert mm[:] == want
            assert mm[MiB - 3:MiB + 3] == want[MiB - 3:MiB + 3]


def test_walk_scandir_ls(dataset, mount):
    m = mount(dataset)
    src = {os.path.relpath(dp, dataset): (sorted(dn), sorted(fn))
           for dp, dn, fn in os.walk(dataset)}
    got = {os.path.relpath(dp, m.path): (sorted(dn), sorted(fn))
           for dp, dn, fn in os.walk(m.path)}
    assert got == src
    # scandir: d_type from readdir must agree with stat; d_ino with st_ino.
    for dp, _, _ in os.walk(m.path):
        with os.scandir(dp) as it:
            for e in it:
                st = os.stat(e.path)
                assert e.is_dir(follow_symlinks=False) == (st.st_mode & 0o170000 == 0o040000), e.path
                assert e.is_file(follow_symlinks=False) == (st.st_mode & 0o170000 == 0o100000), e.path
                assert e.stat().st_size == st.st_size, e.path
                assert e.inode() == st.st_ino, f"{e.path}: d_ino {e.inode()} != st_ino {st.st_ino}"
    r = subprocess.run(["ls", "-lR", str(m.path)], capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stderr == b""
    out = r.stdout.decode("utf-8", "surrogateescape")
    for rel in list_files(dataset):
        assert os.path.basename(rel) in out, rel
    assert "empty-dir" in out


def test_root_and_empty_entries(dataset, mount):
    m = mount(dataset)
    st = os.stat(m.path)
    assert st.st_mode & 0o170000 == 0o040000
    assert os.listdir(m.path / "empty-dir") == []
    assert os.listdir(m.path / "a" / "empty-sub") == []
    assert read_all(m.path / "empty.bin") == b""
    assert os.stat(m.path / "empty.bin").st_size == 0
    fd = os.open(m.path / "tiny.txt", os.O_RDONLY)
    try:
        assert os.pread(fd, 100, 13) == b""         # at EOF
        assert os.pread(fd, 100, 10**9) == b""      # far past EOF
        assert os.pread(fd, 100, 5) == (dataset / "tiny.txt").read_bytes()[5:]
    finally:
        os.close(fd)
    vfs = os.statvfs(m.path)  # df must work
    assert vfs.f_bsize > 0


def _ops(mnt):
    f = mnt / "tiny.txt"
    d = mnt / "a"
    return {
        "open O_WRONLY": lambda: os.open(f, os.O_WRONLY),
        "open O_RDWR": lambda: os.open(f, os.O_RDWR),
        "open O_TRUNC": lambda: os.open(f, os.O_RDONLY | os.O_TRUNC),
        "create": lambda: os.open(mnt / "new-file", os.O_WRONLY | os.O_CREAT, 0o644),
        "create in subdir": lambda: os.open(d / "new", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644),
        "mkdir": lambda: os.mkdir(mnt / "new-dir"),
        "rmdir": lambda: os.rmdir(mnt / "empty-dir"),
        "unlink": lambda: os.unlink(f),
        "rename": lambda: os.rename(f, mnt / "renamed.txt"),
        "truncate": lambda: os.truncate(f, 0),
        "chmod": lambda: os.chmod(f, 0o777),
        "utime": lambda: os.utime(f, (0, 0)),
        "symlink": lambda: os.symlink("tiny.txt", mnt / "link"),
        "link": lambda: os.link(f, mnt / "hardlink"),
        "mknod fifo": lambda: os.mkfifo(mnt / "fifo"),
    }


@pytest.mark.parametrize("op", list(_ops(Path("/x"))))
def test_writes_give_erofs(dataset, mount, op):
    m = mount(dataset)
    before = (dataset / "tiny.txt").read_bytes()
    with pytest.raises(OSError) as ei:
        fd = _ops(m.path)[op]()
        if isinstance(fd, int):
            os.close(fd)
    assert ei.value.errno == errno.EROFS, f"{op}: {ei.value!r}"
    assert (dataset / "tiny.txt").read_bytes() == before
    assert read_all(m.path / "tiny.txt") == before
    assert sorted(os.listdir(m.path)) == sorted(os.listdir(dataset))


def test_control_dir_and_stats(dataset, mount):
    m = mount(dataset, {"prefetch": "off"})  # exact counters: demand only
    assert ".prestofs" not in os.listdir(m.path)
    assert os.path.isdir(m.path / ".prestofs")
    assert "stats" in os.listdir(m.path / ".prestofs")
    s0 = m.stats()
    for section, keys in {
        "origin": ["requests", "bytes", "errors", "retries", "inflight", "inflight_max"],
        "ram": ["hits", "misses", "bytes", "evictions"],
        "fuse": ["lookup", "getattr", "open", "read"],
    }.items():
        for k in keys:
            assert isinstance(s0[section][k], int), (section, k, s0)
    assert isinstance(s0["coalesced"], int)
    data = read_all(m.path / "multi.bin")
    # A second read of the stats file must show fresh numbers (no stale page cache).
    s1 = m.stats()
    assert s1["origin"]["requests"] > s0["origin"]["requests"], (s0, s1)
    assert s1["origin"]["bytes"] - s0["origin"]["bytes"] >= len(data), (s0, s1)
    assert s1["fuse"]["read"] > s0["fuse"]["read"]
    assert s1["ram"]["misses"] > s0["ram"]["misses"]
    assert s1["origin"]["inflight"] == 0
    # The mount is read-write at the VFS level (the order file takes
    # writes): an open for writing may succeed, a write never does.
    try:
        fd = os.open(m.path / ".prestofs" / "stats", os.O_WRONLY)
    except OSError as e:
        assert e.errno in (errno.EROFS, errno.EACCES)
    else:
        try:
            with pytest.raises(OSError) as ei:
                os.write(fd, b"x")
            assert ei.value.errno == errno.EROFS
        finally:
            os.close(fd)


def test_nonexistent_names(dataset, mount):
    m = mount(dataset)
    for p in ("nope", "a/nope", "a/b/c/nope.bin", "nope/deeper", ".prestofs/nope"):
        with pytest.raises(FileNotFoundError):
            os.stat(m.path / p)
        with pytest.raises(FileNotFoundError):
            os.open(m.path / p, os.O_RDONLY)
    with pytest.raises(NotADirectoryError):
        os.stat(m.path / "tiny.txt" / "x")
    with pytest.raises(NotADirectoryError):
        os.listdir(m.path / "tiny.txt")
    with pytest.raises(IsADirectoryError):
        read_all(m.path / "a")


def _run_expect_fail(argv, tmp_path, timeout=20):
    """Runs prestofs -f expecting it to refuse; never leaves a mount behind."""
    mnt = tmp_path / "mnt"
    mnt.mkdir(exist_ok=True)
    try:
        r = subprocess.run(argv, capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        subprocess.run(["fusermount3", "-u", "-z", str(mnt)], capture_output=True, timeout=20)
        pytest.fail(f"{argv} did not exit within {timeout}s (it should refuse to start)")
    if is_mounted(mnt):
        subprocess.run(["fusermount3", "-u", "-z", str(mnt)], capture_output=True, timeout=20)
        pytest.fail(f"{argv} mounted anyway")
    return r.returncode, (r.stdout + r.stderr).decode("utf-8", "replace")


@pytest.mark.parametrize("opt,name", [
    ("bogus_option_xyz=1", "bogus_option_xyz"),
    ("ram_size=1G,frobnicate", "frobnicate"),
    ("ram_size=lots", "ram_size"),
    ("timeout=abc", "timeout"),
    ("retries=-1", "retries"),
    ("block_size=banana", "block_size"),
    ("log_level=loud", "log_level"),
    ("log_level=DEBUG", "log_level"),
])
def test_bad_option(dataset, tmp_path, prestofs_bin, opt, name):
    for argv in ([str(prestofs_bin), "-f", "-o", opt, str(dataset), str(tmp_path / "mnt")],
                 [str(prestofs_bin), "-f", str(dataset), str(tmp_path / "mnt"), "-o", opt]):
        rc, out = _run_expect_fail(argv, tmp_path)
        assert rc != 0, out
        assert name in out, f"message does not name {name!r}: {out!r}"


@pytest.mark.parametrize("level,info,debug", [
    ("debug", True, True), ("info", True, False), ("warn", False, False),
    ("error", False, False),
])
def test_log_level(dataset, mount, level, info, debug):
    """-o log_level: the mount's info line (the listing) and the debug line
    (what the kernel offered) appear exactly from the levels that include
    them; the mount works at every level."""
    m = mount(str(dataset), {"log_level": level}, name=f"mnt-{level}")
    assert sorted(os.listdir(m.path)) == sorted(os.listdir(dataset))
    out = m.stderr_text(100000)
    assert ("entries," in out) == info, (level, out)
    assert ("kernel: no_open=" in out) == debug, (level, out)


def test_missing_origin_dir(tmp_path, prestofs_bin):
    rc, out = _run_expect_fail([str(prestofs_bin), "-f", str(tmp_path / "does-not-exist"),
                                str(tmp_path / "mnt")], tmp_path)
    assert rc != 0
    assert "does-not-exist" in out, out


def _index(prestofs_bin, root, to_file):
    if to_file:
        # Exactly as documented: the shell creates the (empty) manifest first.
        r = subprocess.run(f'"{prestofs_bin}" index "{root}" > "{root}/{MANIFEST_NAME}"',
                           shell=True, capture_output=True, timeout=60)
        assert r.returncode == 0, r.stderr
        return (root / MANIFEST_NAME).read_text(encoding="utf-8")
    r = subprocess.run([str(prestofs_bin), "index", str(root)], capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout.decode("utf-8")


@pytest.mark.parametrize("to_file", [False, True])
def test_index(dataset_copy, prestofs_bin, to_file):
    text = _index(prestofs_bin, dataset_copy, to_file)
    assert text.startswith(MAGIC + "\n")
    entries = parse_manifest(text)
    assert MANIFEST_NAME not in entries
    want = {rel: (is_dir, size, mtime) for rel, is_dir, size, mtime in walk_entries(dataset_copy)}
    got = {p: (e[0], e[1], e[2]) for p, e in entries.items()}
    # Parents may be implicit, but every file and every empty dir must be listed.
    for rel, (is_dir, size, mtime) in want.items():
        if is_dir and rel in got:
            assert got[rel][0], rel
        if not is_dir or os.listdir(dataset_copy / rel) == []:
            assert got.get(rel) == (is_dir, size, mtime), rel
    assert set(got) <= set(want), set(got) - set(want)


def test_index_manifest_mounts(dataset_copy, prestofs_bin, mount):
    """A manifest from `prestofs index`, given with manifest=PATH, mounts the
    same tree (mtimes in whole seconds)."""
    text = _index(prestofs_bin, dataset_copy, to_file=False)
    mf = dataset_copy.parent / "list.manifest"
    mf.write_text(text, encoding="utf-8")
    m = mount(dataset_copy, {"manifest": mf})
    compare_tree(dataset_copy, m.path, mtime="s")
    compare_bytes(dataset_copy, m.path, ranges_per_file=2)


GOOD = "tiny.txt\t13\t1600000000\t-"


@pytest.mark.parametrize("lines,bad_line", [
    (["#prestofs-manifest 2", GOOD], 1),
    (["#prestofs-manifest 1", GOOD, "a/b\t12"], 3),
    (["#prestofs-manifest 1", GOOD, "x.bin\tNaN\t1600000000\t-"], 3),
    (["#prestofs-manifest 1", GOOD, "", "y.bin\t1\t1\t-"], 3),
    (["#prestofs-manifest 1", GOOD, GOOD, "z\t1\t1\t-"], 3),
    (["#prestofs-manifest 1", GOOD, "x\t1\t1\t-", "../escape\t1\t1\t-"], 4),
    (["#prestofs-manifest 1", "/abs\t1\t1\t-"], 2),
])
def test_malformed_manifest(dataset, tmp_path, prestofs_bin, lines, bad_line):
    mf = tmp_path / "bad.manifest"
    mf.write_text("\n".join(lines) + "\n")
    m = Mount(dataset, tmp_path / "mnt", {"manifest": mf}, binary=prestofs_bin)
    with pytest.raises(MountError) as ei:
        m.start()
        m.stop()  # it mounted: not what we want
    msg = str(ei.value)
    assert "exited with" in msg and "exited with 0" not in msg, msg
    assert f"line {bad_line}" in msg or f":{bad_line}:" in msg, msg


# --- FUSE request counts ------------------------------------------------------
#
# Counted from the daemon's -d log, split at markers: a statvfs() of the mount
# is one STATFS request, which nothing else here sends. The stats file cannot
# be the yardstick by itself: reading it costs a varying number of GETATTRs
# (attribute timeouts of the control file) that land in the same fuse.*
# counters. The stats counters are still checked where they are exact.

_REQ = re.compile(r"unique: (\d+), opcode: (\w+) \(\d+\), nodeid: (\d+)")


def _segments(log):
    """Requests (opcode, nodeid) between consecutive STATFS markers."""
    segs, cur = [], None
    for line in log.splitlines():
        mo = _REQ.search(line)
        if not mo:
            continue
        op, node = mo.group(2), int(mo.group(3))
        if op == "STATFS":
            if cur is not None:
                segs.append(cur)
            cur = []
        elif cur is not None:
            cur.append((op, node))
    return segs


@pytest.mark.parametrize("rel", ["a/b/sibling.bin", "dir with space/file #1.bin"])
def test_request_counts(dataset, mount, rel):
    """Page-cache re-read: 0 FUSE requests; daemon-cache hit: at most 2."""
    # Demand requests only: background prefetch would add origin requests.
    m = mount(dataset, {"prefetch": "off"}, extra_args=["-d"])
    path = m.path / rel
    want = (dataset / rel).read_bytes()
    assert read_all(path) == want      # cold: fills the daemon's and the page cache
    mark = lambda: os.statvfs(m.path)  # noqa: E731
    s0 = m.stats()
    mark()
    assert read_all(path) == want      # 1: page cache
    mark()
    drop_page_cache(path)
    mark()
    assert read_all(path) == want      # 3: daemon cache
    mark()
    s1 = m.stats()
    segs = _segments(m.stderr_text(10**8))
    assert len(segs) >= 3, f"markers not found in the -d log: {segs}"
    assert segs[0] == [], f"page-cache re-read of {rel} cost FUSE requests: {segs[0]}"
    hit = segs[2]
    assert any(op == "READ" for op, _ in hit), f"page cache not evicted, test is void: {hit}"
    assert len(hit) <= 2, f"daemon-cache hit of {rel} ({len(want)} B) cost {len(hit)}: {hit}"
    assert s1["origin"]["requests"] == s0["origin"]["requests"], "not served from RAM"
    assert s1["ram"]["hits"] > s0["ram"]["hits"]
    assert s1["fuse"]["statfs"] - s0["fuse"]["statfs"] == 4, (s0["fuse"], s1["fuse"])


def test_stats_json_is_strict(dataset, mount):
    m = mount(dataset)
    raw = read_all(m.path / ".prestofs" / "stats")
    doc = json.loads(raw)        # strict JSON: no trailing commas, NaN, etc.
    assert isinstance(doc, dict)


def _pids_with_arg(arg):
    pids = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                argv = open(f"/proc/{d}/cmdline", "rb").read().split(b"\0")
            except OSError:
                continue
            if os.fsencode(arg) in argv:
                pids.append(int(d))
    return pids


def test_daemon_mode(dataset, tmp_path, prestofs_bin):
    """Without -f: the command returns once mounted; unmounting ends the daemon."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    r = subprocess.run([str(prestofs_bin), str(dataset), str(mnt), "-o", "ram_size=64M"],
                       capture_output=True, timeout=30)
    pids = _pids_with_arg(str(mnt))
    try:
        assert r.returncode == 0, r.stderr
        assert is_mounted(mnt), "not mounted when the command returned"
        assert len(pids) == 1, pids
        assert read_all(mnt / "blk-plus-1.bin") == (dataset / "blk-plus-1.bin").read_bytes()
    finally:
        if is_mounted(mnt):
            subprocess.run(["fusermount3", "-u", str(mnt)], capture_output=True, timeout=30)
    deadline = time.monotonic() + 10
    while pids and time.monotonic() < deadline and _pids_with_arg(str(mnt)):
        time.sleep(0.05)
    assert not _pids_with_arg(str(mnt)), "daemon still running after unmount"
