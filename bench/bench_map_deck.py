"""The whole-collection map (deck.gl): projection time, deck JSON size, and the browser's first frame and frame time.

For each size n: clustered synthetic 384-d unit vectors (60 Gaussian blobs in a 24-d subspace plus noise, so UMAP
has structure to keep), 1% of them queries, projected with :func:`diagnose.projection.project_collection` (the
recipe of :func:`recipe_for`, or ``--recipe``) into an empty cache, then again from the cache; trustworthiness on the
usual 1,000-point sample. Then the deck spec of n generated 2-D points (``tests/deck_points.py``: the JSON
``st.pydeck_chart`` sends) and, unless ``--no-browser``, headless Chromium (software WebGL) on
``tests/browser_map_app.py``: time from navigation to the first drawn frame, median and p95
``requestAnimationFrame`` interval while zooming (wheel) and panning (drag).

    python bench/bench_map_deck.py [--sizes 10000,100000] [--recipe default|exact|pca50-nnd-200|pca50-nnd-100]
                                   [--no-projection] [--no-browser]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from diagnose import projection
from diagnose.charts import deck

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
RECIPES = {
    "default": None,
    "exact": projection.LayoutRecipe(),
    "pca50-nnd-200": projection.LayoutRecipe(knn="nndescent", pca_dims=50, n_epochs=200),
    "pca50-nnd-100": projection.LayoutRecipe(knn="nndescent", pca_dims=50, n_epochs=100),
}


def clustered(n: int, dim: int = 384, k: int = 60, intrinsic: int = 24, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    basis = np.linalg.qr(rng.standard_normal((dim, intrinsic)))[0].T.astype(np.float32)
    centres = rng.standard_normal((k, intrinsic)).astype(np.float32) * 2.0
    z = centres[rng.integers(k, size=n)] + rng.standard_normal((n, intrinsic), dtype=np.float32) * 0.8
    x = z @ basis + rng.standard_normal((n, dim), dtype=np.float32) * 0.05
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def timed(fn):
    t0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    return time.perf_counter() - t0, time.process_time() - c0, out


def browser(n: int, tmp: Path) -> dict[str, float]:
    import test_browser_map as tb
    from browser import chromium, running_app
    from playwright import sync_api

    with running_app(tb.APP, tmp / f"streamlit_{n}.log", tb.deck_env(n)) as url, chromium(sync_api) as b:
        page = b.new_page(viewport={"width": 1400, "height": 1000})
        page.set_default_timeout(600_000)
        shots = tmp / f"shots_{n}"
        shots.mkdir(exist_ok=True)
        return tb.measure(page, url, shots)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--recipe", default="default", choices=list(RECIPES))
    ap.add_argument("--no-projection", action="store_true")
    ap.add_argument("--no-browser", action="store_true")
    args = ap.parse_args()
    import deck_points

    with tempfile.TemporaryDirectory() as tmp:
        projection.project(clustered(2000, seed=1), use_cache=False)  # compile numba once, like a server
        print(
            "| points | recipe | projection cold: wall / CPU (s) | cached (s) | trustworthiness | deck build + "
            "JSON (s) | JSON MB | first frame (s) | median / p95 frame while zooming and panning (ms) |"
        )
        print("|---:|---|---:|---:|---:|---:|---:|---:|---:|")
        for n in [int(s) for s in args.sizes.split(",")]:
            cold = warm = trust = "-"
            recipe = RECIPES[args.recipe] or projection.recipe_for(n)
            if not args.no_projection:
                x = clustered(n)
                n_q = n // 100
                wall, cpu, p = timed(
                    lambda x=x, n_q=n_q, n=n, r=recipe: projection.project_collection(
                        x[:-n_q], x[-n_q:], cache_dir=f"{tmp}/p{n}", recipe=r
                    )
                )
                cold, trust = f"{wall:.1f} / {cpu:.1f}", f"{p.trustworthiness:.3f}"
                wall, _, again = timed(
                    lambda x=x, n_q=n_q, n=n, r=recipe: projection.project_collection(
                        x[:-n_q], x[-n_q:], cache_dir=f"{tmp}/p{n}", recipe=r
                    )
                )
                assert again.cached
                warm = f"{wall:.2f}"
            points, edges = deck_points.frames(n)
            t_json, _, payload = timed(lambda pts=points, e=edges: deck.embedding_deck(pts, e).to_json())
            ff = frame = "-"
            if not args.no_browser:
                r = browser(n, Path(tmp))
                ff = f"{r['first_frame_s']:.1f}"
                frame = f"{r['median_frame_ms']:.1f} / {r['p95_frame_ms']:.0f}"
            print(
                f"| {n:,} | {recipe.describe()} | {cold} | {warm} | {trust} | {t_json:.1f} | "
                f"{len(payload) / 1e6:.1f} | {ff} | {frame} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
