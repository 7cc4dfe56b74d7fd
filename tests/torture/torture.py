#!/usr/bin/python3
"""prestofs torture harness: random operating points, every byte judged.

From a seed, plan.py draws a world (HTTP or S3 origin, its validator, a
small dataset with two JPEGs) and a list of steps (mounts with drawn
options, origin changes, faults, kill -9, a full SSD disk, readers). This
file runs them against a real prestofs mount of origin.py's
VersionedOrigin, which remembers every version it ever held, and judges:

  wrong_bytes  a successful read whose bytes are no single version's
  short        fewer bytes than the file's size (or the range) asked for,
               unless an error was allowed for that file: the kernel then
               returns the bytes before the FUSE request that failed
  mixed_mount  two successful reads of one file in one mount that no one
               version explains (one version per file, per mount)
  error        an error where no step allowed one (allowed: a fault window
               and its tail, an origin change since the mount's listing, a
               name the listing does not hold, a file that failed before in
               this mount, a listing clash)
  slow         a read syscall longer than the documented bound
               2 x ((retries+1) x timeout + retries x 2 s) + 3 s
  rss          daemon peak RSS over prestofs.conf(5) MEMORY's formula
  exit         a daemon not gone 2 s after fusermount3 -u
  crash        a daemon that died, or a sanitizer report
  mount_failed a mount that failed
With --factor F (CI: 3) the time and memory bounds are multiplied by F.
With validator 'none' a same-size change is undetectable by design: a
read mixing versions of one size is counted as "undetectable", not failed.

Known findings (known.py) are failures already filed with the issue that
fixes them: printed as such and not counted in the exit status.

Usage (scripts/torture wraps this):
  torture.py --minutes N [--seed S]    random seeds for N minutes
  torture.py --ci                      fixed seeds 1, 2, ... for 2 minutes
  torture.py --replay SEED [--tries N] the seed's steps, up to N times
  torture.py --minimize SEED           drop steps while the failure stays
  torture.py --plan FILE               a step list (JSON) written by --minimize
Exit status: 0 when nothing failed or only known findings; 1 otherwise.
"""
import argparse
import collections
import io
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "integration"))

import known  # noqa: E402
import origin as torigin  # noqa: E402
import plan as tplan  # noqa: E402
from helpers.memcached import Memcached  # noqa: E402
from helpers.mount import Mount, MountError  # noqa: E402

KiB, MiB = 1024, 1024 * 1024
CHUNK = 128 * KiB
TMPFS_SIZE = 40 * MiB
SANITIZED = bool(os.environ.get("PRESTOFS_SANITIZED"))
CRASH_MARKS = ("AddressSanitizer", "LeakSanitizer", "runtime error: ", "ThreadSanitizer")
# Counters worth seeing at the end (path prefixes in .prestofs/stats).
COUNTER_KEYS = ("ssd.", "shared.", "origin.", "ram.", "prefetch.", "listing.", "served.",
                "epoch.")


def parse_size(s, default):
    if s is None:
        return default
    mult = {"K": KiB, "M": MiB, "G": 1024 * MiB}
    return int(s[:-1]) * mult[s[-1]] if s[-1] in mult else int(s)


# -- contents ------------------------------------------------------------------

def blob(seed, name, k, size):
    return random.Random(f"{seed}:{name}:{k}").randbytes(size)


