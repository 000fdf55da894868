"""Where the app's data comes from: the bundled demo, a BEIR folder, separate files, or uploads.

A :class:`DataSpec` names files on disk (uploads are first written to a temporary folder named after their content
hash), and :meth:`DataSpec.fingerprint` turns the names plus every file's size and modification time into the cache
key of everything computed from the data: editing a file on disk invalidates the caches, changing ``k`` does not.

This module does not import Streamlit, so it can be tested on its own.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

from diagnose import defaults
from diagnose.data import DataError, fields_dict
from diagnose.embed.loading import DEFAULT_ALIASES, HUB_ID_RE
from diagnose.io import parse_run_arg
from diagnose.io.golden_sets import golden_kind
from diagnose.io.vectordb.spec import is_spec, split_spec
from diagnose.ui import launch

REPO = Path(__file__).resolve().parents[2]
DEMO_DIR = REPO / "demo_corpus"
RUN_SUFFIXES = (".trec", ".run", ".txt", ".gz", ".jsonl", ".json", ".csv", ".tsv")
UPLOAD_ROOT = Path(tempfile.gettempdir()) / "diagnose-uploads"

SourceKind = Literal["demo", "beir", "files", "upload"]


@dataclass(frozen=True)
class DataSpec:
    """Everything :func:`diagnose.io.load_dataset` needs, as plain strings (hashable, printable)."""

    kind: SourceKind
    label: str
    data_dir: str | None = None
    split: str = defaults.SPLIT
    corpus: str | None = None
    queries: str | None = None
    qrels: str | None = None
    runs: tuple[tuple[str | None, str], ...] = ()
    parent_field: str | None = None  # a chunk corpus' metadata key of the document (None: ids DOC#N detected)

    def paths(self) -> list[Path]:
        """Every file (or folder of documents) the data set is read from; for a BEIR folder, its three files."""
        out = [Path(_collection_folder(p) or p) for p in (self.corpus, self.queries, self.qrels) if p]
        if self.data_dir:
            root = Path(self.data_dir)
            for name in ("corpus.jsonl", "queries.jsonl", f"qrels/{self.split}.tsv"):
                out += [root / name, root / (name + ".gz")]
        return out + [Path(p) for _, p in self.runs]

    def fingerprint(self) -> str:
        """A short hash of the spec and of (path, size, mtime) of every file it reads (folders: their files).

        Only the files read count: regenerating something else in a BEIR folder leaves the caches alone."""
        h = hashlib.sha256(json.dumps(asdict(self), sort_keys=True, default=str).encode())
        for p in self.paths():
            for f in _files_under(p):
                try:
                    st = f.stat()
                except OSError:
                    h.update(f"{f}:missing".encode())
                    continue
                h.update(f"{f}:{st.st_size}:{st.st_mtime_ns}".encode())
        return h.hexdigest()[:16]

    def load_kwargs(self) -> dict:
        return {
            **fields_dict(self, "data_dir", "split", "corpus", "queries", "qrels", "parent_field"),
            "runs": list(self.runs),
            # no golden set yet (a production query log and a corpus): the Judge page builds one
            "require_qrels": self.kind != "files" or bool(self.qrels),
        }


def _files_under(p: Path, limit: int = 2000) -> list[Path]:
    if not p.is_dir():
        return [p]
    files = []
    for root, _dirs, names in os.walk(p):
        for n in sorted(names):
            files.append(Path(root) / n)
            if len(files) >= limit:
                return files
    return files


def runs_in(folder: Path) -> list[tuple[str, str]]:
    """``(name, path)`` of the run files directly inside ``folder`` (name = file name without its suffixes)."""
    if not folder.is_dir():
        return []
    out = []
    for f in sorted(folder.iterdir()):
        if f.is_file() and f.name.lower().endswith(RUN_SUFFIXES) and not f.name.startswith("."):
            out.append((_stem(f.name), str(f)))
    return out


def _stem(name: str) -> str:
    base = name[:-3] if name.lower().endswith(".gz") else name
    return Path(base).stem or base


def demo_spec() -> DataSpec:
    """The bundled demo corpus with every run in ``demo_corpus/runs``."""
    if not (DEMO_DIR / "corpus.jsonl").is_file():
        raise DataError(
            f"The demo corpus is missing from {DEMO_DIR} (expected corpus.jsonl, queries.jsonl, qrels/test.tsv). "
            "Reinstall from a full checkout, or choose another data source in the sidebar."
        )
    return DataSpec("demo", "demo corpus", data_dir=str(DEMO_DIR), runs=tuple(runs_in(DEMO_DIR / "runs")))


def launch_spec(given: launch.Launch) -> DataSpec:
    """The data the app was started on (``--data DIR --run FILE``): a BEIR folder, the runs named at launch (read
    even outside the data root, see :func:`read_roots`) and those in ``DIR/runs/``."""
    assert given.data is not None
    runs = list(given.runs)
    known = {Path(p).resolve() for _, p in runs}
    runs += [(n, p) for n, p in runs_in(Path(given.data) / "runs") if Path(p).resolve() not in known]
    return DataSpec(
        "beir", f"your data {Path(given.data).name}", data_dir=given.data, split=given.split, runs=tuple(runs)
    )


def parse_run_lines(text: str) -> list[tuple[str | None, str]]:
    """One run per non-empty line, ``NAME=PATH`` or ``PATH`` (the name then comes from the file name)."""

    out = []
    for line in (text or "").splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            name, path = parse_run_arg(line)
            out.append((name, str(path)))
    return out


DATA_ROOT_ENV = "DIAGNOSE_DATA_ROOT"


def data_root() -> Path:
    """The folder typed paths must lie under: ``$DIAGNOSE_DATA_ROOT``, else the data folder the app was started on
    (``--data`` / ``$DIAGNOSE_DATA``, :mod:`diagnose.ui.launch`), else the folder the app was started in.

    The page is served to a browser: without a root, anyone who can reach it could make the server read any file
    it can read (and show its first line in an error message, or a folder's files in the inspector)."""
    return Path(os.environ.get(DATA_ROOT_ENV) or launch.read_launch().data or os.getcwd()).resolve()


def read_roots(spec: DataSpec | None, *, typed_paths: bool = False) -> tuple[Path, ...]:
    """The folders every file of ``spec`` must resolve inside (symbolic links followed): the demo folder, the
    upload's own folder, or :func:`data_root` for typed paths (also when ``typed_paths``, e.g. precomputed vectors).

    The app passes them to :func:`diagnose.io.confine_reads` on every run, so each file read is resolved then:
    a BEIR folder inside the root whose ``corpus.jsonl`` links to a file outside it, or a ``runs/`` entry linking to
    ``/proc/self/environ``, is refused by name, never read (its content never reaches a message)."""
    roots: list[Path] = []
    if spec is not None and spec.kind == "demo":
        roots.append(DEMO_DIR.resolve())
    elif spec is not None and spec.kind == "upload" and spec.corpus:
        roots.append(Path(spec.corpus).resolve().parents[1])  # root/<content hash>/<role>/<name>
    if spec is None or spec.kind in ("beir", "files") or typed_paths:
        roots.append(data_root())
    if (
        spec is not None and spec.kind == "beir"
    ):  # what the server was started on: the --data folder (also when
        given = (
            launch.read_launch()
        )  # DIAGNOSE_DATA_ROOT is elsewhere) and exactly the --run files, wherever they are
        roots += [Path(given.data)] if given.data else []
        roots += [Path(p) for _, p in given.runs]
    return tuple(roots)


def check_model(text: str) -> str:
    """The sidebar's embedding model, checked like a typed path: a name of the bundled model (one of
    :data:`~diagnose.embed.loading.DEFAULT_ALIASES`) as it is; a Hugging Face id (``org/name``, read from the Hub
    cache) as it is unless a folder of that name exists here; anything else, or such a folder, is a model folder:
    refused outside :func:`data_root` (a model folder's weights are read and run), else its resolved path."""
    raw = text.strip()
    if raw.lower() in DEFAULT_ALIASES:
        return raw
    pathlike = raw.startswith(("/", ".", "~")) or not HUB_ID_RE.match(raw)
    if not pathlike and not Path(raw).exists() and not (data_root() / raw).exists():
        return raw
    return check_path(raw, "model folder")


def check_path(path: str, what: str) -> str:
    """A typed path, resolved (symbolic links and ``..`` followed) and refused unless it lies under
    :func:`data_root`; then it must exist."""
    root = data_root()
    try:
        p = (root / Path(path).expanduser()).resolve()
    except (OSError, RuntimeError, ValueError) as e:
        raise DataError(f"The {what} path {path!r} cannot be resolved ({type(e).__name__}: {e}).") from None
    if not p.is_relative_to(root):
        raise DataError(
            f"The {what} path {path!r} is outside the data folder {str(root)!r}; the app only reads files under "
            f"it. Put the data there, or start the app with {DATA_ROOT_ENV}=/path/to/your/data."
        )
    try:
        exists = p.exists()
    except OSError as e:
        raise DataError(f"The {what} path {path!r} cannot be read ({type(e).__name__}).") from None
    if not exists:
        raise DataError(
            f"The {what} path {path!r} does not exist under {str(root)!r}. Check the path typed in the sidebar."
        )
    return str(p)


def beir_spec(
    folder: str, split: str = defaults.SPLIT, runs_text: str = "", include_folder_runs: bool = True
) -> DataSpec:
    """A BEIR folder (``corpus.jsonl``, ``queries.jsonl``, ``qrels/SPLIT.tsv``) plus run files."""
    if not folder.strip():
        raise DataError(
            "Type the path of a BEIR folder (with corpus.jsonl, queries.jsonl and qrels/) in the sidebar."
        )
    d = check_path(folder.strip(), "BEIR folder")
    if not Path(d).is_dir():
        raise DataError(
            f"{d!r} is a file, not a folder. A BEIR folder holds corpus.jsonl, queries.jsonl and qrels/."
        )
    runs = [(n, check_path(p, "run")) for n, p in parse_run_lines(runs_text)]
    if include_folder_runs:
        known = {Path(p).resolve() for _, p in runs}
        runs += [(n, p) for n, p in runs_in(Path(d) / "runs") if Path(p).resolve() not in known]
    return DataSpec(
        "beir",
        f"BEIR folder {Path(d).name}",
        data_dir=d,
        split=split.strip() or defaults.SPLIT,
        runs=tuple(runs),
    )


def files_spec(corpus: str, queries: str, qrels: str, runs_text: str) -> DataSpec:
    """Separate files: corpus and queries are needed (the diagnosis reads the texts); qrels too, except to start a
    golden set from nothing on the Judge page; runs optional."""
    gives = _golden_gives(qrels.strip()) if qrels.strip() else set()
    missing = [w for w, v in (("corpus", corpus), ("queries", queries)) if not v.strip() and w not in gives]
    if missing:
        raise DataError(
            f"Type the path of the {', '.join(missing)} file{'s' if len(missing) > 1 else ''} in the sidebar "
            "(and the qrels, or none to start a golden set on the Judge page)."
        )
    runs = [(n, check_path(p, "run")) for n, p in parse_run_lines(runs_text)]
    return DataSpec(
        "files",
        f"files ({Path(qrels.strip()).name})" if qrels.strip() else "files (no golden set yet)",
        corpus=_checked_corpus(corpus.strip()) if corpus.strip() else None,
        queries=check_path(queries.strip(), "queries") if queries.strip() else None,
        qrels=check_path(qrels.strip(), "qrels") if qrels.strip() else None,
        runs=tuple(runs),
    )


def _golden_gives(qrels: str) -> set[str]:
    """What a golden-set file given as the qrels holds besides judgements (:mod:`diagnose.io.golden_sets`): the
    queries, and for an EmbeddingQAFinetuneDataset the corpus; empty for id-based qrels."""

    try:
        path = check_path(qrels, "qrels")  # only under the data root (refused later, in order, otherwise)
    except DataError:
        return set()
    kind = golden_kind(path)
    return set() if kind is None else {"queries", "corpus"} if kind == "embedding_qa" else {"queries"}


def _collection_folder(corpus: str) -> str | None:
    """The database folder of a ``SCHEME:PATH#NAME`` corpus (:mod:`diagnose.io.vectordb`), else None."""

    if not is_spec(corpus):
        return None
    _, folder, _, sep = split_spec(corpus)
    return folder if sep and folder else None


def _checked_corpus(corpus: str) -> str:
    """:func:`check_path` of the corpus, or of a vector database's folder (``chroma:PATH#COLLECTION``...: the
    spec with the folder resolved; a malformed spec is left to the reader, whose message names the fix)."""

    if not is_spec(corpus):
        return check_path(corpus, "corpus")
    scheme, folder, name, sep = split_spec(corpus)
    return f"{scheme}:{check_path(folder, 'vector database folder')}#{name}" if sep and folder else corpus


@dataclass(frozen=True)
class Upload:
    """One uploaded file: its original name and bytes."""

    name: str
    data: bytes


def _safe_name(name: str, role: str) -> str:
    """The uploaded file's name as written: its last part, characters other than letters, digits and ``._-`` as
    ``_`` (an empty name or ``.``: ``file``). ``..`` (the parent folder, never a file: writing it failed with a raw
    OSError) is a DataError asking to rename the file."""
    base = Path(name).name.strip()
    if base == "..":
        raise DataError(
            f"The uploaded {role} file is named {name!r}, which names a folder, not a file. Rename the file (e.g. "
            f"{role}.jsonl) and upload it again."
        )
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in base or "file")


