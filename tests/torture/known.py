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
    if f.what == "error" and not r.range_on:
        return (26, "an origin that ignores Range: files over one block fail with EIO")
    if wrong and r.world["validator"] == "none" and opts.get("ssd"):
        return (26, "SSD entries of an object without a validator reused after a remount")
    if f.what == "exit" and r.faulted_mount:
        return (26, "prefetches in flight against a stalling origin hold the daemon's exit "
                    "for their whole retry chain")
    return None
