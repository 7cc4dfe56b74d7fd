"""VersionedOrigin: the torture harness's own origin. It serves a small
dataset over HTTP (a format-1 manifest) or as an S3 bucket (ListObjectsV2,
path style), remembers every version of every object it ever held, and
injects faults on object GETs when told to.

    o = VersionedOrigin(flavour="http", validator="etag").start()
    o.put("d0/a.bin", data)          # a new version (or the first)
    o.delete("d0/a.bin")
    o.versions("d0/a.bin")           # every version ever held, oldest first
    o.set_faults(["500", "reset"], 0.2, rng)   # or set_faults(None)
    o.mount_origin, o.mount_env()    # what to give prestofs
    o.stop()

Validators (whole server): 'etag' (a strong ETag from the content's
sha256, and Last-Modified), 'lastmod' (Last-Modified only; every new
version's time is at least 1 s after the one before it, over all objects,
so a change is always visible to a client), 'none' (neither header: only
a change of length can be told, by design). The manifest (HTTP) and the
listing (S3) carry each current object's size, Last-Modified and, with
'etag', its ETag.

Ranged GETs answer 206 with Content-Range; with norange=True every GET
answers 200 with the whole object, as `python3 -m http.server` does. If-Match
and If-Unmodified-Since are honoured (412), as nginx and S3 do.

Faults, drawn per object GET with probability p from the kinds given:
'500', '503', '429' (status answers), 'reset' (half the body, then an RST),
'half' (half the body, then FIN), 'stall' (no answer for stall_s seconds,
then the connection closes). Listing requests are never faulted: a mount
that cannot list fails, which is not what the harness studies.

Nothing here imports pytest.
"""
import hashlib
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, quote, unquote
from xml.sax.saxutils import escape

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))
from helpers import httpbase  # noqa: E402

BUCKET = "tort"
PREFIX = "ds"
VALIDATORS = ("etag", "lastmod", "none")
FLAVOURS = ("http", "s3")
FAULT_KINDS = ("500", "503", "429", "reset", "half", "stall")
LISTINGS = ("manifest", "autoindex")  # HTTP: prestofs.manifest, or nginx-like HTML pages


@dataclass
class Version:
    data: bytes
    etag: str       # '"<hex>"' (always computed; sent only in 'etag' mode)
    lastmod: int    # Unix seconds
    seq: int        # global order of creation


class _Handler(httpbase.Handler):
    server_version = "torture-origin/1"


class _Server(httpbase.Server):
    def handle_error(self, request, client_address):
        pass  # a client that resets (prestofs giving up on a stall) is normal here


