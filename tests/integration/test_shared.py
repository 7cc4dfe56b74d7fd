"""The shared tier (issue 16): blocks in memcached that every node asks
before the origin, never at the cost of a wrong byte or a failed read.

Real servers: nginx, three memcached (-I 2m) started by the test, two or
three prestofs daemons on their own mountpoints over one origin.
- What mount A fetched, mount B reads from memcached: at most 1% of B's
  blocks come from the origin, every byte exact.
- kill -9 of one memcached while B reads: every read succeeds and is exact;
  that server's share comes from the origin.
- Garbage under real keys (random bytes, a truncated value, a flipped byte,
  another key's value): counted, deleted, refetched, exact.
- The object changes on the origin: a new mount never gets the old bytes;
  a mount that pinned the new version never mixes in old blocks that are
  still in memcached.
- A memcached that refuses items (-M, little memory), one whose items are
  too small for a block (-I 1m with 1M blocks), one that never answers,
  one that is not there: no read fails.
- Two mounts missing the same blocks at once: one fetches, the other
  waits for it (the lock); bad option values name themselves.
Every wait is bounded; verdicts are counts and hashes, not times.
"""
import errno
import hashlib
import json
import os
import random
import socket
import subprocess
import threading
import time

import pytest

from helpers.compare import drop_page_cache, read_all
from helpers.dataset import make_random_files
from s3_fixtures import s3rver  # noqa: F401  (the fixture)

KiB = 1 << 10
MiB = 1 << 20
WAIT = 60.0


def make_files(root, count, lo, hi, seed):
    return make_random_files(root, count, lo, hi, seed, dirs=3, width=3)


