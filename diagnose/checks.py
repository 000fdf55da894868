"""Parameter checks at the door: one home for "is this a positive integer, a finite number in range, one of these
choices, a path, a list of X".

Each check takes the value the user gave and the name of the library parameter, returns the value normalised (an
``int``, a ``float``, a ``Path``, a ``list``), or raises :class:`~diagnose.data.DataError` with ``param`` set, a
message naming the parameter, what was given and what is expected. The CLI maps ``param`` to its flag, the app to
its widget. Check once where a value enters the library (a public function or ``Analysis``), then trust it.

``bool`` is refused wherever a number is expected (``True`` is an ``int`` in Python, never what a user meant);
numpy integers and floats are accepted as numbers.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from diagnose.data import DataError

T = TypeVar("T")

MAX_SHOWN = 80  # characters of a given value quoted in a message


def given(value: Any) -> str:
    """How a message quotes what the user gave: its repr (cut at :data:`MAX_SHOWN` characters), and its type when
    the repr does not show it (``'10'`` vs ``10``: the repr shows it; a list of paths: ``(a list)``)."""
    text = repr(value)
    if len(text) > MAX_SHOWN:
        text = text[: MAX_SHOWN - 3] + "..."
    if isinstance(value, str | int | float | bool | np.integer | np.floating) or value is None:
        return text
    return f"{text} (a {type(value).__name__})"


def is_int(value: Any) -> bool:
    """An integer (a Python or numpy int), not a bool."""
    return isinstance(value, int | np.integer) and not isinstance(value, bool)


def is_number(value: Any) -> bool:
    """A real number (int, float, numpy), not a bool; may be nan or infinite."""
    return isinstance(value, int | float | np.integer | np.floating) and not isinstance(value, bool)


def param_error(param: str, message: str) -> DataError:
    """``DataError(message, param=param)``: the error of a parameter whose check is not one of the below."""
    return DataError(message, param=param)


def flag(value: Any, param: str) -> bool:
    """``value`` as a ``bool``: ``True`` or ``False`` (a numpy bool too); anything else (``1``, ``"yes"``, None) is
    refused, since a truthy value is rarely what was meant for a switch."""
    if isinstance(value, bool | np.bool_):
        return bool(value)
    raise param_error(param, f"{param} must be True or False, got {given(value)}.")


def positive_int(value: Any, param: str, *, note: str = "") -> int:
    """``value`` as an ``int`` >= 1; refuses bools, floats (``1.5``, also ``2.0``), strings.

    Message: ``"{param} must be a positive integer{note}, got {value!r}."`` (``note`` e.g. ``" (the rank
    cutoff)"``)."""
    if not is_int(value) or value < 1:
        raise DataError(f"{param} must be a positive integer{note}, got {value!r}.", param=param)
    return int(value)


def integer_at_least(value: Any, param: str, low: int, *, note: str = "") -> int:
    """``value`` as an ``int`` >= ``low``; refuses bools, floats (``2.5``, also ``2.0``), strings.

    Message: ``"{param} must be an integer >= {low}{note}, got {value!r}."`` (``note`` e.g. ``" or None"``); for
    ``low`` 1 use :func:`positive_int`, whose wording users see for ``k``."""
    if not is_int(value) or value < low:
        raise DataError(f"{param} must be an integer >= {low}{note}, got {value!r}.", param=param)
    return int(value)


def rank_cutoff(value: Any, param: str = "k") -> int:
    """A rank cutoff (``k``, ``ks``): :func:`positive_int` with the note " (the rank cutoff)"."""
    return positive_int(value, param, note=" (the rank cutoff)")


def finite_number(
    value: Any,
    param: str,
    *,
    low: float | None = None,
    high: float | None = None,
    open_low: bool = False,
    open_high: bool = False,
    message: str | None = None,
) -> float:
    """``value`` as a finite ``float`` within ``[low, high]`` (``open_low``/``open_high``: the bound excluded; None:
    no bound). ``message``: the wording of the refusal, its ``{value!r}`` and ``{param}`` filled by :func:`fill` (default:
    ``"{param} must be a finite number in <range>, got {value!r}."``)."""
    ok = is_number(value) and math.isfinite(value)
    if ok and low is not None:
        ok = value > low if open_low else value >= low
    if ok and high is not None:
        ok = value < high if open_high else value <= high
    if not ok:
        text = (
            message
            or f"{param} must be a finite number{_range(low, high, open_low, open_high)}, got {{value!r}}."
        )
        raise DataError(fill(text, value=value, param=param), param=param)
    return float(value)


def _range(low: float | None, high: float | None, open_low: bool, open_high: bool) -> str:
    if low is not None and high is not None:
        return f" in {'(' if open_low else '['}{low:g}, {high:g}{')' if open_high else ']'}"
    if low is not None:
        return f" {'>' if open_low else '>='} {low:g}"
    if high is not None:
        return f" {'<' if open_high else '<='} {high:g}"
    return ""


