"""trec_eval's run order: ties broken by doc id (byte order, descending), scores compared as float32, checked by
property and against pytrec_eval and trec_eval's own outputs.
"""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from io_testing import write

from diagnose.data import ValidationReport
from diagnose.io import read_qrels, read_run, trec_order

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
TREC_TESTS = SHARED / "trec_eval_tests"


def test_trec_ties_by_doc_id_descending(tmp_path, both_paths):
    # scores 0.5, 0.5, 0.7 for d1, d2, d3 -> d3 (0.7) first; the 0.5 tie goes to the larger id: d2, then d1
    f = write(tmp_path / "r.trec", "q Q0 d1 1 0.5 t\nq Q0 d2 2 0.5 t\nq Q0 d3 3 0.7 t\n")
    report = ValidationReport()
    run = read_run(f, report=report)
    assert run.ranked_lists() == {"q": ["d3", "d2", "d1"]}
    assert run.df["rank"].tolist() == [1, 2, 3]
    # the file's rank column said d1, d2, d3: ignored for ordering, counted once per query as info
    (p,) = report.by_code("rank_column_ignored")
    assert (p.severity, p.count) == ("info", 1)
    assert p.examples[0] == "q/d3: rank 3 in the file, 1 by score"


def test_trec_tie_break_is_byte_order_not_numeric(tmp_path, both_paths):
    # strcmp order: "10" < "9" < "a" < "é"; descending: é, a, 9, 10
    f = write(tmp_path / "r.trec", "q Q0 9 1 1 t\nq Q0 10 1 1 t\nq Q0 é 1 1 t\nq Q0 a 1 1 t\n")
    assert read_run(f).ranked_lists() == {"q": ["é", "a", "9", "10"]}


def test_trec_scores_compare_as_float32_like_trec_eval(tmp_path, both_paths):
    # 1.0 and 1.0 + 1e-9 are the same C float (trec_eval's TEXT_RESULTS.sim): a tie, so "b" > "a" goes first;
    # 1.0 + 1e-6 is a different float32 and wins on score.
    f = write(
        tmp_path / "r.trec", "q Q0 a 1 1.000000001 t\nq Q0 b 2 1.0 t\nq2 Q0 a 1 1.000001 t\nq2 Q0 b 2 1.0 t\n"
    )
    run = read_run(f)
    assert run.ranked_lists() == {"q": ["b", "a"], "q2": ["a", "b"]}
    assert run.df["score"].iloc[1] == 1.000000001  # the score column keeps the float64 value


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["q1", "q2", "q10"]),
            st.text(alphabet="ab9Zé-", min_size=1, max_size=3),
            st.sampled_from([0.0, -0.0, 0.5, 1.0, 1.0 + 1e-9, -3.0, 1e39, 2.5e-46]),
        ),
        max_size=30,
    )
)
def test_trec_order_property(rows):
    """trec_order == Python's sort on (query first-seen, -float32(score), doc id descending)."""
    q = [r[0] for r in rows]
    d = [r[1] for r in rows]
    s = np.array([r[2] for r in rows], dtype=np.float64)
    perm = trec_order(q, d, s) if rows else np.array([], dtype=np.int64)
    first_seen = {x: i for i, x in reversed(list(enumerate(q)))}
    with np.errstate(over="ignore"):
        s32 = s.astype(np.float32)
    expected = sorted(range(len(rows)), key=lambda i: (first_seen[q[i]], -float(s32[i]), _desc(d[i])))
    got = [(q[i], float(s32[i]), d[i]) for i in perm]
    assert got == [(q[i], float(s32[i]), d[i]) for i in expected]


def _desc(text: str) -> tuple:
    # a key that sorts strings descending: negated code points, and a longer string before its prefix
    return (*(-ord(c) for c in text), 1)


def _ranks_from_pytrec_eval(run: dict[str, dict[str, float]]) -> dict[tuple[str, str], int]:
    """Where pytrec_eval (trec_eval) ranks each doc: one synthetic query per (q, d) with only d relevant;
    recip_rank = 1 / rank."""
    pytrec_eval = pytest.importorskip("pytrec_eval")
    qrels, runs = {}, {}
    for q, docs in run.items():
        for d in docs:
            qrels[f"{q}|{d}"] = {d: 1}
            runs[f"{q}|{d}"] = docs
    res = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(runs)
    return {tuple(k.split("|")): round(1 / v["recip_rank"]) for k, v in res.items()}


