"""DelayProxy: runs bench/delayproxy.py (a TCP delay line) as a subprocess,
or a compiled bench/delayproxy.c (same interface) when `program` is given.

    with DelayProxy(upstream_port, delay_ms=10) as p:
        url = p.url            # http://127.0.0.1:PORT/
        p.blackhole(True)      # the origin stops answering (no RST, no FIN)
        p.blackhole(False)
"""
import os
import select
import signal
import subprocess
import sys
import time

from . import REPO_ROOT

SCRIPT = REPO_ROOT / "bench" / "delayproxy.py"


class DelayProxy:
    def __init__(self, upstream_port, delay_ms=10.0, program=None, python="/usr/bin/python3"):
        self.upstream_port = upstream_port
        self.delay_ms = delay_ms
        python = python if os.path.exists(python) else sys.executable
        self.argv = [str(program)] if program else [python, str(SCRIPT)]
        self.proc = None
        self.port = None

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}/"

    def start(self, timeout=10.0):
        self.proc = subprocess.Popen(
            self.argv + ["--upstream", f"127.0.0.1:{self.upstream_port}",
             "--delay-ms", str(self.delay_ms)],
            stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, start_new_session=True)
        line = self._readline(timeout)
        if not line.startswith(b"PORT "):
            self.stop()
            raise RuntimeError(f"delayproxy did not start: {line!r}")
        self.port = int(line.split()[1])
        return self

    def _readline(self, timeout):
        deadline = time.monotonic() + timeout
        line = b""
        while time.monotonic() < deadline and not line.endswith(b"\n"):
            r, _, _ = select.select([self.proc.stdout], [], [], 0.1)
            if r:
                b = os.read(self.proc.stdout.fileno(), 1)
                if not b:
                    break
                line += b
        return line

    def blackhole(self, on, timeout=5.0):
        """Switches black-hole mode and waits until the proxy confirms it."""
        self.proc.send_signal(signal.SIGUSR1 if on else signal.SIGUSR2)
        line = self._readline(timeout)
        if line.strip() != f"BLACKHOLE {int(on)}".encode():
            raise RuntimeError(f"delayproxy did not confirm black hole: {line!r}")

    def stop(self):
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.proc.stdout.close()
        self.proc = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        return False
