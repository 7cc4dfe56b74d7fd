"""The standard-library part: import cost, stream names, the order file's
bytes, mount roots, stats and views off a real mount (stand-in roots)."""
import json
import logging
import os
import subprocess
import sys

import pytest

import prestofs
from prestofs import _order


def test_import_needs_no_torch():
    code = ("import sys, prestofs; assert 'torch' not in sys.modules, 'torch imported'; "
            "prestofs.write_order; prestofs.stats; prestofs.view_root; "
            "assert 'torch' not in sys.modules; print(prestofs.__version__)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == prestofs.__version__


# -- stream names --------------------------------------------------------------

def test_default_stream_name_from_rank(monkeypatch):
    monkeypatch.delenv("RANK", raising=False)
    pid = os.getpid()
    if "torch.distributed" in sys.modules:
        assert not sys.modules["torch.distributed"].is_initialized()
    assert prestofs.default_stream_name() == f"rank0-pid{pid}"
    monkeypatch.setenv("RANK", "3")
    assert prestofs.default_stream_name() == f"rank3-pid{pid}"
    monkeypatch.setenv("RANK", "not a number")
    assert prestofs.default_stream_name() == f"rank0-pid{pid}"
    assert prestofs.default_stream_name(rank=7) == f"rank7-pid{pid}"
    assert prestofs.valid_stream_name(prestofs.default_stream_name(rank=2**31))


def test_default_stream_name_differs_per_process():
    code = "import prestofs; print(prestofs.default_stream_name())"
    env = dict(os.environ, RANK="1")
    names = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env=env, timeout=60, check=True).stdout.strip()
             for _ in range(2)}
    assert len(names) == 2 and all(n.startswith("rank1-pid") for n in names), names


@pytest.mark.parametrize("name,ok", [
    ("a", True), ("rank0-pid1", True), ("job:7.rank_3-x", True), ("x" * 48, True),
    ("", False), ("x" * 49, False), ("has space", False), ("slash/no", False),
    ("ü", False), ("new\nline", False), ("#stream", False), (None, False), (3, False),
])
def test_stream_name_rule(name, ok):
    assert prestofs.valid_stream_name(name) is ok


def test_bad_stream_name_raises(fake_mount):
    with pytest.raises(ValueError, match="stream name"):
        prestofs.write_order(fake_mount, ["train/cls/a.jpg"], stream="no spaces")
    assert not (fake_mount / ".prestofs" / "order").exists()


# -- the order file's bytes ------------------------------------------------------

def test_write_order_bytes(fake_mount, monkeypatch):
    monkeypatch.setenv("RANK", "2")
    root = fake_mount
    n = prestofs.write_order(root, ["train/cls/a.jpg", "train/cls/ü.jpg"])
    assert n == 2
    want = f"#stream rank2-pid{os.getpid()}\ntrain/cls/a.jpg\ntrain/cls/ü.jpg\n"
    assert (root / ".prestofs" / "order").read_bytes() == want.encode("utf-8")
    # A named stream; a new write replaces the whole file (offset 0, O_TRUNC).
    assert prestofs.write_order(root, ["train/cls/b c.jpg"], stream="val") == 1
    assert (root / ".prestofs" / "order").read_bytes() == b"#stream val\ntrain/cls/b c.jpg\n"
    # No stream line: the unnamed stream; empty, it is one blank line.
    assert prestofs.write_order(root, ["train/cls/a.jpg"], stream=False) == 1
    assert (root / ".prestofs" / "order").read_bytes() == b"train/cls/a.jpg\n"
    assert prestofs.write_order(root, [], stream=False) == 0
    assert (root / ".prestofs" / "order").read_bytes() == b"\n"
    # An empty order still names its stream (it empties that stream).
    assert prestofs.write_order(root, [], stream="val") == 0
    assert (root / ".prestofs" / "order").read_bytes() == b"#stream val\n"


def test_write_order_non_utf8_name(fake_mount):
    raw = os.fsdecode(b"train/cls/\xff\xfe.jpg")
    assert prestofs.write_order(fake_mount, [raw, b"train/cls/a.jpg"], stream="s") == 2
    assert (fake_mount / ".prestofs" / "order").read_bytes() == \
        b"#stream s\ntrain/cls/\xff\xfe.jpg\ntrain/cls/a.jpg\n"


