"""Words and stems: the stopword lists, :func:`tokenize` (the one analyzer BM25 and the evidence share), and the
term evidence of a query against a document (:class:`TermOverlap`, :func:`term_overlap`, :func:`highlight_spans`).
"""

from __future__ import annotations

import functools
import re
import threading
from collections.abc import Iterable, Mapping, Sequence, Set
from dataclasses import dataclass
from typing import Any

import numpy as np

from diagnose.data import DataError
from diagnose.runtime.frames import arrow_strings, is_arrow_array
from diagnose.runtime.threads import release_freed_memory

#: bm25s.stopwords.STOPWORDS_EN == Lucene's EnglishAnalyzer.ENGLISH_STOP_WORDS_SET (33 words).
#: Copied so that importing this module does not import bm25s; tests check they stay equal.
# fmt: off
STOPWORDS_EN: frozenset[str] = frozenset({
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it", "no",
    "not", "of", "on", "or", "such", "that", "the", "their", "then", "there", "these",
    "they", "this", "to", "was", "will", "with",
})
# fmt: on

#: Query-side stop words: words that shape a question rather than say what it is about. They are left out of the
#: term-overlap evidence (:func:`term_overlap`: present/missing terms and the overlap share the failure taxonomy
#: uses), never out of BM25, which keeps Lucene's 33 stopwords above ("how do I reset my password" is still scored
#: on "how", "do", "i" and "my"). Taken from NLTK's English stop-word list (``nltk.corpus.stopwords``, the list of
#: the Snowball project): its interrogatives (what which who whom when where why how), personal and possessive
#: pronouns, forms of be/have/do, the modals it has (can will should) and the fragments its tokenizer-less list
#: keeps for contractions ("don't" -> "don", "t"; "what's" -> "what", "s"; "I'm" -> "i", "m"), which our tokenizer
#: produces too. Added: "whose", the modals NLTK lacks (could would shall may might must) and "please". Left out on
#: purpose: "us" (the country), "no"/"not"/"nor" (negation carries meaning), prepositions and determiners.
# fmt: off
QUERY_STOPWORDS: frozenset[str] = frozenset({
    # interrogatives
    "what", "which", "who", "whom", "whose", "when", "where", "why", "how",
    # personal, possessive and reflexive pronouns
    "i", "me", "my", "mine", "myself", "we", "our", "ours", "ourselves", "you", "your", "yours", "yourself",
    "yourselves", "he", "him", "his", "himself", "she", "her", "hers", "herself", "it", "its", "itself", "they",
    "them", "their", "theirs", "themselves",
    # auxiliaries: be, have, do
    "am", "is", "are", "was", "were", "be", "been", "being", "have", "has", "had", "having", "do", "does", "did",
    "doing",
    # modals
    "can", "could", "will", "would", "shall", "should", "may", "might", "must",
    # contraction fragments
    "s", "t", "d", "ll", "m", "re", "ve", "don", "doesn", "didn", "isn", "aren", "wasn", "weren", "hasn", "haven",
    "hadn", "won", "wouldn", "couldn", "shouldn", "mightn", "mustn", "needn", "shan", "ain",
    # politeness
    "please",
})
# fmt: on

TOKEN_RE = re.compile(r"[^\W_]+")
# PyStemmer's Stemmer objects are not thread-safe, and Streamlit runs pages in threads: one stemmer per thread.
_local = threading.local()


def _stemmer() -> Any:
    st = getattr(_local, "stemmer", None)
    if st is None:
        import Stemmer

        st = Stemmer.Stemmer("english")
        _local.stemmer = st
    return st


def _stem_all(words: list[list[str]]) -> list[list[str]]:
    """Drop stopwords and stem, stemming each distinct word once."""
    uniq = list(set().union(*words)) if words else []
    stem_of: dict[str, str | None] = dict(zip(uniq, _stemmer().stemWords(uniq), strict=True))
    for w in STOPWORDS_EN:
        stem_of[w] = None
    return [[s for s in map(stem_of.__getitem__, ws) if s is not None] for ws in words]


#: Every ASCII character that is not a letter or digit, mapped to a space: on an ASCII text, ``lower()``, this
#: translation and ``split()`` give exactly the runs of ``[^\W_]+`` (:data:`TOKEN_RE`) without the regex engine.
_ASCII_SEPARATORS = str.maketrans({chr(c): " " for c in range(128) if not chr(c).isalnum()})


