"""The bm25s index arrays diagnose builds in whole-corpus numpy operations equal bm25s' own ``index()`` arrays,
bit for bit (data, indices, column pointers), for every method and for the CSC builders (bm25s' numpy one, whose
(term, document) order diagnose sorts the entries into directly, and scipy's)."""

from __future__ import annotations

import numpy as np
import pytest

from diagnose.lexical.engines import _bm25s_scores_vectorised


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
    ours = _bm25s_scores_vectorised(
        bm25s.BM25(k1=0.9, b=0.4, method=method, csc_backend=backend), flat, lens, 40
    )
    assert ours is not None and ours["num_docs"] == ref.scores["num_docs"] == 300
    for part in ("data", "indices", "indptr"):
        assert ours[part].dtype == ref.scores[part].dtype, part
        assert ours[part].tobytes() == ref.scores[part].tobytes(), part
