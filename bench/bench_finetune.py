"""``diagnose finetune`` on NFCorpus: train all-MiniLM-L6-v2 on the ``dev`` split's golden queries, measure on
``test`` (the defaults: 1 epoch, batch 32, training length 128, 2 pairs per query), whole process, then check that
``diagnose evaluate --baseline dense --model SAVED`` reports the same tuned numbers.

    python bench/bench_finetune.py [--data ../shared/data/nfcorpus] [--out /tmp/nfcorpus-tuned]

Prints the command, the wall time, the load average before and after (the machine is shared), base vs tuned on the
headline metrics with the paired test, the failures recovered and broken, and whether evaluate reproduces ``tuned``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HEAD = ("ndcg@10", "recall@10", "hit_rate@10", "mrr")


def _run(argv: list[str]) -> tuple[dict, float]:
    t0 = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode:
        sys.exit(f"failed ({done.returncode}): {' '.join(argv)}\n{done.stderr[-3000:]}")
    print(done.stderr.strip().splitlines()[0] if done.stderr.strip() else "", file=sys.stderr)
    return json.loads(done.stdout), time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument(
        "--data", default=str(Path(__file__).resolve().parents[2] / "shared" / "data" / "nfcorpus")
    )
    ap.add_argument("--out", default="/tmp/nfcorpus-tuned")
    ap.add_argument("--cache-dir", default=None)
    ap.add_argument("extra", nargs="*", help="more finetune flags, after --")
    args = ap.parse_args()
    cache = ["--cache-dir", args.cache_dir] if args.cache_dir else []
    cmd = [sys.executable, "-m", "diagnose", "finetune", "--data", args.data, "--train-split", "dev", "--split",
           "test", "--out", args.out, "--format", "json", *cache, *args.extra]  # fmt: skip
    print("command:", " ".join(cmd[2:]))
    load0 = os.getloadavg()
    got, seconds = _run(cmd)
    load1 = os.getloadavg()
    Path(args.out + ".json").write_text(json.dumps(got, indent=2))
    print(f"the JSON: {args.out}.json")
    print(
        f"wall {seconds:.0f} s (reported {got['seconds']} s), load average {load0[0]:.1f} before, {load1[0]:.1f} after"
    )
    print(
        f"train pairs {got['train_pairs']}, evaluation queries {got['evaluated_queries']}, settings {got['settings']}"
    )
    for m in HEAD:
        print(
            f"{m:12s} base {got['base'][m]:.4f}  tuned {got['tuned'][m]:.4f}  ({got['tuned'][m] - got['base'][m]:+.4f})"
        )
    for c in got["comparisons"]:
        print(f"  {c['metric']}: mean diff {c['mean_diff']:+.4f} [{c['ci_low']:+.4f}, {c['ci_high']:+.4f}] "
              f"p_holm {c['p_holm']:.4f} wins/ties/losses {c['wins']}/{c['ties']}/{c['losses']}")  # fmt: skip
    print(f"recovered {got['recovered']}, broken {got['broken']}")
    ev, _ = _run([sys.executable, "-m", "diagnose", "evaluate", "--data", args.data, "--split", "test",
                  "--baseline", "dense", "--model", got["model_path"], "--format", "json", *cache])  # fmt: skip
    same = ev["runs"]["dense"]["aggregate"] == got["tuned"]
    print(f"diagnose evaluate --baseline dense --model {got['model_path']} reproduces tuned exactly: {same}")


if __name__ == "__main__":
    main()
