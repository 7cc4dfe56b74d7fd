"""FaultProxy: a seeded fault-injecting HTTP/1.1 proxy in front of a real
origin (nginx), for "many faults, mixed, under load" tests.

    ng = nginx(root, autoindex=False)                  # serves root + manifest
    px = FaultProxy(ng.port, seed=1, timeout=2).start()
    px.set_rates({"500": 0.05, "stall": 0.05})         # any time, from any thread
    px.set_mixed(0.05)                                 # 5% in all, every kind alike
    m = mount(px.url, {...})
    px.injected()        # {kind: faults injected so far}
    px.object_stats()    # {obj: {"requests": n, "faults": {kind: n}}}
    px.requests("d/a")   # [Req] one per GET/HEAD of that object
    px.stop()

Every request is forwarded over a keep-alive HTTP/1.1 connection of its own
client connection (one upstream connection per client connection, one
thread per client connection). Faults apply only to GETs of data objects:
the manifest (`/prestofs.manifest`) and HEADs always pass through.

Fault kinds (a GET gets at most one):

  '500'     500 Internal Server Error (small body, connection kept)
  '503'     503 Service Unavailable (small body, connection kept)
  '429'     429 Too Many Requests with `Retry-After: RETRY_AFTER` (1 s)
  'reset'   the origin's status and headers, half the body, then a TCP RST
            (SO_LINGER 0, no FIN first)
  'short'   Content-Length promises the whole body, half is sent, then the
            connection is closed normally (FIN)
  'stall'   nothing is sent for stall_s (default timeout + 1.5 s: longer
            than the client's timeout), then the connection is closed;
            stop() ends every stall at once
  'etag'    a replica with ETags of its own: the same bytes with ETag
            lie_etag(obj) (one per object, always the same); it evaluates
            If-Match against that ETag (a list naming it, or *, passes; any
            other list: 412 at once, without asking the origin)
  'range'   Range ignored: the request goes on without Range/If-Range and
            the origin's 200 with the whole object is passed on
  'trickle' the whole answer, its body in ten pieces spread over trickle_s
            (default 0.3 x timeout): slow but complete within the timeout

Which GET gets a fault: the n-th GET of (object, Range header) draws
u = random.Random(f"{seed}/{obj}/{range}/{n}").random(), compared with the
rates accumulated in KINDS order (the rates in force when it arrives). The
draw does not depend on thread scheduling, so a run is reproducible as far
as the client's requests are.

Counters: injected() per kind; object_stats() per object; requests() the
log of Req (arrival/end times, Range and If-Match asked, the fault served,
the status and the ETag sent, whether the Range covered the whole object).
errors: unexpected exceptions in the proxy (a client that hung up is not
one; client_aborts counts those); peak_connections.

Nothing here imports pytest.
"""
import hashlib
import http.client
import random
import sys
import time
from collections import Counter
from dataclasses import dataclass

from . import httpbase
from .httpbase import STATUS_FAULTS, send, send_head

MANIFEST_NAME = "prestofs.manifest"
KINDS = ("500", "503", "429", "reset", "short", "stall", "etag", "range", "trickle")
RETRY_AFTER = 1
# Not forwarded either way (RFC 9110 7.6.1), plus what we set ourselves.
_HOP = {"connection", "keep-alive", "proxy-connection", "proxy-authenticate",
        "proxy-authorization", "te", "trailer", "transfer-encoding", "upgrade", "host"}
_RESP_DROP = _HOP | {"date", "server"}
_CLIENT_GONE = (BrokenPipeError, ConnectionResetError, ConnectionAbortedError)


def lie_etag(obj):
    """The ETag the lying replica sends for obj (strong, stable)."""
    return '"lie-' + hashlib.sha1(obj.encode()).hexdigest()[:16] + '"'


