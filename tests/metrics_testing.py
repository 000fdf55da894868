"""What the tests of diagnose.metrics and diagnose.ties share: every metric name the registry allows, so a family
added to ``REGISTRY`` is checked by every test that loops over them, without editing a list here."""

from __future__ import annotations

from collections.abc import Sequence

from diagnose.metrics import REGISTRY


def every_name(ks: Sequence[int], *, coverage: bool = True) -> list[str]:
    """Every form of every family at the cutoffs ``ks``, in registry order: ``family@k`` for each k when the family
    takes a cutoff, and ``family`` alone when it may go without (``mrr``, ``map``, ``r_precision``). ``coverage``:
    include the coverage families (``judged``, ``hole``)."""
    out: list[str] = []
    for m in REGISTRY.values():
        if m.coverage and not coverage:
            continue
        if m.cutoff != "required":
            out.append(m.name)
        if m.cutoff != "none":
            out += [f"{m.name}@{k}" for k in ks]
    return out