def test_order_matches_pytrec_eval_on_tie_heavy_runs(tmp_path, both_paths):
    rng = random.Random(7)
    # exact ties, float32 ties (0.2 + 1e-9; 20.123401 / 20.123402), a float32 gap (0.2 + 1e-7), -0.0 == 0.0
    values = [0.1, 0.2, 0.2 + 1e-9, 0.2 + 1e-7, 0.5, -0.0, 0.0, 3.0, 20.123401, 20.123402]
    lines, run = [], {}
    for q in ("1", "2", "10"):
        for i, d in enumerate(rng.sample([f"D{j}" for j in range(40)] + ["d", "D", "ä", "10", "9"], 25)):
            s = rng.choice(values)
            lines.append(f"{q} Q0 {d} {i + 1} {s!r} t\n")
            run.setdefault(q, {})[d] = s
    ours = read_run(write(tmp_path / "r.trec", "".join(lines)))
    want = _ranks_from_pytrec_eval(run)
    got = {(q, d): r for q, d, r in ours.df[["query_id", "doc_id", "rank"]].itertuples(index=False)}
    assert got == want


def _trec_out(path: Path) -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    for line in path.read_text().splitlines():
        measure, qid, value = line.split()
        out.setdefault(qid, {})[measure] = value
    return out


@pytest.mark.skipif(not TREC_TESTS.is_dir(), reason="../shared/data/trec_eval_tests not available")
@pytest.mark.parametrize(
    ("results", "expected"), [("results.test", "out.test.aq"), ("results.trunc", "out.test.aqc")]
)
def test_order_matches_trec_eval_outputs(results, expected):
    """P@k and reciprocal rank per query from our order equal trec_eval's own printed values (4 decimals)."""
    run = read_run(TREC_TESTS / results)
    qrels = read_qrels(TREC_TESTS / "qrels.test")
    relevant = set(map(tuple, qrels.relevant()[["query_id", "doc_id"]].to_numpy().tolist()))
    ref = _trec_out(TREC_TESTS / expected)
    for q, docs in run.ranked_lists().items():
        hits = [(q, d) in relevant for d in docs]
        assert f"{next((1 / (i + 1) for i, h in enumerate(hits) if h), 0.0):.4f}" == ref[q]["recip_rank"]
        for k in (5, 10, 15, 20, 30, 100, 200, 500, 1000):
            assert f"{sum(hits[:k]) / k:.4f}" == ref[q][f"P_{k}"], (q, k)


@pytest.mark.parametrize(
    "case", ["csv chunks", "unused value", "dictionary out of order", "empty chunks", "plain"]
)
def test_first_seen_codes_of_a_dictionary_array_are_those_of_its_strings(case):
    """A dictionary array gives its own indices only when they already number the values in order of first
    appearance (a TREC run's query ids from the CSV reader); any other dictionary is encoded again: the codes and
    values are always those of the decoded strings."""
    import pyarrow.csv as pacsv

    from diagnose.runtime.frames import _dictionary_codes, first_seen_codes

    strings = [f"q{(i * 7919) % 1500}" for i in range(20_000)]
    dict_type = pa.dictionary(pa.int32(), pa.string())
    if case == "csv chunks":  # many blocks, each with its own dictionary
        data = "".join(f"{s} x\n" for s in strings).encode()
        arr = pacsv.read_csv(
            pa.BufferReader(data),
            read_options=pacsv.ReadOptions(column_names=["q", "x"], block_size=4096),
            parse_options=pacsv.ParseOptions(delimiter=" "),
            convert_options=pacsv.ConvertOptions(column_types={"q": dict_type}),
        ).column("q")
        assert arr.num_chunks > 10
    elif case == "unused value":
        arr = pa.DictionaryArray.from_arrays(pa.array([0, 0, 2], pa.int32()), pa.array(["a", "b", "c"]))
        strings = ["a", "a", "c"]
    elif case == "dictionary out of order":
        arr = pa.DictionaryArray.from_arrays(pa.array([1, 0, 1], pa.int32()), pa.array(["a", "b"]))
        strings = ["b", "a", "b"]
    elif case == "empty chunks":
        part = pa.DictionaryArray.from_arrays(pa.array([0, 1, 0], pa.int32()), pa.array(["a", "b"]))
        arr = pa.chunked_array([part.slice(0, 0), part, part.slice(0, 0)], type=dict_type)
        strings = ["a", "b", "a"]
    else:
        arr = pa.array(strings)
    codes, values = first_seen_codes(arr)
    want_codes, want_values = first_seen_codes(pa.array(strings, pa.string()))
    assert codes.dtype == np.int64
    assert codes.tolist() == want_codes.tolist()
    assert values.to_pylist() == want_values.to_pylist()
    if case in ("csv chunks", "empty chunks"):  # taken as they are, not encoded again
        assert _dictionary_codes(arr) is not None
