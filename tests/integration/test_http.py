"""HTTP origin served by a private nginx: manifest and autoindex listings,
URL prefixes, manifest=URL|PATH, and request coalescing."""
import os
import shutil
import subprocess
import threading
import time

import pytest

from helpers.compare import compare_bytes, compare_tree, list_files, read_all
from helpers.manifest import NAME as MANIFEST_NAME, served_copy, write_manifest
from helpers.mount import Mount, MountError

MiB = 1 << 20


@pytest.fixture(params=["manifest", "index", "autoindex"])
def http_origin(request, dataset, tmp_path, nginx, prestofs_bin):
    """(source dir, nginx, mtime precision) for each way of listing:
    manifest  - prestofs.manifest written by the tests' own writer (ETag '-')
    index     - prestofs.manifest written by `prestofs index`
    autoindex - no manifest, nginx's HTML listing only"""
    mode = request.param
    if mode == "autoindex":
        return dataset, nginx(dataset, autoindex=True), "min"
    src = tmp_path / "served"
    shutil.copytree(dataset, src, copy_function=shutil.copy2)
    if mode == "manifest":
        write_manifest(src)
    else:
        r = subprocess.run(f'"{prestofs_bin}" index "{src}" > "{src}/{MANIFEST_NAME}"',
                           shell=True, capture_output=True, timeout=60)
        assert r.returncode == 0, r.stderr
    return src, nginx(src, autoindex=False), "s"


def test_http_every_byte(http_origin, mount):
    src, ng, mtime = http_origin
    m = mount(ng.url)
    compare_tree(src, m.path, mtime=mtime, dir_mtimes=False)
    compare_bytes(src, m.path, ranges_per_file=8)
    # Every listed name went over the wire correctly escaped: nothing 404'd
    # (except the probe for an optional prestofs.manifest).
    log = ng.access_log.read_text().splitlines()
    probes = [l for l in log if f"/{MANIFEST_NAME} " in l and '" 404 ' in l]
    assert not [l for l in log if '" 404 ' in l and l not in probes]
    assert m.stats()["origin"]["errors"] <= len(probes), m.stats()


def test_http_dir_mtimes(http_origin, mount):
    """Directories keep their own mtimes (listed in the manifest, or shown by
    autoindex); an empty directory is not from 1970."""
    src, ng, mtime = http_origin
    m = mount(ng.url)
    compare_tree(src, m.path, mtime=mtime, dir_mtimes=True)


@pytest.mark.parametrize("suffix", ["tree/", "tree"])
def test_http_prefix(dataset, nginx, mount, suffix):
    ng = nginx(dataset.parent, autoindex=True)
    m = mount(ng.url + suffix)
    compare_tree(dataset, m.path, mtime="min")
    compare_bytes(dataset, m.path, files=["blk-plus-1.bin", "weird/hash#tag?.bin",
                                          "dir with space/100% done.bin"])


def test_manifest_option_url_and_path(dataset, tmp_path, nginx, mount):
    """manifest=URL (kept outside the served tree) and manifest=PATH."""
    top = tmp_path / "www"
    (top / "lists").mkdir(parents=True)
    shutil.copytree(dataset, top / "tree", copy_function=shutil.copy2)
    write_manifest(top / "tree", dest=top / "lists" / "tree.manifest")
    ng = nginx(top, autoindex=False)  # no listing possible without the manifest
    m1 = mount(ng.url + "tree/", {"manifest": ng.url + "lists/tree.manifest"}, name="m1")
    compare_tree(top / "tree", m1.path, mtime="s")
    compare_bytes(top / "tree", m1.path, files=["multi.bin", "ünïcödé-日本/データ.bin"])
    m2 = mount(ng.url + "tree/", {"manifest": top / "lists" / "tree.manifest"}, name="m2")
    compare_tree(top / "tree", m2.path, mtime="s")


def test_http_malformed_manifest(dataset, tmp_path, nginx, prestofs_bin):
    src = tmp_path / "served"
    src.mkdir()
    (src / "ok.bin").write_bytes(b"x" * 10)
    (src / MANIFEST_NAME).write_text("#prestofs-manifest 1\nok.bin\t10\t1600000000\t-\n"
                                     "broken line without tabs\n")
    ng = nginx(src, autoindex=True)
    m = Mount(ng.url, tmp_path / "mnt", {"timeout": 2, "retries": 1}, binary=prestofs_bin)
    with pytest.raises(MountError) as ei:
        m.start()
        m.stop()
    assert "line 3" in str(ei.value) or ":3:" in str(ei.value), ei.value


