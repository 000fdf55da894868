"""Hardening, round 3 (issue 38), the second half: JSON outputs carry the warnings their table prints; ANN and
chunking parameters a C++ library or the splitter would crash on are refused; metadata filter files; fine-tuning
leakage and ``--sample``; the app's own model and uploads; Python API parameters; memory-mapped runs.

Each test fails on main 95070d1, except the guards that say "(passes on main too)": what a fix must keep. A few
crash main's process (SIGSEGV, SIGBUS): those run in a subprocess or were checked by hand. The data set of the
JSON tests is a copy of the demo with one empty document added and one run line naming a document the corpus
lacks: the two warnings the table format prints."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from diagnose.analysis import Analysis
from diagnose.api import evaluate as diagnose_evaluate
from diagnose.api import load
from diagnose.cli import EXIT_INPUT, EXIT_OK, main
from diagnose.data import DataError, Qrels
from diagnose.embed import KeywordEncoder
from diagnose.io.filters import json_filters
from diagnose.search.space import VectorSpace
from diagnose.whatif.ann import AnnSetting, ann_frontier
from diagnose.whatif.chunking import check_grid
from diagnose.whatif.finetune import query_key, same_text

DEMO = Path(__file__).resolve().parents[1] / "demo_corpus"
RUN = DEMO / "runs" / "ann_minilm.trec"
WARNED = {"empty_document", "run_doc_not_in_corpus"}


@pytest.fixture
def warned(tmp_path, monkeypatch):
    """A demo copy with an empty document and a run line whose document is not in the corpus; the fake encoder."""
    monkeypatch.setattr("diagnose.embed.load_encoder", lambda *a, **kw: KeywordEncoder())
    data = tmp_path / "data"
    (data / "qrels").mkdir(parents=True)
    shutil.copy(DEMO / "queries.jsonl", data / "queries.jsonl")
    shutil.copy(DEMO / "qrels" / "test.tsv", data / "qrels" / "test.tsv")
    corpus = (DEMO / "corpus.jsonl").read_text(encoding="utf-8")
    (data / "corpus.jsonl").write_text(corpus + json.dumps({"_id": "empty-1", "text": ""}) + "\n", "utf-8")
    runs = []
    for name in ("a", "b"):
        run = tmp_path / f"{name}.trec"
        run.write_text(RUN.read_text() + f"q001 Q0 ghost-doc 99 0.01 {name}\n", encoding="utf-8")
        runs.append(str(run))
    return data, runs


def _json_warnings(capsys, argv: list[str]) -> set[str]:
    """The warning codes of a command's JSON output; its table run's standard error names the same problems."""
    assert main([*argv, "--format", "json"]) == EXIT_OK
    out = capsys.readouterr()
    payload = json.loads(out.out)
    assert out.err.count("warning:") == 0  # JSON mode prints them in the payload, not on standard error
    return {w["code"] for w in payload["warnings"]}


@pytest.mark.parametrize(
    "command",
    [
        ["chunking", "--sizes", "64", "--overlaps", "0"],
        ["ann"],
        ["risk"],
        ["fuse", "--run", "{b}"],
        ["models"],
    ],
    ids=["chunking", "ann", "risk", "fuse", "models"],
)
def test_json_outputs_carry_the_warnings_the_table_prints(warned, capsys, command):
    data, (a, b) = warned
    argv = [command[0], "--data", str(data), *(x.format(b=b) for x in command[1:])]
    if command[0] != "models":
        argv += ["--run", a]
    assert main(argv) == EXIT_OK
    err = capsys.readouterr().err
    printed = {"empty_document"} | ({"run_doc_not_in_corpus"} if "not in the corpus" in err else set())
    assert "has no text and no title" in err  # the table format prints the empty document's warning
    codes = _json_warnings(capsys, argv)
    assert codes == printed
    if command[0] != "models":  # a run was given: its ghost document is named in both formats
        assert codes == WARNED


def test_rerank_json_carries_the_warnings(warned, capsys):
    """The runs of --candidates and --reranked are cross-checked like --run's (main: their ghost document was
    never mentioned, in either format)."""
    data, (a, b) = warned
    argv = ["rerank", "--data", str(data), "--candidates", a, "--reranked", b]
    assert main(argv) == EXIT_OK
    err = capsys.readouterr().err
    assert "run 'a': 1 retrieved document is not in the corpus" in err and "run 'b': 1 retrieved" in err
    assert _json_warnings(capsys, argv) == WARNED


# ------------------------------------------------------------------------------ ANN and chunking parameters


def _tiny_space():
    """30 random unit documents, 3 queries, each query's relevant document its own index."""

    rng = np.random.default_rng(0)
    docs, queries = rng.normal(size=(30, 8)).astype(np.float32), rng.normal(size=(3, 8)).astype(np.float32)
    docs /= np.linalg.norm(docs, axis=1, keepdims=True)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    d_ids, q_ids = [f"d{i}" for i in range(30)], ["q0", "q1", "q2"]
    qrels = Qrels(pd.DataFrame({"query_id": q_ids, "doc_id": d_ids[:3], "relevance": 1}))
    return VectorSpace.from_arrays("random", d_ids, docs, q_ids, queries), qrels


