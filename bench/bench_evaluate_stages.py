"""CPU time per stage of the ``diagnose evaluate`` CLI process, for two source trees side by side.

    python bench/bench_evaluate_stages.py --before /tmp/old_tree --after . [--repeats 3] [--dir bench/out/synthetic]

Each tree is a folder holding a ``diagnose/`` package (e.g. a copy of an older commit's); its bytecode is compiled
first. For each repeat, one fresh process per tree (interleaved) runs ``diagnose.cli.main(["evaluate", "--qrels", Q,
"--run", "synth=R", "--k", "1,3,5,10,100", "--format", "json"])`` on the 1,000 x 1,000 synthetic files of
``bench/make_synthetic.py``, with ``time.process_time()`` around the imports and around ``load_dataset``,
``read_qrels``, ``read_run``, ``evaluate_many``, ``tie_audit`` (and inside it ``tie_layout``, ``tie_keys``, the
``evaluate`` of the re-ordered copies), ``add_to_report``, ``EvaluationReport.to_dict``, ``report.dumps`` and
``ids.fingerprints`` (wrapped where the CLI looks them up; nested stages overlap). Prints a Markdown table of medians.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

CHILD = r"""
import contextlib, io, json, sys, time
T = {}
c = time.process_time()
import numpy, pyarrow, pyarrow.compute, pyarrow.csv  # noqa: F401  (a tree older than diagnose.runtime.lazy imports pandas below)
T["import numpy + pyarrow"] = time.process_time() - c
c = time.process_time()
import diagnose.cli as cli, diagnose.cli.shared as shared, diagnose.io.dataset as dataset
import diagnose.metrics, diagnose.metrics.join as join, diagnose.report as report, diagnose.ties
T["import diagnose"] = time.process_time() - c

def wrap(owner, name, label):
    f = getattr(owner, name)
    def timed(*a, **k):
        c = time.process_time()
        try:
            return f(*a, **k)
        finally:
            T[label] = T.get(label, 0) + time.process_time() - c
            T[label + " (calls)"] = T.get(label + " (calls)", 0) + 1
    setattr(owner, name, timed)

wrap(shared, "load_dataset", "load_dataset (reads + checks)")
wrap(dataset, "read_qrels", "read_qrels")
wrap(dataset, "read_run", "read_run")
import diagnose.analysis.scores as scores, diagnose.ties.audit as audit
wrap(scores, "evaluate_many", "evaluate_many")  # where Analysis looks them up
wrap(scores, "tie_audit", "tie audit")
wrap(audit, "tie_keys", "tie keys (in the audit)")
wrap(audit, "evaluate", "evaluate calls in the audit (base if not reused, re-ordered copies)")
wrap(audit, "tie_layout", "tie layout (in the audit)")
wrap(scores, "add_to_report", "tie audit: report entry (message, examples)")
wrap(report.EvaluationReport, "to_dict", "EvaluationReport.to_dict")
wrap(report, "dumps", "JSON dump")
wrap(join, "fingerprints", "id fingerprints")
try:
    import diagnose.io.run_order as run_order
    wrap(run_order, "fingerprints", "id fingerprints")
except (ImportError, AttributeError):
    pass
c = time.process_time()
with contextlib.redirect_stdout(io.StringIO()):
    cli.main(sys.argv[1:])
T["cli.main total"] = time.process_time() - c
T["process total"] = time.process_time()
T["pandas imported (1 = yes)"] = float("pandas" in sys.modules)
print(json.dumps(T))
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", type=Path, required=True)
    ap.add_argument("--after", type=Path, default=HERE.parent)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--dir", type=Path, default=HERE / "out" / "synthetic")
    args = ap.parse_args()
    sys.path.insert(0, str(HERE))
    from make_synthetic import write_shape

    qrels, run = write_shape(args.dir, 1000, 1000, seed=0)
    trees = {"before": args.before.resolve(), "after": args.after.resolve()}
    for tree in trees.values():
        compileall.compile_dir(str(tree / "diagnose"), quiet=1)
    argv = [
        "evaluate",
        "--qrels",
        str(qrels),
        "--run",
        f"synth={run}",
        "--k",
        "1,3,5,10,100",
        "--format",
        "json",
    ]
    samples: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
    for _ in range(args.repeats):
        for name, tree in trees.items():
            out = subprocess.run(
                [sys.executable, "-c", CHILD, *argv],
                env={**os.environ, "PYTHONPATH": str(tree)},
                cwd=tree,
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            samples[name].append(json.loads(out.strip().splitlines()[-1]))
    keys = list(dict.fromkeys(k for rows in samples.values() for r in rows for k in r))
    print(f"| stage (CPU s, median of {args.repeats}) | before | after |")
    print("|---|---:|---:|")
    for k in keys:
        cells = [statistics.median(r.get(k, 0.0) for r in samples[n]) for n in trees]
        print(f"| {k} | " + " | ".join(f"{c:.3f}" for c in cells) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
