"""The argument parser of `diagnose`: the shared argument groups, each command's own options, and the table of
commands, :data:`COMMAND_TABLE` (name, help, description, example, options, the function that runs it): the one
declaration of a command, which `build_parser` turns into one subcommand parser each and ``diagnose.cli`` into its
table of command functions (add a command here)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any, NamedTuple

from diagnose import defaults
from diagnose.data import DataError
from diagnose.metrics import DEFAULT_KS, REGISTRY


def _families(cutoff: bool) -> str:
    """The quality families (coverage ones left out) that take a cutoff at every --k (``cutoff``) or mean no cutoff
    without @k, as "a, b and c" in REGISTRY order: the --metrics help."""
    names = [m.name for m in REGISTRY.values() if not m.coverage and (m.cutoff == "required") == cutoff]
    return f"{', '.join(names[:-1])} and {names[-1]}"


class _Parser(argparse.ArgumentParser):
    """argparse that raises instead of exiting, so `main` decides the exit code and the message."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise DataError(f"{self.prog}: {message}. Run `{self.prog} --help` for the options.")


def _add_data_args(p: argparse.ArgumentParser, *, run_required: bool | str) -> None:
    g = p.add_argument_group("data")
    g.add_argument(
        "--data", metavar="DIR", help="BEIR folder: DIR/corpus.jsonl, DIR/queries.jsonl, DIR/qrels/SPLIT.tsv"
    )
    g.add_argument(
        "--split", default=defaults.SPLIT, help=f"qrels split inside --data (default: {defaults.SPLIT})"
    )
    g.add_argument(
        "--qrels",
        metavar="F",
        help="golden set: BEIR TSV, TREC qrels or JSONL; or reference contexts located in the corpus: LlamaIndex "
        "LabelledRagDataset / EmbeddingQAFinetuneDataset JSON, a RAGAS test set (JSONL/CSV/Parquet), JSONL "
        "with reference_contexts",
    )
    g.add_argument(
        "--write-qrels",
        metavar="F",
        help="write the judgements as read (reference contexts: as mapped to the corpus ids) as BEIR TSV to F, "
        "and their spans as JSONL beside it (F's name with .spans.jsonl) or to --write-spans",
    )
    g.add_argument("--write-spans", metavar="F", help="where --write-qrels writes the spans (JSONL)")
    g.add_argument("--queries", metavar="F", help="queries: BEIR queries.jsonl or TSV id<TAB>text")
    g.add_argument(
        "--corpus",
        metavar="F",
        help="corpus: BEIR corpus.jsonl, CSV/TSV/Parquet, a folder of .txt/.md, or a "
        "vector database with its stored vectors: chroma:PATH#COLLECTION, lancedb:PATH#TABLE, qdrant:PATH#COLLECTION",
    )
    g.add_argument(
        "--run",
        action="append",
        default=[],
        metavar="[NAME=]F",
        help=(
            "the ranked run to analyse (TREC, JSONL or CSV)"
            if run_required == "one"
            else "a ranked run (TREC, JSONL or CSV); repeat for several"
            + (" (required)" if run_required else "")
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
    g.add_argument(
        "--ignore-identical-ids",
        action="store_true",
        help="drop every retrieved document whose id is the query's before scoring and diagnosing, the later ones "
        "moving up a rank (BEIR's convention where queries are documents: ArguAna, Touche, CQADupStack, Quora)",
    )
    g.add_argument("--id-field", metavar="COL", help="corpus id column/key of a CSV, Parquet or JSONL corpus")
    g.add_argument(
        "--text-field", metavar="COL", help="corpus text column/key of a CSV, Parquet or JSONL corpus"
    )
    g.add_argument("--title-field", metavar="COL", help="corpus title column/key (optional)")
    g.add_argument(
        "--parent-field",
        metavar="KEY",
        help="a corpus of chunks: the metadata key holding each chunk's document id, or DOC#N for chunk ids written "
        "DOCUMENT#N (detected when every id is); metrics then come at the chunk and the document level",
    )


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
    g.add_argument(
        "--retriever-timeout",
        type=float,
        metavar="SECONDS",
        help="seconds a live retriever may take on one query before it is abandoned and counts as retrieving "
        "nothing (default: 60; 0: no limit)",
    )
    g.add_argument(
        "--write-runs",
        metavar="DIR",
        help="write the runs computed here (baselines, retrievers) as TREC files",
    )


def _add_model_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("embeddings")
    g.add_argument(
        "--model",
        metavar="NAME_OR_PATH",
        default=None,
        help="sentence-transformers model name or local folder (default: bundled all-MiniLM-L6-v2, offline)",
    )
    g.add_argument(
        "--doc-embeddings",
        metavar="F",
        help="precomputed document vectors (.npy or .parquet); alone, the queries are encoded with --model",
    )
    g.add_argument("--query-embeddings", metavar="F", help="precomputed query vectors (.npy or .parquet)")
    g.add_argument("--doc-ids", metavar="F", help="ids for --doc-embeddings .npy, one per line")
    g.add_argument("--query-ids", metavar="F", help="ids for --query-embeddings .npy, one per line")
    g.add_argument(
        "--cache-dir", metavar="DIR", help="where embeddings are cached (default: the user cache dir)"
    )
    g.add_argument(
        "--bm25-engine",
        choices=list(defaults.BM25_ENGINES),
        default=defaults.BM25_ENGINE,
        help=f"BM25 engine (default: {defaults.BM25_ENGINE})",
    )
    _add_precision_arg(g)


def _add_precision_arg(g: Any) -> None:
    g.add_argument(
        "--precision",
        choices=list(defaults.PRECISIONS),
        default=defaults.PRECISION,
        help="fast: bf16 transformer on CPUs that support it (cosine >= 0.9999 to fp32); exact: fp32 "
        f"(default {defaults.PRECISION})",
    )


def _add_cutoff(p: argparse.ArgumentParser, help: str) -> None:
    """``--k``, one integer cutoff (default 10)."""
    p.add_argument("--k", type=int, default=defaults.K, help=help)


def _add_failure(p: argparse.ArgumentParser) -> None:
    """``--failure``, what makes a query fail (``hit`` or ``recall``)."""
    p.add_argument(
        "--failure",
        choices=list(defaults.FAILURE_MODES),
        default=defaults.FAILURE,
        help="hit: no relevant document in the top k (default); recall: any relevant document missing from the top k",
    )


def _add_format(p: argparse.ArgumentParser, choices: list[str]) -> None:
    """``--format``, one of ``choices`` (default: table)."""
    p.add_argument("--format", choices=choices, default="table")


def _evaluate_options(ev: argparse.ArgumentParser) -> None:
    """``evaluate``'s options: cutoffs and metrics, baselines, live retrievers, comparisons, embeddings."""
    ks = ",".join(map(str, DEFAULT_KS))
    ev.add_argument("--k", default=ks, help=f"cutoffs, comma-separated (default: {ks})")
    ev.add_argument(
        "--metrics",
        default=None,
        help=f"comma-separated metric names, e.g. ndcg@10,recall,mrr@10 ({_families(True)} without @k are taken at "
        f"every --k; {_families(False)} without @k mean no cutoff)",
    )
    ev.add_argument("--per-query", action="store_true", help="also print per-query values")
    _add_format(ev, ["table", "json", "csv", "markdown"])
    ev.add_argument(
        "--baseline",
        action="append",
        default=[],
        choices=list(defaults.BASELINES),
        help="add a baseline run computed here (repeatable); then --run is optional",
    )
    ev.add_argument(
        "--depth",
        type=int,
        default=defaults.DEPTH,
        help=f"depth of baseline runs (default: {defaults.DEPTH})",
    )
    _add_retriever_args(ev)
    _add_comparison_args(ev)
    _add_model_args(ev)


def _add_comparison_args(ev: argparse.ArgumentParser) -> None:
    """``evaluate``'s comparisons and CI gate: reference, bounds, resamples, topic-set size, slices."""
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
        "--seed",
        type=int,
        default=defaults.SEED,
        help=f"seed of the bootstrap and randomization tests (default {defaults.SEED})",
    )
    g.add_argument(
        "--resamples",
        type=int,
        default=defaults.RESAMPLES,
        help=f"bootstrap / randomization resamples (default {defaults.RESAMPLES})",
    )
    g.add_argument(
        "--bounds",
        action="store_true",
        help="also report each headline metric with the run's unjudged top documents counted non-relevant (as "
        "reported) and at best (upper bound), and judged@k / hole@k",
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


def _failures_options(fa: argparse.ArgumentParser) -> None:
    """``failures``'s options: one run, the failure definition, thresholds, remedies."""
    _add_cutoff(fa, "a query fails when no relevant document is in its top k")
    _add_failure(fa)
    fa.add_argument(
        "--seed-threshold",
        type=float,
        default=defaults.SEED_COSINE,
        help=f"cosine of the seed rule (default {defaults.SEED_COSINE})",
    )
    fa.add_argument(
        "--duplicate-cosine",
        type=float,
        default=defaults.DUPLICATE_COSINE,
        help=f"near-duplicate cosine for label_gap (default {defaults.DUPLICATE_COSINE})",
    )
    _add_format(fa, ["table", "json", "csv"])
    fa.add_argument(
        "--remedies",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="apply each class's offline remedy and measure what it recovers and loses (default: on)",
    )
    fa.add_argument(
        "--cross-encoder",
        metavar="NAME_OR_PATH",
        help="also measure a sentence-transformers CrossEncoder rerank of the top 3k as a near_miss remedy",
    )
    fa.add_argument(
        "--passage-candidates",
        type=int,
        default=None,
        metavar="N",
        help="the passages remedy re-scores only each query's top N (at least k) of the run, of dense search and of "
        "BM25, and its failed targets; only their passages are encoded (default: every document up to "
        f"{defaults.MAXSIM_MAX_DOCS:,} documents, N={defaults.PASSAGE_CANDIDATES} above)",
    )
    fa.add_argument(
        "--passage-remedy-corpus",
        action="store_true",
        help="the passages remedy over every document's passages, whatever the corpus' size",
    )
    fa.add_argument(
        "--run-kind",
        action="append",
        default=[],
        metavar="NAME=KIND",
        help="the run's kind (dense, lexical, hybrid or unknown), which the classes' rules, wording and remedies "
        "follow; default: inferred from the run's top-k overlap with the BM25 and dense baselines",
    )
    fa.add_argument(
        "--filter-field",
        metavar="FIELD|QUERY_FIELD=DOC_FIELD",
        help="each query's metadata filter: documents whose DOC_FIELD equals the query's QUERY_FIELD (filtered_out "
        "class, recall@k with vs without the filter)",
    )
    fa.add_argument(
        "--filters",
        metavar="F",
        help='JSON metadata filter per query: {"QUERY_ID": {"FIELD": VALUE | {"$in": [...]}}} ($eq, $ne, $in, $nin)',
    )
    _add_retriever_args(fa)
    _add_model_args(fa)


def _models_options(mo: argparse.ArgumentParser) -> None:
    """``models``'s options: many ``--model``, the ranking metric."""
    mo.add_argument(
        "--model",
        action="append",
        default=[],
        metavar="NAME_OR_PATH",
        help="a sentence-transformers model name or local folder, repeatable; `default` = the bundled model",
    )
    _add_cutoff(mo, f"cutoff (default {defaults.K})")
    mo.add_argument("--metric", default=None, help="the metric models are ranked by (default ndcg@K)")
    mo.add_argument("--cache-dir", metavar="DIR", help="where embeddings are cached")
    _add_precision_arg(mo)
    mo.add_argument(
        "--seed", type=int, default=defaults.SEED, help="seed of the bootstrap and randomization tests"
    )
    _add_format(mo, ["table", "json", "csv"])


def _rerank_options(rr: argparse.ArgumentParser) -> None:
    """``rerank``'s options: candidates and a reranked run, or a live CrossEncoder."""
    rr.add_argument("--candidates", required=True, metavar="[NAME=]F", help="the first-stage run")
    rr.add_argument("--reranked", metavar="[NAME=]F", help="the reranked run")
    rr.add_argument(
        "--cross-encoder", metavar="NAME_OR_PATH", help="rerank live with this CrossEncoder instead"
    )
    rr.add_argument(
        "--depth",
        type=int,
        default=defaults.DEPTH,
        help=f"candidates reranked / recall ceiling depth (default {defaults.DEPTH})",
    )
    _add_cutoff(rr, f"cutoff of the failures and nDCG (default {defaults.K})")
    _add_format(rr, ["table", "json"])


def _fuse_options(fu: argparse.ArgumentParser) -> None:
    """``fuse``'s options: two runs, the RRF constant."""
    _add_cutoff(fu, f"cutoff (default {defaults.K})")
    fu.add_argument(
        "--rrf-k",
        type=int,
        default=defaults.RRF_K,
        help=f"the k constant of reciprocal rank fusion (default {defaults.RRF_K})",
    )
    _add_format(fu, ["table", "json", "csv"])


def _risk_options(ri: argparse.ArgumentParser) -> None:
    """``risk``'s options: one run, the cutoff of the score features, the top N."""
    _add_cutoff(ri, f"cutoff of the score features and of failing (default {defaults.K})")
    ri.add_argument("--top", type=int, default=0, help="show only the N riskiest queries (default: all)")
    _add_format(ri, ["table", "json", "csv"])


def _judge_queue_options(jq: argparse.ArgumentParser) -> None:
    """``judge-queue``'s options: the pooling depth, the limit, the output file."""
    _add_cutoff(jq, f"pool the top k of every run (default {defaults.K})")
    jq.add_argument("--limit", type=int, default=None, help="write only the first N pairs (default: all)")
    jq.add_argument(
        "--depth",
        type=int,
        default=defaults.DEPTH,
        help=f"depth of the BM25, dense and hybrid runs (default {defaults.DEPTH})",
    )
    jq.add_argument("--out", metavar="F", help="write the TSV here (default: standard output)")
    _add_model_args(jq)


def _ann_options(an: argparse.ArgumentParser) -> None:
    """``ann``'s options: the cutoff, the format, the vectors."""
    _add_cutoff(an, f"cutoff of recall against exact search and of the metrics (default {defaults.K})")
    _add_format(an, ["table", "json"])
    _add_model_args(an)


def _finetune_options(ft: argparse.ArgumentParser) -> None:
    """``finetune``'s options: the honest evaluation (a training split or folds), the output folder, training."""
    ft.add_argument("--train-split", metavar="S", help="train on this qrels split of --data (or a qrels file) and "
                    "measure on --split (default: cross-fitting with --folds)")  # fmt: skip
    ft.add_argument(
        "--folds", type=int, default=None, help="cross-fitting folds when no --train-split (default 5)"
    )
    ft.add_argument("--out", required=True, metavar="DIR", help="where the model trained on every training query is "
                    "saved (load it with --model DIR)")  # fmt: skip
    ft.add_argument(
        "--sample", type=int, metavar="N", help="measure on N documents (every relevant one kept)"
    )
    epochs, batch, length = defaults.TRAIN_EPOCHS, defaults.TRAIN_BATCH_SIZE, defaults.TRAIN_MAX_SEQ_LENGTH
    rate, pairs = defaults.TRAIN_LEARNING_RATE, defaults.TRAIN_PAIRS_PER_QUERY
    ft.add_argument("--epochs", type=int, default=epochs, help=f"training epochs (default {epochs})")
    ft.add_argument("--batch-size", type=int, default=batch, help=f"default {batch}")
    ft.add_argument("--max-seq-length", type=int, default=length, help="tokens per text in training "
                    f"(default {length}; the saved model keeps its own)")  # fmt: skip
    ft.add_argument("--learning-rate", type=float, default=rate, help=f"default {rate}")
    ft.add_argument("--pairs-per-query", type=int, default=pairs, help="relevant documents per "
                    f"training query, each with one hard negative (default {pairs})")  # fmt: skip
    ft.add_argument(
        "--seed", type=int, default=defaults.SEED, help="seed of the folds, the training and the tests"
    )
    ft.add_argument("--k", default=",".join(map(str, DEFAULT_KS)), help="cutoffs, comma-separated")
    _add_format(ft, ["table", "json"])
    _add_model_args(ft)


def _chunking_options(ch: argparse.ArgumentParser) -> None:
    """``chunking``'s options: the grid, the cutoff, the format, the model."""
    sizes, overlaps = (",".join(map(str, v)) for v in (defaults.CHUNK_SIZES, defaults.CHUNK_OVERLAPS))
    ch.add_argument("--sizes", default=sizes, help=f"chunk sizes in the model's tokens (default {sizes})")
    ch.add_argument(
        "--overlaps",
        default=overlaps,
        help=f"overlaps in the model's tokens, each below every size (default {overlaps})",
    )
    _add_cutoff(ch, f"cutoff of the metrics and of the chunks sent (default {defaults.K})")
    _add_format(ch, ["table", "json"])
    _add_model_args(ch)


def _report_options(re: argparse.ArgumentParser) -> None:
    """``report``'s options: where to write it, the cutoff and failure definition, baselines, the vectors."""
    re.add_argument(
        "--out",
        required=True,
        metavar="F",
        help="the file to write: HTML (one self-contained file), or Markdown when F ends in .md",
    )
    _add_cutoff(re, f"a query fails when no relevant document is in its top k (default {defaults.K})")
    _add_failure(re)
    re.add_argument(
        "--baseline",
        action="append",
        choices=list(defaults.BASELINES),
        help="a baseline shown beside the run (repeatable; default: bm25, dense and hybrid)",
    )
    re.add_argument(
        "--worst",
        type=int,
        default=10,
        metavar="N",
        help="the missed pairs shown with their evidence (default 10)",
    )
    re.add_argument(
        "--charts",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="draw the charts as inline SVG in the HTML (default: on; needs the [report] extra)",
    )
    _add_retriever_args(re)
    _add_model_args(re)


class Command(NamedTuple):
    """A subcommand: its line in ``diagnose --help``, its description, the example of its epilog, whether ``--run``
    is required (``"one"``: the one run analysed), what adds its own options after the data group, and the module
    and function that run it (``function(args) -> exit code``; the module is imported only when the command runs, so
    ``diagnose evaluate`` does not load the modules of ``ann``, ``finetune``, ...)."""

    name: str
    help: str
    description: str
    example: str
    run_required: bool | str
    add_options: Callable[[argparse.ArgumentParser], None]
    module: str
    function: str


#: Every subcommand, in the order of ``diagnose --help``.
COMMAND_TABLE = (
    Command(
        "evaluate",
        help="score runs against a golden set (trec_eval conventions)",
        description="Score one or more runs against a golden set, per query and overall.",
        example="diagnose evaluate --data demo_corpus --run demo_corpus/runs/ann_minilm.trec --k 1,5,10",
        run_required=False,
        add_options=_evaluate_options,
        module="diagnose.cli.evaluate",
        function="cmd_evaluate",
    ),
    Command(
        "failures",
        help="why each failed query failed: class, evidence, recommendation",
        description="Diagnose every failed (query, relevant document) pair of a run: a failure class with its "
        "evidence (cosine, run/dense/BM25 ranks, missing terms, the documents that beat it) and a recommendation.",
        example="diagnose failures --data demo_corpus --run demo_corpus/runs/ann_minilm.trec --k 10",
        run_required="one",
        add_options=_failures_options,
        module="diagnose.cli.failures",
        function="cmd_failures",
    ),
    Command(
        "models",
        help="which embedding model for this golden set: metrics with CIs, ties, speed, memory",
        description="Compare embedding models on the golden set: exact dense retrieval per model, metrics with 95% "
        "bootstrap CIs, significance against the best (statistically tied models share rank 1), encoding "
        "throughput, vector size, index memory, calibrated threshold, failure classes, recall per millisecond.",
        example="diagnose models --data demo_corpus --model default --model /path/to/other-model",
        run_required=False,
        add_options=_models_options,
        module="diagnose.cli.models",
        function="cmd_models",
    ),
    Command(
        "rerank",
        help="judge a reranker against its candidates (ceiling, gains, failures recovered and introduced)",
        description="Evaluate a reranker from a candidate run and a reranked run, or rerank live with a "
        "sentence-transformers CrossEncoder.",
        example="diagnose rerank --data demo_corpus --candidates demo_corpus/runs/ann_minilm.trec "
        "--reranked reranked.trec",
        run_required=False,
        add_options=_rerank_options,
        module="diagnose.cli.models",
        function="cmd_rerank",
    ),
    Command(
        "fuse",
        help="what if two runs were fused (RRF, weighted): metrics and failures recovered",
        description="Fuse two runs with reciprocal rank fusion and weighted min-max score fusion at several weights, "
        "and count the failures at k each fusion would recover or lose.",
        example="diagnose fuse --data demo_corpus --run demo_corpus/runs/ann_minilm.trec "
        "--run demo_corpus/runs/bm25_langchain.trec",
        run_required=True,
        add_options=_fuse_options,
        module="diagnose.cli.models",
        function="cmd_fuse",
    ),
    Command(
        "risk",
        help="which unlabelled queries to judge first: failure risk from the run's scores alone",
        description="Rank every query of a run (judged or not) by how likely it fails, from the shape of its top-k "
        "scores (top score, gap between ranks 1 and 2, spread, mean, softmax confidence for dense runs). With a "
        "golden set (--data or --qrels), also the ROC AUC of that ranking on the golden queries.",
        example="diagnose risk --run demo_corpus/runs/ann_minilm.trec --data demo_corpus --top 20",
        run_required="one",
        add_options=_risk_options,
        module="diagnose.cli.failures",
        function="cmd_risk",
    ),
    Command(
        "judge-queue",
        help="which (query, document) pairs to judge first: the unjudged documents of the runs' top k",
        description="Pool the unjudged documents in the top k of every run and of BM25, dense and hybrid search, "
        "ordered by how likely each is a missed relevant document (near-duplicates of relevant documents first, "
        "then agreement of the BM25 rank, the dense rank, the similarity to the judged relevant documents and the "
        "number of runs that retrieved it). Works without a golden set (--queries and --corpus alone). Writes a "
        "TSV to grade elsewhere; merge it back with --extra-qrels.",
        example="diagnose judge-queue --queries query_log.tsv --corpus corpus.jsonl --limit 200 "
        "--out queue.tsv",
        run_required=False,
        add_options=_judge_queue_options,
        module="diagnose.cli.judge",
        function="cmd_judge_queue",
    ),
    Command(
        "ann",
        help="the ANN frontier: recall, quality and latency of faiss HNSW / IVF settings against exact search",
        description="Build approximate indexes (faiss HNSW over M, efConstruction, efSearch; IVF-Flat over nprobe) "
        "over the same vectors and report per setting: recall@k against exact search, the golden set's hit rate, "
        "recall and nDCG at k, single-thread latency per query (p50/p95), build time, index size and the Pareto "
        "front; with --run, the cheapest setting that recovers the run's index_gap failures (paired test). Needs "
        "the [ann] extra (faiss-cpu).",
        example="diagnose ann --data demo_corpus --run demo_corpus/runs/ann_minilm.trec --k 10 --format json",
        run_required="one",
        add_options=_ann_options,
        module="diagnose.cli.ann",
        function="cmd_ann",
    ),
    Command(
        "finetune",
        help="fine-tune the embedding model on the golden set, measured on queries it never saw",
        description="Fine-tune the sentence-transformers model (MultipleNegativesRankingLoss, hard negatives from "
        "the dense and BM25 results) on a training split, measured on --split; or cross-fitted over --folds, each "
        "query scored by a model that never saw it nor its relevant documents. Base vs tuned with paired tests, "
        "failures recovered and broken per class, the cost announced first, the model saved to --out. Needs the "
        "[embed] and [finetune] extras.",
        example="diagnose finetune --data nfcorpus --train-split dev --split test --out tuned-model --format json",
        run_required=False,
        add_options=_finetune_options,
        module="diagnose.cli.finetune",
        function="cmd_finetune",
    ),
    Command(
        "chunking",
        help="which chunking: re-chunk the documents at a grid of sizes and overlaps, compared on the golden set",
        description="Re-chunk the documents (semantic-text-splitter, lengths in the model's tokens) at every "
        "--sizes x --overlaps, encode the chunks with the model (cached), search exactly, rank documents by their "
        "best chunk, and report per configuration: chunks, encode time, index size, document-level recall and "
        "nDCG at k, span-based context precision and recall and the tokens of the top k chunks, the golden "
        "queries it recovers or breaks against the documents as they are (paired test) and the Pareto front. "
        "Every configuration is cached. Needs the [chunking] extra.",
        example="diagnose chunking --data demo_corpus --sizes 128,256,512 --overlaps 0,32 --format json",
        run_required=False,
        add_options=_chunking_options,
        module="diagnose.cli.chunking",
        function="cmd_chunking",
    ),
    Command(
        "report",
        help="one file a team can share: what to fix first, metrics, failure classes, remedies, worst queries",
        description="Write one run's report: the findings first (what to fix, ranked by net gain, with the paired "
        "test), the metrics at k beside the baselines with quality bands and 95% bootstrap CIs, the failure "
        "classes, the remedy matrix, the worst missed pairs with their evidence and the documents that beat them, "
        "and the validation report. HTML: one self-contained file (charts as inline SVG; no script, font or URL), "
        "opens offline; Markdown (--out ending in .md) for a pull request.",
        example="diagnose report --data demo_corpus --run demo_corpus/runs/ann_minilm.trec --out report.html",
        run_required="one",
        add_options=_report_options,
        module="diagnose.cli.report",
        function="cmd_report",
    ),
)


def build_parser() -> argparse.ArgumentParser:
    """The ``diagnose`` parser: one subcommand per :data:`COMMAND_TABLE` row, its data group then its own options."""
    parser = _Parser(
        prog="diagnose",
        description="Tell why a retriever fails: exact trec_eval metrics, failure classes with evidence, baselines.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for command in COMMAND_TABLE:
        p = sub.add_parser(
            command.name,
            help=command.help,
            description=command.description,
            epilog=f"Example: {command.example}",
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        _add_data_args(p, run_required=command.run_required)
        command.add_options(p)
    return parser


def subcommand_parsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """The subcommand parsers of ``parser`` (one of :func:`build_parser`) by name, in the table's order."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    raise RuntimeError("the diagnose parser has no subcommands")
