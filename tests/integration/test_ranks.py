"""Data-parallel training on one mount: 4 ranks, one order stream each.

Four rank processes (helpers/ddp_rank.py, a gloo process group as torchrun
would start it) each wrap DistributedSampler(num_replicas=4, shuffle=True)
in prestofs.OrderedSampler and read their shard through a DataLoader with a
worker process, in lockstep (an all_reduce per step, as DDP's gradient
sync). The origin is nginx behind a delay line (10 ms each way, 20 ms RTT);
the RAM tier holds half the data set; the data set's size is not a multiple
of 4, so DistributedSampler pads each epoch with repeated samples. Every
read reaches the daemon (the rank drops each file's pages after reading it).

Verdicts: in the first epoch each rank's stream has at most 2% demand
misses by its own counters; every sample's bytes hash to the source's;
every sample is read each epoch, the padding on top; after two epochs the
daemon counts exactly 2 (neither the ranks' interleaving nor the padding
starts an epoch).

Measured at 958deb4 (2 cores, load 7 to 40): 0 demand misses per rank in
both epochs, 2.3 to 2.7 s per epoch, about 23 s for the four processes.
The same run with one stream shared by the four ranks (the daemon before
streams, in effect): 244 misses in 502 reads of the stream, 12.4 s per
epoch. Until the prefetcher served the stream least far ahead of its
reader first (it took the streams in turn), one rank in about three runs
had 18 to 101 misses here while the others had none: the three other
windows filled the RAM tier's staging area and the rank about to run dry
waited its turn for each freed block. After: 0 misses per rank in 8 of 8
runs at load average 10 to 20. The bound is 2% for load's sake, below
every starved run seen.
"""
import hashlib
import json
import math
import os
import shutil
import subprocess
import sys
import time

import pytest

from helpers import REPO_ROOT
from helpers.dataset import make_flat
from helpers.manifest import write_manifest
from helpers.proxy import DelayProxy

pytest.importorskip("torch")

# Prefetch keeping pace with four ranks is a timing verdict: scripts/test
# runs it alone (-m serial), not beside another test on a 2-core machine.
pytestmark = pytest.mark.serial

PY = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
KiB = 1 << 10
WORLD = 4
N_FILES = 2002            # not a multiple of 4: 2 padding samples per epoch
FILE_SIZE = 16 * KiB      # ± 20%: 32 MB in all
RAM_SIZE = "16M"          # half the data set
DELAY_MS = 10             # each way: 20 ms RTT
EPOCHS = 2
MAX_MISS_RATIO = 0.02
RUN_TIMEOUT = 150.0


@pytest.fixture
def far_origin(tmp_path, nginx, delay_proxy):
    """(source dir, relative paths, origin URL): nginx behind a delay line
    (bench/delayproxy.c when cc can build it: less CPU than the Python one
    on a 2-core machine)."""
    src = tmp_path / "data"
    rels, _ = make_flat(src, count=N_FILES, size=FILE_SIZE, per_dir=500, seed=14)
    write_manifest(src)
    ng = nginx(src, autoindex=False)
    exe = tmp_path / "delayproxy"
    cc = shutil.which("cc")
    built = cc is not None and subprocess.run(
        [cc, "-O2", "-pthread", "-o", str(exe), str(REPO_ROOT / "bench" / "delayproxy.c")],
        capture_output=True).returncode == 0
    if built:
        px = DelayProxy(ng.port, DELAY_MS, program=exe)
        try:
            px.start()
            yield src, rels, px.url
        finally:
            px.stop()
    else:
        yield src, rels, delay_proxy(ng.port, DELAY_MS).url


