"""prestofs: order hints, per-rank streams and counters for training jobs
that read a prestofs mount.

A loader that knows the order in which it will read files this epoch tells
the daemon, which fetches exactly those files, a bounded window ahead of the
reader. The hint is a plain text file, written from offset 0 (open with 'w'):

    MOUNT/.prestofs/order   first line "#stream NAME" (optional): this order
                            replaces the stream called NAME; then paths
                            relative to the mount root, one per line, UTF-8,
                            each ending in '\\n'.

Each named stream is prefetched on its own, so the ranks of a data-parallel
job (one process per GPU, each with its DistributedSampler shard) each get
their own prefetch window on one mount.

  OrderedSampler(sampler, dataset)  a torch Sampler wrapping any sampler: each
                                    epoch it writes the paths of its indices
                                    to this rank's stream, then yields them.
  write_order(mount, paths)         the same for any framework (tf.data, JAX,
                                    a hand-written loop).
  stats(mount), stream_stats(mount, name)
                                    the daemon's counters (MOUNT/.prestofs/stats).
  view_root(mount, spec)            MOUNT/.prestofs/views/SPEC, checked.
  find_mount_root(path)             the prestofs mount above a path.
  default_stream_name()             "rank{R}-pid{PID}" for this process.

Hints are advisory: if the order file cannot be written (not a prestofs
mount, a read-only error...) a warning is logged once on the "prestofs"
logger and training goes on without hints. Nothing here makes a training
job fail because of hints.

Only the standard library is imported; torch is imported the first time
OrderedSampler is used.
"""
from ._order import (CONTROL_DIR, ORDER_NAME, STREAM_NAME_MAX, default_stream_name,
                     find_mount_root, relative_paths, valid_stream_name, write_order)
from ._mount import stats, stream_stats, view_root

__version__ = "0.2.0"

__all__ = ["OrderedSampler", "write_order", "find_mount_root", "relative_paths",
           "default_stream_name", "valid_stream_name", "stats", "stream_stats",
           "view_root", "CONTROL_DIR", "ORDER_NAME", "STREAM_NAME_MAX"]


def __getattr__(name):
    # PEP 562: import torch (through ._sampler) on first use of OrderedSampler.
    if name == "OrderedSampler":
        from ._sampler import OrderedSampler
        globals()["OrderedSampler"] = OrderedSampler
        return OrderedSampler
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
