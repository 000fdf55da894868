"""The `diagnose` command line: a thin layer over the library.

Exit codes: 0 ok, 1 an unexpected internal error (or a CI gate that failed), 2 an input or usage error (a message,
never a traceback).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import traceback
from collections.abc import Sequence
from typing import Any

from diagnose.data import DataError, json_default

EXIT_OK = 0
EXIT_FAIL = 1
EXIT_INPUT = 2

DEFAULT_KS = "1,3,5,10"


class _Parser(argparse.ArgumentParser):
    """argparse that raises instead of exiting, so `main` decides the exit code and the message."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise DataError(f"{self.prog}: {message}. Run `{self.prog} --help` for the options.")


def _parse_ks(text: str) -> list[int]:
    try:
        ks = sorted({int(x) for x in text.split(",") if x.strip()})
    except ValueError:
        raise DataError(
            f"--k expects comma-separated positive integers like 1,3,5,10; got {text!r}."
        ) from None
    if not ks or ks[0] < 1:
        raise DataError(f"--k expects comma-separated positive integers like 1,3,5,10; got {text!r}.")
    return ks


def _add_data_args(p: argparse.ArgumentParser, *, run_required: bool) -> None:
    g = p.add_argument_group("data")
    g.add_argument(
        "--data", metavar="DIR", help="BEIR folder: DIR/corpus.jsonl, DIR/queries.jsonl, DIR/qrels/SPLIT.tsv"
    )
    g.add_argument("--split", default="test", help="qrels split inside --data (default: test)")
    g.add_argument("--qrels", metavar="F", help="golden set: BEIR TSV, TREC qrels or JSONL")
    g.add_argument("--queries", metavar="F", help="queries: BEIR queries.jsonl or TSV id<TAB>text")
    g.add_argument(
        "--corpus", metavar="F", help="corpus: BEIR corpus.jsonl, CSV/TSV/Parquet, or a folder of .txt/.md"
    )
    g.add_argument(
        "--run",
        action="append",
        default=[],
        metavar="[NAME=]F",
        help="a ranked run (TREC, JSONL or CSV); repeat for several"
        + (" (required)" if run_required else ""),
    )


