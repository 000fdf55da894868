"""The what-if results as the text of the ``table`` format: the ANN frontier (``diagnose ann``), the chunking sweep
(``diagnose chunking``), the metadata filter's recall (a section of ``diagnose failures``), fine-tuning (``diagnose
finetune``), model choice (``diagnose models``) and a reranker (``diagnose rerank``). The JSON of each is the
result's own ``to_dict``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from diagnose.report.tables import records_text, text_table

if TYPE_CHECKING:
    import pandas as pd

    from diagnose.whatif.ann import AnnFrontier
    from diagnose.whatif.chunking import ChunkingSweep
    from diagnose.whatif.compare import RerankReport
    from diagnose.whatif.filter_recall import FilterRecall
    from diagnose.whatif.finetune import FinetuneResult
    from diagnose.whatif.model_choice import ModelComparison


def models_text(cmp: ModelComparison, table: pd.DataFrame, k: int) -> str:
    """The models ranked (metric with its CI, speed, size, calibrated threshold), the ties, the failure classes."""
    cols = [
        "rank",
        "model",
        cmp.metric,
        "ci_low",
        "ci_high",
        f"recall@{k}",
        "dim",
        "docs_per_s",
        "index_mb",
        "ms_per_query",
        "calibrated_threshold",
    ]
    lines = [records_text(table, cols)]
    tied = table.loc[table["tied_with_best"], "model"].tolist()
    if len(tied) > 1:
        lines.append(
            f"\nstatistically tied for the best on {cmp.metric}: {', '.join(tied)} (Holm-corrected "
            "randomization test against the best; the data cannot tell them apart)."
        )
    lines.append("\nfailure classes per model:")
    lines.append(records_text(table, ["model", *(c for c in table.columns if c.startswith("n_"))]))
    return "\n".join(lines)


def rerank_text(rep: RerankReport) -> str:
    """The ceiling, the metrics before and after, the failures recovered and introduced."""
    rows = [
        {"metric": m, "before": rep.before[m], "after": rep.after[m], "change": rep.after[m] - rep.before[m]}
        for m in rep.before
    ]
    lines = [
        f"ceiling: recall@{rep.depth} of the candidates = {rep.ceiling:.4f} (no reranker of them can beat it)",
        text_table(rows, ["metric", "before", "after", "change"]),
        f"\nfailures at k={rep.k} recovered: {len(rep.recovered)} ({', '.join(rep.recovered[:10])})",
        f"failures introduced: {len(rep.introduced)} ({', '.join(rep.introduced[:10])})",
    ]
    return "\n".join(lines)


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


def filter_recall_text(fr: FilterRecall) -> str:
    """The metadata filter's section of ``diagnose failures``: its sentence, then the golden queries it changes
    (a relevant document filtered out, or a recall that differs with the filter)."""
    changed = fr.changed()
    head = f"Metadata filter: recall@{fr.k} with vs without it\n{fr.sentence()}"
    if changed.empty:
        return head + "\nNo golden query's recall changes with the filter."
    return f"{head}\n{len(changed)} golden queries change:\n{records_text(changed)}"


def finetune_text(result: FinetuneResult) -> str:
    """Base vs tuned per metric, the verdicts, the failures recovered and broken, the model and the cost."""
    rows = [
        {"metric": m, "base": result.base[m], "tuned": v, "change": v - result.base[m]}
        for m, v in result.tuned.items()
    ]
    how = (
        f"out-of-fold scores of {len(result.folds)} folds"
        if result.mode == "folds"
        else "a model trained on the training split"
    )
    lines = [
        f"{result.evaluated_queries} evaluation queries, scored by {how}:",
        text_table(rows, ["metric", "base", "tuned", "change"]),
        "",
        *(c.verdict() for c in result.comparisons),
        f"failures recovered: {result.recovered or 'none'}; broken: {result.broken or 'none'}",
        f"model (trained on {result.train_pairs:,} pairs): {result.model_path} (use it with --model)",
        *(
            [
                f"left out of training, the text of an evaluated query: {len(result.excluded_by_text)} "
                f"({', '.join(result.excluded_by_text[:5])}{', ...' if len(result.excluded_by_text) > 5 else ''})"
            ]
            if result.excluded_by_text
            else []
        ),  # fmt: skip
        f"time: {result.seconds:.0f} s",
    ]
    return "\n".join(lines)
