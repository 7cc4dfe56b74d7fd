"""FaultOrigin: an in-process HTTP/1.1 origin whose objects fail on demand
(for "bounded failure" tests: time to EIO, requests per failure, log volume).

    srv = FaultOrigin(stall_s=3.0).start()             # 127.0.0.1, free port
    srv.add("d/a.bin", data)                           # served as is
    srv.add("d/big.bin", b"x" * 4096, listed_size=2**40)  # the manifest lies
    srv.set_fault("d/a.bin", "500")                    # from now on
    m = mount(srv.url, {...})
    srv.gets("d/a.bin"), srv.heads("d/a.bin")          # requests so far
    srv.stop()

Responses: keep-alive HTTP/1.1. A healthy ('ok') object answers a GET
without Range with 200 and the whole body; `Range: bytes=a-b` (or `a-`,
`-n`) with 206 and `Content-Range: bytes a-b/TOTAL` (TOTAL: the real length,
whatever the manifest lists); a range starting at or past the end with 416
and `Content-Range: bytes */TOTAL`. Every 2xx carries a strong ETag and a
Last-Modified. HEAD answers the headers of a 200.

Fault kinds (per object, settable at any time with set_fault(); HEAD
requests get the same fault, except that no body is ever sent):

  'ok'     as above
  'stall'  the request is held stall_s seconds (choose it longer than the
           client's timeout), then the connection is closed without an
           answer; server stop() ends the wait early, so threads always end
  '500'    500 Internal Server Error (small body, connection kept)
  '503'    503 Service Unavailable (small body, connection kept)
  '429'    429 Too Many Requests with `Retry-After: 1`
  'reset'  the 206/200 headers and half of the body, then a TCP RST
           (SO_LINGER 0, no FIN first)
  'short'  Content-Length promises the whole range, half is sent, then the
           connection is closed normally (FIN)
  '404'    404 Not Found
  '403'    403 Forbidden

set_fault(name, kind, times=N) applies the fault to the next N GETs of that
object only, then the object is healthy again.

The manifest (format 1, see helpers/manifest.py) is served at
/prestofs.manifest: every object with its listed size (its real length
unless add(listed_size=) overrides it), a fixed mtime and ETag '-'. Any
other path answers 404. Counters: gets(name), heads(name); log: a list of
Req (one per object request, with arrival/end times and the fault served).

Nothing here imports pytest.
"""
import email.utils
import hashlib
import http.server
import re
import socket
import struct
import threading
import time
from dataclasses import dataclass
from urllib.parse import unquote

MANIFEST_NAME = "prestofs.manifest"
MTIME = 1_600_000_000
KINDS = ("ok", "stall", "500", "503", "429", "reset", "short", "404", "403")
_STATUS = {"500": (500, "Internal Server Error"), "503": (503, "Service Unavailable"),
           "429": (429, "Too Many Requests"), "404": (404, "Not Found"),
           "403": (403, "Forbidden")}
_RANGE_RE = re.compile(r"^bytes=(\d*)-(\d*)$")


@dataclass
class Req:
    obj: str
    method: str
    range: str       # the Range header as sent, or ""
    kind: str        # the fault served ('ok' for a healthy answer)
    status: int      # 0 when no status line was sent (stall)
    t_start: float   # time.monotonic() at arrival
    t_end: float = 0.0


@dataclass
class Obj:
    name: str
    data: bytes
    listed_size: int
    etag: str
    kind: str = "ok"
    times: object = None  # GETs left with this fault; None: until changed
    gets: int = 0
    heads: int = 0


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "FaultOrigin/1"
    timeout = 60  # an idle keep-alive connection is dropped after this

    def log_message(self, fmt, *args):  # quiet
        pass

    def setup(self):
        super().setup()
        self.server.origin._track(self.connection, True)

    def finish(self):
        try:
            super().finish()
        finally:
            self.server.origin._track(self.connection, False)

    def do_GET(self):
        self.server.origin._serve(self, "GET")

    def do_HEAD(self):
        self.server.origin._serve(self, "HEAD")


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True
    request_queue_size = 128

    def shutdown_request(self, request):
        # A 'reset' connection is closed with SO_LINGER 0 and no
        # shutdown(SHUT_WR) first, so the peer gets an RST, not a FIN.
        if self.origin._take_rst(request):
            self.close_request(request)
        else:
            super().shutdown_request(request)


