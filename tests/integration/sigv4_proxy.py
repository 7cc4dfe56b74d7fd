"""A reverse proxy that checks AWS SigV4 signatures before forwarding.

s3rver does not check V4 signatures, so tests put this in front of it:

    p = SigV4Proxy(upstream_port, access_key, secret_key, region="us-east-1",
                   session_token=None, allow_unsigned=False).start()
    ... point prestofs at p.url ...
    assert p.rejected == 0 and p.accepted > 0
    p.stop()

For each request it recomputes the signature independently with botocore's
S3SigV4Auth (same credentials, the request's X-Amz-Date and exactly the
headers named in SignedHeaders) and answers 403 SignatureDoesNotMatch on
any mismatch. It is stricter than S3 on one point, on purpose: the path and
query must be sent already in SigV4 canonical form (RFC 3986 encoding,
parameters sorted), because curl 7.88 signs them exactly as sent. It also
requires host, x-amz-date and x-amz-content-sha256 (and
x-amz-security-token, with its expected value, when a session token is
configured) to be signed. Counters: accepted, rejected, unsigned; the
reasons for rejections (first 50) in `reasons`; every forwarded request
target in `targets` (first 10000).
"""
import hmac
import http.client
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import quote, unquote

from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

EMPTY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
AUTH_RE = re.compile(
    r"AWS4-HMAC-SHA256 Credential=([^/,]+)/(\d{8})/([^/,]+)/s3/aws4_request,"
    r"\s*SignedHeaders=([a-z0-9;-]+),\s*Signature=([0-9a-f]{64})$")


def canonical_path(path):
    return quote(unquote(path), safe="/~")


def canonical_query(query):
    if not query:
        return ""
    pairs = []
    for part in query.split("&"):
        k, _, v = part.partition("=")
        pairs.append((quote(unquote(k), safe="-_.~"),
                      quote(unquote(v), safe="-_.~")))
    return "&".join(f"{k}={v}" for k, v in sorted(pairs))


class SigV4Proxy:
    def __init__(self, upstream_port, access_key, secret_key, region="us-east-1",
                 session_token=None, allow_unsigned=False):
        self.upstream_port = upstream_port
        self.access_key = access_key
        self.secret_key = secret_key
        self.region = region
        self.session_token = session_token
        self.allow_unsigned = allow_unsigned
        self.lock = threading.Lock()
        self.accepted = 0
        self.rejected = 0
        self.unsigned = 0
        self.reasons = []
        self.targets = []
        self.server = None
        self.thread = None

    @property
    def port(self):
        return self.server.server_address[1]

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"

    def _count(self, field, target, reason=None):
        with self.lock:
            setattr(self, field, getattr(self, field) + 1)
            if reason is not None and len(self.reasons) < 50:
                self.reasons.append(f"{target}: {reason}")
            if field != "rejected" and len(self.targets) < 10000:
                self.targets.append(target)

    def check(self, method, target, headers):
        """None if the request is correctly signed, else the reason."""
        auth = headers.get("Authorization")
        m = AUTH_RE.match(auth or "")
        if not m:
            return "malformed Authorization header"
        akid, day, region, signed, sig = m.groups()
        if akid != self.access_key:
            return f"access key {akid!r} unexpected"
        if region != self.region:
            return f"region {region!r} unexpected"
        amzdate = headers.get("X-Amz-Date", "")
        if not re.fullmatch(r"\d{8}T\d{6}Z", amzdate) or amzdate[:8] != day:
            return "X-Amz-Date missing or not matching the credential scope"
        names = signed.split(";")
        if names != sorted(names):
            return "SignedHeaders not sorted"
        need = ["host", "x-amz-date", "x-amz-content-sha256"]
        if self.session_token is not None:
            need.append("x-amz-security-token")
            if headers.get("X-Amz-Security-Token") != self.session_token:
                return "X-Amz-Security-Token missing or wrong"
        for n in need:
            if n not in names:
                return f"{n} not signed"
        for n in names:
            if headers.get(n) is None:
                return f"signed header {n} absent"
        if method in ("GET", "HEAD") and headers.get("x-amz-content-sha256") not in (
                "UNSIGNED-PAYLOAD", EMPTY_SHA256):
            return "x-amz-content-sha256 is neither UNSIGNED-PAYLOAD nor empty"
        path, _, query = target.partition("?")
        if path != canonical_path(path):
            return f"path not in canonical encoding (want {canonical_path(path)})"
        if query != canonical_query(query):
            return f"query not canonical (want {canonical_query(query)})"
        req = AWSRequest(method=method, url=f"http://{headers['host']}{target}",
                         headers={n: headers.get_all(n)[0] if len(headers.get_all(n)) == 1
                                  else ",".join(headers.get_all(n)) for n in names})
        req.context["timestamp"] = amzdate
        signer = S3SigV4Auth(Credentials(akid, self.secret_key, self.session_token),
                             "s3", region)
        canonical = signer.canonical_request(req)
        want = signer.signature(signer.string_to_sign(req, canonical), req)
        if not hmac.compare_digest(want, sig):
            return "signature mismatch"
        return None

    def start(self):
        proxy = self
        local = threading.local()

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # else 40 ms stalls per reply

            def log_message(self, *args):
                pass

            def _reply(self, status, body, headers=()):
                self.send_response(status)
                for k, v in headers:
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)

            def _handle(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                if self.headers.get("Authorization") is None:
                    if not proxy.allow_unsigned:
                        proxy._count("rejected", self.path, "unsigned request")
                        return self._reply(403, b"<Error><Code>AccessDenied</Code></Error>")
                    proxy._count("unsigned", self.path)
                else:
                    reason = proxy.check(self.command, self.path, self.headers)
                    if reason:
                        proxy._count("rejected", self.path, reason)
                        return self._reply(
                            403, b"<Error><Code>SignatureDoesNotMatch</Code></Error>",
                            [("Content-Type", "application/xml")])
                    proxy._count("accepted", self.path)
                conn = getattr(local, "conn", None)
                if conn is None:
                    conn = local.conn = http.client.HTTPConnection(
                        "127.0.0.1", proxy.upstream_port, timeout=30)
                hdrs = {k: v for k, v in self.headers.items()
                        if k.lower() not in ("connection", "keep-alive")}
                try:
                    conn.request(self.command, self.path, body=body, headers=hdrs)
                    r = conn.getresponse()
                    data = r.read()
                except (OSError, http.client.HTTPException):
                    local.conn = None
                    conn.close()
                    return self._reply(502, b"upstream failed")
                skip = ("connection", "keep-alive", "transfer-encoding", "content-length")
                self._reply(r.status, data,
                            [(k, v) for k, v in r.getheaders() if k.lower() not in skip])

            do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = _handle

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever,
                                       kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()
        return self

    def stop(self):
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.thread.join(10)
            self.server = None