def one_of(value: Any, param: str, choices: Collection[Any], *, message: str | None = None) -> Any:
    """``value`` when it is one of ``choices`` (compared with ``==``; an unhashable value is simply not one).

    Message (default): ``"{param} must be 'a', 'b' or 'c', got {value!r}."``; ``message`` replaces it, filled by
    :func:`fill` (``{value!r}``, ``{param}``, ``{choices}``: the choices quoted and joined by ", ")."""
    if isinstance(value, str | int | float | bool | type(None)) and value in choices:
        return value
    listed = ", ".join(repr(c) for c in choices)
    text = message or f"{param} must be {either(choices)}, got {{value!r}}."
    raise DataError(fill(text, value=value, param=param, choices=listed), param=param)


def fill(template: str, *, value: Any, param: str, choices: str = "") -> str:
    """``template`` with ``{value!r}``, ``{value}``, ``{param}`` and ``{choices}`` filled in; any other brace is
    left as is (a metric name in a message may hold one, where ``str.format`` would fail)."""
    for token, text_ in (
        ("{value!r}", repr(value)),
        ("{value}", str(value)),
        ("{param}", param),
        ("{choices}", choices),
    ):
        template = template.replace(token, text_)
    return template


def either(choices: Iterable[Any]) -> str:
    """``'a'``, ``'a' or 'b'``, ``'a', 'b' or 'c'``: choices quoted for a message."""
    quoted = [repr(c) for c in choices]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " or " + quoted[-1]


def path(value: Any, param: str, *, what: str = "a path", label: str | None = None) -> Path:
    """``value`` (a ``str`` or an ``os.PathLike``) as a :class:`~pathlib.Path`; anything else (an int, bytes, a
    list) is refused: ``"{label or param} must be {what} (a str or pathlib.Path), got ..."`` (``label``: how the
    message names the value when it is a part of the parameter, e.g. ``embeddings['doc']``)."""
    if isinstance(value, str | os.PathLike) and not isinstance(value, bytes):
        fs = os.fspath(value)
        if isinstance(fs, str):
            return Path(fs)
    raise DataError(
        f"{label or param} must be {what} (a str or pathlib.Path), got {given(value)}.", param=param
    )


def optional_path(value: Any, param: str, *, what: str = "a path") -> Path | None:
    """:func:`path`, or None for None."""
    return None if value is None else path(value, param, what=what)


def list_of(
    value: Any,
    param: str,
    item: Callable[[Any], T],
    *,
    expected: str,
    single: Callable[[Any], bool] | None = None,
) -> list[T]:
    """``value`` (a list, tuple, set or other iterable that is neither a string nor a mapping) as a list, each
    element through ``item`` (which checks it and raises the :class:`DataError`).

    ``single``: a predicate for a lone element given without a list (``k=10``, ``baselines="bm25"``), taken as
    a list of one; without it, or when it says no, a string, a mapping or a non-iterable is refused with
    ``"{param} must be {expected}, got ..."``."""
    if single is not None and single(value):
        return [item(value)]
    if isinstance(value, str | bytes | Mapping) or not isinstance(value, Iterable):
        raise DataError(f"{param} must be {expected}, got {given(value)}.", param=param)
    return [item(x) for x in value]


def strings(value: Any, param: str, *, what: str) -> list[str]:
    """``value``: one string, or a list of them (``what``: what they are, e.g. "metric names such as 'ndcg@10'"),
    as a list. Empty strings are kept (``"ndcg@10,".split(",")``: the reader skips them)."""
    return list_of(
        value,
        param,
        lambda x: text(x, param, what=f"{what} (strings)", empty_ok=True),
        expected=f"{what} (a str or a list of str)",
        single=lambda v: isinstance(v, str),
    )


def cutoffs(value: Any, param: str = "k") -> list[int]:
    """``value``: one rank cutoff or a list of them (each a positive integer), as a list."""
    expected = "a positive integer or a list of positive integers (the rank cutoffs)"
    return list_of(value, param, lambda x: rank_cutoff(x, param), expected=expected, single=is_int)


def mapping(value: Any, param: str, *, expected: str, fix: str = "") -> Mapping[Any, Any]:
    """``value`` when it is a mapping (a dict); otherwise ``"{param} must be {expected}, got ...{fix}"``."""
    if not isinstance(value, Mapping):
        raise DataError(f"{param} must be {expected}, got {given(value)}.{fix}", param=param)
    return value


def field_names(
    value: Any, param: str, keys: Sequence[str], *, expected: str, naming: str
) -> dict[str, str | None]:
    """A mapping of field roles to names, checked: a dict (``expected`` otherwise) whose keys are among ``keys`` and
    whose values each name ``naming`` (a str) or are None: ``"{param}[key] = value: the keys are ..., each naming
    {naming} or None."`` otherwise (the corpus columns of ``diagnose.load``, a collection's metadata fields)."""
    named = dict(mapping(value, param, expected=expected))
    for key, name in named.items():
        if key not in keys or not (name is None or isinstance(name, str)):
            raise DataError(
                f"{param}[{key!r}] = {given(name)}: the keys are {either(keys)}, each naming {naming} or None.",
                param=param,
            )
    return named


def text(value: Any, param: str, *, what: str = "a string", empty_ok: bool = False) -> str:
    """``value`` when it is a string, non-empty after stripping unless ``empty_ok``; otherwise ``"{param} must be
    {what}, got ..."``."""
    if not isinstance(value, str) or not (empty_ok or value.strip()):
        raise DataError(f"{param} must be {what}, got {given(value)}.", param=param)
    return value
