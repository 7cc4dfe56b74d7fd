#!/usr/bin/python3
"""One rank of a data-parallel training job's input side, as torchrun runs it
(used by test_ranks.py; run with /usr/bin/python3 and python/ on PYTHONPATH).

    ddp_rank.py --mount MNT --files LIST --out OUT.json [--epochs 2]
                [--seed 0] [--batch 16] [--workers 1] [--busy-ms 0] [--head 0] [--init file:///...]

RANK and WORLD_SIZE come from the environment, as torchrun sets them. The
rank joins a gloo process group, wraps DistributedSampler(shuffle=True) in
prestofs.OrderedSampler (its stream named by the package: rank and pid),
and reads its shard each epoch through a DataLoader with worker processes.
Every step ends in an all_reduce, as DDP's gradient sync does, so the ranks
read in lockstep; a barrier separates epochs.

A sample is the sha256 of its file's bytes, read through the mount; after
the read the file's pages are dropped from the kernel's page cache, as they
would be for a dataset larger than the machine's memory: every read of a
sample, DistributedSampler's padding repeats included, reaches the daemon.

Writes OUT.json: {"rank", "stream", "pid", "epochs": [{"samples": [[index,
sha256], ...] in read order, "seconds", "stream": the stream's counters
right after the epoch (prestofs.stream_stats), "stats": the mount's stats
after every rank finished the epoch (rank 0 only)}]}.
"""
import argparse
import datetime
import hashlib
import json
import os
import time

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler

import prestofs


class MountFiles:
    """Map-style dataset of files under a mount; item i: (i, sha256 hex)."""

    def __init__(self, root, rels, busy_ms=0.0, head=0):
        self.root, self.rels, self.busy_ms, self.head = root, rels, busy_ms, head

    def __len__(self):
        return len(self.rels)

    def path_of(self, i):
        return os.path.join(self.root, self.rels[i])

    def __getitem__(self, i):
        h = hashlib.sha256()
        fd = os.open(self.path_of(i), os.O_RDONLY)
        try:
            if self.head:  # a decoder's first look at the header (PIL reads a few KB)
                h.update(os.read(fd, self.head))
            while True:
                b = os.read(fd, 1 << 20)
                if not b:
                    break
                h.update(b)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
        if self.busy_ms:  # a decode's CPU, spent as a loader's worker spends it
            end = time.thread_time() + self.busy_ms / 1000
            while time.thread_time() < end:
                pass
        return i, h.hexdigest()


def as_list(batch):
    return batch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mount", required=True)
    ap.add_argument("--files", required=True, help="relative paths, one per line")
    ap.add_argument("--out", required=True)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--head", type=int, default=0,
                    help="bytes of a first small read of each file, as a decoder's")
    ap.add_argument("--busy-ms", type=float, default=0.0,
                    help="CPU ms spent per sample after its read (a decode)")
    ap.add_argument("--init", required=True, help="init_method, e.g. file:///tmp/pg")
    a = ap.parse_args()

    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=a.init, rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=90))
    with open(a.files, encoding="utf-8") as f:
        rels = f.read().splitlines()
    ds = MountFiles(a.mount, rels, a.busy_ms, a.head)
    sampler = prestofs.OrderedSampler(
        DistributedSampler(ds, num_replicas=world, rank=rank, shuffle=True, seed=a.seed), ds)
    dl = DataLoader(ds, batch_size=a.batch, sampler=sampler, num_workers=a.workers,
                    collate_fn=as_list)
    out = {"rank": rank, "stream": sampler.stream, "pid": os.getpid(), "epochs": []}
    tick = torch.zeros(1)
    for epoch in range(a.epochs):
        sampler.set_epoch(epoch)
        dist.barrier()
        t0 = time.monotonic()
        samples = []
        for batch in dl:
            samples += batch
            dist.all_reduce(tick)
        seconds = time.monotonic() - t0
        rec = {"samples": samples, "seconds": seconds, "written": sampler.last_written,
               "stream": prestofs.stream_stats(a.mount, sampler.stream)}
        dist.barrier()
        if rank == 0:
            rec["stats"] = prestofs.stats(a.mount)
        out["epochs"].append(rec)
    dist.barrier()
    dist.destroy_process_group()
    with open(a.out, "w", encoding="utf-8") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main()
