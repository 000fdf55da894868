"""A 3-configuration chunking sweep (`diagnose chunking --sizes 128,256,512 --overlaps 0`) of a 5,000-document
collection, cold (an empty cache: every chunk encoded) then warm (the same command again), with the default model.

The collection: NFCorpus (3,633 documents, its 323 judged test queries and qrels) plus the first 1,367 CACM
documents (ids prefixed ``cacm-``, no judgements: distractors from another field), written to a temporary BEIR
folder. Usage: ``python bench/bench_chunking.py [--shared ../shared/data] [--docs N] [--code CHECKOUT] [--save
PREFIX]``; prints the cold and warm wall times, the CPU seconds (user + system of the command: on a machine
shared with other work, wall time grows with the load, CPU time much less), the load average around them,
whether the warm results equal the cold ones (every field but ``cached`` and ``encode_s``) and the JSON of the warm
run. ``--docs`` below 5,000 keeps the mix
(NFCorpus : CACM = 3,633 : 1,367); ``--code`` runs another checkout's diagnose on the same data (A/B runs);
``--repeat N`` runs cold, warm and the floor N times (a fresh cache for each cold run) and prints the medians.

**The floor** (issue 37): after each cold run, a process of its own encodes, with the same model and
:func:`diagnose.embed.embed_texts` without a cache (distinct texts once, longest first, batches of 64), every distinct
text the sweep had to encode: the documents as they are (title + text: the dense baseline the sweep compares with),
the golden queries and the chunk texts of every configuration (read from the cold run's split cache, so no splitting
is timed). Its wall and CPU seconds exclude loading the model (a warm-up encode first); the sweep's include it, and
the splitting, the searches and the scores, so ``cold / floor`` is what the sweep costs beyond the encode it cannot
avoid. CPU seconds, and their ratio, move much less with the machine's load than wall seconds.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
N_DOCS = 5000


def build_collection(shared: Path, out: Path, n_docs: int = N_DOCS) -> None:
    """NFCorpus + CACM documents up to ``n_docs`` (below :data:`N_DOCS`: the same mix, 3,633 : 1,367, in
    proportion), NFCorpus' queries and test qrels, in ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    nf = (shared / "nfcorpus" / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
    if n_docs < N_DOCS:
        nf = nf[: round(n_docs * len(nf) / N_DOCS)]
    cacm = []
    for line in (
        (shared / "cacm" / "corpus.jsonl").read_text(encoding="utf-8").splitlines()[: n_docs - len(nf)]
    ):
        d = json.loads(line)
        d["_id"] = f"cacm-{d['_id']}"
        cacm.append(json.dumps(d))
    (out / "corpus.jsonl").write_text("\n".join(nf + cacm) + "\n", encoding="utf-8")
    shutil.copy(shared / "nfcorpus" / "queries.jsonl", out / "queries.jsonl")
    (out / "qrels").mkdir(exist_ok=True)
    shutil.copy(shared / "nfcorpus" / "qrels" / "test.tsv", out / "qrels" / "test.tsv")


def floor(data: Path, cache: Path, sizes: str, overlaps: str) -> dict[str, float]:
    """The bare encode of the distinct texts a cold sweep of ``data`` encodes (module docstring): ``{"texts",
    "chunk_texts", "wall_s", "cpu_s"}``. ``cache``: the cold run's cache folder (its split cache serves the chunks)."""
    import diagnose
    from diagnose.data import document_text
    from diagnose.embed import embed_texts
    from diagnose.whatif.chunking import SweepInputs, check_grid
    from diagnose.whatif.chunking.sweep import split_configuration

    ds = diagnose.load(data)
    an = diagnose.Analysis(ds, cache_dir=cache)
    inp = SweepInputs(ds, an.encoder, 10, list(an.golden), lambda: None, lambda: None, cache)
    chunks = {t for c in check_grid(sizes, overlaps) for t in split_configuration(inp, c).texts}
    docs = {document_text(ti, te) for ti, te in zip(inp.titles, inp.texts, strict=True)}
    text_of = ds.queries.text_of()
    queries = {str(text_of[q]) for q in an.golden}
    texts = sorted(chunks | docs | queries)
    an.encoder.encode(["a warm-up text: the model loaded before the clock starts"])
    cpu0, t0 = time.process_time(), time.perf_counter()
    embed_texts(an.encoder, texts, cache=None)
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    return {"texts": len(texts), "chunk_texts": len(chunks), "wall_s": wall, "cpu_s": cpu}


