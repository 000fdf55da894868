"""Metadata filters (issue 20 part 3, diagnose.io.filters): the two forms, the filtered_out class, recall@k with and
without the filter, its remedy, and the errors a user can cause.

The tiny data set (k=1, the fake keyword encoder at 1024 dimensions: a cosine is shared words / sqrt(len * len)):

====  =======  ===========================  ====  =======  ==========================  ========
doc   tenant   text                         q     tenant   text                        relevant
====  =======  ===========================  ====  =======  ==========================  ========
a1    acme     keystone account locked      q1    acme     reset password keystone     g1
a2    acme     expense report travel ...    q2    acme     expense report receipts     a2
g1    globex   reset password keystone      q3    globex   holiday calendar            g2
g2    globex   holiday calendar             q4    (none)   password policy             n1
n1    (none)   password policy length
====  =======  ===========================  ====  =======  ==========================  ========

g1 is tagged with the wrong tenant for q1: the production run (filtered by tenant) never returns it.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from diagnose.analysis import Analysis
from diagnose.data import DataError, Run
from diagnose.embed import KeywordEncoder
from diagnose.failures import PairEvidence, classify
from diagnose.io import load_dataset
from diagnose.io.filters import build_filters, field_filter, value_key
from diagnose.whatif.filter_recall import apply_filter

DOCS = [
    ("a1", "acme", "keystone account locked"),
    ("a2", "acme", "expense report travel receipts"),
    ("g1", "globex", "reset password keystone"),
    ("g2", "globex", "holiday calendar"),
    ("n1", None, "password policy length"),
]
QUERIES = [
    ("q1", "acme", "reset password keystone"),
    ("q2", "acme", "expense report receipts"),
    ("q3", "globex", "holiday calendar"),
    ("q4", None, "password policy"),
]
QRELS = [("q1", "g1"), ("q2", "a2"), ("q3", "g2"), ("q4", "n1")]
# the production run, filtered by tenant: q1 only sees acme's documents
RUN = {"q1": ["a1", "a2"], "q2": ["a2", "a1"], "q3": ["g2"], "q4": ["n1", "g1"]}


def _meta(tenant):
    return {"metadata": {"tenant": tenant}} if tenant else {}


def write_data(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "corpus.jsonl", "w", encoding="utf-8") as f:
        for d, t, x in DOCS:
            f.write(json.dumps({"_id": d, "title": "", "text": x, **_meta(t)}) + "\n")
    with open(folder / "queries.jsonl", "w", encoding="utf-8") as f:
        for q, t, x in QUERIES:
            f.write(json.dumps({"_id": q, "text": x, **_meta(t)}) + "\n")
    (folder / "qrels").mkdir(exist_ok=True)
    (folder / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t1\n" for q, d in QRELS), encoding="utf-8"
    )
    (folder / "run.trec").write_text(
        "".join(
            f"{q} Q0 {d} {r} {1 - r / 10:.1f} prod\n" for q, ds in RUN.items() for r, d in enumerate(ds, 1)
        ),
        encoding="utf-8",
    )
    return folder


@pytest.fixture
def data(tmp_path):
    return write_data(tmp_path / "tiny")


def _analysis(folder: Path, tmp_path: Path, **kwargs) -> Analysis:
    ds = load_dataset(data_dir=folder)
    kwargs.setdefault("encoder", KeywordEncoder(dim=1024))
    return Analysis(ds, {"prod": folder / "run.trec"}, k=1, cache_dir=tmp_path / "cache", **kwargs)


# ------------------------------------------------------------------------------------------ the rule


def test_filtered_out_comes_right_after_missing_document():
    common = dict(
        duplicate_doc_id="d",
        run_rank=2,
        dense_rank=1,
        bm25_rank=1,
        cosine=0.9,
        overlap=1.0,
        k=1,
        calibrated=0.5,
    )
    # a duplicate near miss that exact search finds would be label_gap: the filter is asked first
    assert classify(PairEvidence(in_corpus=True, filtered_out=True, **common)) == "filtered_out"
    assert classify(PairEvidence(in_corpus=True, filtered_out=False, **common)) == "label_gap"
    assert classify(PairEvidence(in_corpus=False, filtered_out=True, **common)) == "missing_document"


def test_the_field_match_makes_filtered_out_with_its_evidence(data, tmp_path):
    a = _analysis(data, tmp_path, filter_field="tenant")
    assert a.filters.source == "query.tenant = doc.tenant"
    assert a.filters.no_filter == ("q4",)  # q4 has no tenant: searched unfiltered, counted
    d = a.diagnosis("prod")
    # at k=1 only q1 misses (g1 is not in its list); its filter (tenant = acme) excludes g1 (globex)
    assert [(f.query_id, f.doc_id, f.cls) for f in d.failures] == [("q1", "g1", "filtered_out")]
    assert d.class_counts["filtered_out"] == 1
    assert "tenant = 'acme' (the document has 'globex')" in d.failures[0].evidence


def test_without_a_filter_the_same_miss_is_not_filtered_out(data, tmp_path):
    d = _analysis(data, tmp_path).diagnosis("prod")
    # exact search ranks g1 first for q1 (cosine 3/sqrt(3*3) = 1), the run did not have it: an index gap
    assert [(f.query_id, f.cls) for f in d.failures] == [("q1", "index_gap")]


def test_recall_with_and_without_the_filter(data, tmp_path):
    fr = _analysis(data, tmp_path, filter_field="tenant").filter_recall("prod")
    pq = fr.per_query.set_index("query_id")
    # q1: the run and the run filtered miss g1 (0); exact dense search finds g1 first (cosine 1, 1);
    # under tenant = acme it sees a1 (1 shared word of 3: 1/3) and a2 (0): g1 is out (0)
    assert pq.loc["q1", ["run", "run_filtered", "dense", "dense_filtered"]].tolist() == [0.0, 0.0, 1.0, 0.0]
    assert pq.loc["q1", "n_filtered_out"] == 1 and pq.loc["q1", "filter"] == "tenant = 'acme'"
    # q2, q3, q4 find their document first in every run (q4 has no filter: its list is left as it is)
    assert (pq.loc[["q2", "q3", "q4"], ["run", "run_filtered", "dense", "dense_filtered"]] == 1.0).all().all()
    assert pq.loc["q4", "filter"] == ""
    # overall over the 4 golden queries: (0+1+1+1)/4 = 0.75, dense (1+1+1+1)/4 = 1.0
    assert fr.overall == {"run": 0.75, "run_filtered": 0.75, "dense": 1.0, "dense_filtered": 0.75}
    assert fr.relevant_allowed == 0.75  # 3 of the 4 relevant pairs pass their filter
    assert fr.n_filtered_queries == 3
    out = fr.to_dict()
    assert out["metric"] == "recall@1" and out["per_query"][0]["query_id"] == "q1"


def test_the_unfiltered_search_is_measured_as_the_remedy_and_in_the_matrix(data, tmp_path):
    a = _analysis(data, tmp_path, filter_field="tenant")
    row = a.remedies("prod").row("filtered_out")
    # exact dense search without the filter puts g1 first for q1: 1 of 1 recovered; q2-q4 stay hits: 0 lost
    assert (row.remedy_id, row.failures, row.recovered, row.lost_hits) == ("unfiltered", 1, 1, 0)
    matrix = a.remedy_matrix("prod")
    assert matrix.is_own("filtered_out", "unfiltered")
    assert matrix.cell("filtered_out", "unfiltered").recovered == 1


def test_without_a_filter_the_remedy_is_not_tried(data, tmp_path):
    a = _analysis(data, tmp_path)
    row = a.remedies("prod").row("filtered_out")
    assert (row.failures, row.available, row.note) == (0, False, "no metadata filter given")
    assert "unfiltered" not in a.remedy_matrix("prod").remedy_ids
    with pytest.raises(DataError) as e:
        a.filter_recall("prod")
    assert e.value.param == "filters"


# ------------------------------------------------------------------------------------------ the JSON form


def test_json_conditions_follow_the_documented_subset(data):
    ds = load_dataset(data_dir=data)
    docs = list(ds.corpus.df["doc_id"])  # a1 a2 g1 g2 n1
    qf = build_filters(
        ds,
        filters={
            "q1": {"tenant": "acme"},
            "q2": {"tenant": {"$ne": "acme"}},  # present and not acme: g1, g2 (n1 has no tenant: out)
            "q3": {"tenant": {"$in": ["globex", "initech"]}, "doc_id": {"$nin": ["g1"]}},  # AND: g2
            "q4": {"doc_id": {"$eq": "n1"}},
        },
    )

    def allowed(q):
        return [d for d, ok in zip(docs, qf.mask(q), strict=True) if ok]

    assert allowed("q1") == ["a1", "a2"]
    assert allowed("q2") == ["g1", "g2"]
    assert allowed("q3") == ["g2"]
    assert allowed("q4") == ["n1"]
    assert qf.excludes("q1", "g1") and not qf.excludes("q1", "a1")
    assert qf.excludes("q1", "not-in-corpus")  # no metadata: out


def test_values_compare_by_type():
    # 3 and 3.0 are one number, "3" is a text, True a boolean (Chroma compares typed values)
    assert value_key(3) == value_key(3.0) != value_key("3")
    assert value_key(True) != value_key(1)
    assert value_key(None) is None and value_key(float("nan")) is None


def test_both_forms_combine(data):
    ds = load_dataset(data_dir=data)
    qf = build_filters(ds, filter_field="tenant", filters={"q1": {"doc_id": {"$in": ["a2", "g1"]}}})
    # q1: tenant = acme (a1, a2) and doc_id in (a2, g1): a2
    assert [bool(x) for x in qf.mask("q1")] == [False, True, False, False, False]
    assert qf.text("q1") == "tenant = 'acme' and doc_id in ['a2', 'g1']"


def test_the_filter_applied_to_a_run_keeps_the_order(data):
    ds = load_dataset(data_dir=data)
    qf = field_filter("tenant", ds.queries, ds.corpus)
    run = Run.from_ranked_lists("r", {"q1": [("g1", 0.9), ("a2", 0.5), ("a1", 0.4)], "q4": [("g1", 0.3)]})
    out = apply_filter(run, qf)
    # q1 (acme) loses g1, a2 and a1 move up to ranks 1, 2; q4 has no filter: unchanged
    assert out.ranked_lists() == {"q1": ["a2", "a1"], "q4": ["g1"]}
    assert out.df["rank"].tolist() == [1, 2, 1]


# ------------------------------------------------------------------------------------------ errors


def _error(data: Path, **kwargs) -> DataError:
    ds = load_dataset(data_dir=data)
    with pytest.raises(DataError) as e:
        build_filters(ds, **kwargs)
    return e.value


def test_unknown_fields_are_named(data):
    e = _error(data, filter_field="region")
    assert e.param == "filter_field" and "'region'" in str(e) and "tenant" in str(e)
    e = _error(data, filter_field="tenant=region")
    assert e.param == "filter_field" and "no metadata field 'region'" in str(e)
    e = _error(data, filters={"q1": {"colour": "red"}})
    assert e.param == "filters" and "'colour'" in str(e)


def test_malformed_json_names_the_file_line_and_column(data, tmp_path):
    bad = tmp_path / "filters.json"
    bad.write_text('{\n  "q1": {"tenant": "acme"},\n  "q2": {"tenant" "acme"}\n}\n', encoding="utf-8")
    e = _error(data, filters=bad)
    assert e.param == "filters" and f"{bad}, line 3 column" in str(e)


def test_a_query_id_not_among_the_queries_names_its_line(data, tmp_path):
    path = tmp_path / "filters.json"
    path.write_text('{\n  "q1": {"tenant": "acme"},\n  "q9": {"tenant": "acme"}\n}\n', encoding="utf-8")
    e = _error(data, filters=path)
    assert f"{path}, line 3, query 'q9'" in str(e) and "no query has this id" in str(e)


@pytest.mark.parametrize(
    ("condition", "message"),
    [
        ({"$gt": 3}, "not a supported condition"),
        ({"$in": []}, "non-empty list"),
        ({"$in": "acme"}, "non-empty list"),
        (None, "not a string, number or boolean"),
        ({"$eq": ["a"]}, "not a string, number or boolean"),
    ],
)
def test_unsupported_conditions_are_refused_with_the_fix(data, condition, message):
    e = _error(data, filters={"q1": {"tenant": condition}})
    assert message in str(e) and "$in" in str(e) and "field 'tenant'" in str(e)


def test_the_cli_names_the_flag(data, tmp_path, capsys):
    from diagnose.cli import main

    bad = tmp_path / "f.json"
    bad.write_text("{oops", encoding="utf-8")
    argv = ["failures", "--data", data, "--run", f"prod={data / 'run.trec'}", "--k", "1", "--filters", bad]
    code = main([str(x) for x in argv])
    err = capsys.readouterr().err
    assert code == 2 and "--filters" in err and "line 1 column 2" in err


# ------------------------------------------------------------------------------------------ real data


@pytest.mark.real_model
def test_with_the_bundled_model(data, tmp_path, capsys):
    """The CLI with the real bundled model: the class does not depend on the model; the filtered dense search
    returns only documents the filter lets through, so q1 loses g1."""
    from diagnose.cli import main

    argv = [
        "failures",
        "--data",
        data,
        "--run",
        f"prod={data / 'run.trec'}",
        "--k",
        "1",
        "--filter-field",
        "tenant",
    ]
    code = main(
        [str(x) for x in [*argv, "--cache-dir", tmp_path / "c", "--precision", "exact", "--format", "json"]]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    payload = json.loads(out)
    assert payload["class_counts"]["filtered_out"] == 1
    fr = payload["filter_recall"]
    q1 = next(r for r in fr["per_query"] if r["query_id"] == "q1")
    assert (q1["n_filtered_out"], q1["dense_filtered"]) == (1, 0.0)  # g1 is out of q1's filtered search
    assert fr["relevant_allowed"] == 0.75
    assert set(fr["overall"]) == {"run", "run_filtered", "dense", "dense_filtered"}


def test_a_chroma_collections_metadata_filters(tmp_path):
    """The field match over a real Chroma collection's metadata (read by diagnose.io.vectordb)."""
    chromadb = pytest.importorskip("chromadb")
    from chromadb.config import Settings

    import diagnose

    folder = write_data(tmp_path / "tiny")
    enc = KeywordEncoder(dim=1024)
    client = chromadb.PersistentClient(
        path=str(tmp_path / "db"), settings=Settings(anonymized_telemetry=False)
    )
    col = client.create_collection(
        "kbase", embedding_function=None, configuration={"hnsw": {"space": "cosine"}}
    )
    col.add(
        ids=[d for d, _, _ in DOCS],
        documents=[x for _, _, x in DOCS],
        metadatas=[{"tenant": t} if t else {"title": ""} for _, t, _ in DOCS],
        embeddings=np.asarray(enc.encode([x for _, _, x in DOCS]), dtype=np.float32),
    )
    ds = diagnose.load(
        corpus=f"chroma:{tmp_path / 'db'}#kbase",
        queries=folder / "queries.jsonl",
        qrels=folder / "qrels" / "test.tsv",
        runs=[("prod", folder / "run.trec")],
    )
    a = Analysis(ds, k=1, encoder=enc, cache_dir=tmp_path / "cache", filter_field="tenant")
    d = a.diagnosis("prod")
    assert [(f.query_id, f.doc_id, f.cls) for f in d.failures] == [("q1", "g1", "filtered_out")]
    assert a.filter_recall("prod").overall["dense_filtered"] == 0.75  # as from the JSONL corpus above
