"""Embedding map: sampling, exact k-NN, UMAP projection quality, the coordinate cache, the chart tables.

Only two real UMAP fits in this file (module-scoped fixture + one determinism check): the first fit in a process
compiles numba code. Every other test replaces the fit with a fake that counts its calls.
"""

from __future__ import annotations

import warnings
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from diagnose import projection as pj
from diagnose.cache import ArrayCache, CacheWarning
from diagnose.data import DataError, ValidationReport
from diagnose.projection import FailedQuery, MapSample
from diagnose.projection.frames import shorten

# ------------------------------------------------------------------------------------------------ sampling


def _ids(prefix: str, n: int) -> list[str]:
    return [f"{prefix}{i}" for i in range(n)]


@settings(max_examples=150, deadline=None)
@given(
    n_docs=st.integers(0, 120),
    n_queries=st.integers(0, 40),
    cap=st.integers(0, 200),
    seed=st.integers(0, 2**31 - 1),
    data=st.data(),
)
def test_sample_keeps_every_must_row_and_respects_the_cap(n_docs, n_queries, cap, seed, data):
    docs, queries = _ids("d", n_docs), _ids("q", n_queries)
    must_d = set(data.draw(st.lists(st.sampled_from(docs), unique=True))) if docs else set()
    must_q = set(data.draw(st.lists(st.sampled_from(queries), unique=True))) if queries else set()
    s = pj.sample_for_map(docs, queries, must_docs=must_d, must_queries=must_q, cap=cap, seed=seed)
    kept_d = {docs[i] for i in s.doc_rows}
    kept_q = {queries[i] for i in s.query_rows}
    assert must_d <= kept_d and must_q <= kept_q
    n_must = len(must_d) + len(must_q)
    # never more than the cap, unless the must-keep rows alone exceed it; never fewer than min(cap, everything)
    assert s.n_points <= max(cap, n_must)
    assert s.n_points == max(min(cap, n_docs + n_queries), n_must)
    assert s.over_cap == (n_must > cap)
    for rows, n in ((s.doc_rows, n_docs), (s.query_rows, n_queries)):
        assert rows.dtype == np.int64
        assert list(rows) == sorted(set(rows.tolist()))
        assert all(0 <= r < n for r in rows)
    assert (s.n_docs, s.n_queries, s.n_must_docs, s.n_must_queries) == (
        n_docs,
        n_queries,
        len(must_d),
        len(must_q),
    )
    again = pj.sample_for_map(docs, queries, must_docs=must_d, must_queries=must_q, cap=cap, seed=seed)
    assert np.array_equal(again.doc_rows, s.doc_rows) and np.array_equal(again.query_rows, s.query_rows)


def test_sample_splits_the_rest_in_proportion_and_is_seeded():
    docs, queries = _ids("d", 1000), _ids("q", 100)
    must_d, must_q = set(docs[:10]), set(queries[:5])
    s = pj.sample_for_map(docs, queries, must_docs=must_d, must_queries=must_q, cap=115, seed=0)
    # budget 115 - 15 = 100 over 990 other docs + 95 other queries (1085):
    # queries floor(100*95/1085) = 8, docs floor(100*990/1085) = 91, one left over; remainders
    # 100*990 % 1085 = 265 < 100*95 % 1085 = 820, so it goes to the queries: 91 + 10 docs, 9 + 5 queries.
    assert (len(s.doc_rows), len(s.query_rows)) == (101, 14)
    other = pj.sample_for_map(docs, queries, must_docs=must_d, must_queries=must_q, cap=115, seed=1)
    assert not np.array_equal(other.doc_rows, s.doc_rows)  # another seed, another sample of the rest
    doc_rows, query_rows = s  # unpacks like the (doc_rows, query_rows) tuple
    assert doc_rows is s.doc_rows and query_rows is s.query_rows


def test_sample_caption_and_unplaced_ids():
    s = pj.sample_for_map(
        _ids("d", 50), _ids("q", 10), must_docs={"d1", "not-in-corpus"}, must_queries={"q2"}, cap=20, seed=3
    )
    assert s.unplaced_docs == ("not-in-corpus",)
    assert s.sampled
    # 20 points, 2 must (d1, q2); rest 18 split 49:9 of 58 -> docs floor(18*49/58)=15, queries floor(18*9/58)=2,
    # 1 left: remainders 18*49 % 58 = 12, 18*9 % 58 = 46 -> queries: 16 docs, 4 queries.
    assert s.caption().startswith("Showing 16 of 50 documents and 4 of 10 queries")
    assert "not in the corpus" in s.caption()
    everything = pj.sample_for_map(_ids("d", 5), _ids("q", 2), cap=4000)
    assert not everything.sampled
    assert everything.caption() == "Showing 5 of 5 documents and 2 of 2 queries."


