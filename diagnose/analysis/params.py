"""The parameters of :class:`diagnose.analysis.Analysis` checked at the door (built on :mod:`diagnose.checks`): each
function takes what the user gave and returns it normalised, or raises :class:`~diagnose.data.DataError` naming the
parameter, what was given and what is expected. The steps then trust what they get."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from diagnose import checks
from diagnose.checks import given, param_error
from diagnose.data import Run
from diagnose.defaults import BASELINES, FAILURE_MODES
from diagnose.metrics import MetricName
from diagnose.retrievers.kinds import describe, retriever_kind

if TYPE_CHECKING:
    from diagnose.failures import Thresholds
    from diagnose.search.space import VectorSpace

EMBEDDING_KEYS = ("doc", "query", "doc_ids", "query_ids")
RUN_FORMS = (
    "a file path, a Run, a dict {query_id: {doc_id: score}} or a live retriever (a callable str -> [doc_id, ...], "
    "a LangChain or LlamaIndex retriever)"
)


def is_run_like(value: Any) -> bool:
    """A run given as data (a path, a Run, a dict), as opposed to a live retriever."""
    return isinstance(value, Run | str | Path | Mapping)


def check_runs(runs: Any) -> dict[str, Any]:
    """``runs``: ``{name: run}``, each run :data:`RUN_FORMS`; names as ``str``."""
    fix = (
        " Fix: name each run, e.g. runs={'my run': 'runs/my_run.trec'}."
        if isinstance(runs, str | Path | Run | list | tuple)
        else ""
    )
    given_runs = checks.mapping(runs, "runs", expected="a dict {name: run}", fix=fix)
    out: dict[str, Any] = {}
    for name, value in given_runs.items():
        if not is_run_like(value) and retriever_kind(value) is None:
            raise param_error("runs", f"runs[{name!r}] is {describe(value)}; expected {RUN_FORMS}.")
        out[str(name)] = value
    return out


def check_baselines(baselines: Any) -> dict[str, str]:
    """``baselines``: kinds (``"bm25"``, ...; one kind may be given as a plain string, ``baselines="bm25"``), or a
    mapping ``{run name: kind}``; returned as ``{name: kind}``."""
    expected = f"baseline kinds among {', '.join(BASELINES)} (a str, a list, or a dict {{run name: kind}})"
    if isinstance(baselines, Mapping):
        items = dict(baselines)
    else:
        kinds = checks.list_of(
            baselines, "baselines", lambda b: b, expected=expected, single=lambda v: isinstance(v, str)
        )
        items = {b: b for b in dict.fromkeys(kinds)}
    bad = [kind for kind in items.values() if not isinstance(kind, str) or kind not in BASELINES]
    if bad:
        raise param_error("baselines", f"Unknown baseline {bad[0]!r}; choose among {', '.join(BASELINES)}.")
    return {str(n): kind for n, kind in items.items()}


def check_ks(ks: Any, k: int) -> tuple[int, ...]:
    """``ks``: cutoffs (one integer or a list of them), sorted, with ``k`` added."""
    return tuple(sorted({*checks.cutoffs(ks, "ks"), k}))


def check_metrics(metrics: Any, param: str = "metrics") -> list[str | MetricName] | None:
    """``metrics``: None, one metric name (``"ndcg@10"``, or a parsed :class:`~diagnose.metrics.MetricName`, which
    passes through) or a list of them, as a list."""
    if metrics is None:
        return None
    what = "metric names such as 'ndcg@10' or 'recall'"
    if isinstance(metrics, MetricName):
        return [metrics]
    if isinstance(metrics, list | tuple) and any(isinstance(m, MetricName) for m in metrics):
        checks.strings([m for m in metrics if not isinstance(m, MetricName)], param, what=what)
        return list(metrics)
    return checks.strings(metrics, param, what=what)


def check_model(model: Any) -> str | None:
    """``model``: None/``""``/``"default"`` (the bundled model), or a model name or folder."""
    if model is None or (isinstance(model, str) and model.strip() in ("", "default")):
        return None
    if isinstance(model, str | os.PathLike):
        return os.fspath(model) if isinstance(os.fspath(model), str) else str(model)
    raise param_error(
        "model",
        f"model must be a sentence-transformers model name or folder (a str), or 'default', got {given(model)}. "
        "An encoder object goes to encoder=.",
    )


def check_failure(failure: Any) -> str:
    return checks.one_of(
        failure,
        "failure",
        FAILURE_MODES,
        message="failure must be 'hit' (no relevant document in the top k) or 'recall' (any relevant document "
        "missing), got {value!r}.",
    )


def check_thresholds(thresholds: Any) -> Thresholds | None:
    if thresholds is None:
        return None
    from diagnose.failures import Thresholds

    if isinstance(thresholds, Thresholds):
        return thresholds
    raise param_error(
        "thresholds",
        f"thresholds must be a diagnose.failures.Thresholds, got {given(thresholds)}. Fix: "
        "thresholds=Thresholds(seed_cosine=0.8) (from diagnose.failures import Thresholds).",
    )


def check_encoder(encoder: Any, param: str = "encoder") -> Any:
    """``encoder``: None, or an object with a ``name`` and an ``encode(texts)`` method."""
    if encoder is None or (
        isinstance(getattr(encoder, "name", None), str) and callable(getattr(encoder, "encode", None))
    ):
        return encoder
    raise param_error(
        param,
        f"{param} must be an encoder object (a str .name and .encode(texts)), e.g. diagnose.embed.KeywordEncoder(), "
        f"got {given(encoder)}. A model name or folder goes to model=.",
    )


def check_models(models: Any) -> list[Any]:
    """``models`` of :meth:`Analysis.models`: model names or folders (``"default"``: the bundled model) or encoder
    objects; one name may be given alone. Empty: the bundled model."""
    expected = "a list of model names or folders (str) or encoder objects"
    items = checks.list_of(
        models, "models", lambda m: m, expected=expected, single=lambda v: isinstance(v, str | Path)
    )
    for m in items:
        if m is not None and not isinstance(m, str | Path):
            check_encoder(m, "models")
    return items or ["default"]


def check_embeddings(embeddings: Any) -> Mapping[str, Path] | VectorSpace | None:
    """``embeddings``: None, a :class:`VectorSpace`, or ``{"doc": path, "query": path}`` (optional ``"doc_ids"``,
    ``"query_ids"``), the paths as :class:`Path`."""
    if embeddings is None:
        return None
    from diagnose.search.space import VectorSpace

    if isinstance(embeddings, VectorSpace):
        return embeddings
    expected = "a dict {'doc': path, 'query': path} (optional 'doc_ids', 'query_ids') or a VectorSpace"
    emb = checks.mapping(embeddings, "embeddings", expected=expected)
    unknown = [key for key in emb if key not in EMBEDDING_KEYS]
    if unknown:
        raise param_error(
            "embeddings",
            f"embeddings has the key {unknown[0]!r}; the keys are {checks.either(EMBEDDING_KEYS)}.",
        )
    return {
        key: checks.path(v, "embeddings", label=f"embeddings[{key!r}]")
        for key, v in emb.items()
        if v is not None
    }
