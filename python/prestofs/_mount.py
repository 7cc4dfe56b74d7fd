"""The daemon's counters and view directories, read through the mount.

Unlike order hints these are asked for explicitly, so their failures raise.
"""
import json
import os

from ._order import CONTROL_DIR, find_mount_root


def _root(mount):
    root = find_mount_root(mount)
    if root is None:
        raise ValueError(f"prestofs: {os.fspath(mount)!s} is not on a prestofs mount "
                         f"(no {CONTROL_DIR} directory above it)")
    return root


def stats(mount):
    """MOUNT/.prestofs/stats as a dict (`mount`: the mount root or any path
    below it). Groups: "origin", "ram", "epoch", "prefetch", ... and
    "stream": {NAME: {"entries", "position", "unknown", "demand_hits",
    "demand_misses", "stall_seconds", "shortfall", "idle_seconds"}} for each live order
    stream (the unnamed one as "default"). See prestofs(1), FILES. Raises
    ValueError off a prestofs mount, OSError when the file cannot be read."""
    path = os.path.join(_root(mount), CONTROL_DIR, "stats")
    with open(path, "rb") as f:
        return json.loads(f.read().decode("utf-8"))


def stream_stats(mount, name):
    """The counters of order stream `name` (a dict, see stats()), or None
    when the daemon has no such stream (never written, ended after being
    idle, or a daemon without streams)."""
    group = stats(mount).get("stream")
    if not isinstance(group, dict):
        return None
    return group.get(name)


def view_root(mount, spec):
    """MOUNT/.prestofs/views/SPEC: the dataset's tree with every JPEG served
    through view SPEC ("decode", "resize=256", "resize=256,crop=224",
    "fmt=npy"...), e.g. ImageFolder(view_root(mnt, "resize=256") + "/train").
    Raises ValueError when `mount` is not on a prestofs mount or the daemon
    does not take SPEC (a bad spec, or a daemon without views)."""
    root = _root(mount)
    spec = os.fspath(spec)
    if not spec or "/" in spec or spec in (".", ".."):
        raise ValueError(f"prestofs: bad view spec {spec!r}: one path component, "
                         "like 'resize=256,crop=224'")
    path = os.path.join(root, CONTROL_DIR, "views", spec)
    if not os.path.isdir(path):
        raise ValueError(f"prestofs: the mount at {root} has no view {spec!r} "
                         f"({path} is not a directory): check the spec "
                         "(prestofs(1), VIEWS) and the daemon's log")
    return path
