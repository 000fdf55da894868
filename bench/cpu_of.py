"""The CPU time of a command and of every process it starts, daemons included: user + system seconds, and wall.

``/usr/bin/time`` counts only the children a process waits for; Ray's daemons, Chromium's helpers and a Streamlit
server started in a new session are orphaned to init and not counted. This script makes itself the run's child
subreaper (Linux ``PR_SET_CHILD_SUBREAPER``), so every orphaned descendant is re-parented to it and reaped, and
``getrusage(RUSAGE_CHILDREN)`` then holds them all. It waits up to 60 s for the descendants after the command ends
(and says so when some are still alive). Used for the test-suite measurements in bench/RESULTS.md:

    PYTHONPATH=$PWD python bench/cpu_of.py python -m pytest -n 0 -q -p no:cacheprovider tests/test_browser.py

prints ``CPU: W s wall U user S sys = C cpu rc=R load=L`` on stderr and exits with the command's code.
"""

from __future__ import annotations

import ctypes
import os
import resource
import subprocess
import sys
import time

PR_SET_CHILD_SUBREAPER = 36
GRACE_S = 60


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    t0 = time.monotonic()
    rc = subprocess.Popen(argv).wait()
    wall = time.monotonic() - t0
    deadline = time.monotonic() + GRACE_S
    while True:  # reap the orphans (Ray's daemons, Chromium's helpers) until none is left
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid == 0:
            if time.monotonic() > deadline:
                print(f"CPU: descendants still alive after {GRACE_S} s, not counted", file=sys.stderr)
                break
            time.sleep(0.2)
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(
        f"CPU: {wall:.1f} s wall {r.ru_utime:.1f} user {r.ru_stime:.1f} sys = {r.ru_utime + r.ru_stime:.1f} cpu "
        f"rc={rc} load={os.getloadavg()[0]:.1f}",
        file=sys.stderr,
    )
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
