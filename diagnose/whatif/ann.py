"""The ANN frontier: what an approximate index (faiss HNSW or IVF-Flat) at each setting costs and loses against
exact search, on the golden set, over the analysis' own vectors.

For each setting of a grid (:func:`default_settings`: HNSW over ``M`` x ``efConstruction`` x ``efSearch``, IVF-Flat
over ``nprobe`` at one ``nlist``), the documents' vectors (unit length, inner product = cosine, as in
:class:`~diagnose.search.space.VectorSpace`) are indexed once per build parameters (``efSearch`` and ``nprobe`` need no
rebuild) and every query is searched alone, so each point reports:

- ``recall_vs_exact``: the mean over queries of ``|top k of the index  ∩  top k of exact search| / |top k of exact
  search|`` (exact search: the dense baseline, ties at the cut-off as it broke them);
- ``hit_rate@K``, ``recall@K``, ``ndcg@K``: :func:`diagnose.metrics.evaluate` of the index's run (ties by doc id
  descending, as the dense baseline orders them) against the golden set;
- ``latency_p50_ms`` / ``latency_p95_ms``: per query, one query per ``search`` call, ``faiss.omp_set_num_threads(1)``
  (single-thread latency is the contract; the previous thread count is restored), measured with
  ``time.perf_counter`` after one warm-up search;
- ``build_s``: the wall time of ``train`` + ``add`` (single thread too); settings sharing a build share its time;
- ``memory_mb``: the size of ``faiss.serialize_index`` in MiB, the index as faiss would store it (vectors, graph
  links or inverted lists), not the process's peak;
- ``pareto``: true when no other point (the exact one included) is both faster at p50 and better on ``ndcg@K``
  (strictly on both).

The ``exact`` point is an exact inner-product index (``IndexFlatIP``): its metrics are those of the dense baseline
run it is given (so they equal the baseline's), its latency is measured like the others'.

``recovers_index_gap`` (:class:`IndexGapRecovery`): for a run and its diagnosis, the ``index_gap`` failures (failed
queries in ``hit`` mode, missed pairs in ``recall`` mode) each setting's run recovers (in its top k); the cheapest
setting (lowest p50) that recovers all of them, else the one that recovers the most (``recovers``: ``"all"`` or
``"most"``), with the two-sided paired randomization test of ``hit_rate@k`` between the run and that setting's run
over the golden queries (:func:`diagnose.stats.randomization_test`, as :mod:`diagnose.whatif.remedies` does).
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from diagnose import defaults
from diagnose.checks import given, is_int, positive_int
from diagnose.data import DataError, Qrels, Run
from diagnose.metrics.identical import drop_identical_ids
from diagnose.runtime.extras import needs
from diagnose.runtime.lazy import pandas as pd
from diagnose.runtime.progress import Progress, reporter
from diagnose.search.space import VectorSpace

#: The default grid: HNSW ``M`` x ``efConstruction`` x ``efSearch``, IVF-Flat ``nprobe`` (at :func:`ivf_nlist`).
HNSW_M = (16, 32)
HNSW_EF_CONSTRUCTION = (40, 200)
HNSW_EF_SEARCH = (16, 32, 64, 128, 256)
IVF_NPROBE = (1, 4, 16, 64)

#: The golden set's quality of each setting, at k: the headline families (``metrics.HEADLINE``) without mrr, which
#: takes no cutoff while the frontier compares settings at one k; in the order of the table and of the JSON keys.
QUALITY_FAMILIES = ("hit_rate", "recall", "ndcg")


@dataclass(frozen=True)
class AnnSetting:
    """One index setting: ``index`` is ``"hnsw"`` (params ``M``, ``efConstruction``, ``efSearch``) or ``"ivf_flat"``
    (params ``nlist``, ``nprobe``)."""

    index: str
    params: Mapping[str, int]

    @property
    def build_key(self) -> tuple[Any, ...]:
        """What a build depends on (settings with the same key share one index)."""
        if self.index == "hnsw":
            return ("hnsw", self.params["M"], self.params["efConstruction"])
        return ("ivf_flat", self.params["nlist"])

    def label(self) -> str:
        return f"{self.index}(" + ", ".join(f"{k}={v}" for k, v in self.params.items()) + ")"


def ivf_nlist(n_docs: int) -> int:
    """IVF's number of lists: ``round(4 * sqrt(n))`` (faiss' guideline is 4 to 16 x sqrt(n)), at most ``n // 39``
    (faiss wants 39 training points per centroid) and at least 1."""
    return max(1, min(round(4 * math.sqrt(n_docs)), n_docs // 39))


def default_settings(n_docs: int) -> list[AnnSetting]:
    """The default grid for ``n_docs`` documents: HNSW ``M`` in :data:`HNSW_M`, ``efConstruction`` in
    :data:`HNSW_EF_CONSTRUCTION`, ``efSearch`` in :data:`HNSW_EF_SEARCH`; IVF-Flat at :func:`ivf_nlist` with
    ``nprobe`` in :data:`IVF_NPROBE` (those above ``nlist`` left out: they equal ``nprobe = nlist``)."""
    out = [
        AnnSetting("hnsw", {"M": m, "efConstruction": efc, "efSearch": efs})
        for m in HNSW_M
        for efc in HNSW_EF_CONSTRUCTION
        for efs in HNSW_EF_SEARCH
    ]
    nlist = ivf_nlist(n_docs)
    probes = sorted({min(p, nlist) for p in IVF_NPROBE})
    return out + [AnnSetting("ivf_flat", {"nlist": nlist, "nprobe": p}) for p in probes]


#: The bounds of each parameter (inclusive), checked before any value reaches faiss: HNSW needs ``M >= 2`` (faiss'
#: ``IndexHNSW`` with ``M`` 1 or ``True`` ends the process with SIGSEGV); ``M`` above 1024 allocates ``2 M`` links
#: per document for nothing (hnswlib's guidance is 2 to 100); faiss' beams cost time in proportion to ``ef`` even on
#: 100 documents (``efConstruction`` 2**31 - 1: 49 s), so they stop at 100,000 (the default grid at 256). ``nlist``
#: is also at most the number of documents, ``nprobe`` at most ``nlist`` (:func:`check_settings`).
MAX_EF = 100_000
PARAM_BOUNDS = {
    "hnsw": {"M": (2, 1024), "efConstruction": (1, MAX_EF), "efSearch": (1, MAX_EF)},
    "ivf_flat": {"nlist": (1, 2**31 - 1), "nprobe": (1, 2**31 - 1)},
}


def check_settings(settings: Any, n_docs: int | None = None) -> list[AnnSetting] | None:
    """``settings`` (None: the default grid; else a list of :class:`AnnSetting`) checked before faiss sees them.

    Each setting is an :class:`AnnSetting` whose ``index`` is ``"hnsw"`` or ``"ivf_flat"`` and whose ``params`` is
    a mapping holding exactly that index's parameters, each an integer (a Python or numpy int; not a bool, a float
    or a string) within :data:`PARAM_BOUNDS`; ``nprobe <= nlist``, and with ``n_docs``, ``nlist <= n_docs``.
    Anything else: :class:`~diagnose.data.DataError` with ``param="settings"`` naming the setting and the key."""
    if settings is None:
        return None
    if isinstance(settings, str | bytes | Mapping | AnnSetting) or not isinstance(settings, Sequence):
        raise DataError(
            f"settings must be a list of AnnSetting (e.g. [AnnSetting('hnsw', {{'M': 16, 'efConstruction': 40, "
            f"'efSearch': 64}})]), got {given(settings)}.",
            param="settings",
        )
    return [_check_setting(s, n_docs) for s in settings]


def _check_setting(s: Any, n_docs: int | None) -> AnnSetting:
    if not isinstance(s, AnnSetting):
        raise DataError(
            f"settings must hold AnnSetting records (AnnSetting('hnsw', {{'M': 16, ...}})), got {given(s)}.",
            param="settings",
        )
    bounds = PARAM_BOUNDS.get(s.index) if isinstance(s.index, str) else None
    if bounds is None:
        raise DataError(f"Unknown ANN index {given(s.index)}: use 'hnsw' or 'ivf_flat'.", param="settings")
    need = ", ".join(bounds)
    if not isinstance(s.params, Mapping) or set(s.params) != set(bounds):
        raise DataError(
            f"ANN setting {s.index} with params {given(s.params)}: {s.index} takes a dict of exactly {need}.",
            param="settings",
        )
    for key, (low, high) in bounds.items():
        value = s.params[key]
        if not is_int(value) or not low <= value <= high:
            raise DataError(
                f"ANN setting {s.index}: {key} must be an integer in [{low}, {high}] (not a bool, float or "
                f"string), got {given(value)}.",
                param="settings",
            )
    if s.index == "ivf_flat":
        if s.params["nprobe"] > s.params["nlist"]:
            raise DataError(
                f"ANN setting {s.label()}: nprobe must be at most nlist ({s.params['nlist']}).",
                param="settings",
            )
        if n_docs is not None and s.params["nlist"] > n_docs:
            raise DataError(
                f"ANN setting {s.label()}: nlist must be at most the {n_docs} documents.", param="settings"
            )
    return AnnSetting(s.index, {key: int(s.params[key]) for key in bounds})


@dataclass(frozen=True)
class AnnPoint:
    """One measured setting (module docstring: every definition). ``run``: the index's run (depth k)."""

    index: str
    params: Mapping[str, int]
    recall_vs_exact: float
    metrics: Mapping[str, float]  # hit_rate@K, recall@K, ndcg@K
    latency_p50_ms: float
    latency_p95_ms: float
    build_s: float
    memory_mb: float
    pareto: bool = False
    run: Run | None = field(default=None, repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index, "params": dict(self.params), "recall_vs_exact": self.recall_vs_exact,
            **self.metrics, "latency_p50_ms": self.latency_p50_ms, "latency_p95_ms": self.latency_p95_ms,
            "build_s": self.build_s, "memory_mb": self.memory_mb, "pareto": self.pareto,
        }  # fmt: skip


