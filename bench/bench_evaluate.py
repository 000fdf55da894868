"""Whole-process evaluation time: ``diagnose evaluate`` vs pytrec_eval vs ranx on the same TREC files.

    python bench/bench_evaluate.py [--dir bench/out/synthetic] [--shapes 1000x1000,10000x100] [--repeats 5]
                                   [--write bench/RESULTS.md]

Files come from ``bench/make_synthetic.py`` (generated into ``--dir`` when missing): graded qrels (0/1/2) and runs
with score ties, 1M lines per shape. Each tool runs as a fresh process (``/usr/bin/time -v`` when available, for
the peak RSS), so the times include interpreter start, imports, parsing and evaluation:

- diagnose: ``python -m diagnose evaluate --qrels Q --run synth=R --k 1,3,5,10,100 --format json`` of this checkout
  (default metrics at each k: precision, recall, hit_rate, mrr, ndcg, map, then mrr, map, r_precision; 33 numbers;
  the tie audit on, as always);
- pytrec_eval: ``parse_qrel`` + ``parse_run`` (its own helpers) + ``RelevanceEvaluator.evaluate`` with the trec_eval
  equivalents ``P recall success ndcg_cut map_cut`` at 1,3,5,10,100 + ``map recip_rank Rprec`` (28 numbers: trec_eval
  has no ``mrr@k``), then the mean per measure;
- ranx: ``Qrels.from_file`` + ``Run.from_file`` + ``evaluate(..., make_comparable=True)`` with the same 33 names.

One untimed warm-up run per tool comes first (file cache, ranx's numba cache), then ``--repeats`` rounds, each
running every tool once (interleaved, so a change of load on a shared machine hits each tool alike);
the table shows medians of wall time and of CPU time (user + sys of the process and its threads: steadier than
wall time on a shared machine), the ratio of each peer's median to diagnose's, and the peak RSS. The aggregates
of the three tools are compared as a sanity check (the synthetic files have no missing queries and float32-exact
scores, so they must agree to 1e-9 on shared metrics).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import cpu_name

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
KS = [1, 3, 5, 10, 100]
OURS = [f"{f}@{k}" for f in ["precision", "recall", "hit_rate", "mrr", "ndcg", "map"] for k in KS]
OURS += ["mrr", "map", "r_precision"]
TREC = {"precision": "P", "recall": "recall", "hit_rate": "success", "ndcg": "ndcg_cut", "map": "map_cut"}

PYTREC_SCRIPT = """
import json, sys
import numpy as np
import pytrec_eval
with open(sys.argv[1]) as f:
    qrels = pytrec_eval.parse_qrel(f)
with open(sys.argv[2]) as f:
    run = pytrec_eval.parse_run(f)
ks = ",".join(sys.argv[3].split(","))
measures = {f"{m}.{ks}" for m in ["P", "recall", "success", "ndcg_cut", "map_cut"]} | {"map", "recip_rank", "Rprec"}
res = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
names = sorted(next(iter(res.values())))
print(json.dumps({m: float(np.mean([v[m] for v in res.values()])) for m in names}))
"""

RANX_SCRIPT = """
import json, sys
from ranx import Qrels, Run, evaluate
qrels = Qrels.from_file(sys.argv[1], kind="trec")
run = Run.from_file(sys.argv[2], kind="trec")
names = [n.replace("r_precision", "r-precision") for n in sys.argv[3].split(",")]
res = evaluate(qrels, run, names, make_comparable=True)
print(json.dumps({k.replace("r-precision", "r_precision"): float(v) for k, v in res.items()}))
"""


STAGES_SCRIPT = """
import json, sys, time
stages, c, w = {}, time.process_time(), time.perf_counter()
def lap(name):
    global c, w
    stages[name] = (time.process_time() - c, time.perf_counter() - w)
    c, w = time.process_time(), time.perf_counter()
