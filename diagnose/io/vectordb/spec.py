"""``SCHEME:PATH#NAME``: the one option form that names a collection of a vector database (``--corpus``,
``diagnose.load(corpus=...)``)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from diagnose.data import DataError

#: scheme -> (what the part after ``#`` is called, the client package, its top-level module)
SCHEMES: dict[str, tuple[str, str, str]] = {
    "chroma": ("collection", "chromadb", "chromadb"),
    "lancedb": ("table", "lancedb", "lancedb"),
    "qdrant": ("collection", "qdrant-client", "qdrant_client"),
}
FORM = "chroma:PATH#COLLECTION, lancedb:PATH#TABLE or qdrant:PATH#COLLECTION"
_SCHEME_RE = re.compile(r"^([A-Za-z][A-Za-z0-9_+-]+):")


@dataclass(frozen=True)
class CollectionSpec:
    """A parsed ``SCHEME:PATH#NAME``: the database kind, its folder (embedded / local mode) and the collection."""

    scheme: str
    path: Path
    name: str

    def __str__(self) -> str:
        return f"{self.scheme}:{self.path}#{self.name}"


def is_spec(value: object) -> bool:
    """Whether ``value`` is meant as a collection (a known scheme, or ``word:...#...`` that is no existing file), not
    a corpus file: then :func:`parse_spec` reads it (and names the fix when it is malformed)."""
    if not isinstance(value, str):
        return False
    m = _SCHEME_RE.match(value)
    if m is None:
        return False
    if m.group(1).lower() in SCHEMES:
        return True
    return "#" in value and not Path(value).exists()


def split_spec(value: str) -> tuple[str, str, str, bool]:
    """``SCHEME:PATH#NAME`` split as text, unchecked: ``(scheme, path, name, has_hash)``, the scheme as written
    (``""`` without one), the path before the last ``#``. The one splitter of the form: :func:`parse_spec` checks its
    parts, the app resolves the folder with it (:mod:`diagnose.ui.sources`)."""
    m = _SCHEME_RE.match(value)
    if m is None:
        return "", "", "", False
    rest = value[m.end() :]
    path, sep, name = rest.rpartition("#")
    return (m.group(1), path, name, True) if sep else (m.group(1), rest, "", False)


def parse_spec(value: str) -> CollectionSpec:
    """``SCHEME:PATH#NAME`` -> :class:`CollectionSpec`; ``DataError(param="corpus")`` naming the fix for an unknown
    scheme, a missing ``#NAME``, a missing path, or a path that is not a folder."""
    raw_scheme, path, name, sep = split_spec(value)
    scheme = raw_scheme.lower()
    if scheme not in SCHEMES:
        raise DataError(f"{value!r}: unknown vector database {scheme!r}; write {FORM}.", param="corpus")
    what = SCHEMES[scheme][0]
    if not sep or not name.strip():
        raise DataError(
            f"{value!r}: no {what} named; write {scheme}:PATH#{what.upper()} (e.g. {scheme}:./db#docs).",
            param="corpus",
        )
    if not path.strip():
        raise DataError(
            f"{value!r}: no path; write {scheme}:PATH#{name} with the folder of the database.",
            param="corpus",
        )
    folder = Path(path).expanduser()
    if not folder.is_dir():
        state = "is a file, not a folder" if folder.exists() else "not found"
        raise DataError(
            f"{value!r}: {folder} {state}; give the folder the {scheme} database was created in "
            f"({'PersistentClient(path=...)' if scheme == 'chroma' else 'its path'}).",
            param="corpus",
        )
    return CollectionSpec(scheme, folder, name.strip())
