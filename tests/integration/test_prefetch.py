"""The epoch-aware prefetcher and its order hints.

Interface under test: a loader writes the epoch's order (paths relative to
the mount root, one per line, UTF-8, '\\n'-terminated) to MOUNT/.prestofs/order;
a write at offset 0 starts a new order; lines are taken as they arrive; the
daemon fetches in exactly that order, at most `prefetch_window` files ahead
of the reader's position (the highest order index read so far); unknown
paths are skipped and counted. Plus the Python package's OrderedSampler
(python/prestofs) in a real DataLoader, and epoch tracking without hints.
The package's own tests (stream names, the bytes it writes, samplers,
streams side by side) are in python/tests.

No test depends on timing to pass: every wait polls the stats with a
deadline and the verdict comes from counters (stats, nginx access log) and
bytes. A wait that runs out only means the assertion after it fails, with
the stats in the message.
"""
import errno
import os
import random
import sys
import time
from pathlib import Path

import pytest

from helpers import REPO_ROOT
from helpers.compare import drop_page_cache, read_all
from helpers.dataset import make_flat, make_imagefolder
from helpers.manifest import NAME as MANIFEST, write_manifest

sys.path.insert(0, str(REPO_ROOT / "python"))
import prestofs  # noqa: E402  (imports no torch)

torch = pytest.importorskip("torch")
pytest.importorskip("torchvision")
from torchvision import datasets, transforms  # noqa: E402

KiB = 1 << 10
N_FILES = 200
RAM = {"ram_size": "64M"}   # the whole data set (~3 MB) fits many times over
WAIT = 30.0                 # bound on every wait for the prefetcher
TOL = 2                     # "0 or tiny" demand misses after a full prefetch


# -- helpers ---------------------------------------------------------------

def stat(s, dotted):
    """s['a']['b'] for 'a.b', with a readable failure when it is missing."""
    cur = s
    for part in dotted.split("."):
        if not isinstance(cur, dict) or part not in cur:
            pytest.fail(f"stats have no {dotted!r}; sections: "
                        f"{ {k: sorted(v) if isinstance(v, dict) else v for k, v in s.items()} }")
        cur = cur[part]
    return cur


def pick(s):
    """The counters this file looks at, for assertion messages."""
    out = {}
    for sec in ("origin", "ram", "epoch", "prefetch"):
        if isinstance(s.get(sec), dict):
            out[sec] = {k: v for k, v in s[sec].items()
                        if k in ("requests", "hits", "misses", "number", "files_read",
                                 "demand_hits", "demand_misses", "stall_seconds",
                                 "inflight", "bytes_used", "bytes_wasted", "bytes",
                                 "order_entries", "order_unknown", "order_position",
                                 "background_files", "errors")}
    return out


def write_order_raw(mnt, lines):
    """Writes the order exactly as the interface says: open at offset 0 with
    O_TRUNC, all lines, '\\n'-terminated, UTF-8, one write, close."""
    data = "".join(l + "\n" for l in lines).encode("utf-8")
    fd = os.open(Path(mnt) / ".prestofs" / "order", os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)


def wait_stats(m, pred, timeout=WAIT, settle=None):
    """Polls m.stats() until pred(stats) or the deadline. With settle=(key,
    seconds): also returns once the counter `key` has not moved for that long
    (the prefetcher stopped short). Returns the last stats either way."""
    deadline = time.monotonic() + timeout
    last, since = None, time.monotonic()
    while True:
        s = m.stats()
        if pred(s):
            return s
        if settle is not None:
            v = stat(s, settle[0])
            if v != last:
                last, since = v, time.monotonic()
            elif time.monotonic() - since >= settle[1] and stat(s, "prefetch.inflight") == 0:
                return s
        if time.monotonic() > deadline:
            return s
        time.sleep(0.02)


def settle(m, key, quiet=0.5, timeout=10.0):
    """Waits (bounded) until counter `key` has not moved for `quiet` seconds
    and nothing is in flight; returns the stats. Used only before asserting
    an upper bound, which holds whether or not the wait was long enough."""
    deadline = time.monotonic() + timeout
    s = m.stats()
    last, since = stat(s, key), time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(0.05)
        s = m.stats()
        v = stat(s, key)
        if v != last:
            last, since = v, time.monotonic()
        elif time.monotonic() - since >= quiet and stat(s, "prefetch.inflight") == 0:
            break
    return s


