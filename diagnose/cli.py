"""The `diagnose` command line: a thin layer over the library.

Exit codes: 0 ok, 1 an unexpected internal error (or a CI gate that failed), 2 an input or usage error (a message,
never a traceback).
"""

from __future__ import annotations

import argparse
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
        raise DataError(
            f"--k expects comma-separated positive integers like 1,3,5,10; got {text!r}."
        ) from None
    if not ks or ks[0] < 1:
        raise DataError(f"--k expects comma-separated positive integers like 1,3,5,10; got {text!r}.")
    return ks


def _add_data_args(p: argparse.ArgumentParser, *, run_required: bool | str) -> None:
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
        help=(
            "the ranked run to analyse (TREC, JSONL or CSV)"
            if run_required == "one"
            else "a ranked run (TREC, JSONL or CSV); repeat for several" + (" (required)" if run_required else "")
        ),
    )
    g.add_argument(
        "--extra-qrels",
        action="append",
        default=[],
        metavar="F",
        help="more judgements merged into the golden set (a judgement journal, a graded judge-queue TSV or any qrels "
        "format); a new grade overrides the golden set's for the same pair; repeatable",
    )
    g.add_argument("--id-field", metavar="COL", help="corpus id column/key of a CSV, Parquet or JSONL corpus")
    g.add_argument("--text-field", metavar="COL", help="corpus text column/key of a CSV, Parquet or JSONL corpus")
    g.add_argument("--title-field", metavar="COL", help="corpus title column/key (optional)")


def _add_retriever_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("live retrievers")
    g.add_argument(
        "--retriever",
        action="append",
        default=[],
        metavar="NAME=MODULE:ATTR",
        help="run a retriever from your code over the golden queries (an object or a zero-argument factory: a "
        "callable str -> ids, a LangChain or LlamaIndex retriever); repeatable",
    )
    g.add_argument("--write-runs", metavar="DIR", help="write the runs computed here (baselines, retrievers) as TREC files")


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
    _add_precision_arg(g)


