"""FakeMemcached: a memcached that misbehaves on purpose, for the shared
tier's deadline and length bounds.

    srv = FakeMemcached("trickle").start()   # 127.0.0.1, a free port
    srv.url                                   # "127.0.0.1:PORT"
    srv.requests                              # commands seen so far
    srv.stop()                                # closes every connection

Modes (every connection, every command):
  'trickle'  a get answers "VALUE key 0 N" (N: 1 MiB, within a block's bound)
             and then one byte of it every `interval` s; a store, "STORED"
             one byte at a time as slowly
  'huge'     a get answers "VALUE key 0 1000000000" and then zeros as fast
             as the client takes them
  'hang'     reads the commands, never answers
  'reset'    closes each connection with a TCP RST at its first command
The server never sends more than the client reads; stop() ends every
thread. Nothing here imports pytest.
"""
import socket
import struct
import threading
import time

MODES = ("trickle", "huge", "hang", "reset")


class FakeMemcached:
    def __init__(self, mode, interval=0.04, declared=1 << 20):
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}")
        self.mode = mode
        self.interval = interval
        self.declared = declared
        self.requests = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._conns = []
        self._sock = socket.socket()
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        self.port = self._sock.getsockname()[1]
        self._threads = []

    @property
    def url(self):
        return f"127.0.0.1:{self.port}"

    def start(self):
        self._sock.listen(64)
        self._sock.settimeout(0.2)
        t = threading.Thread(target=self._accept, name="fake-memcached", daemon=True)
        t.start()
        self._threads.append(t)
        return self

    def stop(self):
        self._stop.set()
        try:
            self._sock.close()
        except OSError:
            pass
        with self._lock:
            conns = list(self._conns)
        for c in conns:
            try:
                c.close()
            except OSError:
                pass
        for t in self._threads:
            t.join(timeout=5)

    def _accept(self):
        while not self._stop.is_set():
            try:
                c, _ = self._sock.accept()
            except OSError:
                continue
            with self._lock:
                self._conns.append(c)
            t = threading.Thread(target=self._serve, args=(c,), daemon=True)
            t.start()
            self._threads.append(t)

    def _line(self, c, buf):
        while b"\r\n" not in buf:
            try:
                d = c.recv(65536)
            except OSError:
                return None, b""
            if not d:
                return None, b""
            buf += d
        line, rest = buf.split(b"\r\n", 1)
        return line, rest

    def _drip(self, c, data):
        for i in range(len(data)):
            if self._stop.wait(self.interval):
                return False
            try:
                c.sendall(data[i:i + 1])
            except OSError:
                return False
        return True

    def _serve(self, c):
        c.settimeout(0.5)
        buf = b""
        while not self._stop.is_set():
            try:
                line, buf = self._line(c, buf)
            except socket.timeout:
                continue
            if line is None:
                return
            with self._lock:
                self.requests += 1
            parts = line.split()
            if self.mode == "reset":
                c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                c.close()
                return
            if self.mode == "hang":
                continue
            if parts and parts[0] in (b"set", b"add") and len(parts) >= 5:
                n = int(parts[4]) + 2
                while len(buf) < n and not self._stop.is_set():
                    try:
                        d = c.recv(65536)
                    except socket.timeout:
                        continue
                    except OSError:
                        return
                    if not d:
                        return
                    buf += d
                buf = buf[n:]
                if self.mode == "trickle":
                    if not self._drip(c, b"STORED\r\n"):
                        return
                else:
                    c.sendall(b"STORED\r\n")
                continue
            if parts and parts[0] == b"get" and len(parts) == 2:
                key = parts[1]
                if self.mode == "huge":
                    try:
                        c.sendall(b"VALUE " + key + b" 0 1000000000\r\n")
                        zeros = bytes(1 << 16)
                        while not self._stop.is_set():
                            c.sendall(zeros)
                    except OSError:
                        return
                    return
                head = b"VALUE " + key + b" 0 %d\r\n" % self.declared
                try:
                    c.sendall(head)
                except OSError:
                    return
                if not self._drip(c, bytes(self.declared) + b"\r\nEND\r\n"):
                    return
                continue
            try:
                c.sendall(b"ERROR\r\n")
            except OSError:
                return