def _words(text: str | None) -> list[str]:
    """The lowercased words of ``text`` (before stopwords and stemming), as :func:`tokenize` splits them."""
    if not text:
        return []
    if text.isascii():
        return text.lower().translate(_ASCII_SEPARATORS).split()
    return TOKEN_RE.findall(text.lower())


def tokenize_ids(texts: Sequence[str | None] | Any) -> tuple[list[str], np.ndarray, np.ndarray]:
    """:func:`tokenize` of a whole corpus as arrays, for indexing: ``(vocab, ids, lengths)`` where ``vocab`` lists
    the stems in the order they first occur, ``ids`` (int64) is every document's stems as positions in ``vocab``,
    one document after the other, and ``lengths`` (int64) the number of stems of each document. The same as
    ``tokens = tokenize(texts)``, ``vocab = list(dict.fromkeys(chain(*tokens)))`` and the ids of ``chain(*tokens)``,
    without a Python object per token (a corpus of 1M documents has ~20M): a byte table lowercases the ASCII
    letters and blanks the separators (:func:`_ascii_words_spaced`), Arrow splits the texts and codes the words (a
    text that is not ASCII is split by :func:`tokenize`'s regex first and joined with spaces, which no word
    contains), then each distinct word is stemmed once.

    ``texts``: strings (None: no text), or an Arrow string array (e.g. :meth:`~diagnose.data.Corpus.joined_texts`:
    no Python string per document)."""
    import pyarrow.compute as pc

    if isinstance(texts, str):
        raise DataError("tokenize_ids() takes a sequence of texts, not one string.", param="texts")
    arr = _ascii_words_spaced(_plain_texts(texts))
    n_texts = len(arr)
    lists = pc.split_pattern(arr, " ")
    del arr  # each intermediate is dropped as soon as the next exists: they are whole-corpus copies
    words, doc = pc.list_flatten(lists), pc.list_parent_indices(lists).to_numpy().astype(np.int64)
    del lists
    nonempty = pc.not_equal(words, "")
    coded = pc.dictionary_encode(words.filter(nonempty))
    del words
    doc = doc[nonempty.to_numpy(zero_copy_only=False)]
    word_codes, stems = _stem_codes(coded.dictionary.to_pylist())
    codes = word_codes[coded.indices.to_numpy(zero_copy_only=False)]
    keep = codes >= 0
    codes, doc = codes[keep], doc[keep]
    lengths = np.bincount(doc, minlength=n_texts).astype(np.int64)
    first = np.full(len(stems), len(codes), dtype=np.int64)
    np.minimum.at(first, codes, np.arange(len(codes)))  # each stem's first position (a sort of ~20M was ~8 s)
    used = np.flatnonzero(first < len(codes))
    by_first = used[np.argsort(first[used])]  # stem codes in order of first occurrence
    renumber = np.empty(len(stems), dtype=np.int64)
    renumber[by_first] = np.arange(len(by_first))
    del coded, nonempty
    release_freed_memory()  # the allocators keep freed pages; the index build comes next
    return [stems[c] for c in by_first.tolist()], renumber[codes], lengths