def _add_precision_arg(g: Any) -> None:
    g.add_argument(
        "--precision",
        choices=["fast", "exact"],
        default="fast",
        help="fast: bf16 transformer on CPUs that support it (cosine >= 0.9999 to fp32); exact: fp32 (default fast)",
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
    _add_retriever_args(ev)
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
        "--detect",
        type=float,
        metavar="DIFF",
        help="also report how many queries a paired t-test needs to detect a difference of DIFF on each headline "
        "metric, from the observed variance (topic-set size, Sakai), e.g. 0.02",
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
    _add_data_args(fa, run_required="one")
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
    fa.add_argument(
        "--remedies",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="apply each class's offline remedy and measure what it recovers and loses (default: on)",
    )
    _add_retriever_args(fa)
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
    _add_precision_arg(mo)
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

    ri = sub.add_parser(
        "risk",
        help="which unlabelled queries to judge first: failure risk from the run's scores alone",
        description="Rank every query of a run (judged or not) by how likely it fails, from the shape of its top-k "
        "scores (top score, gap between ranks 1 and 2, spread, mean, softmax confidence for dense runs). With a "
        "golden set (--data or --qrels), also the ROC AUC of that ranking on the golden queries.",
        epilog="Example: diagnose risk --run demo_corpus/runs/ann_minilm.trec --data demo_corpus --top 20",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_data_args(ri, run_required="one")
    ri.add_argument("--k", type=int, default=10, help="cutoff of the score features and of failing (default 10)")
    ri.add_argument("--top", type=int, default=0, help="show only the N riskiest queries (default: all)")
    ri.add_argument("--format", choices=["table", "json", "csv"], default="table")

    jq = sub.add_parser(
        "judge-queue",
        help="which (query, document) pairs to judge first: the unjudged documents of the runs' top k",
        description="Pool the unjudged documents in the top k of every run and of BM25, dense and hybrid search, "
        "ordered by how likely each is a missed relevant document (near-duplicates of relevant documents first, "
        "then agreement of the BM25 rank, the dense rank, the similarity to the judged relevant documents and the "
        "number of runs that retrieved it). Works without a golden set (--queries and --corpus alone). Writes a "
        "TSV to grade elsewhere; merge it back with --extra-qrels.",
        epilog="Example: diagnose judge-queue --queries query_log.tsv --corpus corpus.jsonl --limit 200 "
        "--out queue.tsv",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_data_args(jq, run_required=False)
    jq.add_argument("--k", type=int, default=10, help="pool the top k of every run (default 10)")
    jq.add_argument("--limit", type=int, default=None, help="write only the first N pairs (default: all)")
    jq.add_argument("--depth", type=int, default=100, help="depth of the BM25, dense and hybrid runs (default 100)")
    jq.add_argument("--out", metavar="F", help="write the TSV here (default: standard output)")
    _add_model_args(jq)

    return parser


# --------------------------------------------------------------------------------------------- shared steps

#: Library parameters (``DataError.param``) and the flags that set them, so an error names what the user typed.
PARAM_FLAGS = {
    "k": "--k",
    "ks": "--k",
    "depth": "--depth",
    "failure": "--failure",
    "baselines": "--baseline",
    "model": "--model",
    "models": "--model",
    "embeddings": "--doc-embeddings/--query-embeddings",
    "corpus": "--corpus (or --data)",
    "queries": "--queries (or --data)",
    "runs": "--run",
    "run": "--run",
    "reference": "--reference",
    "fail_under": "--fail-under",
    "max_drop": "--max-drop",
    "slice_by": "--slice",
    "seed_cosine": "--seed-threshold",
    "duplicate_cosine": "--duplicate-cosine",
    "rrf_k": "--rrf-k",
    "retriever": "--retriever",
    "resamples": "--resamples",
    "limit": "--limit",
}


def _load(args: argparse.Namespace, *, need_text: bool = False, require_qrels: bool = True):
    from diagnose.data import ValidationReport
    from diagnose.io import load_dataset, parse_run_arg

    extra = list(getattr(args, "extra_qrels", None) or [])
    if require_qrels and not args.data and not args.qrels and not extra:
        raise DataError("No golden set given. Pass --data DIR (a BEIR folder), --qrels FILE or --extra-qrels FILE.")
    _retriever_specs(args)
    fields = {
        k: v for k, v in (("id", args.id_field), ("text", args.text_field), ("title", args.title_field)) if v
    }
    report = ValidationReport()
    ds = load_dataset(
        data_dir=args.data,
        split=args.split,
        corpus=args.corpus,
        queries=args.queries,
        qrels=args.qrels,
        runs=[parse_run_arg(r) for r in args.run],
        corpus_fields=fields or None,
        report=report,
        require_qrels=require_qrels and not extra,
        qrels_transform=_extra_qrels(extra, report) if extra else None,
    )
    if need_text and (ds.corpus is None or ds.queries is None):
        raise DataError(
            "This needs the texts of the corpus and the queries. Pass --data DIR, or --corpus and --queries."
        )
    return ds


def _extra_qrels(paths: list[str], report):
    """``--extra-qrels``: merge each file's judgements into the golden set (printing what was merged)."""
    from diagnose.judging import merge, merge_counts, read_judgements

    def transform(qrels):
        for path in paths:
            new = read_judgements(path, report=report)
            print(merge_counts(qrels, new).sentence() + " (--extra-qrels)", file=sys.stderr)
            qrels = merge(qrels, new, report=report)
        return qrels

    return transform


def _retriever_specs(args: argparse.Namespace) -> list[tuple[str, str]]:
    """``--retriever NAME=module:attr`` as ``(name, target)`` pairs (checked before any file is read)."""
    out = []
    for spec in getattr(args, "retriever", None) or []:
        name, sep, target = spec.partition("=")
        if not sep or not name.strip() or ":" not in target:
            raise DataError(f"--retriever expects NAME=module:attr, e.g. prod=my_rag:retriever; got {spec!r}.")
        out.append((name.strip(), target.strip()))
    return out


def _retrievers(args: argparse.Namespace, taken: Sequence[str]) -> dict[str, Any]:
    """The user's retriever objects (a factory is called), by name."""
    out: dict[str, Any] = {}
    for name, target in _retriever_specs(args):
        from diagnose.retrievers import load_retriever

        if name in out or name in taken:
            raise DataError(f"--retriever {name!r}: a run already has that name; name each run differently.")
        out[name] = load_retriever(target)
    return out


def _analysis(args: argparse.Namespace, ds, *, runs=None, **kwargs: Any):
    """The :class:`~diagnose.analysis.Analysis` of the parsed arguments (the one pipeline)."""
    from diagnose.analysis import Analysis

    embeddings = None
    if getattr(args, "doc_embeddings", None) or getattr(args, "query_embeddings", None):
        embeddings = {
            "doc": args.doc_embeddings,
            "query": args.query_embeddings,
            "doc_ids": args.doc_ids,
            "query_ids": args.query_ids,
        }
    return Analysis(
        ds,
        runs if runs is not None else {**ds.runs, **_retrievers(args, list(ds.runs))},
        model=None if isinstance(getattr(args, "model", None), list) else getattr(args, "model", None),  # models: many
        cache_dir=getattr(args, "cache_dir", None),
        bm25_engine=getattr(args, "bm25_engine", "bm25s"),
        embeddings=embeddings,
        precision=getattr(args, "precision", "fast"),
        progress=True,
        **kwargs,
    )


def _write_runs(args: argparse.Namespace, analysis) -> None:
    """``--write-runs DIR``: the runs computed here (baselines, live retrievers) as TREC files."""
    if not getattr(args, "write_runs", None):
        return
    from pathlib import Path

    from diagnose.analysis import YOUR_RUN
    from diagnose.cache import slug
    from diagnose.io import write_trec_run

    out = Path(args.write_runs)
    out.mkdir(parents=True, exist_ok=True)
    for name, run in analysis.runs.items():
        if analysis.kinds[name] == YOUR_RUN:
            continue
        path = out / f"{slug(name)}.trec"
        write_trec_run(run, path)
        print(f"wrote {path}", file=sys.stderr)


def _print_warnings(report, fmt: str) -> None:
    if fmt == "json":
        return
    for p in report.warnings:
        print(f"{p.severity}: " + p.format().removeprefix(f"[{p.severity}] "), file=sys.stderr)


def _parse_bounds(items: list[str], flag: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for item in items:
        name, sep, value = item.partition("=")
        try:
            if not sep or not name.strip():
                raise ValueError
            bound = float(value)
        except ValueError:
            raise DataError(f"{flag} expects METRIC=VALUE like ndcg@10=0.60; got {item!r}.") from None
        if not math.isfinite(bound):
            raise DataError(f"{flag} {item!r}: the bound must be a finite number (a NaN bound can never fail).")
        out[name.strip()] = bound
    return out


# --------------------------------------------------------------------------------------------- evaluate


def cmd_evaluate(args: argparse.Namespace) -> int:
    ks = _parse_ks(args.k)
    fail_under = _parse_bounds(args.fail_under, "--fail-under")
    max_drop = _parse_bounds(args.max_drop, "--max-drop")
    if args.resamples < 1:
        raise DataError(f"--resamples must be at least 1 (got {args.resamples}).")
    ds = _load(args)
    reference = _add_compare_to(args, ds)
    analysis = _analysis(
        args, ds, k=ks[-1], ks=ks, metrics=args.metrics.split(",") if args.metrics else None,
        baselines=list(dict.fromkeys(args.baseline)), depth=args.depth,
    )  # fmt: skip
    if not analysis.run_names:
        raise DataError(
            "No run to evaluate. Pass --run [NAME=]FILE (repeatable), --retriever NAME=module:attr or "
            "--baseline bm25|dense|hybrid."
        )
    reference = reference or args.reference
    if reference is not None and reference not in analysis.run_names:
        raise DataError(f"--reference {reference!r} is not one of the runs: {', '.join(analysis.run_names)}.")
    if max_drop and len(analysis.run_names) < 2:
        raise DataError("--max-drop needs a reference: pass --compare-to NAME=FILE or a second --run.")
    rep = analysis.evaluation_report(
        reference, headline=analysis.metric_names() if args.metrics else None, fail_under=fail_under,
        max_drop=max_drop, skip_reference=bool(args.compare_to or max_drop), slice_by=args.slice,
        n_resamples=args.resamples, seed=args.seed,
    )  # fmt: skip
    if args.detect is not None:
        if len(analysis.run_names) < 2:
            raise DataError("--detect needs two runs to compare (a second --run or a --baseline).")
        rep.queries_needed = analysis.queries_needed(
            args.detect, rep.reference, [c.metric for c in rep.comparisons] or None
        )
    _write_runs(args, analysis)
    _print_warnings(ds.report, args.format)
    if args.format == "json":
        print(rep.to_json(per_query=args.per_query))
    elif args.format == "csv":
        sys.stdout.write(rep.to_csv(per_query=args.per_query))
    elif args.format == "markdown":
        print(rep.to_markdown(per_query=args.per_query))
    else:
        print(rep.to_text(per_query=args.per_query))
    return _gate_exit(rep.gate)


def _add_compare_to(args: argparse.Namespace, ds) -> str | None:
    if not args.compare_to:
        return None
    from diagnose.io import check_run_matches_qrels, parse_run_arg, read_run

    name, path = parse_run_arg(args.compare_to)
    if name in ds.runs:
        raise DataError(f"--compare-to {name!r}: a --run has the same name; name the reference differently.")
    reference = read_run(path, name=name, report=ds.report)
    check_run_matches_qrels(reference, ds.qrels)
    ds.runs = {name: reference, **ds.runs}
    return name


def _gate_exit(gate: list[str]) -> int:
    for msg in gate:
        print(f"gate failed: {msg}", file=sys.stderr)
    return EXIT_FAIL if gate else EXIT_OK


# --------------------------------------------------------------------------------------------- failures


def cmd_failures(args: argparse.Namespace) -> int:
    from diagnose.failures import Thresholds
    from diagnose.report import dumps, failures_dict, failures_text

    if len(args.run) + len(args.retriever) != 1:
        raise DataError(
            "diagnose failures analyses one run: pass exactly one --run [NAME=]FILE or one --retriever."
        )
    thresholds = Thresholds(seed_cosine=args.seed_threshold, duplicate_cosine=args.duplicate_cosine)
    ds = _load(args, need_text=True)
    analysis = _analysis(args, ds, k=args.k, failure=args.failure, thresholds=thresholds)
    (name,) = analysis.run_names
    diag = analysis.diagnosis(name)
    noise = analysis.label_noise(name)
    hubs = analysis.hubness(name)
    remedies = analysis.remedies(name) if args.remedies else None
    _write_runs(args, analysis)
    _print_warnings(ds.report, args.format)
    if args.format == "json":
        payload = failures_dict(diag, label_noise=noise, hubness=hubs, validation=ds.report)
        if remedies is not None:
            payload["remedies"] = remedies.to_dict()
        print(dumps(payload))
    elif args.format == "csv":
        sys.stdout.write(diag.frame().to_csv(index=False, float_format="%.6f"))
    else:
        print(failures_text(diag, model=analysis.space.model, label_noise=noise, hubness=hubs, remedies=remedies))
    return EXIT_OK


def cmd_risk(args: argparse.Namespace) -> int:
    from diagnose.report import dumps, text_table

    if len(args.run) != 1:
        raise DataError("diagnose risk ranks the queries of one run: pass exactly one --run [NAME=]FILE.")
    if args.data or args.qrels:
        analysis = _analysis(args, _load(args), k=args.k)
        name = analysis.run_names[0]
        risk, validation = analysis.risk(name), analysis.risk_validation(name)
    else:
        from diagnose.api import as_run
        from diagnose.io import parse_run_arg
        from diagnose.risk import failure_risk

        name, path = parse_run_arg(args.run[0])
        risk, validation = failure_risk(as_run(path, name=name), k=args.k), None
    if args.top:
        risk = risk.head(args.top)
    if args.format == "json":
        payload = {"run": name, "k": args.k, "queries": risk.to_dict(orient="records")}
        payload["validation"] = validation.to_dict() if validation is not None else None
        print(dumps(payload))
    elif args.format == "csv":
        sys.stdout.write(risk.to_csv(index=False, float_format="%.6f"))
    else:
        print(text_table(risk.to_dict(orient="records"), list(risk.columns)))
        if validation is not None:
            print("\n" + validation.sentence())
    return EXIT_OK


# ----------------------------------------------------------------------------------- models, rerank, fuse


def cmd_models(args: argparse.Namespace) -> int:
    from diagnose.report import dumps, text_table

    ds = _load(args, need_text=True)
    analysis = _analysis(args, ds, runs={}, k=args.k)
    cmp = analysis.models(args.model or ["default"], metric=args.metric, seed=args.seed)
    table = cmp.table()
    if args.format == "json":
        print(dumps(cmp.to_dict()))
    elif args.format == "csv":
        sys.stdout.write(table.to_csv(index=False, float_format="%.6f"))
    else:
        cols = ["rank", "model", cmp.metric, "ci_low", "ci_high", f"recall@{args.k}", "dim", "docs_per_s",
                "index_mb", "ms_per_query", "calibrated_threshold"]  # fmt: skip
        print(text_table(table.to_dict(orient="records"), cols))
        tied = table.loc[table["tied_with_best"], "model"].tolist()
        if len(tied) > 1:
            print(f"\nstatistically tied for the best on {cmp.metric}: {', '.join(tied)} (Holm-corrected "
                  "randomization test against the best; the data cannot tell them apart).")  # fmt: skip
        print("\nfailure classes per model:")
        cls_cols = [c for c in table.columns if c.startswith("n_")]
        print(text_table(table.to_dict(orient="records"), ["model", *cls_cols]))
    return EXIT_OK


def cmd_rerank(args: argparse.Namespace) -> int:
    from diagnose.compare import rerank_cross_encoder, rerank_report
    from diagnose.io import check_run_matches_qrels, parse_run_arg, read_run
    from diagnose.report import dumps, text_table

    if bool(args.reranked) == bool(args.cross_encoder):
        raise DataError("Pass either --reranked [NAME=]FILE or --cross-encoder MODEL (one of them).")
    if args.depth < 1 or args.k < 1:
        raise DataError(f"--depth and --k must be at least 1 (got {args.depth} and {args.k}).")
    ds = _load(args, need_text=bool(args.cross_encoder))
    name, path = parse_run_arg(args.candidates)
    candidates = read_run(path, name=name, report=ds.report)
    check_run_matches_qrels(candidates, ds.qrels)
    if args.reranked:
        rname, rpath = parse_run_arg(args.reranked)
        reranked = read_run(rpath, name=rname, report=ds.report)
        check_run_matches_qrels(reranked, ds.qrels)
    else:
        doc_text = dict(zip(ds.corpus.ids, ds.corpus.texts(), strict=True))
        reranked = rerank_cross_encoder(
            candidates, ds.queries.text_of(), doc_text, args.cross_encoder, depth=args.depth,
            progress=args.format == "table",
        )  # fmt: skip
    rep = rerank_report(ds.qrels, candidates, reranked, k=args.k, depth=args.depth)
    _print_warnings(ds.report, args.format)
    if args.format == "json":
        print(dumps(rep.to_dict()))
        return EXIT_OK
    print(
        f"ceiling: recall@{args.depth} of the candidates = {rep.ceiling:.4f} (no reranker of them can beat it)"
    )
    rows = [{"metric": m, "before": rep.before[m], "after": rep.after[m], "change": rep.after[m] - rep.before[m]}
            for m in rep.before]  # fmt: skip
    print(text_table(rows, ["metric", "before", "after", "change"]))
    print(f"\nfailures at k={args.k} recovered: {len(rep.recovered)} ({', '.join(rep.recovered[:10])})")
    print(f"failures introduced: {len(rep.introduced)} ({', '.join(rep.introduced[:10])})")
    return EXIT_OK


def cmd_fuse(args: argparse.Namespace) -> int:
    from diagnose.report import dumps, text_table

    if len(args.run) != 2:
        raise DataError("diagnose fuse takes exactly two --run files.")
    ds = _load(args)
    analysis = _analysis(args, ds, k=args.k)
    a, b = analysis.run_names
    table = analysis.fusion(a, b, rrf_k=args.rrf_k)
    _print_warnings(ds.report, args.format)
    if args.format == "json":
        print(dumps({"fusions": table.to_dict(orient="records")}))
    elif args.format == "csv":
        sys.stdout.write(table.to_csv(index=False, float_format="%.6f"))
    else:
        print(text_table(table.to_dict(orient="records"), list(table.columns)))
    return EXIT_OK


def cmd_judge_queue(args: argparse.Namespace) -> int:
    from diagnose.judging import QUEUE_TSV_COLUMNS, judge_queue, with_texts

    if args.k < 1 or args.depth < 1 or (args.limit is not None and args.limit < 1):
        raise DataError(f"--k, --depth and --limit must be at least 1 (got {args.k}, {args.depth}, {args.limit}).")
    if not args.data and (not args.queries or not args.corpus):
        raise DataError("diagnose judge-queue needs the texts: pass --data DIR, or --queries FILE and --corpus FILE.")
    ds = _load(args, need_text=True, require_qrels=False)
    analysis = _analysis(args, ds, k=args.k, depth=args.depth)
    queue = judge_queue(analysis, k=args.k, limit=args.limit)
    table = with_texts(queue, ds).assign(grade="")[QUEUE_TSV_COLUMNS]
    if len(ds.qrels) == 0:  # no golden set yet: that the run's queries have no judgements is the point
        ds.report.problems[:] = [p for p in ds.report.problems if p.code != "run_query_not_judged"]
    _print_warnings(ds.report, "table")
    text = table.to_csv(sep="\t", index=False, lineterminator="\n")
    if args.out:
        from pathlib import Path

        Path(args.out).write_text(text, encoding="utf-8")
        print(
            f"wrote {len(table)} pairs of {table['query_id'].nunique()} queries to {args.out} (pooled: "
            f"{', '.join(queue.attrs.get('pooled_runs', []))}); fill the grade column with 0-3 or skip and merge it "
            "with --extra-qrels",
            file=sys.stderr,
        )
    else:
        sys.stdout.write(text)
    return EXIT_OK


COMMANDS = {
    "evaluate": cmd_evaluate,
    "failures": cmd_failures,
    "models": cmd_models,
    "rerank": cmd_rerank,
    "fuse": cmd_fuse,
    "risk": cmd_risk,
    "judge-queue": cmd_judge_queue,
}


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code (the console script passes it to ``sys.exit``)."""
    parser = build_parser()
    args = None
    try:
        args = parser.parse_args(argv)
        if not args.command:
            parser.print_help()
            return EXIT_INPUT
        return COMMANDS[args.command](args)
    except DataError as e:
        flag = PARAM_FLAGS.get(e.param or "")
        print(f"error: {flag}: {e}" if flag else f"error: {e}", file=sys.stderr)
        return EXIT_INPUT
    except ModuleNotFoundError as e:  # an optional package (torch, bm25s, ...): name the extra that installs it
        from diagnose.extras import missing_extra

        err = missing_extra(e, f"diagnose {getattr(args, 'command', '') or ''}".strip())
        if err is None:
            raise
        print(f"error: {err}", file=sys.stderr)
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