def jpeg(seed, name, k, big):
    import numpy as np
    from PIL import Image
    r = np.random.default_rng(abs(hash((seed, name, k))) % (1 << 32))
    w, h = (1000 + 8 * (k % 5), 1000) if big else (64 + 8 * (k % 5), 48)
    arr = r.integers(0, 256, (h, w, 3), dtype=np.uint8)
    if not big:  # something a little smoother than noise
        arr = (arr // 64 * 64).astype(np.uint8)
    b = io.BytesIO()
    Image.fromarray(arr).save(b, "JPEG", quality=95)
    return b.getvalue()


def view_ref(spec, data):
    """What MOUNT/.prestofs/views/SPEC/x.jpg must hold for a source `data`
    (PIL's decode; the views are bit-identical to it, test_view_exact)."""
    import numpy as np
    from PIL import Image
    img = Image.open(io.BytesIO(data)).convert("RGB")
    buf = io.BytesIO()
    if spec == "decode":
        img.save(buf, "PPM")
    elif spec == "fmt=npy":
        np.save(buf, np.asarray(img))
    else:
        raise ValueError(spec)
    return buf.getvalue()


# -- failures ------------------------------------------------------------------

class Failure(Exception):
    def __init__(self, what, detail, **ctx):
        super().__init__(f"{what}: {detail}")
        self.what, self.detail, self.ctx = what, detail, ctx
        self.known = None   # (issue, label) once classified
        self.step_index = None
        self.step = None

    def signature(self):
        return (self.what, self.known[0] if self.known else None)


class Cut(Exception):
    """The run's deadline passed in the middle of a step."""


# -- one run of one plan -------------------------------------------------------

class Runner:
    def __init__(self, seed, world, steps, workdir, factor=1.0, deadline=None, log=print):
        self.seed, self.world, self.steps = seed, world, steps
        self.factor = factor
        self.deadline = deadline
        self.log = log
        self.work = Path(tempfile.mkdtemp(prefix=f"seed{seed}-", dir=workdir))
        self.stats = collections.Counter()      # step kinds, outcomes
        self.optvals = collections.Counter()    # key=value drawn
        self.counters = collections.Counter()   # daemon counters summed over mounts
        self.findings = []                      # Failure
        self.origin = None
        self.mc = None
        self.m = None
        self.tmpfs = None
        self._view_refs = {}

    # -- setup and teardown ------------------------------------------------------
    def setup(self):
        w = self.world
        self.origin = torigin.VersionedOrigin(w["flavour"], w["validator"],
                                              stall_s=w["stall_s"],
                                              listing=w.get("listing", "manifest")).start()
        self.stats[f"world:{w['flavour']}/{w['validator']}/{w.get('listing', 'manifest')}"] += 1
        for name, v in sorted(w["files"].items()):
            if name in tplan.JPEG_NAMES:
                self.origin.put(name, jpeg(self.seed, name, 0, v == 1))
            else:
                self.origin.put(name, blob(self.seed, name, 0, v))
        self.tmpfs = self.work / "disk"
        self.tmpfs.mkdir()
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={TMPFS_SIZE},mode=0755",
                            "tmpfs", str(self.tmpfs)], capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"cannot mount a tmpfs for the SSD tier: {r.stderr.strip()}")
        self.ssd_dir = self.tmpfs / "ssd"
        self.ballast = self.tmpfs / "ballast"
        if shutil.which("memcached") or Path("/usr/bin/memcached").exists():
            self.mc = Memcached(memory_mb=64).start()
        self.mnt = self.work / "mnt"
        # Per-mount state (see mount()).
        self.opts = None
        self.listing = {}
        self.pins = {}
        self.changed = set()
        self.failed = set()
        self.excused = set()
        self.fault_until = 0.0
        self.faults_on = False
        # What the SSD directory holds: (block_size) of every mount since a wipe.
        self.ssd_layouts = set()
        self.saved_listing = {}
        self.faulted_mount = False
        self.clashes = set()
        self.range_on = True
        self.mount_seq = 0
        self.mount_start_seq = 0

    def teardown(self):
        if self.m is not None:
            try:
                self.m.stop()
            except Exception:
                pass
            self.m = None
        if self.origin:
            self.origin.stop()
        if self.mc:
            if self.mc.proc and self.mc.proc.poll() is None:
                os.kill(self.mc.proc.pid, signal.SIGCONT)
            self.mc.stop()
        if self.tmpfs is not None:
            subprocess.run(["umount", "-l", str(self.tmpfs)], capture_output=True)
        shutil.rmtree(self.work, ignore_errors=True)

    # -- the loop ----------------------------------------------------------------
    def run(self):
        """Runs every step; returns the list of findings (the first
        unexpected one ends the run)."""
        self.setup()
        try:
            for i, step in enumerate(self.steps):
                if self.deadline and time.monotonic() > self.deadline:
                    self.stats["cut_by_deadline"] += 1
                    break
                try:
                    self.do(step)
                except Cut:
                    self.stats["cut_by_deadline"] += 1
                    break
                except Failure as f:
                    f.step_index, f.step = i, step
                    f.known = known.classify(f, self)
                    self.findings.append(f)
                    self.stats["finding:" + f.what] += 1
                    if f.known is None:
                        self.keep_logs(f)
                        return self.findings
                    # A known finding: the state it leaves is not worth
                    # studying further in this mount.
                    self.drop_mount()
            try:
                self.unmount()
            except Failure as f:
                f.step_index, f.step = len(self.steps), {"op": "final unmount"}
                f.known = known.classify(f, self)
                self.findings.append(f)
        finally:
            self.teardown()
        return self.findings

    def keep_logs(self, f):
        """The daemon logs of this run, kept beside the work directory."""
        self.drop_mount()
        keep = self.work.parent / "failures" / f"seed{self.seed}-step{f.step_index}"
        keep.mkdir(parents=True, exist_ok=True)
        for p in self.work.glob("mount*.log"):
            shutil.copy(p, keep / p.name)
        f.logs = keep

    def do(self, step):
        op = step["op"]
        self.stats["step:" + op] += 1
        getattr(self, "op_" + op)(step)

    # -- mounts --------------------------------------------------------------------
    def bound(self):
        """Documented bound of one read (prestofs(1), ERRORS AND RETRIES), doubled
        (a 128 KiB read can span two blocks), plus 3 s; times the factor."""
        t = float(self.opts.get("timeout") or 10)
        r = int(self.opts.get("retries") or 5)
        return (2 * ((r + 1) * t + r * 2.0) + 3.0) * self.factor

    def options(self, opts):
        o = {k: v for k, v in opts.items() if k not in ("ssd", "shared") and v is not None}
        if opts.get("ssd"):
            o["ssd_dir"] = str(self.ssd_dir)
        if opts.get("shared") and self.mc:
            o["shared_cache"] = f"memcached://{self.mc.url}"
        o.update(self.origin.mount_options())
        if os.environ.get("TORTURE_LOG_LEVEL"):  # for a replay: the daemon's own account
            o["log_level"] = os.environ["TORTURE_LOG_LEVEL"]
        return o

    def op_mount(self, step):
        if self.m is not None:
            self.unmount()
        opts = step["opts"]
        for k, v in sorted(opts.items()):
            self.optvals[f"{k}={v if v is not None else 'default'}"] += 1
        self.opts = opts
        self.listing = self.origin.current()
        self.mount_start_seq = self.origin._seq
        self.pins, self.changed, self.failed = {}, set(), set()
        self.excused = set()
        if self.world.get("listing") == "autoindex" and self.world["validator"] == "lastmod":
            # An HTML index gives times to the minute: a change at the same
            # size within the minute leaves the listing as it was, so blocks
            # of the older version in the SSD tier still match it. A mount
            # that finds one first pins that version and fails the blocks it
            # lacks (then drops them: the next mount reads the new one).
            for name, v in self.listing.items():
                if v is not None and any(
                        o is not v and len(o.data) == len(v.data) and
                        o.lastmod // 60 == v.lastmod // 60
                        for o in self.origin.versions(name)):
                    self.excused.add(name)
        for c in self.clashes:  # what a clash may take out of the listing
            parts = c.split("/")
            self.excused |= {"/".join(parts[:i]) for i in range(1, len(parts) + 1)}
        self.mount_seq += 1
        m = Mount(self.origin.mount_origin, self.mnt, self.options(opts),
                  env=self.origin.mount_env(os.environ),
                  log_path=self.work / f"mount{self.mount_seq}.log")
        try:
            m.start()
        except MountError as e:
            raise Failure("mount_failed", str(e)[-2000:], clashes=sorted(self.clashes))
        self.m = m
        self.faulted_mount = self.faults_on
        if opts.get("ssd"):
            self.ssd_layouts.add(parse_size(opts.get("block_size"), MiB))
            if "using the listing saved" in m.stderr_text():
                # The origin's listing failed (before issue 26, a clash did):
                # the daemon serves the listing an earlier mount saved in
                # ssd_dir (prestofs(1)).
                self.listing = self.saved_listing
                cur = self.origin.current()
                self.changed = {n for n in set(cur) | set(self.listing)
                                if cur.get(n) is not self.listing.get(n)}
                self.stats["saved_listing_used"] += 1
            else:
                self.saved_listing = self.listing

    def drop_mount(self):
        if self.m is not None:
            self.m.stop()
            self.m = None

    def collect(self, m):
        """Adds the daemon's counters to self.counters."""
        try:
            st = m.stats()
        except (OSError, ValueError):
            return

        def walk(prefix, v):
            if isinstance(v, dict):
                for k, x in v.items():
                    walk(f"{prefix}{k}.", x)
            elif isinstance(v, (int, float)) and not isinstance(v, bool):
                key = prefix[:-1]
                if key.startswith(COUNTER_KEYS):
                    self.counters[key] += v
        walk("", st)

    @staticmethod
    def peak_rss(m):
        try:
            for line in Path(f"/proc/{m.proc.pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * KiB
        except OSError:
            pass
        return 0

    def rss_bound(self):
        o = self.opts
        bs = parse_size(o.get("block_size"), MiB)
        ram = parse_size(o.get("ram_size"), 1024 * MiB)
        inflight = 2 * 16 + min(128, ram // bs)
        b = ram + 8 * MiB + inflight * bs + 76 * 64 + 48 * MiB
        if o.get("ssd"):
            b += 132 * MiB
        if o.get("shared") and self.mc:
            b += 64 * MiB + (16 + inflight) * bs  # 16 idle connections, one per exchange
        # Views: view_memory (2 x view_max_source = 128 MiB by default), or
        # the largest single job when it alone is more (not here: the
        # largest JPEG is ~1.2 MB, 1 Mpixel).
        b += 128 * MiB
        return int(b * self.factor)

    def unmount(self):
        if self.m is None:
            return
        m, self.m = self.m, None
        self.collect(m)
        rss = self.peak_rss(m)
        t0 = time.monotonic()
        problems = m.stop()
        took = time.monotonic() - t0
        text = m.stderr_text(10 ** 7)
        crash = [l for l in text.splitlines() if any(c in l for c in CRASH_MARKS)]
        if crash or (m.returncode not in (0, None)):
            raise Failure("crash", f"exit {m.returncode}; " + "; ".join(crash[:5]) +
                          "; " + "; ".join(p for p in problems if "ERROR" not in p)[:500])
        if took > 2.0 * self.factor + 0.5:  # fusermount3 itself takes a moment
            raise Failure("exit", f"daemon took {took:.2f} s to exit after unmount "
                          f"(faults in this mount: {self.faulted_mount}; {self.opts})")
        if rss and not SANITIZED and rss > self.rss_bound():
            raise Failure("rss", f"peak RSS {rss / MiB:.0f} MiB > bound "
                          f"{self.rss_bound() / MiB:.0f} MiB with {self.opts}")

    def op_unmount(self, step):
        self.unmount()

    def op_kill9(self, step):
        if self.m is None:
            return
        m, self.m = self.m, None
        self.collect(m)
        os.killpg(m.proc.pid, signal.SIGKILL)
        m.proc.wait(10)
        subprocess.run(["fusermount3", "-u", "-z", str(self.mnt)], capture_output=True)
        m._stopped = True
        m._log.close()

    def op_wipe_ssd(self, step):
        if self.m is not None:
            return
        shutil.rmtree(self.ssd_dir, ignore_errors=True)
        self.ssd_layouts = set()
        self.saved_listing = {}

    # -- the origin ------------------------------------------------------------------
    def op_change(self, step):
        name, kind = step["name"], step["kind"]
        cur = self.origin.current().get(name)
        if kind == "delete":
            if cur is None:
                return
            self.origin.delete(name)
        else:
            k = len(self.origin.versions(name))
            if name in tplan.JPEG_NAMES:
                data = jpeg(self.seed, name, k, name.endswith("big.jpg"))
            else:
                old = len(cur.data) if cur else step["size"]
                size = {"overwrite": old, "resize": step["size"],
                        "grow": old + 1 + step["size"] // 3,
                        "shrink": old // 2, "create": step["size"]}[kind]
                data = blob(self.seed, name, k, size)
            self.origin.put(name, data)
        self.changed.add(name)

    def op_clash(self, step):
        name = step["name"]
        self.clashes.add(name)
        self.origin.put(name, blob(self.seed, name, len(self.origin.versions(name)), 1000))
        self.changed.add(name)

    def op_unclash(self, step):
        self.clashes.discard(step["name"])
        self.origin.delete(step["name"])
        self.changed.add(step["name"])

    def op_faults(self, step):
        if step["p"]:
            self.origin.set_faults(step["kinds"], step["p"],
                                   random.Random(f"{self.seed}:faults:{step['p']}"))
            self.faults_on = True
            self.faulted_mount = True
        else:
            self.origin.set_faults(None)
            self.faults_on = False
            self.fault_until = time.monotonic() + (self.bound() if self.opts else 60)

    def op_mc(self, step):
        if not self.mc or not self.mc.proc or self.mc.proc.poll() is not None:
            return
        os.kill(self.mc.proc.pid, signal.SIGSTOP if step["paused"] else signal.SIGCONT)

    def op_range(self, step):
        self.range_on = step["on"]
        self.origin.norange = not step["on"]

    def op_disk(self, step):
        if step["full"]:
            # Fill the disk in 1 MiB writes until it says ENOSPC.
            fd = os.open(self.ballast, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            try:
                while True:
                    os.write(fd, b"\0" * MiB)
            except OSError:
                pass
            finally:
                os.close(fd)
        else:
            try:
                self.ballast.unlink()
            except FileNotFoundError:
                pass

    # -- readers -------------------------------------------------------------------------
    def error_allowed(self, name):
        return (self.faults_on or time.monotonic() < self.fault_until or
                name in self.changed or name in self.failed or name in self.excused or
                name not in self.listing)

    def note_error(self, name, err, how):
        if self.error_allowed(name):
            self.failed.add(name)
            self.stats[f"allowed_error:{type(err).__name__}"] += 1
            return
        raise Failure("error", f"{how} {name!r}: {err!r}", name=name)

    def candidates(self, name, size):
        return [v for v in self.origin.versions(name) if len(v.data) == size]

    def judge(self, name, got, off, size, how, versions=None, extract=None):
        """got: the bytes read at off (None: the whole file). Raises
        Failure, or narrows the file's pin in this mount."""
        vs = versions if versions is not None else self.candidates(name, size)
        want_len = size if off is None else None
        if extract is None:
            extract = lambda v: v.data  # noqa: E731
        matches = []
        for v in vs:
            ref = extract(v)
            piece = ref if off is None else ref[off[0]:off[0] + off[1]]
            if want_len is None:
                want_len = len(piece)
            if piece == got:
                matches.append(v.seq)
        if not matches and want_len is not None and len(got) < want_len and \
                self.error_allowed(name) and any(
                    extract(v)[(off or (0, 0))[0]:][:len(got)] == got for v in vs):
            # An error partway through a read that spans several FUSE
            # requests: the kernel returns the bytes before the failed one
            # (a short read, as any filesystem does on an I/O error partway).
            self.stats["short_on_allowed_error"] += 1
            return
        if not matches:
            if want_len is not None and len(got) < want_len:
                raise Failure("short", f"{how} {name!r} at {off}: {len(got)} of {want_len} bytes",
                              name=name)
            if self.world["validator"] == "none" and len({len(extract(v)) for v in vs}) <= 1 \
                    and len(vs) > 1 and self.mixes(got, [extract(v) for v in vs], off):
                self.stats["undetectable_mix"] += 1
                return
            raise Failure("wrong_bytes", f"{how} {name!r} at {off}: " +
                          self.explain(got, [(v.seq, extract(v)) for v in vs], off),
                          name=name)
        if self.world["validator"] == "none":
            return
        pin = self.pins.get(name)
        new = set(matches) if pin is None else pin & set(matches)
        if not new:
            raise Failure("mixed_mount", f"{how} {name!r} at {off}: this read is version(s) "
                          f"{sorted(matches)}, earlier reads in this mount {sorted(pin)}",
                          name=name)
        self.pins[name] = new

    @staticmethod
    def mixes(got, refs, off):
        """Whether got is, 4 KiB at a time, always some ref's bytes."""
        base = 0 if off is None else off[0]
        for i in range(0, len(got), 4096):
            piece = got[i:i + 4096]
            if not any(r[base + i:base + i + len(piece)] == piece for r in refs):
                return False
        return True

    @staticmethod
    def explain(got, refs, off):
        base = 0 if off is None else off[0]
        out = [f"{len(got)} bytes"]
        for seq, ref in refs[-3:]:
            r = ref[base:base + len(got)]
            i = next((j for j in range(0, min(len(r), len(got)), 4096)
                      if r[j:j + 4096] != got[j:j + 4096]), None)
            if i is None:
                out.append(f"v{seq}: equal over {min(len(r), len(got))} bytes, len {len(r)}")
                continue
            chunk = got[i:i + 4096]
            where = [(s2, ref2.find(chunk)) for s2, ref2 in refs if chunk and ref2.find(chunk) >= 0]
            out.append(f"v{seq}: first differs in 4K at {base + i}"
                       + (f"; those bytes are v{where[0][0]}'s at offset {where[0][1]}"
                          if where else "; those bytes are in no version"))
        return "; ".join(out)

    def past_deadline(self):
        return self.deadline is not None and time.monotonic() > self.deadline

    def timed(self, fn, what):
        if self.past_deadline():
            raise Cut()
        t0 = time.monotonic()
        r = fn()
        dt = time.monotonic() - t0
        if dt > self.bound():
            raise Failure("slow", f"{what} took {dt:.1f} s > bound {self.bound():.1f} s")
        return r

    def op_read(self, step):
        if self.m is None:
            return
        how = step["how"]
        self.stats["read:" + how] += 1
        if how == "whole":
            return self.read_whole_step(step["name"])
        getattr(self, "read_" + how)(step)

    def read_whole_step(self, name):
        path = self.mnt / name
        try:
            size, got = self.read_whole(path, name, "read")
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError) as e:
            if name in self.listing and not self.error_allowed(name):
                raise Failure("error", f"read {name!r}: {e!r} but the mount's listing has it",
                              name=name)
            return
        except OSError as e:
            return self.note_error(name, e, "read")
        self.judge(name, got, None, size, "read")

    def read_whole(self, path, name, how):
        fd = os.open(path, os.O_RDONLY)
        try:
            size = os.fstat(fd).st_size
            parts, off = [], 0
            while True:
                o = off
                b = self.timed(lambda: os.pread(fd, CHUNK, o), f"pread {name!r} @{o}")
                if not b:
                    break
                parts.append(b)
                off += len(b)
            return size, b"".join(parts)
        finally:
            os.close(fd)

    def read_pread(self, step):
        name = step["name"]
        path = self.mnt / name
        try:
            fd = os.open(path, os.O_RDONLY)
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            return
        except OSError as e:
            return self.note_error(name, e, "open")
        size = os.fstat(fd).st_size
        rng = random.Random(step["seed"])
        jobs = []
        for _ in range(step["threads"] * step["n"]):
            a = rng.randrange(0, size + 2) if size else 0
            ln = rng.choice([1, 4096, 100000, 300000, 2 * MiB])
            jobs.append((a, ln))
        results, errors = [None] * len(jobs), []
        lock = threading.Lock()
        nxt = [0]

        def worker():
            while True:
                with lock:
                    i = nxt[0]
                    nxt[0] += 1
                if i >= len(jobs) or self.past_deadline():
                    return
                a, ln = jobs[i]
                t0 = time.monotonic()
                try:
                    results[i] = (os.pread(fd, ln, a), time.monotonic() - t0)
                except OSError as e:
                    with lock:
                        errors.append(e)
        ts = [threading.Thread(target=worker) for _ in range(step["threads"])]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        os.close(fd)
        for e in errors:
            self.note_error(name, e, "pread")
        if self.past_deadline():
            raise Cut()
        for (a, ln), res in zip(jobs, results):
            if res is None:
                continue
            got, dt = res
            # One pread of up to 2 MiB: the kernel splits it; allow per 128 KiB.
            if dt > self.bound() * max(1, ln // (4 * CHUNK)):
                raise Failure("slow", f"pread {name!r} ({a},{ln}) took {dt:.1f} s")
            self.judge(name, got, (a, ln), size, "pread")

    def read_mmap(self, step):
        name = step["name"]
        code = ("import mmap,os,stat,sys\n"
                "fd=os.open(sys.argv[1],os.O_RDONLY); st=os.fstat(fd); s=st.st_size\n"
                "if stat.S_ISDIR(st.st_mode): raise IsADirectoryError(sys.argv[1])\n"
                "sys.stdout.write(str(s)+'\\n'); sys.stdout.flush()\n"
                "m=mmap.mmap(fd,s,prot=mmap.PROT_READ) if s else b''\n"
                "sys.stdout.buffer.write(bytes(m[:]))\n")
        t0 = time.monotonic()
        limit = self.bound() * 8
        if self.deadline is not None:
            limit = min(limit, max(1.0, self.deadline - t0))
        try:
            r = subprocess.run(["/usr/bin/python3", "-c", code, str(self.mnt / name)],
                               capture_output=True, timeout=limit)
        except subprocess.TimeoutExpired:
            if self.past_deadline():
                raise Cut()
            raise Failure("slow", f"mmap read of {name!r} over {self.bound() * 8:.0f} s")
        dt = time.monotonic() - t0
        if r.returncode != 0:
            err = r.stderr.decode(errors="replace")
            if "FileNotFoundError" in err or "NotADirectoryError" in err or \
                    "IsADirectoryError" in err:
                return
            return self.note_error(name, OSError(f"mmap reader exit {r.returncode}: "
                                                 f"{err.strip()[-200:]}"), "mmap")
        head, _, got = r.stdout.partition(b"\n")
        size = int(head)
        if dt > self.bound() * max(1, size // MiB + 1):
            raise Failure("slow", f"mmap read of {name!r} took {dt:.1f} s")
        self.judge(name, got, None, size, "mmap")

    def read_view(self, step):
        name, spec = step["name"], step["spec"]
        path = self.mnt / ".prestofs" / "views" / spec / name
        try:
            size, got = self.read_whole(path, name, "view")
        except (FileNotFoundError, NotADirectoryError) as e:
            if name in self.listing and not self.error_allowed(name):
                raise Failure("error", f"view {spec} of {name!r}: {e!r}", name=name)
            return
        except OSError as e:
            return self.note_error(name, e, f"view {spec}")
        vs = self.origin.versions(name)

        def ref(v):
            k = (spec, v.seq)
            if k not in self._view_refs:
                self._view_refs[k] = view_ref(spec, v.data)
            return self._view_refs[k]
        self.judge(name, got, None, size, f"view {spec}", versions=vs, extract=ref)

    def op_read_all(self, step):
        if self.m is None:
            return
        names = sorted(set(self.world["files"]) | set(self.listing))
        errs = []
        lock = threading.Lock()
        it = iter(names)

        def worker():
            while True:
                with lock:
                    n = next(it, None)
                if n is None:
                    return
                try:
                    self.read_whole_step(n)
                except Failure as f:
                    with lock:
                        errs.append(f)
                except Cut:
                    return
        ts = [threading.Thread(target=worker) for _ in range(step["threads"])]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        if errs:
            raise errs[0]
        if self.past_deadline():
            raise Cut()



# -- driving runs ----------------------------------------------------------------------

def run_plan(seed, world, steps, args, deadline=None, log=print):
    r = Runner(seed, world, steps, args.workdir, factor=args.factor, deadline=deadline, log=log)
    findings = r.run()
    return r, findings


def describe(f, seed):
    tag = f"KNOWN (issue {f.known[0]}: {f.known[1]})" if f.known else "FAILURE"
    logs = getattr(f, "logs", None)
    return (f"{tag} seed {seed} step {f.step_index} {json.dumps(f.step)}\n"
            f"    {f.what}: {f.detail}" + (f"\n    daemon logs: {logs}" if logs else ""))


class Totals:
    def __init__(self):
        self.stats = collections.Counter()
        self.optvals = collections.Counter()
        self.counters = collections.Counter()
        self.seeds = 0
        self.known = collections.Counter()
        self.unexpected = []
        self.known_examples = {}

    def add(self, seed, r, findings):
        self.seeds += 1
        self.stats.update(r.stats)
        self.optvals.update(r.optvals)
        self.counters.update(r.counters)
        for f in findings:
            if f.known:
                key = f"issue {f.known[0]}: {f.known[1]}"
                self.known[key] += 1
                self.known_examples.setdefault(key, (seed, f.step_index))
            else:
                self.unexpected.append((seed, f))

    def report(self, elapsed):
        print(f"\n== torture: {self.seeds} seeds, {sum(v for k, v in self.stats.items() if k.startswith('step:'))} steps in {elapsed:.0f} s ==")
        print("steps:   " + ", ".join(f"{k[5:]} {v}" for k, v in sorted(self.stats.items())
                                      if k.startswith("step:")))
        print("reads:   " + ", ".join(f"{k[5:]} {v}" for k, v in sorted(self.stats.items())
                                      if k.startswith("read:")))
        print("worlds:  " + ", ".join(f"{k[6:]} {v}" for k, v in sorted(self.stats.items())
                                      if k.startswith("world:")))
        print("outcomes:" + ", ".join(f" {k} {v}" for k, v in sorted(self.stats.items())
                                      if not k.startswith(("step:", "read:", "world:"))))
        print("options drawn (per mount):")
        for k in sorted({k.split("=")[0] for k in self.optvals}):
            vals = [f"{kv.split('=', 1)[1]} {n}" for kv, n in sorted(self.optvals.items())
                    if kv.split("=")[0] == k]
            print(f"  {k}: " + ", ".join(vals))
        print("daemon counters (summed over mounts; 0 = a path never taken):")
        line = []
        for k, v in sorted(self.counters.items()):
            line.append(f"{k}={v:g}")
        for i in range(0, len(line), 6):
            print("  " + "  ".join(line[i:i + 6]))
        for key, n in sorted(self.known.items()):
            s, i = self.known_examples[key]
            print(f"known finding x{n}: {key} (first: seed {s} step {i}; "
                  f"scripts/torture --minimize {s})")
        for seed, f in self.unexpected:
            print(describe(f, seed))
        print("result: " + ("FAIL" if self.unexpected else "ok") +
              f" ({len(self.unexpected)} unexpected, {sum(self.known.values())} known)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float)
    ap.add_argument("--ci", action="store_true", help="fixed seeds for 2 minutes, factor 3")
    ap.add_argument("--seed", type=int, help="first seed (default: random, or 1 with --ci)")
    ap.add_argument("--steps", type=int, default=40, help="steps per seed")
    ap.add_argument("--replay", type=int, metavar="SEED")
    ap.add_argument("--minimize", type=int, metavar="SEED")
    ap.add_argument("--plan", type=Path, help="a JSON step list from --minimize")
    ap.add_argument("--tries", type=int, default=3)
    ap.add_argument("--factor", type=float, default=None)
    ap.add_argument("--workdir", default=None)
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()
    if args.factor is None:
        args.factor = 3.0 if args.ci else 1.0
    base = Path(args.workdir or tempfile.mkdtemp(prefix="prestofs-torture-"))
    base.mkdir(parents=True, exist_ok=True)
    args.workdir = str(base)
    t_start = time.monotonic()
    totals = Totals()

    if args.replay is not None or args.plan is not None:
        if args.plan is not None:
            doc = json.loads(args.plan.read_text())
            seed, world, steps = doc["seed"], doc["world"], doc["steps"]
        else:
            seed = args.replay
            world, steps = tplan.make_plan(seed, args.steps)
        print(json.dumps(steps, indent=None))
        for attempt in range(1, args.tries + 1):
            r, findings = run_plan(seed, world, steps, args)
            totals.add(seed, r, findings)
            for f in findings:
                print(f"try {attempt}: " + describe(f, seed))
            if findings:
                break
        totals.report(time.monotonic() - t_start)
        return 1 if totals.unexpected else 0

    if args.minimize is not None:
        return minimize(args.minimize, args)

    # CI: seeds start until 1.75 min; the last one's steps stop at the deadline
    # (a step in a fault window can take the documented read bound).
    minutes = 1.75 if args.ci and args.minutes is None else (args.minutes or 2.0)
    deadline = t_start + minutes * 60
    seed = args.seed if args.seed is not None else (1 if args.ci else random.randrange(1 << 31))
    while time.monotonic() < deadline - 5:
        world, steps = tplan.make_plan(seed, args.steps)
        r, findings = run_plan(seed, world, steps, args, deadline=deadline)
        totals.add(seed, r, findings)
        if args.verbose or findings:
            for f in findings:
                print(describe(f, seed), flush=True)
        if args.verbose:
            print(f"seed {seed}: {sum(v for k, v in r.stats.items() if k.startswith('step:'))}"
                  f" steps, {len(findings)} findings", flush=True)
        seed += 1
    totals.report(time.monotonic() - t_start)
    if not totals.unexpected and not os.environ.get("TORTURE_KEEP"):
        shutil.rmtree(base, ignore_errors=True)
    return 1 if totals.unexpected else 0


def minimize(seed, args):
    """ddmin over the step list: drop chunks while the first failure's
    signature (what, known issue) still shows in one of --tries runs."""
    world, steps = tplan.make_plan(seed, args.steps)
    target = None
    for _ in range(args.tries):
        _, findings = run_plan(seed, world, steps, args, log=lambda *a: None)
        if findings:
            target = findings[0].signature()
            steps = steps[:findings[0].step_index + 1]
            break
    if target is None:
        print(f"seed {seed}: no failure in {args.tries} tries")
        return 0
    print(f"seed {seed}: target {target}, {len(steps)} steps", flush=True)

    def fails(cand):
        for _ in range(args.tries):
            _, fs = run_plan(seed, world, cand, args, log=lambda *a: None)
            if any(f.signature() == target for f in fs):
                return True
        return False
    n = 2
    while len(steps) >= 2:
        chunk = max(1, len(steps) // n)
        reduced = False
        for i in range(0, len(steps), chunk):
            cand = steps[:i] + steps[i + chunk:]
            if cand and fails(cand):
                steps, n, reduced = cand, max(n - 1, 2), True
                print(f"  {len(steps)} steps", flush=True)
                break
        if not reduced:
            if chunk == 1:
                break
            n = min(len(steps), n * 2)
    out = Path(args.workdir) / f"minimal-seed{seed}.json"
    out.write_text(json.dumps({"seed": seed, "world": world, "steps": steps}, indent=1))
    print(f"shortest: {len(steps)} steps (scripts/torture --plan {out}):")
    for s in steps:
        print("  " + json.dumps(s))
    return 0


if __name__ == "__main__":
    sys.exit(main())
