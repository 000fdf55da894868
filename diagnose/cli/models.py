"""``diagnose models``, ``rerank`` and ``fuse``: what another embedding model, a reranker or a fusion would change."""

from __future__ import annotations

import argparse

from diagnose.cli.output import Output, emit, frame_output
from diagnose.cli.shared import (
    EXIT_OK,
    build_analysis,
    load_data,
    print_warnings,
    read_checked_run,
    with_warnings,
)
from diagnose.data import DataError
from diagnose.io import parse_run_arg
from diagnose.report.whatif import models_text, rerank_text


def cmd_models(args: argparse.Namespace) -> int:
    ds = load_data(args, need_text=True)
    analysis = build_analysis(args, ds, runs={}, k=args.k)
    cmp = analysis.models(args.model or ["default"], metric=args.metric, seed=args.seed)
    table = cmp.table()
    print_warnings(ds.report, args.format)
    emit(
        Output(
            table=lambda: models_text(cmp, table, args.k),
            json=with_warnings(cmp.to_dict, ds.report),
            csv=lambda: table,
        ),
        args.format,
    )
    return EXIT_OK


def cmd_rerank(args: argparse.Namespace) -> int:
    if bool(args.reranked) == bool(args.cross_encoder):
        raise DataError("Pass either --reranked [NAME=]FILE or --cross-encoder MODEL (one of them).")
    if args.depth < 1 or args.k < 1:
        raise DataError(f"--depth and --k must be at least 1 (got {args.depth} and {args.k}).")
    ds = load_data(args, need_text=bool(args.cross_encoder))
    candidates = read_checked_run(*parse_run_arg(args.candidates), ds)
    reranked = read_checked_run(*parse_run_arg(args.reranked), ds) if args.reranked else None
    analysis = build_analysis(args, ds, runs={}, k=args.k)
    rep = analysis.rerank(
        candidates,
        reranked,
        cross_encoder=args.cross_encoder,
        depth=args.depth,
        progress=args.format == "table",
    )
    print_warnings(ds.report, args.format)
    emit(Output(table=lambda: rerank_text(rep), json=with_warnings(rep.to_dict, ds.report)), args.format)
    return EXIT_OK


def cmd_fuse(args: argparse.Namespace) -> int:
    if len(args.run) != 2:
        raise DataError("diagnose fuse takes exactly two --run files.")
    ds = load_data(args)
    analysis = build_analysis(args, ds, k=args.k)
    a, b = analysis.run_names
    table = analysis.fusion(a, b, rrf_k=args.rrf_k)
    print_warnings(ds.report, args.format)
    payload = with_warnings(lambda: {"fusions": table.to_dict(orient="records")}, ds.report)
    emit(frame_output(table, payload), args.format)
    return EXIT_OK
