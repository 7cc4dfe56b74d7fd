"""One version per file (issue 8, part 1): an object that changes on the
origin while mounted is served all OLD, all NEW, or EIO; never a mix.

The origin is helpers.switch_origin.SwitchOrigin: one 8 MiB object whose
1 MiB blocks each carry a pattern naming their version and index, so every
block read is classified OLD, NEW or garbage. It serves OLD for its first N
GETs and NEW after (N = 1, 2, 3, 5), with a strong ETag (+Last-Modified),
a weak ETag, Last-Modified only, or no validator at all. The listing (a
manifest) gives the OLD size and no ETag.

Every case is a fresh mount (block_size=1M, timeout=2, retries=1), so the
kernel's page cache and the daemon's RAM tier start empty; the page cache
is dropped (POSIX_FADV_DONTNEED) before every pass over the file.

Rules checked in every case, over everything one mount served of the file:
  - every block read is exactly OLD or exactly NEW (never garbage, never
    bytes past the listed size);
  - all blocks served by one mount are of one version (a whole-file read,
    and all reads of the mount together);
  - a read that fails fails with EIO, whole: never a short read;
  - at least one block is served (the first answer wins and is served);
  - without a switch, everything is OLD and nothing fails.

Counts per case are printed (pytest -s) and appended to SUMMARY.
"""
import errno
import os
import threading
import time

import pytest

from helpers.compare import drop_page_cache
from helpers.switch_origin import NEW, OLD, SwitchOrigin

MiB = 1 << 20
BS = MiB
NBLK = 8
SIZE = NBLK * BS
GROW = SIZE + 300 * 1024   # NEW length when the object grows
SHRINK = 6 * MiB + 512 * 1024  # NEW length when it shrinks (block 7: 416)
NAME = "obj.bin"
NEVER = 10**9              # switch_after that never switches
SUMMARY = "/tmp/prestofs-versions-summary.txt"
PASS_BOUND = 40.0          # s; a pass taking longer is a hang

BASE_OPTS = {"block_size": "1M", "timeout": 2, "retries": 1, "ram_size": "64M"}
# The daemon reports a changed object at WARN; should that become ERROR,
# these lines are expected here (the fixture fails on any other ERROR).
CHANGE_ERRORS = (r"validator changed on the origin", r"refusing to mix versions",
                 r"listed size \d+, origin has")

NS = (1, 2, 3, 5)
MODES = ("etag", "lastmod")