def upload_spec(
    corpus: Upload | None,
    queries: Upload | None,
    qrels: Upload | None,
    runs: Sequence[Upload] = (),
    root: Path | None = None,
) -> DataSpec:
    """Write uploads to ``root/<content hash>/<role>/<name>`` (once) and describe them as files on disk.

    The folder name is the hash of every file's role, name and bytes, so uploading the same files again reuses
    the folder (and every cache keyed on it); the readers then see ordinary files with their original names.
    """
    missing = [w for w, v in (("corpus", corpus), ("queries", queries), ("qrels", qrels)) if v is None]
    if missing:
        raise DataError(
            f"Upload the {', '.join(missing)} file{'s' if len(missing) > 1 else ''} in the sidebar."
        )
    root = root or UPLOAD_ROOT
    items: list[tuple[str, Upload]] = [("corpus", corpus), ("queries", queries), ("qrels", qrels)]  # type: ignore[list-item]
    items += [("runs", r) for r in runs]
    h = hashlib.sha256()
    for role, up in items:
        h.update(f"{role}/{up.name}/{len(up.data)}/".encode())
        h.update(up.data)
    folder = root / h.hexdigest()[:16]
    paths: dict[str, str] = {}
    run_paths: list[tuple[str | None, str]] = []
    used: set[str] = set()
    for role, up in items:
        name = _safe_name(up.name, role)
        if role == "runs":
            while name in used:
                name = "_" + name
            used.add(name)
        target = folder / role / name
        if not target.exists():
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
                tmp = target.with_name(target.name + ".part")
                tmp.write_bytes(up.data)
                os.replace(tmp, target)
            except OSError as e:
                raise DataError(
                    f"Could not save the uploaded {role} file {up.name!r} under {root}: {e.strerror or e}. Free "
                    "some disk space or rename the file, and upload it again."
                ) from None
        if role == "runs":
            run_paths.append((_stem(up.name), str(target)))
        else:
            paths[role] = str(target)
    return DataSpec(
        "upload",
        f"uploaded files ({Path(qrels.name).name})",  # type: ignore[union-attr]
        corpus=paths["corpus"],
        queries=paths["queries"],
        qrels=paths["qrels"],
        runs=tuple(run_paths),
    )


def describe(spec: DataSpec) -> list[str]:
    """Human-readable lines: what is read from where."""
    lines = []
    if spec.data_dir:
        lines.append(f"folder: {spec.data_dir} (split {spec.split})")
    for what in ("corpus", "queries", "qrels"):
        v = getattr(spec, what)
        if v:
            lines.append(f"{what}: {v}")
    for name, path in spec.runs:
        lines.append(f"run {name or _stem(Path(path).name)}: {path}")
    return lines


def unique_names(names: Iterable[str], taken: Iterable[str]) -> dict[str, str]:
    """Map each of ``names`` to itself, or to ``name (tool)`` when a user run already uses it."""
    taken = set(taken)
    return {n: (f"{n} (tool)" if n in taken else n) for n in names}
