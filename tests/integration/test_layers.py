"""scripts/check-layers: the house has no upward include, and the checker
does catch one (a deliberately upward include in a copy of the tree); fs/
calls no tier's get or put and not the origin's read (blocks/ does), and
the checker catches a call that does."""
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHECK = ROOT / "scripts" / "check-layers"
FOLDERS = ["util", "transform", "catalog", "origin", "cache", "prefetch", "blocks", "fs",
           "tools"]


def run(root):
    return subprocess.run([sys.executable, str(CHECK), str(root)],
                          capture_output=True, text=True, timeout=60)


def copy_tree(tmp_path):
    for f in FOLDERS:
        shutil.copytree(ROOT / f, tmp_path / f,
                        ignore=shutil.ignore_patterns("*.o", "*.a", "build*"))
    return tmp_path


def test_tree_is_layered():
    r = run(ROOT)
    assert r.returncode == 0, r.stdout + r.stderr


def test_upward_include_fails(tmp_path):
    tree = copy_tree(tmp_path)
    p = tree / "cache" / "bcache.c"
    p.write_text('#include "../fs/fs.h"\n' + p.read_text())
    r = run(tree)
    assert r.returncode == 1
    assert "cache/bcache.c:1: cache/ (layer 2) includes fs/ (layer 5)" in r.stdout


def test_same_layer_cycle_fails(tmp_path):
    tree = copy_tree(tmp_path)
    a, b = tree / "cache" / "epoch.c", tree / "origin" / "retry.c"
    a.write_text('#include "../origin/retry.h"\n' + a.read_text())
    b.write_text('#include "../cache/epoch.h"\n' + b.read_text())
    r = run(tree)
    assert r.returncode == 1
    assert "cache/ and origin/ include each other" in r.stdout


def test_include_outside_layers_fails(tmp_path):
    tree = copy_tree(tmp_path)
    p = tree / "util" / "log.c"
    p.write_text('#include "../tests/unit/x.h"\n' + p.read_text())
    r = run(tree)
    assert r.returncode == 1 and "outside the layers" in r.stdout


@pytest.mark.parametrize("call", ["pfs_ssd_get(s, p, 0, 0, b, 1, e)",
                                  "pfs_shared_put (s, k, v, d, 1, 0, 0, 0)",
                                  "pfs_origin_read_req(o, p, 1, 0, 1, b, e, 0)"])
def test_tier_call_in_fs_fails(tmp_path, call):
    tree = copy_tree(tmp_path)
    p = tree / "fs" / "warm.c"
    p.write_text(p.read_text() + "static void x(void) { " + call + "; }\n")
    r = run(tree)
    name = call.split("(")[0].strip()
    assert r.returncode == 1 and f"calls {name}: the data path" in r.stdout, r.stdout
    # A comment that names one is no call.
    p.write_text(p.read_text().replace("static void x(void) { " + call + "; }",
                                       "/* " + call + " */"))
    assert run(tree).returncode == 0
