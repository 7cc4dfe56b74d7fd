"""Bounded failure: a faulty origin costs a reader a bounded time, the origin
a bounded number of requests, and the log a bounded number of lines.

- every fault kind: one read fails with the right errno within the bound
  man/prestofs.1 documents (ERRORS AND RETRIES), the kernel's retry of the
  failed read pays no second chain (failmem), and the file reads back
  byte-exact once the origin is healthy, without a remount;
- a listing that lies about a size (2^40, 2^62) does not make prefetch run
  away: a handful of GETs and log lines for the file, then silence;
- a storm of failures over many files writes at most the limiter's burst;
- one read that needs several blocks, each answered only at its last
  attempt, still ends within the bound (one deadline for all it waits for).

Origin: helpers.fault_origin.FaultOrigin (in-process, faults set per object).
"""
import errno
import hashlib
import os
import random
import re
import threading
import time

import pytest

from helpers.fault_origin import FaultOrigin

KiB = 1 << 10
TIMEOUT, RETRIES = 1, 1
# Demand reads only: background prefetch would add GETs to the counts.
OPTS = {"timeout": TIMEOUT, "retries": RETRIES, "prefetch": "off"}
# man/prestofs.1, ERRORS AND RETRIES: (retries+1)*timeout + retries*2 s.
BOUND = (RETRIES + 1) * TIMEOUT + RETRIES * 2.0
MARGIN = 1.5  # FUSE round trip, connection setup, scheduling
FAILMEM_TRANSIENT_S = 2  # cache/failmem.h PFS_FAILMEM_TRANSIENT_S
LOG_BURST = 20           # util/log.h PFS_LOG_LIMIT_BURST (per 60 s window)

ERRNO = {"404": errno.ENOENT, "403": errno.EACCES}
PERMANENT = ("404", "403")  # remembered 60 s (PFS_FAILMEM_PERMANENT_S)
WARN_RE = re.compile(r"^prestofs: (WARN|ERROR): ")


@pytest.fixture
def origin():
    # stall_s: longer than the client's timeout, short enough that the
    # server's threads end soon after each test.
    srv = FaultOrigin(stall_s=TIMEOUT + 2.0).start()
    yield srv
    srv.stop()


def _data(seed, n):
    return random.Random(seed).randbytes(n)


def _pread(path, n, off=0):
    """(bytes | OSError, seconds) of one pread on a fresh descriptor."""
    fd = os.open(path, os.O_RDONLY)
    try:
        t0 = time.monotonic()
        try:
            res = os.pread(fd, n, off)
        except OSError as e:
            res = e
        return res, time.monotonic() - t0
    finally:
        os.close(fd)


def _errname(res):
    if isinstance(res, OSError):
        return errno.errorcode.get(res.errno, str(res.errno))
    return f"{len(res)} bytes"


# --- 1. time to fail, per fault kind ----------------------------------------

@pytest.mark.parametrize("kind", ["stall", "500", "503", "429", "reset", "short",
                                  "404", "403"])
