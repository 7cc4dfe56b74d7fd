"""bench/plot (issue 15): the recorded benchmark tables of docs/BENCHMARKS.md
become PNG plots, and a fresh bench/loader log does too; a document without
the tables is refused with a message, not a traceback."""
import struct
import subprocess
import sys
from pathlib import Path

TOP = Path(__file__).resolve().parents[2]
PLOT = TOP / "bench" / "plot"


def png_size(path):
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", path
    w, h = struct.unpack(">II", data[16:24])
    return w, h


def run(*args):
    return subprocess.run([sys.executable, str(PLOT), *args], capture_output=True, text=True,
                          timeout=120)


def test_recorded_tables_render(tmp_path):
    p = run("--out", str(tmp_path))
    assert p.returncode == 0, p.stderr
    for name in ("loader.png", "views.png", "cpu.png"):
        w, h = png_size(tmp_path / name)
        assert w >= 800 and h >= 400, (name, w, h)


def test_loader_log_and_bad_document(tmp_path):
    log = tmp_path / "log"
    log.write_text(
        "scenario                         workload   rate/s  p50 ms  p99 ms   GETs\n"
        "local disk                       torch         464       -       -      0\n"
        "prestofs cold                    torch         276       -       -   2000\n"
        "prestofs cold                    raw 16       2771     1.2    46.3   2000\n"
        "rclone cold                      raw 16        284    43.0   654.6   2000\n")
    p = run("--out", str(tmp_path / "o"), "--loader-log", str(log))
    assert p.returncode == 0, p.stderr
    png_size(tmp_path / "o" / "loader.png")
    assert not (tmp_path / "o" / "views.png").exists()
    doc = tmp_path / "doc.md"
    doc.write_text("# nothing here\n")
    p = run("--doc", str(doc), "--out", str(tmp_path / "x"))
    assert p.returncode != 0 and "bench/plot:" in p.stderr and "Traceback" not in p.stderr