def test_sample_keeps_all_must_rows_above_the_cap():
    s = pj.sample_for_map(
        _ids("d", 10), _ids("q", 10), must_docs=set(_ids("d", 6)), must_queries={"q0"}, cap=4
    )
    assert (len(s.doc_rows), len(s.query_rows)) == (6, 1) and s.over_cap


def test_must_keep_and_failed_queries_from_failures():
    f = [
        SimpleNamespace(query_id="q1", doc_id="d1", cls="near_miss"),
        SimpleNamespace(query_id="q1", doc_id="d2", cls="semantic_gap"),
        SimpleNamespace(query_id="q1", doc_id="d3", cls="semantic_gap"),
        SimpleNamespace(query_id="q2", doc_id="d4", cls="label_gap"),
        SimpleNamespace(query_id="q2", doc_id="d5", cls="near_miss"),
    ]
    lists = {"q1": ["d9", "d8", "d7", "d6"], "q2": ["d7"]}
    out = pj.failed_queries_from(f, lists, k=3)
    # q1: semantic_gap twice vs near_miss once; q2: a 1-1 tie goes to its first failure (label_gap)
    assert out == [
        FailedQuery("q1", "semantic_gap", ("d1", "d2", "d3"), ("d9", "d8", "d7")),
        FailedQuery("q2", "label_gap", ("d4", "d5"), ("d7",)),
    ]
    docs, queries = pj.must_keep(out)
    assert queries == {"q1", "q2"}
    assert docs == {"d1", "d2", "d3", "d4", "d5", "d9", "d8", "d7"}


# ------------------------------------------------------------------------------------------------ k-NN


def test_exact_cosine_knn_matches_brute_force_and_puts_self_first():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(57, 6)).astype(np.float32)
    x[5] = 0.0  # a zero vector: cosine 0 with everything, distance 1
    idx, dist = pj.exact_cosine_knn(x, 7, block=10)
    unit = x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)
    sims = unit @ unit.T
    np.fill_diagonal(sims, np.inf)
    for i in range(len(x)):
        expected = sorted(range(len(x)), key=lambda j: (-sims[i, j], j))[:7]
        assert idx[i].tolist() == expected
    assert (idx[:, 0] == np.arange(len(x))).all() and (dist[:, 0] == 0).all()
    assert (np.diff(dist, axis=1) >= 0).all()
    assert np.allclose(dist[5, 1:], 1.0)
    idx2, _ = pj.exact_cosine_knn(x[:3], 7)  # k larger than n: every point
    assert idx2.shape == (3, 3)


# ------------------------------------------------------------------------------------------------ projection


def _clusters(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """3 well-separated Gaussian clusters of 100 points in 50-D.

    Centres ~ N(0, 3^2) per coordinate (pairwise distance ~ 3*sqrt(100) = 30); noise with standard deviations
    decaying from 1 to 0.05 across dimensions, i.e. most within-cluster variance in a few directions. (With isotropic
    50-D noise the neighbourhoods inside a cluster are nearly random and trustworthiness sits at ~0.905 for any
    method: nothing to preserve.)
    """
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(3, 50)) * 3
    scale = np.geomspace(1.0, 0.05, 50)
    x = np.concatenate([centres[i] + rng.normal(size=(100, 50)) * scale for i in range(3)])
    return x.astype(np.float32), np.repeat([0, 1, 2], 100)


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    x, labels = _clusters()
    cache_dir = tmp_path_factory.mktemp("projections")
    proj = pj.project(x, cache_dir=cache_dir)  # real UMAP fit no. 1
    return SimpleNamespace(x=x, labels=labels, proj=proj, cache_dir=cache_dir)


def test_projection_keeps_clusters_and_neighbourhoods(fitted):
    from sklearn.metrics import silhouette_score

    p = fitted.proj
    assert p.coords.dtype == np.float32 and p.coords.shape == (300, 2) and np.isfinite(p.coords).all()
    assert p.method == "umap" and not p.cached
    assert p.trustworthiness >= 0.9
    assert (p.trust_points, p.trust_neighbors) == (300, 5)
    assert silhouette_score(p.coords, fitted.labels) >= 0.7
    # every point's 5 nearest 2-D neighbours come from its own cluster
    d = np.linalg.norm(p.coords[:, None] - p.coords[None], axis=2)
    np.fill_diagonal(d, np.inf)
    nn = np.argsort(d, axis=1)[:, :5]
    assert (fitted.labels[nn] == fitted.labels[:, None]).mean() >= 0.99
    assert "Trustworthiness" in p.describe()


