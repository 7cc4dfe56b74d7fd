"""What the binary says about itself (issue 12, one source of truth for
options): --help names every subcommand main.c dispatches and every key of
the shipped example with its default; --version names the libraries.

The unit test tests/unit/test_usage.c holds the help text and the example to
the option table; this checks the binary's own table of subcommands, which
no unit test links, and that the example and the binary agree.
"""
import re
import subprocess

from helpers import REPO_ROOT

EXAMPLE = REPO_ROOT / "docs" / "prestofs.conf.example"


def run(prestofs_bin, *args):
    r = subprocess.run([str(prestofs_bin), *args], capture_output=True, text=True,
                       timeout=30)
    assert r.returncode == 0, (args, r.stderr)
    assert r.stderr == "", r.stderr
    return r.stdout


def example_keys():
    """(section, key, default or None) for every key of the example."""
    section, keys = None, []
    for line in EXAMPLE.read_text().splitlines():
        m = re.match(r"^\[(\w+)\]$", line)
        if m:
            section = m.group(1)
            continue
        m = re.match(r"^(;?)(\w+) = (.*)$", line)
        if m:
            keys.append((section, m.group(2), None if m.group(1) else m.group(3)))
    return keys


def test_help_lists_commands_and_keys(prestofs_bin):
    text = run(prestofs_bin, "--help")
    assert run(prestofs_bin, "-h") == text
    flat = " ".join(text.split())
    for cmd in ("index", "profile"):
        assert re.search(rf"^ {{7}}prestofs {cmd} ", text, re.M), cmd
        # One line each under Commands.
        assert re.search(rf"^  {cmd} +\S.*$", text, re.M), cmd
    assert all(len(line) < 80 for line in text.splitlines())
    keys = example_keys()
    assert len(keys) >= 24
    assert {s for s, _, _ in keys} == {"origin", "cache", "shared", "prefetch", "views",
                                       "mount"}
    for section, key, default in keys:
        assert f"[{section}]" in text
        assert re.search(rf" -o {key}[= ]", flat), key
        if default is not None:
            m = re.search(rf" -o {key}[= ].*?\(default ([^)]*)\)", flat)
            assert m and m.group(1) == default, (key, default)


def test_version_names_libraries(prestofs_bin):
    text = run(prestofs_bin, "--version")
    assert run(prestofs_bin, "-V") == text
    lines = text.splitlines()
    assert re.fullmatch(r"prestofs \d+\.\d+\.\d+", lines[0]), lines[0]
    for lib in ("libfuse", "libcurl", "zstd", "LMDB", "libjpeg-turbo"):
        assert any(re.match(rf"{lib} \d+\.\d+(\.\d+)?\b", line) for line in lines), \
            (lib, text)
