"""Values kept per object, for as long as the object lives: :class:`PerObject`.

For what is derived from an immutable object and asked for several times in one process: the fingerprints of an
Arrow array of ids (:mod:`diagnose.runtime.ids`), the qrels prepared for the metric join (:mod:`diagnose.metrics.join`).
Keyed by the object's identity (the object need not be hashable), checked through a weak reference, so a value
never outlives its object and another object that later gets the same ``id`` never sees it.
"""

from __future__ import annotations

import weakref
from collections.abc import Hashable
from typing import Any, Generic, TypeVar

V = TypeVar("V")


class PerObject(Generic[V]):
    """``{(object, key): value}`` for live objects (any object that takes a weak reference)."""

    def __init__(self) -> None:
        self._values: dict[tuple[int, Hashable], tuple[weakref.ref, V]] = {}

    def get(self, obj: Any, key: Hashable = None) -> V | None:
        """The value kept for ``obj`` (this very object) and ``key``, or None."""
        kept = self._values.get((id(obj), key))
        return kept[1] if kept is not None and kept[0]() is obj else None

    def keep(self, obj: Any, value: V, key: Hashable = None) -> V:
        """Keep ``value`` for ``obj`` and ``key`` until ``obj`` is collected; returns ``value``."""
        slot = (id(obj), key)
        values = self._values

        def forget(_: Any) -> None:
            values.pop(slot, None)

        values[slot] = (weakref.ref(obj, forget), value)
        return value