def test_eio_bound_per_fault(origin, mount, run_bounded, kind):
    name, size = "d/f.bin", 200 * KiB
    data = _data(kind, size)
    origin.add(name, data, kind=kind)
    m = mount(origin.url, OPTS)
    p = m.path / name
    want = ERRNO.get(kind, errno.EIO)

    (res, el), _ = run_bounded(lambda: _pread(p, size), BOUND + MARGIN + 15, m.path)
    gets = origin.gets(name)
    log = origin.describe_log(name)
    assert isinstance(res, OSError) and res.errno == want, \
        f"{kind}: got {_errname(res)}, want {errno.errorcode[want]}\n{log}"
    assert el <= BOUND + MARGIN, \
        f"{kind}: failed after {el:.2f}s; bound {BOUND:.1f}s + {MARGIN}s\n{log}"
    # The kernel retries a failed read at once: that retry must not pay a
    # second chain (the issue saw 12 attempts for retries=5).
    assert gets <= RETRIES + 1, f"{kind}: {gets} GETs for one failed read\n{log}"
    if kind in PERMANENT:
        assert gets == 1, f"{kind} is final, never retried: {gets} GETs\n{log}"

    assert m.stats()["failed_files"] >= 1
    if kind in PERMANENT:
        # An answer that retrying cannot change is remembered (60 s): the
        # next read fails at once without asking the origin.
        (res2, el2), _ = run_bounded(lambda: _pread(p, size), 10, m.path)
        assert isinstance(res2, OSError) and res2.errno == want, \
            f"{kind}: second read got {_errname(res2)}"
        assert el2 < 0.5, f"{kind}: second read took {el2:.2f}s (remembered failure)"
        assert origin.gets(name) == gets, \
            f"{kind}: second read sent {origin.gets(name) - gets} GETs\n" \
            f"{origin.describe_log(name)}"
    print(f"\n{kind}: failed in {el:.3f}s ({gets} GETs)", end="")

    # Healthy again: the file comes back, byte-exact, without a remount.
    origin.set_fault(name, "ok")
    t_ok = time.monotonic()
    last = None
    while time.monotonic() - t_ok <= 5.0:
        (last, _), _ = run_bounded(lambda: _pread(p, size), 10, m.path)
        if isinstance(last, bytes):
            break
        time.sleep(0.1)
    waited = time.monotonic() - t_ok
    if kind in PERMANENT:
        # A 404/403 is remembered PFS_FAILMEM_PERMANENT_S (60 s): within
        # these 5 s it keeps failing at once, without asking the origin.
        assert isinstance(last, OSError) and last.errno == want, \
            f"{kind}: read {_errname(last)} within 5 s of the origin healing"
        assert origin.gets(name) == gets
        return
    assert isinstance(last, bytes), \
        f"{kind}: still {_errname(last)} {waited:.1f}s after the origin healed\n" \
        f"{origin.describe_log(name)}"
    assert hashlib.sha256(last).hexdigest() == hashlib.sha256(data).hexdigest(), \
        f"{kind}: {len(last)} bytes read back, not the object's"
    print(f", back after {waited:.2f}s", end="")


# --- 2. a listing that lies about a size ------------------------------------

def test_lying_size_no_runaway_prefetch(origin, mount, run_bounded):
    real = 4 * KiB
    big, huge = "d/big.bin", "d/huge.bin"
    origin.add(big, _data("big", real), listed_size=2**40)
    origin.add(huge, _data("huge", real), listed_size=2**62)  # never read
    small = {f"d/s{i:02d}.bin": _data(i, 16 * KiB) for i in range(20)}
    for n, d in small.items():
        origin.add(n, d)
    m = mount(origin.url, {"timeout": 2})  # prefetch on (default), retries 5

    def walk():
        n = 0
        for dp, dns, fns in os.walk(m.path / "d"):
            for f in fns:
                os.stat(os.path.join(dp, f))
                n += 1
        return n
    (n, _) = run_bounded(walk, 20, m.path)
    assert n == 22, n
    assert os.stat(m.path / big).st_size == 2**40
    assert os.stat(m.path / huge).st_size == 2**62

    for n in ("d/s00.bin", "d/s01.bin"):  # starts background fill of d/
        got, _ = run_bounded(lambda: (m.path / n).read_bytes(), 20, m.path)
        assert got == small[n], n

    (res, el), _ = run_bounded(lambda: _pread(m.path / big, 64 * KiB), 30, m.path)
    assert isinstance(res, OSError) and res.errno == errno.EIO, \
        f"big.bin: {_errname(res)} (expected EIO)"

    before_idle = origin.gets(big) + origin.gets(huge)
    time.sleep(10)  # the issue's own definition: 10 s idle, nothing polled
    idle_gets = origin.gets(big) + origin.gets(huge) - before_idle

    log = m.stderr_text(10**7)
    big_lines = [l for l in log.splitlines() if "big.bin" in l]
    # All checked, then reported together: each is a separate bound.
    problems = []
    if origin.gets(big) > 5:
        problems.append(f"{origin.gets(big)} GETs of big.bin (max 5)\n"
                        f"{origin.describe_log(big, limit=12)}")
    if origin.gets(huge) > 5:
        problems.append(f"{origin.gets(huge)} GETs of huge.bin, never read (max 5)\n"
                        f"{origin.describe_log(huge, limit=12)}")
    if len(big_lines) > 3:
        problems.append(f"{len(big_lines)} log lines name big.bin (max 3):\n" +
                        "\n".join(big_lines[:10]))
    if not re.search(rf"big\.bin: listed size {2**40}, origin has {real}\b", log):
        problems.append("no 'big.bin: listed size N, origin has M' line; lines:\n" +
                        "\n".join(big_lines))
    print(f"\nbig.bin: {origin.gets(big)} GETs, read failed in {el:.3f}s, "
          f"{len(big_lines)} log lines; huge.bin: {origin.gets(huge)} GETs; {idle_gets} of them while idle")
    assert not problems, "\n\n".join(problems)


