"""Text beyond the model's window, and diluted passages: the model's window, each target's passages, the best one.

An embedding model reads a fixed number of tokens and drops the rest: all-MiniLM-L6-v2's ``max_seq_length`` is 256
word pieces, *including* its two special tokens ([CLS], [SEP]), so it reads the first 254 word pieces of a text.

- **The window** (:class:`ModelWindow`, :func:`model_window`): ``tokens`` = the model's ``max_seq_length`` (special
  tokens included: what ``window_tokens`` reports), ``specials`` = the special tokens its tokenizer adds to one text
  (``tokenizer.num_special_tokens_to_add()``), ``capacity = tokens - specials`` = the text tokens the model reads.
  From a sentence-transformers model's own tokenizer (``model.tokenizer``) and ``model.max_seq_length``; an encoder
  may carry its own ``window`` (a fake encoder in tests: :func:`word_window`); otherwise the window is unknown.
- **The target's tokens**: the document text as it is encoded (:func:`diagnose.data.document_text`, ``title + " " +
  text``) tokenized by the model's tokenizer without special tokens: ``target_tokens`` counts them; a token at
  offset ``>= capacity`` is beyond the window (never read).
- **Sentences** (:func:`split_sentences`): no maintained sentence splitter ships with the package (NLTK's punkt needs
  a data download), so a documented regex: a sentence ends at ``.``, ``!`` or ``?`` (optionally followed by a closing
  quote or bracket) followed by white space and an upper-case letter, a digit or an opening quote/bracket; a line
  break also ends one. Abbreviations such as "e.g. The" split wrongly; that shifts a passage by a sentence, no more.
- **Passages** (:func:`split_passages`): windows of up to :data:`~diagnose.defaults.PASSAGE_SENTENCES` consecutive
  sentences and at most :data:`~diagnose.defaults.PASSAGE_TOKENS` tokens (the capacity when smaller), one starting at
  every sentence, never across the end of the window: a sentence that starts within the window and ends beyond it is
  two units, the part the model reads and the part it does not, so a passage beyond the window starts at or after
  token ``capacity`` whatever the sentence lengths (issue 35: with windows of sentences straddling it, half of the
  answers beyond the window were reported at an offset within it). A window stops before a sentence that would
  take it over the token limit; a sentence longer than the limit alone is cut into pieces of the limit, one starting
  every half limit (each overlapping the next by half), so an answer inside a long sentence lies whole in one piece.
  A window ending where the previous one ends, because the text or its side of the window's end stops there, is held
  whole in it and left out; duplicates (same token range) once. ``passage_offset`` = the token offset of a
  passage's first token in the target.
- **The best passage** (:meth:`PassageScorer.match`): the passage of maximum cosine to the query under the same model
  (the earliest on a tie), its offset, cosine and text; ``target_cosine`` = cos(query, whole target) under that model
  (the failure's ``cosine`` when the vectors are the model's own); ``first_good_offset`` = the smallest offset among
  the passages whose cosine reaches the calibrated threshold (None when none does). The rules that read them are
  ``truncated`` and ``diluted`` in :func:`diagnose.failures.taxonomy.classify`.
- **The remedy** (:func:`maxsim_run`): documents' passages encoded (the same windows of sentences, side by side
  instead of one starting at every sentence: a third as many to encode), a document scored by its best passage
  (max-sim) and ranked. Above :data:`~diagnose.defaults.MAXSIM_MAX_DOCS` documents (or on request) only a bounded
  candidate set per query is re-scored
  (:func:`remedy_candidates`: the top :data:`~diagnose.defaults.PASSAGE_CANDIDATES` (at least k) of the run, of
  exact dense search and of BM25, and the query's failed targets), so the diagnosis encodes the passages of the documents it reads, not
  of the corpus; otherwise (``candidates=None``; ``Analysis(passage_candidates=None)``, ``diagnose failures
  --passage-remedy-corpus``) every document's passages are searched.

Passage vectors are cached on disk in the embedding cache (:func:`diagnose.embed.embed_texts`, keyed by the text and
the encoder), with a progress bar of the passages still to encode.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from diagnose import defaults
from diagnose.data import Dataset, Run
from diagnose.embed import EmbeddingCache, embed_texts
from diagnose.runtime.lazy import pandas as pd
from diagnose.runtime.progress import Progress, reporter

#: Token spans of texts: one list of (start, end) character offsets per text, special tokens left out.
SpanFn = Callable[[Sequence[str]], list[list[tuple[int, int]]]]


@dataclass(frozen=True)
class ModelWindow:
    """The model's window: ``tokens`` (``max_seq_length``, special tokens included), ``specials`` (special tokens
    added to one text), ``spans`` (the tokenizer: :data:`SpanFn`), ``label`` (whose window)."""

    tokens: int
    specials: int
    spans: SpanFn
    label: str = ""

    @property
    def capacity(self) -> int:
        """The text tokens the model reads: ``tokens - specials``."""
        return self.tokens - self.specials

    def to_dict(self) -> dict[str, Any]:
        return {"window_tokens": self.tokens, "special_tokens": self.specials, "model": self.label}


def word_window(tokens: int, specials: int = 0, label: str = "words") -> ModelWindow:
    """A window counted in white-space separated words (a fake encoder's, in tests)."""

    def spans(texts: Sequence[str]) -> list[list[tuple[int, int]]]:
        return [[m.span() for m in re.finditer(r"\S+", t)] for t in texts]

    return ModelWindow(tokens, specials, spans, label)


def model_window(encoder: Any) -> ModelWindow | None:
    """The window of ``encoder``: its own ``window`` attribute when it has one, else a sentence-transformers model's
    tokenizer and ``max_seq_length``; None when neither is known."""
    own = getattr(encoder, "window", None)
    if isinstance(own, ModelWindow):
        return own
    if hasattr(encoder, "tokenizer_and_length"):  # a SentenceTransformerEncoder: no weights loaded for it
        tokenizer, max_len = encoder.tokenizer_and_length()
    else:
        model = getattr(encoder, "model", None) if hasattr(encoder, "source") else None
        tokenizer, max_len = getattr(model, "tokenizer", None), getattr(model, "max_seq_length", None)
    if tokenizer is None or not max_len:
        return None

    def spans(texts: Sequence[str]) -> list[list[tuple[int, int]]]:
        out = tokenizer(
            list(texts),
            add_special_tokens=False,
            return_offsets_mapping=True,
            truncation=False,
            verbose=False,
        )
        return [[(int(a), int(b)) for a, b in offs] for offs in out["offset_mapping"]]

    specials = int(tokenizer.num_special_tokens_to_add(pair=False))
    return ModelWindow(int(max_len), specials, spans, str(getattr(encoder, "label", "") or encoder.name))


_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]?\s+(?=[\"'(\[]?[A-Z0-9])|\s*\n\s*")


def split_sentences(text: str) -> list[tuple[int, int]]:
    """The sentences of ``text`` as (start, end) character spans, white space trimmed (module docstring: the rule)."""
    out, pos = [], 0
    for m in _SENTENCE_END.finditer(text):
        end = m.start() + len(m.group(0).rstrip()) if m.group(0)[:1] in "\"')]" else m.start()
        if text[pos:end].strip():
            out.append((pos, end))
        pos = m.end()
    if text[pos:].strip():
        out.append((pos, len(text.rstrip())))
    return out


class PassageTable(NamedTuple):
    """The passages of some texts: passage i belongs to text ``text_row[i]`` and covers its tokens ``[start, end)``
    and characters ``[char_start, char_end)``; ``n_tokens`` and ``window_char`` (the character offset where the
    window ends, -1 when the whole text fits) per text."""

    text_row: np.ndarray
    start: np.ndarray
    end: np.ndarray
    char_start: np.ndarray
    char_end: np.ndarray
    texts: list[str]
    n_tokens: np.ndarray
    window_char: np.ndarray


def _units(text: str, starts: list[int], cap: int) -> list[tuple[int, int]]:
    """The (start token, end token) ranges of one text's sentences, each cut at the end of the window (token
    ``cap``), so that no unit holds both tokens the model reads and tokens it does not; sentences without a token
    left out."""
    out = []
    for a, b in split_sentences(text) or [(0, len(text))]:
        lo, hi = bisect_left(starts, a), bisect_left(starts, b)
        for x, y in ((lo, min(hi, cap)), (max(lo, cap), hi)):
            if x < y:
                out.append((x, y))
    return out


def _pieces(lo: int, hi: int, limit: int) -> list[tuple[int, int]]:
    """A range longer than ``limit`` tokens as pieces of ``limit`` tokens, one starting every ``limit // 2`` tokens
    (each half overlaps the next), the last ending at ``hi``: a span of at most ``limit // 2 + 1`` tokens lies whole
    in one piece wherever it starts."""
    step = max(1, limit // 2)
    out = [(s, s + limit) for s in range(lo, hi - limit, step)]
    return out + [(max(lo, hi - limit), hi)]


def _text_passages(
    text: str, spans: list[tuple[int, int]], cap: int, size: int, stride: int, limit: int
) -> list[tuple[int, int]]:
    """The (start token, end token) ranges of one text's passages (module docstring)."""
    units = _units(text, [a for a, _ in spans], cap)
    out: dict[tuple[int, int], None] = {}
    reached, i = 0, 0
    while i < len(units):
        lo, hi = units[i]
        j = i + 1  # units[i:j] is the passage: up to size units, limit tokens, one side of the window's end
        while (
            j < len(units)
            and j - i < size
            and units[j][1] - lo <= limit
            and (units[j][0] < cap) == (lo < cap)
        ):
            j += 1
        end = units[j - 1][1]
        # fewer than size units because the text or its side of the window's end stops there: a passage held whole
        # in the previous one adds nothing (a passage stopped by the token limit is kept: its next unit is too long)
        at_end = j == len(units) or (units[j][0] < cap) != (lo < cap)
        if end - lo > limit:  # one unit longer than limit
            for piece in _pieces(lo, end, limit):
                out[piece] = None
        elif end > reached or not at_end:
            out[(lo, end)] = None
        reached = max(reached, end)
        i = i + 1 if stride == 1 else j
    return list(out)


def split_passages(
    texts: Sequence[str],
    window: ModelWindow,
    size: int = defaults.PASSAGE_SENTENCES,
    stride: int = 1,
    limit: int = defaults.PASSAGE_TOKENS,
) -> PassageTable:
    """Every text's passages (module docstring), in text order then token order. ``stride``: 1 for a window
    starting at every sentence (the diagnosis), ``size`` for windows side by side (the remedy's index)."""
    cols: list[list[int]] = [[], [], [], [], []]
    out_texts: list[str] = []
    n_tokens, window_char = [], []
    for row, (text, spans) in enumerate(zip(texts, window.spans(texts), strict=True)):
        n_tokens.append(len(spans))
        window_char.append(spans[window.capacity][0] if len(spans) > window.capacity else -1)
        for s, e in _text_passages(text, spans, window.capacity, size, stride, min(limit, window.capacity)):
            a, b = spans[s][0], spans[e - 1][1]
            for col, v in zip(cols, (row, s, e, a, b), strict=True):
                col.append(v)
            out_texts.append(text[a:b])
    arrays = [np.asarray(c, dtype=np.int64) for c in cols]
    return PassageTable(*arrays, out_texts, np.asarray(n_tokens, dtype=np.int64), np.asarray(window_char))


class PassageMatch(NamedTuple):
    """A target's window and best passage for one query (module docstring: every field). ``passage_char``: the
    character offset of the passage in the target's text (``title + " " + text``); ``window_char``: where the window
    ends in it (None when the whole target fits)."""

    window_tokens: int
    capacity: int
    target_tokens: int
    passage_offset: int
    passage_cosine: float
    passage_text: str
    target_cosine: float
    first_good_offset: int | None
    passage_char: int
    window_char: int | None


class PassageScorer:
    """Passages of a data set's documents under one encoder and its window: :meth:`match` (the diagnosis's
    evidence) and :meth:`passages` (the vectors of the remedy). ``cache_dir``: the embedding cache's root (None: the
    default cache); ``progress``: where the bars of the passages' encoding go."""

    def __init__(
        self,
        ds: Dataset,
        encoder: Any,
        window: ModelWindow,
        *,
        cache_dir: str | Path | None = None,
        progress: Progress = False,
        sentences: int = defaults.PASSAGE_SENTENCES,
    ) -> None:
        self.ds, self.encoder, self.window, self.sentences = ds, encoder, window, sentences
        self.cache = EmbeddingCache(Path(cache_dir) / "embeddings" if cache_dir else None)
        self.progress = progress
        self.doc_row = ds.corpus.index_of()
        self._texts = ds.corpus.texts()

    def _embed(self, texts: list[str], label: str | None = None) -> np.ndarray:
        bar = reporter(self.progress).bar(label) if label else False
        return embed_texts(self.encoder, texts, cache=self.cache, progress=bar, report=self.ds.report)

    def passages(self, doc_ids: Sequence[str], *, stride: int = 1) -> tuple[PassageTable, np.ndarray]:
        """The passages of ``doc_ids`` (rows of the table index ``doc_ids``) and their vectors (``stride``:
        :func:`split_passages`)."""
        texts = [self._texts[self.doc_row[d]] for d in doc_ids]
        table = split_passages(texts, self.window, self.sentences, stride)
        what = f"Encoding {len(table.texts):,} passages of {len(doc_ids):,} documents (fitting {self.window.tokens} tokens)"
        return table, self._embed(table.texts, what)

    def query_vectors(self, query_ids: Sequence[str]) -> np.ndarray:
        text_of = self.ds.queries.text_of()
        return self._embed([text_of.get(q, "") for q in query_ids])

    def match(
        self, pairs: Sequence[tuple[str, str]], calibrated: float
    ) -> dict[tuple[str, str], PassageMatch]:
        """The best passage of each (query, target) pair whose target is in the corpus (module docstring)."""
        pairs = [(q, d) for q, d in pairs if d in self.doc_row]
        if not pairs:
            return {}
        docs = list(dict.fromkeys(d for _, d in pairs))
        queries = list(dict.fromkeys(q for q, _ in pairs))
        table, pvecs = self.passages(docs)
        dvecs = self._embed([self._texts[self.doc_row[d]] for d in docs])
        qvecs = self.query_vectors(queries)
        d_of, q_of = {d: i for i, d in enumerate(docs)}, {q: i for i, q in enumerate(queries)}
        bounds = np.searchsorted(table.text_row, np.arange(len(docs) + 1))
        out = {}
        for q, d in pairs:
            i, qv = d_of[d], qvecs[q_of[q]]
            lo, hi = bounds[i], bounds[i + 1]
            if lo == hi:
                continue  # a target without a token
            cos = pvecs[lo:hi] @ qv
            best = lo + int(np.argmax(cos))
            good = table.start[lo:hi][cos >= calibrated]
            wc = int(table.window_char[i])
            out[(q, d)] = PassageMatch(
                self.window.tokens,
                self.window.capacity,
                int(table.n_tokens[i]),
                int(table.start[best]),
                float(cos[best - lo]),
                table.texts[best],
                float(dvecs[i] @ qv),
                int(good.min()) if len(good) else None,
                int(table.char_start[best]),
                wc if wc >= 0 else None,
            )
        return out


def _maxsim(qvecs: np.ndarray, pvecs: np.ndarray, text_row: np.ndarray, n_docs: int) -> np.ndarray:
    """``[n_queries, n_docs]``: each document's best passage cosine (-inf for a document without a passage)."""
    out = np.full((len(qvecs), n_docs), -np.inf, dtype=np.float32)
    if len(pvecs):
        sims = qvecs @ pvecs.T
        starts = np.flatnonzero(np.r_[True, text_row[1:] != text_row[:-1]])
        out[:, text_row[starts]] = np.maximum.reduceat(sims, starts, axis=1)
    return out


def remedy_candidates(
    query_ids: Sequence[str],
    runs: Sequence[Run | None],
    n: int,
    targets: Iterable[tuple[str, str]] = (),
) -> dict[str, list[str]]:
    """The passage remedy's bounded candidate set: for each of ``query_ids``, the union (first seen first) of the top
    ``n`` of each run in ``runs`` (the run remedied, exact dense search, BM25; a None is skipped) and of the query's
    ``targets`` (its failed (query, target) pairs: the documents the diagnosis already split into passages). A
    document outside it is not re-scored, so the bounded remedy can only miss what the whole-corpus one finds when a
    document outside every list's top ``n`` has a better passage than all of them (measured on NFCorpus in
    :data:`~diagnose.defaults.PASSAGE_CANDIDATES`)."""
    out: dict[str, dict[str, None]] = {q: {} for q in query_ids}
    for run in runs:
        if run is None:
            continue
        top = run.top(n)
        for q, d in zip(top["query_id"].tolist(), top["doc_id"].tolist(), strict=True):
            if q in out:
                out[q][d] = None
    for q, d in targets:
        if q in out:
            out[q][d] = None
    return {q: list(docs) for q, docs in out.items()}


def maxsim_run(
    scorer: PassageScorer,
    run: Run,
    query_ids: Sequence[str],
    *,
    depth: int = defaults.DEPTH,
    candidates: Mapping[str, Sequence[str]] | None = None,
) -> Run:
    """The passage remedy: each query's documents ranked by their best passage's cosine (max-sim), top ``depth``.

    ``candidates`` (query id -> doc ids, :func:`remedy_candidates`): only those documents are re-scored for that
    query (a query without an entry gets no row), and only their passages are encoded. None: every document's
    passages are encoded and searched for every query (the whole-corpus remedy). Ties by doc id descending
    (trec_eval's order); documents without a passage, and ids not in the corpus, are left out."""
    qids = list(query_ids)
    qvecs = scorer.query_vectors(qids)
    if candidates is None:
        ids = list(scorer.ds.corpus.ids)
        rows = []
        table, pvecs = scorer.passages(ids, stride=scorer.sentences)
        for block in range(0, len(qids), 256):
            scores = _maxsim(qvecs[block : block + 256], pvecs, table.text_row, len(ids))
            rows += _top_rows(qids[block : block + 256], ids, scores, depth)
    else:
        rows = _candidate_rows(scorer, candidates, qids, qvecs, depth)
    df = pd.DataFrame(rows, columns=["query_id", "doc_id", "score", "rank"])
    return Run(
        f"{run.name} (passage max-sim)", df, source=f"max-sim over passages of {scorer.window.tokens} tokens"
    )


def _top_rows(
    qids: list[str], ids: list[str], scores: np.ndarray, depth: int
) -> list[tuple[str, str, float, int]]:
    """The top ``depth`` (query, doc, score, rank) rows of each query's scores, ties by doc id descending."""
    id_order = np.argsort(np.argsort(np.asarray(ids, dtype=object)))  # position of each id in ascending order
    rows = []
    for q, s in zip(qids, scores, strict=True):
        order = np.lexsort((-id_order, -s.astype(np.float64)))
        order = order[np.isfinite(s[order])][:depth]
        rows += [(q, ids[j], float(s[j]), r) for r, j in enumerate(order.tolist(), start=1)]
    return rows


def _candidate_rows(
    scorer: PassageScorer,
    candidates: Mapping[str, Sequence[str]],
    qids: list[str],
    qvecs: np.ndarray,
    depth: int,
) -> list[tuple[str, str, float, int]]:
    """Each query's candidates re-scored by max-sim over their passages (the passages of the union encoded once)."""
    wanted = {q: list(dict.fromkeys(d for d in candidates.get(q, ()) if d in scorer.doc_row)) for q in qids}
    docs = sorted(set().union(*wanted.values())) if wanted else []
    if not docs:
        return []
    table, pvecs = scorer.passages(docs, stride=scorer.sentences)
    col = {d: i for i, d in enumerate(docs)}
    bounds = np.searchsorted(table.text_row, np.arange(len(docs) + 1))
    rows = []
    for i, q in enumerate(qids):
        keep = [col[d] for d in wanted[q]]
        if not keep:
            continue
        sizes = bounds[1:][keep] - bounds[:-1][keep]
        sel = np.concatenate([np.arange(bounds[j], bounds[j + 1]) for j in keep])
        local = np.repeat(np.arange(len(keep)), sizes)  # the passage's document among ``keep``
        scores = _maxsim(qvecs[i : i + 1], pvecs[sel], local, len(keep))
        rows += _top_rows([q], [docs[j] for j in keep], scores, depth)
    return rows
