"""A memcached server for a test, and a small ASCII-protocol client to look
into it (the tests write garbage under real keys and count items).

    mc = Memcached(memory_mb=64).start()      # -I 2m unless item_max given
    mc.url                                    # "127.0.0.1:PORT"
    mc.keys()                                 # every key (lru_crawler metadump)
    mc.set(key, b"garbage"); mc.get(key)
    mc.kill9()                                # SIGKILL, like a crashed host

start() waits (bounded) until the port answers "version"; stop() kills it."""
import os
import signal
import socket
import subprocess
import time
import urllib.parse

from .nginx import free_port

MEMCACHED = "/usr/bin/memcached"


class Memcached:
    def __init__(self, memory_mb=64, item_max="2m", no_evict=False, port=None):
        self.memory_mb = memory_mb
        self.item_max = item_max
        self.no_evict = no_evict
        self.port = port or free_port()
        self.proc = None

    @property
    def url(self):
        return f"127.0.0.1:{self.port}"

    def start(self, timeout=10.0):
        cmd = [MEMCACHED, "-l", "127.0.0.1", "-p", str(self.port), "-U", "0",
               "-m", str(self.memory_mb), "-t", "2", "-c", "4096"]
        if self.item_max:
            cmd += ["-I", self.item_max]
        if self.no_evict:
            cmd.append("-M")
        if os.geteuid() == 0:
            cmd += ["-u", "root"]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("memcached exited: " + self.proc.stderr.read().decode())
            try:
                if self._cmd(b"version\r\n").startswith(b"VERSION"):
                    return self
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("memcached did not answer")

    def _conn(self):
        s = socket.create_connection(("127.0.0.1", self.port), timeout=5)
        return s

    def _cmd(self, data, until=b"\r\n", ends=None):
        with self._conn() as s:
            s.sendall(data)
            buf = b""
            while True:
                chunk = s.recv(1 << 20)
                if not chunk:
                    return buf
                buf += chunk
                if ends:
                    if any(buf.endswith(e) for e in ends):
                        return buf
                elif buf.endswith(until):
                    return buf

    def keys(self):
        out = self._cmd(b"lru_crawler metadump all\r\n", ends=(b"END\r\n",))
        ks = []
        for line in out.decode("latin-1").replace("\r\n", "\n").split("\n"):
            if line.startswith("key="):
                ks.append(urllib.parse.unquote(line.split()[0][4:]))
        return ks

    def get(self, key):
        out = self._cmd(f"get {key}\r\n".encode(), ends=(b"END\r\n",))
        if not out.startswith(b"VALUE"):
            return None
        head, rest = out.split(b"\r\n", 1)
        n = int(head.split()[3])
        return rest[:n]

    def set(self, key, value):
        out = self._cmd(f"set {key} 0 0 {len(value)}\r\n".encode() + value + b"\r\n")
        return out.startswith(b"STORED")

    def stats(self):
        out = self._cmd(b"stats\r\n", ends=(b"END\r\n",))
        st = {}
        for line in out.decode().split("\r\n"):
            p = line.split()
            if len(p) == 3 and p[0] == "STAT":
                st[p[1]] = p[2]
        return st

    def kill9(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=10)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)
