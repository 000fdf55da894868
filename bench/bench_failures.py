"""Whole-process `diagnose failures` on NFCorpus (test split), cold and warm, next to a bare `model.encode`.

Cold: an empty embedding cache, so the process loads the model, encodes the 3,633 documents and the judged queries,
builds BM25 and diagnoses. Warm: the same command again (the cache hits). Bare: a process that loads the same model
and encodes the same texts, nothing else. All three are measured in the same run, alternating, so the ratios hold
whatever else the machine does; each process's CPU time (user + system, from the children's rusage) is printed too,
the figure to read on a shared machine.

    python bench/bench_failures.py [--data ../shared/data/nfcorpus] [--repeats 2]

Needs ../shared/data/nfcorpus. The run diagnosed is our BM25 baseline (written first with `diagnose evaluate
--baseline bm25 --write-runs`).
"""

from __future__ import annotations

import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

from common import bm25_run, cold_warm_bare, cpu_name, nfcorpus_args, print_rounds


def main() -> None:
    args = nfcorpus_args(__doc__, repeats=2)
    data = args.data
    work = Path(tempfile.mkdtemp(prefix="bench_failures_"))
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    run = bm25_run(data, work, env)
    cache = work / "cache"
    cmd = [
        sys.executable,
        "-m",
        "diagnose",
        "failures",
        "--data",
        str(data),
        "--run",
        str(run),
        "--k",
        "10",
        "--cache-dir",
        str(cache),
        "--format",
        "json",
    ]
    cpu: dict[str, list[float]] = {}
    bare, cold, warm, _, _ = cold_warm_bare(cmd, data, env, args.repeats, [cache], cpu=cpu)
    load = os.getloadavg()
    header = f"repeats: {args.repeats}; {cpu_name('?')}; load average at the end {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}"
    print_rounds(header, "diagnose failures", bare, cold, warm, ratio=True)
    b, c, w = (statistics.median(cpu[key]) for key in ("bare", "cold", "warm"))
    print(
        f"CPU seconds (user + system), medians: bare {b:.1f}, cold {c:.1f} (ratio {c / b:.2f}), warm {w:.1f}"
    )
    print(
        f"  each: bare {[round(x, 1) for x in cpu['bare']]}, cold {[round(x, 1) for x in cpu['cold']]}, "
        f"warm {[round(x, 1) for x in cpu['warm']]}"
    )
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
