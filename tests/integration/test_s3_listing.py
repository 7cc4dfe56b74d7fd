"""S3 listings are complete whatever the server puts in CommonPrefixes.

s3rver (like some other S3-compatible servers) leaves a "directory" that
holds only subdirectories out of a delimited listing's CommonPrefixes, so a
bucket whose keys all sit under one directory once mounted empty. Each
layout here has a bucket of its own, so "every path" means every key: the
set of paths in the mount must equal the set uploaded, and the sha256 of
every file read through the mount must equal the uploaded bytes'.

Run: /usr/bin/python3 -m pytest tests/integration/test_s3_listing.py
Needs s3rver (scripts/install-deps) and python3-botocore.
"""
import hashlib
import os
import random
import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from helpers.compare import read_all  # noqa: E402
from helpers.mount import MountError  # noqa: E402
from s3_fixtures import (ACCESS_KEY, SECRET, make_bucket, s3_client,  # noqa: E402,F401
                         s3rver, sigv4_proxy)

N_BIG = 1200  # keys in one directory: more than one 1000-key page


def _objects(keys, seed, max_size=300):
    rng = random.Random(seed)
    return {k: rng.randbytes(rng.randrange(0, max_size)) for k in keys}


def _layouts():
    return {
        # The usual dataset layout: every key under one top directory.
        "pfs-imagenet": _objects(
            [f"imagenet/train/c{c:02d}/x{i:03d}.JPEG"
             for c in range(16) for i in range(12)], 1, max_size=2000),
        # Files at the root, at depth 1 and at depth 4.
        "pfs-depths": _objects(
            ["root.bin", "zero.bin", "d1/a.bin", "d1/b.bin", "p/q/mid.bin",
             "p/q/r/s/deep.bin", "p/q/r/s/deep2.bin", "w/x/y/z/only.bin"], 2),
        # One deep chain of directories, files only at the bottom.
        "pfs-chain": _objects([f"a/b/c/d/e/f/f{i}.bin" for i in range(8)], 3),
        # Pagination inside one directory; tiny files keep it fast.
        "pfs-big": _objects([f"big/one/f{i:05d}.bin" for i in range(N_BIG)], 4,
                            max_size=16),
        "pfs-nothing": {},
    }


@pytest.fixture(scope="module")
def buckets(s3rver):
    client = s3_client(s3rver.url)
    layouts = _layouts()
    for name, objects in layouts.items():
        make_bucket(client, name, objects)
    return layouts


