"""SwitchOrigin: an in-process HTTP/1.1 origin whose objects change version
after a set number of GETs (for "one version per file" tests).

    srv = SwitchOrigin(validator="etag").start()       # 127.0.0.1, free port
    srv.add("data.bin", old_bytes, new_bytes, switch_after=2)
    m = mount(srv.url, {...})                            # lists OLD sizes
    ...
    srv.gets("data.bin")      # GETs of that object so far
    srv.log                   # [Req(...)] one per object request
    srv.stop()

Each object has two versions, OLD (0) and NEW (1); NEW may have another
length (an object that grew). An object serves OLD for its first
`switch_after` GETs and NEW from then on (GETs of that object only are
counted, at arrival, under a lock; HEADs are not counted). set_version()
forces one version (switch_after is then ignored).

Responses: keep-alive HTTP/1.1; a GET without Range answers 200 with the
whole current version; `Range: bytes=a-b` (or `a-`, `-n`) answers 206 with
`Content-Range: bytes a-b/TOTAL`; a range starting at or past the end
answers 416 with `Content-Range: bytes */TOTAL`. HEAD answers the headers
of a 200. Validator modes (per server, or per object with add(validator=)):

  'etag'    strong ETag per version ("v1-<name>-<hash>") AND Last-Modified,
            as nginx sends both
  'weak'    weak ETag W/"..." and Last-Modified
  'lastmod' only Last-Modified (OLD and NEW one hour apart), no ETag
  'none'    neither header

Conditional requests: If-Match (a list, or *) is compared strongly with
the current version's ETag (a weak ETag never matches; no ETag never
matches) -> 412 when none matches. If-Unmodified-Since -> 412 when the
current version's Last-Modified is later than the given date, or when the
version has no Last-Modified. If-Match is evaluated first (RFC 9110 13.2.2).

The manifest (format 1) is served at /prestofs.manifest and lists every
object with its OLD size, the OLD Last-Modified as mtime and ETag '-', so
prestofs pins nothing from the listing. Any other path answers 404.

Nothing here imports pytest.
"""
import email.utils
import hashlib
import time
from dataclasses import dataclass, field

from . import httpbase

OLD, NEW = 0, 1
VERSION_NAMES = {OLD: "old", NEW: "new"}
MODES = ("etag", "weak", "lastmod", "none")
MANIFEST_NAME = "prestofs.manifest"
LASTMOD_BASE = 1_600_000_000  # OLD's Last-Modified; NEW is one hour later


@dataclass
class Req:
    """One request for an object, as served."""
    obj: str
    method: str
    range: str            # the Range header as sent, or "" (none)
    status: int
    version: object       # OLD, NEW, or None (nothing of a version served)
    if_match: str = ""
    if_unmodified_since: str = ""
    seq: int = 0          # the object's GET number (1-based), 0 for HEAD
    t_start: float = 0.0  # time.monotonic() at arrival
    t_end: float = 0.0    # after the response was written (0 until then)


@dataclass
class Obj:
    name: str
    data: list            # [old bytes, new bytes]
    switch_after: int
    validator: str
    forced: object = None  # OLD/NEW to pin a version, None: switch by count
    gets: int = 0
    etags: list = field(default_factory=list)
    lastmods: list = field(default_factory=list)


class _Handler(httpbase.Handler):
    server_version = "SwitchOrigin/1"