@dataclass(frozen=True)
class IndexGapRecovery:
    """The cheapest setting that recovers a run's ``index_gap`` failures (module docstring)."""

    run: str | None
    metric: str
    failures: tuple[str, ...] = ()  # query ids (hit mode) or "query/doc" (recall mode)
    setting: AnnSetting | None = None
    recovered: tuple[str, ...] = ()
    recovers: str = "none"  # "all", "most" or "none"
    latency_p50_ms: float | None = None
    mean_diff: float | None = None
    p_value: float | None = None
    lost_hits: int | None = None
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        s = self.setting
        return {
            "run": self.run, "metric": self.metric, "index_gap_failures": len(self.failures),
            "setting": {"index": s.index, "params": dict(s.params)} if s is not None else None,
            "recovered": len(self.recovered), "recovers": self.recovers, "recovered_ids": list(self.recovered),
            "latency_p50_ms": self.latency_p50_ms, "mean_diff": self.mean_diff, "p_value": self.p_value,
            "lost_hits": self.lost_hits, "note": self.note,
        }  # fmt: skip


@dataclass(frozen=True)
class AnnFrontier:
    """The exact point, every setting measured, and the index_gap recovery of the run (when one was given)."""

    k: int
    exact: AnnPoint
    settings: tuple[AnnPoint, ...]
    recovers_index_gap: IndexGapRecovery
    current: AnnPoint | None = (
        None  # the collection's own setting, when it could be read (also in ``settings``)
    )

    def to_dict(self) -> dict[str, Any]:
        """``{"exact": {...}, "settings": [{...}], "recovers_index_gap": {...}}`` (``diagnose ann --format json``),
        plus ``"current"`` (that point's dict) when the vectors come from a collection whose setting was read."""
        out = {
            "exact": self.exact.to_dict(),
            "settings": [p.to_dict() for p in self.settings],
            "recovers_index_gap": self.recovers_index_gap.to_dict(),
        }
        return out | ({"current": self.current.to_dict()} if self.current is not None else {})

    def table(self) -> pd.DataFrame:
        """One row per point (exact first): index, params (as text) and the measures."""
        rows = [p.to_dict() | {"params": AnnSetting(p.index, p.params).label()[len(p.index) :]}
                for p in (self.exact, *self.settings)]  # fmt: skip
        return pd.DataFrame(rows)


