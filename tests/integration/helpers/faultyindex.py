"""FaultyIndex: a small HTTP origin that serves a directory the way nginx's
autoindex does with `autoindex_exact_size off` (sizes shown as "1.2K", or
"-"), so prestofs must send a HEAD per file, and that can make chosen
files' answers faulty.

  srv = FaultyIndex(root, faults={"d/bad.bin": "head-no-length"}).start()
  srv.url            -> "http://127.0.0.1:PORT/"
  srv.count("HEAD", "d/bad.bin")
  srv.stop()

Faults (per relative file path):
  head-no-length  HEAD answers 200 without Content-Length (GET is normal)
  head-500        HEAD answers 500 every time
  head-404        HEAD answers 404 (the index still lists the file)
  size:TEXT       the index shows TEXT as the size (e.g. an exact, absurd
                  byte count); HEAD and GET are normal

GET of a file honours one "bytes=A-B" range (206 with Content-Range) and
sends ETag and Last-Modified, like a static file server. prestofs.manifest
is never served (404), so prestofs crawls the index. Threads: one per
connection (ThreadingHTTPServer); counters are guarded by a lock.
Nothing here imports pytest.
"""
import html
import os
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from . import httpbase

FAULTS = ("head-no-length", "head-500", "head-404")


def rounded(n):
    """nginx's autoindex_exact_size off: "-" is for directories; files get
    K/M/G rounded, bytes below 1 KiB as is. Here: always a unit, so no
    file ever has an exact size in the index."""
    for unit, shift in (("G", 30), ("M", 20), ("K", 10)):
        if n >= 1 << shift:
            return f"{n / (1 << shift):.1f}{unit}"
    return f"{max(n, 1) / 1024:.1f}K"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "faultyindex"

    def log_message(self, fmt, *args):  # quiet
        pass

    def _rel(self):
        path = urllib.parse.urlsplit(self.path).path
        return urllib.parse.unquote(path).lstrip("/")

    def _count(self):
        srv = self.server.owner
        with srv.lock:
            key = (self.command, self._rel())
            srv.counts[key] = srv.counts.get(key, 0) + 1

    def _send(self, code, headers, body=b""):
        self.send_response(code)
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD" and body:
            self.wfile.write(body)

    def _not_found(self):
        body = b"<html><body>404 Not Found</body></html>\n"
        self._send(404, [("Content-Type", "text/html"),
                         ("Content-Length", str(len(body)))], body)

    def _index(self, d, rel):
        lines = ['<html><head><title>Index of /%s</title></head><body>' % html.escape(rel),
                 '<h1>Index of /%s</h1><hr><pre><a href="../">../</a>' % html.escape(rel)]
        for e in sorted(os.scandir(d), key=lambda e: e.name):
            st = e.stat()
            when = time.strftime("%d-%b-%Y %H:%M", time.gmtime(st.st_mtime))
            name = e.name + ("/" if e.is_dir() else "")
            frel = (rel + e.name) if rel else e.name
            size = "-" if e.is_dir() else rounded(st.st_size)
            fault = self.server.owner.faults.get(frel, "")
            if fault.startswith("size:"):
                size = fault[5:]
            lines.append('<a href="%s">%s</a>%s %s %20s' % (
                urllib.parse.quote(name), html.escape(name[:50]),
                " " * max(1, 51 - len(name)), when, size))
        lines.append("</pre><hr></body></html>\n")
        body = "\n".join(lines).encode()
        self._send(200, [("Content-Type", "text/html"),
                         ("Content-Length", str(len(body)))], body)

    def _file(self, p, rel):
        fault = self.server.owner.faults.get(rel, "")
        st = p.stat()
        lm = httpbase.http_date(st.st_mtime)
        etag = '"%x-%x"' % (int(st.st_mtime), st.st_size)
        base = [("Last-Modified", lm), ("ETag", etag), ("Accept-Ranges", "bytes"),
                ("Content-Type", "application/octet-stream")]
        if self.command == "HEAD":
            if fault == "head-500":
                return self._send(500, [("Content-Length", "0")])
            if fault == "head-404":
                return self._not_found()
            if fault == "head-no-length":
                return self._send(200, base)
            return self._send(200, base + [("Content-Length", str(st.st_size))])
        data = p.read_bytes()
        rng = self.headers.get("Range")
        if rng and rng.startswith("bytes="):
            a, _, b = rng[6:].partition("-")
            a = int(a)
            b = min(int(b) if b else len(data) - 1, len(data) - 1)
            if a >= len(data) or a > b:
                return self._send(416, [("Content-Range", f"bytes */{len(data)}"),
                                        ("Content-Length", "0")])
            body = data[a:b + 1]
            return self._send(206, base + [("Content-Range", f"bytes {a}-{b}/{len(data)}"),
                                           ("Content-Length", str(len(body)))], body)
        self._send(200, base + [("Content-Length", str(len(data)))], data)

    def _serve(self):
        self._count()
        rel = self._rel()
        root = self.server.owner.root
        p = (root / rel).resolve()
        if (root not in p.parents and p != root) or rel.endswith("prestofs.manifest"):
            return self._not_found()
        if p.is_dir():
            if rel and not rel.endswith("/"):
                return self._send(301, [("Location", "/" + urllib.parse.quote(rel) + "/"),
                                        ("Content-Length", "0")])
            return self._index(p, rel)
        if p.is_file():
            return self._file(p, rel)
        return self._not_found()

    do_GET = _serve
    do_HEAD = _serve


class _Server(ThreadingHTTPServer):
    # Connections are not tracked: stop() leaves keep-alive ones open.
    daemon_threads = True


class FaultyIndex(httpbase.Service):
    handler_class = _Handler
    server_class = _Server
    thread_name = "faultyindex"

    def __init__(self, root, faults=None):
        super().__init__()
        self.root = Path(root).resolve()
        self.faults = dict(faults or {})
        for f in self.faults.values():
            assert f in FAULTS or f.startswith("size:"), f
        self.lock = self._lock
        self.counts = {}

    def count(self, method, rel):
        with self.lock:
            return self.counts.get((method, rel), 0)
