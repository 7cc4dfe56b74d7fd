"""httpbase: what the in-process HTTP test servers share (switch_origin,
fault_origin, fault_proxy, faultyindex).

  Service       lifecycle: start() on a free port of `host`, port/url,
                stop() (ends every stall, closes keep-alive connections
                still open), with-statement; tracks open connections
                (peak_connections) and closes marked ones with an RST
  Handler       a quiet keep-alive HTTP/1.1 handler whose GET and HEAD go
                to owner._serve(handler, method); connections are tracked
  Server        ThreadingHTTPServer: daemon threads, stop() does not wait
                for them, RST on the connections the owner marked
  send_head, send, send_not_found, send_status_fault   response writing
  http_date     an HTTP date of a Unix time
  byte_range    one Range header (`bytes=a-b`, `a-`, `-n`) against a length
  request_path  the object path a request names
  manifest_text a format-1 manifest of files, with their directories
  select, log_text   request log filtering and formatting

A Service subclass sets handler_class (a Handler subclass with its own
server_version), and may set server_class and thread_name; the server's
`owner` attribute is the Service.

Nothing here imports pytest.
"""
import email.utils
import http.server
import re
import socket
import struct
import threading
from urllib.parse import unquote

RANGE_RE = re.compile(r"^bytes=(\d*)-(\d*)$")
TEXT = (("Content-Type", "text/plain"),)
# Injected error answers: fault kind -> (status, reason).
STATUS_FAULTS = {"500": (500, "Internal Server Error"), "503": (503, "Service Unavailable"),
                 "429": (429, "Too Many Requests"), "404": (404, "Not Found"),
                 "403": (403, "Forbidden")}


# -- requests and responses -----------------------------------------------------

def request_path(h):
    """The path a request names, unquoted, without query or leading '/'."""
    return unquote(h.path.split("?", 1)[0]).lstrip("/")


def http_date(t):
    """An HTTP date (RFC 9110 5.6.7) of a Unix time."""
    return email.utils.formatdate(t, usegmt=True)


def send_head(h, status, headers, length, reason=None):
    """Status line, headers and Content-Length: length."""
    h.send_response(status, reason)
    for k, v in headers:
        h.send_header(k, v)
    h.send_header("Content-Length", str(length))
    h.end_headers()


def send(h, status, headers, body, method, reason=None):
    """A whole answer (no body for HEAD; Content-Length is the body's)."""
    send_head(h, status, headers, len(body), reason)
    if method != "HEAD" and body:
        h.wfile.write(body)


def send_not_found(h, method):
    send(h, 404, TEXT, b"not found\n", method)


def send_status_fault(h, kind, method, note="", retry_after=1):
    """An injected error answer (STATUS_FAULTS), `Retry-After` on a 429;
    its body: the reason, then note. Returns the status sent."""
    status, reason = STATUS_FAULTS[kind]
    hdrs = TEXT + ((("Retry-After", str(retry_after)),) if kind == "429" else ())
    send(h, status, hdrs, f"{reason}{note}\n".encode(), method, reason)
    return status


def byte_range(rng, total):
    """What a Range header asks of `total` bytes, as (status, a, b):
    (200, 0, total - 1) for none, or one not understood (served whole, as
    servers do); (206, a, b) for bytes a..b inclusive (clamped to the end;
    `-n` is the last n); (416, None, None) when not satisfiable."""
    m = RANGE_RE.match(rng.strip()) if rng else None
    if not m or (m.group(1) == "" and m.group(2) == ""):
        return 200, 0, total - 1
    a, b = m.group(1), m.group(2)
    if a == "":  # suffix range: the last n bytes
        n = int(b)
        if n == 0:
            return 416, None, None
        return 206, max(total - n, 0), total - 1
    a = int(a)
    b = total - 1 if b == "" else min(int(b), total - 1)
    if a >= total or b < a:
        return 416, None, None
    return 206, a, b