@dataclass
class Req:
    seq: int
    obj: str
    method: str
    range: str       # the Range header as sent by the client, or ""
    if_match: str    # the If-Match header as sent by the client, or ""
    kind: str        # the fault served, 'ok' for none
    t_start: float   # time.monotonic() at arrival
    status: int = 0  # the status sent; 0 when none was (stall)
    etag: str = ""   # the ETag header sent, or ""
    whole: bool = False  # the range asked for covered the whole object
    t_end: float = 0.0   # 0 while the answer is still being sent

    @property
    def usable(self):
        """The answer carries the bytes asked for, whole, with an ETag
        (whichever), as prestofs's checks would take them (origin/xfer.c
        check_range: a 200 only when the whole object was asked for)."""
        if self.kind in ("ok", "etag", "trickle"):
            return self.status == 206 or (self.status == 200 and self.whole)
        if self.kind == "range":
            return self.status == 200 and self.whole
        return False


class _Handler(httpbase.Handler):
    server_version = "FaultProxy/1"
    upstream = None  # this client connection's upstream connection, once opened

    def finish(self):
        try:
            super().finish()
        except OSError:
            pass
        finally:
            if self.upstream is not None:
                self.upstream.close()


class _Server(httpbase.Server):
    request_queue_size = 256

    def handle_error(self, request, client_address):
        exc = sys.exc_info()[1]
        self.owner._note_error(exc)


