"""OrderedSampler without a daemon: the order it writes each epoch (stream
line included), set_epoch, DistributedSampler shards, datasets, failures."""
import copy
import logging
import os
import pickle

import pytest

import prestofs
from prestofs import _order

torch = pytest.importorskip("torch")
torchvision = pytest.importorskip("torchvision")
from torch.utils.data import (DistributedSampler, RandomSampler,  # noqa: E402
                              SequentialSampler, Subset)
from torchvision import datasets  # noqa: E402


class Files:
    """A dataset of n files under root (path_of), not an ImageFolder."""

    def __init__(self, root, n):
        self.root, self.n = str(root), n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return i

    def path_of(self, i):
        return os.path.join(self.root, f"train/f{i:03d}.bin")


def test_random_sampler_each_epoch(fake_mount, monkeypatch, order_of):
    monkeypatch.chdir(fake_mount)
    monkeypatch.delenv("RANK", raising=False)
    ds = datasets.ImageFolder("train", loader=str)   # relative root: made absolute
    g = torch.Generator()
    g.manual_seed(3)
    s = prestofs.OrderedSampler(RandomSampler(ds, generator=g), ds)
    assert len(s) == 3
    assert s.stream == f"rank0-pid{os.getpid()}"
    seen = []
    for _ in range(4):
        idx = list(s)
        assert sorted(idx) == [0, 1, 2] and s.last_written == 3
        stream, lines = order_of(fake_mount)
        assert stream == s.stream       # every epoch replaces the same stream
        assert lines == ["train/" + os.path.relpath(ds.samples[i][0], "train") for i in idx]
        seen.append(tuple(idx))
    assert len(set(seen)) > 1, "RandomSampler gave one order four times"
    assert s.mount == str(fake_mount)


def test_stream_override_and_check(fake_mount, order_of):
    ds = Files(fake_mount, 4)
    s = prestofs.OrderedSampler(SequentialSampler(ds), ds, stream="val:0")
    assert list(s) == [0, 1, 2, 3] and s.stream == "val:0"
    assert order_of(fake_mount) == ("val:0", [f"train/f{i:03d}.bin" for i in range(4)])
    with pytest.raises(ValueError, match="stream name"):
        prestofs.OrderedSampler(SequentialSampler(ds), ds, stream="a b")


def test_rank_from_env_and_from_distributed_sampler(fake_mount, monkeypatch):
    ds = Files(fake_mount, 8)
    monkeypatch.setenv("RANK", "5")
    assert prestofs.OrderedSampler([0, 1], ds).stream == f"rank5-pid{os.getpid()}"
    # A DistributedSampler built for rank 2 says which rank this is, even
    # without a process group or $RANK.
    monkeypatch.delenv("RANK")
    ds_s = DistributedSampler(ds, num_replicas=4, rank=2, shuffle=False)
    assert prestofs.OrderedSampler(ds_s, ds).stream == f"rank2-pid{os.getpid()}"


def test_rank_from_process_group(fake_mount, monkeypatch, tmp_path):
    import torch.distributed as dist
    if not dist.is_available():
        pytest.skip("torch.distributed not available")
    monkeypatch.delenv("RANK", raising=False)
    dist.init_process_group("gloo", init_method=f"file://{tmp_path}/pg", rank=0,
                            world_size=1)
    try:
        monkeypatch.setattr(dist, "get_rank", lambda *a, **k: 6)
        assert prestofs.default_stream_name() == f"rank6-pid{os.getpid()}"
        ds = Files(fake_mount, 2)
        assert prestofs.OrderedSampler([1, 0], ds).stream == f"rank6-pid{os.getpid()}"
    finally:
        monkeypatch.undo()
        dist.destroy_process_group()


def test_set_epoch_forwarded(fake_mount, order_of):
    ds = Files(fake_mount, 50)
    inner = DistributedSampler(ds, num_replicas=2, rank=1, shuffle=True, seed=9)
    ref = DistributedSampler(ds, num_replicas=2, rank=1, shuffle=True, seed=9)
    s = prestofs.OrderedSampler(inner, ds)
    epochs = []
    for e in range(3):
        s.set_epoch(e)
        ref.set_epoch(e)
        assert inner.epoch == e
        got = list(s)
        assert got == list(ref)
        assert order_of(fake_mount)[1] == [f"train/f{i:03d}.bin" for i in got]
        epochs.append(got)
    assert epochs[0] != epochs[1] != epochs[2], "set_epoch did not reach the sampler"
    # A sampler without set_epoch: forwarding is a no-op.
    plain = prestofs.OrderedSampler([2, 1], ds)
    plain.set_epoch(4)
    assert list(plain) == [2, 1]