def requested_paths(ng, rels):
    """Dataset paths requested from nginx, in access-log order (the manifest
    and anything else left out)."""
    wanted = set(rels)
    out = []
    if not ng.access_log.exists():
        return out
    for line in ng.access_log.read_text(errors="replace").splitlines():
        try:
            req = line.split('"', 2)[1]          # GET /d000/f000001.bin HTTP/1.1
            path = req.split(" ")[1].lstrip("/")
        except IndexError:
            continue
        if path in wanted:
            out.append(path)
    return out


@pytest.fixture
def flat(tmp_path):
    """N_FILES small files (16 KiB ± 20%, one block each) in 4 dirs, with a
    manifest: served by nginx without autoindex."""
    src = tmp_path / "flat"
    rels, total = make_flat(src, count=N_FILES, size=16 * KiB, per_dir=50, seed=5)
    write_manifest(src)
    return src, rels, total


def _mount_flat(flat, nginx, mount, **opts):
    src, rels, total = flat
    ng = nginx(src, autoindex=False)
    m = mount(ng.url, dict(RAM, **opts))
    return ng, m


def _perm(rels, seed):
    order = list(rels)
    random.Random(seed).shuffle(order)
    return order


# -- (a) order hints: everything prefetched before it is read ---------------

def test_order_hints_prefetch_the_epoch(flat, nginx, mount):
    src, rels, total = flat
    ng, m = _mount_flat(flat, nginx, mount)
    order = _perm(rels, 1)
    s0 = m.stats()
    r0 = stat(s0, "origin.requests")
    write_order_raw(m.path, order)
    s1 = wait_stats(m, lambda s: stat(s, "origin.requests") - r0 >= N_FILES,
                    settle=("origin.requests", 3.0))
    assert stat(s1, "prefetch.order_entries") == N_FILES, pick(s1)
    assert stat(s1, "prefetch.order_unknown") == 0, pick(s1)
    assert stat(s1, "origin.requests") - r0 == N_FILES, \
        f"prefetcher fetched {stat(s1, 'origin.requests') - r0} of {N_FILES}: {pick(s1)}"
    assert stat(s1, "epoch.demand_misses") == 0 and stat(s1, "epoch.demand_hits") == 0, pick(s1)

    for rel in order:
        assert read_all(m.path / rel) == (src / rel).read_bytes(), rel
    s2 = m.stats()
    misses = stat(s2, "ram.misses") - stat(s1, "ram.misses")
    assert stat(s2, "epoch.demand_misses") <= TOL, pick(s2)
    assert stat(s2, "epoch.demand_hits") >= N_FILES - TOL, pick(s2)
    assert misses <= TOL, f"{misses} RAM misses after a full prefetch: {pick(s2)}"
    assert stat(s2, "ram.hits") - stat(s1, "ram.hits") >= N_FILES - TOL, pick(s2)
    assert stat(s2, "origin.requests") - stat(s1, "origin.requests") <= TOL, pick(s2)
    # Every prefetched byte was read: used covers the data set, nothing wasted.
    assert stat(s2, "prefetch.bytes_used") >= total * 0.99, (total, pick(s2))
    assert stat(s2, "prefetch.bytes_wasted") == 0, pick(s2)
    assert stat(s2, "prefetch.inflight") == 0, pick(s2)
    # Each file read once: no new epoch while reading it.
    assert stat(s2, "epoch.number") == stat(s1, "epoch.number"), pick(s2)
    assert stat(s2, "epoch.stall_seconds") >= 0, pick(s2)


def test_order_is_fetched_in_exactly_that_order(flat, nginx, mount):
    """One fetch in flight: nginx's access log is the fetch order."""
    src, rels, _ = flat
    ng, m = _mount_flat(flat, nginx, mount, prefetch_inflight=1)
    order = _perm(rels, 2)
    r0 = stat(m.stats(), "origin.requests")
    write_order_raw(m.path, order)
    s = wait_stats(m, lambda s: stat(s, "origin.requests") - r0 >= N_FILES,
                   settle=("origin.requests", 3.0))
    got = requested_paths(ng, rels)
    assert len(got) == N_FILES, (len(got), pick(s))
    first_diff = next((i for i, (a, b) in enumerate(zip(got, order)) if a != b), None)
    assert got == order, f"fetch order differs from the hint at index {first_diff}"