class FaultOrigin:
    def __init__(self, stall_s=3.0, host="127.0.0.1"):
        self.stall_s = stall_s
        self.host = host
        self.objects = {}
        self.log = []
        self.manifest_gets = 0
        self._lock = threading.Lock()
        self._conns = set()
        self._rst = set()
        self._stopping = threading.Event()
        self._srv = None
        self._thread = None

    # -- setup -----------------------------------------------------------
    def add(self, name, data, listed_size=None, kind="ok"):
        """Adds object `name` ('/'-separated relative path) with its bytes;
        the manifest lists listed_size (default: the real length)."""
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}")
        data = bytes(data)
        tag = '"' + hashlib.sha1(data).hexdigest()[:20] + '"'
        o = Obj(name, data, len(data) if listed_size is None else int(listed_size), tag, kind)
        with self._lock:
            self.objects[name] = o
        return o

    def set_fault(self, name, kind, times=None):
        """Serves `kind` for `name` from now on (or for its next `times`
        GETs, then 'ok')."""
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}")
        with self._lock:
            o = self.objects[name]
            o.kind, o.times = kind, times

    def reset_counts(self):
        with self._lock:
            for o in self.objects.values():
                o.gets = o.heads = 0
            self.log.clear()

    def manifest_text(self):
        lines = ["#prestofs-manifest 1"]
        with self._lock:
            objs = list(self.objects.values())
        dirs = set()
        for o in objs:
            parts = o.name.split("/")
            for i in range(1, len(parts)):
                dirs.add("/".join(parts[:i]))
        ents = [(d + "/", 0) for d in dirs] + [(o.name, o.listed_size) for o in objs]
        for path, size in sorted(ents):
            lines.append(f"{path}\t{size}\t{MTIME}\t-")
        return ("\n".join(lines) + "\n").encode()

    # -- queries ---------------------------------------------------------
    def gets(self, name):
        with self._lock:
            return self.objects[name].gets

    def heads(self, name):
        with self._lock:
            return self.objects[name].heads

    def requests(self, name=None, method="GET"):
        with self._lock:
            return [r for r in self.log if (name is None or r.obj == name) and
                    (method is None or r.method == method)]

    def describe_log(self, name=None, limit=40):
        """The request log as text, for assertion messages."""
        rs = self.requests(name, method=None)
        t0 = rs[0].t_start if rs else 0.0
        out = [f"+{r.t_start - t0:7.3f}s {r.method} {r.obj} range={r.range or '-'} "
               f"{r.kind} -> {r.status or 'no answer'} ({r.t_end - r.t_start:.3f}s)"
               for r in rs[-limit:]]
        if len(rs) > limit:
            out.insert(0, f"... {len(rs) - limit} earlier requests")
        return "\n".join(out)

    # -- lifecycle -------------------------------------------------------
    @property
    def port(self):
        return self._srv.server_address[1]

    @property
    def url(self):
        return f"http://{self.host}:{self.port}/"

    def start(self):
        self._stopping.clear()
        self._srv = _Server((self.host, 0), _Handler)
        self._srv.origin = self
        self._thread = threading.Thread(target=self._srv.serve_forever,
                                        kwargs={"poll_interval": 0.05},
                                        name="fault-origin", daemon=True)
        self._thread.start()
        return self

    def stop(self):
        if self._srv is None:
            return
        self._stopping.set()  # ends every stall at once
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

    # -- serving ---------------------------------------------------------
    def _track(self, conn, add):
        with self._lock:
            (self._conns.add if add else self._conns.discard)(conn)

    def _take_rst(self, conn):
        with self._lock:
            if conn in self._rst:
                self._rst.discard(conn)
                return True
            return False

    @staticmethod
    def _head(h, status, headers, length):
        h.send_response(status)
        for k, v in headers:
            h.send_header(k, v)
        h.send_header("Content-Length", str(length))
        h.end_headers()

    def _send(self, h, status, headers, body, method):
        self._head(h, status, headers, len(body))
        if method != "HEAD" and body:
            h.wfile.write(body)

    def _serve(self, h, method):
        t0 = time.monotonic()
        path = unquote(h.path.split("?", 1)[0]).lstrip("/")
        if path == MANIFEST_NAME:
            with self._lock:
                self.manifest_gets += method == "GET"
            self._send(h, 200, [("Content-Type", "text/plain")], self.manifest_text(), method)
            return
        with self._lock:
            o = self.objects.get(path)
            kind = "ok"
            if o is not None:
                kind = o.kind
                if method == "GET":
                    o.gets += 1
                    if o.times is not None:
                        o.times -= 1
                        if o.times <= 0:
                            o.kind, o.times = "ok", None
                else:
                    o.heads += 1
        if o is None:
            self._send(h, 404, [("Content-Type", "text/plain")], b"not found\n", method)
            return
        rec = Req(o.name, method, h.headers.get("Range", ""), kind, 0, t0)
        try:
            rec.status = self._answer(h, o, kind, method, rec.range)
        finally:
            rec.t_end = time.monotonic()
            with self._lock:
                self.log.append(rec)

    def _answer(self, h, o, kind, method, rng):
        """Writes the answer; returns the status sent (0: none)."""
        text = [("Content-Type", "text/plain")]
        if kind == "stall":
            self._stopping.wait(self.stall_s)
            h.close_connection = True
            return 0
        if kind in _STATUS:
            status = _STATUS[kind][0]
            hdrs = text + ([("Retry-After", "1")] if kind == "429" else [])
            self._send(h, status, hdrs, f"{_STATUS[kind][1]}\n".encode(), method)
            return status
        status, hdrs, body = self._range(o, rng)
        if kind == "ok" or status not in (200, 206) or method == "HEAD":
            self._send(h, status, hdrs, body, method)
            return status
        # 'reset' / 'short': the headers promise the whole body, half comes.
        self._head(h, status, hdrs, len(body))
        h.wfile.write(body[:len(body) // 2])
        h.wfile.flush()
        h.close_connection = True
        if kind == "reset":
            h.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                    struct.pack("ii", 1, 0))
            with self._lock:
                self._rst.add(h.connection)
        return status

    @staticmethod
    def _range(o, rng):
        data, total = o.data, len(o.data)
        hdrs = [("ETag", o.etag),
                ("Last-Modified", email.utils.formatdate(MTIME, usegmt=True)),
                ("Accept-Ranges", "bytes"), ("Content-Type", "application/octet-stream")]
        m = _RANGE_RE.match(rng.strip()) if rng else None
        if not m or (m.group(1) == "" and m.group(2) == ""):
            return 200, hdrs, data
        a, b = m.group(1), m.group(2)
        if a == "":  # suffix range: the last n bytes
            n = int(b)
            if n == 0:
                return 416, hdrs[:2] + [("Content-Range", f"bytes */{total}")], b""
            a, b = max(total - n, 0), total - 1
        else:
            a = int(a)
            b = total - 1 if b == "" else min(int(b), total - 1)
            if a >= total or b < a:
                return 416, hdrs[:2] + [("Content-Range", f"bytes */{total}")], b""
        return 206, hdrs + [("Content-Range", f"bytes {a}-{b}/{total}")], data[a:b + 1]
