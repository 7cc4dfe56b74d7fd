"""Several jobs reading one mount (a sweep on one node) share the cache and
fetch each block once: with J jobs on one seed, origin bytes per epoch stay
within 1.1x of one job's."""
import random
import subprocess
import sys
from pathlib import Path

from helpers.compare import list_files
from helpers.manifest import served_copy

READER = r"""
import random, sys
root, seed, listfile = sys.argv[1], int(sys.argv[2]), sys.argv[3]
rels = open(listfile).read().split("\n")
random.Random(seed).shuffle(rels)
n = 0
for r in rels:
    with open(root + "/" + r, "rb") as f:
        n += len(f.read())
print(n)
"""


def test_jobs_on_one_seed_fetch_once(dataset, tmp_path, nginx, mount):
    src = served_copy(dataset, tmp_path)
    ng = nginx(src, autoindex=False)
    m = mount(ng.url, {"ram_size": "256M"})
    rels = [r for r in list_files(src) if (src / r).stat().st_size > 0]
    total = sum((src / r).stat().st_size for r in rels)
    lst = tmp_path / "files.txt"
    lst.write_text("\n".join(rels))
    jobs = [subprocess.Popen([sys.executable, "-c", READER, str(m.path), "7", str(lst)],
                             stdout=subprocess.PIPE, text=True, start_new_session=True)
            for _ in range(3)]
    for j in jobs:
        out, _ = j.communicate(timeout=120)
        assert j.returncode == 0
        assert int(out) == total
    s = m.stats()
    assert s["origin"]["bytes"] <= 1.1 * total, (s["origin"], total)