class SwitchOrigin(httpbase.Service):
    handler_class = _Handler
    thread_name = "switch-origin"

    def __init__(self, validator="etag", host="127.0.0.1"):
        if validator not in MODES:
            raise ValueError(f"validator must be one of {MODES}")
        super().__init__(host)
        self.validator = validator
        self.objects = {}
        self.log = []
        self.manifest_gets = 0

    # -- setup -----------------------------------------------------------
    def add(self, name, old, new, switch_after=1, validator=None):
        """Adds object `name` (a relative path, '/'-separated) with its OLD
        and NEW bytes; it switches to NEW after `switch_after` GETs."""
        mode = validator or self.validator
        if mode not in MODES:
            raise ValueError(f"validator must be one of {MODES}")
        o = Obj(name, [bytes(old), bytes(new)], switch_after, mode)
        for v in (OLD, NEW):
            h = hashlib.sha1(o.data[v]).hexdigest()[:16]
            tag = f'"v{v + 1}-{h}"'
            o.etags.append(f"W/{tag}" if mode == "weak" else tag)
            o.lastmods.append(LASTMOD_BASE + 3600 * v)
        with self._lock:
            self.objects[name] = o
        return o

    def set_switch_after(self, name, n):
        with self._lock:
            self.objects[name].switch_after = n

    def set_version(self, name, version):
        """Forces `name` to serve one version (OLD/NEW), or None to go back
        to switching by count."""
        with self._lock:
            self.objects[name].forced = version

    def reset_counts(self, name=None):
        with self._lock:
            for o in self.objects.values():
                if name is None or o.name == name:
                    o.gets = 0

    def manifest_text(self):
        return httpbase.manifest_text(
            [(o.name, len(o.data[OLD]), o.lastmods[OLD]) for o in self.objects.values()],
            LASTMOD_BASE)

    # -- queries ---------------------------------------------------------
    def gets(self, name):
        with self._lock:
            return self.objects[name].gets

    def requests(self, name=None, method="GET"):
        with self._lock:
            return httpbase.select(self.log, name, method)

    def etag(self, name, version):
        return self.objects[name].etags[version]

    def lastmod(self, name, version):
        return self.objects[name].lastmods[version]

    def describe_log(self, name=None, limit=60):
        """The request log as text, for assertion messages."""
        def line(r):
            v = "-" if r.version is None else VERSION_NAMES[r.version]
            cond = ""
            if r.if_match:
                cond += f" If-Match={r.if_match}"
            if r.if_unmodified_since:
                cond += f" If-Unmodified-Since={r.if_unmodified_since!r}"
            return (f"#{r.seq} {r.method} {r.obj} range={r.range or '-'} "
                    f"-> {r.status} {v}{cond}")
        return httpbase.log_text(self.requests(name, method=None), limit, line)

    # -- serving ---------------------------------------------------------
    def _serve(self, h, method):
        t0 = time.monotonic()
        path = httpbase.request_path(h)
        if path == MANIFEST_NAME:
            return self._serve_manifest(h, method)
        with self._lock:
            o = self.objects.get(path)
            if o is not None:
                seq = 0
                if method == "GET":
                    o.gets += 1
                    seq = o.gets
                if o.forced is not None:
                    v = o.forced
                else:
                    # HEAD sees what the next GET would get
                    n = seq if method == "GET" else o.gets + 1
                    v = OLD if n <= o.switch_after else NEW
        if o is None:
            httpbase.send_not_found(h, method)
            return
        rng = h.headers.get("Range", "")
        im = h.headers.get("If-Match", "")
        ius = h.headers.get("If-Unmodified-Since", "")
        rec = Req(o.name, method, rng, 0, None, im, ius, seq, t0)
        status, headers, body = self._answer(o, v, rng, im, ius)
        rec.status = status
        rec.version = v if 200 <= status < 300 else None
        # Logged before the answer goes out: a test that read the bytes
        # must find the request in the log (appended after the send, it
        # raced the client: test_conditional_headers[none] once saw 1 GET).
        with self._lock:
            self.log.append(rec)
        try:
            httpbase.send(h, status, headers, body, method)
        finally:
            rec.t_end = time.monotonic()

    def _answer(self, o, v, rng, im, ius):
        data = o.data[v]
        total = len(data)
        etag = o.etags[v] if o.validator in ("etag", "weak") else None
        lastmod = o.lastmods[v] if o.validator != "none" else None
        vh = []
        if etag:
            vh.append(("ETag", etag))
        if lastmod is not None:
            vh.append(("Last-Modified", httpbase.http_date(lastmod)))
        text = [("Content-Type", "text/plain")]
        if im:
            tags = [t.strip() for t in im.split(",")]
            strong = etag if etag and not etag.startswith("W/") else None
            if not ("*" in tags or (strong and strong in tags)):
                return 412, vh + text, b"precondition failed (If-Match)\n"
        elif ius:
            try:
                when = email.utils.parsedate_to_datetime(ius).timestamp()
            except (TypeError, ValueError):
                when = None  # an invalid date is ignored (RFC 9110 13.1.4)
            if when is not None and (lastmod is None or lastmod > when):
                return 412, vh + text, b"precondition failed (If-Unmodified-Since)\n"
        hdrs = vh + [("Accept-Ranges", "bytes"),
                     ("Content-Type", "application/octet-stream")]
        status, a, b = httpbase.byte_range(rng, total)
        if status == 200:  # no Range, or one not understood: ignored, as servers do
            return 200, hdrs, data
        if status == 416:
            return 416, vh + [("Content-Range", f"bytes */{total}")] + text, b""
        return 206, hdrs + [("Content-Range", f"bytes {a}-{b}/{total}")], data[a:b + 1]
