"""The records every other module speaks: corpus, queries, qrels, runs, and the validation report.

Tables are pandas DataFrames with fixed column names, so the heavy work stays vectorised. A run's and a golden
set's table may also be held as an Arrow table with the same columns (what the fast readers of :mod:`diagnose.io`
build): ``.df`` converts it on first read, and the metrics, the tie audit and the checks read the Arrow columns
(:mod:`diagnose.runtime.frames`), so ``diagnose evaluate`` never imports pandas (:mod:`diagnose.runtime.lazy`).

- ``Corpus.df``:  ``doc_id`` (str, unique), ``title`` (str), ``text`` (str), plus any metadata columns.
- ``Queries.df``: ``query_id`` (str, unique), ``text`` (str), plus any metadata columns.
- ``Qrels.df``:   ``query_id`` (str), ``doc_id`` (str), ``relevance`` (int64). A document is relevant when
  its grade is > 0 (trec_eval's default relevance level 1 on integer grades).
- ``Run.df``:     ``query_id`` (str), ``doc_id`` (str), ``score`` (float64), ``rank`` (int64, 1-based). Rows are
  in final rank order within each query; the reader that built the run decided that order (see ``diagnose.io``).

A problem the user caused and that makes going on impossible raises :class:`DataError` (:mod:`diagnose.errors`), whose message names the
file, the line or id, and the fix. Everything else is counted in a :class:`ValidationReport`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import numpy as np

from diagnose.errors import DataError
from diagnose.runtime.frames import FrameField, Tabular, arrow_strings, is_arrow_table
from diagnose.runtime.lazy import pandas as pd

if TYPE_CHECKING:
    import pyarrow as pa

Severity = Literal["error", "warning", "info"]


@dataclass(frozen=True)
class Problem:
    """One kind of problem found in the input, with how often it happened and a few examples."""

    code: str
    severity: Severity
    message: str
    file: str | None = None
    count: int = 1
    examples: tuple[str, ...] = ()

    def to_dict(self) -> dict:
        return {**fields_dict(self), "examples": list(self.examples)}

    def format(self) -> str:
        where = f"{self.file}: " if self.file else ""
        count = f" ({self.count}x)" if self.count != 1 else ""
        text = f"[{self.severity}] {where}{self.message}{count}"
        if self.examples:
            text += "\n    e.g. " + "\n    e.g. ".join(self.examples)
        return text


MAX_EXAMPLES = 5


@dataclass
class ValidationReport:
    """Counted problems of the input. Nothing is dropped without a line here."""

    problems: list[Problem] = field(default_factory=list)
    stats: dict[str, int | float | str] = field(default_factory=dict)

    def add(
        self,
        code: str,
        message: str,
        *,
        severity: Severity = "warning",
        file: str | None = None,
        count: int = 1,
        examples: Iterable[str] = (),
    ) -> None:
        if count <= 0:
            return
        ex = tuple(str(e) for e in list(examples)[:MAX_EXAMPLES])
        self.problems.append(Problem(code, severity, message, file, int(count), ex))

    def extend(self, other: ValidationReport) -> None:
        self.problems.extend(other.problems)
        self.stats.update(other.stats)

    def __iter__(self) -> Iterator[Problem]:
        return iter(self.problems)

    def __len__(self) -> int:
        return len(self.problems)

    @property
    def warnings(self) -> list[Problem]:
        return [p for p in self.problems if p.severity in ("warning", "error")]

    def by_code(self, code: str) -> list[Problem]:
        return [p for p in self.problems if p.code == code]

    def to_dict(self) -> dict:
        return {"problems": [p.to_dict() for p in self.problems], "stats": dict(self.stats)}

    def format(self) -> str:
        if not self.problems:
            return "No problems found in the input."
        return "\n".join(p.format() for p in self.problems)


def json_default(o: Any) -> Any:
    """``json.dumps(..., default=json_default)``: numpy scalars and arrays as plain numbers and lists."""
    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def fields_dict(record: Any, *names: str, rename: Mapping[str, str] | None = None) -> dict[str, Any]:
    """``{name: getattr(record, name)}`` over ``names`` (none given: every dataclass field, in declaration order),
    keys renamed by ``rename`` in place; shallow (values are the record's own, not copies as with
    :func:`dataclasses.asdict`).

    The ``to_dict`` methods start from it; a value that needs converting is set after, and its key keeps its place:
    ``{**fields_dict(self), "examples": list(self.examples)}``."""
    rename = rename or {}
    return {rename.get(n, n): getattr(record, n) for n in names or [f.name for f in fields(record)]}


def document_text(title: str, text: str) -> str:
    """The text that is embedded and indexed for a document: ``title + " " + text`` (BEIR's convention)."""
    title = title or ""
    text = text or ""
    return f"{title} {text}".strip() if title else text


class _Texts:
    """What the corpus and the queries share: a table of texts keyed by a unique id column (``_id``), counted in
    ``_noun`` by ``len`` and ``repr``."""

    df: pd.DataFrame
    source: str
    _id: ClassVar[str]
    _noun: ClassVar[str]

    def __len__(self) -> int:
        return len(self.df)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({len(self):,} {self._noun}{_from(self.source)})"

    @property
    def ids(self) -> np.ndarray:
        return self.df[self._id].to_numpy()


@dataclass(frozen=True)
class ChunkMap:
    """The documents of a chunk corpus (:mod:`diagnose.io.chunks`): ``parent[chunk_id]`` is the chunk's document;
    ``start``/``end`` (``{chunk_id: offset}``, or None without offsets) its character offsets into that document
    (``document[start:end]`` is the chunk's text). ``how`` says where the parents came from (``"metadata key
    'doc_id'"``, ``"id pattern DOC#N"``) and ``offsets`` which keys gave the offsets (``""``: none)."""

    parent: Mapping[str, str]
    start: Mapping[str, int] | None = None
    end: Mapping[str, int] | None = None
    how: str = ""
    offsets: str = ""

    @property
    def n_documents(self) -> int:
        """How many documents the chunks come from."""
        return len(set(self.parent.values()))

    @property
    def has_offsets(self) -> bool:
        return self.start is not None and self.end is not None

    def document_of(self, doc_id: str) -> str:
        """The document of a chunk id; any other id (a document id, a placeholder) is its own document."""
        return self.parent.get(doc_id, doc_id)


@dataclass(frozen=True, repr=False)
class Corpus(_Texts):
    """The documents: ``df`` with ``doc_id``, ``title``, ``text`` (+ metadata columns). ``ids`` is the id
    column (an array); ``texts()`` joins title and text (a method: it builds a new list). ``chunks``: for a
    corpus of chunks, each chunk's document and offsets (:class:`ChunkMap`, :mod:`diagnose.io.chunks`); None for a
    corpus of documents."""

    df: pd.DataFrame
    source: str = ""
    chunks: ChunkMap | None = field(default=None, compare=False)
    _id: ClassVar[str] = "doc_id"
    _noun: ClassVar[str] = "documents"

    def texts(self) -> list[str]:
        """Title and text joined, in corpus order (see :func:`document_text`)."""
        return [
            document_text(t, x)
            for t, x in zip(self.df["title"].tolist(), self.df["text"].tolist(), strict=True)
        ]

    def joined_texts(self, rows: slice | None = None) -> pa.Array:
        """Title and text joined by a space, in corpus order (of the documents at ``rows`` only, a slice), as one
        Arrow ``large_string`` array: no Python string per document. Not stripped, unlike :meth:`texts`: for
        tokenizers and hashes, to which separators at the ends make no difference."""
        import pyarrow as pa
        import pyarrow.compute as pc

        df = self.df if rows is None else self.df.iloc[rows]
        title, text = (pc.fill_null(arrow_strings(df[c]), "") for c in ("title", "text"))
        return pc.binary_join_element_wise(title, text, pa.scalar(" ", pa.large_string()))

    def size_phrase(self) -> str:
        """How many records, in words: "3,633 documents", or "12,772 chunks of 3,633 documents" for a chunk corpus."""
        if self.chunks is None:
            return f"{len(self):,} documents"
        return f"{len(self):,} chunks of {self.chunks.n_documents:,} documents"

    def texts_at(self, rows: slice | Sequence[int]) -> list[str]:
        """:meth:`texts` of the documents at ``rows`` (corpus positions: a slice or a list) only: a large corpus'
        whole list is GBs of strings, which a caller that reads a few documents, or a block at a time, never holds."""
        if isinstance(rows, slice):  # a block: the columns' slices are views
            sub = self.df.iloc[rows]
            return [
                document_text(t, x) for t, x in zip(sub["title"].tolist(), sub["text"].tolist(), strict=True)
            ]
        # row by row: a take over the frame's (Arrow, many-chunk) columns costs ~ms per call, an item ~20 us
        title, text = self.df["title"].array, self.df["text"].array
        return [document_text(title[i], text[i]) for i in np.asarray(rows, dtype=np.int64).tolist()]

    def index_of(self) -> dict[str, int]:
        return {d: i for i, d in enumerate(self.df["doc_id"].tolist())}


@dataclass(frozen=True, repr=False)
class Queries(_Texts):
    """The queries: ``df`` with ``query_id``, ``text`` (+ metadata columns)."""

    df: pd.DataFrame
    source: str = ""
    _id: ClassVar[str] = "query_id"
    _noun: ClassVar[str] = "queries"

    def text_of(self) -> dict[str, str]:
        return dict(zip(self.df["query_id"].tolist(), self.df["text"].tolist(), strict=True))


@dataclass(frozen=True)
class Span:
    """Where one reference context of a golden set lies in the corpus (:mod:`diagnose.io.spans`).

    ``reference`` is the context's position among its query's reference contexts (0-based); ``start``/``end`` are
    character offsets into the document's ``text`` field (``text[start:end]``; the title is not searched).
    ``match`` is ``exact``, ``normalised``, ``approximate`` or ``unmatched``; an unmatched reference has
    ``doc_id``/``start``/``end`` None. A reference found in several documents gives one Span per document
    (ambiguous: all count). ``score`` is the similarity in [0, 100] (100 for exact and normalised matches)."""

    query_id: str
    reference: int
    doc_id: str | None
    start: int | None
    end: int | None
    match: str
    score: float = 100.0


@dataclass(frozen=True)
class Qrels(Tabular):
    """The golden set: ``df`` with ``query_id``, ``doc_id``, ``relevance`` (an integer grade; > 0 is relevant);
    given as a DataFrame or an Arrow table with those columns (see the module docstring).

    ``spans``: for a golden set of reference contexts, where each context was found (:class:`Span`); empty for
    id-based qrels."""

    df: pd.DataFrame = FrameField()
    source: str = ""
    spans: tuple[Span, ...] = field(default=(), compare=False, repr=False)

    def __repr__(self) -> str:
        n_q = len(self.unique("query_id"))
        return f"Qrels({len(self):,} judgements of {n_q:,} queries{_from(self.source)})"

    def relevant(self) -> pd.DataFrame:
        """Judgements with grade > 0."""
        return self.df[self.df["relevance"] > 0]

    def query_ids(self) -> list[str]:
        """Every judged query, in first-seen order."""
        return self.unique("query_id")

    def queries_with_relevant(self) -> list[str]:
        """Every query with a relevant document (grade > 0), in first-seen order."""
        held = self._held()
        if is_arrow_table(held):
            import pyarrow.compute as pc

            from diagnose.runtime.arrays import arrow_of, numpy_of

            relevant = held.column("query_id").filter(arrow_of(numpy_of(held.column("relevance")) > 0))
            return pc.unique(relevant).to_pylist()
        return list(pd.unique(self.relevant()["query_id"]))

    def as_dict(self) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        cols = (self.df["query_id"].tolist(), self.df["doc_id"].tolist(), self.df["relevance"].tolist())
        for q, d, r in zip(*cols, strict=True):
            out.setdefault(q, {})[d] = int(r)
        return out


@dataclass(frozen=True)
class Run(Tabular):
    """A ranked result list per query (``df``, see the module docstring; a DataFrame or an Arrow table with its
    columns), with where it came from.

    ``latency_ms`` and ``errors`` are filled only by :func:`diagnose.retrievers.run_retriever` (a live retriever):
    the wall-clock milliseconds of each query that returned, and ``{query_id: "ExceptionType: message"}`` for each
    query whose retriever call raised (such a query has no rows, so metrics score it 0 like ``trec_eval -c``).
    Both are ``None`` for runs read from files and are ignored by ``==``.
    """

    name: str
    df: pd.DataFrame = FrameField()
    source: str = ""
    latency_ms: dict[str, float] | None = field(default=None, compare=False, repr=False)
    errors: dict[str, str] | None = field(default=None, compare=False, repr=False)

    def __repr__(self) -> str:
        n_q = len(self.query_ids())
        return f"Run({self.name!r}: {len(self):,} rows for {n_q:,} queries{_from(self.source)})"

    def query_ids(self) -> list[str]:
        return self.unique("query_id")

    def keep_trec_order(self) -> None:
        """Record that the held Arrow table lists the rows in trec_eval's order: queries in blocks, each by float32
        score descending, ties by doc id descending, ranks 1..n (the TREC reader sorted them so). The tie audit
        then neither checks the order nor compares the tied doc ids again."""
        if self.is_arrow():
            self.__dict__["_trec_order_of"] = self._held()

    def known_trec_order(self) -> bool:
        """Whether :meth:`keep_trec_order` was recorded for the table held now (False after ``df`` is set)."""
        return self.__dict__.get("_trec_order_of") is self._held()

    def depth(self) -> int:
        """The longest ranked list of any query."""
        return int(self.numbers("rank").max()) if len(self) else 0

    def top(self, k: int) -> pd.DataFrame:
        return self.df[self.df["rank"] <= k]

    def ranked_lists(self) -> dict[str, list[str]]:
        """``{query_id: [doc_id, ...]}`` in rank order. (Columns go through ``tolist()`` first: iterating an
        Arrow-backed string column element by element is ~7x slower.)"""
        out: dict[str, list[str]] = {}
        for q, d in zip(self.df["query_id"].tolist(), self.df["doc_id"].tolist(), strict=True):
            out.setdefault(q, []).append(d)
        return out

    @classmethod
    def from_ranked_lists(cls, name: str, lists: dict[str, list[tuple[str, float]]], source: str = "") -> Run:
        """Build a run from ``{query_id: [(doc_id, score), ...]}`` already in rank order."""
        q, d, s, r = [], [], [], []
        for qid, items in lists.items():
            for i, (doc, score) in enumerate(items, start=1):
                q.append(qid)
                d.append(doc)
                s.append(float(score))
                r.append(i)
        df = pd.DataFrame(
            {
                "query_id": pd.Series(q, dtype=object),
                "doc_id": pd.Series(d, dtype=object),
                "score": np.asarray(s, dtype=np.float64),
                "rank": np.asarray(r, dtype=np.int64),
            }
        )
        return cls(name, df, source)


@dataclass
class Dataset:
    """Everything one evaluation or diagnosis looks at. ``corpus`` and ``queries`` may be absent for `evaluate`."""

    qrels: Qrels
    runs: dict[str, Run] = field(default_factory=dict)
    corpus: Corpus | None = None
    queries: Queries | None = None
    report: ValidationReport = field(default_factory=ValidationReport)
    name: str = ""

    def with_run(self, run: Run, *, first: bool = False) -> Dataset:
        """The same data set with ``run`` added under its name (first of :attr:`runs` when ``first``, e.g. a
        reference to compare with), everything else shared, the report included; this data set is not changed.
        The run is taken as given: check it against the golden set first
        (:func:`diagnose.io.check_run_matches_qrels`)."""
        if run.name in self.runs:
            raise DataError(
                f"A run is already named {run.name!r}; give the new run another name.", param="run"
            )
        runs = {run.name: run, **self.runs} if first else {**self.runs, run.name: run}
        return replace(self, runs=runs)

    def __repr__(self) -> str:
        parts = [
            f"{len(self.corpus):,} documents" if self.corpus is not None else "no corpus",
            f"{len(self.queries):,} queries" if self.queries is not None else "no queries",
            f"{len(self.qrels):,} judgements ({len(self.qrels.queries_with_relevant()):,} golden queries)",
            f"{len(self.runs)} run{'s' if len(self.runs) != 1 else ''}"
            + (f" ({', '.join(self.runs)})" if self.runs else ""),
            f"{len(self.report.warnings)} warning{'s' if len(self.report.warnings) != 1 else ''}",
        ]
        return f"Dataset({self.name!r}: " + ", ".join(parts) + ")"


def _from(source: str) -> str:
    return f" from {source}" if source else ""