def test_projection_is_deterministic_with_a_seed(fitted):
    again = pj.project(fitted.x, use_cache=False)  # real UMAP fit no. 2
    assert np.array_equal(again.coords, fitted.proj.coords)


@pytest.fixture
def fake_fit(monkeypatch):
    calls = []

    def fit(x, n_neighbors, min_dist, seed):
        calls.append(len(x))
        return (np.asarray(x)[:, :2] * 10).astype(np.float32)

    monkeypatch.setattr(pj.layout, "_fit_umap", fit)
    return calls


def test_second_call_loads_from_the_cache(fitted, fake_fit):
    p = pj.project(fitted.x, cache_dir=fitted.cache_dir)
    assert fake_fit == []  # no fit: read from disk
    assert p.cached and np.array_equal(p.coords, fitted.proj.coords)
    assert p.trustworthiness == fitted.proj.trustworthiness


def test_parameters_and_bytes_change_the_key(fitted):
    x = fitted.x
    base = pj.cache_key(x, n_neighbors=15, min_dist=0.1, seed=42)
    assert base == pj.cache_key(x.copy(), n_neighbors=15, min_dist=0.1, seed=42)
    others = {
        pj.cache_key(x, n_neighbors=10, min_dist=0.1, seed=42),
        pj.cache_key(x, n_neighbors=15, min_dist=0.2, seed=42),
        pj.cache_key(x, n_neighbors=15, min_dist=0.1, seed=None),
        pj.cache_key(x.astype(np.float64), n_neighbors=15, min_dist=0.1, seed=42),
        pj.cache_key(x.reshape(600, 25), n_neighbors=15, min_dist=0.1, seed=42),  # same bytes, other shape
        pj.cache_key(np.roll(x, 1, axis=0), n_neighbors=15, min_dist=0.1, seed=42),
    }
    assert base not in others and len(others) == 6


def test_corrupt_cache_file_warns_and_recomputes(tmp_path, fake_fit):
    x, _ = _clusters(1)
    pj.project(x, cache_dir=tmp_path)
    assert fake_fit == [300]
    key = pj.cache_key(x, n_neighbors=15, min_dist=0.1, seed=42)
    path = tmp_path / pj.ArrayCache(tmp_path).path_for(key).name
    path.write_bytes(b"\x93NUMPY garbage")
    with pytest.warns(CacheWarning, match="unreadable"):
        p = pj.project(x, cache_dir=tmp_path)
    assert fake_fit == [300, 300] and not p.cached
    assert np.array_equal(np.load(path, allow_pickle=False), p.coords)  # rewritten
    # NaN coordinates in a well-formed file: same treatment, reported in the ValidationReport when given one
    np.save(path, np.full((300, 2), np.nan, dtype=np.float32))
    report = ValidationReport()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        p = pj.project(x, cache_dir=tmp_path, report=report)
    assert fake_fit == [300, 300, 300] and not p.cached
    assert [pr.code for pr in report] == ["cache_corrupt"]


def test_use_cache_false_and_the_env_override(tmp_path, monkeypatch, fake_fit):
    x, _ = _clusters(2)
    pj.project(x, cache_dir=tmp_path, use_cache=False)
    assert list(tmp_path.iterdir()) == []
    monkeypatch.setenv("DIAGNOSE_CACHE_DIR", str(tmp_path / "root"))
    assert pj.default_projection_dir() == tmp_path / "root" / "projections"
    pj.project(x)
    assert len(list((tmp_path / "root" / "projections").glob("*.npy"))) == 2  # coordinates + trustworthiness


