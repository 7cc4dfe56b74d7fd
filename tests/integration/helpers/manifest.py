"""prestofs manifest, format 1, written and parsed independently of the C code.

    #prestofs-manifest 1
    PATH<TAB>SIZE<TAB>MTIME<TAB>ETAG        (dirs: PATH ends with '/', SIZE 0)

MTIME is in whole seconds; ETAG is opaque or '-'.
"""
import os
import shutil
from pathlib import Path

MAGIC = "#prestofs-manifest 1"
NAME = "prestofs.manifest"


def walk_entries(root, exclude=(NAME,)):
    """Yields (relpath, is_dir, size, mtime_s) for everything under root,
    sorted, skipping top-level names in exclude."""
    root = Path(root)
    out = []
    for dp, dns, fns in os.walk(root):
        rel_dir = Path(dp).relative_to(root)
        for n in dns:
            st = os.stat(Path(dp) / n)
            out.append(((rel_dir / n).as_posix(), True, 0, int(st.st_mtime)))
        for n in fns:
            if rel_dir == Path(".") and n in exclude:
                continue
            st = os.stat(Path(dp) / n)
            out.append(((rel_dir / n).as_posix(), False, st.st_size, int(st.st_mtime)))
    out.sort()
    return out


def write_manifest(root, dest=None, etag="-"):
    """Writes a manifest of root (to dest, default root/prestofs.manifest).
    Returns its path."""
    root = Path(root)
    dest = Path(dest) if dest else root / NAME
    lines = [MAGIC]
    for rel, is_dir, size, mtime in walk_entries(root):
        lines.append(f"{rel}{'/' if is_dir else ''}\t{size}\t{mtime}\t{etag}")
    dest.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return dest


def served_copy(src, tmp_path, name="served"):
    """A copy of the tree src at tmp_path/name (mtimes kept) with its
    manifest written in: what a test serves when it changes or breaks files
    without touching the session's dataset. Returns the copy's path."""
    dst = Path(tmp_path) / name
    shutil.copytree(src, dst, copy_function=shutil.copy2)
    write_manifest(dst)
    return dst


class ManifestError(ValueError):
    pass


def parse_manifest(text):
    """Parses manifest text strictly. Returns {path: (is_dir, size, mtime, etag)}
    with directory paths stored without the trailing '/'."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if not lines or lines[0].rstrip("\r") != MAGIC:
        raise ManifestError(f"line 1: expected {MAGIC!r}, got {lines[:1]!r}")
    entries = {}
    for no, line in enumerate(lines[1:], start=2):
        line = line[:-1] if line.endswith("\r") else line
        fields = line.split("\t")
        if len(fields) != 4:
            raise ManifestError(f"line {no}: {len(fields)} fields: {line!r}")
        path, size, mtime, etag = fields
        is_dir = path.endswith("/")
        path = path[:-1] if is_dir else path
        if not path or path.startswith("/") or any(
                c in ("", ".", "..") for c in path.split("/")):
            raise ManifestError(f"line {no}: bad path {path!r}")
        if not size.isdigit() or not mtime.lstrip("-").isdigit() or not etag:
            raise ManifestError(f"line {no}: bad size/mtime/etag: {line!r}")
        if is_dir and int(size) != 0:
            raise ManifestError(f"line {no}: directory with size {size}")
        if path in entries:
            raise ManifestError(f"line {no}: duplicate path {path!r}")
        entries[path] = (is_dir, int(size), int(mtime), etag)
    return entries
