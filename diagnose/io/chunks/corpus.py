"""Which document each chunk of a corpus belongs to, and where in it: :func:`chunk_map` builds the
:class:`~diagnose.data.ChunkMap` of ``Corpus.chunks`` (:func:`with_chunks`); :func:`document_texts` rebuilds the
documents' texts from their chunks and offsets.

**Parents.** ``parent_field`` (``diagnose.load(parent_field=...)``, ``--parent-field``) names a metadata key of the
corpus records (a column of a CSV/Parquet corpus; a JSONL record's key or ``metadata`` key, which the corpus reader
flattens into columns, :mod:`diagnose.io.records`) holding each chunk's document id; every chunk must have one. Or
``parent_field="DOC#N"`` (:data:`PATTERN`): the document id is the chunk id up to its last ``#`` followed by digits
(``MED-10#3`` -> ``MED-10``). Without ``parent_field`` the pattern is **detected** when every id matches it and some
document has two or more chunks (an info line says so); otherwise the corpus is a corpus of documents.

**Offsets** (optional), read from the first pair of keys present on every chunk (:data:`OFFSET_KEYS`): ``start`` /
``end``; ``start_index`` (what LangChain's text splitters write with ``add_start_index=True``; the end is ``start +
len(text)``); ``start_char_idx`` / ``end_char_idx`` (LlamaIndex nodes). Offsets are character positions in the
document's text; a chunk's text is the document's ``text[start:end]``. Keys present on only some chunks, or values
that are not non-negative integers, are a warning and no offsets are used. Without offsets, relevance comes from
ids or from reference contexts located in the chunks themselves, and the ``split`` class is never used.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace

import numpy as np

from diagnose.data import ChunkMap, Corpus, DataError, ValidationReport
from diagnose.io.messages import plural_of
from diagnose.runtime.lazy import pandas as pd

#: ``parent_field`` value that reads the document id from the chunk id, ``DOCUMENT#N``
PATTERN = "DOC#N"
_PATTERN_RE = re.compile(r"^(.+)#(\d+)$")
#: the columns of a corpus record; a metadata key of one of these names is read as ``metadata.KEY``
#: (:mod:`diagnose.io.records`): ``parent_field="doc_id"`` (LangChain's MultiVectorRetriever) names that key
CORE_COLUMNS = ("doc_id", "title", "text")
#: the offset keys read, in this order: (start key, end key or None for start + len(text))
OFFSET_KEYS: tuple[tuple[str, str | None], ...] = (
    ("start", "end"),
    ("start_index", None),
    ("start_char_idx", "end_char_idx"),
)


def with_chunks(corpus: Corpus, parent_field: str | None, report: ValidationReport) -> Corpus:
    """``corpus`` with its :class:`~diagnose.data.ChunkMap` (:func:`chunk_map`), or as it is for a corpus of
    documents."""
    cmap = chunk_map(corpus.df, parent_field, report=report, file=corpus.source)
    return corpus if cmap is None else replace(corpus, chunks=cmap)


def chunk_map(
    df: pd.DataFrame, parent_field: str | None, *, report: ValidationReport, file: str | None = None
) -> ChunkMap | None:
    """The chunk map of a corpus table (``doc_id``, ``text`` and metadata columns; module docstring), or None when
    the corpus is a corpus of documents (no ``parent_field`` and no detected ``DOC#N`` ids)."""
    ids = df["doc_id"].astype(str).tolist()
    if parent_field is None:
        parent = _pattern_parents(ids)
        if parent is None or len(set(parent.values())) == len(ids):
            return None
        how = f"id pattern {PATTERN} (detected: every id is DOCUMENT#NUMBER)"
    elif parent_field == PATTERN:
        parent = _pattern_parents(ids)
        if parent is None:
            bad = [i for i in ids if not _PATTERN_RE.match(i)]
            raise DataError(
                f"{file or 'corpus'}: parent_field={PATTERN!r} reads the document id from chunk ids written "
                f"DOCUMENT#NUMBER, but {len(bad)} of the {len(ids)} ids do not look like that (e.g. "
                f"{', '.join(map(repr, bad[:5]))}). Fix: name the metadata key holding each chunk's document "
                "instead (parent_field='doc_id').",
                param="parent_field",
            )
        how = f"id pattern {PATTERN}"
    else:
        parent = _field_parents(df, ids, parent_field, file)
        how = f"metadata key {parent_field!r}"
    start, end, offsets = _offsets(df, ids, report, file)
    if offsets:
        _check_layout(
            parent, start, end, dict(zip(ids, df["text"].astype(str).tolist(), strict=True)), report, file
        )
    cmap = ChunkMap(parent, start, end, how=how, offsets=offsets)
    n_docs = cmap.n_documents
    report.stats["chunks"] = len(ids)
    report.stats["chunk_documents"] = n_docs
    report.add(
        "chunk_corpus",
        f"a corpus of {len(ids):,} chunks of {n_docs:,} documents (documents from the {how}; "
        f"offsets: {offsets or 'none'}); metrics are reported at the chunk and at the document level",
        severity="info",
        file=file,
    )
    return cmap


def _pattern_parents(ids: list[str]) -> dict[str, str] | None:
    """``{chunk: document}`` by :data:`PATTERN`, or None when some id does not match it."""
    out = {}
    for i in ids:
        m = _PATTERN_RE.match(i)
        if m is None:
            return None
        out[i] = m.group(1)
    return out


def _field_parents(df: pd.DataFrame, ids: list[str], key: str, file: str | None) -> dict[str, str]:
    """``{chunk: document}`` from the column ``key``; a missing column or a chunk without a value is fatal."""
    if key in CORE_COLUMNS and f"metadata.{key}" in df.columns:
        key = f"metadata.{key}"  # the user's key, kept qualified beside the column of that name (doc_id: the id)
    elif key in ("doc_id", "text"):
        # the chunk's own id or text: every chunk would be a document of its own (or of the chunks with its text)
        meta = [c for c in df.columns if c not in CORE_COLUMNS]
        raise DataError(
            f"{file or 'corpus'}: parent_field={key!r} names the chunk's own {'id' if key == 'doc_id' else 'text'}, "
            f"not a metadata key holding its document (the records' metadata keys: "
            f"{', '.join(map(repr, meta)) or 'none'}). Fix: name the key holding the document id "
            f"(--parent-field / parent_field=), or use parent_field={PATTERN!r} for ids written DOCUMENT#NUMBER.",
            param="parent_field",
        )
    if key not in df.columns:
        meta = [c for c in df.columns if c not in CORE_COLUMNS]
        raise DataError(
            f"{file or 'corpus'}: no metadata key {key!r} to read each chunk's document from (the records' other "
            f"keys: {', '.join(map(repr, meta)) or 'none'}). Fix: name the key holding the document id "
            f"(--parent-field / parent_field=), or use parent_field={PATTERN!r} for ids written DOCUMENT#NUMBER.",
            param="parent_field",
        )
    values = df[key].astype(object).where(df[key].notna(), None).tolist()
    text = ["" if v is None else str(v).strip() for v in values]
    empty = [i for i, v in zip(ids, text, strict=True) if not v]
    if empty:
        raise DataError(
            f"{file or 'corpus'}: {len(empty)} of the {len(ids)} chunks have no {key!r} (e.g. "
            f"{', '.join(map(repr, empty[:5]))}): every chunk needs its document. Fix: write the "
            "document id into every chunk's metadata, or drop the chunks that belong to no document.",
            param="parent_field",
        )
    if all(p == i for p, i in zip(text, ids, strict=True)):
        raise DataError(
            f"{file or 'corpus'}: the key {key!r} holds each chunk's own id, not its document's. Fix: name the key "
            f"that holds each chunk's document id (e.g. 'parent' or 'source'), or parent_field={PATTERN!r} for ids "
            "written DOCUMENT#NUMBER.",
            param="parent_field",
        )
    return dict(zip(ids, text, strict=True))


def _offsets(
    df: pd.DataFrame, ids: list[str], report: ValidationReport, file: str | None
) -> tuple[dict[str, int] | None, dict[str, int] | None, str]:
    """``(start, end, keys read)`` from the first pair of :data:`OFFSET_KEYS` present (module docstring)."""
    for skey, ekey in OFFSET_KEYS:
        if skey not in df.columns or (ekey is not None and ekey not in df.columns):
            continue
        start = pd.to_numeric(df[skey], errors="coerce").to_numpy(dtype=np.float64)
        if ekey is None:
            lengths = df["text"].astype(str).str.len().to_numpy(dtype=np.float64)
            end = start + lengths
        else:
            end = pd.to_numeric(df[ekey], errors="coerce").to_numpy(dtype=np.float64)
        ok = np.isfinite(start) & np.isfinite(end) & (start >= 0) & (end >= start)
        ok &= (start == np.floor(start)) & (end == np.floor(end))
        keys = skey if ekey is None else f"{skey}/{ekey}"
        if not ok.all():
            bad = [i for i, good in zip(ids, ok.tolist(), strict=True) if not good]
            report.add(
                "chunk_offsets_unusable",
                f"{len(bad)} of the {len(ids)} chunks have no usable offsets {keys} (missing, "
                "negative, not whole numbers, or the end before the start), so no chunk's offsets are used: "
                "relevance from spans is located in the chunks' own texts and the split class is not used",
                file=file,
                count=len(bad),
                examples=bad,
            )
            return None, None, ""
        lengths = df["text"].astype(str).str.len().to_numpy(dtype=np.float64)
        if ekey is not None and (end - start != lengths).any():
            bad = np.flatnonzero(end - start != lengths)
            report.add(
                "chunk_offsets_disagree",
                f"{len(bad)} of the {len(ids)} chunks have an end {ekey} that is not their start plus the length of "
                f"their text, so no chunk's offsets are used (a span would be judged against characters the chunk "
                "does not hold): relevance from spans is located in the chunks' own texts and the split class is "
                f"not used. Fix: write {ekey} = {skey} + len(text)",
                file=file,
                count=len(bad),
                examples=[
                    f"{ids[i]}: {skey} {start[i]:.0f}, {ekey} {end[i]:.0f} for {lengths[i]:.0f} characters"
                    for i in bad[:5]
                ],
            )
            return None, None, ""
        s = dict(zip(ids, start.astype(np.int64).tolist(), strict=True))
        e = dict(zip(ids, end.astype(np.int64).tolist(), strict=True))
        return s, e, keys
    return None, None, ""


#: how many characters of a document no chunk holds (the separators a splitter drops, chunks left out) may lie
#: between its chunks before the offsets are refused: this many, plus ten times the characters its chunks hold
MAX_UNCOVERED = 1_000_000


def _check_layout(
    parent: Mapping[str, str],
    start: Mapping[str, int],
    end: Mapping[str, int],
    text: Mapping[str, str],
    report: ValidationReport,
    file: str | None,
) -> None:
    """Refuse offsets that place a chunk far beyond its document's text (rebuilding the document would fill the gap:
    :data:`MAX_UNCOVERED`), naming the chunk; count the overlapping chunks whose texts differ where they overlap
    (``chunk_overlap_disagrees``: the rebuilt document keeps the earlier chunk's characters)."""
    by_doc: dict[str, list[tuple[int, int, str]]] = {}
    for c, d in parent.items():
        by_doc.setdefault(d, []).append((start[c], end[c], c))
    disagree: list[str] = []
    for doc, chunks in by_doc.items():
        held = sum(e - s for s, e, _ in chunks)
        last = max(chunks, key=lambda x: x[1])
        if last[1] - held > MAX_UNCOVERED + 10 * held:
            raise DataError(
                f"{file or 'corpus'}: chunk {last[2]!r} of document {doc!r} ends at character {last[1]:,}, but the "
                f"{len(chunks)} chunks of that document hold {held:,} characters in all: offsets that far beyond "
                "the text cannot be character positions in it. Fix: check that chunk's offsets (start, end: "
                "positions in its document's text), or drop the offset keys.",
                param="corpus",
            )
        chunks.sort()
        ps, pe, pc = chunks[0]
        for s, e, c in chunks[1:]:
            if s < pe:
                stop = min(e, pe)
                if text[pc][s - ps : stop - ps] != text[c][: stop - s]:
                    disagree.append(f"{pc} / {c} at characters {s:,}-{stop:,} of {doc}")
            if e > pe:
                ps, pe, pc = s, e, c
    report.add(
        "chunk_overlap_disagrees",
        f"{plural_of(len(disagree), 'pair')} of overlapping chunks hold different text where they overlap: their "
        "offsets or their texts are wrong, and the document rebuilt from them keeps the earlier chunk's "
        "characters. Fix: check the offsets of those chunks",
        file=file,
        count=len(disagree),
        examples=disagree,
    )


def chunks_by_document(cmap: ChunkMap) -> dict[str, list[tuple[int, int, str]]]:
    """``{document: [(start, end, chunk_id), ...]}`` sorted by start (then end, id); needs offsets."""
    if not cmap.has_offsets:
        raise DataError("the chunk corpus has no offsets", param="parent_field")
    out: dict[str, list[tuple[int, int, str]]] = {}
    for c, d in cmap.parent.items():
        out.setdefault(d, []).append((cmap.start[c], cmap.end[c], c))
    for spans in out.values():
        spans.sort()
    return out


def document_texts(corpus: Corpus, cmap: ChunkMap) -> dict[str, str]:
    """Each document's text rebuilt from its chunks and their offsets: every chunk's text at its start; the
    characters no chunk holds (the separators a splitter drops) as spaces; where chunks overlap, the earlier
    chunk's characters are kept."""
    text_of: Mapping[str, str] = dict(
        zip(corpus.df["doc_id"].astype(str).tolist(), corpus.df["text"].astype(str).tolist(), strict=True)
    )
    out = {}
    for doc, chunks in chunks_by_document(cmap).items():
        parts: list[str] = []
        cur = 0
        for start, _end, c in chunks:
            t = text_of.get(c, "")
            if start > cur:
                parts.append(" " * (start - cur))
                cur = start
            if start + len(t) > cur:
                parts.append(t[cur - start :])
                cur = start + len(t)
        out[doc] = "".join(parts)
    return out
