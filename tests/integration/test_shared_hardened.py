"""The shared tier hardened (issue 27): a deadline on every exchange, no
value longer than a block read, values authenticated with a key file, and
the defaults holding on a busy node.

Servers: nginx, real memcached, and helpers.fake_memcached (a server that
trickles one byte every 40 ms, declares a 10^9-byte value, hangs, or
resets). Options are the defaults unless a test says why.
- trickling / huge / hung / resetting server: every read exact, each read
  costs at most one deadline (the ceiling, 1 s) before the server is taken
  out; the daemon's memory stays bounded; unmount ends within 2 s.
- a forged value (block bytes changed, checksum recomputed): refused with a
  key file (auth_failures, deleted, exact bytes from the origin); served
  without one (the documented reason for the key file).
- key files: group/world-readable, short, missing: the mount fails naming
  the option; keyed and unkeyed mounts do not share values.
- the defaults on a busy node (serial): a second mount over a filled tier
  fetches at most 1% of its blocks from the origin, two CPU hogs beside it.
"""
import hashlib
import os
import struct
import subprocess
import sys
import threading
import time

import pytest

from helpers.fake_memcached import FakeMemcached
from test_shared import (KiB, make_files, nblocks, read_checked, requests, servers,
                         shared_stats, sha_of, wait_drained)

CEILING = 1.0  # shared_timeout's default: the longest deadline
MARGIN = 1.0   # FUSE round trip, the origin's own read, a loaded machine