def run_ranks(tmp_path, mnt, rels, world=WORLD, batch=16, epochs=EPOCHS, busy_ms=0.0,
              head=0):
    files = tmp_path / "files.txt"
    files.write_text("".join(r + "\n" for r in rels), encoding="utf-8")
    script = REPO_ROOT / "tests" / "integration" / "helpers" / "ddp_rank.py"
    procs = []
    t0 = time.monotonic()
    for r in range(world):
        env = dict(os.environ, RANK=str(r), WORLD_SIZE=str(world), LOCAL_RANK=str(r),
                   PYTHONPATH=str(REPO_ROOT / "python"), OMP_NUM_THREADS="1",
                   GLOO_SOCKET_IFNAME="lo")
        argv = [PY, str(script), "--mount", str(mnt), "--files", str(files),
                "--out", str(tmp_path / f"rank{r}.json"), "--epochs", str(epochs),
                "--seed", "7", "--batch", str(batch), "--workers", "1",
                "--busy-ms", str(busy_ms), "--head", str(head),
                "--init", f"file://{tmp_path}/pg"]
        log = open(tmp_path / f"rank{r}.log", "wb")
        procs.append((subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT,
                                       stdin=subprocess.DEVNULL, start_new_session=True),
                      log))
    failed = []
    try:
        for r, (p, _) in enumerate(procs):
            left = RUN_TIMEOUT - (time.monotonic() - t0)
            try:
                rc = p.wait(max(left, 1.0))
            except subprocess.TimeoutExpired:
                failed.append(f"rank {r}: still running after {RUN_TIMEOUT:.0f} s")
                continue
            if rc != 0:
                failed.append(f"rank {r}: exit status {rc}")
    finally:
        for p, log in procs:
            if p.poll() is None:
                os.killpg(p.pid, 9)
                p.wait(10)
            log.close()
    wall = time.monotonic() - t0
    if failed:
        logs = "\n".join(f"--- rank {r} ---\n" +
                         (tmp_path / f"rank{r}.log").read_text(errors="replace")[-3000:]
                         for r in range(world))
        pytest.fail("; ".join(failed) + "\n" + logs, pytrace=False)
    return [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(world)], wall


@pytest.mark.skipif(bool(os.environ.get("PRESTOFS_SANITIZED")),
                    reason="its verdict is a timing bound: a daemon under ASan on 2 cores "
                           "left 21 of 501 reads of 2 ranks unprefetched; the stream code "
                           "runs under ASan and TSan in the unit tests (test_prefetch, "
                           "test_order)")
def test_four_ranks_one_stream_each(tmp_path, far_origin, mount):
    src, rels, url = far_origin
    m = mount(url, {"ram_size": RAM_SIZE})
    want = {i: hashlib.sha256((src / rel).read_bytes()).hexdigest()
            for i, rel in enumerate(rels)}
    out, wall = run_ranks(tmp_path, m.path, rels)
    final = m.stats()

    shard = math.ceil(N_FILES / WORLD)
    report = []
    for e in range(EPOCHS):
        read = []
        for r, o in enumerate(out):
            ep = o["epochs"][e]
            idx = [i for i, _ in ep["samples"]]
            assert len(idx) == shard and ep["written"] == shard, (r, e, len(idx))
            bad = [(i, h) for i, h in ep["samples"] if want[i] != h]
            assert not bad, f"rank {r} epoch {e + 1}: {len(bad)} samples differ " \
                f"from the source, first {rels[bad[0][0]]}"
            read += idx
            st = ep["stream"]
            assert st is not None, f"rank {r}: no stream {o['stream']!r} in the stats"
            report.append(f"epoch {e + 1} rank {r}: {st['demand_misses']} demand misses "
                          f"/ {len(idx)} reads ({st['demand_hits']} hits), "
                          f"stall {st['stall_seconds']:.2f} s, {ep['seconds']:.1f} s")
        assert set(read) == set(range(N_FILES)), f"epoch {e + 1}: samples missing"
        assert len(read) == WORLD * shard
    print("\n" + "\n".join(report) + f"\nwall {wall:.1f} s; epoch.number "
          f"{final['epoch']['number']}; origin.requests {final['origin']['requests']}")

    names = [o["stream"] for o in out]
    assert names == [f"rank{r}-pid{o['pid']}" for r, o in enumerate(out)], names
    for r, o in enumerate(out):
        st = o["epochs"][0]["stream"]
        assert st["entries"] == shard and st["unknown"] == 0, (r, st)
        reads = max(shard, st["demand_hits"] + st["demand_misses"])
        assert st["demand_hits"] + st["demand_misses"] >= 0.9 * shard, \
            f"rank {r}: its stream saw {st['demand_hits'] + st['demand_misses']} of its " \
            f"{shard} reads: {st}"
        assert st["demand_misses"] <= MAX_MISS_RATIO * reads, \
            f"rank {r}: {st['demand_misses']} demand misses in {reads} reads of epoch 1 " \
            f"(at most {MAX_MISS_RATIO:.0%}):\n" + "\n".join(report)
    # Two epochs read (each with its padding): the daemon counts exactly 2.
    assert out[0]["epochs"][0]["stats"]["epoch"]["number"] == 1, \
        out[0]["epochs"][0]["stats"]["epoch"]
    assert final["epoch"]["number"] == EPOCHS, final["epoch"]


# --- a small cache (issue 28) --------------------------------------------------

SMALL_FILES = 1000
SMALL_SIZE = 100 * KiB     # ± 20%: about 100 MB
SMALL_WORLD = 2


