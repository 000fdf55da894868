"""Writing a golden set: :func:`write_trec_qrels` (``QUERY 0 DOC GRADE``) and :func:`write_beir_qrels` (BEIR's
tab-separated ``query-id corpus-id score`` with its header). Ids that would not read back (holding a tab or a newline,
or in TREC white space) and an empty golden set are refused before anything is written."""

from __future__ import annotations

from pathlib import Path

from diagnose.checks import param_error
from diagnose.data import Qrels
from diagnose.runtime.lazy import pandas as pd

PathLike = str | Path


def _check_writable(qrels: Qrels, path: PathLike, what: str, bad: str, fix: str) -> pd.DataFrame:
    df = qrels.df
    if df.empty:
        raise param_error("qrels", f"{path}: no judgement to write as {what} (judge some pairs first).")
    for col in ("query_id", "doc_id"):
        has = df[col].astype("str").str.contains(bad, regex=True)
        if has.any():
            raise param_error(
                "qrels",
                f"{path}: cannot write {what}: the {col} {str(df.loc[has, col].iloc[0])!r} contains "
                f"whitespace that the format uses as a separator. Fix: {fix}.",
            )
    return df


def write_trec_qrels(qrels: Qrels, path: PathLike) -> None:
    """Write ``qrels`` as TREC qrels, ``qid 0 docid grade`` per line (what ``trec_eval`` and
    :func:`diagnose.io.read_qrels` read). Ids containing whitespace cannot be written (DataError)."""
    df = _check_writable(qrels, path, "TREC qrels", r"\s", "replace the spaces in the ids, or write BEIR TSV")
    lines = [
        f"{q} 0 {d} {int(g)}\n" for q, d, g in zip(df["query_id"], df["doc_id"], df["relevance"], strict=True)
    ]
    Path(path).write_text("".join(lines), encoding="utf-8")


def write_beir_qrels(qrels: Qrels, path: PathLike) -> None:
    """Write ``qrels`` as a BEIR qrels TSV: the header ``query-id<TAB>corpus-id<TAB>score``, then one judgement per
    line. Ids containing a tab or a newline cannot be written (DataError)."""
    df = _check_writable(qrels, path, "BEIR TSV", r"[\t\r\n]", "remove tabs and newlines from the ids")
    lines = ["query-id\tcorpus-id\tscore\n"] + [
        f"{q}\t{d}\t{int(g)}\n" for q, d, g in zip(df["query_id"], df["doc_id"], df["relevance"], strict=True)
    ]
    Path(path).write_text("".join(lines), encoding="utf-8")
