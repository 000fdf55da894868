"""Colours, sizes and labels fixed per meaning, so a failure class, a quality band or a map role looks the same on
every page. Colour-blind-safe (Okabe-Ito). :mod:`diagnose.charts.deck` reads the same tables for the deck.gl map. A failure
class's colour and legend are fields of its record (:mod:`diagnose.failures.classes`); the tables here are views."""

from __future__ import annotations

from collections.abc import Sequence

from diagnose.failures.classes import FAILURE_CLASSES

#: Failure class id -> colour, in rule order; a view of the records (:data:`diagnose.failures.FAILURE_CLASSES`).
CLASS_COLORS: dict[str, str] = {c.id: c.color for c in FAILURE_CLASSES}
#: Failure class id -> legend label: the class and, in brackets, what it means; a view of the records.
CLASS_LEGENDS: dict[str, str] = {c.id: c.legend for c in FAILURE_CLASSES}
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
    """Legend label of a failure class id (the id itself for an unknown class, "None ..." for "")."""
    if not cls:
        return NO_CLASS_LABEL
    return CLASS_LEGENDS.get(cls, cls)


def class_scale(alt, classes: Sequence[str], *, with_none: bool = False):
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