def test_distributed_sampler_shards_with_padding(fake_mount, order_of):
    """4 ranks over 10 samples: DistributedSampler pads to 12 by repeating
    the first samples of the permutation; each rank's order is its shard,
    repeats included, under its own stream."""
    n, world = 10, 4
    ds = Files(fake_mount, n)
    shards, streams = [], set()
    for r in range(world):
        inner = DistributedSampler(ds, num_replicas=world, rank=r, shuffle=True, seed=1)
        s = prestofs.OrderedSampler(inner, ds)
        s.set_epoch(3)
        got = list(s)
        assert len(got) == len(s) == 3
        stream, lines = order_of(fake_mount)
        assert stream == s.stream == f"rank{r}-pid{os.getpid()}"
        assert lines == [f"train/f{i:03d}.bin" for i in got]
        shards.append(got)
        streams.add(stream)
    assert len(streams) == world
    flat = [i for sh in shards for i in sh]
    assert len(flat) == 12 and set(flat) == set(range(n))
    assert len(flat) - len(set(flat)) == 2          # the padding


def test_subset_views_path_of_and_batches(fake_mount, order_of, monkeypatch):
    root = fake_mount
    ds = datasets.ImageFolder(str(root / "train"), loader=str)
    # A view: paths stay relative to the mount root.
    vds = datasets.ImageFolder(str(root / ".prestofs" / "views" / "small"), loader=str)
    vs = prestofs.OrderedSampler(SequentialSampler(vds), vds, stream="v")
    assert list(vs) == [0]
    assert order_of(root) == ("v", [".prestofs/views/small/cls/v.jpg"])
    # Subset, and the mount given explicitly.
    sub = Subset(ds, [2, 0])
    ss = prestofs.OrderedSampler(SequentialSampler(sub), sub, root, stream="v")
    assert list(ss) == [0, 1] and ss.last_written == 2
    assert order_of(root)[1] == [os.path.relpath(ds.samples[i][0], root) for i in (2, 0)]
    # path_of alone (no dataset): relative paths are relative to the
    # current directory, as for a dataset.
    monkeypatch.chdir(root)
    ps = prestofs.OrderedSampler([1, 0], path_of=lambda i: ["x", "y"][i], mount=root,
                                 stream="v")
    assert list(ps) == [1, 0]
    assert order_of(root) == ("v", ["y", "x"])
    # A batch sampler's lists of indices.
    bs = torch.utils.data.BatchSampler(SequentialSampler(ds), batch_size=2, drop_last=False)
    b = prestofs.OrderedSampler(bs, ds, stream="v")
    assert list(b) == [[0, 1], [2]] and b.last_written == 3
    with pytest.raises(TypeError, match="cannot map indices"):
        prestofs.OrderedSampler([0], [object()])
    with pytest.raises(TypeError):
        prestofs.OrderedSampler([0])


def test_picklable(fake_mount):
    ds = Files(fake_mount, 3)
    s = prestofs.OrderedSampler(DistributedSampler(ds, num_replicas=2, rank=0), ds,
                                stream="p")
    for c in (pickle.loads(pickle.dumps(s)), copy.deepcopy(s)):
        assert type(c).__name__ == "OrderedSampler" and c.stream == "p"
        assert list(c) == list(s)


def test_never_fails_training(tmp_path, fake_mount, caplog):
    _order._warned.clear()
    (fake_mount / ".prestofs" / "order").mkdir()          # open('w') -> EISDIR
    ds = datasets.ImageFolder(str(fake_mount / "train"), loader=str)
    s = prestofs.OrderedSampler(SequentialSampler(ds), ds)
    with caplog.at_level(logging.WARNING, logger="prestofs"):
        assert list(s) == [0, 1, 2]
        assert list(s) == [0, 1, 2]
    assert s.last_written is None
    warnings = [r for r in caplog.records if r.name == "prestofs"]
    assert len(warnings) == 1, [r.getMessage() for r in warnings]
    # Not on a prestofs mount at all: plain indices, no exception.
    plain = tmp_path / "plain" / "cls"
    plain.mkdir(parents=True)
    (plain / "p.jpg").write_bytes(b"x")
    pds = datasets.ImageFolder(str(plain.parent), loader=str)
    ps = prestofs.OrderedSampler(SequentialSampler(pds), pds)
    assert list(ps) == [0] and ps.last_written is None
    # A path_of that raises: indices still come.
    bad = prestofs.OrderedSampler([0, 1], path_of=lambda i: 1 / 0)
    assert list(bad) == [0, 1] and bad.last_written is None


def test_dataloader_workers(fake_mount, order_of):
    """In a DataLoader with worker processes the order is written once per
    epoch from the main process, before the first index is handed out."""
    ds = Files(fake_mount, 20)
    g = torch.Generator()
    g.manual_seed(4)
    s = prestofs.OrderedSampler(RandomSampler(ds, generator=g), ds, stream="dl")
    dl = torch.utils.data.DataLoader(ds, batch_size=4, sampler=s, num_workers=2)
    for _ in range(2):
        got = [int(i) for b in dl for i in b]
        assert order_of(fake_mount) == ("dl", [f"train/f{i:03d}.bin" for i in got])
