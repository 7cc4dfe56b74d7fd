"""The plan of one torture run: from a seed, a world (origin flavour,
validator, dataset) and a list of steps. Everything random is drawn here,
so a seed names a run exactly; only thread timing differs between replays.

A step is a plain dict (JSON), {"op": ..., ...}:
  mount      {"opts": {KEY: VALUE}}   unmount first if mounted; VALUE None =
                                      the default (the key is not passed);
                                      "ssd"/"shared" are on/off switches that
                                      the runner turns into ssd_dir/shared_cache
  unmount, kill9                      kill9: SIGKILL the daemon, lazy unmount
  wipe_ssd                            empty the SSD directory (unmounted only)
  change     {"name", "kind", "size"} an origin change: overwrite (same size),
                                      resize, grow, shrink, delete, create
  clash      {"name"}                 a key beside a "directory" of that name
  unclash    {"name"}                 delete that key again
  faults     {"kinds", "p"}           faults on object GETs from now (p 0: off)
  range      {"on"}                   the origin honours Range or not
  mc         {"paused"}               the memcached server hangs (SIGSTOP) or resumes
  disk       {"full"}                 fill the SSD disk to the brim, or free it
  read       {"name", "how", ...}     how: whole, pread (threads, n, seed),
                                      mmap, view (spec)
  read_all   {"threads"}              every name the plan ever made, in parallel
Steps that do not apply to the state (a read while unmounted) are no-ops,
so the minimiser can drop any step.
"""
import random

KiB, MiB = 1024, 1024 * 1024

# Option keys and the values drawn for them (None: the default).
OPTIONS = {
    "block_size": [None, "256K", "512K", "1M", "2M"],
    "ram_size": [None, "4M", "16M"],
    "ssd": [False, True, True],
    "ssd_size": [None, "12M"],
    "ssd_compress": [None, "off", "zstd"],
    "policy": [None, "minio", "lru"],
    "prefetch": [None, "off"],
    "timeout": [None, "2"],
    "retries": [None, "1", "2"],
    "shared": [False, True],
    "view_workers": [None, "1"],
}

# Small, odd, and one and a half of each block size drawn (a last block as
# long as a whole block of a smaller layout).
SIZES = [0, 1, 4093, 100 * KiB + 7, 384 * KiB, 700 * KiB + 11, 768 * KiB,
         MiB + 512 * KiB, 2 * MiB + 3, 3 * MiB]
FAULT_SETS = [["500", "503"], ["reset", "half"], ["429"], ["stall"],
              ["500", "reset", "half", "stall"]]
VIEW_SPECS = ["decode", "fmt=npy"]
JPEG_NAMES = ["img/small.jpg", "img/big.jpg"]


def draw_options(rng, prev=None):
    """A fresh draw, or (half the time, when there is one) the previous
    options with one or two keys drawn again: a remount that changes little
    is what persisted state must survive."""
    if prev is None or rng.random() < 0.4:
        return {k: rng.choice(v) for k, v in OPTIONS.items()}
    opts = dict(prev)
    for k in rng.sample(sorted(OPTIONS), rng.choice([1, 1, 2])):
        opts[k] = rng.choice(OPTIONS[k])
    return opts


def make_world(rng):
    flavour = rng.choice(["http", "http", "s3"])
    validator = "etag" if flavour == "s3" else rng.choice(["etag", "etag", "lastmod", "none"])
    files = {}
    for d in range(2):
        for i in range(rng.randint(3, 5)):
            files[f"d{d}/f{i}.bin"] = rng.choice(SIZES)
    # One file at one and a half times each block size drawn: its last block
    # is as long as a whole block of the layout half as large.
    for bs in (256, 512, 1024, 2048):
        files[f"d{bs % 3 % 2}/edge{bs}k.bin"] = bs * KiB * 3 // 2
    files["d1/odd name %+ü.bin"] = rng.choice(SIZES)
    files["d0/sub/deep.bin"] = rng.choice(SIZES)
    for j, name in enumerate(JPEG_NAMES):
        files[name] = j  # JPEG variant index: 0 small, 1 big (> 1 MiB)
    return {"flavour": flavour, "validator": validator, "files": files,
            "stall_s": 2.5}