@pytest.fixture
def far_origin_small(tmp_path, nginx):
    src = tmp_path / "data"
    rels, _ = make_flat(src, count=SMALL_FILES, size=SMALL_SIZE, per_dir=500, seed=28)
    write_manifest(src)
    ng = nginx(src, autoindex=False)
    exe = tmp_path / "delayproxy"
    subprocess.run(["cc", "-O2", "-pthread", "-o", str(exe),
                    str(REPO_ROOT / "bench" / "delayproxy.c")], check=True, capture_output=True)
    px = DelayProxy(ng.port, DELAY_MS, program=exe)
    px.start()
    try:
        yield src, rels, px.url
    finally:
        px.stop()


@pytest.mark.skipif(bool(os.environ.get("PRESTOFS_SANITIZED")),
                    reason="a timing bound (see test_four_ranks_one_stream_each)")
def test_two_ranks_small_cache(tmp_path, far_origin_small, mount):
    """Two DDP ranks, ~100 KB files, a RAM tier of 15% of the data, batch 64,
    one worker each, 20 ms RTT (issue 28): in the first epoch at most 1% demand
    misses per rank and at most 1.02 origin requests per file. Each sample is
    read as a decoder reads it, a 4 KiB look at its header first, then the
    rest, with 3 ms of CPU after it. Before the fix (a staged block dropped
    after its first read, whole or not): 2.004 origin requests per file and
    35 img/s per rank, against 1.006 and 219 img/s after."""
    src, rels, url = far_origin_small
    total = sum((src / r).stat().st_size for r in rels)
    ram = int(total * 0.15)
    m = mount(url, {"ram_size": str(ram)})
    want = {i: hashlib.sha256((src / rel).read_bytes()).hexdigest()
            for i, rel in enumerate(rels)}
    out, wall = run_ranks(tmp_path, m.path, rels, world=SMALL_WORLD, batch=64, epochs=1,
                          busy_ms=3.0, head=4096)
    final = m.stats()
    shard = math.ceil(SMALL_FILES / SMALL_WORLD)
    report = []
    for r, o in enumerate(out):
        ep = o["epochs"][0]
        bad = [(i, h) for i, h in ep["samples"] if want[i] != h]
        assert not bad, f"rank {r}: {len(bad)} samples differ"
        st = ep["stream"]
        report.append(f"rank {r}: {st['demand_misses']} demand misses / {shard} reads, "
                      f"stall {st['stall_seconds']:.2f} s, {ep['seconds']:.1f} s "
                      f"({shard / ep['seconds']:.0f} img/s)")
    per_file = final["origin"]["requests"] / SMALL_FILES
    print("\n" + "\n".join(report) + f"\nram_size {ram} ({ram / total:.0%}); origin.requests "
          f"{final['origin']['requests']} ({per_file:.3f} per file); wall {wall:.1f} s; "
          f"prefetch {final['prefetch']}; ram {final['ram']}")
    for r, o in enumerate(out):
        st = o["epochs"][0]["stream"]
        assert st["demand_misses"] <= 0.01 * shard, "\n".join(report)
    assert per_file <= 1.02, per_file


@pytest.mark.skipif(bool(os.environ.get("PRESTOFS_SANITIZED")),
                    reason="a timing verdict (see test_four_ranks_one_stream_each)")
def test_two_ranks_cache_too_small_says_so(tmp_path, far_origin_small, mount):
    """The same two ranks with a RAM tier of 1% of the data: the streams
    cannot be fed ahead. The daemon says so once, with what they need, and
    counts the misses it could not avoid in stream.shortfall."""
    src, rels, url = far_origin_small
    total = sum((src / r).stat().st_size for r in rels)
    m = mount(url, {"ram_size": str(total // 100)})
    want = {i: hashlib.sha256((src / rel).read_bytes()).hexdigest()
            for i, rel in enumerate(rels)}
    out, _ = run_ranks(tmp_path, m.path, rels, world=SMALL_WORLD, batch=64, epochs=1,
                       busy_ms=3.0, head=4096)
    for r, o in enumerate(out):
        ep = o["epochs"][0]
        assert all(want[i] == h for i, h in ep["samples"]), f"rank {r}: wrong bytes"
    short = [o["epochs"][0]["stream"].get("shortfall", 0) for o in out]
    misses = [o["epochs"][0]["stream"]["demand_misses"] for o in out]
    lines = [l for l in m.stderr_text(10**6).splitlines() if "order streams:" in l]
    print(f"\nram_size 1%: misses {misses}, shortfall {short}\n" + "\n".join(lines))
    assert len(lines) == 1, lines
    assert "MiB must be in RAM ahead" in lines[0] and "raise ram_size" in lines[0], lines
    assert sum(short) >= 1 and all(s <= m_ for s, m_ in zip(short, misses)), (short, misses)
