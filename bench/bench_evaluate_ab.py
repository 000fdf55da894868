"""Whole-process CPU and wall time of ``diagnose evaluate`` for several source trees and pytrec_eval, interleaved.

    python bench/bench_evaluate_ab.py [--repeats 5] [--dir /tmp/speed/syn] before=/tmp/old_tree after=.

Each ``NAME=TREE`` is a folder holding a ``diagnose/`` package (e.g. ``git archive COMMIT diagnose | tar -x -C
TREE``); its bytecode is compiled first. One warm-up round, then ``--repeats`` rounds; each round runs, in turn, one
fresh process per tree (``PYTHONPATH=TREE python -m diagnose evaluate --qrels Q --run synth=R --k 1,3,5,10,100
--format json``, started from ``/tmp`` so that the path picks the tree) and bench_evaluate.py's pytrec_eval script,
on the 1,000 x 1,000 files of ``bench/make_synthetic.py``. CPU = user + sys of the child. Prints the load average
before and after and a Markdown table: each CPU time, the median, the ratio to pytrec_eval's median, the wall median.
"""

from __future__ import annotations

import argparse
import compileall
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trees", nargs="+", help="NAME=TREE")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--dir", type=Path, default=HERE / "out" / "synthetic")
    args = ap.parse_args()
    sys.path.insert(0, str(HERE))
    from bench_evaluate import PYTREC_SCRIPT
    from make_synthetic import write_shape

    qrels, run = (str(p) for p in write_shape(args.dir, 1000, 1000, seed=0))
    ks = "1,3,5,10,100"
    cmds = {}
    for spec in args.trees:
        name, tree = spec.split("=", 1)
        tree = str(Path(tree).resolve())
        compileall.compile_dir(os.path.join(tree, "diagnose"), quiet=1)
        argv = ["evaluate", "--qrels", qrels, "--run", f"synth={run}", "--k", ks, "--format", "json"]
        cmds[name] = ([sys.executable, "-m", "diagnose", *argv], {**os.environ, "PYTHONPATH": tree})
    cmds["pytrec_eval"] = ([sys.executable, "-c", PYTREC_SCRIPT, qrels, run, ks], dict(os.environ))
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in cmds}
    print(f"load average before: {os.getloadavg()}")
    for i in range(args.repeats + 1):
        for name, (cmd, env) in cmds.items():
            before, t0 = os.times(), time.perf_counter()
            subprocess.run(cmd, env=env, cwd="/tmp", stdout=subprocess.DEVNULL, check=True)
            wall, after = time.perf_counter() - t0, os.times()
            cpu = after.children_user - before.children_user + after.children_system - before.children_system
            if i:  # round 0 is the warm-up
                samples[name].append((cpu, wall))
    print(f"load average after: {os.getloadavg()}")
    ref = statistics.median(c for c, _ in samples["pytrec_eval"])
    print("| process | CPU s, each | CPU median | vs pytrec_eval | wall median |")
    print("|---|---|---:|---:|---:|")
    for name, rows in samples.items():
        cpu = statistics.median(c for c, _ in rows)
        wall = statistics.median(w for _, w in rows)
        each = ", ".join(f"{c:.2f}" for c, _ in rows)
        print(f"| {name} | {each} | {cpu:.2f} | {cpu / ref:.2f}x | {wall:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
