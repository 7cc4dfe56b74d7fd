"""A private nginx serving one directory on 127.0.0.1.

    ng = Nginx(root=dataset_dir, workdir=tmp / "nginx", autoindex=True).start()
    url = ng.url          # "http://127.0.0.1:PORT/"
    ng.kill()             # SIGKILL the whole process group (a crash)
    ng.start()            # same port again
    ng.stop()

Everything nginx writes (pid, logs, temp dirs) stays under workdir. It runs
in the foreground (`daemon off;`) in its own session, so kill() takes the
workers down with the master. `user root;` is set when running as root
because pytest's tmp dirs are 0700 and workers would otherwise run as nobody.
"""
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

NGINX = "/usr/sbin/nginx"


_next_port = None


def free_port():
    """A port free on 127.0.0.1 now. Under pytest-xdist (PYTEST_XDIST_WORKER
    gwN) each worker takes ports in turn from a range of its own below the
    kernel's ephemeral range (1000 from 20000 + 1000 N), so a port one worker
    found free is never handed to another worker, nor to an outgoing
    connection, before its server binds it."""
    global _next_port
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    if not worker.startswith("gw") or not worker[2:].isdigit():
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            return s.getsockname()[1]
    lo = 20000 + 1000 * (int(worker[2:]) % 12)
    if _next_port is None:
        _next_port = lo
    for _ in range(1000):
        port, _next_port = _next_port, lo + (_next_port + 1 - lo) % 1000
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port in {lo}..{lo + 999}")


def wait_port(port, timeout=10.0, proc=None):
    """True once 127.0.0.1:port accepts connections (bounded)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            return False
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return True
        except OSError:
            time.sleep(0.02)
    return False


class Nginx:
    def __init__(self, root, workdir, autoindex=True, port=None, workers=2,
                 extra_http="", extra_server=""):
        self.root = Path(root).resolve()
        self.workdir = Path(workdir)
        self.autoindex = autoindex
        self.port = port
        self.workers = workers
        self.extra_http = extra_http
        self.extra_server = extra_server
        self.proc = None

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}/"

    @property
    def access_log(self):
        return self.workdir / "access.log"

    @property
    def error_log(self):
        return self.workdir / "error.log"

    def _config(self):
        w = self.workdir
        user = "user root;" if os.geteuid() == 0 else ""
        return f"""
daemon off;
{user}
worker_processes {self.workers};
pid {w}/nginx.pid;
error_log {w}/error.log warn;
events {{ worker_connections 1024; }}
http {{
    log_format pfs '$remote_addr [$time_local] "$request" $status $body_bytes_sent '
                   'conn=$connection creq=$connection_requests';
    access_log {w}/access.log pfs;
    client_body_temp_path {w}/tmp/client;
    proxy_temp_path {w}/tmp/proxy;
    fastcgi_temp_path {w}/tmp/fastcgi;
    uwsgi_temp_path {w}/tmp/uwsgi;
    scgi_temp_path {w}/tmp/scgi;
    types {{ }}
    default_type application/octet-stream;
    sendfile on;
    tcp_nopush on;
    keepalive_requests 1000000;
    keepalive_timeout 120s;
    {self.extra_http}
    server {{
        listen 127.0.0.1:{self.port} reuseport;
        server_name localhost;
        root {self.root};
        location / {{ autoindex {'on' if self.autoindex else 'off'}; }}
        {self.extra_server}
    }}
}}
"""

    def start(self, timeout=10.0):
        """Starts nginx (on self.port if set, else a free port; retried on
        a port race). Raises RuntimeError with nginx's error log on failure."""
        (self.workdir / "tmp").mkdir(parents=True, exist_ok=True)
        fixed = self.port is not None
        for _ in range(5):
            if not fixed:
                self.port = free_port()
            conf = self.workdir / "nginx.conf"
            conf.write_text(self._config())
            self._out = open(self.workdir / "stderr.log", "ab")
            self.proc = subprocess.Popen(
                [NGINX, "-p", str(self.workdir), "-c", str(conf), "-e",
                 str(self.workdir / "error.log")],
                stdin=subprocess.DEVNULL, stdout=self._out, stderr=self._out,
                start_new_session=True)
            if wait_port(self.port, timeout, self.proc):
                return self
            self._reap()
            if fixed:
                break
        raise RuntimeError(f"nginx did not start on port {self.port}:\n" + self.logs())

    def _reap(self):
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            pass
        self._out.close()
        self.proc = None

    def kill(self):
        """SIGKILL master and workers at once: the origin vanishes mid-flight."""
        self._reap()
        # The listening socket closes with the last process; make sure.
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                time.sleep(0.02)
            except OSError:
                return

    def stop(self):
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(10)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            pass
        self._reap()

    def logs(self):
        out = []
        for n in ("stderr.log", "error.log"):
            p = self.workdir / n
            if p.exists():
                out.append(f"--- {n} ---\n" + p.read_text(errors="replace")[-5000:])
        return "\n".join(out)

    def requests_for(self, urlpath_fragment):
        """Access-log lines whose request line contains the fragment."""
        if not self.access_log.exists():
            return []
        return [l for l in self.access_log.read_text(errors="replace").splitlines()
                if urlpath_fragment in l]

    def connections(self):
        """(requests logged, distinct TCP connections they used)."""
        if not self.access_log.exists():
            return 0, 0
        lines = self.access_log.read_text(errors="replace").splitlines()
        conns = {l.rsplit("conn=", 1)[1].split()[0] for l in lines if "conn=" in l}
        return len(lines), len(conns)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        return False
