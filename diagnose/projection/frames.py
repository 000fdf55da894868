"""The tables the chart draws: :func:`snippet` (:func:`shorten`), :func:`map_frame` (one row per point, its role
and class), :func:`map_edges` (failed query -> target / top retrieved document) and :func:`map_lines` (the edges of
the selected and the worst failed queries: every failed query's lines are a hairball on a large collection).
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from diagnose import defaults
from diagnose.io.messages import plural_of
from diagnose.projection.sampling import FailedQuery, MapSample
from diagnose.runtime.lazy import pandas as pd

SNIPPET_CHARS = 140


DOC_ROLES = ("target", "retrieved", "document")
QUERY_ROLES = ("failed query", "query")
ROLES = ("failed query", "query", "target", "retrieved", "document")
EDGE_KINDS = ("target", "top retrieved")


# ---------------------------------------------------------------------------------------------------------------
# Tables for the chart
# ---------------------------------------------------------------------------------------------------------------

_TAG = re.compile(r"<[^>]{0,200}>")
_WS = re.compile(r"\s+")


_LONGEST_ENTITY = 33  # "&CounterClockwiseContourIntegral;"


def _clean(text: str) -> str:
    """HTML tags removed, entities decoded, whitespace collapsed."""
    return _WS.sub(" ", html.unescape(_TAG.sub(" ", text))).strip()


def snippet(text: str | None, limit: int = SNIPPET_CHARS) -> str:
    """Plain-text start of ``text``: HTML tags removed, entities decoded, whitespace collapsed, at most ``limit``
    characters, cut at a word boundary when one is in the last 40% and ended with "…" when cut."""
    if not text:
        return ""
    text = str(text)
    # Cleaning a long document whole costs more than the map's other steps: clean a prefix, and keep the result
    # only when it reaches well past the snippet, so that an entity cut at its end ("&nb" of "&nbsp;", at most 32
    # characters) cannot reach the snippet. A tag cut in half is left out of the prefix.
    head = text[: 4 * limit + 256]
    if len(head) < len(text):
        tag = head.rfind("<")
        if tag > head.rfind(">"):
            head = head[:tag]
        t = _clean(head)
        if len(t) <= limit + _LONGEST_ENTITY:  # mostly markup: clean the whole text
            t = _clean(text)
    else:
        t = _clean(text)
    return shorten(t, limit)


def shorten(text: str, limit: int) -> str:
    """``text`` when it has at most ``limit`` characters, else its start cut at a word boundary when one is in the
    last 40%, trailing punctuation dropped, ended with "…" (``limit`` characters at most)."""
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    space = cut.rfind(" ")
    if space >= int(limit * 0.6):
        cut = cut[:space]
    return cut.rstrip(" ,;:.-") + "…"


MAP_COLUMNS = ("x", "y", "kind", "id", "snippet", "role", "failure_class")
EDGE_COLUMNS = ("x", "y", "x2", "y2", "query_id", "edge")


def map_frame(
    coords: np.ndarray,
    sample: MapSample,
    *,
    doc_ids: Sequence[str],
    doc_texts: Sequence[str],
    query_ids: Sequence[str],
    query_texts: Sequence[str],
    failed: Iterable[FailedQuery] = (),
) -> pd.DataFrame:
    """The tidy table the map draws, one row per point, documents first (in ``sample`` order), then queries.

    ``coords``: :attr:`Projection.coords` of ``stack_vectors(sample, ...)``. ``doc_ids/doc_texts`` and
    ``query_ids/query_texts`` are the full aligned lists the sample indexes into.

    Columns: ``x, y`` (float), ``kind`` ("document" | "query"), ``id``, ``snippet`` (first ~140 characters, plain
    text), ``role`` and ``failure_class``. A query's role is "failed query" or "query"; a document's is "target" (a
    missed relevant document of some failed query), else "retrieved" (in the top-k of some failed query), else
    "document". ``failure_class`` is the failed query's class id; "" for every other point (a document can be the
    target of several queries of different classes, so it gets none).
    """
    coords = np.asarray(coords)
    n_d, n_q = len(sample.doc_rows), len(sample.query_rows)
    if coords.shape != (n_d + n_q, 2):
        raise ValueError(
            f"coords has shape {coords.shape}, expected ({n_d + n_q}, 2) for {n_d} documents + {n_q} queries"
        )
    failed = list(failed)
    cls_of = {f.query_id: f.failure_class for f in failed}
    targets = {d for f in failed for d in f.targets}
    retrieved = {d for f in failed for d in f.retrieved}
    d_ids = [str(doc_ids[i]) for i in sample.doc_rows]
    q_ids = [str(query_ids[i]) for i in sample.query_rows]
    d_role = ["target" if d in targets else "retrieved" if d in retrieved else "document" for d in d_ids]
    q_role = ["failed query" if q in cls_of else "query" for q in q_ids]
    return pd.DataFrame(
        {
            "x": coords[:, 0].astype(np.float64),
            "y": coords[:, 1].astype(np.float64),
            "kind": ["document"] * n_d + ["query"] * n_q,
            "id": d_ids + q_ids,
            "snippet": [snippet(doc_texts[i]) for i in sample.doc_rows]
            + [snippet(query_texts[i]) for i in sample.query_rows],
            "role": d_role + q_role,
            "failure_class": [""] * n_d + [cls_of.get(q, "") for q in q_ids],
        },
        columns=list(MAP_COLUMNS),
    )


def map_edges(points: pd.DataFrame, failed: Iterable[FailedQuery]) -> pd.DataFrame:
    """Lines from each failed query on the map to each of its targets and to its top retrieved document.

    Columns ``x, y`` (the query), ``x2, y2`` (the document), ``query_id``, ``edge`` ("target" | "top retrieved").
    Documents or queries not on the map (sampled out cannot happen for must-keep ids; missing from the corpus can)
    get no line. Order: failed queries in the order given, targets before the top retrieved document.
    """
    docs = points[points["kind"] == "document"]
    queries = points[points["kind"] == "query"]
    d_xy = {i: (x, y) for i, x, y in zip(docs["id"], docs["x"], docs["y"], strict=True)}
    q_xy = {i: (x, y) for i, x, y in zip(queries["id"], queries["x"], queries["y"], strict=True)}
    rows: list[tuple[float, float, float, float, str, str]] = []
    for f in failed:
        if f.query_id not in q_xy:
            continue
        qx, qy = q_xy[f.query_id]
        for t in f.targets:
            if t in d_xy:
                rows.append((qx, qy, *d_xy[t], f.query_id, "target"))
        if f.retrieved and f.retrieved[0] in d_xy:
            rows.append((qx, qy, *d_xy[f.retrieved[0]], f.query_id, "top retrieved"))
    return pd.DataFrame(rows, columns=list(EDGE_COLUMNS)).astype(
        {"x": float, "y": float, "x2": float, "y2": float, "query_id": object, "edge": object}
    )


@dataclass(frozen=True)
class MapLines:
    """The lines a map draws (:func:`map_lines`): ``edges`` (rows of :func:`map_edges`), whose they are, and how many
    every failed query's lines would be. ``selected``: the selected query when it failed (its lines are drawn)."""

    edges: pd.DataFrame
    query_ids: tuple[str, ...]
    selected: str | None
    n_worst: int | None  # None: every failed query's lines
    n_all: int

    def legend_title(self) -> list[str]:
        """The lines' legend title, in two short lines: whose lines, then "line to"."""
        if self.n_worst is None:
            return ["Lines of every failed query", "line to"]
        whose = [plural_of(self.n_worst, "worst query", "worst queries")] if self.n_worst else []
        whose = (["the selected query"] if self.selected else []) + whose
        return [f"Lines of {' + '.join(whose) or 'no query'}", "line to"]

    def sentence(self) -> str:
        """Which lines are drawn, for the map's legend."""
        drawn = f"{len(self.edges):,} of {self.n_all:,} lines"
        if self.n_worst is None:
            return f"Lines of every failed query ({len(self.query_ids):,}): {drawn}."
        worst = f"the {self.n_worst} worst failed queries" if self.n_worst != 1 else "the worst failed query"
        who = f"the selected query {self.selected} and {worst}" if self.selected else worst
        return f"Lines of {who} (worst: by their worst missed pair, as on Worst queries): {drawn}."


def map_lines(
    edges: pd.DataFrame,
    worst: Sequence[str],
    selected: str | None = None,
    n_worst: int | None = defaults.MAP_WORST_LINES,
) -> MapLines:
    """The lines of the ``selected`` query (when it is one of the failed queries ``worst``) and of the first
    ``n_worst`` of ``worst`` (the failed queries worst first, :func:`diagnose.failures.worst_queries`); ``n_worst``
    None: every failed query's. ``edges``: :func:`map_edges`."""
    if n_worst is not None and n_worst < 0:
        raise ValueError(f"n_worst must be at least 0 or None, got {n_worst}")
    selected = selected if selected in set(worst) else None
    keep = (
        list(worst)
        if n_worst is None
        else list(dict.fromkeys([*([selected] if selected else []), *worst[:n_worst]]))
    )
    drawn = edges[edges["query_id"].isin(keep)]
    return MapLines(drawn, tuple(keep), selected, n_worst, len(edges))