# --- 3. a storm of failures over many files ---------------------------------

@pytest.mark.parametrize("kind", ["500", "reset"])
def test_log_flood_bounded(origin, mount, run_bounded, kind):
    names = [f"storm/f{i:02d}.bin" for i in range(60)]
    for n in names:
        origin.add(n, _data(n, 8 * KiB), kind=kind)
    m = mount(origin.url, {"timeout": 1, "retries": 0})
    results = []
    lock = threading.Lock()

    def reader(seed):
        order = names * 2
        random.Random(seed).shuffle(order)
        for n in order:
            res, _ = _pread(m.path / n, 8 * KiB)
            with lock:
                results.append((n, res))

    def storm():
        ts = [threading.Thread(target=reader, args=(i,)) for i in range(8)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    _, el = run_bounded(storm, 60, m.path)

    assert len(results) == 8 * 2 * len(names)
    bad = [(n, _errname(r)) for n, r in results
           if not (isinstance(r, OSError) and r.errno == errno.EIO)]
    assert not bad, f"{len(bad)} reads did not fail with EIO: {bad[:5]}"
    st = m.stats()
    warn = [l for l in m.stderr_text(10**7).splitlines() if WARN_RE.match(l)]
    lines = warn
    # The limiter writes at most LOG_BURST lines per 60 s over all keys
    # (the test runs well inside one window); 5 more for one-off warnings
    # that are not rate-limited by design (none expected here).
    assert len(lines) <= LOG_BURST + 5, \
        f"{len(lines)} WARN/ERROR lines for {len(results)} failed reads:\n" + \
        "\n".join(warn[:40])
    assert st["failed_files"] == len(names), st["failed_files"]
    # Each file failed at the origin at least once: >= 60 limited lines
    # asked for, at most LOG_BURST written.
    assert st["log_lines_dropped"] >= len(names) - LOG_BURST, st["log_lines_dropped"]
    print(f"\n{kind}: {len(results)} reads in {el:.2f}s, {len(lines)} WARN/ERROR lines, "
          f"{sum(origin.gets(n) for n in names)} GETs, "
          f"log_lines_dropped {st['log_lines_dropped']}")


# --- 4. one deadline per read, however many blocks it waits for -------------

def test_multi_block_read_bounded(origin, mount, run_bounded):
    """Each 16 KiB block of a 128 KiB read stalls twice, then is served:
    each block alone is within the retries (3 attempts), but their chains
    in turn took 8 x ~2.2 s. The read now ends (bytes, the bytes before
    the part that failed, or EIO) within the one bound; never wrong bytes."""
    name, size = "d/multi.bin", 128 * KiB
    data = _data("multi", size)
    origin.add(name, data)
    retries = 2
    bound = (retries + 1) * TIMEOUT + retries * 2.0
    m = mount(origin.url, {"timeout": TIMEOUT, "retries": retries, "prefetch": "off",
                           "block_size": "16K"})
    origin.set_fault(name, "stall", per_range=2)
    p = m.path / name
    (res, el), _ = run_bounded(lambda: _pread(p, size), 60, m.path)
    log = origin.describe_log(name)
    stats = m.stats()
    print(f"\nmulti-block read: {_errname(res)} in {el:.2f}s (bound {bound:.1f}s), "
          f"{origin.gets(name)} GETs, deadline_cut {stats['origin']['deadline_cut']}", end="")
    assert el <= bound + MARGIN, \
        f"a read of 8 blocks took {el:.2f}s; bound {bound:.1f}s + {MARGIN}s\n{log}"
    if isinstance(res, bytes):
        # All of it, or (prestofs(1): the kernel split the read and a later
        # part failed) the bytes before the part that failed: never wrong.
        assert res == data[:len(res)], "wrong bytes"
        if len(res) < size:
            assert stats["origin"]["deadline_cut"] >= 1, stats["origin"]
    else:
        assert res.errno == errno.EIO, _errname(res)
        assert stats["origin"]["deadline_cut"] >= 1, stats["origin"]
    # Healthy: the file reads back byte-exact, without a remount.
    origin.set_fault(name, "ok")
    got = None
    t_ok = time.monotonic()
    while time.monotonic() - t_ok <= 5.0:
        (got, _), _ = run_bounded(lambda: _pread(p, size), 20, m.path)
        if isinstance(got, bytes):
            break
        time.sleep(0.1)
    assert isinstance(got, bytes) and hashlib.sha256(got).digest() == \
        hashlib.sha256(data).digest(), _errname(got)


# --- 5. a block read in pieces is fetched once --------------------------------

@pytest.mark.parametrize("policy", ["epoch", "minio"])
def test_block_read_in_pieces_fetched_once(origin, mount, run_bounded, policy):
    """The kernel reads in 4 KiB pieces without readahead (FADV_RANDOM, or
    after a read error shrank its window). With the resident set full, a
    block it refused was fetched once per piece (64 GETs per 256 KiB block;
    under stall faults each piece could stall, and one read(2) paid many
    chains). Now it stays staged until a read reaches its end."""
    bs = 256 * KiB
    fill, target = "d/fill.bin", "d/target.bin"
    origin.add(fill, _data("fill", 3 * bs))
    tdata = _data("target", 2 * bs)
    origin.add(target, tdata)
    # ram_size 1M: a resident set of 3 blocks and a staging area of one
    # (prefetch off: tools/main.c gives a 16th, at least one block).
    m = mount(origin.url, {"block_size": "256K", "ram_size": "1M", "prefetch": "off",
                           "policy": policy})
    got, _ = run_bounded(lambda: (m.path / fill).read_bytes(), 30, m.path)
    assert len(got) == 3 * bs

    def pieces():
        fd = os.open(m.path / target, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
            out = bytearray()
            for off in range(0, 2 * bs, 4 * KiB):
                out += os.pread(fd, 4 * KiB, off)
            return bytes(out)
        finally:
            os.close(fd)
    got, _ = run_bounded(pieces, 60, m.path)
    ram = m.stats()["ram"]
    print(f"\n{policy}: {origin.gets(target)} GETs for 2 blocks read in 128 pieces; "
          f"staged_partial {ram.get('staged_partial')}, refused {ram['refused']}", end="")
    assert hashlib.sha256(got).digest() == hashlib.sha256(tdata).digest()
    assert ram["resident_blocks"] == 3, ram
    assert origin.gets(target) == 2, \
        f"{origin.gets(target)} GETs for 2 blocks\n{origin.describe_log(target, limit=8)}"
    assert ram["staged_partial"] == 2 and ram["staged_blocks"] == 0, ram


def test_minio_prefetch_never_fetches_what_it_cannot_keep(origin, mount, run_bounded):
    """Under minio the staging area keeps only blocks read in part: the
    prefetcher must not count it as room (its fills would be thrown away)."""
    bs = 256 * KiB
    name = "d/seq.bin"
    data = _data("seq", 12 * bs)
    origin.add(name, data)
    m = mount(origin.url, {"block_size": "256K", "ram_size": "1M", "policy": "minio"})
    got, _ = run_bounded(lambda: (m.path / name).read_bytes(), 60, m.path)
    assert hashlib.sha256(got).digest() == hashlib.sha256(data).digest()
    s = m.stats()
    print(f"\nminio + prefetch: {origin.gets(name)} GETs for 12 blocks; "
          f"prefetch {s['prefetch']['bytes_wasted']} bytes wasted", end="")
    # The verdict is the waste (the bug: 786,432 bytes, 16 GETs). The GETs
    # are not bounded here: with one block of staging, two of the kernel's
    # readahead requests sharing a block under load may each fill it.
    assert s["prefetch"]["bytes_wasted"] == 0, s["prefetch"]