HNSW = {"M": 4, "efConstruction": 8, "efSearch": 8}


@pytest.mark.parametrize(
    ("settings", "says"),
    [
        ([("hnsw", {**HNSW, "M": 1})], "M must be an integer in [2, 1024]"),  # faiss: SIGSEGV on main
        ([("hnsw", {**HNSW, "M": True})], "got True"),  # True == 1: SIGSEGV on main
        ([("hnsw", {**HNSW, "efSearch": "16"})], "efSearch must be an integer"),
        (
            [("hnsw", {**HNSW, "efSearch": 2**40})],
            "efSearch must be an integer in [1, 100000]",
        ),  # OverflowError
        ([("hnsw", None)], "takes a dict of exactly M, efConstruction, efSearch"),  # AttributeError on main
        (["hnsw"], "must hold AnnSetting records"),  # on main: "Unknown ANN index <built-in method index...>"
        ("hnsw", "settings must be a list of AnnSetting"),
        ([("ivf_flat", {"nlist": 2, "nprobe": 5})], "nprobe must be at most nlist (2)"),  # accepted on main
        ([("ivf_flat", {"nlist": 31, "nprobe": 1})], "at most the 30 documents"),  # (passes on main too)
    ],
    ids=[
        "M=1",
        "M=True",
        "string",
        "2**40",
        "params=None",
        "a string setting",
        "a string",
        "nprobe>nlist",
        "nlist",
    ],
)
def test_ann_settings_are_refused_before_faiss_sees_them(settings, says):
    pytest.importorskip("faiss")

    space, qrels = _tiny_space()
    given = (
        [AnnSetting(*s) if isinstance(s, tuple) else s for s in settings]
        if isinstance(settings, list)
        else settings
    )
    with pytest.raises(DataError) as e:
        ann_frontier(qrels, space, k=3, settings=given)
    assert e.value.param == "settings" and says in str(e.value)


def test_ann_settings_accept_numpy_integers_and_the_analysis_checks_before_its_memo():
    pytest.importorskip("faiss")

    space, qrels = _tiny_space()
    s = AnnSetting("hnsw", {"M": np.int64(4), "efConstruction": np.int32(8), "efSearch": 8})
    f = ann_frontier(qrels, space, k=3, settings=[s])  # refused on main ("takes the positive integers")
    assert [p.params for p in f.settings] == [HNSW]
    an = Analysis(load(DEMO), encoder=KeywordEncoder(), baselines=("dense",))
    with pytest.raises(DataError) as e:  # AttributeError on main (the memo key read params.items())
        an.ann_frontier(settings=[AnnSetting("hnsw", None)])
    assert e.value.param == "settings"


@pytest.mark.parametrize(
    ("sizes", "overlaps", "param"),
    [
        (10**20, 0, "sizes"),  # the splitter's TypeError on main
        ([True], [0], "sizes"),
        ([128], [10**20], "overlaps"),
        ("128,2000000", "0", "sizes"),
        ([128.0], [0], "sizes"),
    ],
)
def test_chunk_sizes_and_overlaps_outside_sane_bounds_are_refused(sizes, overlaps, param):

    with pytest.raises(DataError) as e:
        check_grid(sizes, overlaps)
    assert e.value.param == param and "1,000,000" in str(e.value)


def test_a_chunk_size_of_10_20_through_the_analysis_is_a_data_error():

    an = Analysis(load(DEMO), encoder=KeywordEncoder())
    with pytest.raises(DataError) as e:
        an.chunking([10**20], [0])
    assert e.value.param == "sizes"