def test_find_root_and_relative_paths(fake_mount, tmp_path, monkeypatch, order_of):
    root = fake_mount
    assert prestofs.find_mount_root(root / "train" / "cls" / "a.jpg") == str(root)
    assert prestofs.find_mount_root(root / "train") == str(root)
    assert prestofs.find_mount_root(root) == str(root)
    view = root / ".prestofs" / "views" / "small" / "cls" / "v.jpg"
    assert prestofs.find_mount_root(view) == str(root)
    assert prestofs.find_mount_root(root / ".prestofs") == str(root)
    assert prestofs.find_mount_root(tmp_path / "elsewhere" / "x") is None
    paths = [root / "train" / "cls" / "b c.jpg", str(view), "train/cls/ü.jpg",
             str(root) + "/train/./cls/../cls/a.jpg"]
    assert prestofs.write_order(None, paths, stream="s1") == 4
    assert order_of(root) == ("s1", ["train/cls/b c.jpg", ".prestofs/views/small/cls/v.jpg",
                                     "train/cls/ü.jpg", "train/cls/a.jpg"])
    # Relative to the current directory, with a relative mount root.
    monkeypatch.chdir(tmp_path)
    assert prestofs.write_order("fakemnt", ["fakemnt/train/cls/a.jpg"], stream="s1") == 1
    assert order_of(root) == ("s1", ["train/cls/a.jpg"])
    # Through a symlink to the mount.
    (tmp_path / "link").symlink_to(root)
    assert prestofs.write_order(root, [str(tmp_path / "link" / "train" / "cls" / "a.jpg")],
                                stream="s1") == 1
    assert order_of(root) == ("s1", ["train/cls/a.jpg"])


def test_paths_outside_and_newlines_left_out_warned_once(fake_mount, tmp_path, caplog):
    _order._warned.clear()
    with caplog.at_level(logging.WARNING, logger="prestofs"):
        for _ in range(3):
            n = prestofs.write_order(fake_mount, [
                "train/cls/a.jpg", str(tmp_path / "other.jpg"), "../escape.jpg",
                "train/new\nline.jpg", "train/cls/ü.jpg"], stream="s")
            assert n == 2
    msgs = [r.getMessage() for r in caplog.records if r.name == "prestofs"]
    assert len(msgs) == 2, msgs      # one "not below", one "newline"
    assert (fake_mount / ".prestofs" / "order").read_text("utf-8") == \
        "#stream s\ntrain/cls/a.jpg\ntrain/cls/ü.jpg\n"


def test_write_failure_is_a_warning(tmp_path, fake_mount, caplog):
    _order._warned.clear()
    (fake_mount / ".prestofs" / "order").mkdir()     # open('w') -> EISDIR
    with caplog.at_level(logging.WARNING, logger="prestofs"):
        assert prestofs.write_order(fake_mount, ["train/cls/a.jpg"]) is None
        assert prestofs.write_order(fake_mount, ["train/cls/a.jpg"]) is None
        plain = tmp_path / "plain"
        plain.mkdir()
        assert prestofs.write_order(None, [str(plain / "x.jpg")]) is None
    msgs = [r.getMessage() for r in caplog.records if r.name == "prestofs"]
    assert len(msgs) == 2, msgs
    with pytest.raises(OSError):
        prestofs.write_order(fake_mount, ["train/cls/a.jpg"], strict=True)
    with pytest.raises(OSError):
        prestofs.write_order(None, [str(plain / "x.jpg")], strict=True)


# -- stats and views on a stand-in -----------------------------------------------

def test_stats_and_stream_stats_parse(fake_mount):
    doc = {"epoch": {"number": 2, "demand_hits": 5, "demand_misses": 1},
           "stream": {"rank0-pid9": {"entries": 10, "position": 4, "unknown": 0,
                                     "demand_hits": 4, "demand_misses": 0,
                                     "stall_seconds": 0.0, "idle_seconds": 0.1}}}
    (fake_mount / ".prestofs" / "stats").write_text(json.dumps(doc))
    assert prestofs.stats(fake_mount) == doc
    assert prestofs.stats(fake_mount / "train" / "cls") == doc   # any path below
    assert prestofs.stream_stats(fake_mount, "rank0-pid9")["entries"] == 10
    assert prestofs.stream_stats(fake_mount, "rank1-pid9") is None
    del doc["stream"]
    (fake_mount / ".prestofs" / "stats").write_text(json.dumps(doc))
    assert prestofs.stream_stats(fake_mount, "rank0-pid9") is None


def test_not_a_mount(tmp_path):
    with pytest.raises(ValueError, match="not on a prestofs mount"):
        prestofs.stats(tmp_path)
    with pytest.raises(ValueError, match="not on a prestofs mount"):
        prestofs.view_root(tmp_path, "decode")


def test_view_root_stand_in(fake_mount):
    assert prestofs.view_root(fake_mount, "small") == \
        str(fake_mount / ".prestofs" / "views" / "small")
    assert prestofs.view_root(fake_mount / "train", "small") == \
        str(fake_mount / ".prestofs" / "views" / "small")
    for bad in ("nope", "", "a/b", ".."):
        with pytest.raises(ValueError):
            prestofs.view_root(fake_mount, bad)
