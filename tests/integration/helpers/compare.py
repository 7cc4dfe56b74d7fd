"""Compare a mount against its source directory.

compare_bytes(src, mnt)  - every file read fully, plus random ranges via
                           os.pread (biased to block boundaries and EOF);
                           returns the number of bytes checked.
compare_tree(src, mnt)   - names, types, sizes and mtimes of every entry.
drop_page_cache(path)    - the next read of a file reaches the daemon.

Both raise AssertionError with the first differences found. Reads use
os.open/os.read (no Python buffering, no isatty ioctl) so the FUSE requests
seen by the daemon are exactly the ones the test makes.
"""
import hashlib
import os
import random
import stat
from pathlib import Path

from .manifest import NAME as MANIFEST_NAME

MiB = 1 << 20


def read_all(path, chunk=1 << 20):
    fd = os.open(path, os.O_RDONLY)
    try:
        parts = []
        while True:
            b = os.read(fd, chunk)
            if not b:
                break
            parts.append(b)
        return b"".join(parts)
    finally:
        os.close(fd)


def drop_page_cache(path_or_fd):
    """Drops the kernel's cached pages of one file of the mount (a path, or a
    descriptor open on it), so that the next read reaches the daemon
    (re-reads are otherwise served by the page cache and never seen)."""
    if isinstance(path_or_fd, int):
        os.posix_fadvise(path_or_fd, 0, 0, os.POSIX_FADV_DONTNEED)
        return
    fd = os.open(path_or_fd, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def list_files(root, exclude_top=(MANIFEST_NAME,)):
    """Sorted relative paths of the regular files under root."""
    root = Path(root)
    out = []
    for dp, _, fns in os.walk(root):
        rel = Path(dp).relative_to(root)
        for n in fns:
            if rel == Path(".") and n in exclude_top:
                continue
            out.append((rel / n).as_posix())
    return sorted(out)


def _describe_diff(a, b):
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return f"first difference at byte {i} (len {len(a)} vs {len(b)})"
    return f"lengths differ: {len(a)} vs {len(b)}"


def interesting_ranges(size, rng, n, block_size=MiB):
    """n (offset, length) pairs: block boundaries ± a few bytes, ranges that
    straddle blocks and EOF, ranges past EOF, and uniform random ones."""
    out = []
    bounds = [k * block_size for k in range(1, size // block_size + 1)]
    for b in bounds[:4]:
        out += [(b - 1, 2), (b - 4096, 8192), (b, 1), (max(b - 100, 0), 200 + block_size)]
    out += [(max(size - 10, 0), 100), (size, 10), (size + 4096, 10), (0, size + 1)]
    while len(out) < n + 12:
        off = rng.randrange(0, size + 1) if size else 0
        ln = rng.choice([1, 7, 4096, 65536, 131072 + 3, block_size + 17,
                         rng.randrange(1, 3 * block_size)])
        out.append((off, ln))
    return out


def compare_bytes(src, mnt, ranges_per_file=8, seed=0, files=None, block_size=MiB):
    """Checks every file (or the given relative paths) byte for byte: a full
    read, then pread ranges. Returns the total bytes compared."""
    src, mnt = Path(src), Path(mnt)
    rng = random.Random(seed)
    files = files if files is not None else list_files(src)
    assert files, f"no files under {src}"
    total = 0
    errors = []
    for rel in files:
        want = (src / rel).read_bytes()
        got = read_all(mnt / rel)
        total += len(got)
        if got != want:
            errors.append(f"{rel}: full read: {_describe_diff(got, want)}")
            continue
        fd = os.open(mnt / rel, os.O_RDONLY)
        try:
            for off, ln in interesting_ranges(len(want), rng, ranges_per_file, block_size):
                off = max(off, 0)
                got = os.pread(fd, ln, off)
                exp = want[off:off + ln]
                total += len(got)
                if got != exp:
                    errors.append(f"{rel}: pread(len={ln}, off={off}): "
                                  f"{_describe_diff(got, exp)}")
                    break
        finally:
            os.close(fd)
        if len(errors) >= 10:
            break
    assert not errors, "byte mismatches:\n  " + "\n  ".join(errors)
    return total


def sha256_tree(root, files=None):
    root = Path(root)
    files = files if files is not None else list_files(root)
    return {rel: hashlib.sha256(read_all(root / rel)).hexdigest() for rel in files}


def _snapshot(root, exclude_top):
    root = Path(root)
    out = {}
    for dp, dns, fns in os.walk(root):
        rel = Path(dp).relative_to(root)
        for n in dns + fns:
            if rel == Path(".") and n in exclude_top:
                continue
            st = os.lstat(Path(dp) / n)
            out[(rel / n).as_posix()] = st
    return out


def compare_tree(src, mnt, mtime="ns", exclude_top=(MANIFEST_NAME,), dir_mtimes=True):
    """Same names, types, file sizes and mtimes under src and mnt.

    mtime: "ns" exact, "s" whole seconds (manifest, HTTP Last-Modified),
           "min" within 60 s (autoindex HTML shows minutes), None: not checked.
    """
    a = _snapshot(src, exclude_top)
    b = _snapshot(mnt, ())
    errors = []
    missing = sorted(set(a) - set(b))
    extra = sorted(set(b) - set(a))
    if missing:
        errors.append(f"missing in mount: {missing[:20]}")
    if extra:
        errors.append(f"extra in mount: {extra[:20]}")
    inodes = {}
    for rel in sorted(set(a) & set(b)):
        sa, sb = a[rel], b[rel]
        ta, tb = stat.S_IFMT(sa.st_mode), stat.S_IFMT(sb.st_mode)
        if ta != tb:
            errors.append(f"{rel}: type {oct(ta)} vs {oct(tb)}")
            continue
        if stat.S_ISREG(sa.st_mode):
            if sa.st_size != sb.st_size:
                errors.append(f"{rel}: size {sb.st_size}, want {sa.st_size}")
            if sb.st_size > 0 and sb.st_blocks * 512 < sb.st_size:
                # cp/tar treat st_blocks*512 < st_size as sparse.
                errors.append(f"{rel}: st_blocks {sb.st_blocks} too small for "
                              f"size {sb.st_size}")
        if sb.st_ino in inodes:
            errors.append(f"{rel}: st_ino {sb.st_ino} also used by {inodes[sb.st_ino]}")
        inodes[sb.st_ino] = rel
        if mtime and (dir_mtimes or not stat.S_ISDIR(sa.st_mode)):
            if mtime == "ns":
                ok = sa.st_mtime_ns == sb.st_mtime_ns
            elif mtime == "s":
                ok = sa.st_mtime_ns // 10**9 == sb.st_mtime_ns // 10**9
            else:
                ok = abs(sa.st_mtime_ns // 10**9 - sb.st_mtime_ns // 10**9) < 60
            if not ok:
                errors.append(f"{rel}: mtime_ns {sb.st_mtime_ns}, want "
                              f"{sa.st_mtime_ns} ({mtime})")
        if len(errors) > 20:
            break
    assert not errors, "tree differs:\n  " + "\n  ".join(errors)
    return len(a)
