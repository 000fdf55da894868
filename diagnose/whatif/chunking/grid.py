"""The grid of a chunking sweep: chunk sizes x overlaps, checked where they enter."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from diagnose import defaults
from diagnose.checks import is_int
from diagnose.data import DataError

#: The default grid: chunk sizes in the model's tokens, overlaps in the model's tokens.
#: The largest chunk size (and so overlap) accepted, in tokens: far beyond what any embedding model reads (512 to
#: 8,192 tokens), and within what the splitter (a Rust ``usize``) takes: ``10**20`` made it raise a TypeError.
MAX_CHUNK_SIZE = 1_000_000


@dataclass(frozen=True)
class ChunkingConfig:
    """One chunking: chunks of at most ``size`` tokens of the model's tokenizer, neighbours sharing up to
    ``overlap`` tokens."""

    size: int
    overlap: int

    def label(self) -> str:
        return f"size {self.size}, overlap {self.overlap}"


def _ints(values: Any, param: str, *, low: int, high: int = MAX_CHUNK_SIZE) -> list[int]:
    if isinstance(values, str):
        values = [v.strip() for v in values.split(",") if v.strip()]
    try:
        items = list(values)
    except TypeError:
        items = [values]
    if not items:
        raise DataError(
            f"No {param} given: give at least one value (e.g. 128,256,512 for sizes, 0,32 for overlaps).",
            param=param,
        )
    out = []
    for v in items:
        n = int(v) if isinstance(v, str) and v.lstrip("-").isdigit() else v
        if not is_int(n) or not low <= n <= high:
            raise DataError(
                f"{param} holds {v!r}, not an integer in [{low}, {high:,}] (tokens). Fix: a comma-separated list "
                "such as 128,256,512.",
                param=param,
            )
        out.append(int(n))
    return list(dict.fromkeys(out))


def check_grid(
    sizes: Iterable[Any] | str, overlaps: Iterable[Any] | str = defaults.CHUNK_OVERLAPS
) -> list[ChunkingConfig]:
    """Every ``(size, overlap)`` of ``sizes`` x ``overlaps`` (duplicates dropped, order kept). A size must be a
    positive integer at most :data:`MAX_CHUNK_SIZE`, an overlap an integer >= 0 (bools, floats refused), and a
    size larger than every overlap it is paired with: :class:`DataError` naming ``sizes`` or
    ``overlaps`` otherwise."""
    s = _ints(sizes, "sizes", low=1)
    o = _ints(overlaps, "overlaps", low=0)
    bad = [(a, b) for a in s for b in o if b >= a]
    if bad:
        a, b = bad[0]
        raise DataError(
            f"An overlap of {b} tokens is not smaller than the chunk size {a}; each chunk would repeat the "
            "previous one. Fix: overlaps smaller than every size (e.g. --overlaps 0,32 with --sizes 128,256,512).",
            param="overlaps",
        )
    return [ChunkingConfig(a, b) for a in s for b in o]
