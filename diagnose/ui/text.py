"""Safe rendering of user text (documents, queries, ids) in Streamlit markdown. No Streamlit import.

User text is never passed as HTML. Streamlit's markdown does not render raw HTML (no ``unsafe_allow_html`` here),
but it does interpret markdown, LaTeX (``$``), emoji shortcodes and colour directives (``:red[...]``), so every
ASCII punctuation character of user text is backslash-escaped (CommonMark allows escaping any ASCII punctuation)
and whitespace is folded, which leaves the text displayed literally. Highlights are added around escaped words
only, by us.
"""

from __future__ import annotations

import re
import string
from collections.abc import Sequence

_PUNCT = set(string.punctuation)
_WS = re.compile(r"\s+")


def escape_md(text: str | None) -> str:
    """``text`` with every ASCII punctuation character backslash-escaped and whitespace folded to one space."""
    if not text:
        return ""
    folded = _WS.sub(" ", str(text)).strip()
    return "".join("\\" + c if c in _PUNCT else c for c in folded)


def truncate(text: str | None, n: int = 160) -> str:
    t = _WS.sub(" ", text or "").strip()
    return t if len(t) <= n else t[: n - 1].rstrip() + "…"


def highlight_md(text: str, spans: Sequence[tuple[int, int]], *, style: str = "bold") -> str:
    """Markdown of ``text`` (escaped) with ``text[a:b]`` emphasised for every span ``(a, b)``.

    ``style="bold"`` wraps a span in ``**``; ``style="background"`` in Streamlit's ``:orange-background[**...**]``.
    Spans must be in order and must not overlap (as :func:`diagnose.lexical.highlight_spans` returns them).
    Whitespace inside the text is folded to single spaces after the spans are cut out.
    """
    out: list[str] = []
    pos = 0
    for a, b in spans:
        if a < pos or b <= a:
            continue
        out.append(_escape_keep_space(text[pos:a]))
        word = escape_md(text[a:b])
        out.append(f":orange-background[**{word}**]" if style == "background" else f"**{word}**")
        pos = b
    out.append(_escape_keep_space(text[pos:]))
    return _WS.sub(" ", "".join(out)).strip()


def _escape_keep_space(text: str) -> str:
    """Escape like :func:`escape_md` but keep leading/trailing spaces (they separate the highlighted words)."""
    return "".join("\\" + c if c in _PUNCT else (" " if c.isspace() else c) for c in text)


def chips(terms: Sequence[str], colour: str = "red") -> str:
    """Terms as Streamlit badges, escaped: ``:red-badge[term]``."""
    return " ".join(f":{colour}-badge[{escape_md(t)}]" for t in terms)


def fmt(v: float | int | None, digits: int = 3) -> str:
    """A number for display; ``None``/NaN as an em dash, like the tables (diagnose.ui.tables.MISSING)."""
    if v is None:
        return "—"
    try:
        f = float(v)
    except (TypeError, ValueError):
        return str(v)
    if f != f:
        return "—"
    return str(int(f)) if isinstance(v, int) else f"{f:.{digits}f}"


def rank_text(rank: int | None, depth: int | None = None) -> str:
    if rank is None:
        return f"not in the run (depth {depth})" if depth is not None else "—"
    return f"#{rank}"


def margin_words(margin: float, k: int) -> str:
    """What the sign of the margin shown means (issue 23: the sentence explained only the positive sign)."""
    if round(margin, 3) > 0:
        return f"positive: the #{k} document is closer to the query than the target, under this model"
    if round(margin, 3) < 0:
        return (
            f"negative: the target is closer to the query than the #{k} document under this model, yet the run "
            "ranks it lower: the run does not order by this model's cosine"
        )
    return f"zero at this precision: the target and the #{k} document are as close to the query"


def passage_md(
    text: str, start: int, length: int, window_char: int | None, window_tokens: int, *, context: int = 300
) -> str:
    """Markdown of a target's text (``title + " " + text``) with its best passage ``text[start:start + length]`` on a
    blue background and, at ``window_char`` (None: the whole text fits), a marker where the model's window of
    ``window_tokens`` tokens ends; only ``context`` characters before the first of the two and after the passage
    are shown ("…" marks a cut). Whitespace is folded as in :func:`highlight_md`."""
    first = start if window_char is None else min(start, window_char)
    lo, hi = max(0, first - context), min(len(text), max(start + length, window_char or 0) + context)
    marker = (
        f" :red-background[**⟂ the model's window ends here ({window_tokens} tokens); it never reads on**] "
    )
    cuts = sorted({lo, start, start + length, hi, *([window_char] if window_char is not None else [])})
    out: list[str] = ["… " if lo > 0 else ""]
    for a, b in zip(cuts, cuts[1:], strict=False):
        if a == window_char:
            out.append(marker)
        part = _escape_keep_space(text[a:b])
        out.append(
            f" :blue-background[{part.strip()}] " if start <= a < start + length and part.strip() else part
        )
    if window_char == hi:
        out.append(marker)
    out.append(" …" if hi < len(text) else "")
    return _WS.sub(" ", "".join(out)).strip()