def _add_model_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("embeddings")
    g.add_argument(
        "--model",
        metavar="NAME_OR_PATH",
        default=None,
        help="sentence-transformers model name or local folder (default: bundled all-MiniLM-L6-v2, offline)",
    )
    g.add_argument("--doc-embeddings", metavar="F", help="precomputed document vectors (.npy or .parquet)")
    g.add_argument("--query-embeddings", metavar="F", help="precomputed query vectors (.npy or .parquet)")
    g.add_argument("--doc-ids", metavar="F", help="ids for --doc-embeddings .npy, one per line")
    g.add_argument("--query-ids", metavar="F", help="ids for --query-embeddings .npy, one per line")
    g.add_argument(
        "--cache-dir", metavar="DIR", help="where embeddings are cached (default: the user cache dir)"
    )
    g.add_argument(
        "--bm25-engine", choices=["bm25s", "rank_bm25"], default="bm25s", help="BM25 engine (default: bm25s)"
    )


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="diagnose",
        description="Tell why a retriever fails: exact trec_eval metrics, failure classes with evidence, baselines.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    ev = sub.add_parser(
        "evaluate",
        help="score runs against a golden set (trec_eval conventions)",
        description="Score one or more runs against a golden set, per query and overall.",
        epilog="Example: diagnose evaluate --data demo_corpus --run demo_corpus/runs/ann_minilm.trec --k 1,5,10",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_data_args(ev, run_required=False)
    ev.add_argument("--k", default=DEFAULT_KS, help=f"cutoffs, comma-separated (default: {DEFAULT_KS})")
    ev.add_argument(
        "--metrics",
        default=None,
        help="comma-separated metric names, e.g. ndcg@10,recall,mrr@10 (precision, recall, hit_rate, ndcg and f1 "
        "without @k are taken at every --k; mrr, map and r_precision without @k mean no cutoff)",
    )
    ev.add_argument("--per-query", action="store_true", help="also print per-query values")
    ev.add_argument("--format", choices=["table", "json", "csv", "markdown"], default="table")
    ev.add_argument(
        "--baseline",
        action="append",
        default=[],
        choices=["bm25", "dense", "hybrid"],
        help="add a baseline run computed here (repeatable); then --run is optional",
    )
    ev.add_argument("--depth", type=int, default=100, help="depth of baseline runs (default: 100)")
    ev.add_argument("--write-runs", metavar="DIR", help="write the baseline runs as TREC files into DIR")
    g = ev.add_argument_group("comparisons and CI gate")
    g.add_argument(
        "--reference", metavar="NAME", help="the run the others are compared with (default: the first)"
    )
    g.add_argument(
        "--compare-to",
        metavar="NAME=F",
        help="a reference run file (e.g. the last release); it becomes the reference of the comparisons",
    )
    g.add_argument(
        "--fail-under",
        action="append",
        default=[],
        metavar="METRIC=VALUE",
        help="exit 1 when a run's mean metric is below VALUE (repeatable), e.g. ndcg@10=0.60",
    )
    g.add_argument(
        "--max-drop",
        action="append",
        default=[],
        metavar="METRIC=VALUE",
        help="exit 1 when a run's mean metric is more than VALUE below the reference's (repeatable), e.g. ndcg@10=0.01",
    )
    g.add_argument(
        "--seed", type=int, default=0, help="seed of the bootstrap and randomization tests (default 0)"
    )
    g.add_argument(
        "--resamples", type=int, default=10_000, help="bootstrap / randomization resamples (default 10000)"
    )
    g.add_argument(
        "--slice",
        metavar="FIELD",
        help="also report the metrics per value of this query metadata field (e.g. area)",
    )
    _add_model_args(ev)

    fa = sub.add_parser(
        "failures",
        help="why each failed query failed: class, evidence, recommendation",
        description="Diagnose every failed (query, relevant document) pair of a run: a failure class with its "
        "evidence (cosine, run/dense/BM25 ranks, missing terms, the documents that beat it) and a recommendation.",
        epilog="Example: diagnose failures --data demo_corpus --run demo_corpus/runs/ann_minilm.trec --k 10",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_data_args(fa, run_required=True)
    fa.add_argument(
        "--k", type=int, default=10, help="a query fails when no relevant document is in its top k"
    )
    fa.add_argument(
        "--failure",
        choices=["hit", "recall"],
        default="hit",
        help="hit: no relevant document in the top k (default); recall: any relevant document missing from the top k",
    )
    fa.add_argument(
        "--seed-threshold", type=float, default=0.75, help="cosine of the seed rule (default 0.75)"
    )
    fa.add_argument(
        "--duplicate-cosine",
        type=float,
        default=0.95,
        help="near-duplicate cosine for label_gap (default 0.95)",
    )
    fa.add_argument("--format", choices=["table", "json", "csv"], default="table")
    _add_model_args(fa)

    mo = sub.add_parser(
        "models",
        help="which embedding model for this golden set: metrics with CIs, ties, speed, memory",
        description="Compare embedding models on the golden set: exact dense retrieval per model, metrics with 95%% "
        "bootstrap CIs, significance against the best (statistically tied models share rank 1), encoding "
        "throughput, vector size, index memory, calibrated threshold, failure classes, recall per millisecond.",
        epilog="Example: diagnose models --data demo_corpus --model default --model /path/to/other-model",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_data_args(mo, run_required=False)
    mo.add_argument(
        "--model",
        action="append",
        default=[],
        metavar="NAME_OR_PATH",
        help="a sentence-transformers model name or local folder, repeatable; `default` = the bundled model",
    )
    mo.add_argument("--k", type=int, default=10, help="cutoff (default 10)")
    mo.add_argument("--metric", default=None, help="the metric models are ranked by (default ndcg@K)")
    mo.add_argument("--cache-dir", metavar="DIR", help="where embeddings are cached")
    mo.add_argument("--seed", type=int, default=0, help="seed of the bootstrap and randomization tests")
    mo.add_argument("--format", choices=["table", "json", "csv"], default="table")

    rr = sub.add_parser(
        "rerank",
        help="judge a reranker against its candidates (ceiling, gains, failures recovered and introduced)",
        description="Evaluate a reranker from a candidate run and a reranked run, or rerank live with a "
        "sentence-transformers CrossEncoder.",
        epilog="Example: diagnose rerank --data demo_corpus --candidates demo_corpus/runs/ann_minilm.trec "
        "--reranked reranked.trec",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_data_args(rr, run_required=False)
    rr.add_argument("--candidates", required=True, metavar="[NAME=]F", help="the first-stage run")
    rr.add_argument("--reranked", metavar="[NAME=]F", help="the reranked run")
    rr.add_argument(
        "--cross-encoder", metavar="NAME_OR_PATH", help="rerank live with this CrossEncoder instead"
    )
    rr.add_argument(
        "--depth", type=int, default=100, help="candidates reranked / recall ceiling depth (default 100)"
    )
    rr.add_argument("--k", type=int, default=10, help="cutoff of the failures and nDCG (default 10)")
    rr.add_argument("--format", choices=["table", "json"], default="table")

    fu = sub.add_parser(
        "fuse",
        help="what if two runs were fused (RRF, weighted): metrics and failures recovered",
        description="Fuse two runs with reciprocal rank fusion and weighted min-max score fusion at several weights, "
        "and count the failures at k each fusion would recover or lose.",
        epilog="Example: diagnose fuse --data demo_corpus --run demo_corpus/runs/ann_minilm.trec "
        "--run demo_corpus/runs/bm25_langchain.trec",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_data_args(fu, run_required=True)
    fu.add_argument("--k", type=int, default=10, help="cutoff (default 10)")
    fu.add_argument(
        "--rrf-k", type=int, default=60, help="the k constant of reciprocal rank fusion (default 60)"
    )
    fu.add_argument("--format", choices=["table", "json", "csv"], default="table")

    return parser


# --------------------------------------------------------------------------------------------- evaluate


def _load(args: argparse.Namespace, *, need_text: bool = False):
    from diagnose.io import load_dataset, parse_run_arg

    if not args.data and not args.qrels:
        raise DataError("No golden set given. Pass --data DIR (a BEIR folder) or --qrels FILE.")
    runs = [parse_run_arg(r) for r in args.run]
    ds = load_dataset(
        data_dir=args.data,
        split=args.split,
        corpus=args.corpus,
        queries=args.queries,
        qrels=args.qrels,
        runs=runs,
    )
    if need_text and (ds.corpus is None or ds.queries is None):
        raise DataError(
            "This needs the texts of the corpus and the queries. Pass --data DIR, or --corpus and --queries."
        )
    return ds


def _baseline_runs(args: argparse.Namespace, ds) -> None:
    """Compute the requested baselines and add them to ``ds.runs`` (names: bm25, dense, hybrid)."""
    if not args.baseline:
        return
    from diagnose import baselines

    wanted = list(dict.fromkeys(args.baseline))
    for name in wanted:
        if name in ds.runs:
            raise DataError(
                f"A --run is already named {name!r}; baseline runs use that name. Rename your run."
            )
    if ds.corpus is None or ds.queries is None:
        raise DataError(
            "--baseline needs the corpus and the queries. Pass --data DIR, or --corpus and --queries."
        )
    query_ids = ds.qrels.queries_with_relevant()
    need_dense = bool({"dense", "hybrid"} & set(wanted))
    need_bm25 = bool({"bm25", "hybrid"} & set(wanted))
    made = {}
    if need_bm25:
        made["bm25"] = baselines.bm25_run(
            ds.corpus, ds.queries, query_ids, depth=args.depth, engine=args.bm25_engine
        )
    if need_dense:
        space = _vector_space(args, ds, query_ids)
        made["dense"] = baselines.dense_run(
            space.doc_vecs, space.query_vecs, space.doc_ids, space.query_ids, depth=args.depth
        )
    if "hybrid" in wanted:
        made["hybrid"] = baselines.hybrid_run(made["bm25"], made["dense"], depth=args.depth)
    for name in wanted:
        ds.runs[name] = made[name]
    if args.write_runs:
        from pathlib import Path

        from diagnose.io import write_trec_run

        out = Path(args.write_runs)
        out.mkdir(parents=True, exist_ok=True)
        for name in wanted:
            write_trec_run(made[name], out / f"{name}.trec")
            print(f"wrote {out / f'{name}.trec'}", file=sys.stderr)


def _vector_space(args: argparse.Namespace, ds, query_ids):
    from diagnose.space import VectorSpace

    return VectorSpace.build(
        ds,
        query_ids,
        model=args.model,
        doc_embeddings=args.doc_embeddings,
        query_embeddings=args.query_embeddings,
        doc_ids=args.doc_ids,
        query_ids_file=args.query_ids,
        cache_dir=args.cache_dir,
        progress=True,
    )


def _cache_root(args: argparse.Namespace):
    from pathlib import Path

    from diagnose.cache import default_cache_root

    return Path(args.cache_dir) if args.cache_dir else default_cache_root()


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return "nan" if math.isnan(v) else f"{v:.4f}"
    return str(v)


def format_table(rows: list[dict[str, Any]], columns: list[str]) -> str:
    """A plain aligned text table."""
    cells = [[_fmt(r.get(c, "")) for c in columns] for r in rows]
    widths = [
        max(len(c), *(len(row[i]) for row in cells)) if cells else len(c) for i, c in enumerate(columns)
    ]
    line = "  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True))
    out = [line, "  ".join("-" * w for w in widths)]
    for row in cells:
        out.append(
            "  ".join((v.rjust(w) if _is_number(v) else v.ljust(w)) for v, w in zip(row, widths, strict=True))
        )
    return "\n".join(out)


def format_markdown(rows: list[dict[str, Any]], columns: list[str]) -> str:
    out = [
        "| " + " | ".join(columns) + " |",
        "|" + "|".join("---:" if i else "---" for i in range(len(columns))) + "|",
    ]
    for r in rows:
        out.append("| " + " | ".join(_fmt(r.get(c, "")).replace("|", "\\|") for c in columns) + " |")
    return "\n".join(out)


def _is_number(s: str) -> bool:
    try:
        float(s)
    except ValueError:
        return False
    return True


def _print_warnings(report, fmt: str) -> None:
    if fmt == "json":
        return
    for p in report.warnings:
        print("warning: " + p.format(), file=sys.stderr)


def cmd_evaluate(args: argparse.Namespace) -> int:
    from diagnose.metrics import evaluate_many, expand_metrics, quality_band

    ks = _parse_ks(args.k)
    metric_names = expand_metrics(args.metrics.split(",") if args.metrics else None, ks)
    fail_under = _parse_bounds(args.fail_under, "--fail-under")
    max_drop = _parse_bounds(args.max_drop, "--max-drop")
    extra = (
        [m for m in expand_metrics([*fail_under, *max_drop], ks) if m not in metric_names]
        if (fail_under or max_drop)
        else []
    )
    metric_names += extra
    ds = _load(args)
    reference = _add_compare_to(args, ds)
    _baseline_runs(args, ds)
    if not ds.runs:
        raise DataError(
            "No run to evaluate. Pass --run [NAME=]FILE (repeatable) or --baseline bm25|dense|hybrid."
        )
    reference = reference or args.reference or next(iter(ds.runs))
    if reference not in ds.runs:
        raise DataError(f"--reference {reference!r} is not one of the runs: {', '.join(ds.runs)}.")
    if max_drop and len(ds.runs) < 2:
        raise DataError("--max-drop needs a reference: pass --compare-to NAME=FILE or a second --run.")
    results = evaluate_many(ds.qrels, ds.runs, metric_names)
    comparisons = _comparisons(args, results, reference, _headline_metrics(args, ks, metric_names, max_drop))
    changes = _fixes_and_breaks(results, reference, ks[-1]) if len(results) > 1 else {}
    gate = _gate(results, reference, fail_under, max_drop, skip_reference=bool(args.compare_to or max_drop))
    slices = None
    if args.slice:
        from diagnose.compare import slice_metrics

        if ds.queries is None:
            raise DataError("--slice needs the queries file (with metadata): pass --queries F or --data DIR.")
        slices = slice_metrics(results, ds.queries, args.slice)
    _print_warnings(ds.report, args.format)

    if args.format == "json":
        payload: dict[str, Any] = {"runs": {}, "metrics": metric_names, "k": ks}
        for name, ev in results.items():
            entry: dict[str, Any] = {
                "aggregate": {m: float(v) for m, v in ev.aggregate.items()},
                "quality": {m: quality_band(m, v) for m, v in ev.aggregate.items()},
                "n_queries": int(len(ev.per_query)),
                "missing_queries": list(ev.missing_queries),
            }
            if args.per_query:
                entry["per_query"] = {
                    str(q): {m: float(v) for m, v in row.items()} for q, row in ev.per_query.iterrows()
                }
            payload["runs"][name] = entry
        payload["no_relevant_queries"] = list(next(iter(results.values())).no_relevant_queries)
        payload["reference"] = reference
        payload["comparisons"] = [c.to_dict() for c in comparisons]
        payload["query_changes"] = changes
        if slices is not None:
            payload["slices"] = slices.to_dict(orient="records")
        payload["gate"] = {"passed": not gate, "failures": gate}
        payload["warnings"] = [p.to_dict() for p in ds.report.warnings]
        payload["validation"] = ds.report.to_dict()
        print(json.dumps(payload, indent=2, allow_nan=False, default=json_default))
        return _gate_exit(gate)

    if args.format == "csv":
        import pandas as pd

        frames = []
        for name, ev in results.items():
            if args.per_query:
                df = ev.per_query.reset_index()
            else:
                df = pd.DataFrame([{"query_id": "all", **ev.aggregate}])
            df.insert(0, "run", name)
            frames.append(df)
        sys.stdout.write(pd.concat(frames, ignore_index=True).to_csv(index=False, float_format="%.6f"))
        return _gate_exit(gate)

    rows = [{"run": name, **ev.aggregate} for name, ev in results.items()]
    columns = ["run", *metric_names]
    if args.format == "markdown":
        print(format_markdown(rows, columns))
    else:
        n = len(next(iter(results.values())).per_query)
        print(f"{n} golden queries with at least one relevant document; k = {','.join(map(str, ks))}\n")
        print(_transpose_table(rows, metric_names, quality_band))
    if args.per_query:
        for name, ev in results.items():
            print(f"\nper query: {name}")
            pq = [{"query_id": q, **row} for q, row in ev.per_query.iterrows()]
            print(
                (format_markdown if args.format == "markdown" else format_table)(
                    pq, ["query_id", *metric_names]
                )
            )
    if args.slice:
        print(f"\nper {args.slice}:")
        print(format_table(slices.to_dict(orient="records"), list(slices.columns)))
    if comparisons:
        print(
            f"\ncomparisons with {reference!r} (paired; 95% bootstrap CI; Holm over {len(comparisons)} tests):"
        )
        for c in comparisons:
            print(f"- {c.verdict()}")
        for name, ch in changes.items():
            print(
                f"- {name} vs {reference} at k={ks[-1]}: fixes {len(ch['fixed'])} queries "
                f"({', '.join(ch['fixed'][:8]) or '-'}), breaks {len(ch['broken'])} "
                f"({', '.join(ch['broken'][:8]) or '-'}); `diagnose failures` tells why each one fails."
            )
    return _gate_exit(gate)


def _headline_metrics(
    args: argparse.Namespace, ks: list[int], metric_names: list[str], max_drop
) -> list[str]:
    """What the comparisons test: the metrics asked for with --metrics, else nDCG, recall at the largest k and MRR;
    plus every --max-drop metric. (Testing every metric at every k would make the Holm family needlessly large.)"""
    chosen = list(metric_names) if args.metrics else [f"ndcg@{ks[-1]}", f"recall@{ks[-1]}", "mrr"]
    return list(dict.fromkeys([*chosen, *max_drop]))


def _fixes_and_breaks(results, reference: str, k: int) -> dict[str, dict[str, list[str]]]:
    """Per run: the golden queries it fixes (reference misses at k, run hits) and breaks (the reverse)."""
    from diagnose.compare import per_query_deltas

    metric = f"hit_rate@{k}"
    if metric not in results[reference].per_query:
        return {}
    out = {}
    for name, ev in results.items():
        if name == reference:
            continue
        d = per_query_deltas(results[reference], ev, metric)
        out[name] = {
            "metric": metric,
            "fixed": d.loc[d["change"] == "fixed", "query_id"].astype(str).tolist(),
            "broken": d.loc[d["change"] == "broken", "query_id"].astype(str).tolist(),
        }
    return out


def _parse_bounds(items: list[str], flag: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for item in items:
        name, sep, value = item.partition("=")
        try:
            if not sep or not name.strip():
                raise ValueError
            out[name.strip()] = float(value)
        except ValueError:
            raise DataError(f"{flag} expects METRIC=VALUE like ndcg@10=0.60; got {item!r}.") from None
    return out


def _add_compare_to(args: argparse.Namespace, ds) -> str | None:
    if not args.compare_to:
        return None
    from diagnose.io import parse_run_arg, read_run

    name, path = parse_run_arg(args.compare_to)
    if name in ds.runs:
        raise DataError(f"--compare-to {name!r}: a --run has the same name; name the reference differently.")
    ds.runs = {name: read_run(path, name=name, report=ds.report), **ds.runs}
    return name


def _comparisons(args: argparse.Namespace, results, reference: str, metric_names: list[str]):
    if len(results) < 2:
        return []
    from diagnose.stats import compare_all

    return compare_all(
        {name: ev.per_query for name, ev in results.items()},
        reference,
        metric_names,
        n_resamples=args.resamples,
        seed=args.seed,
    )


def _gate(
    results, reference: str, fail_under: dict[str, float], max_drop: dict[str, float], *, skip_reference: bool
) -> list[str]:
    """The CI gate: readable messages for every bound a run breaks (empty = passed). The reference is not gated
    when it is what the others are held against (``--compare-to`` or ``--max-drop``)."""
    failures = []
    for name, ev in results.items():
        if name == reference and skip_reference:
            continue
        for metric, bound in fail_under.items():
            value = ev.aggregate[metric]
            if value < bound:
                failures.append(
                    f"run {name!r}: {metric} = {value:.4f} is below the bound {bound:g} (--fail-under)"
                )
        for metric, drop in max_drop.items():
            value, ref = ev.aggregate[metric], results[reference].aggregate[metric]
            if ref - value > drop:
                failures.append(
                    f"run {name!r}: {metric} = {value:.4f} dropped {ref - value:.4f} below the reference "
                    f"{reference!r} ({ref:.4f}); the allowed drop is {drop:g} (--max-drop)"
                )
    return failures


def _gate_exit(gate: list[str]) -> int:
    for msg in gate:
        print(f"gate failed: {msg}", file=sys.stderr)
    return EXIT_FAIL if gate else EXIT_OK


def _transpose_table(rows: list[dict[str, Any]], metric_names: list[str], band) -> str:
    """Metrics as rows, runs as columns (readable with many metrics), each value with its quality band."""
    runs = [r["run"] for r in rows]
    out_rows = []
    for m in metric_names:
        row: dict[str, Any] = {"metric": m}
        for r in rows:
            v = r[m]
            row[r["run"]] = f"{v:.4f} ({band(m, v)})"
        out_rows.append(row)
    return format_table(out_rows, ["metric", *runs])


# --------------------------------------------------------------------------------------------- failures


def cmd_failures(args: argparse.Namespace) -> int:
    from diagnose.failures import (
        CLASS_LABELS,
        Thresholds,
        diagnose_run,
        find_label_noise,
        hubness,
        sort_worst,
    )
    from diagnose.lexical import BM25Index

    if args.k < 1:
        raise DataError(f"--k must be at least 1 (got {args.k}).")
    if len(args.run) != 1:
        raise DataError("diagnose failures analyses one run: pass exactly one --run [NAME=]FILE.")
    ds = _load(args, need_text=True)
    (run,) = ds.runs.values()
    golden = ds.qrels.queries_with_relevant()
    with_text = ds.queries.text_of()
    space = _vector_space(args, ds, [q for q in golden if q in with_text])
    if args.format == "table":
        print("building the BM25 index ...", file=sys.stderr)
    bm25 = BM25Index.build(
        ds.corpus.texts(), list(ds.corpus.ids), engine=args.bm25_engine, cache_dir=_cache_root(args) / "bm25",
        report=ds.report,
    )  # fmt: skip
    thresholds = Thresholds(seed_cosine=args.seed_threshold, duplicate_cosine=args.duplicate_cosine)
    diag = diagnose_run(ds, run, space, bm25, k=args.k, mode=args.failure, thresholds=thresholds)
    noise = find_label_noise(ds, run, space, k=args.k, duplicate_cosine=args.duplicate_cosine)
    hubs = hubness(run, k=args.k, n_docs=len(ds.corpus))
    _print_warnings(ds.report, args.format)

    if args.format == "json":
        payload = diag.to_dict()
        payload["label_noise"] = noise.to_dict()
        payload["hubness"] = hubs.to_dict()
        payload["warnings"] = [p.to_dict() for p in ds.report.warnings]
        print(json.dumps(payload, indent=2, default=json_default))
        return EXIT_OK
    df = diag.frame()
    if args.format == "csv":
        sys.stdout.write(df.to_csv(index=False, float_format="%.6f"))
        return EXIT_OK

    cal = diag.calibration
    print(
        f"run {run.name!r}: {len(diag.failed_queries)} of {diag.n_queries} golden queries fail at k={args.k} "
        f"({args.failure}); {len(diag.failures)} missed relevant documents analysed.\n"
        f"model {space.model}: calibrated cosine threshold {cal.calibrated:.3f} "
        f"({cal.to_dict()['method']}, {cal.n_pairs} pairs); seed threshold {cal.seed:.2f}.\n"
    )
    for f in sort_worst(diag.failures):
        print(f"[{f.cls}] query {f.query_id}: {f.query_text}")
        print(f"  target {f.doc_id} (grade {f.grade}): {f.evidence}")
        if f.missing_terms:
            print(f"  query terms missing from the target: {', '.join(f.missing_terms)}")
        beat = [c for c in f.top_retrieved[:3]]
        if beat:
            print(
                "  beaten by: "
                + "; ".join(
                    f"#{c.rank} {c.doc_id} (cos q {_fmt(c.cosine_query)}, cos target {_fmt(c.cosine_target)})"
                    for c in beat
                )
            )
        print(f"  seed rule: {f.seed_verdict}; calibrated rule: {f.calibrated_verdict}\n")
    print("counts per class:")
    counts = [{"class": c, "label": CLASS_LABELS[c], "count": n} for c, n in diag.class_counts.items()]
    print(format_table(counts, ["class", "label", "count"]))
    print("\nrecommendations:")
    from diagnose.failures import RECOMMENDATIONS

    for c, n in diag.class_counts.items():
        if n:
            print(f"- {c}: {RECOMMENDATIONS[c]}")
    if len(noise.unjudged_duplicates) or len(noise.conflicting_queries):
        print(
            f"\nlabel noise: {len(noise.unjudged_duplicates)} unjudged near-duplicates of relevant documents in top "
            f"{args.k}; {len(noise.duplicate_documents)} duplicate documents in the corpus; "
            f"{len(noise.conflicting_queries)} identical queries with conflicting judgements."
        )
    if len(hubs.hubs):
        print(f"\nhubs (k-occurrence skewness {hubs.skewness:.2f}):")
        print(format_table(hubs.hubs.to_dict(orient="records"), ["doc_id", "occurrences", "share"]))
    return EXIT_OK


# ----------------------------------------------------------------------------------- models, rerank, fuse


def cmd_models(args: argparse.Namespace) -> int:
    from diagnose.models import compare_models

    if args.k < 1:
        raise DataError(f"--k must be at least 1 (got {args.k}).")
    ds = _load(args, need_text=True)
    names = [None if m in ("default", "") else m for m in (args.model or ["default"])]
    cmp = compare_models(
        ds,
        names,
        k=args.k,
        metric=args.metric,
        cache_dir=args.cache_dir,
        progress=args.format == "table",
        seed=args.seed,
        log=lambda m: print(m, file=sys.stderr),
    )
    table = cmp.table()
    if args.format == "json":
        print(json.dumps(cmp.to_dict(), indent=2, default=json_default))
    elif args.format == "csv":
        sys.stdout.write(table.to_csv(index=False, float_format="%.6f"))
    else:
        cols = ["rank", "model", cmp.metric, "ci_low", "ci_high", f"recall@{args.k}", "dim", "docs_per_s",
                "index_mb", "ms_per_query", "calibrated_threshold"]  # fmt: skip
        print(format_table(table.to_dict(orient="records"), cols))
        tied = table.loc[table["tied_with_best"], "model"].tolist()
        if len(tied) > 1:
            print(f"\nstatistically tied for the best on {cmp.metric}: {', '.join(tied)} (Holm-corrected "
                  "randomization test against the best; the data cannot tell them apart).")  # fmt: skip
        print("\nfailure classes per model:")
        cls_cols = [c for c in table.columns if c.startswith("n_")]
        print(format_table(table.to_dict(orient="records"), ["model", *cls_cols]))
    return EXIT_OK


def cmd_rerank(args: argparse.Namespace) -> int:
    from diagnose.compare import rerank_cross_encoder, rerank_report
    from diagnose.io import parse_run_arg, read_run

    if bool(args.reranked) == bool(args.cross_encoder):
        raise DataError("Pass either --reranked [NAME=]FILE or --cross-encoder MODEL (one of them).")
    ds = _load(args, need_text=bool(args.cross_encoder))
    name, path = parse_run_arg(args.candidates)
    candidates = read_run(path, name=name, report=ds.report)
    if args.reranked:
        rname, rpath = parse_run_arg(args.reranked)
        reranked = read_run(rpath, name=rname, report=ds.report)
    else:
        doc_text = dict(zip(ds.corpus.ids, ds.corpus.texts(), strict=True))
        reranked = rerank_cross_encoder(
            candidates, ds.queries.text_of(), doc_text, args.cross_encoder, depth=args.depth,
            progress=args.format == "table",
        )  # fmt: skip
    rep = rerank_report(ds.qrels, candidates, reranked, k=args.k, depth=args.depth)
    _print_warnings(ds.report, args.format)
    if args.format == "json":
        print(json.dumps(rep.to_dict(), indent=2, default=json_default))
        return EXIT_OK
    print(
        f"ceiling: recall@{args.depth} of the candidates = {rep.ceiling:.4f} (no reranker of them can beat it)"
    )
    rows = [{"metric": m, "before": rep.before[m], "after": rep.after[m], "change": rep.after[m] - rep.before[m]}
            for m in rep.before]  # fmt: skip
    print(format_table(rows, ["metric", "before", "after", "change"]))
    print(f"\nfailures at k={args.k} recovered: {len(rep.recovered)} ({', '.join(rep.recovered[:10])})")
    print(f"failures introduced: {len(rep.introduced)} ({', '.join(rep.introduced[:10])})")
    return EXIT_OK


def cmd_fuse(args: argparse.Namespace) -> int:
    from diagnose.compare import fusion_whatif

    if len(args.run) != 2:
        raise DataError("diagnose fuse takes exactly two --run files.")
    ds = _load(args)
    table = fusion_whatif(ds.qrels, list(ds.runs.values()), k=args.k, rrf_k=args.rrf_k)
    _print_warnings(ds.report, args.format)
    if args.format == "json":
        print(json.dumps({"fusions": table.to_dict(orient="records")}, indent=2, default=json_default))
    elif args.format == "csv":
        sys.stdout.write(table.to_csv(index=False, float_format="%.6f"))
    else:
        print(format_table(table.to_dict(orient="records"), list(table.columns)))
    return EXIT_OK


COMMANDS = {
    "evaluate": cmd_evaluate,
    "failures": cmd_failures,
    "models": cmd_models,
    "rerank": cmd_rerank,
    "fuse": cmd_fuse,
}


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code (the console script passes it to ``sys.exit``)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        if not args.command:
            parser.print_help()
            return EXIT_INPUT
        return COMMANDS[args.command](args)
    except DataError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_INPUT
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return EXIT_OK
    except SystemExit as e:  # --help
        return int(e.code or 0)
    except Exception as e:  # noqa: BLE001 - the last line of defence: a bug, not a user mistake
        traceback.print_exc()
        print(
            f"internal error: {type(e).__name__}: {e}. This is a bug in diagnose; please report it.",
            file=sys.stderr,
        )
        return EXIT_FAIL