def nblocks(root, files, bs):
    return sum(-(-(root / r).stat().st_size // bs) for r in files)


def sha_of(path):
    drop_page_cache(path)
    return hashlib.sha256(read_all(path)).hexdigest()


def shared_stats(m):
    return m.stats()["shared"]


def wait_drained(m):
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        if shared_stats(m)["queued"] == 0:
            return
        time.sleep(0.02)
    raise AssertionError(f"stores never drained: {shared_stats(m)}")


def requests(m):
    return m.stats()["origin"]["requests"]


def read_checked(m, files, threads=1):
    """Reads every file through m (in `threads` threads), returns the
    files whose bytes were wrong or whose read failed."""
    bad, lock = [], threading.Lock()
    items = sorted(files.items())

    def work(part):
        for rel, digest in part:
            try:
                ok = sha_of(m.path / rel) == digest
            except OSError as e:
                ok = False
                rel = f"{rel}: {e}"
            if not ok:
                with lock:
                    bad.append(rel)

    ts = [threading.Thread(target=work, args=(items[i::threads],)) for i in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(WAIT * 2)
        assert not t.is_alive(), "a reader hung"
    return bad


def servers(*mcs):
    return "memcached://" + "+".join(mc.url for mc in mcs)


def opts(mcs, **kw):
    # A generous timeout: the CI machine is loaded (the test of what
    # timeouts do, test_hung_and_missing_servers, sets its own).
    o = {"ram_size": "64M", "block_size": "128K", "prefetch": "off",
         "shared_cache": servers(*mcs)}
    o.update(kw)
    return o


@pytest.fixture
def three(memcached):
    return [memcached() for _ in range(3)]


def test_second_mount_reads_from_shared(tmp_path, nginx, mount, three, prestofs_bin):
    src = tmp_path / "src"
    files = make_files(src, 60, 1, 400 * KiB, 1)
    (src / "empty.bin").write_bytes(b"")
    files["empty.bin"] = hashlib.sha256(b"").hexdigest()
    blocks = nblocks(src, files, 128 * KiB)
    ng = nginx(src)
    a = mount(ng.url, opts(three), name="a")
    assert read_checked(a, files) == []
    wait_drained(a)
    sa = shared_stats(a)
    assert sa["stores"] == blocks and sa["hits"] == 0, sa
    assert sa["errors"] == 0 and sa["timeouts"] == 0 and sa["servers"] == 3
    # The ring spreads the keys over all three servers.
    per_server = [len([k for k in mc.keys() if not k.endswith(":L")]) for mc in three]
    assert sum(per_server) == blocks and min(per_server) > 0, per_server
    # No key shows a path or the origin.
    for mc in three:
        for k in mc.keys():
            assert k.startswith("pfs1:") and "/" not in k and ".bin" not in k, k

    b = mount(ng.url, opts(three, ssd_dir=str(tmp_path / "ssd-b")), name="b")
    r0 = requests(b)
    assert read_checked(b, files, threads=4) == []
    sb = shared_stats(b)
    assert requests(b) - r0 <= blocks // 100, (requests(b) - r0, blocks)
    assert sb["hits"] >= blocks - blocks // 100 and sb["checksum_failures"] == 0, sb
    # Blocks from the shared tier are not stored back, but go to B's SSD tier.
    wait_drained(b)
    assert shared_stats(b)["stores"] == requests(b) - r0
    assert b.stats()["ssd"]["queued"] >= blocks - blocks // 100
    # prestofs stat shows the tier.
    r = subprocess.run([str(prestofs_bin), "stat", str(b.path), "--json", "-i", "0.05",
                        "-c", "1"], capture_output=True, text=True, timeout=WAIT)
    assert r.returncode == 0, r.stderr
    row = json.loads(r.stdout.splitlines()[-1])
    assert row["totals"]["shared_hits_total"] == shared_stats(b)["hits"]
    assert "shared_hit_pct" in row


def test_kill9_one_server_while_reading(tmp_path, nginx, mount, three):
    src = tmp_path / "src"
    files = make_files(src, 90, 10 * KiB, 300 * KiB, 2)
    ng = nginx(src)
    a = mount(ng.url, opts(three), name="a")
    assert read_checked(a, files) == []
    wait_drained(a)
    victim = three[1]
    victim_keys = len(victim.keys())
    assert victim_keys > 0

    b = mount(ng.url, opts(three, shared_retry="60"), name="b")
    r0 = requests(b)
    items = sorted(files.items())
    first, rest = dict(items[:30]), dict(items[30:])
    assert read_checked(b, first, threads=4) == []
    victim.kill9()
    assert read_checked(b, rest, threads=4) == []
    sb = shared_stats(b)
    fetched = requests(b) - r0
    print(f"kill9: {victim_keys} keys on the victim, {fetched} origin GETs for "
          f"{nblocks(src, rest, 128 * KiB)} blocks after the kill, {sb}")
    # That server's share (about a third) came from the origin, nothing
    # failed, and the failures were noticed and bounded.
    assert fetched > 0, sb
    assert 1 <= sb["errors"] + sb["timeouts"] <= 8, sb
    assert sb["servers_down"] == 1, sb
    assert fetched <= nblocks(src, rest, 128 * KiB), (fetched, sb)
    # And again, now that the ring has settled: still exact.
    assert read_checked(b, files) == []


def test_garbage_values_are_detected(tmp_path, nginx, mount, three):
    src = tmp_path / "src"
    files = make_files(src, 24, 20 * KiB, 100 * KiB, 3)
    # Three blocks of one file: same length, same validator, other keys.
    big = random.Random(33).randbytes(3 * 128 * KiB)
    (src / "big.bin").write_bytes(big)
    files["big.bin"] = hashlib.sha256(big).hexdigest()
    ng = nginx(src)
    a = mount(ng.url, opts(three), name="a")
    assert read_checked(a, files) == []
    wait_drained(a)
    located = [(mc, k) for mc in three for k in mc.keys()
               if k.startswith("pfs1:") and not k.endswith(":L")]
    assert len(located) == len(files) + 2
    vals = {k: mc.get(k) for mc, k in located}
    same = [k for k, v in vals.items() if len(v) > 128 * KiB]  # big.bin's blocks
    assert len(same) == 3 and len({len(vals[k]) for k in same}) == 1
    # Block 1's value under block 0's key: length, validator and checksum
    # are right, only the key's hash in the header tells.
    swap_mc = next(mc for mc, k in located if k == same[0])
    assert swap_mc.set(same[0], vals[same[1]])
    rng = random.Random(7)
    located = [(mc, k) for mc, k in located if k not in same]
    rng.shuffle(located)
    donor_mc, donor_key = located[-1]
    donor = donor_mc.get(donor_key)
    assert donor is not None and len(donor) > 40
    corrupt = []
    for i, (mc, k) in enumerate(located[:8]):
        good = mc.get(k)
        assert good is not None
        if i % 4 == 0:
            bad = rng.randbytes(len(good))             # random bytes
        elif i % 4 == 1:
            bad = good[:len(good) // 2]                # truncated
        elif i % 4 == 2:
            j = len(good) - 1 - rng.randrange(len(good) // 2)
            bad = good[:j] + bytes([good[j] ^ 0x40]) + good[j + 1:]  # one bit
        else:
            bad = donor                                # another key's value
        assert mc.set(k, bad)
        corrupt.append((mc, k, bad))
    corrupt.append((swap_mc, same[0], vals[same[1]]))
    b = mount(ng.url, opts(three), name="b")
    r0 = requests(b)
    assert read_checked(b, files) == []
    sb = shared_stats(b)
    assert sb["checksum_failures"] == len(corrupt), sb
    assert requests(b) - r0 == len(corrupt)
    wait_drained(b)
    # Each bad value was replaced by B's good one.
    for mc, k, bad in corrupt:
        now = mc.get(k)
        assert now is not None and now != bad, k


def test_changed_object_never_served_old(tmp_path, nginx, mount, three):
    src = tmp_path / "src"
    rng = random.Random(4)
    v1 = rng.randbytes(640 * KiB)   # five 128K blocks
    v2 = bytearray(v1)
    for i in range(0, len(v2), 128 * KiB):
        v2[i + 5] ^= 0xff            # every block differs, same size
    v2 = bytes(v2)
    (src / "d").mkdir(parents=True)
    (src / "d/obj.bin").write_bytes(v1)
    # v1 and v2 differ in their seconds (nginx's ETag) but not in the
    # listing (an index shows minutes): the mounts below list both alike.
    t1 = (int(time.time()) // 60 - 5) * 60
    os.utime(src / "d/obj.bin", (t1, t1))
    others = make_files(src, 6, 1 * KiB, 50 * KiB, 5)
    ng = nginx(src)
    a = mount(ng.url, opts(three), name="a")
    assert sha_of(a.path / "d/obj.bin") == hashlib.sha256(v1).hexdigest()
    assert read_checked(a, others) == []
    wait_drained(a)

    # B lists the old version, then the object changes on the origin
    # (same size, same listing): B pins whatever answers first.
    b = mount(ng.url, opts(three), name="b")
    (src / "d/obj.bin").write_bytes(v2)
    os.utime(src / "d/obj.bin", (t1 + 5, t1 + 5))
    got = read_all(b.path / "d/obj.bin")
    assert got in (v1, v2), "a mix of two versions"

    # C lists it alike, but block 0 is gone from memcached: C pins v2 from
    # the origin, and the four v1 blocks still in memcached under C's
    # keys must not be mixed in.
    c = mount(ng.url, opts(three), name="c")
    keys = [(mc, k) for mc in three for k in mc.keys() if k.startswith("pfs1:")]
    v1_keys = len(keys)
    for mc, k in keys:
        if k.endswith(":0"):
            mc._cmd(f"delete {k}\r\n".encode())
    fd = os.open(c.path / "d/obj.bin", os.O_RDONLY)
    try:
        head = os.pread(fd, 4096, 0)          # block 0: from the origin, v2
        assert head == v2[:4096]
        rest = os.pread(fd, len(v2), 0)
    finally:
        os.close(fd)
    assert rest == v2, "old blocks served after the new version was pinned"
    assert v1_keys >= 5 + len(others)
    sc = shared_stats(c)
    assert sc["hits"] == 0 and sc["stale"] == 4, sc

    # D lists the new version (new mtime): never the old bytes.
    later = time.time() + 3600
    os.utime(src / "d/obj.bin", (later, later))
    d = mount(ng.url, opts(three), name="d")
    assert sha_of(d.path / "d/obj.bin") == hashlib.sha256(v2).hexdigest()


def test_server_refuses_items(tmp_path, nginx, mount, memcached):
    src = tmp_path / "src"
    files = make_files(src, 40, 50 * KiB, 120 * KiB, 6)
    ng = nginx(src)
    full = memcached(memory_mb=4, no_evict=True)
    a = mount(ng.url, opts([full]), name="a")
    assert read_checked(a, files, threads=4) == []
    wait_drained(a)
    sa = shared_stats(a)
    print(f"-M: {sa}")
    assert sa["stores"] + sa["errors"] + sa["too_large"] + sa["skipped"] == len(files), sa
    assert sa["errors"] > 0, sa         # out of memory: refused, not evicted
    b = mount(ng.url, opts([full]), name="b")
    assert read_checked(b, files, threads=4) == []
    assert shared_stats(b)["hits"] == sa["stores"]


def test_items_too_large(tmp_path, nginx, mount, memcached):
    src = tmp_path / "src"
    files = make_files(src, 6, 1100 * KiB, 2 * MiB, 8)
    ng = nginx(src)
    small = memcached(item_max="1m")
    a = mount(ng.url, opts([small], block_size="1M"), name="a")
    assert read_checked(a, files) == []
    wait_drained(a)
    sa = shared_stats(a)
    assert sa["too_large"] >= len(files) and sa["errors"] == 0, sa
    assert a.stderr_text(100000).count("-I larger than block_size") == 1


def _blackhole():
    """A TCP server that accepts and never answers (a hung memcached)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(512)
    conns = []
    stop = threading.Event()

    def loop():
        s.settimeout(0.2)
        while not stop.is_set():
            try:
                conns.append(s.accept()[0])
            except OSError:
                pass
    t = threading.Thread(target=loop, daemon=True)
    t.start()
    return s, conns, stop


def test_hung_and_missing_servers(tmp_path, nginx, mount, memcached):
    src = tmp_path / "src"
    files = make_files(src, 60, 1 * KiB, 200 * KiB, 9)
    blocks = nblocks(src, files, 128 * KiB)
    ng = nginx(src)
    hole, conns, stop = _blackhole()
    with socket.socket() as gone:
        gone.bind(("127.0.0.1", 0))
        dead_port = gone.getsockname()[1]   # closed again: refused
    try:
        good = memcached()
        spec = (f"memcached://127.0.0.1:{hole.getsockname()[1]}+127.0.0.1:{dead_port}"
                f"+{good.url}")
        a = mount(ng.url, {"ram_size": "64M", "block_size": "128K", "prefetch": "off",
                           "shared_cache": spec, "shared_timeout": "0.2",
                           "shared_retry": "30"}, name="a")
        t0 = time.monotonic()
        assert read_checked(a, files, threads=4) == []
        sa = shared_stats(a)
        assert sa["timeouts"] + sa["errors"] >= 1, sa
        print(f"hung+missing: {blocks} blocks in {time.monotonic() - t0:.2f} s, {sa}")
        # A hung server costs the requests in flight to it one timeout
        # each (4 readers and the writer; two in a row), then it is left out for
        # shared_retry, as is the missing one: its keys go to the good
        # server, which stores all blocks.
        assert 1 <= sa["timeouts"] <= 8, sa
        assert sa["errors"] <= 6, sa
        assert sa["servers_down"] == 2, sa
        assert requests(a) >= blocks
        wait_drained(a)
        assert shared_stats(a)["stores"] >= blocks - 12
        b = mount(ng.url, {"ram_size": "64M", "block_size": "128K", "prefetch": "off",
                           "shared_cache": spec, "shared_timeout": "0.2",
                           "shared_retry": "30"}, name="b")
        r0 = requests(b)
        assert read_checked(b, files, threads=4) == []
        assert requests(b) - r0 <= 12 + 6, (requests(b) - r0, shared_stats(b))
        elapsed = time.monotonic() - t0
        assert elapsed < WAIT, elapsed
    finally:
        stop.set()
        hole.close()
        for c in conns:
            c.close()


def test_herd_one_fetch(tmp_path, nginx, delay_proxy, mount, three):
    src = tmp_path / "src"
    files = make_files(src, 40, 20 * KiB, 60 * KiB, 10)
    ng = nginx(src)
    px = delay_proxy(ng.port, delay_ms=100)
    a = mount(px.url, opts(three), name="a")
    b = mount(px.url, opts(three), name="b")
    r0 = requests(a) + requests(b)
    order = sorted(files)
    barrier = threading.Barrier(8)
    bad = []

    def reader(m, k):
        barrier.wait(timeout=WAIT)
        for rel in order[k::4]:
            if sha_of(m.path / rel) != files[rel]:
                bad.append(rel)
    ts = [threading.Thread(target=reader, args=(m, k)) for m in (a, b) for k in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(WAIT * 2)
    assert not bad
    fetched = requests(a) + requests(b) - r0
    waits = shared_stats(a)["lock_waits"] + shared_stats(b)["lock_waits"]
    print(f"herd: {fetched} origin GETs for {len(files)} files read by 2 mounts, "
          f"{waits} lock waits")
    # Without the lock both mounts fetch (nearly) every file: 2 x 40.
    assert fetched <= len(files) + len(files) // 4, (fetched, waits)
    assert waits >= len(files) // 2, waits


@pytest.mark.parametrize("value,word", [
    ("memcached://", "no server"),
    ("memcached://host", "HOST:PORT"),
    ("memcached://127.0.0.1:0", "port"),
    ("memcached://127.0.0.1:70000", "port"),
    ("memcached://[::1", "[ADDRESS]:PORT"),
    ("memcached://" + "h" * 290 + ":11211", "longer than"),
    ("memcached://a:1+memcached://b:2", "prefix"),
])
def test_bad_server_lists(tmp_path, prestofs_bin, value, word):
    (tmp_path / "src").mkdir()
    (tmp_path / "mnt").mkdir()
    p = subprocess.run([str(prestofs_bin), str(tmp_path / "src"), str(tmp_path / "mnt"),
                        "-f", "-o", f"shared_cache={value}"],
                       capture_output=True, text=True, timeout=30)
    assert p.returncode != 0
    assert "shared_cache" in p.stderr and word in p.stderr, p.stderr


def test_prefetch_and_config_file(tmp_path, nginx, mount, three):
    """The prefetcher's fetches go through the shared tier too; the
    [shared] section of a config file (servers separated by commas and
    blanks) works like -o."""
    src = tmp_path / "src"
    files = make_files(src, 50, 100 * KiB, 600 * KiB, 11)
    blocks = nblocks(src, files, 128 * KiB)
    ng = nginx(src)
    conf = tmp_path / "prestofs.conf"
    conf.write_text("[cache]\nram_size = 64M\nblock_size = 128K\n"
                    "[shared]\nshared_cache = memcached://" +
                    ", ".join(mc.url for mc in three) + "\nshared_timeout = 1\n")
    a = mount(ng.url, {"config": str(conf)}, name="a")
    assert read_checked(a, files, threads=4) == []
    wait_drained(a)
    assert shared_stats(a)["stores"] == blocks and shared_stats(a)["servers"] == 3
    b = mount(ng.url, {"config": str(conf)}, name="b")
    r0 = requests(b)
    assert read_checked(b, files, threads=4) == []
    assert requests(b) - r0 <= blocks // 100
    assert b.stats()["prefetch"]["blocks"] > 0   # and not from the origin


def test_s3_origin(tmp_path, mount, three, s3rver):
    """Over S3: a second mount reads from memcached; the listing's ETag is
    part of the key, so after an overwrite a new mount never gets the old
    bytes; no credential ever reaches memcached."""
    from s3_fixtures import ACCESS_KEY, SECRET, make_bucket, s3_client
    client = s3_client(s3rver.url)
    rng = random.Random(12)
    objs = {f"sh/d{i % 2}/o{i:02d}.bin": rng.randbytes(rng.randint(1, 300 * KiB))
            for i in range(20)}
    bucket = make_bucket(client, "pfs-shared", objs)
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(HOME=str(tmp_path), AWS_ACCESS_KEY_ID=ACCESS_KEY,
               AWS_SECRET_ACCESS_KEY=SECRET)
    o = opts(three, endpoint=s3rver.url, s3_path_style=True)

    def s3mount(name):
        return mount(f"s3://{bucket}/sh", o, name=name, env=env)
    want = {k[3:]: hashlib.sha256(v).hexdigest() for k, v in objs.items()}
    a = s3mount("a")
    assert read_checked(a, want) == []
    wait_drained(a)
    b = s3mount("b")
    r0 = requests(b)
    assert read_checked(b, want) == []
    assert requests(b) - r0 == 0 and shared_stats(b)["hits"] > 0, (shared_stats(a),
                                                                   shared_stats(b))
    for mc in three:
        for k in mc.keys():
            v = mc.get(k) or b""
            assert SECRET.encode() not in v and ACCESS_KEY.encode() not in v

    old = objs["sh/d0/o00.bin"]
    new = bytes(x ^ 0x5a for x in old)
    client.put_object(Bucket=bucket, Key="sh/d0/o00.bin", Body=new)
    c = s3mount("c")
    assert sha_of(c.path / "d0/o00.bin") == hashlib.sha256(new).hexdigest()


def test_local_origin_refused(tmp_path, prestofs_bin):
    """A local directory's versions (inode, mtime) differ between nodes: a
    shared tier over one would pin one node's version on another and fail
    its reads, so it is refused with a message."""
    (tmp_path / "src").mkdir()
    (tmp_path / "mnt").mkdir()
    p = subprocess.run([str(prestofs_bin), str(tmp_path / "src"), str(tmp_path / "mnt"),
                        "-f", "-o", "shared_cache=memcached://127.0.0.1:11211"],
                       capture_output=True, text=True, timeout=30)
    assert p.returncode != 0 and "shared_cache" in p.stderr and "local" in p.stderr, p.stderr


def test_many_readers_and_prefetch(tmp_path, nginx, mount, three):
    """64 readers and the prefetcher's 128 workers at once (a connection per
    exchange in flight, 16 kept idle per server), at the default deadlines:
    no exchange fails, at most 1% time out (192 threads on 2 cores can hold
    one past its deadline: a miss, or a store sent again), every block is
    stored but those, and a second mount reads them."""
    src = tmp_path / "src"
    files = make_files(src, 300, 4 * KiB, 40 * KiB, 13)
    blocks = nblocks(src, files, 128 * KiB)
    ng = nginx(src)
    o = opts(three, prefetch="on", prefetch_inflight="128", max_threads="256")
    a = mount(ng.url, o, name="a")
    assert read_checked(a, files, threads=64) == []
    wait_drained(a)
    sa = shared_stats(a)
    exchanges = sa["hits"] + sa["misses"] + sa["stores"]
    assert sa["errors"] == 0 and sa["timeouts"] <= max(1, exchanges // 100), sa
    assert sa["stores"] + sa["store_failures"] == blocks and sa["dropped"] == 0, sa
    assert sa["store_failures"] <= max(1, blocks // 100), sa
    b = mount(ng.url, o, name="b")
    r0 = requests(b)
    assert read_checked(b, files, threads=64) == []
    assert requests(b) - r0 <= blocks // 100 + sa["store_failures"], \
        (requests(b) - r0, shared_stats(b))


def test_unmount_bounded_with_hung_servers(tmp_path, nginx, mount):
    """Every server hung: reads go on from the origin, and the unmount does
    not wait on the queued stores beyond its deadline."""
    src = tmp_path / "src"
    files = make_files(src, 40, 10 * KiB, 100 * KiB, 14)
    ng = nginx(src)
    holes = [_blackhole() for _ in range(2)]
    try:
        spec = "memcached://" + "+".join(f"127.0.0.1:{h[0].getsockname()[1]}" for h in holes)
        a = mount(ng.url, {"ram_size": "64M", "block_size": "128K", "prefetch": "off",
                           "shared_cache": spec, "shared_timeout": "0.2",
                           "shared_retry": "60"}, name="a")
        assert read_checked(a, files, threads=4) == []
        s = shared_stats(a)
        # A server goes out at its 3rd timeout in a row; the exchanges
        # already waiting on it then (the other 3 readers and the one
        # store writer) time out too: at most 3 + 4 per server, where
        # one timeout per block (40 gets, 40 stores) would be 80.
        assert s["servers_down"] == 2 and s["timeouts"] <= 2 * (3 + 4), s
        t0 = time.monotonic()
        assert a.stop() == []
        assert time.monotonic() - t0 < 10
    finally:
        for sock, conns, stop in holes:
            stop.set()
            sock.close()
            for c in conns:
                c.close()


def test_changed_object_part_evicted(tmp_path, nginx, mount, three):
    """An object rewritten in place (same size, same listing) while part of
    its old version is still in memcached and part evicted: a new mount
    reads all of the old version, all of the new, or gets EIO; never a
    mix. (It gets EIO when the old version's first block pins it and a
    later block must come from the origin: documented in prestofs(1).)"""
    src = tmp_path / "src"
    rng = random.Random(15)
    v1 = rng.randbytes(5 * 128 * KiB)
    v2 = bytes(x ^ 0x33 for x in v1)
    (src / "d").mkdir(parents=True)
    t1 = (int(time.time()) // 60 - 5) * 60
    (src / "d/obj.bin").write_bytes(v1)
    os.utime(src / "d/obj.bin", (t1, t1))
    ng = nginx(src)
    a = mount(ng.url, opts(three), name="a")
    assert read_all(a.path / "d/obj.bin") == v1
    wait_drained(a)
    (src / "d/obj.bin").write_bytes(v2)
    os.utime(src / "d/obj.bin", (t1 + 7, t1 + 7))
    keys = [(mc, k) for mc in three for k in mc.keys()
            if k.startswith("pfs1:") and not k.endswith(":L")]
    assert len(keys) == 5
    for mc, k in keys:
        if k.endswith(":2"):
            mc._cmd(f"delete {k}\r\n".encode())
    b = mount(ng.url, opts(three), name="b", allow_errors=(r"failed",))
    try:
        got = read_all(b.path / "d/obj.bin")
        assert got in (v1, v2), "a mix of two versions"
        print("part evicted: read", "v1" if got == v1 else "v2")
    except OSError as e:
        assert e.errno == errno.EIO, e
        print("part evicted: EIO")


def test_warm_up_through_shared(tmp_path, nginx, mount, three, prestofs_bin):
    """`prestofs warm` fills through the same path: what one node's warm-up
    fetched, another node's warm-up takes from memcached into its SSD tier."""
    src = tmp_path / "src"
    files = make_files(src, 30, 10 * KiB, 300 * KiB, 16)
    blocks = nblocks(src, files, 128 * KiB)
    ng = nginx(src)
    a = mount(ng.url, opts(three, ssd_dir=str(tmp_path / "ssd-a")), name="a")
    p = subprocess.run([str(prestofs_bin), "warm", str(a.path)], capture_output=True,
                       text=True, timeout=WAIT)
    assert p.returncode == 0, p.stdout + p.stderr
    wait_drained(a)
    assert shared_stats(a)["stores"] == blocks
    b = mount(ng.url, opts(three, ssd_dir=str(tmp_path / "ssd-b")), name="b")
    r0 = requests(b)
    p = subprocess.run([str(prestofs_bin), "warm", str(b.path)], capture_output=True,
                       text=True, timeout=WAIT)
    assert p.returncode == 0, p.stdout + p.stderr
    assert requests(b) - r0 == 0 and shared_stats(b)["hits"] == blocks, shared_stats(b)
    assert read_checked(b, files) == []
    assert requests(b) - r0 == 0


def test_views_shared_across_nodes(tmp_path, nginx, mount, three):
    """A view's output goes to the shared tier like a block from the
    origin (blocks/: a made object): a second node reads it from memcached,
    makes nothing and stores nothing, and gets the same bytes."""
    from PIL import Image
    import numpy as np
    src = tmp_path / "src"
    (src / "train" / "a").mkdir(parents=True)
    rng = np.random.default_rng(21)
    rels = []
    for i in range(12):
        arr = rng.integers(0, 255, (40 + 3 * i, 56, 3), dtype=np.uint8)
        rel = f"train/a/{i}.jpg"
        Image.fromarray(arr).save(src / rel, quality=90)
        rels.append(rel)
    ng = nginx(src)
    views = [f".prestofs/views/resize=24/{rel}" for rel in rels]
    a = mount(ng.url, opts(three), name="a")
    want = {v: read_all(a.path / v) for v in views}
    wait_drained(a)
    sa = shared_stats(a)
    # one block per source JPEG and one output per view
    assert sa["stores"] == len(rels) + len(views), sa
    b = mount(ng.url, opts(three), name="b")
    r0 = requests(b)
    for v in views:
        assert read_all(b.path / v) == want[v], v
    sb = shared_stats(b)
    # Sizing a view reads its source's header (a shared hit); the output is
    # a hit too: nothing made, so nothing stored, nothing from the origin.
    assert sb["hits"] == len(rels) + len(views) and sb["stores"] == 0, sb
    assert requests(b) - r0 == 0
