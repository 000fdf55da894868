"""``Analysis.finetune``: fine-tune the analysis' embedding model on the golden set and measure it honestly.

Two ways to keep the evaluation honest (:mod:`diagnose.whatif.finetune` defines the triplets and the folds):

- **a training split** (``train_qrels``, e.g. BEIR ``qrels/dev.tsv``): one model trained on that split's golden
  queries (less any query that is also an evaluation query), measured on the analysis' golden queries. ``tuned`` is
  then exactly what ``diagnose evaluate --baseline dense --model MODEL_PATH`` reports on the evaluation split (the same
  vector space code, the same cache, the same exact search).
- **cross-fitting** (``folds=n``): one model per fold trained on the other folds (by query and by relevant
  document), each golden query scored by the model of its own fold, never by one trained on it; then a final model
  trained on every golden query is saved (for use; its own scores on those queries would be leaked, so none is
  reported).

``base`` is the base model's exact dense run on the same queries; ``comparisons`` are the paired tests of
:meth:`~diagnose.analysis.Analysis.comparisons` (tuned vs base), ``recovered``/``broken`` compare the two runs'
diagnoses (:func:`diagnose.whatif.finetune.result.class_changes`; both diagnosed with the base model's vectors, so the
classes of the tuned run's failures are read in the base model's space). Base vectors come from the on-disk cache;
a tuned model's vectors are cached under its folder's content fingerprint.
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from diagnose import defaults, embed
from diagnose.checks import param_error, positive_int
from diagnose.data import Corpus, Qrels, Run
from diagnose.io.messages import plural_of, verb
from diagnose.runtime.lazy import pandas as pd
from diagnose.search import baselines as bl
from diagnose.whatif.finetune import train as tr
from diagnose.whatif.finetune.result import Cost, FinetuneResult, class_changes
from diagnose.whatif.finetune.triplets import (
    Fold,
    Triplet,
    assign_folds,
    mine_triplets,
    relevant_docs,
    same_text,
)

if TYPE_CHECKING:
    from diagnose.analysis import Analysis

#: Re-encoded documents (corpus size x evaluated models) above which fine-tuning refuses to start without a sample.
TUNED = "finetuned"
DEFAULT_FOLDS = 5


def check_out(out: Any) -> Path:
    """``out``: a folder that can be written, empty or holding a sentence-transformers model (replaced)."""
    if not isinstance(out, str | Path) or not str(out).strip():
        raise param_error("out", f"out must be a folder path, got {out!r}.")
    path = Path(out)
    if path.exists() and (
        not path.is_dir() or (any(path.iterdir()) and not (path / "modules.json").is_file())
    ):
        raise param_error(
            "out", f"{path} exists and is not an empty folder or a saved model; choose another."
        )
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / ".diagnose-write-test"
        probe.write_text("")
        probe.unlink()
    except OSError as e:
        raise param_error("out", f"cannot write the model to {path}: {e.strerror or e}.") from None
    return path


def _texts(an: Analysis, triplets: list[Triplet]) -> tuple[list[str], list[str], list[str]]:
    q = an.dataset.queries.text_of()
    docs = an.dataset.corpus
    text = dict(zip((str(d) for d in docs.ids), docs.texts(), strict=True))
    return (
        [q[t.query_id] for t in triplets],
        [text[t.positive_id] for t in triplets],
        [text[t.negative_id] for t in triplets],
    )


def _mine(an: Analysis, source: Analysis, qids: list[str], pairs: int, exclude: set[str]) -> list[Triplet]:
    return mine_triplets(
        source.dataset.qrels,
        qids,
        dense=source.baseline("dense"),
        bm25=source.baseline("bm25"),
        pairs_per_query=pairs,
        exclude_docs=exclude,
        known_docs={str(d) for d in an.dataset.corpus.ids},
    )


def _train(
    an: Analysis, base: Any, triplets: list[Triplet], out: Path, settings: tr.TrainSettings, progress: bool
):
    if not triplets:
        raise param_error(
            "queries",
            "No training pair: no training query has both a relevant document in the corpus and a non-relevant "
            "document among its dense and BM25 results (or the folds left none). Check the qrels.",
        )
    return tr.train(base, *_texts(an, triplets), out, settings, progress=progress)


def _tuned_run(an: Analysis, folder: Path, queries: list[str] | None = None) -> Run:
    """The exact dense run of the model in ``folder`` over the golden queries (only ``queries`` when given), under
    the analysis' ``ignore_identical_ids`` like the base model's dense baseline it is compared with."""
    sp = an.space_for(embed.load_encoder(str(folder), precision=an.precision))
    run = bl.dense_run(
        sp.doc_vecs, sp.query_vecs, sp.doc_ids, sp.query_ids, depth=an.search_depth, name=TUNED
    )
    run = an._identical_ids(run, depth=an.depth)
    return run if queries is None else replace(run, df=run.df[run.df["query_id"].isin(set(queries))])


def _cost(an: Analysis, base: Any, n_pairs: list[int], evaluated: int, settings: tr.TrainSettings) -> Cost:
    steps = sum(tr.steps(n, settings) for n in n_pairs)
    docs = an.dataset.corpus.texts()
    step_s = tr.seconds_per_step(base, docs[:16], settings)
    encode = evaluated * len(docs) * step_s / (3 * 3 * settings.batch_size) * 2  # forward only, longer texts
    return Cost(
        models=len(n_pairs),
        pairs=n_pairs[-1],
        steps=steps,
        seconds=steps * step_s + encode,
        documents_to_encode=evaluated * len(docs),
        device=tr.device(),
        bf16=tr.use_bf16(settings.precision),
    )


def _check_size(cost: Cost, max_documents: int) -> None:
    if cost.documents_to_encode > max_documents:
        raise param_error(
            "sample",
            f"{cost.sentence()}: more than {max_documents:,} documents to re-encode. Measure on a sample of the "
            "corpus (sample=N / --sample N keeps every relevant document and draws the rest), or raise "
            "max_documents.",
        )


def sampled(an: Analysis, n: int, seed: int) -> Analysis:
    """The analysis over ``n`` documents of its corpus: every document relevant to a golden query, then documents
    drawn at random with ``seed`` (corpus order kept); the golden set and the settings unchanged, no user run."""
    n = positive_int(n, "sample")
    corpus = an.dataset.corpus
    keep = relevant_docs(an.dataset.qrels, an.golden)
    ids = [str(d) for d in corpus.ids]
    rest = [i for i, d in enumerate(ids) if d not in keep]
    rng = np.random.default_rng(seed)
    drawn = set(rng.choice(rest, size=max(0, min(len(rest), n - len(keep))), replace=False).tolist())
    rows = [i for i, d in enumerate(ids) if d in keep or i in drawn]
    sub = Corpus(
        df=corpus.df.iloc[rows].reset_index(drop=True), source=f"{corpus.source} (sample of {len(rows)})"
    )
    return _sibling(an, replace(an.dataset, corpus=sub, runs={}), {}, progress=an._reporter)


def _sibling(an: Analysis, dataset: Any, runs: dict[str, Run], **extra: Any) -> Analysis:
    """An analysis of ``dataset`` and ``runs`` with ``an``'s settings (cutoffs, model, failure, cache, depth)."""
    return type(an)(
        dataset,
        runs,
        k=an.k,
        ks=an.ks,
        model=an.model,
        failure=an.failure,
        cache_dir=an.cache_dir,
        metrics=an._metric_names,
        depth=an.depth,
        bm25_engine=an.bm25_engine,
        thresholds=an._thresholds,
        precision=an.precision,
        ignore_identical_ids=an.ignore_identical_ids,
        **extra,
    )


