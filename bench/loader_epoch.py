#!/usr/bin/python3
"""bench/loader_epoch.py - one PyTorch training-input epoch (used by bench/loader).

  loader_epoch.py ROOT --seed S [--hint MOUNT] [--deadline SECONDS]
                  [--workers 2] [--batch 64] [--order-out FILE]

torchvision ImageFolder(ROOT) with RandomResizedCrop(224) +
RandomHorizontalFlip + ToTensor, DataLoader(batch 64, shuffled, 2 worker
processes), one epoch. The shuffle is a RandomSampler seeded with S.

--hint MOUNT: the epoch's order goes to MOUNT/.prestofs/order before the
first batch is asked for (paths relative to the mount root, one per line),
through the prestofs package's OrderedSampler (python/) when it exists,
else through the small fallback below (same behaviour).

--deadline: stop taking batches after that many seconds (a slow scenario
then measures a prefix of the epoch; "partial" in the output).

Prints one JSON line: images, seconds, images_per_s, partial, hint (how the
order was given: "package", "fallback", "unsupported: ..." or "none"),
listing_s. --order-out writes the sampled order (relative paths) to FILE so
the caller can count the bytes of the images read.
"""
import argparse
import errno
import json
import os
import sys
import time
from pathlib import Path

import torch
from torchvision import datasets, transforms

REPO = Path(__file__).resolve().parent.parent


class _FallbackOrderedSampler(torch.utils.data.Sampler):
    """Wraps a sampler; each time it is iterated, writes that epoch's order
    (relative paths) to MOUNT/.prestofs/order (O_TRUNC: a new order), then
    yields the same indices."""

    def __init__(self, sampler, dataset, mount_root):
        self.sampler, self.dataset = sampler, dataset
        self.root = os.path.abspath(str(mount_root))
        self.error = None

    def __len__(self):
        return len(self.sampler)

    def __iter__(self):
        idx = list(iter(self.sampler))
        lines = "".join(os.path.relpath(self.dataset.samples[i][0], self.root) + "\n"
                        for i in idx).encode()
        try:
            fd = os.open(os.path.join(self.root, ".prestofs", "order"),
                         os.O_WRONLY | os.O_TRUNC)
            try:
                view = memoryview(lines)
                while view:
                    view = view[os.write(fd, view[:1 << 16]):]
            finally:
                os.close(fd)
        except OSError as e:
            self.error = errno.errorcode.get(e.errno, str(e.errno))
        return iter(idx)


class _Recording(torch.utils.data.Sampler):
    """Remembers the indices of the last iteration (the epoch's order)."""

    def __init__(self, sampler):
        self.sampler, self.order = sampler, []

    def __len__(self):
        return len(self.sampler)

    def __iter__(self):
        self.order = list(iter(self.sampler))
        return iter(self.order)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("root")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--hint", default=None, help="mount root to write the order to")
    ap.add_argument("--deadline", type=float, default=0.0)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--order-out", default=None)
    a = ap.parse_args()

    torch.manual_seed(a.seed)
    tf = transforms.Compose([transforms.RandomResizedCrop(224),
                             transforms.RandomHorizontalFlip(),
                             transforms.ToTensor()])
    t0 = time.monotonic()
    ds = datasets.ImageFolder(a.root, transform=tf)
    listing_s = time.monotonic() - t0
    gen = torch.Generator()
    gen.manual_seed(a.seed)
    sampler = _Recording(torch.utils.data.RandomSampler(ds, generator=gen))
    recorder = sampler
    hint = "none"
    if a.hint:
        try:
            sys.path.insert(0, str(REPO / "python"))
            from prestofs import OrderedSampler  # noqa: E402
            hint = "package"
        except ImportError:
            OrderedSampler = _FallbackOrderedSampler
            hint = "fallback"
        sampler = OrderedSampler(sampler, ds, a.hint)
    dl = torch.utils.data.DataLoader(ds, batch_size=a.batch, sampler=sampler,
                                     num_workers=a.workers)
    t0 = time.monotonic()
    n = 0
    partial = False
    it = iter(dl)
    for x, _ in it:
        assert x.shape[1:] == (3, 224, 224)
        n += x.shape[0]
        if a.deadline and time.monotonic() - t0 >= a.deadline and n < len(ds):
            partial = True
            break
    dt = time.monotonic() - t0
    del it
    if hint == "fallback" and sampler.error:
        hint = f"failed: {sampler.error}"
    elif hint == "package" and sampler.last_written is None:
        hint = "failed (package: not written)"
    if a.order_out:
        order = recorder.order
        root = os.path.abspath(a.root)
        Path(a.order_out).write_text("".join(
            os.path.relpath(ds.samples[i][0], root) + "\n" for i in order[:n]))
    print(json.dumps({"images": n, "total": len(ds), "seconds": dt,
                      "images_per_s": n / dt if dt > 0 else 0.0, "partial": partial,
                      "hint": hint, "listing_s": listing_s}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
