"""s3rver and SigV4-proxy fixtures for the S3 integration tests.

  s3rver          session fixture: an S3Rver on 127.0.0.1 (free port) with
                  bucket BUCKET, its data under a session tmp dir; skipped
                  (not failed) when tests/node_modules/.bin/s3rver is missing
                  (run scripts/install-deps).
  sigv4_proxy     factory: sigv4_proxy(secret=SECRET, **kw) -> started
                  SigV4Proxy in front of s3rver; stopped at teardown.
  s3_client(url)  a botocore S3 client for url (path-style, test creds).
  upload_tree(client, root, prefix, dir_markers=())  uploads every file
                  under root as PREFIX + relative path (8 threads), plus
                  "PREFIX + d/" markers for the given dirs.
  make_bucket(client, name, objects)  creates bucket NAME (if missing) and
                  puts {key: bytes} into it (16 threads): a bucket of its
                  own for tests that depend on every key in it.

s3rver checks the access key id (must be S3RVER) but not V4 signatures, so
any SECRET works against it directly; the proxy checks it.
"""
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from helpers import REPO_ROOT  # noqa: E402
from helpers.nginx import free_port, wait_port  # noqa: E402
from sigv4_proxy import SigV4Proxy  # noqa: E402

BUCKET = "pfs-test"
ACCESS_KEY = "S3RVER"
# Contains '/', '+' and '=' like real secrets; must never be logged.
SECRET = "pfsS3cr3t/Xq9+Zk2Lw7Tv4Rn8=Ym"
S3RVER = REPO_ROOT / "tests" / "node_modules" / ".bin" / "s3rver"


class S3Rver:
    def __init__(self, datadir, bucket=BUCKET):
        self.datadir = Path(datadir)
        self.bucket = bucket
        self.port = None
        self.proc = None
        self.log = None

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"

    def start(self):
        self.datadir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        env = dict(os.environ)
        # ListObjectsV2 continuation tokens use DES (see shared README).
        env["NODE_OPTIONS"] = (env.get("NODE_OPTIONS", "") +
                               " --openssl-legacy-provider").strip()
        self.log = open(self.datadir.parent / "s3rver.log", "wb")
        self.proc = subprocess.Popen(
            [str(S3RVER), "-d", str(self.datadir), "-a", "127.0.0.1",
             "-p", str(self.port), "--silent", "--configure-bucket", self.bucket],
            stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.STDOUT,
            env=env, start_new_session=True)
        if not wait_port(self.port, 20, self.proc):
            self.stop()
            raise RuntimeError("s3rver did not start: " +
                               (self.datadir.parent / "s3rver.log").read_text())
        return self

    def stop(self):
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
            self.proc = None
        if self.log:
            self.log.close()
            self.log = None


def s3_client(url, secret=SECRET):
    import botocore.session
    from botocore.config import Config

    session = botocore.session.get_session()
    return session.create_client(
        "s3", endpoint_url=url, region_name="us-east-1",
        aws_access_key_id=ACCESS_KEY, aws_secret_access_key=secret,
        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 3},
                      max_pool_connections=16))


def upload_tree(client, root, prefix, dir_markers=(), bucket=BUCKET):
    root = Path(root)
    items = []
    for dp, _, fns in os.walk(root):
        for n in fns:
            p = Path(dp) / n
            items.append((prefix + p.relative_to(root).as_posix(), p))

    def put(item):
        key, path = item
        client.put_object(Bucket=bucket, Key=key, Body=path.read_bytes())

    with ThreadPoolExecutor(8) as ex:
        list(ex.map(put, items))
    for d in dir_markers:
        client.put_object(Bucket=bucket, Key=prefix + d.rstrip("/") + "/", Body=b"")
    return len(items)


def make_bucket(client, name, objects):
    try:
        client.create_bucket(Bucket=name)
    except client.exceptions.BucketAlreadyOwnedByYou:
        pass

    def put(item):
        client.put_object(Bucket=name, Key=item[0], Body=item[1])

    with ThreadPoolExecutor(16) as ex:
        list(ex.map(put, objects.items()))
    return name


@pytest.fixture(scope="session")
def s3rver(tmp_path_factory):
    if not S3RVER.exists():
        pytest.skip("s3rver not installed (run scripts/install-deps)")
    if shutil.which("node") is None:
        pytest.skip("node not installed")
    srv = S3Rver(tmp_path_factory.mktemp("s3rver") / "data").start()
    yield srv
    srv.stop()


@pytest.fixture
def sigv4_proxy(s3rver):
    proxies = []

    def factory(secret=SECRET, **kw):
        p = SigV4Proxy(s3rver.port, ACCESS_KEY, secret, **kw).start()
        proxies.append(p)
        return p

    yield factory
    for p in proxies:
        p.stop()


__all__ = ["BUCKET", "ACCESS_KEY", "SECRET", "S3Rver", "s3_client", "upload_tree",
           "make_bucket", "s3rver", "sigv4_proxy"]
