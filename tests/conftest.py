"""Shared fixtures."""

from __future__ import annotations

import os
import sys

import pytest

# the shared helpers of the AppTest tests assert too: pytest explains their failures like a test's own
pytest.register_assert_rewrite("app_testing")

# Bytecode caches on for the run, whatever PYTHONDONTWRITEBYTECODE says (a machine that sets it recompiled diagnose
# from source in each of the suite's interpreters: the CLI and README subprocesses, Streamlit servers, notebook
# kernels, Ray workers): the first interpreter writes __pycache__ (ignored by git), the rest read it. Eight
# subprocess-heavy files from a clean clone: 45.0 -> 39.5 CPU-s (git log -p bench/RESULTS.md, "fourth pass").
if sys.dont_write_bytecode or os.environ.get("PYTHONDONTWRITEBYTECODE"):
    sys.dont_write_bytecode = False
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

# Under xdist each worker gets its share of the cores for torch (cores // workers: 1 on a 2-core machine with
# `-n auto`), set before torch is imported and inherited by the processes a worker starts (Streamlit servers,
# notebook kernels, CLI subprocesses). torch's default, one OpenMP thread per core in every process, had the two
# workers' threads share two cores: the waiting threads spin, and the same encode took ~1.5x (a CrossEncoder
# rerank ~2.5x) the CPU it takes in one thread (git log -p bench/RESULTS.md, "fifth pass"). torch reads
# MKL_NUM_THREADS for its own pool; numpy's OpenBLAS does not, so the BLAS tests (test_blocks) still see its default.
# Without xdist (`-n 0`) or when the variable is set already, nothing changes.
_WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 1)
if _WORKERS > 1:
    _CORES = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    os.environ.setdefault("MKL_NUM_THREADS", str(max(1, _CORES // _WORKERS)))

#: The files that take longest on 2 cores, longest first (each file's span in a timeline of the suite under xdist,
#: 2026-11-27; bench/RESULTS.md "test suite"). They are handed to the xdist workers first (pyproject's addopts carry
#: ``--no-loadscope-reorder``, so the workers get the files in the order below): xdist's own order, most tests first,
#: started these few-test files last, and one of them ran alone for the suite's last minutes while the other core
#: waited. A file missing here only starts later; a name here that no longer exists is ignored.
SLOW_FILES_FIRST = (
    "test_projection_whole.py",
    "test_vectordb.py",
    "test_app_pages.py",
    "test_browser.py",
    "test_remedies.py",
    "test_browser_map.py",
    "test_python_api.py",
    "test_notebook.py",
    "test_distributed_encode.py",
    "test_finetune.py",
    "test_ann.py",
    "test_metrics_reference.py",
    "test_ties.py",
    "test_fast_encoder.py",
    "test_retrievers_frameworks.py",
)


def pytest_collection_modifyitems(config, items):
    """The slow files first, in :data:`SLOW_FILES_FIRST`'s order; every other file after them in collection order
    (a stable sort: the tests of a file keep their order)."""
    first = {name: i for i, name in enumerate(SLOW_FILES_FIRST)}
    items.sort(key=lambda item: first.get(item.path.name, len(first)))


@pytest.fixture(scope="session")
def second_model(tmp_path_factory):
    """A second real sentence-transformers model, built locally: the first of the bundled MiniLM's 6 layers with a
    seeded 384->64 dense projection on top (different vectors, size and depth, same tokenizer), saved as a folder.
    No hub access. One layer: the tests that use it (the Model choice page in Chromium, ``diagnose models``, the
    fast path of another folder) need a second real model, not a good one, and it encodes ~5x faster."""
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer import modules as models

    from diagnose.embed import default_model_path

    torch.manual_seed(0)
    word = models.Transformer(str(default_model_path()))
    word.auto_model.encoder.layer = word.auto_model.encoder.layer[:1]
    word.auto_model.config.num_hidden_layers = 1
    pooling = models.Pooling(word.get_embedding_dimension(), pooling_mode="mean")
    dense = models.Dense(in_features=384, out_features=64, activation_function=torch.nn.Identity())
    model = SentenceTransformer(modules=[word, pooling, dense, models.Normalize()], device="cpu")
    folder = tmp_path_factory.mktemp("models") / "minilm-proj64"
    model.save(str(folder))
    return folder


@pytest.fixture(scope="session")
def model_cache(tmp_path_factory):
    """One embedding cache folder for the tests that encode the demo corpus with the real bundled model: the cache is
    keyed by text + model, so the run encodes the demo once, not once per test. Under xdist the workers share it
    (the run's temporary folder, above each worker's own): writes are atomic (``os.replace``), and two workers
    writing the same key write the same vectors. Tests of the cache itself keep their own folder."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = tmp_path_factory.getbasetemp().parent / "model-cache"
        shared.mkdir(exist_ok=True)
        return shared
    return tmp_path_factory.mktemp("model-cache")


@pytest.fixture
def keyword_encoder(monkeypatch, tmp_path_factory):
    """The app uses the fake keyword encoder, its embeddings cached in the session's temporary folder (the AppTest
    tests: ``pytestmark = pytest.mark.usefixtures("keyword_encoder")``)."""
    monkeypatch.setenv("DIAGNOSE_ENCODER", "keyword")
    monkeypatch.setenv("DIAGNOSE_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "cache"))


@pytest.fixture(params=[True, False], ids=["fast", "line-by-line"])
def both_paths(request, monkeypatch):
    """Run a test with the pyarrow fast paths and with the line-by-line paths: they must agree (the readers' tests,
    tests/test_io_*.py)."""
    import diagnose.io as dio

    monkeypatch.setattr(dio, "_FAST", request.param)
    return request.param


@pytest.fixture
def fake_fit(monkeypatch):
    """The UMAP fit replaced by a fake that counts its calls (the embedding map's tests, tests/test_projection_*.py:
    the first real fit in a process compiles numba code)."""
    import numpy as np

    from diagnose import projection as pj

    calls = []

    def fit(x, n_neighbors, min_dist, seed):
        calls.append(len(x))
        return (np.asarray(x)[:, :2] * 10).astype(np.float32)

    monkeypatch.setattr(pj.layout, "_fit_umap", fit)
    return calls


# The bundled model only where a test says so. README: `-m "not real_model and not browser"` skips the tests that
# load the real model, and a unit test runs on the fake keyword encoder. Every encoder diagnose loads ends in
# diagnose.embed.loading._sentence_transformer: in a test marked neither real_model nor browser (fixtures of any
# scope included: they are set up inside the test that first uses them), that call fails the test. Two tests loaded
# the model unmarked, ~20-30 CPU-s of the suite (a CLI test had set DIAGNOSE_ENCODER, the app's switch, which the
# command line does not read). A model loaded in a subprocess, or a cache hit that loads none, is not seen.
#: the node id of the running test when it is marked neither real_model nor browser
_UNMARKED_TEST: list[str] = []
_LOADED_UNMARKED: set[str] = set()


def _guard_model_loads() -> None:
    from diagnose.embed import loading

    load = loading._sentence_transformer

    def guarded(name_or_path, *args, **kwargs):
        if _UNMARKED_TEST:
            _LOADED_UNMARKED.add(_UNMARKED_TEST[0])
            raise AssertionError(
                f"{_UNMARKED_TEST[0]} loads the sentence-transformers model {name_or_path}: mark it "
                "@pytest.mark.real_model, or give it the fake encoder (monkeypatch diagnose.embed.load_encoder "
                "to return KeywordEncoder(), or Analysis(encoder=KeywordEncoder()))"
            )
        return load(name_or_path, *args, **kwargs)

    loading._sentence_transformer = guarded


def pytest_configure(config):
    _guard_model_loads()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    marked = item.get_closest_marker("real_model") or item.get_closest_marker("browser")
    _UNMARKED_TEST[:] = [] if marked else [item.nodeid]
    try:
        yield
    finally:
        _UNMARKED_TEST.clear()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if item.nodeid in _LOADED_UNMARKED and report.passed and call.when == "call":
        # the load's AssertionError may have been caught and reported as a message by the code under test
        report.outcome = "failed"
        report.longrepr = f"{item.nodeid} loaded a sentence-transformers model but is not marked real_model"