# ------------------------------------------------------------------------------ metadata filters


@pytest.fixture(scope="module")
def demo():
    return load(DEMO)


def _filter_error(demo, source) -> DataError:
    with pytest.raises(DataError) as e:
        json_filters(source, demo)
    assert e.value.param == "filters"
    return e.value


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (
            b'{"q001": {"doc_id": "h\xffr"}}',
            ":1: bytes that are not UTF-8 (byte 0xff)",
        ),  # UnicodeDecodeError on main
        (b'{"q001": {"doc_id": ' + b"[" * 100_000 + b"]" * 100_000 + b"}}", "nested 100,002 levels deep"),
        (b'{"q001": {"doc_id": ' + b"[\n" * 100_000 + b"]\n" * 100_000 + b"}}", "nested 100,002 levels deep"),
        (b'{"q001": {"doc_id": NaN}}', "line 1: NaN is not a JSON value"),  # accepted on main
        (b'{"q001": {"doc_id": {"$in": ["hr-0001",\n -Infinity]}}}', "line 2: -Infinity is not a JSON value"),
    ],
    ids=["not utf-8", "100k brackets", "100k brackets on lines", "NaN", "-Infinity in $in"],
)
def test_a_hostile_filters_file_is_a_data_error_naming_the_file(demo, tmp_path, content, says):
    path = tmp_path / "filters.json"
    path.write_bytes(content)
    e = _filter_error(demo, path)
    assert str(path) in str(e) and says in str(e)


def test_a_fifo_as_the_filters_file_is_not_a_regular_file(demo, tmp_path):
    fifo = tmp_path / "filters.fifo"
    os.mkfifo(fifo)
    e = _filter_error(demo, fifo)  # main: "filters file ... not found"
    assert "named pipe (FIFO), not a regular file" in str(e) and "not found" not in str(e)


@pytest.mark.parametrize(
    ("filters", "says"),
    [
        ({"q001": {"doc_id": {"hr-0001", "hr-0002"}}}, "field 'doc_id': {"),  # a set: accepted on main
        ({"q001": {"doc_id": ("hr-0001",)}}, "is a tuple"),
        ({"q001": {"doc_id": float("nan")}}, "NaN or infinite"),  # matched nothing, silently, on main
        ({"q001": {"doc_id": {"$in": {"hr-0001"}}}}, "got a set"),
        (123, "filters must be a JSON filters file or a dict"),  # TypeError on main
    ],
    ids=["set", "tuple", "nan", "set in $in", "int"],
)
def test_python_filters_refuse_values_without_a_defined_order_or_json(demo, filters, says):
    assert says in str(_filter_error(demo, filters))


def test_analysis_filters_123_is_a_data_error(demo):
    with pytest.raises(DataError) as e:
        Analysis(demo, filters=123, encoder=KeywordEncoder())
    assert e.value.param == "filters"


# ------------------------------------------------------------------------------ fine-tuning


TOPICS = ["vitamin d bone density", "green tea cancer risk", "sugar and diabetes", "red meat heart disease",
          "sleep and memory", "coffee and blood pressure"]  # fmt: skip