def test_window_bounds_how_far_ahead(flat, nginx, mount):
    src, rels, _ = flat
    window = 32
    ng, m = _mount_flat(flat, nginx, mount, prefetch_window=window, prefetch_inflight=4)
    order = _perm(rels, 3)
    r0 = stat(m.stats(), "origin.requests")
    write_order_raw(m.path, order)
    wait_stats(m, lambda s: stat(s, "origin.requests") - r0 >= window,
               settle=("origin.requests", 3.0))
    s = settle(m, "origin.requests")
    got = requested_paths(ng, rels)
    # Nothing read yet: the first `window` files of the order (±1 for where
    # "ahead of the position" starts counting), and only those.
    assert window - 1 <= len(set(got)) <= window + 1, (len(set(got)), pick(s))
    assert set(got) <= set(order[:window + 1]), "fetched beyond the window / out of order"
    assert stat(s, "origin.requests") - r0 <= window + 1, pick(s)

    k = 50
    for rel in order[:k]:
        assert read_all(m.path / rel) == (src / rel).read_bytes(), rel
    wait_stats(m, lambda s: len(set(requested_paths(ng, rels))) >= k + window - 1,
               settle=("origin.requests", 3.0))
    s = settle(m, "origin.requests")
    got = set(requested_paths(ng, rels))
    assert set(order[:k + window - 1]) <= got, \
        f"window not refilled after reading {k}: {len(got)} files fetched, {pick(s)}"
    assert got <= set(order[:k + window + 1]), \
        f"fetched {len(got - set(order[:k + window + 1]))} files beyond position+window"
    assert stat(s, "prefetch.order_position") == k or "order_position" not in s["prefetch"], pick(s)


# -- (b) control: prefetch=off ----------------------------------------------

def test_prefetch_off_reads_all_miss(flat, nginx, mount):
    src, rels, _ = flat
    ng, m = _mount_flat(flat, nginx, mount, prefetch="off")
    order = _perm(rels, 1)
    s0 = m.stats()
    try:
        write_order_raw(m.path, order)   # accepted and ignored, or refused: both fine
    except OSError:
        pass
    time.sleep(1.0)  # give a (wrongly) running prefetcher a chance to show up
    s1 = m.stats()
    assert stat(s1, "origin.requests") == stat(s0, "origin.requests"), pick(s1)
    for rel in order:
        assert read_all(m.path / rel) == (src / rel).read_bytes(), rel
    s2 = m.stats()
    assert stat(s2, "ram.misses") - stat(s1, "ram.misses") == N_FILES, pick(s2)
    assert stat(s2, "origin.requests") - stat(s1, "origin.requests") == N_FILES, pick(s2)
    assert stat(s2, "epoch.demand_misses") == N_FILES, pick(s2)
    assert stat(s2, "epoch.demand_hits") == 0, pick(s2)
    assert stat(s2, "prefetch.bytes_used") == 0, pick(s2)


# -- (c) unknown paths -------------------------------------------------------

def test_order_with_unknown_paths(flat, nginx, mount):
    src, rels, _ = flat
    ng, m = _mount_flat(flat, nginx, mount)
    known = _perm(rels, 4)[:150]
    unknown = ["nope.bin", "d000/nope.bin", "d999/f000000.bin",
               "ünïcödé/ないファイル.bin", "d000/f000000.bin.bak", "../d000/f000000.bin",
               "/d000/f000001.bin.x", "prestofs.manifest.nope"]
    order = list(known)
    rng = random.Random(5)
    for u in unknown:
        order.insert(rng.randrange(len(order) + 1), u)
    r0 = stat(m.stats(), "origin.requests")
    write_order_raw(m.path, order)
    s1 = wait_stats(m, lambda s: stat(s, "origin.requests") - r0 >= len(known),
                    settle=("origin.requests", 3.0))
    assert stat(s1, "prefetch.order_unknown") == len(unknown), (unknown, pick(s1))
    assert stat(s1, "prefetch.order_entries") == len(known), pick(s1)
    assert stat(s1, "origin.requests") - r0 == len(known), pick(s1)
    for rel in known:
        assert read_all(m.path / rel) == (src / rel).read_bytes(), rel
    s2 = m.stats()
    assert stat(s2, "epoch.demand_misses") <= TOL, pick(s2)
    assert stat(s2, "ram.misses") - stat(s1, "ram.misses") <= TOL, pick(s2)
    # Still a working mount, and a clean order can follow a bad one.
    write_order_raw(m.path, rels[:10])
    s3 = m.stats()
    assert stat(s3, "prefetch.order_entries") == 10 and stat(s3, "prefetch.order_unknown") == 0, \
        pick(s3)