def _compare(an: Analysis, base_run: Run, tuned_run: Run) -> Analysis:
    """An analysis of the base and tuned dense runs on the same data, sharing ``an``'s vectors and BM25 index."""
    cmp = _sibling(
        an, an.dataset, {"dense": base_run, TUNED: tuned_run}, kinds={"dense": "dense", TUNED: "dense"}
    )
    for key in ("space", "bm25", "encoder", "golden"):
        cmp._memo[key] = getattr(an, key)
    return cmp


def _check_mode(an: Analysis, train_qrels: Qrels | None, folds: int | None) -> int | None:
    if train_qrels is not None and folds is not None:
        raise param_error("folds", "Give either a training split (train_qrels) or folds, not both.")
    if train_qrels is not None and not isinstance(train_qrels, Qrels):
        raise param_error("train_split", f"train_qrels must be a Qrels, got {type(train_qrels).__name__}.")
    an._need_texts("Fine-tuning")
    if an.model_source is None or an.given_embeddings is not None:
        raise param_error(
            "model",
            f"Fine-tuning needs a sentence-transformers model (model=NAME or folder, or an encoder of "
            f"diagnose.embed.load_encoder); this analysis encodes with {an.model_label}, which has no model to "
            "train (an encoder object without a source, or precomputed vectors).",
        )
    if train_qrels is not None:
        return None
    n = positive_int(folds if folds is not None else DEFAULT_FOLDS, "folds")
    assign_folds(an.golden, n, 0)  # enough golden queries for n folds, checked before anything is loaded
    return n