def _timed(cmd: list[str], env: dict[str, str]) -> tuple[str, float, float]:
    """stdout, wall seconds and CPU seconds (user + system of the child and its children) of ``cmd``."""
    cpu0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout
    wall = time.perf_counter() - t0
    cpu1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return out, wall, (cpu1.ru_utime - cpu0.ru_utime) + (cpu1.ru_stime - cpu0.ru_stime)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shared", type=Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument("--sizes", default="128,256,512")
    ap.add_argument("--overlaps", default="0")
    ap.add_argument("--docs", type=int, default=N_DOCS, help="documents (default 5,000; fewer keep the mix)")
    ap.add_argument(
        "--code", type=Path, default=ROOT, help="the checkout whose diagnose runs (default: this one)"
    )
    ap.add_argument("--save", help="write the cold and warm JSON to PREFIX-cold.json and PREFIX-warm.json")
    ap.add_argument("--repeat", type=int, default=1, help="runs of cold, warm and floor (medians printed)")
    ap.add_argument("--floor", nargs=2, type=Path, metavar=("DATA", "CACHE"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.floor:  # the floor's own process (main() starts it)
        print(json.dumps(floor(*args.floor, args.sizes, args.overlaps)))
        return
    if not (args.shared / "nfcorpus" / "corpus.jsonl").exists():
        sys.exit(f"no NFCorpus under {args.shared}")
    env = {**os.environ, "PYTHONPATH": str(args.code.resolve())}
    figures: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-chunking-") as tmp:
        data = Path(tmp) / "data"
        build_collection(args.shared, data, args.docs)
        for n in range(args.repeat):
            cache = Path(tmp) / f"cache{n}"
            cmd = [sys.executable, "-m", "diagnose", "chunking", "--data", str(data), "--sizes", args.sizes,
                   "--overlaps", args.overlaps, "--cache-dir", str(cache), "--format", "json"]  # fmt: skip
            outs = {}
            for label in ("cold", "warm"):
                load = os.getloadavg()[0]
                outs[label], wall, cpu = _timed(cmd, env)
                figures.setdefault(f"{label} wall", []).append(wall)
                figures.setdefault(f"{label} CPU", []).append(cpu)
                print(f"{label}: {wall:.1f} s wall, {cpu:.1f} s CPU (load average before: {load:.1f}, after: "
                      f"{os.getloadavg()[0]:.1f}, {os.cpu_count()} cores)", flush=True)  # fmt: skip
            fcmd = [sys.executable, str(Path(__file__).resolve()), "--floor", str(data), str(cache),
                    "--sizes", args.sizes, "--overlaps", args.overlaps]  # fmt: skip
            fl = json.loads(_timed(fcmd, env)[0])
            figures.setdefault("floor wall", []).append(fl["wall_s"])
            figures.setdefault("floor CPU", []).append(fl["cpu_s"])
            print(f"floor: the bare encode of {fl['texts']:,} distinct texts ({fl['chunk_texts']:,} chunk texts): "
                  f"{fl['wall_s']:.1f} s wall, {fl['cpu_s']:.1f} s CPU; cold / floor: "
                  f"{figures['cold wall'][-1] / fl['wall_s']:.2f}x wall, {figures['cold CPU'][-1] / fl['cpu_s']:.2f}x "
                  "CPU", flush=True)  # fmt: skip
            print(f"warm results equal the cold ones: {same_results(outs['cold'], outs['warm'])}", flush=True)
            shutil.rmtree(cache, ignore_errors=True)
        med = {k: statistics.median(v) for k, v in figures.items()}
        print(f"medians of {args.repeat}: " + ", ".join(f"{k} {v:.1f} s" for k, v in med.items())
              + f"; cold / floor {med['cold wall'] / med['floor wall']:.2f}x wall, "
              f"{med['cold CPU'] / med['floor CPU']:.2f}x CPU")  # fmt: skip
        for label, text in outs.items() if args.save else ():
            Path(f"{args.save}-{label}.json").write_text(text, encoding="utf-8")
        print(outs["warm"])


def _results(out: str) -> list[dict]:
    """The points of a ``--format json`` output without what may differ between two runs of the same data
    (``cached``, ``encode_s``)."""
    sweep = json.loads(out)
    drop = {"cached", "encode_s"}
    return [
        {k: v for k, v in p.items() if k not in drop} for p in (sweep["current"], *sweep["configurations"])
    ]


def same_results(a: str, b: str) -> bool:
    """Two ``--format json`` outputs agree: every field but ``cached`` and ``encode_s`` equal, floats within 1e-9
    relative (a mean of per-query values read back from the cache's JSON differs in the last bits: ``ndcg_diff``
    by ~1e-12)."""
    ra, rb = _results(a), _results(b)
    return len(ra) == len(rb) and all(
        p.keys() == q.keys()
        and all(
            math.isclose(p[k], q[k], rel_tol=1e-9, abs_tol=1e-12) if isinstance(p[k], float) else p[k] == q[k]
            for k in p
        )
        for p, q in zip(ra, rb, strict=True)
    )


if __name__ == "__main__":
    main()