def test_empty_and_garbage_orders(flat, nginx, mount):
    src, rels, _ = flat
    ng, m = _mount_flat(flat, nginx, mount)
    fd = os.open(m.path / ".prestofs" / "order", os.O_WRONLY | os.O_TRUNC)
    os.close(fd)                                  # an empty order
    s = m.stats()
    assert stat(s, "prefetch.order_entries") == 0, pick(s)
    fd = os.open(m.path / ".prestofs" / "order", os.O_WRONLY | os.O_TRUNC)
    try:
        os.write(fd, b"\xff\xfe not utf-8\n\n\x00\n" + b"x" * 70000 + b"\n")
    finally:
        os.close(fd)
    s = m.stats()
    assert stat(s, "prefetch.order_entries") == 0, pick(s)
    assert stat(s, "prefetch.order_unknown") >= 2, pick(s)
    assert read_all(m.path / rels[0]) == (src / rels[0]).read_bytes()


# -- lines as they arrive; a new write at offset 0 replaces the order --------

def test_order_lines_taken_as_they_arrive(flat, nginx, mount):
    src, rels, _ = flat
    ng, m = _mount_flat(flat, nginx, mount)
    order = _perm(rels, 6)
    data = "".join(l + "\n" for l in order).encode()
    cut = len("".join(l + "\n" for l in order[:100])) + 5   # mid-line
    r0 = stat(m.stats(), "origin.requests")
    fd = os.open(m.path / ".prestofs" / "order", os.O_WRONLY | os.O_TRUNC)
    try:
        os.write(fd, data[:cut])
        s1 = wait_stats(m, lambda s: stat(s, "origin.requests") - r0 >= 100,
                        settle=("origin.requests", 3.0))
        # The complete lines are in use; the partial one is not a path yet.
        assert stat(s1, "prefetch.order_entries") == 100, \
            f"lines not taken before close: {pick(s1)}"
        assert stat(s1, "prefetch.order_unknown") == 0, pick(s1)
        assert stat(s1, "origin.requests") - r0 == 100, pick(s1)
        os.write(fd, data[cut:])
    finally:
        os.close(fd)
    s2 = wait_stats(m, lambda s: stat(s, "origin.requests") - r0 >= N_FILES,
                    settle=("origin.requests", 3.0))
    assert stat(s2, "prefetch.order_entries") == N_FILES, pick(s2)
    assert stat(s2, "prefetch.order_unknown") == 0, pick(s2)
    for rel in order:
        assert read_all(m.path / rel) == (src / rel).read_bytes(), rel
    s3 = m.stats()
    assert stat(s3, "ram.misses") - stat(s2, "ram.misses") <= TOL, pick(s3)


def test_new_order_replaces_the_old(flat, nginx, mount):
    src, rels, _ = flat
    ng, m = _mount_flat(flat, nginx, mount)
    first, second = rels[:100], _perm(rels[100:], 7)
    r0 = stat(m.stats(), "origin.requests")
    write_order_raw(m.path, first)
    wait_stats(m, lambda s: stat(s, "origin.requests") - r0 >= 100,
               settle=("origin.requests", 3.0))
    write_order_raw(m.path, second)     # offset 0, O_TRUNC: a new order
    s1 = wait_stats(m, lambda s: stat(s, "origin.requests") - r0 >= N_FILES,
                    settle=("origin.requests", 3.0))
    assert stat(s1, "prefetch.order_entries") == len(second), pick(s1)
    assert stat(s1, "origin.requests") - r0 == N_FILES, pick(s1)
    for rel in second:
        assert read_all(m.path / rel) == (src / rel).read_bytes(), rel
    s2 = m.stats()
    assert stat(s2, "ram.misses") - stat(s1, "ram.misses") <= TOL, pick(s2)


# -- (d) prestofs.OrderedSampler in a real DataLoader -----------------------

TF = transforms.Compose([transforms.Resize((32, 32)), transforms.ToTensor()])


class IndexedImageFolder(datasets.ImageFolder):
    """ImageFolder that also returns the index (module level: picklable)."""

    def __getitem__(self, i):
        x, y = super().__getitem__(i)
        return x, y, i