class VersionedOrigin(httpbase.Service):
    handler_class = _Handler
    server_class = _Server
    thread_name = "torture-origin"

    def __init__(self, flavour="http", validator="etag", norange=False,
                 stall_s=2.0, host="127.0.0.1", listing="manifest"):
        super().__init__(host)
        assert listing in LISTINGS
        self.listing = listing
        assert flavour in FLAVOURS and validator in VALIDATORS
        self.flavour = flavour
        self.validator = validator
        self.norange = norange
        self.stall_s = stall_s
        self.hist = {}          # name -> [Version]; guarded by _lock
        self.cur = {}           # name -> Version (absent: deleted)
        self._seq = 0
        self._last_lm = int(time.time()) - 100000
        self._faults = None     # (kinds, p, rng)
        self.counts = {"get": 0, "list": 0, "faults": 0, "412": 0, "norange200": 0}
        self.fault_counts = {}
        self.manifest_gets = 0

    # -- what prestofs is given ---------------------------------------------
    @property
    def mount_origin(self):
        if self.flavour == "s3":
            return f"s3://{BUCKET}/{PREFIX}"
        return f"{self.url}{PREFIX}/"

    def mount_options(self):
        if self.flavour == "s3":
            return {"endpoint": self.url.rstrip("/"), "s3_path_style": True,
                    "region": "us-east-1"}
        return {}

    def mount_env(self, base_env):
        env = {k: v for k, v in base_env.items() if not k.startswith("AWS_")}
        if self.flavour == "s3":
            env.update(AWS_ACCESS_KEY_ID="TORTURE", AWS_SECRET_ACCESS_KEY="torture-secret")
        return env

    # -- the dataset -----------------------------------------------------------
    def put(self, name, data):
        with self._lock:
            self._seq += 1
            now = int(time.time())
            self._last_lm = max(now, self._last_lm + 1)
            v = Version(bytes(data), '"%s"' % hashlib.sha256(data).hexdigest()[:32],
                        self._last_lm, self._seq)
            self.hist.setdefault(name, []).append(v)
            self.cur[name] = v
            return v

    def delete(self, name):
        with self._lock:
            self.cur.pop(name, None)

    def versions(self, name):
        with self._lock:
            return list(self.hist.get(name, ()))

    def current(self):
        """{name: Version} of what the origin holds now."""
        with self._lock:
            return dict(self.cur)

    def set_faults(self, kinds, p=0.0, rng=None):
        with self._lock:
            self._faults = (list(kinds), p, rng) if kinds else None

    # -- serving ---------------------------------------------------------------
    def _draw_fault(self):
        with self._lock:
            if not self._faults:
                return None
            kinds, p, rng = self._faults
            if rng.random() >= p:
                return None
            k = rng.choice(kinds)
            self.counts["faults"] += 1
            self.fault_counts[k] = self.fault_counts.get(k, 0) + 1
            return k

    def _serve(self, h, method):
        path, _, query = h.path.partition("?")
        path = unquote(path).lstrip("/")
        if self.flavour == "s3":
            if path in (BUCKET, BUCKET + "/"):
                return self._serve_list(h, method, parse_qs(query, keep_blank_values=True))
            if not path.startswith(BUCKET + "/" + PREFIX + "/"):
                return httpbase.send_not_found(h, method)
            name = path[len(BUCKET) + len(PREFIX) + 2:]
        else:
            if self.listing == "autoindex" and (path == PREFIX or path.endswith("/")):
                return self._serve_index(h, method, path.rstrip("/"))
            if path == f"{PREFIX}/prestofs.manifest" and self.listing == "manifest":
                with self._lock:
                    self.manifest_gets += 1
                    self.counts["list"] += 1
                return httpbase.send(h, 200, httpbase.TEXT, self._manifest(), method)
            if not path.startswith(PREFIX + "/"):
                return httpbase.send_not_found(h, method)
            name = path[len(PREFIX) + 1:]
        with self._lock:
            v = self.cur.get(name)
            self.counts["get"] += method == "GET"
        if v is None:
            return httpbase.send_not_found(h, method)
        fault = self._draw_fault() if method == "GET" else None
        if fault in httpbase.STATUS_FAULTS:
            return httpbase.send_status_fault(h, fault, method)
        if fault == "stall":
            return self._stall(h, self.stall_s)
        hdrs = [("Content-Type", "application/octet-stream"),
                ("Last-Modified", httpbase.http_date(v.lastmod))]
        if self.validator == "none":
            hdrs = hdrs[:1]
        if self.validator == "etag":
            hdrs.append(("ETag", v.etag))
        if self._precondition_failed(h, v):
            with self._lock:
                self.counts["412"] += 1
            return httpbase.send(h, 412, httpbase.TEXT, b"precondition failed\n", method)
        total = len(v.data)
        rng = h.headers.get("Range")
        status, a, b = httpbase.byte_range(rng, total) if total else (200, 0, -1)
        if self.norange and status != 200:
            status, a, b = 200, 0, total - 1
            with self._lock:
                self.counts["norange200"] += 1
        if status == 416:
            return httpbase.send(h, 416, [("Content-Range", f"bytes */{total}")] + hdrs[1:],
                                 b"", method)
        body = v.data[a:b + 1]
        if status == 206:
            hdrs.append(("Content-Range", f"bytes {a}-{b}/{total}"))
        if fault in ("reset", "half") and method == "GET" and len(body) > 1:
            httpbase.send_head(h, status, hdrs, len(body))
            return self._send_half(h, body, fault == "reset")
        httpbase.send(h, status, hdrs, body, method)

    def _precondition_failed(self, h, v):
        im = h.headers.get("If-Match")
        if im is not None:
            if im.strip() == "*":
                return False
            tags = [t.strip() for t in im.split(",")]
            return self.validator != "etag" or v.etag not in tags
        ius = h.headers.get("If-Unmodified-Since")
        if ius is not None:
            import email.utils
            try:
                t = email.utils.parsedate_to_datetime(ius).timestamp()
            except (TypeError, ValueError):
                return False
            return self.validator == "none" or v.lastmod > t
        return False

    # -- listings --------------------------------------------------------------
    def _entries(self):
        with self._lock:
            return sorted(self.cur.items())

    def _manifest(self):
        lines = ["#prestofs-manifest 1"]
        dirs = set()
        for name, v in self._entries():
            parts = name.split("/")
            for i in range(1, len(parts)):
                dirs.add("/".join(parts[:i]) + "/")
            etag = v.etag if self.validator == "etag" else "-"
            mtime = v.lastmod if self.validator != "none" else 0
            lines.append(f"{name}\t{len(v.data)}\t{mtime}\t{etag}")
        for d in sorted(dirs):
            lines.append(f"{d}\t0\t0\t-")
        return ("\n".join(lines) + "\n").encode()

    def _serve_index(self, h, method, path):
        """An nginx autoindex page (exact sizes, minute-resolution dates) of
        the directory `path` ("ds" or "ds/a/b"); 404 when it holds nothing."""
        with self._lock:
            self.counts["list"] += 1
        rel = path[len(PREFIX):].lstrip("/")
        base = rel + "/" if rel else ""
        files, dirs = {}, set()
        for name, v in self._entries():
            if not name.startswith(base):
                continue
            rest = name[len(base):]
            if "/" in rest:
                dirs.add(rest.split("/", 1)[0])
            else:
                files[rest] = v
        if not files and not dirs and rel:
            return httpbase.send_not_found(h, method)
        lines = [f"<html><head><title>Index of /{path}/</title></head><body>",
                 f"<h1>Index of /{path}/</h1><hr><pre><a href=\"../\">../</a>"]
        for d in sorted(dirs):
            lines.append(f'<a href="{quote(d)}/">{escape(d)}/</a>'
                         f'{" " * 20}01-Jan-2024 00:00{" " * 20}-')
        for n, v in sorted(files.items()):
            when = time.strftime("%d-%b-%Y %H:%M", time.gmtime(v.lastmod))
            lines.append(f'<a href="{quote(n)}">{escape(n)}</a>'
                         f'{" " * 20}{when}{" " * 10}{len(v.data)}')
        lines.append("</pre><hr></body></html>")
        body = ("\n".join(lines) + "\n").encode()
        httpbase.send(h, 200, [("Content-Type", "text/html")], body, method)

    def _serve_list(self, h, method, q):
        with self._lock:
            self.counts["list"] += 1
        prefix = q.get("prefix", [""])[0]
        delim = q.get("delimiter", [""])[0]
        after = q.get("start-after", [""])[0]
        token = q.get("continuation-token", [""])[0]
        if token:
            after = max(after, token)
        keys = [(f"{PREFIX}/{n}", v) for n, v in self._entries()]
        keys = [(k, v) for k, v in keys if k.startswith(prefix) and k > after]
        contents, prefixes = [], []
        for k, v in keys:
            if delim:
                rest = k[len(prefix):]
                if delim in rest:
                    cp = prefix + rest.split(delim, 1)[0] + delim
                    if cp not in prefixes:
                        prefixes.append(cp)
                    continue
            contents.append((k, v))
        out = ['<?xml version="1.0" encoding="UTF-8"?>',
               '<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">',
               f"<Name>{BUCKET}</Name><Prefix>{escape(prefix)}</Prefix>",
               f"<KeyCount>{len(contents) + len(prefixes)}</KeyCount>",
               "<MaxKeys>1000</MaxKeys><IsTruncated>false</IsTruncated>"]
        for k, v in contents:
            lm = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(v.lastmod))
            out.append(f"<Contents><Key>{escape(k)}</Key><LastModified>{lm}</LastModified>"
                       f"<ETag>{escape(v.etag)}</ETag><Size>{len(v.data)}</Size>"
                       "<StorageClass>STANDARD</StorageClass></Contents>")
        for cp in prefixes:
            out.append(f"<CommonPrefixes><Prefix>{escape(cp)}</Prefix></CommonPrefixes>")
        out.append("</ListBucketResult>")
        body = "".join(out).encode()
        httpbase.send(h, 200, [("Content-Type", "application/xml")], body, method)