def _split_mode(
    an: Analysis, base: Any, train_qrels: Qrels, out: Path, s: tr.TrainSettings, opts: dict
) -> dict:
    """Train on the training split's golden queries (less the evaluation's), measure on the evaluation's."""
    source = an.with_qrels(train_qrels)
    evaluated = set(an.golden)
    try:
        candidates = source.golden
    except Exception as e:  # noqa: BLE001 - a DataError of the other golden set names "queries": say the split
        raise param_error("train_split", f"The training split has no usable golden query: {e}") from None
    qids = [q for q in candidates if q not in evaluated]
    if not qids:
        raise param_error("train_split", "Every golden query of the training split is an evaluation query: nothing "
                          "is left to train on. Use another split, or folds.")  # fmt: skip
    leaks = same_text(qids, an.golden, an.dataset.queries.text_of())
    if len(leaks) == len(qids):
        raise param_error(
            "train_split",
            f"Every golden query of the training split ({len(qids):,}) has the text of an evaluation query under "
            f"another id (e.g. {_pairs(leaks)[0]}): a model trained on them would be scored on the questions it "
            "saw. Use a split with other questions, or folds.",
        )
    _warn_leaks(an, leaks, "the training split", "an evaluation query", train_qrels.source)
    qids = [q for q in qids if q not in leaks]
    triplets = _mine(an, source, qids, s.pairs_per_query, set())
    cost = _cost(an, base, [len(triplets)], 1, s)
    _announce(an, cost, opts)
    _train(an, base, triplets, out, s, opts["progress"])
    an._reporter.step(f"Encoding with the fine-tuned model {out}")
    return {"run": _tuned_run(an, out), "pairs": len(triplets), "cost": cost, "folds": (),
            "excluded": len(candidates) - len(qids) - len(leaks), "by_text": _pairs(leaks),
            "mode": "split"}  # fmt: skip