def draw_listing(seed, world):
    """The HTTP listing source, drawn apart from the rest (so adding it left
    every other draw of a seed as it was)."""
    r = random.Random(f"{seed}:listing")
    world["listing"] = "manifest" if world["flavour"] == "s3" else \
        r.choice(["manifest", "manifest", "autoindex"])


def make_plan(seed, nsteps=40):
    """(world, steps) of a seed."""
    rng = random.Random(seed)
    world = make_world(rng)
    draw_listing(seed, world)
    names = sorted(world["files"])
    plain = [n for n in names if n not in JPEG_NAMES]
    steps = []
    opts = None
    mounted = False
    faults_on = False
    mc_paused = False
    clashes = []
    created = 0
    weights = [("read", 30), ("read_all", 10), ("mount", 4), ("remount", 8),
               ("change", 12), ("unmount", 3), ("kill9", 3), ("faults", 6),
               ("wipe_ssd", 1), ("disk", 3), ("range", 2), ("clash", 1), ("mc", 2)]
    kinds, w = zip(*weights)
    while len(steps) < nsteps:
        if not mounted:
            op = "mount"
        else:
            op = rng.choices(kinds, w)[0]
        if op == "remount" and opts is not None:
            # What persists across a remount (SSD entries, shared values)
            # must be right under every option: change exactly one key.
            opts = dict(opts)
            k = rng.choice(sorted(OPTIONS))
            opts[k] = rng.choice([v for v in OPTIONS[k] if v != opts[k]])
            steps.append({"op": "mount", "opts": opts})
            mounted = True
        elif op in ("mount", "remount"):
            opts = draw_options(rng, opts)
            steps.append({"op": "mount", "opts": opts})
            mounted = True
        elif op in ("unmount", "kill9"):
            steps.append({"op": op})
            mounted = False
            if rng.random() < 0.3:
                steps.append({"op": "wipe_ssd"})
        elif op == "wipe_ssd":
            steps.append({"op": "unmount"})
            steps.append({"op": "wipe_ssd"})
            mounted = False
        elif op == "change":
            kind = rng.choice(["overwrite", "overwrite", "resize", "grow", "shrink",
                               "delete", "create"])
            if kind == "create":
                created += 1
                name = f"d{rng.randint(0, 1)}/new{created}.bin"
                plain.append(name)
                names.append(name)
            else:
                name = rng.choice(names)
            steps.append({"op": "change", "name": name, "kind": kind,
                          "size": rng.choice(SIZES), "seed": rng.randrange(1 << 30)})
        elif op == "faults":
            if faults_on:
                steps.append({"op": "faults", "kinds": [], "p": 0})
            else:
                steps.append({"op": "faults", "kinds": rng.choice(FAULT_SETS),
                              "p": rng.choice([0.1, 0.3, 0.6])})
            faults_on = not faults_on
        elif op == "disk":
            steps.append({"op": "disk", "full": rng.random() < 0.6})
        elif op == "range":
            steps.append({"op": "range", "on": rng.random() < 0.5})
        elif op == "mc":
            # The memcached server hangs (SIGSTOP: connections open, no
            # answer) or comes back: a shared tier that must cost reads a
            # deadline, never a wrong byte or a hung read or unmount.
            mc_paused = not mc_paused
            steps.append({"op": "mc", "paused": mc_paused})
        elif op == "clash":
            if not clashes:
                # a file named like a directory, or a directory under a file
                name = rng.choice(["d0", "d0/sub", "d1/f0.bin/inner.bin"])
                clashes.append(name)
                steps.append({"op": "clash", "name": name})
        if clashes and rng.random() < 0.25:
            steps.append({"op": "unclash", "name": clashes.pop()})
        elif op == "read_all":
            steps.append({"op": "read_all", "threads": rng.choice([1, 4, 8])})
        else:
            how = rng.choice(["whole", "whole", "pread", "pread", "mmap", "view"])
            if how == "view":
                steps.append({"op": "read", "how": "view", "name": rng.choice(JPEG_NAMES),
                              "spec": rng.choice(VIEW_SPECS)})
            else:
                steps.append({"op": "read", "how": how, "name": rng.choice(names),
                              "threads": rng.choice([1, 2, 8]), "n": rng.choice([4, 16]),
                              "seed": rng.randrange(1 << 30)})
    return world, steps