def _leaky(root: Path, twins: dict[str, str]) -> Path:
    """6 documents d0..d5, queries q0..q5 ("does TOPIC matter") judged in qrels/test.tsv (qi -> di), and training
    queries t0..t5 judged in qrels/train.tsv (ti -> di) whose text is ``twins.get(ti)`` (an evaluation question
    written differently) or a question of their own."""
    (root / "qrels").mkdir(parents=True)
    docs = [{"_id": f"d{i}", "title": t, "text": f"A study of {t} in adults."} for i, t in enumerate(TOPICS)]
    queries = [{"_id": f"q{i}", "text": f"does {t} matter"} for i, t in enumerate(TOPICS)]
    queries += [
        {"_id": f"t{i}", "text": twins.get(f"t{i}", f"what is known about {t}")} for i, t in enumerate(TOPICS)
    ]
    for name, rows in (("corpus", docs), ("queries", queries)):
        (root / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    for split, prefix in (("test", "q"), ("train", "t")):
        lines = ["query-id\tcorpus-id\tscore"] + [f"{prefix}{i}\td{i}\t1" for i in range(len(TOPICS))]
        (root / "qrels" / f"{split}.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


class _Stop(Exception):
    """Raised by the fake trainer: what it was given is all the test needs."""


class _NamedKeywordEncoder(KeywordEncoder):
    model = None  # what finetune reads as the base model (never trained here)


@pytest.fixture
def no_training(monkeypatch):
    """The keyword encoder as the 'model', no step timing, and a trainer that records its anchors and stops."""
    from diagnose.whatif.finetune import train as tr

    seen: list[list[str]] = []
    monkeypatch.setattr("diagnose.embed.load_encoder", lambda *a, **kw: _NamedKeywordEncoder())
    monkeypatch.setattr(tr, "seconds_per_step", lambda *a, **kw: 0.01)

    def train(base, anchors, positives, negatives, out, settings, progress=False):
        seen.append(list(anchors))
        raise _Stop

    monkeypatch.setattr(tr, "train", train)
    return seen


def test_query_key_ignores_case_spacing_and_punctuation():
    assert query_key("  Does Vitamin-D   matter?") == "does vitamin d matter"  # NFKC, casefold, \w+ runs
    assert query_key("ＤＯＥＳ") == "does"  # full-width letters: NFKC
    text = {"t1": "Does sugar matter?", "t2": "other", "q1": "does  sugar matter", "t3": "?!", "q2": "..."}
    assert same_text(["t1", "t2", "t3"], ["q1", "q2"], text) == {
        "t1": "q1"
    }  # "?!" vs "...": no word, no match


def test_a_training_split_of_the_evaluation_questions_under_other_ids_is_refused(tmp_path, no_training):
    """Every training query t_i asks q_i's question (punctuation and case changed): on main it trained and
    reported a gain."""
    twins = {f"t{i}": f"Does {t.upper()} matter?" for i, t in enumerate(TOPICS)}
    root = _leaky(tmp_path / "data", twins)
    an = Analysis(load(root, split="test"), {}, model="fake", baselines=("bm25",), cache_dir=tmp_path / "c")
    with pytest.raises(DataError) as e:
        an.finetune(tmp_path / "out", train_qrels=load(root, split="train").qrels)
    assert e.value.param == "train_split" and "(6)" in str(e.value) and "t0 = q0" in str(e.value)
    assert no_training == []  # nothing was trained


def test_training_queries_with_an_evaluation_question_are_left_out_and_counted(tmp_path, no_training):
    twins = {"t1": "DOES green tea cancer risk matter", "t4": "does sleep and memory matter!"}
    root = _leaky(tmp_path / "data", twins)
    ds = load(root, split="test")
    an = Analysis(ds, {}, model="fake", baselines=("bm25",), cache_dir=tmp_path / "c")
    with pytest.raises(_Stop):
        an.finetune(tmp_path / "out", train_qrels=load(root, split="train").qrels)
    # 6 training queries, t1 and t4 ask q1's and q4's questions: the anchors are the other 4's texts only
    assert no_training and set(no_training[0]) <= {f"what is known about {TOPICS[i]}" for i in (0, 2, 3, 5)}
    (leak,) = [p for p in ds.report.warnings if p.code == "finetune_query_text_leak"]
    assert leak.count == 2 and leak.examples == ("t1 = q1", "t4 = q4")


def test_cross_fitting_leaves_out_a_question_asked_again_in_another_fold(tmp_path, no_training):
    """Golden queries q0..q5 with q3 asking q0's question; 6 folds of one query: fold {q0} would train on q3 and
    fold {q3} on q0, so 2 training queries are left out (q3 = q0, q0 = q3)."""
    root = _leaky(tmp_path / "data", {})
    text = (root / "queries.jsonl").read_text(encoding="utf-8").replace("does red meat heart disease matter",
                                                                       "Does vitamin D bone density matter?")  # fmt: skip
    (root / "queries.jsonl").write_text(text, encoding="utf-8")
    ds = load(root, split="test")
    an = Analysis(ds, {}, model="fake", baselines=("bm25",), cache_dir=tmp_path / "c")
    with pytest.raises(_Stop):
        an.finetune(tmp_path / "out", folds=6)
    (leak,) = [p for p in ds.report.warnings if p.code == "finetune_query_text_leak"]
    assert leak.count == 2 and sorted(leak.examples) == ["q0 = q3", "q3 = q0"]


def test_finetune_sample_0_is_refused_naming_the_flag(tmp_path, capsys, no_training):
    root = _leaky(tmp_path / "data", {})
    code = main(
        ["finetune", "--data", str(root), "--out", str(tmp_path / "out"), "--sample", "0", "--folds", "2"]
    )
    err = capsys.readouterr().err
    assert (
        code == EXIT_INPUT and "--sample" in err and "positive integer" in err
    )  # main ignored it and trained
    assert no_training == []


# ------------------------------------------------------------------------------ Python API parameters


@pytest.mark.parametrize(
    ("spec", "kwargs", "param"),
    [
        (None, {}, "corpus"),  # AttributeError on main
        ("chroma:/nonexistent#c", {"batch_size": 0}, "batch_size"),
        ("chroma:/nonexistent#c", {"batch_size": -1}, "batch_size"),
        ("chroma:/nonexistent#c", {"batch_size": True}, "batch_size"),
        ("chroma:/nonexistent#c", {"fields": ["id"]}, "fields"),  # ValueError of dict() on main
        ("chroma:/nonexistent#c", {"fields": {"id": 3}}, "fields"),
        ("chroma:/nonexistent#c", {"fields": {"doc": "x"}}, "fields"),
    ],
    ids=["None", "batch 0", "batch -1", "batch True", "fields list", "fields int", "fields key"],
)
def test_read_collection_checks_its_parameters_before_opening_anything(spec, kwargs, param):
    from diagnose.io.vectordb import read_collection

    with pytest.raises(DataError) as e:
        read_collection(spec, **kwargs)
    assert e.value.param == param


@pytest.mark.parametrize("batch_size", [0, -1, True, 2.5])
def test_embed_texts_and_the_cross_encoder_refuse_a_batch_size_that_is_not_a_positive_integer(batch_size):
    from diagnose.embed import embed_texts
    from diagnose.whatif.compare import rerank_cross_encoder

    with pytest.raises(DataError) as e:  # main: the keyword encoder encoded with 0, -1, True alike
        embed_texts(KeywordEncoder(), ["a b", "c"], batch_size=batch_size)
    assert e.value.param == "batch_size"
    with pytest.raises(DataError) as e:  # refused before any model is looked for
        rerank_cross_encoder(None, {}, {}, "no-such-model", batch_size=batch_size)
    assert e.value.param == "batch_size"


@pytest.mark.parametrize("fields", [{"id": 3}, {"idd": "_id"}], ids=["int value", "unknown key"])
def test_load_corpus_fields_names_a_wrong_key_or_value(fields):
    with pytest.raises(DataError) as e:  # main: "no id field 3" (id_field) / accepted silently
        load(DEMO, corpus_fields=fields)
    assert e.value.param == "corpus_fields" and "the keys are 'id', 'text', 'title'" in str(e.value)


@pytest.mark.parametrize(
    "run", [{}, {"mine": {}}, {"zz": {"d1": 1.0}}], ids=["{}", "{name: {}}", "no golden id"]
)
def test_evaluate_refuses_a_run_that_can_only_score_zero_like_the_cli(demo, run):
    with pytest.raises(DataError) as e:  # main: a row of zeros
        diagnose_evaluate(demo, run, metrics=["ndcg@10"])
    assert e.value.param == "run"
    assert "has no results" in str(e.value) or "is a golden query" in str(e.value)


def test_evaluate_still_scores_a_partial_run(demo):
    """(passes on main too) A run of one golden query is scored, not refused."""
    # q001's relevant hr-0001 at rank 1 (grade 2): ndcg@10 of q001 = 1; the 108 other golden queries score 0
    n_golden = demo.qrels.df.query("relevance > 0")["query_id"].nunique()
    table = diagnose_evaluate(demo, {"q001": {"hr-0001": 1.0}}, metrics=["ndcg@10"])
    assert table.iloc[0]["ndcg@10"] == pytest.approx(1 / n_golden)


# ------------------------------------------------------------------------------ the app


def test_an_analysis_built_like_the_app_s_knows_its_bundled_model(demo, tmp_path):
    """The app gives Analysis both model=None and the encoder it loaded (diagnose/ui/state.py): fine-tuning refused
    it on main ("not an encoder object"); the encoder's source is the bundled model's folder."""
    from diagnose.embed import load_encoder

    an = Analysis(demo, {}, model=None, encoder=load_encoder(None))  # lazy: no weights loaded
    assert (Path(an.model_source) / "modules.json").is_file()  # a sentence-transformers folder
    assert Analysis(demo, {}, model="my/model").model_source == "my/model"
    fake = Analysis(demo, {}, encoder=KeywordEncoder())
    assert fake.model_source is None  # a hash has no weights to train
    with pytest.raises(DataError) as e:
        fake.finetune(tmp_path / "out", folds=2)
    assert e.value.param == "model" and "keyword-hash" in str(e.value)


@pytest.mark.real_model
def test_the_app_fine_tunes_its_own_bundled_model(monkeypatch, model_cache):
    """The Model choice page's form with the app's bundled model runs to a result (main: "Fine-tuning needs a
    sentence-transformers model ..., not an encoder object"). The trainer is replaced by a copy of the base model's
    folder (the training itself is tests/test_finetune.py's), so base and tuned are the same model: change 0."""
    app = pytest.importorskip("app_testing")  # skips without Streamlit
    from diagnose.whatif.finetune import train as tr

    def train(base, anchors, positives, negatives, out, settings, progress=False):
        assert anchors  # the golden set's questions reached the trainer
        base.save(str(out))
        return out

    monkeypatch.setattr(tr, "train", train)
    monkeypatch.delenv("DIAGNOSE_ENCODER", raising=False)
    monkeypatch.setenv("DIAGNOSE_CACHE_DIR", str(model_cache))
    monkeypatch.setenv("DIAGNOSE_FOREGROUND_SECONDS", "600")
    at = app.open_page(app.AppTest.from_file(str(app.APP), default_timeout=600), "models")
    out = Path(model_cache).parent / "tuned-by-the-app"
    at.number_input(key="finetune_folds").set_value(2)
    at.text_input(key="finetune_out").input(str(out))
    at.button(key="finetune_submit").click().run()
    app.assert_clean(at)
    result = at.session_state["finetune_result"]
    assert result.mode == "folds" and (out / "modules.json").is_file()
    assert all(v == pytest.approx(result.base[m], abs=1e-6) for m, v in result.tuned.items())


@pytest.mark.parametrize("name", ["..", "runs/..", "../.."])
def test_an_upload_named_dot_dot_is_refused_with_a_message(tmp_path, name):
    from diagnose.ui.sources import Upload, upload_spec

    ok = Upload("queries.jsonl", b'{"_id": "q1", "text": "x"}\n')
    with pytest.raises(DataError) as e:  # main: OSError "Device or resource busy" renaming onto the folder
        upload_spec(Upload(name, b"x"), ok, Upload("qrels.tsv", b"q1\td1\t1\n"), root=tmp_path)
    assert "names a folder, not a file" in str(e.value) and "Rename the file" in str(e.value)


def test_the_app_shows_the_upload_named_dot_dot_as_a_message(keyword_encoder, tmp_path, monkeypatch):
    app = pytest.importorskip("app_testing")  # skips without Streamlit

    monkeypatch.setattr("diagnose.ui.sources.UPLOAD_ROOT", tmp_path)
    at = app.AppTest.from_file(str(app.APP), default_timeout=app.APP_TIMEOUT).run()
    at.selectbox(key="src_kind").set_value("upload").run()
    at.file_uploader(key="up_corpus").set_value(("..", b'{"_id": "d1", "text": "x"}\n', "application/json"))
    at.file_uploader(key="up_queries").set_value(
        ("q.jsonl", b'{"_id": "q1", "text": "x"}\n', "application/json")
    )
    at.file_uploader(key="up_qrels").set_value(("qrels.tsv", b"q1\td1\t1\n", "text/tab-separated-values"))
    at.run()
    assert not at.exception, [e.message for e in at.exception]  # main: the OSError's traceback
    shown = " ".join(str(x.value) for x in (*at.error, *at.info, *at.warning))
    assert "names a folder, not a file" in app.unescaped(shown)


# ------------------------------------------------------------------------------ memory-mapped runs


TREC_LINES = b"".join(
    f"q{q} Q0 d{r} {r + 1} {100 - r}.5 tag\n".encode() for q in range(40) for r in range(100)
)


@pytest.mark.parametrize("threshold", [0, 2**62], ids=["mapped", "copied"])
def test_a_run_that_grows_between_stat_and_read_is_refused(tmp_path, monkeypatch, threshold):
    """Another program appends a line between the size check and the read (or the map): main read whatever was
    there; now the sizes disagree and the error says the file changed."""
    from diagnose.io import files
    from diagnose.io.files import read_mapped

    path = tmp_path / "run.trec"
    path.write_bytes(TREC_LINES)
    monkeypatch.setattr(files, "MAP_MIN_BYTES", threshold)
    check = files.check_input_path

    def check_then_append(p, expected, **kw):
        st = check(p, expected, **kw)
        with open(p, "ab") as f:
            f.write(b"q0 Q0 late 1 1.0 tag\n")
        return st

    monkeypatch.setattr(files, "check_input_path", check_then_append)
    with pytest.raises(DataError) as e:
        read_mapped(path, "a run")
    n = len(TREC_LINES)  # 40 x 100 lines; the appended line is 21 bytes
    assert "changed while it was being read" in str(
        e.value
    ) and f"{n:,} bytes when checked, {n + 21:,}" in str(e.value)


def test_a_mapped_run_rewritten_during_its_parse_is_refused(tmp_path, monkeypatch):
    from diagnose.io import files, read_run, runs

    path = tmp_path / "run.trec"
    path.write_bytes(TREC_LINES)
    monkeypatch.setattr(files, "MAP_MIN_BYTES", 0)
    parse = runs._read_run_trec

    def rewrite_during_parse(raw, *a, **kw):
        out = parse(raw, *a, **kw)
        path.write_bytes(TREC_LINES.replace(b"tag", b"TAG"))  # same size, other bytes, a new mtime
        st = path.stat()
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
        return out

    monkeypatch.setattr(runs, "_read_run_trec", rewrite_during_parse)
    with pytest.raises(DataError, match="changed while it was being read"):
        read_run(path)


TRUNCATE = """
import sys
from diagnose.io import files, read_run, runs
path = sys.argv[1]
if sys.argv[2] == "map":
    files.MAP_MIN_BYTES = 0
parse = runs._read_run_trec
def truncating(raw, *a, **kw):
    open(path, "r+b").truncate(0)  # another program empties the file while it is parsed
    return parse(raw, *a, **kw)
runs._read_run_trec = truncating
if sys.argv[2] == "cli":
    files.MAP_MIN_BYTES = 0
    sys.argv = ["diagnose", "evaluate", "--qrels", sys.argv[3], "--run", path]
    from diagnose.cli import entry
    entry()
print(len(read_run(path)))
"""


def _truncated(tmp_path, mode: str, per_query: int):
    """The run of 40 queries x ``per_query`` distinct documents, read in a subprocess that empties the file while
    it is parsed (``TRUNCATE``)."""
    import subprocess
    import sys

    path = tmp_path / "run.trec"
    lines = (f"q{q} Q0 d{r} {r + 1} {per_query - r}.5 tag\n" for q in range(40) for r in range(per_query))
    path.write_bytes("".join(lines).encode())
    qrels = tmp_path / "qrels.tsv"
    qrels.write_text("q0\t0\td0\t1\n", encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    env.pop("PYTHONFAULTHANDLER", None)
    argv = [sys.executable, "-c", TRUNCATE, str(path), mode, str(qrels)]
    return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300), path


def test_a_2_mib_run_truncated_while_it_is_parsed_is_read_whole(tmp_path):
    """Over 2 MiB: mapped on main (threshold 1 MiB), where the truncation ended the process with SIGBUS and no
    word; now copied below 256 MiB, so the parse reads the copy: 40 queries x 3,000 documents = 120,000 lines."""
    done, path = _truncated(tmp_path, "read", 3000)
    assert done.returncode == 0, done.stderr
    assert (
        int(done.stdout) == 120_000 and path.stat().st_size == 0
    )  # the file was emptied, the copy read whole


def test_the_cli_never_dies_silently_on_a_truncated_map(tmp_path):
    """A mapped file (forced here; 256 MiB and more for real) truncated mid-parse: SIGBUS cannot be caught, but the
    command says so and where (faulthandler), where main printed nothing."""
    import signal

    done, _ = _truncated(tmp_path, "cli", 100)
    assert done.returncode == -signal.SIGBUS
    assert "Fatal Python error: Bus error" in done.stderr and "read_run" in done.stderr


def _finetune_section_with_a_leak():  # an AppTest script: the section's result view, one result with two leaks
    from diagnose.ui import finetune_section
    from diagnose.whatif.finetune import Cost, FinetuneResult

    finetune_section._show(
        FinetuneResult(
            base={"ndcg@10": 0.5},
            tuned={"ndcg@10": 0.5},
            comparisons=[],
            p_value=None,
            model_path="/m",
            train_pairs=4,
            seconds=1.0,
            recovered={},
            broken={},
            mode="split",
            evaluated_queries=6,
            cost=Cost(1, 4, 1, 1.0, 6, "cpu", False),
            excluded_by_text=("t_1 = q_1", "t_4 = q_4"),
        )  # fmt: skip
    )


def test_the_app_names_the_training_questions_left_out():
    app = pytest.importorskip("app_testing")  # skips without Streamlit
    at = app.AppTest.from_function(_finetune_section_with_a_leak).run()
    assert not at.exception, [e.message for e in at.exception]
    (warning,) = at.warning
    assert app.unescaped(warning.value).endswith("left out of training (t_1 = q_1, t_4 = q_4).")
    assert warning.value.startswith("2 training queries")


def test_the_finetune_command_names_the_questions_left_out():
    from diagnose.cli.finetune import finetune_text
    from diagnose.whatif.finetune import Cost, FinetuneResult

    leaks = tuple(f"t{i} = q{i}" for i in range(7))
    result = FinetuneResult(
        base={"ndcg@10": 0.5}, tuned={"ndcg@10": 0.5}, comparisons=[], p_value=None, model_path="/m",
        train_pairs=4, seconds=1.0, recovered={}, broken={}, mode="split", evaluated_queries=6,
        cost=Cost(1, 4, 1, 1.0, 6, "cpu", False), excluded_by_text=leaks,
    )  # fmt: skip
    assert result.to_dict()["excluded_by_text"] == list(leaks)
    # 7 pairs: the first 5 shown, then "..."
    assert (
        "the text of an evaluated query: 7 (t0 = q0, t1 = q1, t2 = q2, t3 = q3, t4 = q4, ...)"
        in finetune_text(result)
    )


def test_a_collection_s_own_hnsw_setting_faiss_would_crash_on_is_named_as_the_collection_s():
    space, qrels = _tiny_space()
    served = AnnSetting("hnsw", {"M": 1, "efConstruction": 8, "efSearch": 8})  # max_neighbors 1 in Chroma
    with pytest.raises(DataError) as e:  # main: SIGSEGV inside faiss
        ann_frontier(qrels, space, k=3, settings=[AnnSetting("hnsw", HNSW)], current=served)
    assert e.value.param == "corpus" and "The collection's own HNSW setting {'M': 1" in str(e.value)


def test_finetune_json_carries_the_leak_warning(tmp_path, monkeypatch, capsys):
    """The whole command with a stand-in trainer (the folder it 'saves' loads as the keyword encoder): the JSON has
    the warning its table prints and ``excluded_by_text``."""
    from diagnose.whatif.finetune import train as tr

    monkeypatch.setattr("diagnose.embed.load_encoder", lambda *a, **kw: _NamedKeywordEncoder())
    monkeypatch.setattr(tr, "seconds_per_step", lambda *a, **kw: 0.01)
    monkeypatch.setattr(tr, "train", lambda base, a, p, n, out, settings, progress=False: out)
    root = _leaky(tmp_path / "data", {"t2": "Does sugar and diabetes matter?"})  # q2's question
    argv = ["finetune", "--data", str(root), "--train-split", "train", "--out", str(tmp_path / "out"),
            "--cache-dir", str(tmp_path / "cache")]  # fmt: skip
    assert main(argv) == EXIT_OK
    assert (
        "1 training query of the training split has the text of an evaluation query"
        in capsys.readouterr().err
    )
    assert main([*argv, "--format", "json"]) == EXIT_OK
    payload = json.loads(capsys.readouterr().out)
    assert payload["excluded_by_text"] == ["t2 = q2"]
    assert [w["code"] for w in payload["warnings"]] == ["finetune_query_text_leak"]


def test_risk_of_a_run_alone_carries_its_warnings_in_json(tmp_path, capsys):
    run = tmp_path / "dup.trec"
    run.write_text(
        "q1 Q0 d1 1 3.0 x\nq1 Q0 d1 2 2.0 x\nq2 Q0 d3 1 1.0 x\n", encoding="utf-8"
    )  # d1 twice for q1
    assert main(["risk", "--run", str(run)]) == EXIT_OK
    assert "1 document is listed more than once" in capsys.readouterr().err
    assert _json_warnings(capsys, ["risk", "--run", str(run)]) == {"duplicate_doc_in_run"}