def test_tiny_and_bad_inputs(tmp_path, fake_fit):
    empty = pj.project(np.zeros((0, 4), dtype=np.float32), cache_dir=tmp_path)
    assert empty.coords.shape == (0, 2) and np.isnan(empty.trustworthiness)
    one = pj.project(np.ones((1, 4), dtype=np.float32), cache_dir=tmp_path)
    assert one.coords.shape == (1, 2) and one.method == "pca" and np.isnan(one.trustworthiness)
    few = pj.project(np.eye(5, dtype=np.float32), cache_dir=tmp_path)
    assert few.method == "pca" and few.coords.shape == (5, 2)
    assert fake_fit == []  # below MIN_UMAP_POINTS no UMAP
    bad = np.ones((4, 3), dtype=np.float32)
    bad[2, 1] = np.nan
    with pytest.raises(DataError, match=r"rows 2"):
        pj.project(bad, cache_dir=tmp_path)
    with pytest.raises(DataError, match="2-D"):
        pj.project(np.ones(5), cache_dir=tmp_path)


def test_numba_cache_switch_respects_the_env(monkeypatch):
    monkeypatch.setattr(pj.layout, "_NUMBA_CACHE_DONE", False)
    monkeypatch.setenv(pj.NUMBA_CACHE_ENV, "0")
    assert pj.enable_numba_cache() == 0


# ------------------------------------------------------------------------------------------------ tables


def test_snippet_is_plain_and_short():
    # tags dropped, entities decoded, whitespace (the decoded no-break space too) collapsed
    assert pj.snippet("<p>Vitamin&nbsp;D   and\n bones</p>") == "Vitamin D and bones"
    long = "word " * 60
    s = pj.snippet(long)
    assert len(s) <= 140 and s.endswith("…") and not s[:-1].endswith(" ")
    assert pj.snippet(None) == "" and pj.snippet("") == ""


def _snippet_whole(text: str, limit: int = pj.SNIPPET_CHARS) -> str:
    """The snippet computed by cleaning the whole text (what pj.snippet must equal; it only cleans a prefix)."""
    import html
    import re

    t = re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]{0,200}>", " ", text))).strip()
    return shorten(t, limit)


def test_shorten_cuts_at_a_word_boundary_in_the_last_40_percent():
    assert shorten("short", 10) == "short"
    # limit 10: the cut keeps 9 characters "abcdefg h"; its last space (index 7) is >= int(10 * 0.6) = 6: cut there
    assert shorten("abcdefg hij", 10) == "abcdefg…"
    # "aaaa bbbb": the last space (index 4) is < 6, so the word is cut instead; 9 characters + "…" = 10
    assert shorten("aaaa bbbb cccc", 10) == "aaaa bbbb…"
    # trailing punctuation before the ellipsis is dropped: "abcdefg," -> "abcdefg"
    assert shorten("abcdefg, hij", 10) == "abcdefg…"


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            ["word", "<b>", "</b>", "<p class='x'>", "&amp;", "&nbsp;", " ", "\n", "long" * 30, "<", ">"]
        ),
        max_size=400,
    )
)
def test_snippet_of_a_prefix_equals_the_snippet_of_the_whole_text(parts):
    text = "".join(parts)
    assert pj.snippet(text) == _snippet_whole(text)