def test_ordered_sampler_dataloader(tmp_path, nginx, mount):
    src = tmp_path / "images"
    make_imagefolder(src, classes=4, per_class=50, width=48, height=40)
    write_manifest(src)
    ng = nginx(src, autoindex=False)
    m = mount(ng.url, RAM)
    ds_src = datasets.ImageFolder(str(src), transform=TF)
    ds = IndexedImageFolder(str(m.path), transform=TF)
    n = len(ds)
    assert n == 200
    g = torch.Generator()
    g.manual_seed(11)
    sampler = prestofs.OrderedSampler(torch.utils.data.RandomSampler(ds, generator=g), ds)
    assert len(sampler) == n
    dl = torch.utils.data.DataLoader(ds, batch_size=8, sampler=sampler, num_workers=2)

    def check(batch):
        x, y, idx = batch
        for k, i in enumerate(idx.tolist()):
            xs, ys = ds_src[i]
            assert ys == int(y[k]), i
            assert torch.equal(x[k], xs), f"tensor of sample {i} differs from the source's"
        return idx.tolist()

    r0 = stat(m.stats(), "origin.requests")
    orders = []
    # Epoch 1: after the first batch, let the prefetcher get ahead (bounded
    # wait); from then on the epoch's reads must hit the RAM tier.
    seen = []
    it = iter(dl)
    seen += check(next(it))
    s_mid = wait_stats(m, lambda s: stat(s, "origin.requests") - r0 >= n,
                       settle=("origin.requests", 3.0))
    assert sampler.last_written == n
    assert stat(s_mid, "prefetch.order_entries") == n, pick(s_mid)
    assert stat(s_mid, "prefetch.order_unknown") == 0, pick(s_mid)
    mine = prestofs.stream_stats(m.path, sampler.stream)
    assert mine is not None and mine["entries"] == n and mine["unknown"] == 0, \
        (sampler.stream, s_mid.get("stream"))
    for batch in it:
        seen += check(batch)
    s_end = m.stats()
    orders.append(seen)
    assert sorted(seen) == list(range(n))
    # At most 5 batches (the one consumed + 2 workers x prefetch_factor 2)
    # were read before s_mid; the rest after it.
    after = n - 8 * 5
    hits = stat(s_end, "ram.hits") - stat(s_mid, "ram.hits")
    misses = stat(s_end, "ram.misses") - stat(s_mid, "ram.misses")
    assert misses <= TOL, f"{misses} misses in the second part of epoch 1: {pick(s_end)}"
    assert hits >= after, f"only {hits} RAM hits for >= {after} reads: {pick(s_end)}"
    assert stat(s_end, "origin.requests") - r0 <= n + TOL, pick(s_end)

    # Epoch 2: a new permutation, a new order of the same length.
    seen = []
    for batch in dl:
        seen += check(batch)
    orders.append(seen)
    s2 = m.stats()
    assert sorted(seen) == list(range(n))
    assert orders[0] != orders[1], "RandomSampler gave the same order twice"
    assert sampler.last_written == n
    assert stat(s2, "prefetch.order_entries") == n, pick(s2)
    assert stat(s2, "origin.requests") - r0 <= n + TOL, pick(s2)


# -- (e) the control file is hidden; everything else stays read-only ---------