def test_coalescing(dataset, tmp_path, nginx, delay_proxy, mount):
    """Two readers of the same cold block, at different offsets (so the kernel
    sends two FUSE reads), while the origin is 300 ms away: one request."""
    src = served_copy(dataset, tmp_path)
    ng = nginx(src, autoindex=False)
    px = delay_proxy(ng.port, delay_ms=150)
    m = mount(px.url, {"block_size": "1M", "prefetch": "off"})  # demand only
    rel = "blk-exact.bin"            # exactly one block: nothing else to prefetch
    want = (src / rel).read_bytes()
    fds = [os.open(m.path / rel, os.O_RDONLY) for _ in range(2)]
    try:
        s0 = m.stats()
        log0 = len(ng.requests_for(rel))
        barrier = threading.Barrier(2)
        got = [None, None]
        offsets = [0, 512 << 10]

        def reader(i):
            barrier.wait(5)
            got[i] = os.pread(fds[i], 4096, offsets[i])

        ts = [threading.Thread(target=reader, args=(i,)) for i in range(2)]
        for t in ts:
            t.start()
        for t in ts:
            t.join(30)
        assert not any(t.is_alive() for t in ts), "reader hung"
        s1 = m.stats()
    finally:
        for fd in fds:
            os.close(fd)
    for i in range(2):
        assert got[i] == want[offsets[i]:offsets[i] + 4096]
    reqs = s1["origin"]["requests"] - s0["origin"]["requests"]
    log1 = len(ng.requests_for(rel))
    assert reqs == 1, f"origin.requests +{reqs} (nginx saw +{log1 - log0}); stats {s1}"
    assert log1 - log0 == 1, ng.requests_for(rel)
    assert s1["coalesced"] > s0["coalesced"], (s0, s1)


