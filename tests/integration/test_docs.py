"""The manual pages name exactly what exists: every key of the option table
(as `prestofs --help` prints it) is in prestofs(1) OPTIONS and in its
section of prestofs.conf(5), and every item there is a key; every metric
the daemon exports (a mount with every part on: SSD and shared tiers,
prefetch, views, an order stream) is named in prestofs(1) CONTROL FILES,
and every name there is exported."""
import json
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAN1 = (ROOT / "man" / "prestofs.1").read_text().splitlines()
MAN5 = (ROOT / "man" / "prestofs.conf.5").read_text().splitlines()
# prestofs(1) OPTIONS also names the generic mount options of fstab(5)
# and FUSE, which are no keys of the table (passed through or implied).
GENERIC = {"config", "rw"}


def table_keys(prestofs_bin):
    """{key: section} from --help (printed by the option table)."""
    out = subprocess.run([str(prestofs_bin), "--help"], capture_output=True, text=True,
                         timeout=30).stdout
    keys, section = {}, None
    for line in out.splitlines():
        m = re.match(r"^\[(\w+)\]", line)
        if m:
            section = m.group(1)
        m = re.match(r"^  -o ([a-z0-9_]+)", line)
        if m and section:
            keys[m.group(1)] = section
    assert len(keys) > 20, out
    return keys


def items(lines, start, end):
    """The first line of each .TP item in lines[start:end]."""
    return [lines[i] for i in range(start, end) if i and lines[i - 1] == ".TP"]


def test_options_documented(prestofs_bin):
    keys = table_keys(prestofs_bin)
    a, b = MAN1.index(".SH OPTIONS"), MAN1.index(".SH ERRORS AND RETRIES")
    man1 = set()
    for line in items(MAN1, a, b):
        m = (re.match(r"^\.BI ([a-z0-9_]+)=", line) or
             re.match(r"^\\fB([a-z0-9_]+)=\\fP", line) or
             re.match(r"^\.B ([a-z0-9_]+)$", line))
        if m:
            man1.add(m.group(1))
    missing, extra = sorted(set(keys) - man1), sorted(man1 - set(keys) - GENERIC)
    assert not missing, f"keys missing from prestofs(1) OPTIONS: {missing}"
    assert not extra, f"prestofs(1) OPTIONS names no such key: {extra}"

    man5, section = {}, None
    for i, line in enumerate(MAN5):
        m = re.match(r'^\.SH "SECTION \[(\w+)\]"', line)
        if m:
            section = m.group(1)
            continue
        if line.startswith(".SH"):
            section = None
        if section and i and MAN5[i - 1] == ".TP":
            m = re.match(r"^\.BR? ?I? ?([a-z0-9_]+) ", line) or re.match(r"^\.BI ([a-z0-9_]+) ", line)
            assert m, f"prestofs.conf(5) item not read: {line}"
            man5[m.group(1)] = section
    missing, extra = sorted(set(keys) - set(man5)), sorted(set(man5) - set(keys))
    assert not missing, f"keys missing from prestofs.conf(5): {missing}"
    assert not extra, f"prestofs.conf(5) names no such key: {extra}"
    wrong = {k: (man5[k], keys[k]) for k in keys if man5[k] != keys[k]}
    assert not wrong, f"keys in another section of prestofs.conf(5) than the table's: {wrong}"


def documented_metrics():
    """Names of prestofs(1)'s .prestofs/stats list: plain names, and the
    families of labelled ones (stream.NAME.entries -> stream.entries)."""
    a = MAN1.index(".IB MOUNTPOINT /.prestofs/stats")
    b = MAN1.index(".IB MOUNTPOINT /.prestofs/order")
    names = set()
    for line in items(MAN1, a + 1, b):
        if not line.startswith((".B ", ".BR ", ".BI ")):
            continue
        body = line.split(" ", 1)[1]
        fams = re.findall(r"([a-z_]+)\. NAME \.([a-z0-9_]+)", body)
        if fams:
            names |= {f"{g}.{f}" for g, f in fams}
            continue
        body = body.replace('", "', " ")
        names |= set(re.findall(r"(?<![\\\w.])([a-z][a-z0-9_]*(?:\.[a-z0-9_]+)?)(?![\w.])",
                                body))
    return names


def exported_metrics(stats):
    names = set()
    for k, v in stats.items():
        if not isinstance(v, dict):
            names.add(k)
            continue
        for k2, v2 in v.items():
            if isinstance(v2, dict):  # a labelled family: group.LABEL.field
                names |= {f"{k}.{f}" for f in v2}
            else:
                names.add(f"{k}.{k2}")
    return names


def test_metrics_documented(tmp_path, nginx, mount, memcached):
    src = tmp_path / "src"
    (src / "d").mkdir(parents=True)
    for i in range(4):
        (src / "d" / f"{i}.bin").write_bytes(bytes([i]) * 5000)
    ng = nginx(src)
    mc = memcached()
    m = mount(ng.url, {"ssd_dir": str(tmp_path / "ssd"), "ram_size": "16M",
                       "shared_cache": "memcached://" + mc.url})
    with open(m.path / ".prestofs" / "order", "w") as f:
        f.write("#stream rank0\nd/0.bin\nd/1.bin\n")
    assert (m.path / "d" / "0.bin").read_bytes() == bytes([0]) * 5000
    stats = json.loads((m.path / ".prestofs" / "stats").read_text())
    exported, documented = exported_metrics(stats), documented_metrics()
    assert "stream.entries" in exported and "shared.hits" in exported, sorted(exported)
    missing, extra = sorted(exported - documented), sorted(documented - exported)
    assert not missing, f"metrics missing from prestofs(1): {missing}"
    assert not extra, f"prestofs(1) names metrics that do not exist: {extra}"