def _vm_kib(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def _timed_reads(m, files):
    """Reads each file in turn; (bad files, the longest read in s)."""
    bad, longest = [], 0.0
    for rel, digest in sorted(files.items()):
        t0 = time.monotonic()
        try:
            ok = sha_of(m.path / rel) == digest
        except OSError as e:
            ok, rel = False, f"{rel}: {e}"
        longest = max(longest, time.monotonic() - t0)
        if not ok:
            bad.append(rel)
    return bad, longest


@pytest.mark.parametrize("mode", ["trickle", "huge", "hang", "reset"])
def test_misbehaving_server_bounded(tmp_path, nginx, mount, mode):
    src = tmp_path / "src"
    files = make_files(src, 12, 20 * KiB, 200 * KiB, 27)
    ng = nginx(src)
    fake = FakeMemcached(mode).start()
    try:
        m = mount(ng.url, {"prefetch": "off", "shared_cache": f"memcached://{fake.url}"},
                  name="a")
        bad, longest = _timed_reads(m, files)
        s = shared_stats(m)
        print(f"\n{mode}: longest read {longest:.2f} s, {s}", end="")
        assert bad == [], bad
        # A get that gets no answer is a miss without a lock (the read goes
        # to the origin): each read pays at most one deadline, the ceiling
        # while the server has never answered, until the server is out.
        assert longest <= CEILING + MARGIN, (longest, s)
        if mode in ("trickle", "hang"):
            assert s["timeouts"] >= 1 and s["servers_down"] == 1, s
        if mode == "reset":
            assert s["errors"] >= 1 and s["servers_down"] == 1, s
        if mode == "huge":
            assert s["too_long"] >= 1, s
            # Nothing was allocated for the declared 10^9 bytes (a
            # sanitizer reserves terabytes of address space: not measured).
            if not os.environ.get("PRESTOFS_SANITIZED"):
                peak = _vm_kib(m.proc.pid, "VmPeak")
                print(f", VmPeak {peak >> 10} MiB", end="")
                assert peak < 1024 * 1024, f"VmPeak {peak} KiB"
        t0 = time.monotonic()
        assert m.stop() == []
        took = time.monotonic() - t0
        print(f", unmount {took:.2f} s", end="")
        assert took < 2.0, took
    finally:
        fake.stop()


def test_unmount_with_stores_queued_to_a_trickling_server(tmp_path, nginx, mount):
    """Stores queued for a server that answers one byte per 40 ms: the
    unmount drops what it cannot store within its deadline and ends within
    2 s; reads never waited for the stores."""
    src = tmp_path / "src"
    files = make_files(src, 40, 50 * KiB, 300 * KiB, 28)
    ng = nginx(src)
    slow, hung = FakeMemcached("trickle").start(), FakeMemcached("hang").start()
    try:
        m = mount(ng.url, {"prefetch": "off",
                           "shared_cache": f"memcached://{slow.url}+{hung.url}"}, name="a")
        assert read_checked(m, files, threads=4) == []
        t0 = time.monotonic()
        assert m.stop() == []
        took = time.monotonic() - t0
        print(f"\nunmount with stores to a trickling and a hung server: {took:.2f} s")
        assert took < 2.0, took
    finally:
        slow.stop()
        hung.stop()


# --- authenticated values ----------------------------------------------------

def _key_file(path, text="k" * 40 + "\n", mode=0o600):
    path.write_text(text)
    os.chmod(path, mode)
    return str(path)


def _values(mc):
    return [k for k in mc.keys() if not k.endswith(":L")]


def _forge(mc, key):
    """Changes the block bytes of the value under key and, for an unkeyed
    value, recomputes its XXH3 checksum (no secret is needed for that)."""
    import xxhash
    val = mc.get(key)
    magic, fmt, vlen, _z, blen, _z2, kh0, kh1, _sum = struct.unpack_from("<IBBHIIQQQ", val)
    mac = 32 if fmt == 2 else 0
    off = 40 + mac
    v = val[off:off + vlen]
    block = bytes(b ^ 0x5A for b in val[off + vlen:])
    assert len(block) == blen
    khi = xxhash.xxh3_128_intdigest(key.encode())
    seed = (khi & (2**64 - 1)) ^ xxhash.xxh3_64_intdigest(v)
    s = xxhash.xxh3_64_intdigest(block, seed=seed) if fmt == 1 else 0
    hdr = struct.pack("<IBBHIIQQQ", magic, fmt, vlen, 0, blen, 0, kh0, kh1, s)
    mc.set(key, hdr + val[40:off] + v + block)


def _filled_tier(tmp_path, nginx, mount, memcached, count, seed, keyed):
    """An origin of `count` files, a memcached, and mount "a" that read them
    all and stored them there: (src, files, ng, mc, options, a)."""
    src = tmp_path / "src"
    files = make_files(src, count, 20 * KiB, 100 * KiB, seed)
    ng = nginx(src)
    mc = memcached()
    o = {"prefetch": "off", "shared_cache": servers(mc)}
    if keyed:
        o["shared_key_file"] = _key_file(tmp_path / "key")
    a = mount(ng.url, o, name="a")
    assert read_checked(a, files) == []
    wait_drained(a)
    return src, files, ng, mc, o, a


def test_forged_value_refused_with_a_key(tmp_path, nginx, mount, memcached):
    src, files, ng, mc, o, a = _filled_tier(tmp_path, nginx, mount, memcached, 10, 29, True)
    keys = _values(mc)
    assert keys and all(k.startswith("pfsk:") for k in keys), keys
    for k in keys:
        _forge(mc, k)
    b = mount(ng.url, o, name="b")
    r0 = requests(b)
    assert read_checked(b, files) == []          # exact: from the origin
    s = shared_stats(b)
    print(f"\nkeyed, {len(keys)} forged values: {s}")
    assert s["auth_failures"] == len(keys) and s["hits"] == 0, s
    assert requests(b) - r0 >= len(keys)


def test_forged_value_served_without_a_key(tmp_path, nginx, mount, memcached):
    """Why the key file exists: without it, whoever reaches memcached can
    replace a block and recompute its checksum, and a node serves it
    (prestofs(1), SHARED TIER). This test shows it happen."""
    src, files, ng, mc, o, a = _filled_tier(tmp_path, nginx, mount, memcached, 6, 30, False)
    keys = _values(mc)
    assert keys and all(k.startswith("pfs1:") for k in keys), keys
    for k in keys:
        _forge(mc, k)
    b = mount(ng.url, o, name="b")
    bad = read_checked(b, files)
    s = shared_stats(b)
    print(f"\nunkeyed, {len(keys)} forged values: {len(bad)} files read wrong, {s}")
    assert len(bad) == len(files) and s["hits"] == len(keys), (bad, s)
    assert "no shared_key_file" in a.stderr_text()


@pytest.mark.parametrize("case", ["group", "world", "short", "missing"])
def test_bad_key_files(tmp_path, prestofs_bin, case):
    kf = tmp_path / "key"
    if case == "group":
        _key_file(kf, mode=0o640)
    elif case == "world":
        _key_file(kf, mode=0o604)
    elif case == "short":
        _key_file(kf, text="k" * 31 + "\n")
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    r = subprocess.run([prestofs_bin, "http://127.0.0.1:9/", str(mnt), "-f", "-o",
                        f"shared_cache=memcached://127.0.0.1:9,shared_key_file={kf}"],
                       capture_output=True, text=True, timeout=30)
    print(f"\n{case}: rc {r.returncode}: {r.stderr.strip()[-200:]}", end="")
    assert r.returncode != 0
    assert "shared_key_file" in r.stderr, r.stderr
    assert "k" * 31 not in r.stderr  # the secret never reaches a message


def test_keyed_and_unkeyed_do_not_share(tmp_path, nginx, mount, memcached):
    src, files, ng, mc, keyed, a = _filled_tier(tmp_path, nginx, mount, memcached, 8, 31,
                                                True)
    b = mount(ng.url, {"prefetch": "off", "shared_cache": servers(mc)}, name="b")
    assert read_checked(b, files) == []
    assert shared_stats(b)["hits"] == 0, shared_stats(b)
    other = _key_file(tmp_path / "key2", text="z" * 40 + "\n")
    c = mount(ng.url, dict(keyed, shared_key_file=other), name="c")
    assert read_checked(c, files) == []
    assert shared_stats(c)["hits"] == 0, shared_stats(c)
    d = mount(ng.url, keyed, name="d")
    assert read_checked(d, files) == []
    assert shared_stats(d)["hits"] == nblocks(src, files, 1 << 20), shared_stats(d)


# --- the defaults on a busy node ------------------------------------------------

def _hog():
    return subprocess.Popen([sys.executable, "-c",
                             "import os,sys\nwhile True:\n    pass\n"])


@pytest.mark.serial
def test_defaults_two_mounts_two_hogs(tmp_path, nginx, mount, memcached):
    """Issue 27's finding 1 at the defaults: mount B over the tier mount A
    filled, on this 2-core machine with two CPU hogs running."""
    if os.environ.get("PRESTOFS_SANITIZED"):
        pytest.skip("measures what a loaded node loses to deadlines")
    src = tmp_path / "src"
    files = make_files(src, 300, 60 * KiB, 150 * KiB, 32)
    blocks = nblocks(src, files, 1 << 20)
    ng = nginx(src)
    mcs = [memcached(), memcached()]
    o = {"shared_cache": servers(*mcs)}
    hogs = [_hog() for _ in range(2)]
    try:
        a = mount(ng.url, o, name="a")
        assert read_checked(a, files, threads=4) == []
        wait_drained(a)
        sa = shared_stats(a)
        b = mount(ng.url, o, name="b")
        r0 = requests(b)
        assert read_checked(b, files, threads=4) == []
        sb = shared_stats(b)
        fetched = requests(b) - r0
    finally:
        for h in hogs:
            h.kill()
            h.wait()
    print(f"\nA: {sa}\nB: {fetched} of {blocks} blocks from the origin; {sb}")
    assert fetched <= blocks // 100, (fetched, sb, sa)


def test_server_restart_is_not_a_failure(tmp_path, nginx, mount, memcached):
    """memcached restarted on its port between reads: the daemon's idle
    connections to it are dead, which says nothing about the server. The
    next exchanges open new ones; the server is never taken out."""
    src = tmp_path / "src"
    files = make_files(src, 20, 20 * KiB, 100 * KiB, 33)
    ng = nginx(src)
    mc = memcached()
    m = mount(ng.url, {"prefetch": "off", "shared_cache": servers(mc)}, name="a")
    first = dict(sorted(files.items())[:10])
    assert read_checked(m, first, threads=4) == []
    wait_drained(m)
    mc.kill9()
    mc.start()
    rest = dict(sorted(files.items())[10:])
    assert read_checked(m, rest, threads=4) == []
    wait_drained(m)
    s = shared_stats(m)
    print(f"\nafter a restart: {s}")
    assert s["servers_down"] == 0 and s["errors"] == 0 and s["store_failures"] == 0, s
    assert len(_values(mc)) == len(rest), (len(_values(mc)), len(rest))
