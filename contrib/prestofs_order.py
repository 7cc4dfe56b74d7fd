"""Epoch order hints for prestofs, from PyTorch (or any loader).

A loader that knows the order in which it will read files this epoch can tell
the prestofs daemon, which then fetches the files in exactly that order a
bounded window ahead of the reader. The hint is a plain text file:

    MOUNT/.prestofs/order   paths relative to the mount root, one per line,
                            UTF-8, each line ending in '\\n'; writing it from
                            offset 0 (open with 'w' / O_TRUNC) starts a new
                            order.

Two entry points:

  write_order(mount_root, paths)      a plain function: writes the order file
                                      in one go (any framework: tf.data, JAX,
                                      a hand-written loop).
  OrderedSampler(sampler, dataset)    a torch.utils.data.Sampler wrapping any
                                      sampler (RandomSampler, ...): each epoch
                                      it materialises the indices, writes their
                                      paths to the order file, then yields the
                                      same indices.

Hints are advisory: if the order file cannot be written (not a prestofs
mount, an old daemon, a read-only error...) a warning is logged once and
training goes on without hints. Nothing here ever makes a training job fail
because of hints.

torch is imported only when OrderedSampler is first used; write_order and
find_mount_root need nothing beyond the standard library.
"""
import logging
import os

__all__ = ["OrderedSampler", "write_order", "find_mount_root", "relative_paths",
           "CONTROL_DIR", "ORDER_NAME"]

log = logging.getLogger("prestofs_order")

CONTROL_DIR = ".prestofs"
ORDER_NAME = "order"

# Warn once per (kind of problem, mount root) per process: an epoch loop
# would otherwise repeat the same warning every epoch.
_warned = set()


def _warn_once(key, msg, *args):
    if key in _warned:
        return
    _warned.add(key)
    log.warning(msg, *args)


def find_mount_root(path):
    """The prestofs mount root above `path` (a file or directory; made
    absolute, symlinks not resolved): the nearest directory, `path` itself
    included, that has a `.prestofs` directory reachable by name. A path
    inside the control tree (e.g. a view under MOUNT/.prestofs/views/...)
    gives the mount root, not a directory inside `.prestofs`. Returns None
    when there is none."""
    d = os.path.abspath(os.fspath(path))
    if not os.path.isdir(d):
        d = os.path.dirname(d)
    while True:
        # Inside MOUNT/.prestofs/... the mount root is the parent of the
        # '.prestofs' component: skip straight to it.
        if os.path.basename(d) != CONTROL_DIR and \
                os.path.isdir(os.path.join(d, CONTROL_DIR)):
            return d
        parent = os.path.dirname(d)
        if parent == d:
            return None
        d = parent


def _outside(rel):
    return rel == os.curdir or rel == os.pardir or rel.startswith(os.pardir + os.sep)


def _rel(p, root, prefix):
    """Absolute path p relative to root ('/'-separated), or None when it is
    not below root. prefix is root + '/'."""
    if p.startswith(prefix) and "//" not in p and "/./" not in p and \
            "/../" not in p and not p.endswith(("/.", "/..")):
        return p[len(prefix):] or None  # fast path: already normal
    try:
        rel = os.path.relpath(p, root)
    except ValueError:
        return None
    if _outside(rel):
        # Maybe the same place through a symlink (e.g. /data -> /mnt/prestofs).
        try:
            rel = os.path.relpath(os.path.realpath(p), os.path.realpath(root))
        except (ValueError, OSError):
            return None
        if _outside(rel):
            return None
    return rel.replace(os.sep, "/")


def relative_paths(mount_root, paths):
    """Yields the order lines for `paths`. An absolute path is made relative
    to the mount root; a relative path that starts with mount_root as given
    (e.g. 'mnt/train/x.jpg' with mount_root 'mnt') is taken relative to the
    current directory; any other relative path is taken as relative to the
    mount root already. Paths not below the root, or with a newline in their
    name (not representable), are left out with a warning once."""
    given = os.fspath(mount_root)
    root = os.path.abspath(given)
    prefix = root.rstrip("/") + "/"
    given_prefix = None if given in ("", os.curdir) or os.path.isabs(given) \
        else given.rstrip("/") + "/"
    for p in paths:
        p = os.fspath(p)
        if isinstance(p, bytes):
            p = os.fsdecode(p)
        if os.path.isabs(p):
            rel = _rel(p, root, prefix)
        elif given_prefix is not None and p.startswith(given_prefix):
            rel = _rel(os.path.abspath(p), root, prefix)
        else:
            rel = os.path.normpath(p).replace(os.sep, "/")
            if _outside(rel):
                rel = None
        if rel is None:
            _warn_once(("outside", root), "prestofs_order: %r is not below the "
                       "mount root %s; left out of the order", p, root)
            continue
        if "\n" in rel:
            _warn_once(("newline", root), "prestofs_order: %r has a newline in "
                       "its name; left out of the order", p)
            continue
        yield rel


