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

from diagnose.data import DataError

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
        raise DataError(f"--k expects comma-separated positive integers like 1,3,5,10; got {text!r}.") from None
    if not ks or ks[0] < 1:
        raise DataError(f"--k expects comma-separated positive integers like 1,3,5,10; got {text!r}.")
    return ks


def _add_data_args(p: argparse.ArgumentParser, *, run_required: bool) -> None:
    g = p.add_argument_group("data")
    g.add_argument("--data", metavar="DIR", help="BEIR folder: DIR/corpus.jsonl, DIR/queries.jsonl, DIR/qrels/SPLIT.tsv")
    g.add_argument("--split", default="test", help="qrels split inside --data (default: test)")
    g.add_argument("--qrels", metavar="F", help="golden set: BEIR TSV, TREC qrels or JSONL")
    g.add_argument("--queries", metavar="F", help="queries: BEIR queries.jsonl or TSV id<TAB>text")
    g.add_argument("--corpus", metavar="F", help="corpus: BEIR corpus.jsonl, CSV/TSV/Parquet, or a folder of .txt/.md")
    g.add_argument(
        "--run",
        action="append",
        default=[],
        metavar="[NAME=]F",
        help="a ranked run (TREC, JSONL or CSV); repeat for several" + (" (required)" if run_required else ""),
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
    g.add_argument("--cache-dir", metavar="DIR", help="where embeddings are cached (default: the user cache dir)")
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
        help="comma-separated metric names, e.g. ndcg@10,recall,mrr (a name without @k is taken at every --k)",
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
    fa.add_argument("--k", type=int, default=10, help="a query fails when no relevant document is in its top k")
    fa.add_argument(
        "--failure",
        choices=["hit", "recall"],
        default="hit",
        help="hit: no relevant document in the top k (default); recall: any relevant document missing from the top k",
    )
    fa.add_argument("--seed-threshold", type=float, default=0.75, help="cosine of the seed rule (default 0.75)")
    fa.add_argument(
        "--duplicate-cosine", type=float, default=0.95, help="near-duplicate cosine for label_gap (default 0.95)"
    )
    fa.add_argument("--format", choices=["table", "json", "csv"], default="table")
    _add_model_args(fa)

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
            raise DataError(f"A --run is already named {name!r}; baseline runs use that name. Rename your run.")
    if ds.corpus is None or ds.queries is None:
        raise DataError("--baseline needs the corpus and the queries. Pass --data DIR, or --corpus and --queries.")
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


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return "nan" if math.isnan(v) else f"{v:.4f}"
    return str(v)


def format_table(rows: list[dict[str, Any]], columns: list[str]) -> str:
    """A plain aligned text table."""
    cells = [[_fmt(r.get(c, "")) for c in columns] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) if cells else len(c) for i, c in enumerate(columns)]
    line = "  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True))
    out = [line, "  ".join("-" * w for w in widths)]
    for row in cells:
        out.append(
            "  ".join(
                (v.rjust(w) if _is_number(v) else v.ljust(w)) for v, w in zip(row, widths, strict=True)
            )
        )
    return "\n".join(out)


def format_markdown(rows: list[dict[str, Any]], columns: list[str]) -> str:
    out = ["| " + " | ".join(columns) + " |", "|" + "|".join("---:" if i else "---" for i in range(len(columns))) + "|"]
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
    ds = _load(args)
    _baseline_runs(args, ds)
    if not ds.runs:
        raise DataError("No run to evaluate. Pass --run [NAME=]FILE (repeatable) or --baseline bm25|dense|hybrid.")
    results = evaluate_many(ds.qrels, ds.runs, metric_names)
    for name, ev in results.items():
        if ev.missing_queries:
            ds.report.add(
                "query_missing_from_run",
                f"run {name!r}: {len(ev.missing_queries)} golden queries have no results; they score 0 (trec_eval -c)",
                file=ds.runs[name].source or None,
                count=len(ev.missing_queries),
                examples=ev.missing_queries,
            )
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
        payload["warnings"] = [p.to_dict() for p in ds.report.warnings]
        payload["validation"] = ds.report.to_dict()
        print(json.dumps(payload, indent=2, allow_nan=False, default=_json_default))
        return EXIT_OK

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
        return EXIT_OK

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
            print((format_markdown if args.format == "markdown" else format_table)(pq, ["query_id", *metric_names]))
    return EXIT_OK


def _transpose_table(rows: list[dict[str, Any]], metric_names: list[str], band) -> str:
    """Metrics as rows, runs as columns (readable with many metrics), each value with its quality band."""
    runs = [r["run"] for r in rows]
    out_rows = []
    for m in metric_names:
        row: dict[str, Any] = {"metric": m}
        for r in rows:
            v = r[m]
            row[r["run"]] = f"{v:.4f} {band(m, v)[:4]}"
        out_rows.append(row)
    return format_table(out_rows, ["metric", *runs])


def _json_default(o: Any) -> Any:
    import numpy as np

    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


# --------------------------------------------------------------------------------------------- failures


def cmd_failures(args: argparse.Namespace) -> int:
    from diagnose.failures import CLASS_LABELS, Thresholds, diagnose_run, find_label_noise, hubness, sort_worst
    from diagnose.lexical import BM25Index

    if args.k < 1:
        raise DataError(f"--k must be at least 1 (got {args.k}).")
    if len(args.run) != 1:
        raise DataError("diagnose failures analyses one run: pass exactly one --run [NAME=]FILE.")
    ds = _load(args, need_text=True)
    (run,) = ds.runs.values()
    golden = ds.qrels.queries_with_relevant()
    space = _vector_space(args, ds, [q for q in golden if q in ds.queries.text_of()])
    print("building the BM25 index ...", file=sys.stderr) if args.format == "table" else None
    bm25 = BM25Index.build(ds.corpus.texts(), list(ds.corpus.ids), engine=args.bm25_engine)
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
        print(json.dumps(payload, indent=2, default=_json_default))
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


COMMANDS = {"evaluate": cmd_evaluate, "failures": cmd_failures}


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
        print(f"internal error: {type(e).__name__}: {e}. This is a bug in diagnose; please report it.", file=sys.stderr)
        return EXIT_FAIL

