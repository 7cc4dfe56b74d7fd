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
object only, then the object is healthy again. set_fault(name, kind,
per_range=N) applies it to the first N GETs of each distinct Range header
(each block fails N times, then succeeds).

The manifest (format 1, see helpers/manifest.py) is served at
/prestofs.manifest: every object with its listed size (its real length
unless add(listed_size=) overrides it), a fixed mtime and ETag '-'. Any
other path answers 404. Counters: gets(name), heads(name); log: a list of
Req (one per object request, with arrival/end times and the fault served).

Nothing here imports pytest.
"""
import hashlib
import time
from dataclasses import dataclass

from . import httpbase
from .httpbase import STATUS_FAULTS, send, send_head

MANIFEST_NAME = "prestofs.manifest"
MTIME = 1_600_000_000
KINDS = ("ok", "stall", "500", "503", "429", "reset", "short", "404", "403")


@dataclass
class Req:
    obj: str
    method: str
    range: str       # the Range header as sent, or ""
    kind: str        # the fault served ('ok' for a healthy answer)
    status: int      # 0 when no status line was sent (stall)
    t_start: float   # time.monotonic() at arrival
    t_end: float = 0.0   # 0 while the answer is still being sent


@dataclass
class Obj:
    name: str
    data: bytes
    listed_size: int
    etag: str
    kind: str = "ok"
    times: object = None  # GETs left with this fault; None: until changed
    per_range: object = None  # faulty GETs per distinct Range; None: all
    range_gets: dict = None   # per_range: GETs so far per Range header
    gets: int = 0
    heads: int = 0


class _Handler(httpbase.Handler):
    server_version = "FaultOrigin/1"


class FaultOrigin(httpbase.Service):
    handler_class = _Handler
    thread_name = "fault-origin"
    def __init__(self, stall_s=3.0, host="127.0.0.1"):
        super().__init__(host)
        self.stall_s = stall_s
        self.objects = {}
        self.log = []
        self.manifest_gets = 0

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

    def set_fault(self, name, kind, times=None, per_range=None):
        """Serves `kind` for `name` from now on (or for its next `times`
        GETs, then 'ok'; or for the first `per_range` GETs of each Range)."""
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}")
        with self._lock:
            o = self.objects[name]
            o.kind, o.times = kind, times
            o.per_range, o.range_gets = per_range, {}

    def reset_counts(self):
        with self._lock:
            for o in self.objects.values():
                o.gets = o.heads = 0
            self.log.clear()

    def manifest_text(self):
        with self._lock:
            files = [(o.name, o.listed_size, MTIME) for o in self.objects.values()]
        return httpbase.manifest_text(files, MTIME)

    # -- queries ---------------------------------------------------------
    def gets(self, name):
        with self._lock:
            return self.objects[name].gets

    def heads(self, name):
        with self._lock:
            return self.objects[name].heads

    def requests(self, name=None, method="GET"):
        with self._lock:
            return httpbase.select(self.log, name, method)

    def describe_log(self, name=None, limit=40):
        """The request log as text, for assertion messages."""
        rs = self.requests(name, method=None)
        t0 = rs[0].t_start if rs else 0.0
        return httpbase.log_text(rs, limit, lambda r: (
            f"+{r.t_start - t0:7.3f}s {r.method} {r.obj} range={r.range or '-'} "
            f"{r.kind} -> {r.status or 'no answer'} "
            + (f"({r.t_end - r.t_start:.3f}s)" if r.t_end else "(in flight)")))

    # -- serving ---------------------------------------------------------
    def _serve(self, h, method):
        t0 = time.monotonic()
        path = httpbase.request_path(h)
        if path == MANIFEST_NAME:
            return self._serve_manifest(h, method)
        with self._lock:
            o = self.objects.get(path)
            kind = "ok"
            if o is not None:
                kind = o.kind
                if method == "GET":
                    o.gets += 1
                    if o.per_range is not None:
                        rng = h.headers.get("Range", "")
                        o.range_gets[rng] = o.range_gets.get(rng, 0) + 1
                        if o.range_gets[rng] > o.per_range:
                            kind = "ok"
                    elif o.times is not None:
                        o.times -= 1
                        if o.times <= 0:
                            o.kind, o.times = "ok", None
                else:
                    o.heads += 1
        if o is None:
            httpbase.send_not_found(h, method)
            return
        rec = Req(o.name, method, h.headers.get("Range", ""), kind, 0, t0)
        # Logged before the answer goes out (as in switch_origin and
        # fault_proxy): a test that got its answer finds the request here.
        with self._lock:
            self.log.append(rec)
        try:
            rec.status = self._answer(h, o, kind, method, rec.range)
        finally:
            rec.t_end = time.monotonic()

    def _answer(self, h, o, kind, method, rng):
        """Writes the answer; returns the status sent (0: none)."""
        if kind == "stall":
            self._stall(h, self.stall_s)
            return 0
        if kind in STATUS_FAULTS:
            return httpbase.send_status_fault(h, kind, method)
        status, hdrs, body = self._range(o, rng)
        if kind == "ok" or status not in (200, 206) or method == "HEAD":
            send(h, status, hdrs, body, method)
            return status
        # 'reset' / 'short': the headers promise the whole body, half comes.
        send_head(h, status, hdrs, len(body))
        self._send_half(h, body, kind == "reset")
        return status

    @staticmethod
    def _range(o, rng):
        data, total = o.data, len(o.data)
        hdrs = [("ETag", o.etag),
                ("Last-Modified", httpbase.http_date(MTIME)),
                ("Accept-Ranges", "bytes"), ("Content-Type", "application/octet-stream")]
        status, a, b = httpbase.byte_range(rng, total)
        if status == 200:
            return 200, hdrs, data
        if status == 416:
            return 416, hdrs[:2] + [("Content-Range", f"bytes */{total}")], b""
        return 206, hdrs + [("Content-Range", f"bytes {a}-{b}/{total}")], data[a:b + 1]
