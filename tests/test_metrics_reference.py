"""Our metrics against the references: pytrec_eval (trec_eval 9), ranx, and trec_eval's own expected outputs.

What is compared, and why not more:

- **pytrec_eval** (per query, to 1e-9): ``P_k recall_k ndcg_cut_k map_cut_k map recip_rank success_k Rprec`` on
  random graded qrels (grades -1..3: unjudged-in-pool, non-relevant, relevant) and runs *with score ties*,
  relevant documents left unretrieved, golden queries missing from the run and run queries without judgements.
  pytrec_eval is given the run as a dict and orders it itself (score desc, doc id desc); we build our Run with the
  same order. Its aggregate is a mean over the queries present in both inputs (no ``-c``), so only per-query
  values are compared; a golden query missing from the run must score 0 on our side.
- **ranx** (per query, to 1e-9) on runs *without ties*: every metric we have (``precision recall hit_rate mrr
  mrr@k ndcg map map@k r-precision f1``) follows the same conventions in ranx 0.3.21 (linear-gain nDCG with
  the ideal DCG over all judged grades, ``map@k`` divided by R, ``precision@k`` divided by k, ``mrr@k`` cut at
  k). Ties differ: ranx orders them by an unstable ``argsort`` of the negated scores, not by doc id, so tied
  runs score differently (see ``test_ranx_breaks_ties_differently``). ranx also averages over every qrels
  query, including those without a relevant document (as zeros), so again only per-query values are compared.
- **trec_eval's test fixtures** (``../shared/data/trec_eval_tests``, skipped when absent): every measure we share
  with the expected outputs, formatted with ``%.4f`` like trec_eval and compared as strings, per query and
  ``all``. See ``quicktest_commands.txt`` there for the command that produced each file.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from metrics_testing import every_name

from diagnose.data import Qrels, Run
from diagnose.metrics import REGISTRY, evaluate

pytrec_eval = pytest.importorskip("pytrec_eval")

KS = [1, 2, 3, 5, 10, 20]
# trec_eval measure -> our family, from the registry's forms ("P_k" is P at every cutoff k): a family added with
# a trec_eval measure is compared below without editing this file
FORMS = [(f.trec_eval, m.name) for m in REGISTRY.values() for f in m.forms if f.trec_eval]
CUT_MEASURES = sorted({t.removesuffix("_k") for t, _ in FORMS if t.endswith("_k")})  # P, map_cut, ...
TREC_TO_OURS = {t.removesuffix("_k"): family for t, family in FORMS}
PYTREC_MEASURES = {f"{m}.{','.join(map(str, KS))}" for m in CUT_MEASURES}
PYTREC_MEASURES |= set(TREC_TO_OURS) - set(CUT_MEASURES)  # map, recip_rank, Rprec


def ours_name(trec_measure: str) -> str | None:
    """``P_10 -> precision@10``, ``recip_rank -> mrr``; None for a trec_eval measure we do not have."""
    m = re.fullmatch(r"(\w+)_(\d+)", trec_measure)
    if m and m.group(1) in CUT_MEASURES:
        return f"{TREC_TO_OURS[m.group(1)]}@{m.group(2)}"
    return None if trec_measure in CUT_MEASURES else TREC_TO_OURS.get(trec_measure)


OUR_METRICS = [ours_name(f"{m}_{k}") for m in CUT_MEASURES for k in KS]
OUR_METRICS += [TREC_TO_OURS[m] for m in sorted(set(TREC_TO_OURS) - set(CUT_MEASURES))]


def qrels_from_dict(qrels: dict[str, dict[str, int]]) -> Qrels:
    rows = [(q, d, g) for q, docs in qrels.items() for d, g in docs.items()]
    df = pd.DataFrame(rows, columns=["query_id", "doc_id", "relevance"])
    return Qrels(df.astype({"relevance": np.int64}))


def run_from_dict(run: dict[str, dict[str, float]], name: str = "run") -> Run:
    """Our Run from a pytrec_eval-style dict, ordered like trec_eval: score desc, ties by doc id desc."""
    qs = [q for q, docs in run.items() for _ in docs]
    ds = [d for docs in run.values() for d in docs]
    scores = np.array([s for docs in run.values() for s in docs.values()], dtype=np.float64)
    try:
        from diagnose.io import trec_order
    except ImportError:  # the reader's helper is not there: sort here (Python str order = strcmp on UTF-8)
        first = {q: i for i, q in enumerate(dict.fromkeys(qs))}
        order = sorted(range(len(ds)), key=lambda i: ds[i], reverse=True)
        order.sort(key=lambda i: (first[qs[i]], -scores[i]))
    else:
        order = list(trec_order(qs, ds, scores))
    lists: dict[str, list[tuple[str, float]]] = {}
    for i in order:
        lists.setdefault(qs[i], []).append((ds[i], float(scores[i])))
    return Run.from_ranked_lists(name, lists)


# Doc ids whose order as strings differs from their order as numbers, plus non-ASCII (UTF-8 bytes vs code points).
DOCS = ["d1", "d2", "d10", "d11", "D3", "dé", "dz", "a-7", "b", "d20"]
# Scores exact in float32, so no two of them tie only after trec_eval's float rounding (see test below).
TIED_SCORES = st.sampled_from([-1.0, 0.0, 0.5, 1.0, 1.5, 2.0, 3.25])


@st.composite
def collections(draw, ties: bool = True):
    """``(qrels, run)`` dicts: 1-5 golden queries, some missing from the run, plus an unjudged run query."""
    n_q = draw(st.integers(1, 5))
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for qi in range(n_q):
        q = f"q{qi}"
        judged = draw(st.lists(st.sampled_from(DOCS), min_size=1, max_size=len(DOCS), unique=True))
        grades = draw(st.lists(st.integers(-1, 3), min_size=len(judged), max_size=len(judged)))
        if max(grades) < 0:
            # trec_eval sizes a per-query array by the largest grade: a query judged only -1 is undefined there
            grades[0] = 0
        qrels[q] = dict(zip(judged, grades, strict=True))
        if draw(st.integers(0, 4)) > 0:  # ~1 query in 5 missing from the run
            docs = draw(st.lists(st.sampled_from(DOCS), min_size=1, max_size=len(DOCS), unique=True))
            if ties:
                run[q] = {d: draw(TIED_SCORES) for d in docs}
            else:
                scores = draw(st.permutations(range(len(docs))))
                run[q] = {d: float(s) + 0.5 for d, s in zip(docs, scores, strict=True)}
    if draw(st.booleans()):
        run["unjudged"] = {"d1": 1.0}
    if not any(g > 0 for docs in qrels.values() for g in docs.values()):
        qrels["q0"][next(iter(qrels["q0"]))] = 1
    return qrels, run


REFERENCE = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@REFERENCE
@given(collections(ties=True))
def test_matches_pytrec_eval_per_query(data):
    qrels, run = data
    ours = evaluate(qrels_from_dict(qrels), run_from_dict(run), OUR_METRICS)
    ref = pytrec_eval.RelevanceEvaluator(qrels, PYTREC_MEASURES).evaluate(run)
    golden = [q for q, docs in qrels.items() if any(g > 0 for g in docs.values())]
    assert list(ours.per_query.index) == golden
    assert set(ours.no_relevant_queries) == set(qrels) - set(golden)
    assert ours.missing_queries == [q for q in golden if q not in run]
    assert ours.unjudged_queries == [q for q in run if q not in qrels]
    for q in golden:
        row = ours.per_query.loc[q]
        if q not in run:
            assert (row == 0).all(), q  # trec_eval -c: a golden query without results scores 0
            continue
        for measure, value in ref[q].items():
            assert row[ours_name(measure)] == pytest.approx(value, abs=1e-9), (q, measure)


@pytest.fixture(scope="module")
def numba_typed_containers_cached():
    """ranx keeps qrels and runs in numba typed dicts and lists, whose helpers (``typeddict._contains``, the string
    hashing, ``typedlist._make_list``...) numba compiles in every new process: ~6 s before the first ranx call on 2
    cores. Their on-disk cache is switched on, as diagnose does for umap's functions (``enable_numba_cache``): from
    the second run on a machine they are loaded, not compiled. ranx and its results are unchanged."""
    from numba.core.registry import CPUDispatcher
    from numba.typed import typeddict, typedlist

    for module in (typeddict, typedlist):
        for obj in vars(module).values():
            if isinstance(obj, CPUDispatcher):
                obj.enable_caching()


@REFERENCE
@given(collections(ties=False))
def test_matches_ranx_per_query_without_ties(numba_typed_containers_cached, data):
    ranx = pytest.importorskip("ranx")
    qrels, run = data
    names = every_name(KS, coverage=False)
    judged_run = {q: docs for q, docs in run.items() if q in qrels}
    assume(judged_run)  # ranx cannot build an empty Run
    ours = evaluate(qrels_from_dict(qrels), run_from_dict(run), names)
    ranx_run = ranx.Run(judged_run)
    ranx_names = [n.replace("r_precision", "r-precision") for n in names]
    ranx.evaluate(ranx.Qrels(qrels), ranx_run, ranx_names, make_comparable=True, save_results_in_run=True)
    for q in ours.per_query.index:
        for name, ranx_name in zip(names, ranx_names, strict=True):
            assert ours.per_query.loc[q, name] == pytest.approx(ranx_run.scores[ranx_name][q], abs=1e-9), (
                q,
                name,
            )


def test_every_registered_metric_has_a_reference():
    # pytrec_eval above covers every family with a trec_eval measure, ranx every quality family (f1 and mrr@k have
    # no trec_eval measure); the coverage families are compared in tests/test_metrics_holes.py, judged@k with
    # ir_measures and hole@k with BEIR's definition (neither exists in trec_eval or ranx)
    # (a new quality family reaches the ranx check by itself: ranx refuses a name it does not know)
    assert {n.split("@")[0] for n in OUR_METRICS} == {m.name for m in REGISTRY.values() if m.trec_eval != "-"}
    coverage = {m.name for m in REGISTRY.values() if m.coverage}
    assert coverage == {
        "judged",
        "hole",
    }  # a new coverage family needs its own reference in test_metrics_holes.py


def test_ranx_breaks_ties_differently():
    # five docs with the same score, the relevant one is "a": trec_eval (and we) order ties by doc id descending,
    # so "a" is 5th (mrr 0.2); ranx keeps it first here (mrr 1.0). Hence the ranx check uses tie-free runs.
    ranx = pytest.importorskip("ranx")
    qrels, run = {"q": {"a": 1}}, {"q": {d: 1.0 for d in "abcde"}}
    ours = evaluate(qrels_from_dict(qrels), run_from_dict(run), ["mrr"]).aggregate["mrr"]
    assert (
        ours == pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(run)["q"]["recip_rank"] == 0.2
    )
    assert ranx.evaluate(ranx.Qrels(qrels), ranx.Run(run), "mrr") != ours


def test_pytrec_eval_compares_scores_as_float32():
    """The trec_eval inside pytrec-eval-terrier stores scores as C ``float`` (usnistgov/trec_eval#34, fixed to
    ``double`` upstream later): 1.0 and 1.0 + 1e-12 tie there and the doc id decides. diagnose.io orders the same
    way; the random runs above only use float32-exact scores, so either choice agrees with it."""
    qrels = {"q": {"a": 1, "b": 0}}
    ev = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"})
    assert ev.evaluate({"q": {"a": 1.0 + 1e-12, "b": 1.0}})["q"]["recip_rank"] == 0.5  # tie: "b" > "a" first
    assert ev.evaluate({"q": {"a": 1.0 + 1e-6, "b": 1.0}})["q"]["recip_rank"] == 1.0
    ours = evaluate(qrels_from_dict(qrels), run_from_dict({"q": {"a": 1.0 + 1e-12, "b": 1.0}}), ["mrr"])
    assert ours.aggregate["mrr"] == 0.5


# --------------------------------------------------------------------------------------------- trec_eval fixtures

TREC_DIR = Path(__file__).resolve().parents[2] / "shared" / "data" / "trec_eval_tests"
needs_fixtures = pytest.mark.skipif(not TREC_DIR.is_dir(), reason="../shared/data/trec_eval_tests is absent")


def read_expected(name: str) -> dict[tuple[str, str], str]:
    """``out.test*`` lines ``measure <TAB> query|all <TAB> value`` -> {(measure, query): value as printed}."""
    out = {}
    for line in (TREC_DIR / name).read_text().splitlines():
        measure, query, value = (part.strip() for part in line.split("\t"))
        out[(measure, query)] = value
    return out


def read_trec(qrels_name: str, run_name: str) -> tuple[Qrels, Run]:
    try:
        from diagnose.io import read_qrels, read_run
    except ImportError:
        return _read_trec_locally(qrels_name, run_name)
    return read_qrels(TREC_DIR / qrels_name), read_run(TREC_DIR / run_name)


def _read_trec_locally(qrels_name: str, run_name: str) -> tuple[Qrels, Run]:
    q = pd.read_csv(TREC_DIR / qrels_name, sep=r"\s+", header=None, dtype=str, usecols=[0, 2, 3])
    qrels = Qrels(pd.DataFrame({"query_id": q[0], "doc_id": q[2], "relevance": q[3].astype(np.int64)}))
    r = pd.read_csv(TREC_DIR / run_name, sep=r"\s+", header=None, dtype=str, usecols=[0, 2, 4])
    run: dict[str, dict[str, float]] = {}
    for qid, doc, score in zip(r[0], r[2], r[4].astype(float), strict=True):
        run.setdefault(qid, {})[doc] = score
    return qrels, run_from_dict(run)


def compare_with_trec_eval(
    out_file: str, qrels_name: str, run_name: str, relevance_level: int = 1, min_checked: int = 1
) -> None:
    expected = read_expected(out_file)
    pairs = {(ours_name(m), m) for m, _ in expected if ours_name(m)}
    qrels, run = read_trec(qrels_name, run_name)
    ev = evaluate(qrels, run, sorted(n for n, _ in pairs), relevance_level=relevance_level)
    if ("num_q", "all") in expected:
        assert str(ev.n_queries) == expected[("num_q", "all")]
    assert {q for (m, q) in expected if ours_name(m) and q != "all"} <= set(ev.per_query.index)
    checked = 0
    for ours, measure in sorted(pairs):
        for query in [*ev.per_query.index, "all"]:
            if (measure, query) not in expected:
                continue
            value = ev.aggregate[ours] if query == "all" else ev.per_query.loc[query, ours]
            assert f"{value:.4f}" == expected[(measure, query)], (out_file, measure, query, value)
            checked += 1
    assert checked == sum(1 for m, _ in expected if ours_name(m)) >= min_checked


@needs_fixtures
def test_trec_eval_default_measures():
    # trec_eval test/qrels.test test/results.test: map, Rprec, recip_rank, P_5..P_1000 over the 3 topics
    compare_with_trec_eval("out.test", "qrels.test", "results.test", min_checked=12)


@needs_fixtures
def test_trec_eval_all_measures_per_query():
    # trec_eval -m all_trec -q: adds recall_k, ndcg_cut_k, map_cut_k, success_k, per query and all
    compare_with_trec_eval("out.test.aq", "qrels.test", "results.test", min_checked=4 * 42)


@needs_fixtures
def test_trec_eval_complete_with_missing_query():
    # trec_eval -m all_trec -q -c on results.trunc, where topic 302 has no results: it scores 0 and counts
    qrels, run = read_trec("qrels.test", "results.trunc")
    assert evaluate(qrels, run, ["map"]).missing_queries == ["302"]
    compare_with_trec_eval("out.test.aqc", "qrels.test", "results.trunc", min_checked=4 * 42)


@needs_fixtures
def test_trec_eval_relevance_level_two_with_negative_grades():
    # trec_eval -m all_trec -q -l2 on qrels.rel_level (grades -1..4): relevant = grade >= 2, nDCG gains all > 0
    compare_with_trec_eval(
        "out.test.aql", "qrels.rel_level", "results.test", relevance_level=2, min_checked=4 * 42
    )


@needs_fixtures
def test_trec_eval_measure_parameters():
    # -m P.5,7,3 -m recall.20,2000 -mndcg_cut.10,20,23.4 -msuccess.2,5,20 (23.4 is read as cutoff 23)
    compare_with_trec_eval("out.test.meas_params", "qrels.test", "results.test", min_checked=40)


@needs_fixtures
def test_published_reference_numbers():
    # ../shared/data/README.md: map 0.1785, P_10 0.3000, recip_rank 0.4064 for results.test vs qrels.test
    qrels, run = read_trec("qrels.test", "results.test")
    agg = evaluate(qrels, run, ["map", "precision@10", "mrr"]).aggregate
    assert [round(agg[m], 4) for m in ["map", "precision@10", "mrr"]] == [0.1785, 0.3, 0.4064]
