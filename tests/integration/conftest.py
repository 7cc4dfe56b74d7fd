"""pytest fixtures for prestofs integration tests.

Run:  /usr/bin/python3 -m pytest tests/integration          (PRESTOFS=path to override
      the binary; default build/prestofs from the repo root)

Fixtures (all usable from any test module in this directory, e.g. test_s3.py):

  prestofs_bin   Path of the binary under test ($PRESTOFS or build/prestofs).
  mount          Factory: mount(origin, options=None, *, name="mnt",
                 allow_errors=(), **Mount kwargs) -> a started helpers.mount.Mount.
                 `options` is a dict ({"timeout": 1, "s3_path_style": True}), a
                 list of "k=v" strings or one "a=1,b=2" string. The mountpoint is
                 tmp_path/name. Teardown unmounts every mount (fusermount3 -u),
                 waits for each daemon, and FAILS the test if a daemon exited
                 non-zero/by a signal or printed ERROR-level lines not matched
                 by allow_errors (a list of regexes; also m.allow_errors(...)).
                 m.stats() returns MOUNT/.prestofs/stats parsed.
  dataset        Session-wide generated test tree (helpers.dataset.make_tree):
                 read-only by convention. Its file list: helpers.compare.list_files.
  dataset_copy   A private copy of that tree (copy2: same mtimes) to mutate.
  nginx          Factory: nginx(root, autoindex=True, **kw) -> started
                 helpers.nginx.Nginx on 127.0.0.1 (free port); stopped at teardown.
  delay_proxy    Factory: delay_proxy(upstream_port, delay_ms) -> started
                 helpers.proxy.DelayProxy; stopped at teardown.
  run_bounded    run_bounded(fn, timeout, mnt=None) -> (result | exception, seconds):
                 runs fn in a thread; if it is still blocked after timeout, aborts
                 mnt's FUSE connection (so the thread returns) and fails the test.

Every test here needs /dev/fuse; they are skipped only when it is missing.

Parallel runs: scripts/test runs `-n 2 --dist loadscope -m "not serial"`
(pytest-xdist: each module on one worker), then `-m serial` alone. So a test
must not depend on anything outside its tmp_path: free ports
(helpers.nginx.free_port, per worker), tmp_path mountpoints, no fixed /tmp
names. Mark a module or test `serial` (pytestmark = pytest.mark.serial) when
it measures the machine (resident memory, throughput, prefetch keeping pace)
and another test's load beside it would change the verdict.
"""
import os
import shutil
import sys
import threading
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from helpers import prestofs_binary  # noqa: E402
from helpers.dataset import make_tree  # noqa: E402
from helpers.mount import Mount, MountError, abort_connection  # noqa: E402
from helpers.memcached import Memcached  # noqa: E402
from helpers.nginx import Nginx  # noqa: E402
from helpers.proxy import DelayProxy  # noqa: E402


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "serial: measures the machine; scripts/test runs it alone, "
        "after the parallel (pytest-xdist) pass")


@pytest.fixture(autouse=True, scope="session")
def _require_fuse():
    if not os.path.exists("/dev/fuse"):
        pytest.skip("/dev/fuse missing: FUSE integration tests skipped")
    if shutil.which("fusermount3") is None:
        pytest.fail("fusermount3 not on PATH (install fuse3)")


@pytest.fixture(scope="session")
def prestofs_bin():
    p = prestofs_binary()
    if not p.exists():
        pytest.fail(f"prestofs binary not found at {p}: build it "
                    "(meson setup build && ninja -C build) or set PRESTOFS")
    return p


@pytest.fixture
def mount(tmp_path, prestofs_bin):
    mounts = []

    def factory(origin, options=None, *, name="mnt", allow_errors=(), **kw):
        m = Mount(origin, tmp_path / name, options, binary=prestofs_bin,
                  allow_errors=allow_errors, **kw)
        mounts.append(m)
        m.start()
        return m

    yield factory
    problems = []
    for m in reversed(mounts):
        for p in m.stop():
            problems.append(f"[{m.path.name}] {p}\n--- daemon output ---\n"
                            f"{m.stderr_text(8000)}")
    if problems:
        pytest.fail("\n".join(problems), pytrace=False)


@pytest.fixture(scope="session")
def dataset(tmp_path_factory):
    root = tmp_path_factory.mktemp("dataset") / "tree"
    make_tree(root)
    return root


@pytest.fixture
def dataset_copy(dataset, tmp_path):
    dst = tmp_path / "tree"
    shutil.copytree(dataset, dst, copy_function=shutil.copy2)
    return dst


@pytest.fixture
def nginx(tmp_path):
    servers = []

    def factory(root, autoindex=True, **kw):
        ng = Nginx(root, tmp_path / f"nginx{len(servers)}", autoindex=autoindex, **kw)
        servers.append(ng)
        return ng.start()

    yield factory
    for ng in servers:
        ng.stop()


@pytest.fixture
def memcached():
    """memcached(memory_mb=64, item_max="2m", no_evict=False): a started
    server (helpers/memcached.py), killed after the test."""
    servers = []

    def factory(**kw):
        mc = Memcached(**kw)
        servers.append(mc)
        return mc.start()

    yield factory
    for mc in servers:
        mc.stop()


@pytest.fixture
def delay_proxy():
    proxies = []

    def factory(upstream_port, delay_ms=10.0):
        p = DelayProxy(upstream_port, delay_ms)
        proxies.append(p)
        return p.start()

    yield factory
    for p in proxies:
        p.stop()


@pytest.fixture
def run_bounded():
    def run(fn, timeout, mnt=None):
        box = {}

        def target():
            try:
                box["result"] = fn()
            except BaseException as e:  # noqa: BLE001 - returned to the test
                box["result"] = e

        t0 = time.monotonic()
        th = threading.Thread(target=target, daemon=True)
        th.start()
        th.join(timeout)
        elapsed = time.monotonic() - t0
        if th.is_alive():
            if mnt is not None:
                abort_connection(mnt)
                th.join(10)
            pytest.fail(f"operation still blocked after {timeout:.1f}s (hang)")
        return box["result"], elapsed

    return run


__all__ = ["Mount", "MountError"]