def test_connection_reuse(dataset, tmp_path, nginx, delay_proxy, mount):
    """8 readers, origin 10 ms away: the daemon keeps about one connection
    per concurrent request instead of opening one per request (a new
    connection costs a round trip, several with TLS)."""
    src = served_copy(dataset, tmp_path)
    ng = nginx(src, autoindex=False)
    px = delay_proxy(ng.port, delay_ms=5)
    m = mount(px.url, {"prefetch": "off"})  # count demand requests only
    files = list_files(src)
    threads = 8
    bad = []

    def reader(k):
        for rel in files[k::threads]:
            if read_all(m.path / rel) != (src / rel).read_bytes():
                bad.append(rel)

    ts = [threading.Thread(target=reader, args=(k,)) for k in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(120)
    assert not any(t.is_alive() for t in ts), "readers hung"
    assert not bad, bad
    reqs, conns = ng.connections()
    assert reqs >= len(files)
    assert conns <= threads + 4, (f"{conns} TCP connections for {reqs} requests from "
                                  f"{threads} readers: connections are not reused")


def test_small_cache_concurrent(dataset, tmp_path, nginx, mount):
    """64 KiB blocks, a 1 MiB RAM budget, 8 readers: constant eviction while
    fetches are in flight; every byte still right."""
    src = served_copy(dataset, tmp_path)
    ng = nginx(src, autoindex=False)
    m = mount(ng.url, {"block_size": "64K", "ram_size": "1M", "timeout": 2.5, "policy": "lru"})
    files = list_files(src)
    bad = []

    def reader(k):
        for rel in files[k:] + files[:k]:
            if read_all(m.path / rel) != (src / rel).read_bytes():
                bad.append(rel)

    ts = [threading.Thread(target=reader, args=(k * 5,)) for k in range(8)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(180)
    assert not any(t.is_alive() for t in ts), "readers hung"
    assert not bad, bad[:10]
    s = m.stats()
    assert s["ram"]["evictions"] > 0 and s["ram"]["bytes"] <= 1 << 20, s
    assert s["origin"]["errors"] == 0, s


def test_origin_bandwidth_cap(dataset, tmp_path, nginx, mount):
    """origin_bandwidth paces the sum of all ranged GETs. A lower bound on
    the elapsed time: a slow machine can only make it pass more easily."""
    src = served_copy(dataset, tmp_path)
    ng = nginx(src, autoindex=False)
    cap = 4 << 20
    m = mount(ng.url, {"origin_bandwidth": str(cap), "prefetch": "off"})
    files = sorted(list_files(src), key=lambda r: -(src / r).stat().st_size)
    total, t0 = 0, time.monotonic()
    for rel in files:
        assert read_all(m.path / rel) == (src / rel).read_bytes()
        total += (src / rel).stat().st_size
        if total >= 3 * cap:
            break
    took = time.monotonic() - t0
    assert total >= 3 * cap
    # 0.1 s of burst is allowed; the rest is paced.
    assert took >= total / cap - 0.1 - 0.05, (total, took)


def test_https_origin(dataset, tmp_path, nginx, mount, prestofs_bin):
    """https:// through the same code path: every byte over TLS with a CA the
    user names (AWS_CA_BUNDLE, honoured for every origin); an untrusted
    certificate fails the mount, it is never silently accepted."""
    from helpers.nginx import free_port
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes",
                    "-keyout", str(key), "-out", str(cert), "-days", "2",
                    "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True, timeout=60)
    src = served_copy(dataset, tmp_path)
    sport = free_port()
    nginx(src, autoindex=False,
          extra_server=f"listen 127.0.0.1:{sport} ssl; ssl_certificate {cert}; "
                       f"ssl_certificate_key {key};")
    url = f"https://127.0.0.1:{sport}/"
    m = mount(url, {"retries": 1}, env={"AWS_CA_BUNDLE": str(cert)})
    compare_bytes(src, m.path, ranges_per_file=2)
    untrusted = Mount(url, tmp_path / "untrusted", {"retries": 0, "timeout": 5},
                      binary=prestofs_bin, env={"AWS_CA_BUNDLE": ""})
    with pytest.raises(MountError) as e:
        untrusted.start()
    assert "certificate" in str(e.value), str(e.value)  # says why, not just EIO


def test_url_password_never_shown(dataset, tmp_path, nginx, mount):
    """https://user:pass@host/ style origins: the password reaches curl but
    not /proc/mounts (fsname), the daemon's log or the stats. The origin is
    made to fail once (a missing file) so an error line is logged too."""
    src = served_copy(dataset, tmp_path)
    ng = nginx(src, autoindex=False)
    secret = "Pa55-s3cret-word"
    url = ng.url.replace("http://", f"http://alice:{secret}@")
    m = mount(url, {"timeout": 2, "retries": 0})
    victim = sorted(list_files(src))[0]
    (src / victim).unlink()  # listed, now 404
    with pytest.raises(OSError):
        read_all(m.path / victim)
    with open("/proc/mounts", encoding="utf-8") as f:
        mounts = f.read()
    entry = [l for l in mounts.splitlines() if str(m.path) in l]
    assert entry and "127.0.0.1" in entry[0], entry
    assert secret not in mounts and "alice" not in entry[0]
    stats = (m.path / ".prestofs" / "stats").read_text()
    assert secret not in stats
    m.check_stop()
    assert secret not in m.stderr_text(10**7)


@pytest.fixture
def python_http_server(tmp_path):
    """`python3 -m http.server` on a directory of the test's own: it ignores
    Range (every GET answers 200 with the whole file) and lists directories
    as bare HTML lists. Yields (root, url)."""
    import random
    import socket
    from helpers.nginx import free_port
    root = tmp_path / "pysrv"
    (root / "sub").mkdir(parents=True)
    rng = random.Random(26)
    for name, size in [("big.bin", 2 * 1024 * 1024 + 333), ("mid.bin", 1536 * 1024),
                       ("sub/small.bin", 100 * 1024 + 1), ("sub/edge.bin", 512 * 1024)]:
        (root / name).write_bytes(rng.randbytes(size))
    port = free_port()
    proc = subprocess.Popen(["/usr/bin/python3", "-m", "http.server", "-b", "127.0.0.1",
                             str(port), "-d", str(root)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            if time.monotonic() > deadline or proc.poll() is not None:
                proc.kill()
                pytest.fail("python3 -m http.server did not start")
            time.sleep(0.05)
    yield root, f"http://127.0.0.1:{port}/"
    proc.kill()
    proc.wait(10)


def test_server_without_range_support(python_http_server, mount):
    """A server that ignores Range answers every block with the whole
    object: each block is cut from it, the files read exactly (before: files
    over one block failed with EIO after 6 attempts, 'more bytes than asked
    for'), in whole reads and in parallel preads, and it is said once."""
    import hashlib
    root, url = python_http_server
    # Readahead off: each GET is a demand read's, so the count below is exact.
    m = mount(url, {"block_size": "512K", "ram_size": "16M", "retries": 1, "prefetch": "off"})
    listing_requests = m.stats()["origin"]["requests"]
    files = sorted(str(p.relative_to(root)) for p in root.rglob("*.bin"))
    for f in files:
        assert hashlib.sha256((m.path / f).read_bytes()).digest() == \
            hashlib.sha256((root / f).read_bytes()).digest(), f
    # Parallel preads of one file at odd offsets, page cache dropped first.
    src = (root / "big.bin").read_bytes()
    fd = os.open(m.path / "big.bin", os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        offs = [(o, 300000) for o in range(7, len(src), 190000)]
        got = {}

        def rd(o, n):
            got[o] = os.pread(fd, n, o)
        ts = [threading.Thread(target=rd, args=a) for a in offs]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    finally:
        os.close(fd)
    for o, n in offs:
        assert got[o] == src[o:o + n], f"pread at {o}"
    s = m.stats()["origin"]
    print(f"\n{s}")
    # The rest of each whole answer went to the RAM tier: a file of n
    # blocks costs about one answer, not n (before: n GETs, n^2/2 blocks).
    assert s["range_ignored"] > 0 and s["range_ignored_kept"] > 0, s
    assert s["requests"] - listing_requests == len(files), s
    assert m.stderr_text().count("ignores Range") == 1, m.stderr_text()