import numpy, pyarrow, pyarrow.compute, pyarrow.csv
lap("import numpy + pyarrow")
from diagnose.io import read_qrels, read_run
from diagnose.metrics import evaluate_many, expand_metrics
lap("import diagnose.io + metrics")
qrels = read_qrels(sys.argv[1])
lap("read_qrels")
run = read_run(sys.argv[2])
lap("read_run")
names = expand_metrics(None, [1, 3, 5, 10, 100])
ev = evaluate_many(qrels, {"run": run}, names)
lap("evaluate_many (33 metrics)")
from diagnose.ties import tie_audit
tie_audit(qrels, run, names, k=100, base=ev["run"])
lap("tie audit (given the evaluation)")
evaluate_many(qrels, {"run": run}, names)
lap("evaluate_many again, same process")
assert "pandas" not in sys.modules, "the library path imported pandas"
print(json.dumps(stages))
"""


def stage_times(qrels: Path, run: Path, repeats: int) -> dict[str, tuple[float, float]]:
    """Median (CPU s, wall s) of each stage of the library path, in fresh processes."""
    samples: dict[str, list[tuple[float, float]]] = {}
    for _ in range(repeats):
        out = subprocess.run(
            [sys.executable, "-c", STAGES_SCRIPT, str(qrels), str(run)],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            cwd=ROOT,  # python -c / -m put the working directory first on sys.path
        ).stdout
        for name, (cpu, wall) in json.loads(out).items():
            samples.setdefault(name, []).append((cpu, wall))
    return {
        name: (statistics.median(c for c, _ in v), statistics.median(w for _, w in v))
        for name, v in samples.items()
    }


def diagnose_command(qrels: Path, run: Path) -> list[str]:
    """``python -m diagnose evaluate`` of THIS checkout (the ``diagnose`` script may be another tree's); the
    package's bytecode is compiled first (``compileall``, as ``pip install`` does), since a machine with
    ``PYTHONDONTWRITEBYTECODE=1`` would otherwise recompile ~70 modules in every process."""
    import compileall

    compileall.compile_dir(str(ROOT / "diagnose"), quiet=1)
    ks = ",".join(map(str, KS))
    return [
        sys.executable,
        "-m",
        "diagnose",
        "evaluate",
        "--qrels",
        str(qrels),
        "--run",
        f"synth={run}",
        "--k",
        ks,
        "--format",
        "json",
    ]


def commands(qrels: Path, run: Path) -> dict[str, list[str]]:
    return {
        "diagnose": diagnose_command(qrels, run),
        "pytrec_eval": [sys.executable, "-c", PYTREC_SCRIPT, str(qrels), str(run), ",".join(map(str, KS))],
        "ranx": [sys.executable, "-c", RANX_SCRIPT, str(qrels), str(run), ",".join(OURS)],
    }


def run_once(cmd: list[str]) -> tuple[float, float, float | None, str]:
    """(wall s, cpu s, peak RSS MB or None, stdout) of one fresh process."""
    use_time = Path("/usr/bin/time").exists()
    with tempfile.NamedTemporaryFile("r", suffix=".time") as tf:
        full = ["/usr/bin/time", "-v", "-o", tf.name, *cmd] if use_time else cmd
        before = os.times()
        t0 = time.perf_counter()
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        proc = subprocess.run(full, capture_output=True, text=True, check=False, env=env, cwd=ROOT)
        wall = time.perf_counter() - t0
        after = os.times()
        if proc.returncode != 0:
            raise SystemExit(
                f"command failed ({proc.returncode}): {' '.join(cmd[:3])} ...\n{proc.stderr[-2000:]}"
            )
        cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
        rss = None
        if use_time:
            m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", Path(tf.name).read_text())
            rss = int(m.group(1)) / 1024 if m else None
        else:
            import resource

            rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024  # max over children so far
    return wall, cpu, rss, proc.stdout


def aggregates(tool: str, stdout: str) -> dict[str, float]:
    """Aggregates keyed by our metric names."""
    data = json.loads(stdout)
    if tool == "diagnose":
        return next(iter(data["runs"].values()))["aggregate"]
    if tool == "ranx":
        return data
    out = {}
    for name, value in data.items():
        m = re.fullmatch(r"(P|recall|success|ndcg_cut|map_cut)_(\d+)", name)
        if m:
            fam = {v: k for k, v in TREC.items()}[m.group(1)]
            out[f"{fam}@{m.group(2)}"] = value
        else:
            out[{"map": "map", "recip_rank": "mrr", "Rprec": "r_precision"}[name]] = value
    return out


def bench_shape(qrels: Path, run: Path, repeats: int, tools: list[str] | None = None) -> list[dict]:
    results = {}
    chosen = {t: c for t, c in commands(qrels, run).items() if tools is None or t in tools}
    for tool, cmd in chosen.items():
        _, _, _, out = run_once(cmd)  # warm-up
        results[tool] = aggregates(tool, out)
    # interleaved: repeat i runs every tool once, so a change of load on the shared machine hits each tool alike
    samples: dict[str, list[tuple[float, float, float]]] = {tool: [] for tool in chosen}
    for _ in range(repeats):
        for tool, cmd in chosen.items():
            wall, cpu, rss, _ = run_once(cmd)
            samples[tool].append((wall, cpu, rss or 0.0))
    rows = [
        {
            "tool": tool,
            "wall": statistics.median(w for w, _, _ in got),
            "cpu": statistics.median(c for _, c, _ in got),
            "rss": max(r for _, _, r in got) or None,
            "walls": [w for w, _, _ in got],
        }
        for tool, got in samples.items()
    ]
    ours = results["diagnose"]
    for tool in [t for t in ("pytrec_eval", "ranx") if t in results]:
        shared = sorted(set(ours) & set(results[tool]))
        diff = max(abs(ours[m] - results[tool][m]) for m in shared)
        for row in rows:
            if row["tool"] == tool:
                row["check"] = f"{len(shared)} shared metrics, max abs diff {diff:.1e}"
    rows[0]["check"] = f"nDCG@10 {ours['ndcg@10']:.4f}, map {ours['map']:.4f}"
    return rows


def machine() -> str:
    return (
        f"{os.cpu_count()} cores ({cpu_name('?')}), Python {platform.python_version()}, {platform.system()}"
    )


def versions() -> str:
    from importlib.metadata import version

    return ", ".join(
        f"{p} {version(p)}" for p in ["numpy", "pandas", "pyarrow", "pytrec-eval-terrier", "ranx"]
    )


def render(
    all_rows: dict[str, list[dict]],
    stages: dict[str, dict[str, tuple[float, float]]],
    repeats: int,
    load: tuple[float, float],
    cmdline: str,
) -> str:
    lines = [
        "## evaluate",
        "",
        "Whole-process time to evaluate one TREC run (fresh process each time: interpreter, imports, "
        "parsing, evaluation), median of "
        f"{repeats} runs after one warm-up. Synthetic graded qrels (0/1/2) and runs with score ties from "
        "`bench/make_synthetic.py` (seed 0).",
        "",
        f"Command: `{cmdline}`",
        "",
        f"Machine: {machine()}; {versions()}. Load average before/after: {load[0]:.2f} / {load[1]:.2f} "
        "(the machine is shared; CPU time = user + sys, steadier than wall time under load).",
        "",
        "| shape (queries x depth) | tool | wall s (median) | CPU s (median) | wall vs diagnose | CPU vs diagnose "
        "| peak RSS MB | check |",
        "|---|---|---:|---:|---:|---:|---:|---|",
    ]
    for shape, rows in all_rows.items():
        base = rows[0]
        for row in rows:
            rss = f"{row['rss']:.0f}" if row["rss"] else "-"
            lines.append(
                f"| {shape} | {row['tool']} | {row['wall']:.2f} | {row['cpu']:.2f} | "
                f"{row['wall'] / base['wall']:.2f}x | {row['cpu'] / base['cpu']:.2f}x | {rss} | {row.get('check', '')} |"
            )
    shapes = list(stages)
    lines += [
        "",
        "Where diagnose's time goes (library path `read_qrels` + `read_run` + `evaluate_many`, fresh process, "
        f"median of {repeats}; CPU s / wall s):",
        "",
        "| stage | " + " | ".join(shapes) + " |",
        "|---|" + "---:|" * len(shapes),
    ]
    for name in stages[shapes[0]]:
        cells = [f"{stages[sh][name][0]:.3f} / {stages[sh][name][1]:.3f}" for sh in shapes]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "diagnose computes 33 metrics (precision, recall, hit_rate, mrr, ndcg, map at k = 1,3,5,10,100, then mrr, "
        "map, r_precision) and audits the score ties; pytrec_eval the 28 trec_eval equivalents (no mrr@k); ranx the "
        "same 33. The check column "
        "compares the three tools' aggregates on the metrics they share: pytrec_eval must agree to ~1e-15; ranx "
        "differs by design on these tied scores (it does not break ties by doc id; on tie-free runs it agrees, "
        "see tests/test_metrics_reference.py).",
        "",
    ]
    return "\n".join(lines)


def write_section(path: Path, section: str) -> None:
    """Replace (or append) the ``## evaluate`` section of RESULTS.md, leaving the other sections alone."""
    text = path.read_text() if path.exists() else "# Benchmarks\n"
    pattern = re.compile(r"^## evaluate\n.*?(?=^## |\Z)", re.S | re.M)
    if pattern.search(text):
        text = pattern.sub(lambda _: section + "\n", text, count=1)
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    path.write_text(text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, default=HERE / "out" / "synthetic")
    parser.add_argument("--shapes", default="1000x1000,10000x100")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--tools", default="diagnose,pytrec_eval,ranx", help="comma-separated subset (diagnose always first)"
    )
    parser.add_argument(
        "--write", type=Path, help="write the table into this RESULTS.md (## evaluate section)"
    )
    args = parser.parse_args(argv)

    sys.path.insert(0, str(HERE))
    from make_synthetic import parse_shapes, write_shape

    load_before = os.getloadavg()[0]
    all_rows, stages = {}, {}
    for nq, depth in parse_shapes(args.shapes):
        qrels, run = write_shape(args.dir, nq, depth, seed=0)
        all_rows[f"{nq:,} x {depth:,}"] = bench_shape(qrels, run, args.repeats, args.tools.split(","))
        stages[f"{nq:,} x {depth:,}"] = stage_times(qrels, run, args.repeats)
        print(stages[f"{nq:,} x {depth:,}"], file=sys.stderr)
        for row in all_rows[f"{nq:,} x {depth:,}"]:
            print(
                f"{nq}x{depth} {row['tool']:12s} wall {row['wall']:.2f}s cpu {row['cpu']:.2f}s "
                f"rss {row['rss'] or 0:.0f}MB walls {[round(w, 2) for w in row['walls']]} {row.get('check', '')}",
                file=sys.stderr,
            )
    cmdline = "python bench/bench_evaluate.py" + "".join(
        f" {a}" for a in (argv if argv is not None else sys.argv[1:]) if a
    )
    section = render(all_rows, stages, args.repeats, (load_before, os.getloadavg()[0]), cmdline)
    print(section)
    if args.write:
        write_section(args.write, section)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
