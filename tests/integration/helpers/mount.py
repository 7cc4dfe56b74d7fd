"""Run a prestofs mount for a test, the demo or the benchmark.

    with Mount("/data", tmp / "mnt", {"ram_size": "64M", "timeout": 1}) as m:
        data = (m.path / "file").read_bytes()
        print(m.stats()["origin"]["requests"])

Mount.start() runs `prestofs -f ORIGIN MOUNTPOINT -o OPTS` with stdout and
stderr going to a log file, and waits (bounded) until the mountpoint shows up
in /proc/self/mounts; if the daemon exits first, or the deadline passes, it
raises MountError carrying the daemon's output.

Mount.stop() always unmounts with `fusermount3 -u` (retrying while busy; as a
last resort it aborts the FUSE connection and lazy-unmounts), waits for the
daemon to exit, and returns a list of problems: a non-zero or signalled exit,
or stderr lines at ERROR level (prestofs's "prestofs: ERROR: ..." and
sanitizer reports) that do not match a pattern given to allow_errors().
check_stop() raises MountError when that list is not empty.
"""
import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

from . import prestofs_binary

# Daemon stderr lines that fail a test unless allowed.
ERROR_RE = re.compile(
    r"^prestofs: ERROR: "          # util/log.c, level ERROR
    r"|ERROR: AddressSanitizer"    # ASan
    r"|ERROR: LeakSanitizer"
    r"|runtime error: "            # UBSan
    r"|^==\d+==ERROR"
    r"|ThreadSanitizer"
)


class MountError(Exception):
    pass


def _unescape_mount_field(s):
    # /proc/self/mounts escapes space, tab, newline and backslash as \ooo.
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), s)


def mount_entry(path):
    """The /proc/self/mountinfo fields of the mount at path, or None.
    Never touches the mountpoint itself (that could hang on a stuck daemon)."""
    target = os.path.abspath(str(path))
    with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as f:
        for line in f:
            fields = line.split()
            if _unescape_mount_field(fields[4]) == target:
                return fields
    return None


def is_mounted(path):
    return mount_entry(path) is not None


def abort_connection(path):
    """Aborts the FUSE connection of the mount at path (unblocks every
    request waiting on the daemon). Returns True if an abort file was written."""
    e = mount_entry(path)
    if e is None:
        return False
    minor = e[2].split(":")[1]
    ctl = Path("/sys/fs/fuse/connections")
    if not (ctl / minor).exists():
        subprocess.run(["mount", "-t", "fusectl", "fusectl", str(ctl)],
                       capture_output=True, timeout=10)
    try:
        (ctl / minor / "abort").write_text("1")
        return True
    except OSError:
        return False


def format_options(options):
    """dict {k: v} (True → bare flag, None/False → omitted), list of "k=v"
    strings, or one "a=1,b=2" string → "a=1,b=2"."""
    if options is None:
        return ""
    if isinstance(options, str):
        return options
    if isinstance(options, dict):
        parts = []
        for k, v in options.items():
            if v is None or v is False:
                continue
            parts.append(k if v is True else f"{k}={v}")
        return ",".join(parts)
    return ",".join(str(o) for o in options)


