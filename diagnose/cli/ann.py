"""``diagnose ann``: the recall/latency frontier of approximate indexes over the analysis' vectors."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from diagnose.cli.output import Output, emit, records_text
from diagnose.cli.shared import EXIT_OK, build_analysis, load_data, print_warnings, with_warnings
from diagnose.data import DataError

if TYPE_CHECKING:
    from diagnose.whatif.ann import AnnFrontier


def cmd_ann(args: argparse.Namespace) -> int:
    if len(args.run) > 1:
        raise DataError(
            "diagnose ann looks for the index_gap recovery of one run: pass at most one --run [NAME=]FILE."
        )
    ds = load_data(args, need_text=True)
    analysis = build_analysis(args, ds, k=args.k, baselines=("dense",))
    user = list(analysis.user_runs())
    frontier = analysis.ann_frontier(user[0] if user else None, k=args.k)
    print_warnings(ds.report, args.format)
    emit(
        Output(table=lambda: ann_text(frontier), json=with_warnings(frontier.to_dict, ds.report)), args.format
    )
    return EXIT_OK


def ann_text(frontier: AnnFrontier) -> str:
    """The points (exact first), then the index_gap recovery in a sentence."""
    k = frontier.k
    cols = ["index", "params", "recall_vs_exact", f"hit_rate@{k}", f"recall@{k}", f"ndcg@{k}", "latency_p50_ms",
            "latency_p95_ms", "build_s", "memory_mb", "pareto"]  # fmt: skip
    lines = [records_text(frontier.table(), cols), "",
             "latency: per query, one thread; memory: the serialized faiss index; pareto: no other point is both "
             f"faster at p50 and better on ndcg@{k}."]  # fmt: skip
    if frontier.current is not None:
        cur = frontier.current
        lines.append(f"current (the collection's own setting): {cur.index}{dict(cur.params)}, recall vs exact "
                     f"{cur.recall_vs_exact:.4f}, ndcg@{k} {cur.metrics[f'ndcg@{k}']:.4f}, p50 {cur.latency_p50_ms:.3f} "
                     "ms.")  # fmt: skip
    rec = frontier.recovers_index_gap
    if rec.setting is None:
        lines.append(f"index_gap: {rec.note}.")
    else:
        lines.append(
            f"index_gap of {rec.run}: {rec.setting.label()} recovers {len(rec.recovered)} of {len(rec.failures)} "
            f"({rec.recovers}) at p50 {rec.latency_p50_ms:.3f} ms; {rec.metric} {rec.mean_diff:+.4f} against the "
            f"run (paired randomization test: p = {rec.p_value:.4f}; {rec.lost_hits} hits lost)."
        )
    return "\n".join(lines)