def manifest_text(files, dir_mtime):
    """A format-1 manifest (bytes) of files [(name, size, mtime)], names
    '/'-separated; their directories are listed too (size 0, dir_mtime).
    Every ETag is '-'."""
    dirs = set()
    for name, _, _ in files:
        parts = name.split("/")
        for i in range(1, len(parts)):
            dirs.add("/".join(parts[:i]))
    ents = [(d + "/", 0, dir_mtime) for d in dirs] + list(files)
    lines = ["#prestofs-manifest 1"]
    for path, size, mtime in sorted(ents):
        lines.append(f"{path}\t{size}\t{mtime}\t-")
    return ("\n".join(lines) + "\n").encode()


# -- request logs ------------------------------------------------------------

def select(log, obj=None, method="GET"):
    """The entries (with .obj and .method) of one object and/or method."""
    return [r for r in log if (obj is None or r.obj == obj) and
            (method is None or r.method == method)]


def log_text(rs, limit, line):
    """The last `limit` entries of rs, one line(r) each, for assertion
    messages."""
    out = [line(r) for r in rs[-limit:]]
    if len(rs) > limit:
        out.insert(0, f"... {len(rs) - limit} earlier requests")
    return "\n".join(out)


# -- server ------------------------------------------------------------------

class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 60  # an idle keep-alive connection is dropped after this

    def log_message(self, fmt, *args):  # quiet
        pass

    def setup(self):
        super().setup()
        self.server.owner._track(self.connection, True)

    def finish(self):
        try:
            super().finish()
        finally:
            self.server.owner._track(self.connection, False)

    def do_GET(self):
        self.server.owner._serve(self, "GET")

    def do_HEAD(self):
        self.server.owner._serve(self, "HEAD")


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True
    request_queue_size = 128

    def shutdown_request(self, request):
        # A connection marked for a reset is closed with SO_LINGER 0 and no
        # shutdown(SHUT_WR) first, so the peer gets an RST, not a FIN.
        if self.owner._take_rst(request):
            self.close_request(request)
        else:
            super().shutdown_request(request)


class Service:
    handler_class = Handler
    server_class = Server
    thread_name = "http-service"

    def __init__(self, host="127.0.0.1"):
        self.host = host
        self.peak_connections = 0  # connections open at once, at most
        self._lock = threading.Lock()
        self._conns = set()
        self._rst = set()
        self._stopping = threading.Event()
        self._srv = None
        self._thread = None

    @property
    def port(self):
        return self._srv.server_address[1]

    @property
    def url(self):
        return f"http://{self.host}:{self.port}/"

    def start(self):
        self._stopping.clear()
        self._srv = self.server_class((self.host, 0), self.handler_class)
        self._srv.owner = self
        self._thread = threading.Thread(target=self._srv.serve_forever,
                                        kwargs={"poll_interval": 0.05},
                                        name=self.thread_name, daemon=True)
        self._thread.start()
        return self

    def stop(self):
        """Ends every stall, closes every connection, and waits for the
        accept loop (handler threads end as their sockets close)."""
        if self._srv is None:
            return
        self._stopping.set()
        self._srv.shutdown()
        self._srv.server_close()
        with self._lock:
            conns = list(self._conns)
        for c in conns:  # keep-alive connections still open
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self._thread.join(10)
        self._srv = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        return False

    # -- for handlers ------------------------------------------------------
    def _track(self, conn, add):
        with self._lock:
            (self._conns.add if add else self._conns.discard)(conn)
            self.peak_connections = max(self.peak_connections, len(self._conns))

    def _take_rst(self, conn):
        with self._lock:
            if conn in self._rst:
                self._rst.discard(conn)
                return True
            return False

    def _serve_manifest(self, h, method):
        """Answers with self.manifest_text(); a GET counts in
        self.manifest_gets."""
        with self._lock:
            self.manifest_gets += method == "GET"
        send(h, 200, TEXT, self.manifest_text(), method)

    def _stall(self, h, seconds):
        """Holds the request `seconds` (stop() ends it early), then the
        connection is closed without an answer."""
        self._stopping.wait(seconds)
        h.close_connection = True

    def _send_half(self, h, body, reset):
        """Half of body (its headers promised all of it), then the
        connection is closed: with a TCP RST (SO_LINGER 0, no FIN first)
        when reset, else normally (FIN)."""
        h.wfile.write(body[:len(body) // 2])
        h.wfile.flush()
        h.close_connection = True
        if reset:
            h.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                    struct.pack("ii", 1, 0))
            with self._lock:
                self._rst.add(h.connection)
