"""``diagnose models``, ``rerank`` and ``fuse``: what another embedding model, a reranker or a fusion would change."""

from __future__ import annotations

import argparse
import sys

from diagnose.cli.shared import EXIT_OK, _analysis, _load, _print_warnings, _read_checked_run
from diagnose.compare import rerank_cross_encoder, rerank_report
from diagnose.data import DataError
from diagnose.io import parse_run_arg
from diagnose.report import dumps, text_table


def cmd_models(args: argparse.Namespace) -> int:
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
    if bool(args.reranked) == bool(args.cross_encoder):
        raise DataError("Pass either --reranked [NAME=]FILE or --cross-encoder MODEL (one of them).")
    if args.depth < 1 or args.k < 1:
        raise DataError(f"--depth and --k must be at least 1 (got {args.depth} and {args.k}).")
    ds = _load(args, need_text=bool(args.cross_encoder))
    candidates = _read_checked_run(*parse_run_arg(args.candidates), ds)
    if args.reranked:
        reranked = _read_checked_run(*parse_run_arg(args.reranked), ds)
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
