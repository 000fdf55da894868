"""Training triplets mined from the golden set, and the folds of cross-fitting.

**Triplets** ``(anchor, positive, negative)``: for a training query, its relevant documents (grade > 0; the highest
grades first, then qrels order), at most ``pairs_per_query`` of them, each paired with one **hard negative**. The
negatives are the documents the base model's dense run and the BM25 run rank highest for that query (the two lists
interleaved, dense first, so the negatives are the documents that rank *above* the relevant ones or just below
them: what beats the positives) that are not judged relevant to it: judged non-relevant (grade <= 0) and unjudged
documents alike, judged non-relevant first. Unjudged documents may be relevant after all (a false negative); the
interleaving starts at rank 1 because skipping ranks would throw away the documents that cause the failures.
MultipleNegativesRankingLoss adds the other positives of the batch as in-batch negatives; the trainer's
no-duplicates batch sampler keeps a query's two positives out of one batch.

**Folds** (cross-fitting): the golden queries are shuffled with ``seed`` and dealt round-robin into ``n`` folds
(**by query**: a query's fold model never sees it as an anchor). **By relevant document**: the model of fold ``f``
is trained on the other folds' queries, and every document relevant to a query of fold ``f`` is left out of its
training triplets, as a positive and as a negative; so a test query is never easy because its own relevant document
was a training positive of another query. :func:`check_folds` verifies both on the triplets actually built.

**By text**: ids are not enough. A training query whose text equals an evaluated query's text (the same question
under another id, in another split or fold) would be scored by a model trained on it: :func:`same_text` finds them
by :func:`query_key` (Unicode NFKC, case folded, the word characters only: ``"How many days?"`` and ``"how many
days"`` are one question), and they are left out of training, counted and named (a warning, and
``excluded_by_text`` in :class:`~diagnose.whatif.finetune.result.FinetuneResult`).
"""

from __future__ import annotations

import random
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from diagnose.data import DataError, Qrels, Run

#: Candidates looked at for the hard negatives, per query, in each of the dense and BM25 runs.
NEGATIVE_DEPTH = 30


@dataclass(frozen=True)
class Triplet:
    query_id: str
    positive_id: str
    negative_id: str


@dataclass(frozen=True)
class Fold:
    """One fold of cross-fitting: the queries its model scores (``test``) and the triplets it was trained on."""

    index: int
    test: tuple[str, ...]
    triplets: tuple[Triplet, ...] = field(default=(), repr=False)

    def to_dict(self) -> dict:
        return {"fold": self.index, "test_queries": len(self.test), "train_pairs": len(self.triplets)}


def _ranked(run: Run | None, depth: int) -> dict[str, list[str]]:
    """Query id -> its top ``depth`` doc ids in rank order."""
    if run is None:
        return {}
    top = run.top(depth).sort_values(["query_id", "rank"])
    out: dict[str, list[str]] = {}
    for q, d in zip(top["query_id"].tolist(), top["doc_id"].tolist(), strict=True):
        out.setdefault(str(q), []).append(str(d))
    return out


def _interleave(*lists: Sequence[str]) -> list[str]:
    out: list[str] = []
    for i in range(max((len(x) for x in lists), default=0)):
        out += [x[i] for x in lists if i < len(x)]
    return list(dict.fromkeys(out))


def mine_triplets(
    qrels: Qrels,
    query_ids: Iterable[str],
    *,
    dense: Run | None,
    bm25: Run | None,
    pairs_per_query: int,
    exclude_docs: set[str] | frozenset[str] = frozenset(),
    known_docs: set[str] | None = None,
) -> list[Triplet]:
    """The triplets of ``query_ids`` (module docstring). ``exclude_docs``: documents never used (the fold's test
    queries' relevant documents); ``known_docs``: the corpus ids (a judged document missing from it is skipped).
    A query without a usable positive or negative gives no triplet."""
    grades = qrels.as_dict()
    ranked = [_ranked(dense, NEGATIVE_DEPTH), _ranked(bm25, NEGATIVE_DEPTH)]
    out: list[Triplet] = []
    for q in query_ids:
        judged = grades.get(q, {})
        # in qrels order (a list, not a set: a set of strings iterates in an order that changes with every process's
        # hash seed, so equal grades picked different positives run to run and the trained weights differed)
        usable = [d for d in judged if d not in exclude_docs and (known_docs is None or d in known_docs)]
        positives = sorted((d for d in usable if judged[d] > 0), key=lambda d: -judged[d])[:pairs_per_query]
        candidates = [
            d
            for d in _interleave(*(r.get(q, []) for r in ranked))
            if d not in exclude_docs and judged.get(d, 0) <= 0
        ]
        negatives = sorted(candidates, key=lambda d: d not in judged)  # judged non-relevant first, stable
        if not positives or not negatives:
            continue
        out += [Triplet(q, p, negatives[i % len(negatives)]) for i, p in enumerate(positives)]
    return out


def assign_folds(query_ids: Sequence[str], n: int, seed: int) -> list[list[str]]:
    """The golden queries shuffled with ``seed`` and dealt round-robin into ``n`` folds (each in qrels order)."""
    if n < 2 or len(query_ids) < n:
        raise DataError(
            f"Cross-fitting with {n} folds needs at least 2 folds and {n} golden queries (one per fold to score); "
            f"there are {len(query_ids)}. Use fewer folds, or train on another split (--train-split).",
            param="folds",
        )
    order = list(query_ids)
    random.Random(seed).shuffle(order)
    fold_of = {q: i % n for i, q in enumerate(order)}
    return [[q for q in query_ids if fold_of[q] == f] for f in range(n)]


_WORD = re.compile(r"\w+")


def query_key(text: str) -> str:
    """A query's text as compared for leakage: NFKC, case folded, its runs of word characters joined by a space
    (punctuation and spacing ignored)."""
    return " ".join(_WORD.findall(unicodedata.normalize("NFKC", str(text)).casefold()))


def same_text(train: Iterable[str], evaluated: Iterable[str], text_of: Mapping[str, str]) -> dict[str, str]:
    """Training query id -> the evaluated query id with the same :func:`query_key` (the first in ``evaluated``
    order), for the training queries that have one; a query whose key is empty (no word) matches nothing."""
    held: dict[str, str] = {}
    for q in evaluated:
        key = query_key(text_of.get(q, ""))
        if key:
            held.setdefault(key, q)
    out = {}
    for q in train:
        twin = held.get(query_key(text_of.get(q, "")))
        if twin is not None and twin != q:
            out[q] = twin
    return out


def relevant_docs(qrels: Qrels, query_ids: Iterable[str]) -> set[str]:
    """Every document judged relevant (grade > 0) to one of ``query_ids``."""
    rel = qrels.relevant()
    return set(rel.loc[rel["query_id"].isin(set(query_ids)), "doc_id"].astype(str))


def check_folds(folds: Sequence[Fold], qrels: Qrels) -> None:
    """Raise AssertionError when a fold's model saw one of its test queries or their relevant documents."""
    for fold in folds:
        test, docs = set(fold.test), relevant_docs(qrels, fold.test)
        for t in fold.triplets:
            assert t.query_id not in test, f"fold {fold.index} trained on its test query {t.query_id}"
            assert not {t.positive_id, t.negative_id} & docs, f"fold {fold.index} trained on a test document"


def scored_by(folds: Sequence[Fold]) -> Mapping[str, int]:
    """Query id -> the fold whose model scores it (each golden query in exactly one fold)."""
    return {q: f.index for f in folds for q in f.test}
