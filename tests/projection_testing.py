"""What the tests of the embedding map share (tests/test_projection_*.py): numbered ids."""

from __future__ import annotations


def numbered_ids(prefix: str, n: int) -> list[str]:
    return [f"{prefix}{i}" for i in range(n)]