def _fold_mode(an: Analysis, base: Any, n: int, out: Path, s: tr.TrainSettings, opts: dict) -> dict:
    """Cross-fitting: a model per fold scores the fold's queries; then a final model on every golden query."""
    golden, qrels = list(an.golden), an.dataset.qrels
    parts = assign_folds(golden, n, s.seed)
    plans, leaks = [], {}
    text_of = an.dataset.queries.text_of()
    for i, test in enumerate(parts):
        held = set(test)
        train_q = [q for q in golden if q not in held]
        fold_leaks = same_text(train_q, test, text_of)  # the same question in another fold, under another id
        leaks.update(fold_leaks)
        train_q = [q for q in train_q if q not in fold_leaks]
        plans.append(
            Fold(i, tuple(test), tuple(_mine(an, an, train_q, s.pairs_per_query, relevant_docs(qrels, test))))
        )
    _warn_leaks(an, leaks, "another fold", "a held-out query", qrels.source)
    final = _mine(an, an, golden, s.pairs_per_query, set())
    cost = _cost(an, base, [len(f.triplets) for f in plans] + [len(final)], n, s)
    _announce(an, cost, opts)
    runs = []
    for fold in plans:
        an._reporter.step(f"Fold {fold.index + 1}/{n}: training on {len(fold.triplets):,} pairs, scoring "
                          f"{len(fold.test):,} held-out queries")  # fmt: skip
        with tempfile.TemporaryDirectory(prefix="diagnose-fold-") as scratch:
            folder = _train(an, base, list(fold.triplets), Path(scratch) / "model", s, opts["progress"])
            runs.append(_tuned_run(an, folder, list(fold.test)).df)
    an._reporter.step(f"Final model: training on every golden query ({len(final):,} pairs)")
    _train(an, base, final, out, s, opts["progress"])
    run = Run(name=TUNED, df=pd.concat(runs, ignore_index=True), source=f"out-of-fold ({n} folds)")
    return {
        "run": run,
        "pairs": len(final),
        "cost": cost,
        "folds": tuple(plans),
        "excluded": 0,
        "by_text": _pairs(leaks),
        "mode": "folds",
    }


def _pairs(leaks: dict[str, str]) -> tuple[str, ...]:
    return tuple(f"{t} = {e}" for t, e in leaks.items())


def _warn_leaks(an: Analysis, leaks: dict[str, str], where: str, whose: str, file: str) -> None:
    """The warning ``finetune_query_text_leak`` in the data's report: training queries left out because they have
    the text of an evaluated query under another id (counted, the first few named)."""
    if not leaks:
        return
    n = len(leaks)
    an.dataset.report.add(
        "finetune_query_text_leak",
        f"{plural_of(n, 'training query', 'training queries')} of {where} {verb(n, 'has', 'have')} the text of "
        f"{whose} under another id; left out of training (a model trained on a question would be scored on it)",
        file=file or None,
        count=n,
        examples=list(_pairs(leaks)[:5]),
    )


def _announce(an: Analysis, cost: Cost, opts: dict) -> None:
    _check_size(cost, opts["max_documents"])
    an._reporter.step(cost.sentence())
    if opts["announce"] is not None:
        opts["announce"](cost)


def finetune(
    an: Analysis,
    *,
    out: str | Path,
    train_qrels: Qrels | None = None,
    folds: int | None = None,
    settings: tr.TrainSettings | None = None,
    max_documents: int = defaults.FINETUNE_MAX_DOCUMENTS,
    progress: bool = False,
    announce: Any = None,
) -> FinetuneResult:
    """See :meth:`diagnose.analysis.Analysis.finetune` and the module docstring."""
    t0 = time.perf_counter()
    s = (settings or tr.TrainSettings(precision=an.precision)).checked()
    n = _check_mode(an, train_qrels, folds)
    path = check_out(out)
    base = embed.load_encoder(an.model_source, precision="exact").model
    opts = {"progress": progress, "max_documents": max_documents, "announce": announce}
    got = (
        _split_mode(an, base, train_qrels, path, s, opts)
        if n is None
        else _fold_mode(an, base, n, path, s, opts)
    )
    cmp = _compare(an, an.baseline("dense"), got["run"])
    table = cmp.metrics()
    comparisons = cmp.comparisons("dense")
    recovered, broken = class_changes(cmp.diagnosis("dense"), cmp.diagnosis(TUNED))
    result = FinetuneResult(
        base={m: float(v) for m, v in table.loc["dense"].items()},
        tuned={m: float(v) for m, v in table.loc[TUNED].items()},
        comparisons=comparisons,
        p_value=comparisons[0].p_holm if comparisons else None,
        model_path=str(path.resolve()),
        train_pairs=got["pairs"],
        seconds=time.perf_counter() - t0,
        recovered=recovered,
        broken=broken,
        mode=got["mode"],
        evaluated_queries=len(an.golden),
        cost=got["cost"],
        settings=s.to_dict(),
        folds=got["folds"],
        excluded_queries=got["excluded"],
        run=got["run"],
        excluded_by_text=got["by_text"],
    )
    return result
