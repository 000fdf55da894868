"""What the tests of diagnose.stats share (tests/test_stats_*.py): scores of two runs with the null true or a shift,
and a fixed pair of score vectors."""

from __future__ import annotations

import numpy as np


def null_pair(rng: np.random.Generator, n: int, shift: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """Metric-like scores of two runs on n queries: a shared per-query difficulty plus i.i.d. run noise,
    clipped to [0, 1]. With shift=0 the runs are exchangeable on every query (the null is true)."""
    difficulty = rng.random(n)
    a = np.clip(difficulty + rng.normal(0, 0.2, n), 0, 1)
    b = np.clip(difficulty + shift + rng.normal(0, 0.2, n), 0, 1)
    return a, b


FIXED_A = np.array([0.30, 0.55, 0.10, 0.90, 0.42, 0.61, 0.00, 0.75, 0.33, 0.50, 0.20, 0.80])
FIXED_B = np.array([0.35, 0.50, 0.30, 0.95, 0.42, 0.70, 0.10, 0.70, 0.60, 0.52, 0.20, 0.91])
