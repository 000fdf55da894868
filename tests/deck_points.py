"""Generated map tables for the deck.gl map at any size (no projection): Gaussian blobs in 2-D as a UMAP layout
would give, 1% queries, up to 300 failed queries each linked to a target and a top retrieved document. Used by
tests/browser_map_app.py and bench/bench_map_deck.py."""

from __future__ import annotations

import numpy as np
import pandas as pd

from diagnose.failures import CLASSES as _ALL_CLASSES

# every class a failed query drawn on the map can have (a missing_document target has no point)
CLASSES = [c for c in _ALL_CLASSES if c != "missing_document"]


def frames(n: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(0)
    centres = rng.uniform(-10, 10, size=(40, 2))
    lab = rng.integers(len(centres), size=n)
    xy = centres[lab] + rng.standard_normal((n, 2)) * rng.uniform(0.3, 1.2, size=len(centres))[lab, None]
    n_q = max(n // 100, 4)
    n_d = n - n_q
    n_f = min(300, n_q // 2)
    role = np.array(["document"] * n_d + ["query"] * n_q, dtype=object)
    role[n_d : n_d + n_f] = "failed query"
    targets = rng.choice(n_d, n_f, replace=False)
    top = rng.choice(np.setdiff1d(np.arange(n_d), targets), n_f, replace=False)
    role[targets] = "target"
    role[top] = "retrieved"
    ids = [f"d{i}" for i in range(n_d)] + [f"q{i}" for i in range(n_q)]
    cls = [""] * n
    for i in range(n_f):
        cls[n_d + i] = CLASSES[i % len(CLASSES)]
    points = pd.DataFrame(
        {
            "x": xy[:, 0],
            "y": xy[:, 1],
            "kind": ["document"] * n_d + ["query"] * n_q,
            "id": ids,
            "snippet": [
                f"<b>text</b> of {i} & some more words about topic {lab[k]}" for k, i in enumerate(ids)
            ],
            "role": role,
            "failure_class": cls,
        }
    )
    q = np.arange(n_d, n_d + n_f)
    edges = pd.DataFrame(
        {
            "x": np.r_[xy[q, 0], xy[q, 0]],
            "y": np.r_[xy[q, 1], xy[q, 1]],
            "x2": np.r_[xy[targets, 0], xy[top, 0]],
            "y2": np.r_[xy[targets, 1], xy[top, 1]],
            "query_id": [ids[i] for i in q] * 2,
            "edge": ["target"] * n_f + ["top retrieved"] * n_f,
        }
    )
    return points, edges