def test_order_file_hidden_and_dataset_read_only(flat, nginx, mount):
    src, rels, _ = flat
    ng, m = _mount_flat(flat, nginx, mount)
    # As in training: files were read (after the first open answered ENOSYS
    # the kernel stops sending opens, so a write-open may then succeed in the
    # kernel and the write itself must be refused) and an order was written.
    assert read_all(m.path / rels[1]) == (src / rels[1]).read_bytes()
    write_order_raw(m.path, rels[:5])
    root = os.listdir(m.path)
    assert "order" not in root and ".prestofs" not in root, root
    for d in ("d000", "d001"):
        assert "order" not in os.listdir(m.path / d)
    f, d = m.path / rels[0], m.path / "d000"
    ctl = m.path / ".prestofs"
    EROFS = (errno.EROFS,)
    ANY_DENIAL = (errno.EROFS, errno.EACCES, errno.EPERM)

    def opened(path, flags, mode=0o644):
        return lambda: os.open(path, flags, mode)

    ops = {
        "open O_WRONLY + write": (opened(f, os.O_WRONLY), EROFS),
        "open O_RDWR + write": (opened(f, os.O_RDWR), EROFS),
        "open O_WRONLY|O_APPEND + write": (opened(f, os.O_WRONLY | os.O_APPEND), EROFS),
        "open O_TRUNC": (opened(f, os.O_RDONLY | os.O_TRUNC), EROFS),
        "open O_WRONLY|O_TRUNC": (opened(f, os.O_WRONLY | os.O_TRUNC), EROFS),
        "create": (opened(m.path / "new", os.O_WRONLY | os.O_CREAT), EROFS),
        "create in dir": (opened(d / "new", os.O_WRONLY | os.O_CREAT | os.O_EXCL), EROFS),
        "create 'order' in a dir": (opened(d / "order", os.O_WRONLY | os.O_CREAT), EROFS),
        "write 'order' in a dir": (opened(d / "order", os.O_WRONLY), EROFS + (errno.ENOENT,)),
        "unlink": (lambda: os.unlink(f), EROFS),
        "mkdir": (lambda: os.mkdir(m.path / "newdir"), EROFS),
        "rmdir": (lambda: os.rmdir(d), EROFS + (errno.ENOTEMPTY,)),
        "rename": (lambda: os.rename(f, m.path / "renamed.bin"), EROFS),
        "truncate": (lambda: os.truncate(f, 0), EROFS),
        "chmod": (lambda: os.chmod(f, 0o777), EROFS),
        "ctl: write stats": (opened(ctl / "stats", os.O_WRONLY), ANY_DENIAL),
        "ctl: truncate stats": (lambda: os.truncate(ctl / "stats", 0), ANY_DENIAL),
        "ctl: create": (opened(ctl / "other", os.O_WRONLY | os.O_CREAT), ANY_DENIAL),
        "ctl: mkdir": (lambda: os.mkdir(ctl / "x"), ANY_DENIAL),
        "ctl: unlink order": (lambda: os.unlink(ctl / "order"), ANY_DENIAL),
        "ctl: rename order": (lambda: os.rename(ctl / "order", ctl / "order2"), ANY_DENIAL),
        "ctl: rename onto order": (lambda: os.rename(f, ctl / "order"),
                                   ANY_DENIAL + (errno.EXDEV,)),
    }
    wrong = []
    for name, (op, allowed) in ops.items():
        try:
            r = op()
        except OSError as e:
            if e.errno not in allowed:
                wrong.append(f"{name}: {e!r}")
            continue
        if not isinstance(r, int):
            wrong.append(f"{name}: succeeded")
            continue
        try:     # the open went through: the write must not
            os.write(r, b"X")
            wrong.append(f"{name}: write succeeded")
        except OSError as e:
            if e.errno not in allowed:
                wrong.append(f"{name}: write: {e!r}")
        finally:
            os.close(r)
    assert not wrong, wrong
    for rel in rels[:2]:
        drop_page_cache(m.path / rel)
        assert read_all(m.path / rel) == (src / rel).read_bytes()
    assert sorted(os.listdir(m.path)) == sorted(set(os.listdir(src)) - {MANIFEST})
    assert sorted(os.listdir(d)) == sorted(os.listdir(src / "d000"))
    json_ok = m.stats()   # stats still parse: nothing was written into them
    assert stat(json_ok, "prefetch.order_entries") == 5, pick(json_ok)


# -- (f) epoch tracking without hints ---------------------------------------

def test_epochs_counted_without_hints(flat, nginx, mount):
    src, rels, _ = flat
    ng, m = _mount_flat(flat, nginx, mount)
    s0 = m.stats()
    assert stat(s0, "epoch.number") == 1, pick(s0)
    for rel in _perm(rels, 8):
        assert read_all(m.path / rel) == (src / rel).read_bytes(), rel
    s1 = m.stats()
    assert stat(s1, "epoch.number") == 1, pick(s1)
    assert stat(s1, "prefetch.order_entries") == 0, pick(s1)
    for rel in rels:
        drop_page_cache(m.path / rel)
    f0 = stat(s1, "fuse.read")
    for rel in _perm(rels, 9):
        assert read_all(m.path / rel) == (src / rel).read_bytes(), rel
    s2 = m.stats()
    assert stat(s2, "fuse.read") - f0 >= N_FILES, \
        f"second pass did not reach the daemon (page cache not dropped?): {pick(s2)}"
    assert stat(s2, "epoch.number") == 2, pick(s2)
    # The RAM tier holds the whole data set: pass 2 costs the origin nothing.
    assert stat(s2, "origin.requests") == stat(s1, "origin.requests"), pick(s2)
