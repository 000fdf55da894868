"""Time until the embedding map of NFCorpus (test) is ready, whole process, cold and warm, beside a bare encode.

The measured process does what the app does before it draws the map page: load the data and a run, embed the
corpus and the judged queries (bundled model, disk cache), build BM25, diagnose the run's failures, sample and
project with UMAP, tabulate the points and edges. Cold: empty embedding/BM25/projection caches and numba's compile
on the first UMAP fit. Warm: the same again with every cache filled. Bare: a process that loads the same model and
encodes the same texts. The three alternate in one run.

    python bench/bench_map.py [--data ../shared/data/nfcorpus] [--repeats 1]

(Needs ../shared/data/nfcorpus.) The Streamlit server itself is left out: it adds its own start-up, the same for
any page, and nothing here would change it.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

from common import bm25_run, cold_warm_bare, nfcorpus_args, print_rounds

MAP = r"""
import sys, time
from diagnose.io import load_dataset
from diagnose.search.space import VectorSpace
from diagnose.lexical import BM25Index
from diagnose.failures import diagnose_run
from diagnose import projection
data, run, cache = sys.argv[1], sys.argv[2], sys.argv[3]
ds = load_dataset(data_dir=data, runs=[("run", run)])
golden = ds.qrels.queries_with_relevant()
space = VectorSpace.build(ds, golden, cache_dir=cache)
bm25 = BM25Index.build(ds.corpus.texts(), list(ds.corpus.ids), cache_dir=cache + "/bm25")
diag = diagnose_run(ds, ds.runs["run"], space, bm25, k=10)
failed = projection.failed_queries_from(diag.failures, ds.runs["run"].ranked_lists(), 10)
q_text = ds.queries.text_of()
m = projection.build_map(
    doc_ids=list(space.doc_ids), doc_texts=ds.corpus.texts(), doc_vecs=space.doc_vecs,
    query_ids=list(space.query_ids), query_texts=[q_text[q] for q in space.query_ids],
    query_vecs=space.query_vecs, failed=failed, cache_dir=cache + "/projections",
)
print(len(m.points), m.projection.cached, round(m.projection.trustworthiness, 3))
"""


def main() -> None:
    args = nfcorpus_args(__doc__, repeats=1)
    data = args.data
    work = Path(tempfile.mkdtemp(prefix="bench_map_"))
    numba_cache = work / "numba"  # a fresh numba cache: the cold run pays the compile, like a new install
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "NUMBA_CACHE_DIR": str(numba_cache)}
    run = bm25_run(data, work, env)
    cache = work / "cache"
    cmd = [sys.executable, "-c", MAP, str(data), str(run), str(cache)]
    bare, cold, warm, info, info_warm = cold_warm_bare(
        cmd, data, env, args.repeats, [cache, numba_cache], output=True
    )
    header = f"repeats: {args.repeats}; map points, cached, trustworthiness: cold {info} / warm {info_warm}"
    print_rounds(header, "map ready", bare, cold, warm, ratio=False)
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
