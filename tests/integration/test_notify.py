"""Readiness for systemd (issue 15): with $NOTIFY_SOCKET set, prestofs sends
READY=1 (with MAINPID and a STATUS line) once the mount is in place, and
STOPPING=1 when it is unmounted, as sd_notify(3) describes. PID 1 here is
not systemd, so the test binds the notification socket itself: a path, and
a name in the abstract namespace ("@name"), in the foreground and as a
daemon (where the process that serves the mount is not the one started).

Verdicts come from the datagrams received and the mount table at the time
each arrived; every wait is bounded.
"""
import os
import socket
import subprocess
import time

import pytest

from helpers.mount import is_mounted

WAIT = 20.0


def bind(addr):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.bind("\0" + addr[1:] if addr.startswith("@") else addr)
    s.settimeout(WAIT)
    return s


def receive(s, mnt):
    """(the datagram's KEY=VALUE pairs, whether mnt was mounted on arrival)."""
    data = s.recv(65536).decode()
    mounted = is_mounted(mnt)
    return dict(l.split("=", 1) for l in data.splitlines()), mounted


@pytest.mark.parametrize("abstract", [False, True])
def test_ready_and_stopping(dataset, tmp_path, mount, abstract):
    addr = f"@prestofs-test-{os.getpid()}-{time.monotonic_ns()}" if abstract \
        else str(tmp_path / "notify.sock")
    s = bind(addr)
    try:
        m = mount(str(dataset), {"ram_size": "16M"}, env={"NOTIFY_SOCKET": addr})
        msg, mounted = receive(s, m.path)
        assert msg.get("READY") == "1", msg
        assert mounted, "READY=1 came before the mount was in place"
        assert msg.get("MAINPID") == str(m.proc.pid), (msg, m.proc.pid)
        assert msg.get("STATUS") == f"mounted at {m.path}", msg
        assert sorted(os.listdir(m.path)) == sorted(os.listdir(dataset))
        assert m.stop() == []
        msg, _ = receive(s, m.path)
        assert msg == {"STOPPING": "1"}, msg
    finally:
        s.close()


def test_ready_from_the_daemon(dataset, tmp_path, prestofs_bin):
    """Without -f the started process exits once the mount is up; READY=1
    comes from the one that stays, and names it."""
    addr = str(tmp_path / "notify.sock")
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    s = bind(addr)
    try:
        r = subprocess.run([str(prestofs_bin), str(dataset), str(mnt), "-o", "ram_size=16M"],
                           env=dict(os.environ, NOTIFY_SOCKET=addr), capture_output=True,
                           timeout=WAIT)
        try:
            assert r.returncode == 0, r.stderr
            msg, mounted = receive(s, mnt)
            assert msg.get("READY") == "1" and mounted, msg
            pid = int(msg["MAINPID"])
            assert pid != os.getpid() and os.path.exists(f"/proc/{pid}"), msg
            assert open(f"/proc/{pid}/comm").read().strip() == "prestofs"
        finally:
            subprocess.run(["fusermount3", "-u", str(mnt)], capture_output=True, timeout=30)
        msg, _ = receive(s, mnt)
        assert msg == {"STOPPING": "1"}, msg
        deadline = time.monotonic() + WAIT
        while os.path.exists(f"/proc/{pid}") and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not os.path.exists(f"/proc/{pid}"), "the daemon did not exit"
    finally:
        s.close()


def test_no_socket_no_message(dataset, tmp_path, mount):
    """A NOTIFY_SOCKET nobody listens on, or one that is not a valid name:
    the mount works all the same."""
    for i, addr in enumerate((str(tmp_path / "nobody.sock"), "relative/name")):
        m = mount(str(dataset), {"ram_size": "16M"}, name=f"mnt{i}",
                  env={"NOTIFY_SOCKET": addr})
        assert sorted(os.listdir(m.path)) == sorted(os.listdir(dataset))
        assert m.stop() == []
