"""``diagnose chunking``: which chunking, measured on the golden set against the documents as they are."""

from __future__ import annotations

import argparse

from diagnose.cli.output import Output, emit, records_text
from diagnose.cli.shared import EXIT_OK, build_analysis, load_data, print_warnings, with_warnings
from diagnose.whatif.chunking import ChunkingSweep, check_grid


def cmd_chunking(args: argparse.Namespace) -> int:
    check_grid(args.sizes, args.overlaps)  # a bad grid fails before any data is read
    ds = load_data(args, need_text=True)
    analysis = build_analysis(args, ds, k=args.k)
    sweep = analysis.chunking(args.sizes, args.overlaps, k=args.k)
    print_warnings(ds.report, args.format)
    emit(
        Output(table=lambda: chunking_text(sweep), json=with_warnings(sweep.to_dict, ds.report)), args.format
    )
    return EXIT_OK


def chunking_text(sweep: ChunkingSweep) -> str:
    """The points (the documents as they are first), then what the columns mean."""
    k = sweep.k
    cols = ["chunking", "chunks", f"recall@{k}", f"ndcg@{k}", f"context_precision@{k}", f"context_recall@{k}",
            f"tokens@{k}", "encode_s", "index_mb", "recovers", "breaks", "ndcg_diff", "p_value", "pareto"]  # fmt: skip
    return "\n".join([
        records_text(sweep.table(), cols), "",
        f"chunking: size/overlap in {sweep.lengths}; documents ranked by their best chunk. context precision/recall "
        f"and tokens@{k}: word tokens of the top {k} chunks (whole documents as they are) against the "
        f"{'reference spans' if sweep.reference == 'spans' else 'relevant documents (no spans in the golden set)'}. "
        f"recovers/breaks: golden queries with a relevant document in the top {k} that the documents as they are "
        f"miss / find; p_value: paired randomization test of ndcg@{k}; pareto: no other point sends fewer tokens "
        f"with a higher ndcg@{k}.",
    ])  # fmt: skip
