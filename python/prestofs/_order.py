"""The order file: mount roots, order lines, stream names, one write.

MOUNT/.prestofs/order takes a new order at each write-open (offset 0). Its
first line may name the stream the order replaces ("#stream NAME", NAME 1 to
48 characters from [A-Za-z0-9._:-]); without it the order replaces the
unnamed stream ("default"). Then paths relative to the mount root, one per
line, UTF-8. The daemon takes lines as they arrive, and tells writers apart
by the thread that writes: one order is written from one thread.
"""
import logging
import os
import re
import sys

log = logging.getLogger("prestofs")

CONTROL_DIR = ".prestofs"
ORDER_NAME = "order"
STREAM_NAME_MAX = 48
_STREAM_RE = re.compile(r"[A-Za-z0-9._:-]{1,%d}" % STREAM_NAME_MAX)

# Warn once per (kind of problem, place) per process: an epoch loop would
# otherwise repeat the same warning every epoch.
_warned = set()


def warn_once(key, msg, *args):
    if key in _warned:
        return
    _warned.add(key)
    log.warning(msg, *args)


# -- stream names ------------------------------------------------------------

def valid_stream_name(name):
    """True if `name` can name a stream: 1 to 48 characters from
    [A-Za-z0-9._:-]."""
    return isinstance(name, str) and _STREAM_RE.fullmatch(name) is not None


def check_stream_name(name):
    if not valid_stream_name(name):
        raise ValueError(f"prestofs: bad stream name {name!r}: 1 to {STREAM_NAME_MAX} "
                         "characters from A-Z a-z 0-9 . _ : -")
    return name


def process_rank():
    """This process's rank: torch.distributed's when a process group is
    initialised (torch is not imported for this: only if the program already
    did), else $RANK (torchrun sets it), else 0."""
    dist = sys.modules.get("torch.distributed")
    if dist is not None:
        try:
            if dist.is_available() and dist.is_initialized():
                return int(dist.get_rank())
        except Exception:  # noqa: BLE001 - a half-torn-down group: fall back
            pass
    try:
        return int(os.environ.get("RANK", "0"))
    except ValueError:
        return 0


def default_stream_name(rank=None):
    """The stream this process writes unless told otherwise:
    "rank{R}-pid{PID}" (R: `rank`, else process_rank()). Unique per process
    on one machine, so two jobs on one mount never replace each other's
    orders, and it says whose stream it is in the stats."""
    r = process_rank() if rank is None else int(rank)
    return f"rank{r}-pid{os.getpid()}"


# -- paths -------------------------------------------------------------------

def find_mount_root(path):
    """The prestofs mount root above `path` (a file or directory; made
    absolute, symlinks not resolved): the nearest directory, `path` itself
    included, that has a `.prestofs` directory reachable by name. A path
    inside the control tree (e.g. a view under MOUNT/.prestofs/views/...)
    gives the mount root, not a directory inside `.prestofs`. Returns None
    when there is none."""
    d = os.path.abspath(os.fspath(path))
    if isinstance(d, bytes):
        d = os.fsdecode(d)
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


def relative_paths(mount, paths):
    """Yields the order lines for `paths`. An absolute path is made relative
    to the mount root; a relative path that starts with `mount` as given
    (e.g. 'mnt/train/x.jpg' with mount 'mnt') is taken relative to the
    current directory; any other relative path is taken as relative to the
    mount root already. Paths not below the root, or with a newline in their
    name (not representable), are left out with a warning once."""
    given = os.fspath(mount)
    if isinstance(given, bytes):
        given = os.fsdecode(given)
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
            warn_once(("outside", root), "prestofs: %r is not below the mount root "
                      "%s; left out of the order", p, root)
            continue
        if "\n" in rel:
            warn_once(("newline", root), "prestofs: %r has a newline in its name; "
                      "left out of the order", p)
            continue
        yield rel


def encode_order(lines, stream):
    """The bytes of one order: "#stream NAME" first unless stream is None,
    then one line per path. An empty order of the unnamed stream is one
    blank line (a truncation alone changes no order). surrogateescape: a
    name that is not valid UTF-8 on disk goes back out as the bytes it has
    on disk."""
    head = f"#stream {stream}\n" if stream is not None else ""
    body = "".join(l + "\n" for l in lines)
    if not head and not body:
        body = "\n"
    return (head + body).encode("utf-8", "surrogateescape")


def write_order(mount, paths, stream=None, *, strict=False):
    """Writes `paths` (see relative_paths) as the new order of one stream of
    the prestofs mount at `mount` (None: found from the first absolute path):
    one open('w'), the whole order written from offset 0, one close.

    stream: the stream this order replaces (created if new): a name of 1 to
    48 characters from [A-Za-z0-9._:-]; None: default_stream_name() (one per
    rank and process, so successive epochs replace this process's stream);
    False: no "#stream" line, the order replaces the daemon's unnamed stream
    ("default"), as a writer without this package does.

    Returns the number of paths written, or None when the hint could not be
    written: then a warning is logged (once per mount and process) unless
    strict=True, where the OSError is raised instead. A bad stream name
    raises ValueError."""
    if stream is None:
        stream = default_stream_name()
    elif stream is False:
        stream = None
    else:
        check_stream_name(stream)
    paths = list(paths)
    if mount is None:
        first = next((os.fspath(p) for p in paths if os.path.isabs(os.fspath(p))), None)
        mount = find_mount_root(first) if first is not None else None
        if mount is None:
            if strict:
                raise OSError(f"prestofs: no prestofs mount above {first!r}")
            warn_once(("noroot", first and os.path.dirname(first)),
                      "prestofs: no prestofs mount found above %r; no order hints", first)
            return None
    lines = list(relative_paths(mount, paths))
    data = encode_order(lines, stream)
    target = os.path.join(os.fspath(mount), CONTROL_DIR, ORDER_NAME)
    try:
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)
    except OSError as e:
        if strict:
            raise
        warn_once(("write", os.path.abspath(os.fspath(mount))),
                  "prestofs: cannot write %s (%s); training goes on without order "
                  "hints", target, e)
        return None
    return len(lines)
