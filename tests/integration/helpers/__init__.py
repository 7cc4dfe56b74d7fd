"""Shared helpers for prestofs integration tests, the demo and the benchmark.

Modules:
  dataset  - seeded dataset generators (test tree, ImageFolder JPEGs, bench files)
  mount    - Mount: run `prestofs -f`, wait until mounted, unmount, check stderr
  nginx    - Nginx: a private nginx on 127.0.0.1 serving a directory
  compare  - byte and tree comparison of a mount against its source
  proxy    - DelayProxy: runs bench/delayproxy.py (delay line / black hole)
  manifest - write and parse prestofs manifests (independent of the C code)

Nothing here imports pytest, so scripts/ and bench/ can use it too.
"""
import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[3]


def prestofs_binary():
    """Path of the binary under test: $PRESTOFS, else build/prestofs (repo-relative)."""
    p = Path(os.environ.get("PRESTOFS", "build/prestofs"))
    if not p.is_absolute():
        cwd_p = Path.cwd() / p
        p = cwd_p if cwd_p.exists() else REPO_ROOT / p
    return p
