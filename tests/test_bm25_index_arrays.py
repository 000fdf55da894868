"""The bm25s index arrays diagnose builds in whole-corpus numpy operations equal bm25s' own ``index()`` arrays,
bit for bit (data, indices, column pointers), for every method and for the CSC builders (bm25s' numpy one, whose
(term, document) order diagnose sorts the entries into directly, and scipy's). bm25s' formulas are private: they are
reached only through :mod:`diagnose.lexical.bm25s_internals`, with a tested bm25s release; any other release gets
``BM25.index`` (the public path), and both paths are built and compared here."""

from __future__ import annotations

import numpy as np
import pytest

from diagnose.lexical.bm25s_internals import TESTED_BM25S, bm25s_internals, is_tested
from diagnose.lexical.engines import Bm25sImpl, _bm25s_scores_vectorised


def _corpus(rng, n_docs, n_vocab):
    lens = rng.integers(0, 12, n_docs)  # empty documents too
    flat = rng.zipf(1.3, lens.sum()) % n_vocab  # skewed: repeated terms within documents, common terms
    return flat.astype(np.int64), lens.astype(np.int64)


@pytest.mark.parametrize("method", ["lucene", "robertson", "atire"])
@pytest.mark.parametrize("backend", ["numpy", "scipy"])
def test_index_arrays_equal_bm25s_own_bit_for_bit(method, backend):
    import bm25s

    rng = np.random.default_rng(3)
    flat, lens = _corpus(rng, 300, 40)
    flat[:3] = 39  # the last term occurs
    vocab = {f"t{j}": j for j in range(40)}
    ref = bm25s.BM25(k1=0.9, b=0.4, method=method, csc_backend=backend)
    token_ids = [ids.tolist() for ids in np.split(flat, np.cumsum(lens)[:-1])]
    ref.index((token_ids, vocab), create_empty_token=False, show_progress=False)
    internals = bm25s_internals()
    assert internals is not None, f"bm25s {bm25s.__version__} is not in TESTED_BM25S {TESTED_BM25S}"
    ours = _bm25s_scores_vectorised(
        bm25s.BM25(k1=0.9, b=0.4, method=method, csc_backend=backend), flat, lens, 40, internals
    )
    assert ours is not None and ours["num_docs"] == ref.scores["num_docs"] == 300
    for part in ("data", "indices", "indptr"):
        assert ours[part].dtype == ref.scores[part].dtype, part
        assert ours[part].tobytes() == ref.scores[part].tobytes(), part


@pytest.mark.parametrize("method", ["lucene", "bm25l"])
def test_both_paths_build_the_same_index(method):
    """``Bm25sImpl`` with bm25s' private formulas (vectorised) and with its public ``BM25.index`` only: the same
    matrix, bit for bit (bm25l has a non-occurrence term: both take the public path there)."""
    rng = np.random.default_rng(5)
    flat, lens = _corpus(rng, 200, 30)
    terms = [f"t{j}" for j in range(30)]
    fast = Bm25sImpl(terms, flat, lens, 0.9, 0.4, method)
    public = Bm25sImpl(terms, flat, lens, 0.9, 0.4, method, vectorised=False)
    assert fast.vocab == public.vocab and fast.n_docs == public.n_docs == 200
    for part in ("data", "indices", "indptr"):
        a, b = getattr(fast.matrix, part), getattr(public.matrix, part)
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes(), part


def test_the_private_formulas_are_used_only_with_a_tested_release():
    import bm25s

    assert is_tested(TESTED_BM25S[0]) and not is_tested("0.3.99") and not is_tested("0.2.0")
    assert (bm25s_internals() is not None) == is_tested(bm25s.__version__)
    assert (
        _bm25s_scores_vectorised(
            bm25s.BM25(), np.zeros(1, dtype=np.int64), np.ones(1, dtype=np.int64), 1, None
        )
        is None
    )
