"""OrderedSampler: a torch Sampler that hands each epoch's order to prestofs.

Imported on first use of prestofs.OrderedSampler (this imports torch).
"""
import os

from torch.utils.data import Sampler

from ._order import (check_stream_name, default_stream_name, find_mount_root,
                     warn_once, write_order)


class _PathGetter:
    """index -> file path for a dataset (a class, not a closure, so that a
    sampler holding it can be pickled and deep-copied)."""

    def __init__(self, dataset, path_of=None):
        self.dataset = dataset
        self.path_of = path_of
        self.inner = None
        if path_of is not None or callable(getattr(dataset, "path_of", None)):
            self.kind = "path_of"
        elif getattr(dataset, "samples", None) is not None:
            self.kind = "samples"         # ImageFolder, DatasetFolder
        elif getattr(dataset, "imgs", None) is not None:
            self.kind = "imgs"            # old torchvision name
        elif getattr(dataset, "dataset", None) is not None and \
                getattr(dataset, "indices", None) is not None:
            self.kind = "subset"          # torch.utils.data.Subset
            self.inner = _PathGetter(dataset.dataset)
        else:
            raise TypeError(
                f"OrderedSampler: cannot map indices of {type(dataset).__name__} "
                "to file paths: give a dataset with .samples (ImageFolder, "
                "DatasetFolder), a .path_of(i) method, or path_of=callable")

    def __call__(self, i):
        if self.kind == "path_of":
            return (self.path_of or self.dataset.path_of)(i)
        if self.kind == "samples":
            return self.dataset.samples[i][0]
        if self.kind == "imgs":
            return self.dataset.imgs[i][0]
        return self.inner(self.dataset.indices[i])


def _absolute(p):
    # Relative dataset paths are relative to the current directory, not to
    # the mount root: make them absolute before they go into the order.
    p = os.fspath(p)
    if isinstance(p, bytes):
        p = os.fsdecode(p)
    return p if os.path.isabs(p) else os.path.abspath(p)


def _flatten(indices):
    # A batch sampler yields lists of indices.
    for i in indices:
        if isinstance(i, (list, tuple)):
            yield from i
        else:
            yield i


def _sampler_rank(sampler):
    """The rank a DistributedSampler (or look-alike) was built for, or None."""
    r = getattr(sampler, "rank", None)
    if isinstance(r, int) and not isinstance(r, bool) and \
            isinstance(getattr(sampler, "num_replicas", None), int):
        return r
    return None


class OrderedSampler(Sampler):
    """Wraps `sampler`; each epoch writes the paths of its indices to this
    process's order stream on the prestofs mount, then yields the same
    indices.

    sampler   any sampler or iterable of indices (RandomSampler,
              DistributedSampler, SubsetRandomSampler, a BatchSampler, a list)
    dataset   maps an index to a path: dataset.samples[i][0] (ImageFolder,
              DatasetFolder), dataset.path_of(i), or a torch Subset of one
              of those; None with path_of
    mount     the prestofs mount root; None: found by walking up from the
              first path (views under .prestofs/views/ work too)
    path_of   optional callable i -> path, overrides the dataset's
    stream    the order stream's name; None: "rank{R}-pid{PID}", R the
              wrapped DistributedSampler's rank, else torch.distributed's,
              else $RANK, else 0 (see the `stream` attribute)

    set_epoch(e) is forwarded to the wrapped sampler (DistributedSampler).
    `last_written` is the number of paths written for the latest epoch, or
    None. If the hint cannot be written, a warning is logged once and the
    indices are yielded anyway.
    """

    def __init__(self, sampler, dataset=None, mount=None, path_of=None, stream=None):
        super().__init__(None)
        self.sampler = sampler
        self.dataset = dataset
        self.mount = os.fspath(mount) if mount is not None else None
        self._path_of = _PathGetter(dataset, path_of)
        self._stream = check_stream_name(stream) if stream is not None else None
        self.last_written = None

    @property
    def stream(self):
        """The name of the order stream this sampler writes (fixed at first
        use, so that each epoch replaces the same stream)."""
        if self._stream is None:
            self._stream = default_stream_name(_sampler_rank(self.sampler))
        return self._stream

    def __len__(self):
        return len(self.sampler)

    def set_epoch(self, epoch):
        """Forwarded to the wrapped sampler (DistributedSampler reshuffles by
        seed + epoch)."""
        fn = getattr(self.sampler, "set_epoch", None)
        if fn is not None:
            fn(epoch)

    def _hint(self, indices):
        try:
            paths = [_absolute(self._path_of(i)) for i in _flatten(indices)]
        except Exception as e:  # noqa: BLE001 - hints must never break training
            warn_once(("paths", id(self)), "prestofs: cannot map indices to paths "
                      "(%r); no order hints", e)
            return None
        if not paths:
            return None
        if self.mount is None:
            root = find_mount_root(paths[0])
            if root is None:
                warn_once(("noroot", os.path.dirname(paths[0])),
                          "prestofs: %s is not on a prestofs mount; no order hints",
                          paths[0])
                return None
            self.mount = root
        try:
            return write_order(self.mount, paths, self.stream)
        except Exception as e:  # noqa: BLE001 - never fail training
            warn_once(("unexpected", id(self)), "prestofs: order hint failed (%r); "
                      "no order hints", e)
            return None

    def __iter__(self):
        indices = list(iter(self.sampler))
        self.last_written = self._hint(indices)
        return iter(indices)