def _plain_texts(texts: Sequence[str | None] | Any) -> Any:
    """``texts`` as one contiguous Arrow ``large_string`` array without nulls (None as ""), each text that is not
    ASCII replaced by its :data:`TOKEN_RE` words, lowercased and joined with spaces."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if is_arrow_array(texts):
        arr = arrow_strings(texts)
        if pc.all(pc.string_is_ascii(arr)).as_py() is not False:
            return arr
        texts = arr.to_pylist()  # some texts are not ASCII: rebuilt below, like a list of strings
    plain = [t if not t or t.isascii() else " ".join(TOKEN_RE.findall(t.lower())) for t in texts]
    return pa.array([t or "" for t in plain], type=pa.large_string())


#: Byte by byte, where :func:`tokenize_ids` splits UTF-8 text and how it lowercases: each ASCII byte as
#: :func:`_words` maps it (``lower()``, then :data:`_ASCII_SEPARATORS`), bytes >= 128 (parts of non-ASCII characters,
#: which no ASCII byte can be) unchanged.
_ASCII_WORD_TABLE = bytes(
    [ord(chr(c).lower().translate(_ASCII_SEPARATORS)) for c in range(128)] + list(range(128, 256))
)


def _ascii_words_spaced(arr: Any) -> Any:
    """The Arrow ``large_string`` array ``arr`` (no nulls) with ASCII letters lowercased and every other ASCII
    character that is not a digit turned into a space, through one table lookup over its bytes (``bytes.translate``;
    the regex pass it replaces took ~10 s at 1M documents). A run of separators becomes several spaces, where the
    regex made one: splitting on " " then gives empty words between them, which :func:`tokenize_ids` drops with the
    other empty ones."""
    import pyarrow as pa

    _, offsets, data = arr.buffers()
    if data is None:  # no bytes at all (every text empty)
        return arr
    mapped = memoryview(data).tobytes().translate(_ASCII_WORD_TABLE)
    return pa.LargeStringArray.from_buffers(len(arr), offsets, pa.py_buffer(mapped), None, 0, arr.offset)


def _stem_codes(words: list[str]) -> tuple[np.ndarray, list[str]]:
    """Per distinct word the code of its stem (-1 for a stopword), and the stems by code."""
    stem_code: dict[str, int] = {}
    codes = np.fromiter(
        (
            -1 if w in STOPWORDS_EN else stem_code.setdefault(s, len(stem_code))
            for w, s in zip(words, _stemmer().stemWords(words), strict=True)
        ),
        dtype=np.int64,
        count=len(words),
    )
    return codes, list(stem_code)


def tokenize(texts: Sequence[str]) -> list[list[str]]:
    """Tokenize texts into stems: lowercase, split on non-alphanumerics, drop stopwords, Snowball-stem.

    See the module docstring for the exact rules. ``None`` or an empty text gives ``[]``.
    Pass a list of texts; a single string is refused (iterating it would tokenize its characters).

    >>> tokenize(["The statins reduced Breast-cancer deaths"])
    [['statin', 'reduc', 'breast', 'cancer', 'death']]
    """
    if isinstance(texts, str):
        raise DataError(
            "tokenize() takes a sequence of texts, not one string: use tokenize([text]).", param="texts"
        )
    return _stem_all([_words(t) for t in texts])


@functools.lru_cache(maxsize=4096)
def _analyze(text: str) -> tuple[tuple[str, str, int, int], ...]:
    """(lowercased word, stem, start, end) for every non-stopword token of ``text``; spans index ``text``.

    Cached (a query is analysed once per failure it has; the stemmer is the slow part).

    Same tokens as :func:`tokenize`. ``str.lower()`` can lengthen a text ("İ" -> "i̇"); then offsets in the
    lowercased text are mapped back to the original characters.
    """
    if not text:
        return ()
    low = text.lower()
    matches = [(m.group(), m.start(), m.end()) for m in TOKEN_RE.finditer(low)]
    if len(low) != len(text):
        orig = np.repeat(np.arange(len(text)), [len(c.lower()) for c in text])
        matches = [(w, int(orig[a]), int(orig[b - 1]) + 1) for w, a, b in matches]
    matches = [m for m in matches if m[0] not in STOPWORDS_EN]
    stems = _stem_all([[w for w, _, _ in matches]])[0]
    return tuple((w, st, a, b) for (w, a, b), st in zip(matches, stems, strict=True))


# ----------------------------------------------------------------------------------------------------------------
# Term overlap


@dataclass(frozen=True)
class TermOverlap:
    """Which query terms a document contains, as evidence for a lexical-mismatch diagnosis.

    A *term* is a distinct stem of the query (stopwords excluded). ``stems[i]`` is shown as ``query_terms[i]``:
    the distinct lowercased surface words of the query with that stem, in order of appearance, joined by "/"
    (e.g. "statins/statin"). Query stop words (:data:`QUERY_STOPWORDS` by default: "what", "how", "do", "i",
    "my", ...) are not terms: they are listed in ``ignored`` (display forms) / ``ignored_stems``. A stem is
    ignored only when every surface word of the query with that stem is a query stop word.
    ``present``/``missing`` (display forms) and ``stems_present``/``stems_missing`` keep query order.
    ``overlap_ratio = len(present) / len(query_terms)``; 0.0 when the query has no terms.
    ``bm25_overlap_ratio``: the same share over every term BM25 scores (the ignored ones too); it differs from
    ``overlap_ratio`` only when something was ignored. ``weight_share``: the share of the query's BM25 weight the
    document holds, ``sum(n_t * w_t for t present) / sum(n_t * w_t for every t)`` over every term BM25 scores (the
    ignored ones too), ``n_t`` the term's count in the query (BM25 scores a repeated term again) and ``w_t`` its
    weight (:meth:`~diagnose.lexical.bm25.BM25Index.term_weights`: the idf, 0 for a term no document holds); a
    rare term counts more than a common one and the share does not shrink with the query's length the way a count
    of terms does. None when no weights were given; 0.0 when the query has no weight.
    """

    query_terms: tuple[str, ...]
    stems: tuple[str, ...]
    present: tuple[str, ...]
    missing: tuple[str, ...]
    stems_present: tuple[str, ...]
    stems_missing: tuple[str, ...]
    overlap_ratio: float
    ignored: tuple[str, ...] = ()
    ignored_stems: tuple[str, ...] = ()
    bm25_overlap_ratio: float = 0.0
    weight_share: float | None = None


def term_overlap(
    query: str,
    doc: str,
    *,
    doc_stems: Set[str] | None = None,
    query_stopwords: Set[str] = QUERY_STOPWORDS,
    weights: Mapping[str, float] | None = None,
) -> TermOverlap:
    """Split the query's terms into those found in ``doc`` and those missing, with :func:`tokenize`'s rules,
    leaving out the query stop words.

    ``doc_stems``: the document's stems when already known (``set(tokenize([doc])[0])``, e.g. computed for many
    documents in one :func:`tokenize` call); ``doc`` is then not read. ``query_stopwords``: lowercased surface
    words to leave out of the terms (default :data:`QUERY_STOPWORDS`; ``frozenset()`` gives BM25's own view,
    where every query token BM25 scores is a term). ``weights``: stem -> BM25 weight
    (:meth:`~diagnose.lexical.bm25.BM25Index.term_weights`), for ``weight_share`` (a stem without one weighs 0).

    >>> t = term_overlap("How do statins reduce breast cancer?", "Statin use and breast-cancer survival")
    >>> t.present, t.missing, t.overlap_ratio, t.ignored
    (('statins', 'breast', 'cancer'), ('reduce',), 0.75, ('how', 'do'))
    >>> t.bm25_overlap_ratio  # 3 of the 6 terms BM25 scores: how, do, statin, reduc, breast, cancer
    0.5
    """
    forms: dict[str, list[str]] = {}
    count: dict[str, int] = {}
    for word, stem, _, _ in _analyze(query):
        seen = forms.setdefault(stem, [])
        count[stem] = count.get(stem, 0) + 1
        if word not in seen:
            seen.append(word)
    if doc_stems is None:
        doc_stems = set(tokenize([doc])[0])
    all_stems = tuple(forms)
    ignored = tuple(s for s in all_stems if all(w in query_stopwords for w in forms[s]))
    stems = tuple(s for s in all_stems if s not in ignored)
    display = {s: "/".join(forms[s]) for s in all_stems}
    s_present = tuple(s for s in stems if s in doc_stems)
    s_missing = tuple(s for s in stems if s not in doc_stems)
    n_bm25_present = len(s_present) + sum(1 for s in ignored if s in doc_stems)
    share = None
    if weights is not None:
        weight = {s: count[s] * weights.get(s, 0.0) for s in all_stems}
        total = sum(weight.values())
        share = sum(w for s, w in weight.items() if s in doc_stems) / total if total > 0 else 0.0
    return TermOverlap(
        query_terms=tuple(display[s] for s in stems),
        stems=stems,
        present=tuple(display[s] for s in s_present),
        missing=tuple(display[s] for s in s_missing),
        stems_present=s_present,
        stems_missing=s_missing,
        overlap_ratio=len(s_present) / len(stems) if stems else 0.0,
        ignored=tuple(display[s] for s in ignored),
        ignored_stems=ignored,
        bm25_overlap_ratio=n_bm25_present / len(all_stems) if all_stems else 0.0,
        weight_share=share,
    )


def highlight_spans(doc_text: str, stems: Iterable[str]) -> list[tuple[int, int]]:
    """Character spans ``(start, end)`` (``doc_text[start:end]`` is the word) of the tokens whose stem is in ``stems``.

    Spans are in text order and never overlap; stopwords are never highlighted. Use with
    ``TermOverlap.stems_present`` to mark the query terms a document matched.

    >>> highlight_spans("Statin use; statins work", {"statin"})
    [(0, 6), (12, 19)]
    """
    wanted = set(stems)
    if not wanted:
        return []
    return [(a, b) for _, stem, a, b in _analyze(doc_text) if stem in wanted]