def block_bytes(version, k, length=BS):
    tag = f"<{'OLD' if version == OLD else 'NEW'}:blk{k:03d}:"
    tag = (tag + "." * 16)[:16].encode()
    return (tag * (length // 16 + 1))[:length]


def version_bytes(version, size):
    return b"".join(block_bytes(version, k, min(BS, size - k * BS))
                    for k in range((size + BS - 1) // BS))


OLD_DATA = version_bytes(OLD, SIZE)
NEW_DATA = version_bytes(NEW, SIZE)
NEW_GROWN = version_bytes(NEW, GROW)
NEW_SHRUNK = version_bytes(NEW, SHRINK)


@pytest.fixture(scope="module", autouse=True)
def _summary_file():
    with open(SUMMARY, "w") as f:
        f.write(f"# prestofs test_versions summary {time.strftime('%F %T')} "
                f"binary={os.environ.get('PRESTOFS', 'build/prestofs')}\n")
    yield


@pytest.fixture
def origin():
    srvs = []

    def factory(validator):
        s = SwitchOrigin(validator=validator).start()
        srvs.append(s)
        return s

    yield factory
    for s in srvs:
        s.stop()


# --- reading and classifying -----------------------------------------------

def classify(k, data):
    """'old', 'new' or 'garbage' for block k's bytes (listed size)."""
    off = k * BS
    if data == OLD_DATA[off:off + len(data)]:
        return "old"
    if data == NEW_DATA[off:off + len(data)] or data == NEW_GROWN[off:off + len(data)]:
        return "new"
    return "garbage"


def read_block(fd, k):
    """One pread of block k: 'old'/'new'/'garbage', 'EIO', 'errno X',
    or 'short N' (fewer bytes than the listed size allows)."""
    off = k * BS
    want = min(BS, SIZE - off)
    try:
        data = os.pread(fd, want, off)
    except OSError as e:
        return "EIO" if e.errno == errno.EIO else \
            f"errno {errno.errorcode.get(e.errno, e.errno)}"
    if len(data) != want:
        return f"short {len(data)}"
    return classify(k, data)


def read_small(fd, k, length=4096):
    """A 4 KiB pread at the start of block k, classified as read_block."""
    off = k * BS
    try:
        data = os.pread(fd, length, off)
    except OSError as e:
        return "EIO" if e.errno == errno.EIO else \
            f"errno {errno.errorcode.get(e.errno, e.errno)}"
    if len(data) != length:
        return f"short {len(data)}"
    return classify(k, data)


def read_pass(fd, order=range(NBLK), pause_after_first=0.0):
    """A whole-file read, one 1 MiB read per block in `order` (a failed
    block does not stop it). Returns {block: result}."""
    drop_page_cache(fd)
    out = {}
    for i, k in enumerate(order):
        out[k] = read_block(fd, k)
        if i == 0 and pause_after_first:
            time.sleep(pause_after_first)
    # Nothing past the listed size, whatever the origin has now.
    tail = os.pread(fd, 4096, SIZE)
    if tail:
        out["past-eof"] = f"short {len(tail)}"  # counted as a bad result
    return out


def parallel_pass(fd, blocks=range(NBLK)):
    """One pread per block, all threads released at once."""
    drop_page_cache(fd)
    blocks = list(blocks)
    out = {}
    bar = threading.Barrier(len(blocks))

    def one(k):
        bar.wait()
        out[k] = read_block(fd, k)

    ts = [threading.Thread(target=one, args=(k,)) for k in blocks]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return dict(sorted(out.items()))


class Tally:
    """Counts for one case; check() asserts the rules."""

    def __init__(self, case):
        self.case = case
        self.passes = []   # (label, {block: result})

    def add(self, label, res):
        self.passes.append((label, res))
        return res

    def counts(self):
        c = {"reads": len(self.passes), "mixed": 0, "failed": 0, "old": 0, "new": 0,
             "eio": 0, "garbage": 0, "short": 0, "other": 0}
        for _, res in self.passes:
            vs = {r for r in res.values() if r in ("old", "new")}
            c["mixed"] += len(vs) > 1
            c["failed"] += any(r not in ("old", "new") for r in res.values())
            for r in res.values():
                key = r if r in ("old", "new", "garbage") else \
                    "eio" if r == "EIO" else "short" if r.startswith("short") else "other"
                c[key] += 1
        return c

    def versions(self):
        return {r for _, res in self.passes for r in res.values() if r in ("old", "new")}

    def report(self, srv):
        c = self.counts()
        gets = srv.requests(NAME)
        served = {"old": 0, "new": 0}
        for r in gets:
            if r.version is not None:
                served["old" if r.version == OLD else "new"] += 1
        n412 = sum(r.status == 412 for r in gets)
        ifm = sum(bool(r.if_match) for r in gets)
        ius = sum(bool(r.if_unmodified_since) for r in gets)
        line = (f"{self.case}: reads={c['reads']} mixed={c['mixed']} "
                f"mount_mixed={int(len(self.versions()) > 1)} failed={c['failed']} | "
                f"blocks old={c['old']} new={c['new']} eio={c['eio']} "
                f"garbage={c['garbage']} short={c['short']} other={c['other']} | "
                f"origin GETs={len(gets)} served old={served['old']} new={served['new']} "
                f"412={n412} If-Match={ifm} If-Unmodified-Since={ius}")
        print("\n" + line)
        with open(SUMMARY, "a") as f:
            f.write(line + "\n")
        return c

    def check(self, srv, m=None, *, expect_all_old=False):
        c = self.report(srv)
        detail = "\n".join(f"  {label}: {res}" for label, res in self.passes)
        log = srv.describe_log(NAME)
        ctx = f"{self.case}\nreads:\n{detail}\norigin log:\n{log}"
        if m is not None:
            ctx += f"\n--- daemon output (tail) ---\n{m.stderr_text(3000)}"
        assert c["garbage"] == 0, f"blocks of neither version:\n{ctx}"
        assert c["short"] == 0, f"short reads (or bytes past the listed size):\n{ctx}"
        assert c["other"] == 0, f"failed with another errno than EIO:\n{ctx}"
        assert c["mixed"] == 0, f"one whole-file read mixed OLD and NEW:\n{ctx}"
        assert len(self.versions()) <= 1, f"one mount served OLD and NEW:\n{ctx}"
        assert c["old"] + c["new"] > 0, f"nothing served at all (the first " \
            f"answer should win):\n{ctx}"
        if expect_all_old:
            assert c["failed"] == 0 and c["new"] == 0, \
                f"no switch: everything should be OLD:\n{ctx}"


def _mount(mount, srv, name="mnt", **opts):
    o = dict(BASE_OPTS, **opts)
    return mount(srv.url, o, name=name, allow_errors=CHANGE_ERRORS)


def _open(m):
    return os.open(m.path / NAME, os.O_RDONLY)


def _bounded(run_bounded, m, fn):
    res, _ = run_bounded(fn, PASS_BOUND, m.path)
    if isinstance(res, BaseException):
        raise res
    return res


# --- sequential reads, prefetch off and on -------------------------------------

SEQ_CASES = [(n, v) for v in MODES for n in NS] + [(2, "weak")]


@pytest.mark.parametrize("prefetch", ["off", "on"])
@pytest.mark.parametrize("n,validator", SEQ_CASES,
                         ids=[f"{v}-N{n}" for n, v in SEQ_CASES])
def test_sequential(origin, mount, run_bounded, n, validator, prefetch):
    srv = origin(validator)
    srv.add(NAME, OLD_DATA, NEW_DATA, switch_after=n)
    m = _mount(mount, srv, prefetch=prefetch)
    t = Tally(f"sequential prefetch={prefetch} {validator} N={n}")
    fd = _open(m)
    try:
        assert os.fstat(fd).st_size == SIZE
        # With prefetch on, let the prefetcher run ahead after block 0.
        pause = 0.3 if prefetch == "on" else 0.0
        t.add("pass1", _bounded(run_bounded, m, lambda: read_pass(fd, pause_after_first=pause)))
        t.add("pass2", _bounded(run_bounded, m, lambda: read_pass(fd)))
    finally:
        os.close(fd)
    t.check(srv, m)


# --- 8 parallel preads ---------------------------------------------------------

@pytest.mark.parametrize("start", ["cold", "pinned"])
@pytest.mark.parametrize("n", NS)
@pytest.mark.parametrize("validator", MODES)
def test_parallel(origin, mount, run_bounded, validator, n, start):
    """cold: the 8 preads are the file's first reads (they race to pin);
    pinned: 4 KiB of block 0 is read first (one GET, OLD), then the 8
    preads go out right after the switch. Then the whole file again."""
    srv = origin(validator)
    srv.add(NAME, OLD_DATA, NEW_DATA, switch_after=n)
    m = _mount(mount, srv, prefetch="off")
    t = Tally(f"parallel start={start} {validator} N={n}")
    fd = _open(m)
    try:
        if start == "pinned":
            r = os.pread(fd, 4096, 0)
            assert r == OLD_DATA[:4096], "the first GET must be OLD"
        t.add("parallel", _bounded(run_bounded, m, lambda: parallel_pass(fd)))
        t.add("rest", _bounded(run_bounded, m, lambda: read_pass(fd)))
    finally:
        os.close(fd)
    t.check(srv, m)


# --- SSD tier, unmount, switch, remount --------------------------------------------

def _cache_first_blocks(m1):
    """Reads blocks 0-3 (all OLD) on mount m1, then unmounts it, which waits
    for the SSD writer: those blocks are then in the SSD tier."""
    fd = _open(m1)
    try:
        first = {k: read_block(fd, k) for k in range(4)}
    finally:
        os.close(fd)
    assert first == {k: "old" for k in range(4)}, first
    m1.check_stop()


@pytest.mark.parametrize("order", ["ssd-first", "origin-first", "noswitch"])
@pytest.mark.parametrize("validator", MODES)
def test_ssd_remount(origin, mount, run_bounded, tmp_path, validator, order):
    """Mount 1 caches blocks 0-3 (OLD) in the SSD tier. The object switches
    to NEW while unmounted; mount 2 (same ssd_dir) reads the whole file,
    from block 0 (SSD first) or from block 7 (origin first)."""
    srv = origin(validator)
    srv.add(NAME, OLD_DATA, NEW_DATA, switch_after=NEVER)
    ssd = tmp_path / "ssd"
    ssd.mkdir()
    _cache_first_blocks(_mount(mount, srv, name="mnt1", prefetch="off", ssd_dir=str(ssd)))
    gets1 = srv.gets(NAME)
    if order != "noswitch":
        srv.set_version(NAME, NEW)

    m2 = _mount(mount, srv, name="mnt2", prefetch="off", ssd_dir=str(ssd))
    case = f"ssd-remount order={order} {validator}"
    seq = list(range(NBLK)) if order != "origin-first" else [7] + list(range(7))
    fd = _open(m2)
    try:
        # Mount 1's reads and mount 2's are not one version by contract:
        # check mount 2 on its own.
        t2 = Tally(case)
        t2.add("mount2 pass1", _bounded(run_bounded, m2, lambda: read_pass(fd, seq)))
        t2.add("mount2 pass2", _bounded(run_bounded, m2, lambda: read_pass(fd)))
    finally:
        os.close(fd)
    gets2 = srv.gets(NAME) - gets1
    print(f"\n{case}: mount1 GETs={gets1} mount2 GETs={gets2}")
    t2.check(srv, m2, expect_all_old=order == "noswitch")
    if order == "noswitch":
        # Mount 1 fetched blocks 0-3 (and whatever the kernel read ahead):
        # mount 2 must take those from the SSD tier, not the origin.
        assert gets1 >= 4 and gets1 + gets2 == NBLK, \
            f"mount 1: {gets1} GETs, mount 2: {gets2} GETs; each block once\n" \
            f"{srv.describe_log(NAME)}"


def test_ssd_remount_without_validator(origin, mount, tmp_path):
    """An origin with neither ETag nor Last-Modified: a same-size change
    cannot be seen, so SSD entries of such an object serve only the mount
    that stored them. Mount 1 caches blocks 0-3 (OLD); the object changes
    (same size, same listing) while unmounted; mount 2 reads every block:
    all NEW, none from the SSD tier (before: blocks 0-3 OLD from the SSD
    tier, 4-7 NEW from the origin, in one file). Within one mount the
    entries are used: mount 2 reads again after its RAM tier lost them."""
    srv = origin("none")
    srv.add(NAME, OLD_DATA, NEW_DATA, switch_after=NEVER)
    ssd = tmp_path / "ssd"
    opts = dict(prefetch="off", ssd_dir=str(ssd))
    _cache_first_blocks(_mount(mount, srv, name="mnt1", **opts))
    srv.set_version(NAME, NEW)
    m2 = _mount(mount, srv, name="mnt2", **dict(opts, ram_size="2M"))
    fd = _open(m2)
    try:
        second = read_pass(fd)
        stale = m2.stats()["ssd"]["stale"]
        third = read_pass(fd)  # RAM holds 2 of the 8 blocks: the SSD tier serves
    finally:
        os.close(fd)
    assert second == {k: "new" for k in range(NBLK)}, second
    assert stale >= 4, m2.stats()["ssd"]  # mount 1's entries: found, dropped
    assert third == {k: "new" for k in range(NBLK)}, third
    assert m2.stats()["ssd"]["hits"] > 0, m2.stats()["ssd"]


# --- the object grows (or shrinks) -----------------------------------------------------

GROW_CASES = [(n, v) for v in ("etag", "lastmod", "none") for n in (1, 3)]


@pytest.mark.parametrize("length", ["grows", "shrinks"])
@pytest.mark.parametrize("n,validator", GROW_CASES,
                         ids=[f"{v}-N{n}" for n, v in GROW_CASES])
def test_growing(origin, mount, run_bounded, n, validator, length):
    """NEW is longer than the listed size: its total in Content-Range
    differs, whatever the validator (also with none at all). Shrinking:
    the same, and a block past NEW's end is answered 416."""
    srv = origin(validator)
    srv.add(NAME, OLD_DATA, NEW_GROWN if length == "grows" else NEW_SHRUNK,
            switch_after=n)
    m = _mount(mount, srv, prefetch="off")
    t = Tally(f"{'growing' if length == 'grows' else 'shrinking'} {validator} N={n}")
    fd = _open(m)
    try:
        assert os.fstat(fd).st_size == SIZE
        # Shrinking: block 7 second, so that its GET can meet a 416.
        seq = list(range(NBLK)) if length == "grows" else [0, 7] + list(range(1, 7))
        t.add("pass1", _bounded(run_bounded, m, lambda: read_pass(fd, seq)))
        t.add("pass2", _bounded(run_bounded, m, lambda: read_pass(fd)))
    finally:
        os.close(fd)
    t.check(srv, m)
    assert t.versions() <= {"old"}, "NEW (another length) must never be served"


# --- no switch: nothing breaks ---------------------------------------------------

@pytest.mark.parametrize("prefetch", ["off", "on"])
@pytest.mark.parametrize("validator", ["etag", "weak", "lastmod", "none"])
def test_no_switch_all_old(origin, mount, run_bounded, validator, prefetch):
    """An unchanged object is served in full with every validator mode
    (conditional headers must not make a good origin fail)."""
    srv = origin(validator)
    srv.add(NAME, OLD_DATA, NEW_DATA, switch_after=NEVER)
    m = _mount(mount, srv, prefetch=prefetch)
    t = Tally(f"no-switch prefetch={prefetch} {validator}")
    fd = _open(m)
    try:
        t.add("parallel", _bounded(run_bounded, m, lambda: parallel_pass(fd)))
        t.add("pass", _bounded(run_bounded, m, lambda: read_pass(fd)))
    finally:
        os.close(fd)
    t.check(srv, m, expect_all_old=True)


# --- conditional requests after the pin ------------------------------------------

@pytest.mark.parametrize("validator", ["etag", "weak", "lastmod", "none"])
def test_conditional_headers(origin, mount, run_bounded, validator):
    """Once block 0 pinned the file's validator, later ranged GETs carry
    If-Match (strong ETag) or If-Unmodified-Since (Last-Modified only); a
    weak ETag is never sent in If-Match (it could never match). After the
    switch the origin answers 412 and the read fails with EIO."""
    srv = origin(validator)
    srv.add(NAME, OLD_DATA, NEW_DATA, switch_after=NEVER)
    m = _mount(mount, srv, prefetch="off")
    t = Tally(f"conditional {validator}")
    fd = _open(m)
    try:
        # 4 KiB reads: the kernel's readahead stays inside the block.
        t.add("block 0", {0: read_small(fd, 0)})
        t.add("block 5", {5: read_small(fd, 5)})
        if validator != "none":  # a switch it cannot see: not meaningful
            srv.set_version(NAME, NEW)
            t.add("block 7 after switch",
                  _bounded(run_bounded, m, lambda: {7: read_small(fd, 7)}))
    finally:
        os.close(fd)
    t.check(srv, m)
    log = srv.describe_log(NAME)
    gets = srv.requests(NAME)
    assert t.passes[0][1] == {0: "old"} and t.passes[1][1] == {5: "old"}, log
    # The GETs of blocks 5 and 7 came after block 0's answer was used.
    later = [r for r in gets if r.range and not r.range.startswith("bytes=0-")]
    assert later, log
    if validator == "etag":
        want = srv.etag(NAME, OLD)
        assert all(r.if_match == want for r in later), \
            f"later GETs should carry If-Match: {want}\n{log}"
    elif validator == "lastmod":
        assert all(r.if_unmodified_since for r in later), \
            f"later GETs should carry If-Unmodified-Since\n{log}"
    else:
        assert not any(r.if_match.startswith("W/") for r in later), \
            f"a weak ETag must not be sent in If-Match\n{log}"
    if validator in ("etag", "lastmod"):
        assert t.passes[2][1] == {7: "EIO"}, f"changed object must fail\n{log}"
        assert any(r.status == 412 for r in later), f"expected a 412\n{log}"
    elif validator == "weak":
        assert t.passes[2][1] == {7: "EIO"}, f"changed object must fail\n{log}"