class FaultProxy(httpbase.Service):
    handler_class = _Handler
    server_class = _Server
    thread_name = "fault-proxy"

    def __init__(self, upstream_port, seed=0, timeout=2.0, stall_s=None, trickle_s=None,
                 upstream_host="127.0.0.1", host="127.0.0.1"):
        super().__init__(host)  # peak_connections: client connections at once, at most
        self.upstream = (upstream_host, int(upstream_port))
        self.seed = seed
        self.stall_s = timeout + 1.5 if stall_s is None else stall_s
        self.trickle_s = 0.3 * timeout if trickle_s is None else trickle_s
        self.manifest_gets = 0
        self.client_aborts = 0
        self.errors = []
        self._rates = {}
        self._injected = Counter()
        self._objs = {}
        self._draws = Counter()  # (obj, range) -> GETs so far
        self._log = []

    # -- rates -------------------------------------------------------------
    def set_rates(self, rates=None, **more):
        """Replaces every rate: {kind: probability} (kinds left out: 0).
        The sum must be at most 1. set_rates() stops all faults."""
        r = dict(rates or {}, **more)
        for k, p in r.items():
            if k not in KINDS:
                raise ValueError(f"unknown fault kind {k!r}; kinds: {KINDS}")
            if not 0.0 <= float(p) <= 1.0:
                raise ValueError(f"rate of {k!r} must be in [0, 1], got {p}")
        if sum(r.values()) > 1.0 + 1e-9:
            raise ValueError(f"rates add up to {sum(r.values())} > 1")
        with self._lock:
            self._rates = {k: float(p) for k, p in r.items() if p > 0}

    def set_rate(self, kind, p):
        """One kind's rate, the others kept."""
        with self._lock:
            r = dict(self._rates)
        r[kind] = p
        self.set_rates(r)

    def set_mixed(self, total, kinds=KINDS):
        """`total` of the GETs faulty, shared equally by `kinds`."""
        self.set_rates({k: total / len(kinds) for k in kinds})

    def rates(self):
        with self._lock:
            return dict(self._rates)

    # -- queries -------------------------------------------------------------
    def injected(self):
        """{kind: faults injected so far} (every kind, zeros included)."""
        with self._lock:
            return {k: self._injected[k] for k in KINDS}

    def object_stats(self, obj=None):
        """{obj: {"requests": GETs, "faults": {kind: n}}}, or one object's."""
        with self._lock:
            out = {o: {"requests": s["requests"], "faults": dict(s["faults"])}
                   for o, s in self._objs.items()}
        return out.get(obj, {"requests": 0, "faults": {}}) if obj is not None else out

    def requests(self, obj=None, method="GET"):
        """The log (Req, in arrival order), of one object and/or method."""
        with self._lock:
            return httpbase.select(self._log, obj, method)

    def describe_log(self, obj=None, limit=40):
        """The request log as text, for assertion messages."""
        rs = self.requests(obj, method=None)
        t0 = rs[0].t_start if rs else 0.0
        return httpbase.log_text(rs, limit, lambda r: (
            f"#{r.seq} +{r.t_start - t0:7.3f}s {r.method} {r.obj} "
            f"range={r.range or '-'} if-match={r.if_match or '-'} {r.kind} -> "
            f"{r.status or 'no answer'} etag={r.etag or '-'} "
            + (f"({r.t_end - r.t_start:.3f}s)" if r.t_end else "(in flight)")))

    def reset_counts(self):
        with self._lock:
            self._injected.clear()
            self._objs.clear()
            self._log.clear()

    # -- internals -----------------------------------------------------------
    def _note_error(self, exc):
        with self._lock:
            if isinstance(exc, _CLIENT_GONE) or self._stopping.is_set():
                self.client_aborts += 1
            else:
                self.errors.append(repr(exc))

    def _draw(self, obj, rng):
        """The fault for this GET ('ok' for none); counts it."""
        with self._lock:
            n = self._draws[(obj, rng)]
            self._draws[(obj, rng)] = n + 1
            rates = dict(self._rates)
        kind = "ok"
        if rates:
            u = random.Random(f"{self.seed}/{obj}/{rng}/{n}").random()
            acc = 0.0
            for k in KINDS:
                acc += rates.get(k, 0.0)
                if u < acc:
                    kind = k
                    break
        with self._lock:
            s = self._objs.setdefault(obj, {"requests": 0, "faults": Counter()})
            s["requests"] += 1
            if kind != "ok":
                s["faults"][kind] += 1
                self._injected[kind] += 1
        return kind

    def _forward(self, h, method, drop=()):
        """The origin's answer (status, reason, [(k, v)], body), over this
        client connection's own keep-alive upstream connection (a reused
        one that the origin closed meanwhile is opened again, once)."""
        headers = {k: v for k, v in h.headers.items()
                   if k.lower() not in _HOP and k.lower() not in drop}
        for attempt in range(2):
            fresh = h.upstream is None
            if fresh:
                h.upstream = http.client.HTTPConnection(*self.upstream, timeout=30)
            try:
                h.upstream.request(method, h.path, headers=headers)
                resp = h.upstream.getresponse()
                body = resp.read()
                hdrs = [(k, v) for k, v in resp.getheaders() if k.lower() not in _RESP_DROP]
                if resp.will_close:
                    h.upstream.close()
                    h.upstream = None
                return resp.status, resp.reason, hdrs, body
            except (http.client.HTTPException, OSError):
                h.upstream.close()
                h.upstream = None
                if fresh or attempt:
                    raise
        raise AssertionError("not reached")

    def _serve(self, h, method):
        t0 = time.monotonic()
        path = httpbase.request_path(h)
        rng = h.headers.get("Range", "")
        if path == MANIFEST_NAME:
            with self._lock:
                self.manifest_gets += method == "GET"
        kind = self._draw(path, rng) if method == "GET" and path != MANIFEST_NAME else "ok"
        rec = Req(0, path, method, rng, h.headers.get("If-Match", ""), kind, t0)
        if path != MANIFEST_NAME:
            # Logged at arrival (a stall shows before it ends); the answer's
            # fields are filled in as it is sent.
            with self._lock:
                rec.seq = len(self._log)
                self._log.append(rec)
        try:
            self._answer(h, method, kind, path, rec)
        except _CLIENT_GONE:
            h.close_connection = True
            with self._lock:
                self.client_aborts += 1
        finally:
            rec.t_end = time.monotonic()

    def _answer(self, h, method, kind, obj, rec):
        if kind == "stall":
            self._stall(h, self.stall_s)
            return
        if kind in STATUS_FAULTS:  # a GET: the body is sent
            rec.status = STATUS_FAULTS[kind][0]
            httpbase.send_status_fault(h, kind, method, " (injected)", RETRY_AFTER)
            return
        drop = ()
        lie = lie_etag(obj)
        if kind == "etag" and rec.if_match:
            tags = [t.strip() for t in rec.if_match.split(",")]
            if "*" not in tags and lie not in tags:
                body = b"precondition failed (this replica's ETag differs)\n"
                rec.status, rec.etag = 412, lie
                send(h, 412, httpbase.TEXT + (("ETag", lie),), body, method,
                     "Precondition Failed")
                return
            drop = ("if-match",)  # its own ETag matched: the data is the same
        elif kind == "range":
            drop = ("range", "if-range")
        status, reason, hdrs, body = self._forward(h, method, drop)
        length = next((v for k, v in hdrs if k.lower() == "content-length"), "0")
        hdrs = [(k, v) for k, v in hdrs if k.lower() != "content-length"]
        if kind == "etag":
            hdrs = [(k, v) for k, v in hdrs if k.lower() != "etag"] + [("ETag", lie)]
        rec.status = status
        rec.etag = next((v for k, v in hdrs if k.lower() == "etag"), "")
        rec.whole = _covers_whole(rec.range, status, hdrs, len(body))
        if method == "HEAD":
            send_head(h, status, hdrs, length, reason)  # HEAD: the origin's length
            return
        send_head(h, status, hdrs, len(body), reason)
        if kind in ("reset", "short"):
            self._send_half(h, body, kind == "reset")
            return
        if kind == "trickle":
            step = max(1, -(-len(body) // 10))
            pause = self.trickle_s / 10
            for i in range(0, max(len(body), 1), step):
                if self._stopping.wait(pause):
                    h.close_connection = True
                    return
                h.wfile.write(body[i:i + step])
            return
        h.wfile.write(body)


def _covers_whole(rng, status, hdrs, blen):
    """The Range asked for (or none) covers the whole object."""
    if not rng:
        return True
    total = None
    for k, v in hdrs:
        if k.lower() == "content-range" and "/" in v:
            t = v.rsplit("/", 1)[1].strip()
            total = int(t) if t.isdigit() else None
    if total is None and status == 200:
        total = blen
    if total is None:
        return False
    spec = rng.strip()
    if not spec.startswith("bytes=") or "," in spec:
        return False
    a, _, b = spec[6:].partition("-")
    try:
        if a == "":
            return int(b) >= total
        return int(a) == 0 and (b == "" or int(b) >= total - 1)
    except ValueError:
        return False


# -- what prestofs's rules make of a file's answers -----------------------------

def explain_failure(proxy, obj, retries, pin_slack_s=0.05):
    """Why a read of obj may fail by design, from the proxy's log, or None.

    prestofs (man/prestofs.1, ERRORS AND RETRIES, ONE VERSION PER FILE):
    a GET of a block is tried retries+1 times, then fails (EIO); an answer
    of a version other than the pinned one (another ETag, or 412) is asked
    for once more at once, then fails; the first usable answer to come back
    pins the file's version. So a failed read is explained when:
      'budget'  some range had > retries unusable answers in a row, or
                2 answers of another version (ETag or 412) in a row, or
      'pin'     the file's first usable answer (those that ended within
                pin_slack_s of the first) carried the lying ETag and a later
                answer then carried another (or a 412).
    Returns (reason, detail) or None.
    """
    rs = sorted(proxy.requests(obj), key=lambda r: r.t_start)
    usable = sorted((r for r in rs if r.usable and r.t_end), key=lambda r: r.t_end)
    pin = None
    if usable:
        first = [r for r in usable if r.t_end <= usable[0].t_end + pin_slack_s]
        lies = [r for r in first if r.etag == lie_etag(obj)]
        pin = lies[0].etag if lies else first[0].etag
        if lies and any(r.status == 412 or (r.usable and r.etag != pin) for r in rs):
            return ("pin", f"first answer #{lies[0].seq} carried the lying ETag {pin}")
    by_range = {}
    for r in rs:
        by_range.setdefault(r.range, []).append(r)
    for rng, lst in by_range.items():
        bad = stale = 0
        for r in lst:
            if r.status == 412 or (r.usable and pin is not None and r.etag != pin):
                stale += 1
            elif r.usable:
                bad = stale = 0
                continue
            else:
                bad += 1
            if bad > retries or stale >= 2:
                return ("budget", f"range {rng or '-'}: {bad} unusable and {stale} "
                        f"other-version answers in a row (up to #{r.seq})")
    return None