class Mount:
    """One prestofs daemon in the foreground (-f) and its mountpoint.

    origin      - anything prestofs accepts as ORIGIN (path or URL)
    mountpoint  - created if missing
    options     - see format_options(); passed as one `-o` argument
    binary      - default: $PRESTOFS or build/prestofs
    log_path    - where stdout+stderr go (default: beside the mountpoint)
    env         - extra environment variables for the daemon
    allow_errors- regexes; ERROR-level stderr lines matching one are allowed
    """

    _seq = 0

    def __init__(self, origin, mountpoint, options=None, *, binary=None,
                 extra_args=(), log_path=None, env=None, ready_timeout=20.0,
                 stop_timeout=20.0, allow_errors=()):
        self.origin = str(origin)
        self.path = Path(mountpoint)
        self.options = format_options(options)
        self.binary = Path(binary) if binary else prestofs_binary()
        self.extra_args = list(extra_args)
        Mount._seq += 1
        self.log_path = Path(log_path) if log_path else \
            self.path.parent / f"{self.path.name}.prestofs-{Mount._seq}.log"
        self.env = dict(os.environ, **(env or {}))
        self.ready_timeout = ready_timeout
        self.stop_timeout = stop_timeout
        self._allowed = [re.compile(p) for p in allow_errors]
        self.proc = None
        self.returncode = None
        self._stopped = False

    # -- lifecycle -------------------------------------------------------
    def argv(self):
        argv = [str(self.binary), "-f", self.origin, str(self.path)]
        if self.options:
            argv += ["-o", self.options]
        return argv + self.extra_args

    def start(self):
        if not self.binary.exists():
            raise MountError(f"prestofs binary not found: {self.binary} "
                             "(build it, or set PRESTOFS)")
        self.path.mkdir(parents=True, exist_ok=True)
        if is_mounted(self.path):
            raise MountError(f"{self.path} is already a mountpoint")
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(self.argv(), stdin=subprocess.DEVNULL,
                                     stdout=self._log, stderr=subprocess.STDOUT,
                                     env=self.env, start_new_session=True)
        deadline = time.monotonic() + self.ready_timeout
        while True:
            if is_mounted(self.path):
                return self
            rc = self.proc.poll()
            if rc is not None:
                self.returncode = rc
                self._stopped = True
                self._log.close()
                raise MountError(f"prestofs exited with {rc} before mounting:\n"
                                 f"  argv: {self.argv()}\n{self.stderr_text()}")
            if time.monotonic() > deadline:
                self.proc.kill()
                self.proc.wait(10)
                self._stopped = True
                self._log.close()
                raise MountError(f"not mounted after {self.ready_timeout}s:\n"
                                 f"  argv: {self.argv()}\n{self.stderr_text()}")
            time.sleep(0.02)

    def unmount(self, busy_timeout=5.0):
        """fusermount3 -u, retried while the mount is busy. Returns the last
        fusermount3 message on failure, None on success."""
        deadline = time.monotonic() + busy_timeout
        msg = None
        while is_mounted(self.path):
            r = subprocess.run(["fusermount3", "-u", str(self.path)],
                               capture_output=True, text=True, timeout=30)
            if r.returncode == 0:
                return None
            msg = r.stderr.strip()
            if time.monotonic() > deadline:
                return msg
            time.sleep(0.1)
        return msg if is_mounted(self.path) else None

    def stop(self):
        """Unmounts and waits for the daemon. Idempotent. Returns a list of
        problems (empty: clean)."""
        problems = []
        if self._stopped:
            return problems
        self._stopped = True
        msg = self.unmount()
        if msg is not None:
            problems.append(f"fusermount3 -u failed: {msg}; aborting the connection")
            abort_connection(self.path)
            subprocess.run(["fusermount3", "-u", "-z", str(self.path)],
                           capture_output=True, timeout=30)
        try:
            self.returncode = self.proc.wait(self.stop_timeout)
        except subprocess.TimeoutExpired:
            problems.append(f"daemon still running {self.stop_timeout}s after unmount; killed")
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.returncode = self.proc.wait(10)
        self._log.close()
        if self.returncode != 0:
            how = (f"signal {-self.returncode}" if self.returncode < 0
                   else f"status {self.returncode}")
            problems.append(f"daemon exited with {how}")
        bad = self.unexpected_errors()
        if bad:
            problems.append("unexpected ERROR lines on daemon stderr:\n  " +
                            "\n  ".join(bad))
        return problems

    def check_stop(self):
        problems = self.stop()
        if problems:
            raise MountError("; ".join(problems) + "\n--- daemon output ---\n" +
                             self.stderr_text())

    def __enter__(self):
        return self.start()

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.check_stop()
        else:
            self.stop()
        return False

    # -- inspection ------------------------------------------------------
    def allow_errors(self, *patterns):
        """ERROR-level stderr lines matching any of these regexes are expected."""
        self._allowed += [re.compile(p) for p in patterns]

    def stderr_text(self, limit=20000):
        try:
            data = self.log_path.read_bytes()
        except OSError:
            return ""
        text = data.decode("utf-8", "replace")
        return text if len(text) <= limit else "...\n" + text[-limit:]

    def error_lines(self):
        return [l for l in self.stderr_text(10**7).splitlines() if ERROR_RE.search(l)]

    def unexpected_errors(self):
        return [l for l in self.error_lines()
                if not any(p.search(l) for p in self._allowed)]

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stats(self):
        """The parsed MOUNT/.prestofs/stats."""
        fd = os.open(self.path / ".prestofs" / "stats", os.O_RDONLY)
        try:
            chunks = []
            while True:
                b = os.read(fd, 1 << 16)
                if not b:
                    break
                chunks.append(b)
        finally:
            os.close(fd)
        return json.loads(b"".join(chunks))