def test_snippet_of_long_markup_matches_the_whole_text():
    prefix = 4 * pj.SNIPPET_CHARS + 256  # the part of a long text snippet() cleans first
    words = "plain words " * 10  # 120 characters of text
    # 1. mostly markup: the cleaned prefix is empty, the words come later
    text = "<i>" * (prefix // 3 + 10) + words * 3
    assert pj.snippet(text) == _snippet_whole(text) != ""
    # 2. a tag cut in half by the prefix, right after short text: its "<p ..." must not leak into the snippet
    tag = "<p class='" + "x" * 60 + "'>"
    filler = "<b>" * ((prefix - len(words) - 20) // 3)
    text = filler + words + tag + "more text " * 20
    assert len(filler + words) < prefix < len(filler + words + tag)
    assert pj.snippet(text) == _snippet_whole(text)
    assert "<" not in pj.snippet(text)
    # 3. an entity cut in half by the prefix, glued to 138 characters of text: "&nb" must not leak either
    filler = "<b>" * ((prefix - 141) // 3)
    text = filler + "x" * 138 + "&nbsp;tail " + "more " * 50
    assert len(filler) + 138 + 3 == prefix
    assert pj.snippet(text) == _snippet_whole(text)
    assert "&" not in pj.snippet(text)


def _tiny_map():
    doc_ids = ["d1", "d2", "d3", "d4"]
    doc_texts = ["one", "two <b>bold</b>", "three", "four"]
    query_ids = ["q1", "q2", "q3"]
    query_texts = ["first?", "second?", "third?"]
    failed = [FailedQuery("q1", "near_miss", ("d2", "dX"), ("d3", "d1"))]
    s = pj.sample_for_map(doc_ids, query_ids, must_docs={"d1", "d2", "d3", "dX"}, must_queries={"q1"}, cap=6)
    # cap 6: must d1, d2, d3, q1 (dX is not in the corpus) + 2 of the other 3 (d4, q2, q3)
    coords = np.arange(2 * s.n_points, dtype=np.float32).reshape(-1, 2)
    points = pj.map_frame(
        coords,
        s,
        doc_ids=doc_ids,
        doc_texts=doc_texts,
        query_ids=query_ids,
        query_texts=query_texts,
        failed=failed,
    )
    return s, points, failed


def test_map_frame_roles_and_columns():
    s, points, _ = _tiny_map()
    assert list(points.columns) == ["x", "y", "kind", "id", "snippet", "role", "failure_class"]
    assert len(points) == 6 and s.unplaced_docs == ("dX",)
    by_id = points.set_index("id")
    assert by_id.loc["d2", "role"] == "target" and by_id.loc["d2", "snippet"] == "two bold"
    assert by_id.loc["d1", "role"] == "retrieved" and by_id.loc["d3", "role"] == "retrieved"
    assert by_id.loc["q1", "role"] == "failed query" and by_id.loc["q1", "failure_class"] == "near_miss"
    assert (points.loc[points["id"] != "q1", "failure_class"] == "").all()
    assert (points["kind"].iloc[: len(s.doc_rows)] == "document").all()
    # coordinates follow the stacked order: documents (sample order) then queries
    assert points["x"].tolist() == [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]
    with pytest.raises(ValueError, match="expected"):
        pj.map_frame(np.zeros((2, 2)), s, doc_ids=[], doc_texts=[], query_ids=[], query_texts=[])


def test_map_edges_link_failed_queries_to_targets_and_top_retrieved():
    _, points, failed = _tiny_map()
    edges = pj.map_edges(points, failed)
    xy = points.set_index("id")[["x", "y"]]
    # d2 is the only placed target (dX is not in the corpus); d3 is the top retrieved document
    assert edges[["query_id", "edge"]].values.tolist() == [["q1", "target"], ["q1", "top retrieved"]]
    assert edges.iloc[0][["x", "y", "x2", "y2"]].tolist() == [*xy.loc["q1"], *xy.loc["d2"]]
    assert edges.iloc[1][["x2", "y2"]].tolist() == list(xy.loc["d3"])
    assert pj.map_edges(points, []).columns.tolist() == ["x", "y", "x2", "y2", "query_id", "edge"]


def test_build_map_chains_the_steps(tmp_path, fake_fit):
    rng = np.random.default_rng(4)
    doc_vecs, query_vecs = rng.normal(size=(60, 8)), rng.normal(size=(12, 8))
    doc_ids, query_ids = _ids("d", 60), _ids("q", 12)
    failed = [FailedQuery("q3", "semantic_gap", ("d7",), ("d1", "d2"))]
    m = pj.build_map(
        doc_ids=doc_ids,
        doc_texts=[f"text {i}" for i in range(60)],
        doc_vecs=doc_vecs,
        query_ids=query_ids,
        query_texts=[f"query {i}" for i in range(12)],
        query_vecs=query_vecs,
        failed=failed,
        cap=30,
        cache_dir=tmp_path,
    )
    assert fake_fit == [30] and len(m.points) == 30 == m.sample.n_points
    assert {"d7", "d1", "d2", "q3"} <= set(m.points["id"])
    assert len(m.edges) == 2
    assert isinstance(m.sample, MapSample) and isinstance(m.points, pd.DataFrame)
    with pytest.raises(DataError, match="same model"):
        pj.stack_vectors(m.sample, doc_vecs, query_vecs[:, :4])


# ------------------------------------------------------------------------------------------------ whole collection


class _Recorder:
    def __init__(self):
        self.steps, self.bars = [], []

    def step(self, label):
        self.steps.append(label)

    def bar(self, label):
        self.steps.append(label)
        return lambda done, total: self.bars.append((done, total))


def _blobs(n, dim=32, k=6, seed=0):
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((k, dim)) * 4
    lab = rng.integers(k, size=n)
    return (centres[lab] + rng.standard_normal((n, dim))).astype(np.float32), lab


def test_recipe_switches_to_the_large_recipe_at_large_n():
    assert pj.recipe_for(19_999).is_exact_default
    big = pj.recipe_for(20_000)
    assert (big.knn, big.pca_dims, big.n_epochs) == ("nndescent", pj.LARGE_PCA_DIMS, pj.LARGE_EPOCHS)
    with pytest.raises(ValueError, match="knn"):
        pj.LayoutRecipe(knn="annoy")


def test_large_recipe_changes_the_key_and_the_default_keeps_old_keys():
    x, _ = _blobs(50)
    old = pj.cache_key(x, n_neighbors=15, min_dist=0.1, seed=42)
    assert pj.cache_key(x, n_neighbors=15, min_dist=0.1, seed=42, recipe=pj.LayoutRecipe()) == old
    assert pj.cache_key(x, n_neighbors=15, min_dist=0.1, seed=42, recipe=pj.recipe_for(10**6)) != old


def test_pca_keeps_the_distances_of_data_in_a_low_dimensional_subspace():
    rng = np.random.default_rng(1)
    x = (rng.standard_normal((200, 5)) @ rng.standard_normal((5, 40))).astype(np.float32)  # rank 5 in 40-d
    y = pj.pca(x, 5)
    d_x = np.linalg.norm(x[:, None] - x[None], axis=2)
    d_y = np.linalg.norm(y[:, None] - y[None], axis=2)
    assert y.shape == (200, 5) and np.allclose(d_x, d_y, atol=1e-3 * d_x.max())


def test_whole_collection_projection_with_the_large_recipe_reports_stages_and_is_cached(tmp_path):
    # 3,000 points with large_n=1,000: PCA to 50 -> 32 dims is a no-op here, so use pca_dims=8 via the recipe
    x, lab = _blobs(3000)
    docs, queries = x[:2900], x[2900:]
    rec = _Recorder()
    recipe = pj.LayoutRecipe(knn="nndescent", pca_dims=8, n_epochs=60)
    p = pj.project_collection(docs, queries, cache_dir=tmp_path, progress=rec, recipe=recipe)
    assert p.coords.shape == (3000, 2) and not p.cached
    text = " | ".join(rec.steps)
    for stage in ("PCA", "neighbour graph", "Optimising the layout", "trustworthiness"):
        assert stage in text, text
    assert rec.bars and rec.bars[-1][1] == 60  # the epochs bar: done / 60
    assert p.trustworthiness >= 0.9  # blobs 4 sd apart: neighbourhoods are kept
    assert "NN-descent" in p.recipe
    again = pj.project_collection(docs, queries, cache_dir=tmp_path, recipe=recipe)
    assert again.cached and np.array_equal(again.coords, p.coords)


def test_a_corrupt_whole_collection_cache_is_reported_and_recomputed(tmp_path, fake_fit):
    x, _ = _blobs(400)
    recipe = pj.LayoutRecipe(knn="exact", pca_dims=None, n_epochs=None)  # the default: patched fit, fast
    p = pj.project_collection(x[:300], x[300:], cache_dir=tmp_path, recipe=recipe)
    path = ArrayCache(tmp_path).path_for(p.key)
    raw = bytearray(path.read_bytes())
    raw[200] ^= 0xFF  # one flipped byte in the coordinates
    path.write_bytes(bytes(raw))
    report = ValidationReport()
    again = pj.project_collection(x[:300], x[300:], cache_dir=tmp_path, recipe=recipe, report=report)
    assert not again.cached and np.array_equal(again.coords, p.coords)
    assert len(report.by_code("cache_corrupt")) == 1


def test_build_whole_map_draws_every_point_with_a_given_projection():
    x, _ = _blobs(60)
    doc_ids = [f"d{i}" for i in range(50)]
    query_ids = [f"q{i}" for i in range(10)]
    failed = [pj.FailedQuery("q3", "near_miss", ("d7",), ("d1", "d2"))]
    proj = pj.project_collection(x[:50], x[50:], use_cache=False)
    emap = pj.build_whole_map(
        doc_ids=doc_ids, doc_texts=["t"] * 50, doc_vecs=x[:50], query_ids=query_ids, query_texts=["q"] * 10,
        query_vecs=x[50:], failed=failed, projected=proj,
    )  # fmt: skip
    assert len(emap.points) == 60 and not emap.sample.sampled
    assert emap.edges["edge"].tolist() == ["target", "top retrieved"]
    with pytest.raises(ValueError, match="expected 61"):
        pj.build_whole_map(
            doc_ids=[*doc_ids, "extra"], doc_texts=["t"] * 51, doc_vecs=x[:51], query_ids=query_ids,
            query_texts=["q"] * 10, query_vecs=x[50:], projected=proj,
        )  # fmt: skip
