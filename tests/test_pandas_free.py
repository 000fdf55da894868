"""``diagnose evaluate`` without pandas: runs and golden sets held as Arrow tables, pandas imported on first use
(:mod:`diagnose.runtime.lazy`), columns moved between Arrow and numpy through their buffers, so that pyarrow's
converters never import pandas on their own (:mod:`diagnose.runtime.arrays`), a run's doc-id fingerprints hashed once;
nor the domain modules of the other commands, which the analysis layers import in the steps that use them.

The process-level checks run in a fresh interpreter (``sys.executable``): the test process has pandas loaded."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from diagnose.data import Qrels, Run, ValidationReport
from diagnose.io import read_qrels, read_run
from diagnose.metrics import evaluate
from diagnose.runtime.ids import _hash, fingerprints, known_fingerprints, take

ROOT = Path(__file__).resolve().parents[1]


def _python(code: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )


def _files(tmp_path: Path) -> tuple[Path, Path]:
    """A TREC run with a score tie across the cutoff and a repeated document, and graded TREC qrels."""
    run = tmp_path / "run.trec"
    run.write_text(
        "q1 Q0 d1 1 3.0 t\nq1 Q0 d2 2 2.0 t\nq1 Q0 d3 3 2.0 t\nq1 Q0 d1 4 1.0 t\n"
        "q2 Q0 d4 1 5.0 t\nq2 Q0 d5 2 4.0 t\nq3 Q0 d9 1 1.0 t\n"
    )
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d3 2\nq1 0 d1 0\nq2 0 d5 1\nq2 0 d6 1\nq4 0 d7 1\n")
    return run, qrels


#: What ``diagnose evaluate`` on files has no use for: the domain packages of the other commands (the failure taxonomy
#: and its reports, vectors, BM25, baselines, filters, remedies, risk, maps, charts, chunking, fine-tuning, judging,
#: vector databases) and the heavy libraries they bring. main 3e8ab69 imported every one of the diagnose modules.
NOT_FOR_EVALUATE = (
    "diagnose.api", "diagnose.search.baselines", "diagnose.cache", "diagnose.charts", "diagnose.whatif.chunking",
    "diagnose.failures.split", "diagnose.embed", "diagnose.failures", "diagnose.io.filters", "diagnose.whatif.finetune",
    "diagnose.failures.inspection", "diagnose.judging", "diagnose.lexical", "diagnose.metrics.context", "diagnose.whatif.model_choice",
    "diagnose.projection", "diagnose.whatif.remedies", "diagnose.whatif.matrix", "diagnose.report.failures", "diagnose.failures.risk",
    "diagnose.search.space", "diagnose.io.vectordb",
    "scipy", "sklearn", "torch", "sentence_transformers", "umap", "altair", "bm25s",
)  # fmt: skip


def test_diagnose_evaluate_imports_only_what_it_needs_and_prints_what_the_library_computes(tmp_path):
    run, qrels = _files(tmp_path)
    out = _python(
        """
        import contextlib, io, json, sys
        from diagnose.cli import main
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            code = main(["evaluate", "--qrels", sys.argv[1], "--run", "r=" + sys.argv[2], "--k", "1,2",
                         "--format", "json"])
        unused = tuple(sys.argv[3].split(","))
        loaded = sorted(m for m in sys.modules if m in unused or m.startswith(tuple(p + "." for p in unused)))
        print(json.dumps({"code": code, "pandas": "pandas" in sys.modules, "loaded": loaded,
                          "report": json.loads(buf.getvalue())}))
        """,
        str(qrels),
        str(run),
        ",".join(NOT_FOR_EVALUATE),
    )
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["code"] == 0
    assert got["pandas"] is False  # the old code imported pandas (~0.5 s) before reading a line
    assert got["loaded"] == []  # main 3e8ab69 imported ~75 modules of the other commands (0.1-0.2 s)
    # the same numbers as the library in this process (pandas loaded, DataFrames built)
    ev = evaluate(read_qrels(qrels), read_run(run, name="r"), ["ndcg@2", "recall@1", "map"])
    aggregate = got["report"]["runs"]["r"]["aggregate"]
    for name, value in ev.aggregate.items():
        assert aggregate[name] == value
    # the audit saw the tie d2/d3 at ranks 2-3 (across k=2) and the repeated d1 was dropped with a warning
    assert got["report"]["ties"]["r"]["n_queries_crossing_cutoff"] == 1
    assert "queries" not in got["report"]["ties"]["r"]  # per-query ranges only with --per-query


def test_pyarrow_compute_is_imported_on_first_use_beside_the_runs_reading(tmp_path):
    """``import pyarrow.compute`` builds ~300 wrappers with their docstrings (~50 ms). Importing the command line
    loads it no more: the first compute call does, in the main thread reading the golden set, while the runs' thread
    parses its CSV. The UTF-8 check of a file needs none (``Array.validate``); a bad byte is still found."""
    run, qrels = _files(tmp_path)
    bad = tmp_path / "bad.trec"
    bad.write_bytes(run.read_bytes().replace(b"d4", b"d\xff4"))
    out = _python(
        """
        import contextlib, io, json, sys, threading
        import diagnose.cli
        at_import = "pyarrow.compute" in sys.modules
        from diagnose.io import read_run
        from diagnose.data import ValidationReport
        report = ValidationReport()
        read_run(sys.argv[2], report=report)
        print(json.dumps({"at_import": at_import, "after": "pyarrow.compute" in sys.modules,
                          "codes": [p.code for p in report]}))
        """,
        str(qrels),
        str(bad),
    )
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert (got["at_import"], got["after"]) == (False, True)
    assert "non_utf8" in got["codes"]


def test_a_run_read_from_a_file_is_held_as_arrow_and_reads_as_before(tmp_path):
    run_file, qrels_file = _files(tmp_path)
    report = ValidationReport()
    run = read_run(run_file, name="r", report=report)
    assert isinstance(run.__dict__["_df_value"], pa.Table)  # nothing converted yet
    assert len(run) == 6 and run.depth() == 3 and run.query_ids() == ["q1", "q2", "q3"]
    assert report.by_code("duplicate_doc_in_run")[0].count == 1
    df = run.df  # built on first read, kept
    assert run.df is df
    assert list(df.columns) == ["query_id", "doc_id", "score", "rank"]
    assert [str(t) for t in df.dtypes] == ["str", "str", "float64", "int64"]
    # trec_eval order: score descending, ties by doc id descending (d3 before d2)
    assert df["doc_id"].tolist() == ["d1", "d3", "d2", "d4", "d5", "d9"]
    assert df["rank"].tolist() == [1, 2, 3, 1, 2, 1]
    # a Run built from the same frame scores the same as the Arrow-held one
    again = Run("r", df.copy())
    qrels = read_qrels(qrels_file)
    assert isinstance(qrels.__dict__["_df_value"], pa.Table)
    a = evaluate(qrels, run, ["ndcg@3", "map", "judged@2"])
    b = evaluate(Qrels(qrels.df.copy()), again, ["ndcg@3", "map", "judged@2"])
    assert a.aggregate == b.aggregate
    pd.testing.assert_frame_equal(a.per_query, b.per_query)


def test_qrels_repeated_pairs_keep_the_first_grade_and_queries_without_relevant_are_counted(tmp_path):
    f = tmp_path / "q.txt"
    f.write_text("q1 0 d1 1\nq1 0 d1 2\nq2 0 d2 0\nq1 0 d3 0\nq3 0 d1 1\nq2 0 d2 0\n")
    report = ValidationReport()
    q = read_qrels(f, report=report)
    assert q.df.values.tolist() == [["q1", "d1", 1], ["q2", "d2", 0], ["q1", "d3", 0], ["q3", "d1", 1]]
    dup = report.by_code("duplicate_judgement")[0]
    assert (
        dup.count == 2 and "(1 with a different grade)" in dup.message
    )  # (q1,d1) 1 then 2; (q2,d2) 0 then 0
    assert report.by_code("query_without_relevant")[0].examples == ("q2",)
    assert report.stats["qrels_queries"] == 3 and report.stats["golden_queries"] == 2
    assert q.queries_with_relevant() == ["q1", "q3"]


def test_a_take_carries_the_fingerprints_it_took():
    ids = pa.array([f"doc-{i}" for i in range(50)] + ["x" * 600], type=pa.large_string())
    fps = fingerprints(ids)
    assert known_fingerprints(ids) is fps and not fps.flags.writeable  # kept, shared read-only
    rows = np.array([50, 3, 3, 0, 49])
    sub = take(ids, rows)
    assert known_fingerprints(sub) is not None
    assert np.array_equal(fingerprints(sub), _hash(sub))  # what hashing the subset itself gives
    fresh = pa.array(ids.to_pylist(), type=pa.large_string())  # equal strings, another object: hashed
    assert known_fingerprints(fresh) is None
    assert np.array_equal(fingerprints(fresh), fps)


DEMO = ROOT / "demo_corpus"
VARIANTS = {
    "two runs, markdown, per query, bounds, detect, slice, gate": [
        "--data", str(DEMO), "--run", f"a={DEMO / 'runs' / 'ann_minilm.trec'}",
        "--run", f"b={DEMO / 'runs' / 'bm25_langchain.trec'}", "--format", "markdown", "--per-query", "--bounds",
        "--detect", "0.05", "--slice", "area", "--fail-under", "ndcg@10=0.9",
    ],
    "a reference file, csv, per query": [
        "--qrels", str(DEMO / "qrels" / "test.tsv"), "--run", f"a={DEMO / 'runs' / 'ann_minilm.trec'}",
        "--compare-to", f"base={DEMO / 'runs' / 'bm25_langchain.trec'}", "--format", "csv", "--per-query",
        "--max-drop", "ndcg@10=0.01", "--k", "1,5",
    ],
}  # fmt: skip


def test_what_evaluate_prints_without_pandas_is_what_it_prints_with_it(capsys):
    """Every output of ``diagnose evaluate`` (formats, comparisons, paired tests, bounds, slices, gates) the same in
    a fresh process, where pandas is imported late or never, as here, where pandas is loaded."""
    from diagnose.cli import main

    for name, argv in VARIANTS.items():
        code = main(["evaluate", *argv])
        here = capsys.readouterr()
        out = _python(
            """
            import sys
            from diagnose.cli import main
            sys.exit(main(["evaluate", *sys.argv[1:]]))
            """,
            *argv,
        )
        assert out.returncode == code, (name, out.stderr[-2000:])
        assert out.stdout == here.out, name
        assert out.stderr == here.err, name


def test_a_lazy_module_read_by_two_threads_at_once_waits_for_the_import(tmp_path, monkeypatch):
    """While one thread imports the module, ``sys.modules`` already holds it half-initialised: a second thread's read
    waits for the import to finish instead of reading an attribute that does not exist yet."""
    import threading

    from diagnose.runtime.lazy import LazyModule

    (tmp_path / "slow_to_import_mod.py").write_text("import time\ntime.sleep(0.3)\nVALUE = 42\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "slow_to_import_mod", raising=False)
    lazy = LazyModule("slow_to_import_mod")
    got: list[object] = []

    def read() -> None:
        try:
            got.append(lazy.VALUE)
        except AttributeError as e:
            got.append(e)

    threads = [threading.Thread(target=read) for _ in range(2)]
    threads[0].start()
    while "slow_to_import_mod" not in sys.modules:  # the first thread is inside the import
        pass
    threads[1].start()
    for t in threads:
        t.join()
    assert got == [42, 42]
