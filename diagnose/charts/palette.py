"""Colours, sizes and labels fixed per meaning, so a failure class, a quality band or a map role looks the same on
every page. Colour-blind-safe (Okabe-Ito). :mod:`diagnose.deck` reads the same tables for the deck.gl map."""

from __future__ import annotations

from collections.abc import Sequence

#: Stable failure class ids (same order as ``diagnose.failures.CLASSES``) -> colour (Okabe-Ito palette).
CLASS_COLORS: dict[str, str] = {
    "missing_document": "#000000",
    "label_gap": "#CC79A7",
    "near_miss": "#E69F00",
    "index_gap": "#56B4E9",
    "vocabulary_mismatch": "#009E73",
    "semantic_gap": "#0072B2",
    "ranking_failure": "#D55E00",
}
#: Legend labels: the class and, in brackets, what it means (see ``diagnose.failures`` for the rules).
CLASS_LABELS: dict[str, str] = {
    "missing_document": "Missing document (not in the corpus)",
    "label_gap": "Label gap (unjudged near-duplicate retrieved)",
    "near_miss": "Near miss (ranked just below k)",
    "index_gap": "Index gap (exact search finds it, the run does not)",
    "vocabulary_mismatch": "Vocabulary mismatch (different words)",
    "semantic_gap": "Semantic gap (neither dense nor BM25 finds it)",
    "ranking_failure": "Ranking failure (findable but outranked)",
}
OTHER_COLOR = "#9E9E9E"
NO_CLASS_LABEL = "None (not a failed query)"
BAND_COLORS: dict[str, str] = {
    "poor": "#D55E00",
    "acceptable": "#E69F00",
    "good": "#56B4E9",
    "excellent": "#009E73",
    "n/a": OTHER_COLOR,
}
RUN_PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")
OUTCOME_COLORS: dict[str, str] = {"hit": "#0072B2", "miss": "#D55E00"}
CHANGE_COLORS: dict[str, str] = {
    "fixed": "#009E73",
    "better": "#8CCFB9",
    "same": "#BDBDBD",
    "worse": "#F0A47A",
    "broken": "#D55E00",
}
ROLE_COLORS: dict[str, str] = {
    "failed query": "#D55E00",
    "query": "#0072B2",
    "target": "#009E73",
    "retrieved": "#E69F00",
    "document": "#9E9E9E",
}
ROLE_SIZES: dict[str, int] = {
    "failed query": 180,
    "query": 70,
    "target": 110,
    "retrieved": 60,
    "document": 22,
}
ROLE_OPACITY: dict[str, float] = {
    "failed query": 1.0,
    "query": 0.85,
    "target": 0.95,
    "retrieved": 0.85,
    "document": 0.35,
}
ROLE_SHAPES: dict[str, str] = {"failed query": "triangle-up", "query": "circle"}
EDGE_DASH: dict[str, list[int]] = {"target": [1, 0], "top retrieved": [4, 3]}


def class_label(cls: str) -> str:
    """Human label of a failure class id (the id itself for an unknown class, "None ..." for "")."""
    if not cls:
        return NO_CLASS_LABEL
    return CLASS_LABELS.get(cls, cls)


def _class_scale(alt, classes: Sequence[str], *, with_none: bool = False):
    """Colour scale over class *labels*: every known class in taxonomy order (so a colour never moves), then any
    unknown class present in the data (grey), then the "none" label when asked."""
    known = list(CLASS_COLORS)
    extra = sorted({c for c in classes if c and c not in CLASS_COLORS})
    domain = [class_label(c) for c in known + extra]
    colours = [CLASS_COLORS[c] for c in known] + [OTHER_COLOR] * len(extra)
    if with_none:
        domain.append(NO_CLASS_LABEL)
        colours.append("#C8C8C8")
    return alt.Scale(domain=domain, range=colours)