def _encode(lines):
    # surrogateescape: a name that is not valid UTF-8 on disk goes back out
    # as the bytes it has on disk.
    return "".join(l + "\n" for l in lines).encode("utf-8", "surrogateescape")


def write_order(mount_root, paths, *, strict=False):
    """Writes `paths` (see relative_paths) as the new epoch order of the
    prestofs mount at `mount_root` (None: found from the first absolute
    path). One open('w'), one write of the whole list, one close.

    Returns the number of paths written, or None when the hint could not be
    written: then a warning is logged (once per mount root and process)
    unless strict=True, where the OSError is raised instead."""
    paths = list(paths)
    if mount_root is None:
        first = next((os.fspath(p) for p in paths if os.path.isabs(os.fspath(p))), None)
        mount_root = find_mount_root(first) if first is not None else None
        if mount_root is None:
            if strict:
                raise OSError(f"no prestofs mount above {first!r}")
            _warn_once(("noroot", first and os.path.dirname(first)),
                       "prestofs_order: no prestofs mount found above %r; "
                       "no order hints", first)
            return None
    lines = list(relative_paths(mount_root, paths))
    data = _encode(lines)
    target = os.path.join(os.fspath(mount_root), CONTROL_DIR, ORDER_NAME)
    try:
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
        try:
            view = memoryview(data)
            while view:
                n = os.write(fd, view)
                view = view[n:]
        finally:
            os.close(fd)
    except OSError as e:
        if strict:
            raise
        _warn_once(("write", os.path.abspath(os.fspath(mount_root))),
                   "prestofs_order: cannot write %s (%s); training goes on "
                   "without order hints", target, e)
        return None
    return len(lines)


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


def _make_ordered_sampler():
    from torch.utils.data import Sampler

    class OrderedSampler(Sampler):
        """Wraps `sampler`; each epoch writes the paths of its indices to
        MOUNT/.prestofs/order before yielding them.

        sampler     any sampler / iterable of indices (RandomSampler,
                    DistributedSampler, SubsetRandomSampler, a BatchSampler)
        dataset     maps an index to a path: dataset.samples[i][0]
                    (ImageFolder, DatasetFolder), dataset.path_of(i), or a
                    torch Subset of one of those
        mount_root  the prestofs mount root; None: found by walking up from
                    the first path (views under .prestofs/views/ work too)
        path_of     optional callable i -> path, overrides the dataset's

        If the hint cannot be written, a warning is logged once and the
        indices are yielded anyway.
        """

        def __init__(self, sampler, dataset, mount_root=None, path_of=None):
            super().__init__(None)
            self.sampler = sampler
            self.dataset = dataset
            self.mount_root = os.fspath(mount_root) if mount_root is not None else None
            self._path_of = _PathGetter(dataset, path_of)
            self.last_written = None  # paths written for the latest epoch, or None

        def __len__(self):
            return len(self.sampler)

        def set_epoch(self, epoch):
            """Forwarded to the wrapped sampler (DistributedSampler)."""
            fn = getattr(self.sampler, "set_epoch", None)
            if fn is not None:
                fn(epoch)

        def _hint(self, indices):
            try:
                paths = [_absolute(self._path_of(i)) for i in _flatten(indices)]
            except Exception as e:  # noqa: BLE001 - hints must never break training
                _warn_once(("paths", id(self)), "prestofs_order: cannot map "
                           "indices to paths (%r); no order hints", e)
                return None
            if not paths:
                return None
            if self.mount_root is None:
                root = find_mount_root(paths[0])
                if root is None:
                    _warn_once(("noroot", os.path.dirname(os.path.abspath(paths[0]))),
                               "prestofs_order: %s is not on a prestofs mount; "
                               "no order hints", paths[0])
                    return None
                self.mount_root = root
            try:
                return write_order(self.mount_root, paths)
            except Exception as e:  # noqa: BLE001 - never fail training
                _warn_once(("unexpected", id(self)), "prestofs_order: order "
                           "hint failed (%r); no order hints", e)
                return None

        def __iter__(self):
            indices = list(iter(self.sampler))
            self.last_written = self._hint(indices)
            return iter(indices)

    OrderedSampler.__module__ = __name__
    OrderedSampler.__qualname__ = "OrderedSampler"
    return OrderedSampler


def __getattr__(name):
    # PEP 562: build OrderedSampler (and import torch) on first use only.
    if name == "OrderedSampler":
        cls = _make_ordered_sampler()
        globals()["OrderedSampler"] = cls
        return cls
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
