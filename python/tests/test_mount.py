"""The package against a real daemon: stats(), view_root(), named streams
that live side by side, and OrderedSampler's stream in a DataLoader.

Mounts with the integration fixtures (nginx origin with a manifest, so the
mount lists in one request). Waits poll the stats with a deadline; the
verdicts come from counters and bytes.
"""
import os
import time

import pytest

import prestofs
from helpers.compare import read_all
from helpers.dataset import make_flat, make_imagefolder
from helpers.manifest import write_manifest

KiB = 1 << 10
WAIT = 30.0
TOL = 2


def wait_for(m, pred, timeout=WAIT):
    """Polls prestofs.stats(m.path) until pred(stats) or the deadline;
    returns the last stats either way."""
    deadline = time.monotonic() + timeout
    while True:
        s = prestofs.stats(m.path)
        if pred(s) or time.monotonic() > deadline:
            return s
        time.sleep(0.02)


def streams(s):
    return s.get("stream", {})


@pytest.fixture
def flat(tmp_path):
    src = tmp_path / "flat"
    rels, _ = make_flat(src, count=120, size=8 * KiB, per_dir=40, seed=3)
    write_manifest(src)
    return src, rels


def test_stats_and_view_root(fuse, tmp_path, nginx, mount):
    src = tmp_path / "images"
    make_imagefolder(src, classes=2, per_class=3, width=40, height=32)
    write_manifest(src)
    m = mount(nginx(src, autoindex=False).url, {"ram_size": "16M"})
    s = prestofs.stats(m.path)
    for group in ("origin", "ram", "epoch", "prefetch"):
        assert isinstance(s.get(group), dict), sorted(s)
    assert s["epoch"]["number"] == 1
    assert prestofs.stats(m.path / "class_00")["epoch"]["number"] == 1   # any path below
    root = prestofs.view_root(m.path, "resize=16")
    assert root == os.path.join(str(m.path), ".prestofs", "views", "resize=16")
    assert sorted(os.listdir(root)) == ["class_00", "class_01"]
    assert prestofs.view_root(m.path / "class_01", "decode").endswith("/views/decode")
    img = read_all(os.path.join(root, "class_00", "img_0000.jpg"))
    assert img and img != (src / "class_00" / "img_0000.jpg").read_bytes(), \
        "the view served the source file unchanged"
    with pytest.raises(ValueError, match="no view 'resize=banana'"):
        prestofs.view_root(m.path, "resize=banana")
    assert prestofs.stream_stats(m.path, "never-written") is None


def test_named_streams_live_side_by_side(fuse, flat, nginx, mount):
    """Two named streams, written by one process: each is prefetched, a new
    order replaces only its own stream, an order without a stream line
    replaces the unnamed stream ("default") alone."""
    src, rels = flat
    m = mount(nginx(src, autoindex=False).url, {"ram_size": "64M"})
    a, b = rels[:60], rels[60:]
    r0 = prestofs.stats(m.path)["origin"]["requests"]
    assert prestofs.write_order(m.path, a, stream="train:a") == 60
    assert prestofs.write_order(m.path, b, stream="train:b") == 60
    s = wait_for(m, lambda s: s["origin"]["requests"] - r0 >= 120)
    assert s["origin"]["requests"] - r0 == 120, s["origin"]
    assert s["prefetch"]["order_unknown"] == 0, s["prefetch"]
    st = streams(s)
    assert st.get("train:a", {}).get("entries") == 60, st
    assert st.get("train:b", {}).get("entries") == 60, st
    assert st["train:a"]["unknown"] == 0 and st["train:b"]["unknown"] == 0, st

    # Read b: its counters move, a's do not.
    for rel in b:
        assert read_all(m.path / rel) == (src / rel).read_bytes(), rel
    sb = prestofs.stream_stats(m.path, "train:b")
    sa = prestofs.stream_stats(m.path, "train:a")
    assert sb["demand_hits"] + sb["demand_misses"] >= 60 - TOL, sb
    assert sb["demand_misses"] <= TOL, sb
    assert sa["demand_hits"] + sa["demand_misses"] == 0, sa

    # A new order for a replaces a alone.
    assert prestofs.write_order(m.path, a[:25], stream="train:a") == 25
    st = streams(prestofs.stats(m.path))
    assert st["train:a"]["entries"] == 25 and st["train:b"]["entries"] == 60, st
    # Orders without a stream line: the unnamed stream, beside them.
    assert "default" not in st, st
    assert prestofs.write_order(m.path, a[25:30], stream=False) == 5
    st = streams(prestofs.stats(m.path))
    assert st.get("default", {}).get("entries") == 5, st
    assert prestofs.write_order(m.path, a[30:33], stream=False) == 3
    st = streams(prestofs.stats(m.path))
    assert sorted(st) == ["default", "train:a", "train:b"], st
    assert st["default"]["entries"] == 3 and st["train:a"]["entries"] == 25, st
    # An empty order empties a stream.
    assert prestofs.write_order(m.path, [], stream=False) == 0
    assert prestofs.write_order(m.path, [], stream="train:b") == 0
    st = streams(prestofs.stats(m.path))
    assert st["default"]["entries"] == 0 and st["train:b"]["entries"] == 0, st


def _torch():
    return pytest.importorskip("torch")


class FlatFiles:
    """A map-style dataset of files under a mount: item i is (i, bytes)."""

    def __init__(self, root, rels):
        self.root, self.rels = str(root), list(rels)

    def __len__(self):
        return len(self.rels)

    def path_of(self, i):
        return os.path.join(self.root, self.rels[i])

    def __getitem__(self, i):
        return i, read_all(self.path_of(i))


def test_ordered_sampler_stream_on_a_mount(fuse, flat, nginx, mount):
    torch = _torch()
    src, rels = flat
    m = mount(nginx(src, autoindex=False).url, {"ram_size": "64M"})
    ds = FlatFiles(m.path, rels)
    g = torch.Generator()
    g.manual_seed(2)
    sampler = prestofs.OrderedSampler(torch.utils.data.RandomSampler(ds, generator=g), ds)
    assert sampler.stream == prestofs.default_stream_name()
    dl = torch.utils.data.DataLoader(ds, batch_size=10, sampler=sampler, num_workers=1,
                                     collate_fn=lambda b: b)
    r0 = prestofs.stats(m.path)["origin"]["requests"]
    it = iter(dl)            # the order is written here, before any read
    assert sampler.last_written == len(rels)
    s = wait_for(m, lambda s: s["origin"]["requests"] - r0 >= len(rels))
    st = prestofs.stream_stats(m.path, sampler.stream)
    assert st is not None, f"no stream {sampler.stream!r}: {streams(s)}"
    assert st["entries"] == len(rels) and st["unknown"] == 0, st
    seen = []
    for batch in it:
        for i, data in batch:
            assert data == (src / rels[i]).read_bytes(), rels[i]
            seen.append(i)
    assert sorted(seen) == list(range(len(rels)))
    st = prestofs.stream_stats(m.path, sampler.stream)
    assert st["demand_misses"] <= TOL, st
    assert st["demand_hits"] >= len(rels) - TOL, st
    # The next epoch replaces the same stream: still one stream of ours.
    list(iter(sampler))
    names = [n for n in streams(prestofs.stats(m.path)) if n.endswith(f"-pid{os.getpid()}")]
    assert names == [sampler.stream], names
