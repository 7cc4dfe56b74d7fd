"""Tests of the prestofs Python package.

Run them against the installed package, in a venv that sees Debian's torch
(scripts/test does this):

    /usr/bin/python3 -m venv --system-site-packages build/pyvenv
    build/pyvenv/bin/pip install --no-build-isolation ./python
    PRESTOFS=build/prestofs build/pyvenv/bin/python -m pytest python/tests

(or, without installing: PYTHONPATH=python /usr/bin/python3 -m pytest python/tests).

Pure pieces (stream names, order bytes, samplers) run against a stand-in
mount: a plain directory with a `.prestofs/` subdirectory, whose order file
the test reads back. What needs the daemon mounts for real, with the
fixtures of tests/integration/conftest.py (mount, nginx, prestofs_bin), loaded
from there by path; they need /dev/fuse and build/prestofs (or $PRESTOFS).
"""
import importlib.util
import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
INTEGRATION = REPO / "tests" / "integration"

# The integration helpers (Mount, Nginx, ...) and fixtures, under a module
# name of their own (this file is "conftest" too).
sys.path.insert(0, str(INTEGRATION))
_spec = importlib.util.spec_from_file_location("prestofs_integration_conftest",
                                               INTEGRATION / "conftest.py")
_it = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_it)
prestofs_bin = _it.prestofs_bin
mount = _it.mount
nginx = _it.nginx


@pytest.fixture
def fuse():
    """Skips a test that mounts when FUSE is missing (the pure tests run
    anywhere)."""
    if not os.path.exists("/dev/fuse"):
        pytest.skip("/dev/fuse missing")


@pytest.fixture
def fake_mount(tmp_path):
    """A stand-in mount root: train/cls/{a,b c,ü}.jpg, a view directory
    .prestofs/views/small/cls/v.jpg, and .prestofs/ for the order file."""
    root = tmp_path / "fakemnt"
    (root / ".prestofs" / "views" / "small" / "cls").mkdir(parents=True)
    (root / "train" / "cls").mkdir(parents=True)
    for n in ("a.jpg", "b c.jpg", "ü.jpg"):
        (root / "train" / "cls" / n).write_bytes(b"x")
    (root / ".prestofs" / "views" / "small" / "cls" / "v.jpg").write_bytes(b"x")
    return root


def read_order(root):
    """(stream name or None, [paths]) of the order file under a stand-in
    mount."""
    lines = (Path(root) / ".prestofs" / "order").read_bytes() \
        .decode("utf-8", "surrogateescape").split("\n")
    assert lines[-1] == "", "the order does not end in a newline"
    lines = lines[:-1]
    if lines and lines[0].startswith("#stream "):
        return lines[0][len("#stream "):], lines[1:]
    return None, lines


@pytest.fixture
def order_of():
    return read_order
