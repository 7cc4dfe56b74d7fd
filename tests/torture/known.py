"""Known findings: failures of the torture harness that are filed, each
with the issue that fixes it. classify() gets the failure and the runner's
state at the moment it happened and returns (issue, label) or None.

A known finding is printed as such and does not fail the run. Keep each
rule as narrow as the cause: a rule that matches more than its cause
hides the next bug. Remove a rule when its issue lands.
"""


def classify(f, r):
    opts = r.opts or {}
    wrong = f.what in ("wrong_bytes", "mixed_mount")
    if f.what == "mount_failed" and r.clashes and (
            "Not a directory" in f.detail or "is below a file" in f.detail):
        return (26, "a key beside a directory of the same name fails the whole mount")
    return None
