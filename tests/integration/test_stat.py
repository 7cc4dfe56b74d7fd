"""`prestofs stat MOUNT` (issue 15): a row per interval of what the mount
did. --json rows are parsed: their rates must be the deltas of the counters
they carry divided by the interval, those counters must end at the values
of the mount's own stats file, and the bytes served over the reads must be
the bytes of the files read. The table has its header and a row per
interval; bad arguments and a directory that is no mount are refused.
Every wait is bounded; no verdict depends on timing.
"""
import json
import os
import signal
import subprocess
import time

from helpers.compare import drop_page_cache, read_all

WAIT = 20.0


def files_of(root):
    out = []
    for d, _, fs in os.walk(root):
        out += [os.path.relpath(os.path.join(d, f), root) for f in fs]
    return sorted(out)


def test_json_rows_match_the_counters(dataset, mount, prestofs_bin):
    m = mount(str(dataset), {"ram_size": "64M"})
    rels = [r for r in files_of(m.path) if not r.startswith(".prestofs")]
    p = subprocess.Popen([str(prestofs_bin), "stat", str(m.path), "-i", "0.1", "--json"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    rows = []
    try:
        first = json.loads(p.stdout.readline())   # the first interval is over
        rows.append(first)
        before = first["totals"]
        size = 0
        for _ in range(3):
            for r in rels:
                drop_page_cache(m.path / r)
                assert read_all(m.path / r) == (dataset / r).read_bytes(), r
                size += (dataset / r).stat().st_size
        s = m.stats()
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            rows.append(json.loads(p.stdout.readline()))
            if rows[-1]["totals"]["served_reads_total"] >= s["served"]["reads"]:
                break
        p.send_signal(signal.SIGINT)
        assert p.wait(WAIT) == 0, p.stderr.read()
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    last = rows[-1]["totals"]
    # The counters end where the stats file says (nothing read since).
    assert last["served_reads_total"] == s["served"]["reads"], (last, s["served"])
    assert last["served_bytes_total"] == s["served"]["bytes"]
    assert last["ram_hits_total"] == s["ram"]["hits"]
    assert last["origin_requests_total"] == s["origin"]["requests"]
    # Every byte of every file, three times, and nothing else.
    assert last["served_bytes_total"] - before["served_bytes_total"] == size
    # Each row's rates are its counters' deltas over its interval.
    for a, b in zip(rows, rows[1:]):
        dt = b["interval"]
        assert 0.05 < dt < 5, b
        for rate, total, scale in (("reads_per_s", "served_reads_total", 1),
                                   ("mb_per_s", "served_bytes_total", 1e6),
                                   ("origin_requests_per_s", "origin_requests_total", 1)):
            want = (b["totals"][total] - a["totals"][total]) / dt / scale
            assert abs(b[rate] - want) <= 1e-4 * max(1, want), (rate, a, b)
        hits = b["totals"]["ram_hits_total"] - a["totals"]["ram_hits_total"]
        misses = b["totals"]["ram_misses_total"] - a["totals"]["ram_misses_total"]
        if hits + misses:
            assert abs(b["ram_hit_pct"] - 100 * hits / (hits + misses)) < 1e-3, b
        else:
            assert b["ram_hit_pct"] is None, b
        assert b["epoch"] >= a["epoch"] and b["streams"] == 0
    assert sum(r["reads_per_s"] * r["interval"] for r in rows[1:]) > 0


def test_table_and_errors(dataset, mount, prestofs_bin, tmp_path):
    m = mount(str(dataset), {"ram_size": "16M"})
    r = subprocess.run([str(prestofs_bin), "stat", str(m.path), "-i", "0.05", "-c", "3"],
                       capture_output=True, text=True, timeout=WAIT)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == 4, lines
    assert lines[0].split()[:4] == ["reads/s", "MB/s", "ram%", "ssd%"], lines[0]
    for l in lines[1:]:
        assert len(l.split()) == len(lines[0].split()), l
    for argv, rc, words in (([str(tmp_path)], 1, "not a prestofs mount"),
                            ([], 2, "usage"),
                            ([str(m.path), "-i", "0"], 2, "-i"),
                            ([str(m.path), "-c", "x"], 2, "-c"),
                            ([str(m.path), "--bogus"], 2, "--bogus")):
        r = subprocess.run([str(prestofs_bin), "stat", *argv], capture_output=True,
                           text=True, timeout=WAIT)
        assert r.returncode == rc and words in r.stderr, (argv, r.returncode, r.stderr)