def _env(tmp_path, **extra):
    """Our test credentials only, none from the host."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(HOME=str(tmp_path), AWS_ACCESS_KEY_ID=ACCESS_KEY,
               AWS_SECRET_ACCESS_KEY=SECRET)
    env.update(extra)
    return env


def _mount(mount, endpoint, tmp_path, bucket, prefix="", env=None, **opts):
    options = {"endpoint": endpoint, "s3_path_style": True, "timeout": 5,
               "retries": 1}
    options.update(opts)
    return mount(f"s3://{bucket}/{prefix}", options,
                 env=_env(tmp_path, **(env or {})))


def _walk(mnt):
    """(files, dirs): relative paths under mnt, the control tree left out."""
    files, dirs = set(), set()
    for dp, dns, fns in os.walk(mnt):
        rel = Path(dp).relative_to(mnt)
        if rel == Path("."):
            dns[:] = [d for d in dns if d != ".prestofs"]
        dirs.update((rel / d).as_posix() for d in dns)
        files.update((rel / f).as_posix() for f in fns)
    return files, dirs


def _check(mnt, objects, prefix=""):
    """Same paths as uploaded under prefix, same bytes (sha256) in each."""
    want = {k[len(prefix):]: v for k, v in objects.items() if k.startswith(prefix)}
    assert want, "the test needs keys under the prefix"
    files, dirs = _walk(mnt)
    missing, extra = sorted(set(want) - files), sorted(files - set(want))
    assert not missing and not extra, \
        f"{len(missing)} missing {missing[:5]}, {len(extra)} extra {extra[:5]}"
    parents = {p for f in want for p in
               ("/".join(f.split("/")[:i]) for i in range(1, f.count("/") + 1))}
    assert dirs == parents
    for path, data in want.items():
        got = hashlib.sha256(read_all(mnt / path)).hexdigest()
        assert got == hashlib.sha256(data).hexdigest(), path


@pytest.mark.parametrize("prefix", ["", "imagenet/"])
def test_one_directory(mount, s3rver, buckets, tmp_path, prefix):
    """All keys under imagenet/, which s3rver leaves out of CommonPrefixes:
    once mounted empty ("1 entries, 0 bytes") at the bucket root."""
    m = _mount(mount, s3rver.url, tmp_path, "pfs-imagenet", prefix)
    _check(m.path, buckets["pfs-imagenet"], prefix)


def test_one_directory_parallel(mount, sigv4_proxy, buckets, tmp_path):
    """Small pages force the parallel path: the range bounds come from the
    class directories three levels down, found though s3rver reports
    neither imagenet/ nor imagenet/train/; no key is listed twice."""
    proxy = sigv4_proxy()
    m = _mount(mount, proxy.url, tmp_path, "pfs-imagenet",
               env={"PRESTOFS_S3_MAX_KEYS": "25"})
    _check(m.path, buckets["pfs-imagenet"])
    listed = [t for t in proxy.targets if "list-type=2" in t]
    delimited = [t for t in listed if "delimiter=" in t]
    assert 1 <= len(delimited) <= 4, delimited
    ranges = {re.search(r"start-after=([^&]*)", t).group(1) for t in listed
              if "start-after=" in t and "delimiter=" not in t}
    assert sum("imagenet%2Ftrain%2Fc" in r and r.endswith("%2F") for r in ranges) \
        >= 4, sorted(ranges)
    assert "listed twice" not in m.stderr_text(10**7)
    assert proxy.rejected == 0, proxy.reasons


def test_several_depths(mount, s3rver, buckets, tmp_path):
    m = _mount(mount, s3rver.url, tmp_path, "pfs-depths")
    _check(m.path, buckets["pfs-depths"])


@pytest.mark.parametrize("max_keys", [None, "3"])
def test_single_deep_directory(mount, s3rver, buckets, tmp_path, max_keys):
    """a/b/c/d/e/f with files only at the bottom; with 3-key pages the hint
    search runs out of levels and lists the rest as one range."""
    env = {"PRESTOFS_S3_MAX_KEYS": max_keys} if max_keys else {}
    m = _mount(mount, s3rver.url, tmp_path, "pfs-chain", env=env)
    _check(m.path, buckets["pfs-chain"])


def test_pagination_one_directory(mount, s3rver, buckets, tmp_path):
    """More than one 1000-key page, every key in one directory."""
    m = _mount(mount, s3rver.url, tmp_path, "pfs-big", prefetch="off")
    _check(m.path, buckets["pfs-big"])


@pytest.mark.parametrize("bucket,prefix,named", [
    ("pfs-imagenet", "nope/", "under the prefix 'nope/'"),
    # A string prefix of keys, but not a directory.
    ("pfs-imagenet", "imagenet/tra", "under the prefix 'imagenet/tra/'"),
    ("pfs-nothing", "", "in the bucket"),
])
def test_nothing_under_prefix_fails(mount, s3rver, buckets, tmp_path, bucket,
                                    prefix, named):
    with pytest.raises(MountError) as ei:
        _mount(mount, s3rver.url, tmp_path, bucket, prefix)
    msg = str(ei.value)
    assert re.search(r"exited with [1-9]", msg), msg
    assert f"s3://{bucket}/{prefix}" in msg, msg
    assert "no objects " + named in msg and "allow_empty" in msg, msg


@pytest.mark.parametrize("bucket,prefix", [("pfs-imagenet", "nope/"),
                                           ("pfs-nothing", "")])
def test_nothing_under_prefix_allow_empty(mount, s3rver, buckets, tmp_path,
                                          bucket, prefix):
    m = _mount(mount, s3rver.url, tmp_path, bucket, prefix, allow_empty=True)
    assert _walk(m.path) == (set(), set())
    assert "mounted empty" in m.stderr_text()


class _CyclingS3(object):
    """A ListObjectsV2 server whose continuation tokens go round in
    circles: `keys` mode, T1 -> keys e, f then T2 -> keys c, d then T1 again
    (the keys move backwards); `empty` mode, T1 and T2 name each other on
    pages without a key. The first page (a, b) and a range page after b
    are sane; delimited pages give no hints."""

    def __init__(self, mode):
        from helpers import httpbase
        self.mode = mode
        self.pages = 0
        outer = self

        class H(httpbase.Handler):
            server_version = "cycling-s3"

        class S(httpbase.Service):
            handler_class = H

            def _serve(self, h, method):
                outer.serve(h, method)
        self.svc = S()
        self.httpbase = httpbase

    def page(self, keys, token):
        items = "".join(f"<Contents><Key>{k}</Key><Size>1</Size><ETag>\"e{k}\"</ETag>"
                        "<LastModified>2024-01-01T00:00:00.000Z</LastModified></Contents>"
                        for k in keys)
        trunc = "true" if token else "false"
        nxt = f"<NextContinuationToken>{token}</NextContinuationToken>" if token else ""
        return (f'<?xml version="1.0"?><ListBucketResult><Name>b</Name>'
                f"<IsTruncated>{trunc}</IsTruncated>{nxt}{items}</ListBucketResult>").encode()

    def serve(self, h, method):
        from urllib.parse import parse_qs
        path, _, query = h.path.partition("?")
        if path.rstrip("/") != "/b":
            return self.httpbase.send_not_found(h, method)  # no manifest
        q = parse_qs(query)
        self.pages += 1
        tok = q.get("continuation-token", [""])[0]
        if "delimiter" in q:
            body = self.page([], None)
        elif tok == "T1":
            body = self.page([] if self.mode == "empty" else ["e", "f"], "T2")
        elif tok == "T2":
            body = self.page([] if self.mode == "empty" else ["c", "d"], "T1")
        elif "start-after" in q:
            body = self.page(["c", "d"], "T1")
        else:
            body = self.page(["a", "b"], "T0")
        self.httpbase.send(h, 200, [("Content-Type", "application/xml")], body, method)


@pytest.mark.parametrize("mode", ["keys", "empty"])
def test_continuation_token_cycle_fails_the_mount(tmp_path, prestofs_bin, mode):
    """Two continuation tokens that name each other: the listing stops with
    a message, the mount fails; it never loops (before: forever)."""
    import subprocess
    import time
    srv = _CyclingS3(mode)
    srv.svc.start()
    (tmp_path / "mnt").mkdir()
    try:
        t0 = time.monotonic()
        r = subprocess.run([str(prestofs_bin), "-f", "s3://b", str(tmp_path / "mnt"), "-o",
                            f"endpoint=http://127.0.0.1:{srv.svc.port},s3_path_style,"
                            "timeout=2,retries=0"],
                           env=_env(tmp_path), capture_output=True, text=True, timeout=30)
        took = time.monotonic() - t0
    except subprocess.TimeoutExpired:
        pytest.fail(f"still listing after 30 s ({srv.pages} pages)")
    finally:
        srv.svc.stop()
    assert r.returncode != 0, r.stderr
    assert "round in circles" in r.stderr, r.stderr
    assert took < 20, took
    assert srv.pages < 200, srv.pages