# ------------------------------------------------------------------------------------------ measuring


@contextmanager
def _one_thread() -> Iterator[Any]:
    """faiss limited to one thread inside (single-thread latency is the contract), the previous count restored."""
    with needs("The ANN frontier"):
        import faiss
    before = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)
    try:
        yield faiss
    finally:
        faiss.omp_set_num_threads(before)


def _build(faiss: Any, key: tuple[Any, ...], docs: np.ndarray) -> tuple[Any, float, float]:
    """The index of ``key`` over ``docs``, its build seconds and its serialized size in MiB."""
    dim = docs.shape[1]
    t0 = time.perf_counter()
    if key[0] == "exact":
        index = faiss.IndexFlatIP(dim)
    elif key[0] == "hnsw":
        index = faiss.IndexHNSWFlat(dim, key[1], faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = key[2]
    else:
        index = faiss.IndexIVFFlat(faiss.IndexFlatIP(dim), dim, key[1], faiss.METRIC_INNER_PRODUCT)
        index.train(docs)
    index.add(docs)
    build_s = time.perf_counter() - t0
    return index, build_s, len(faiss.serialize_index(index)) / 2**20


def _search(index: Any, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Top ``k`` of each query searched alone: ``(idx, scores, milliseconds per query)``."""
    nq = len(queries)
    idx = np.full((nq, k), -1, dtype=np.int64)
    scores = np.zeros((nq, k), dtype=np.float32)
    ms = np.zeros(nq, dtype=np.float64)
    if nq:
        index.search(queries[:1], k)  # warm-up
    for i in range(nq):
        q = queries[i : i + 1]
        t0 = time.perf_counter()
        s, j = index.search(q, k)
        ms[i] = (time.perf_counter() - t0) * 1000.0
        idx[i], scores[i] = j[0], s[0]
    return idx, scores, ms


def _recall_vs_exact(approx: Run, exact: Run, k: int) -> float:
    """Mean over exact search's queries of the share of its top k that the approximate top k holds."""
    ex = exact.top(k)[["query_id", "doc_id"]]
    if ex.empty:
        return 0.0
    both = (
        ex.merge(approx.top(k)[["query_id", "doc_id"]], on=["query_id", "doc_id"]).groupby("query_id").size()
    )
    n = ex.groupby("query_id").size()
    return float((both.reindex(n.index, fill_value=0) / n).mean())


def _point(
    s: AnnSetting, run: Run, ms: np.ndarray, built: tuple[float, float], qrels: Qrels, exact: Run, k: int
) -> AnnPoint:
    from diagnose.metrics import evaluate

    names = [f"{family}@{k}" for family in QUALITY_FAMILIES]
    agg = evaluate(qrels, run, names).aggregate
    p50, p95 = (float(np.percentile(ms, q)) if len(ms) else 0.0 for q in (50, 95))
    return AnnPoint(
        s.index, dict(s.params), _recall_vs_exact(run, exact, k), {n: float(agg[n]) for n in names},
        p50, p95, built[0], built[1], run=run,
    )  # fmt: skip


def _with_pareto(points: Sequence[AnnPoint], k: int) -> tuple[AnnPoint, ...]:
    """``points`` with ``pareto`` set: no other point is both faster at p50 and better on ndcg@k."""
    nd = f"ndcg@{k}"
    return tuple(
        _replace(p, pareto=not any(
            o.latency_p50_ms < p.latency_p50_ms and o.metrics[nd] > p.metrics[nd] for o in points
        ))
        for p in points
    )  # fmt: skip


def _replace(p: AnnPoint, **kw: Any) -> AnnPoint:
    from dataclasses import replace

    return replace(p, **kw)


def ann_frontier(
    qrels: Qrels,
    space: VectorSpace,
    *,
    k: int = defaults.K,
    exact_run: Run | None = None,
    settings: Sequence[AnnSetting] | None = None,
    run: Run | None = None,
    diagnosis: Any = None,
    current: AnnSetting | None = None,
    n_resamples: int = defaults.RESAMPLES,
    seed: int = defaults.SEED,
    progress: Progress = None,
    ignore_identical_ids: bool = False,
) -> AnnFrontier:
    """Measure every setting of ``settings`` (default :func:`default_settings`) over ``space`` (module docstring).

    ``exact_run``: exact search's run of the same vectors (the dense baseline; default: computed here at depth
    ``k``). ``run`` and ``diagnosis`` (:func:`diagnose.failures.diagnose_run` of it): the run whose ``index_gap``
    failures a setting should recover; without them ``recovers_index_gap`` says none was given. ``current``: the
    setting the vectors are served with (a Chroma collection's HNSW parameters), measured too (added to the
    settings when not among them) and reported as ``current``. Needs faiss
    (``pip install 'diagnose-rag[ann]'``). ``progress``: a bar over the settings (:mod:`diagnose.runtime.progress`).
    ``ignore_identical_ids``: each index is searched one deeper and the document whose id is the query's dropped
    (:func:`~diagnose.metrics.identical.drop_identical_ids`), as ``exact_run`` should be.
    """
    from diagnose.search.baselines import dense_run, topk_run

    docs, queries = space.doc_vecs, space.query_vecs
    if len(docs) == 0 or len(queries) == 0:
        raise DataError("The ANN frontier needs document and query vectors; none were given.", param="corpus")
    k = positive_int(k, "k")
    settings = _grid(settings, current, len(docs))
    if exact_run is None:
        exact_run = dense_run(docs, queries, space.doc_ids, space.query_ids, depth=k)
    kk = min(k + 1 if ignore_identical_ids else k, len(docs))
    points: list[AnnPoint] = []
    with _one_thread() as faiss:
        index, *built = _build(faiss, ("exact",), docs)
        _, _, ms = _search(index, queries, kk)
        exact = _point(AnnSetting("exact", {}), exact_run, ms, tuple(built), qrels, exact_run, k)
        builds: dict[tuple[Any, ...], tuple[Any, float, float]] = {}
        bar = reporter(progress).bar(f"Building and searching {len(settings)} approximate indexes")
        for n, s in enumerate(settings):
            bar(n, len(settings))
            if s.build_key not in builds:
                builds = {s.build_key: _build(faiss, s.build_key, docs)}  # one index held at a time
            index, *built = builds[s.build_key]
            if s.index == "hnsw":
                index.hnsw.efSearch = s.params["efSearch"]
            else:
                index.nprobe = s.params["nprobe"]
            idx, sc, ms = _search(index, queries, kk)
            r = topk_run(s.label(), idx, sc, space.doc_ids, space.query_ids, source=f"faiss {s.label()}")
            if ignore_identical_ids:
                r = drop_identical_ids(r, depth=k)
            points.append(_point(s, r, ms, tuple(built), qrels, exact_run, k))
        bar(len(settings), len(settings))
    exact, *points = _with_pareto([exact, *points], k)
    recovery = _index_gap(qrels, run, diagnosis, settings, points, k, n_resamples, seed)
    now = points[settings.index(current)] if current is not None else None
    return AnnFrontier(k, exact, tuple(points), recovery, now)


def _grid(settings: Sequence[AnnSetting] | None, current: AnnSetting | None, n_docs: int) -> list[AnnSetting]:
    """The settings to measure (default :func:`default_settings`), ``current`` added when not among them, checked."""
    out = default_settings(n_docs) if settings is None else check_settings(settings, n_docs)
    if current is not None:
        try:
            current = _check_setting(current, n_docs)
        except DataError as e:  # read from the collection, not given by the user: say so
            raise DataError(
                f"The collection's own HNSW setting {dict(current.params)} cannot be measured with faiss: {e} "
                "Measure the frontier without it (settings of your own), or re-create the collection with it.",
                param="corpus",
            ) from None
        if current not in out:
            out.append(current)
    return out


def _index_gap(
    qrels: Qrels, run: Run | None, diagnosis: Any, settings: Sequence[AnnSetting], points: Sequence[AnnPoint],
    k: int, n_resamples: int, seed: int,
) -> IndexGapRecovery:  # fmt: skip
    """The cheapest setting recovering ``run``'s index_gap failures (all, else the most), with the paired test."""
    from diagnose.metrics import evaluate
    from diagnose.whatif.gain import class_units, measure_gain, right_units, unit_ids

    hit = f"hit_rate@{k}"
    if run is None or diagnosis is None:
        return IndexGapRecovery(None, hit, note="no run given: pass one to find the setting that recovers its "
                                "index_gap failures")  # fmt: skip
    units = class_units(diagnosis).get("index_gap", ())
    if not units or not points:
        note = "the run has no index_gap failures" if not units else "no ANN setting was measured"
        return IndexGapRecovery(run.name, hit, note=note)
    base = evaluate(qrels, run, [hit]).per_query
    by_query = diagnosis.mode == "hit"
    right = right_units(k, diagnosis.mode, run=run, per_query=base)
    best: tuple[tuple[Any, ...], int, tuple[str, ...], Any] | None = None
    for i, p in enumerate(points):
        pq = evaluate(qrels, p.run, [hit]).per_query if by_query else None
        rec = unit_ids(measure_gain(
            k, diagnosis.mode, qrels=qrels, candidate=p.run, base_per_query=base, candidate_per_query=pq,
            failures=units, base_right=right,
        ).recovered)  # fmt: skip
        rank = (-len(rec), p.latency_p50_ms)
        if best is None or rank < best[0]:
            best = (rank, i, rec, pq)
    assert best is not None
    _, i, rec, pq = best
    p = points[i]
    if pq is None:
        pq = evaluate(qrels, p.run, [hit]).per_query
    whole = measure_gain(
        k, "hit", base_per_query=base, candidate_per_query=pq, metric=hit, n_resamples=n_resamples, seed=seed
    )
    return IndexGapRecovery(
        run.name, hit, unit_ids(units), settings[i], rec,
        recovers="all" if len(rec) == len(units) else ("most" if rec else "none"),
        latency_p50_ms=p.latency_p50_ms, mean_diff=whole.mean_diff, p_value=whole.p_value,
        lost_hits=len(whole.broken),
    )  # fmt: skip
