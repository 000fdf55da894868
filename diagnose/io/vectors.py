"""Vectors computed elsewhere (e.g. exported from the production index): :func:`load_precomputed` reads ``.npy`` (+ id
files) or parquet (streamed batch by batch) into :class:`PrecomputedEmbeddings`, rows L2-normalised."""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from diagnose.data import DataError, ValidationReport
from diagnose.io import check_input_files

log = logging.getLogger("diagnose.embed")  # the name it logged under as one module

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
    doc_model: str = ""  # the model that made the document vectors, when their store records it ("": unknown)

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
    _check_npy_header(path, kind)
    try:
        mat = np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise DataError(f"{path}: file not found.") from None
    except ValueError as e:
        raise DataError(
            f"{path}: cannot read it as a numeric .npy matrix ({e}). Save it with np.save(path, float32_matrix)."
        ) from None
    ids = _read_ids(ids_path, kind)
    if len(ids) != mat.shape[0]:
        raise DataError(
            f"{ids_path} has {len(ids)} ids but {path} has {mat.shape[0]} rows; they must match 1:1."
        )
    return ids, mat


def _check_npy_header(path: Path, kind: str) -> None:
    """Refuse, from its header alone, a ``.npy`` file that is not a real-valued 2-D matrix or is shorter than its
    header says (a header claiming 6.4e12 floats in a tiny file would otherwise ask for 25 TB before failing)."""
    save = "Save it with np.save(path, matrix.astype(np.float32))."
    try:
        with open(path, "rb") as f:
            version = np.lib.format.read_magic(f)
            read = _NPY_HEADERS.get(version)
            if read is None:
                raise ValueError(f".npy format version {version[0]}.{version[1]}, not 1.0 or 2.0")
            shape, _fortran, dtype = read(f)  # checks the header's syntax
            data_start = f.tell()
            size = os.fstat(f.fileno()).st_size
    except FileNotFoundError:
        raise DataError(f"{path}: file not found.") from None
    except (ValueError, OSError, EOFError) as e:
        raise DataError(f"{path}: cannot read it as a .npy matrix ({e}). {save}") from None
    if dtype.hasobject or dtype.kind not in "fiu" or dtype.fields is not None:
        raise DataError(
            f"{path}: holds {dtype} values ({_DTYPE_KINDS.get(dtype.kind, 'not plain numbers')}); expected real "
            f"numbers (float32, float16, float64 or integers). {save}"
        )
    if len(shape) != 2:
        raise DataError(f"{path}: expected a 2-D numeric matrix [n_{kind}s, dim], got shape {shape}.")
    need = shape[0] * shape[1] * dtype.itemsize  # Python ints: no overflow
    if need > size - data_start:
        raise DataError(
            f"{path}: its header says {shape[0]:,} x {shape[1]:,} {dtype} values ({need:,} bytes), but the file "
            f"holds {size - data_start:,} bytes after the header: it is truncated or its header is damaged. "
            "Export the matrix again."
        )


_NPY_HEADERS = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}
_DTYPE_KINDS = {
    "c": "complex numbers",
    "b": "booleans",
    "U": "text",
    "S": "bytes",
    "O": "Python objects",
    "M": "dates",
    "m": "time spans",
    "V": "records",
}


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


def _pick_columns(
    schema: Any, path: Path, kind: str, id_column: str | None, vector_column: str | None
) -> tuple[str, str, list[str]]:
    """``(id column, vector column, list columns)`` of a parquet ``schema``: the named ones, else the usual names
    (:data:`_ID_COLUMNS`, :data:`_VECTOR_COLUMNS`), the only list column standing for the vector column; ``DataError``
    naming the columns when one is missing."""
    import pyarrow as pa

    list_cols = [
        f.name
        for f in schema
        if pa.types.is_list(f.type) or pa.types.is_large_list(f.type) or pa.types.is_fixed_size_list(f.type)
    ]
    if vector_column is None and len(list_cols) == 1:
        vector_column = list_cols[0]
    id_col = _pick(schema.names, id_column, _ID_COLUMNS[kind], path, f"{kind} id")
    vec_col = _pick(schema.names, vector_column, _VECTOR_COLUMNS, path, "vector (list of numbers)")
    return id_col, vec_col, list_cols


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
    id_col, vec_col, _ = _pick_columns(table.schema, path, kind, id_column, vector_column)
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
    picked = _streaming_columns(schema, n_rows, path, kind, id_column, vector_column)
    if picked is None:
        return None
    id_col, vec_col = picked
    try:
        ids_arr = pf.read(columns=[id_col]).column(0)
        if ids_arr.null_count or len(ids_arr) != n_rows:
            return None
        ids = [str(x) for x in pc.cast(ids_arr, pa.string()).to_pylist()]
        mat = _stream_vectors(pf, vec_col, n_rows)
    except (pa.ArrowException, OSError, ValueError):
        return None
    if mat is None:
        return None
    return ids, mat


def _streaming_columns(
    schema: Any, n_rows: int, path: Path, kind: str, id_column: str | None, vector_column: str | None
) -> tuple[str, str] | None:
    """``(id column, vector column)`` as :func:`_read_parquet` picks them, or None when the file is not one the
    streaming read handles (a column missing, the vector column not a list of numbers, or no rows)."""
    import pyarrow as pa

    try:
        id_col, vec_col, list_cols = _pick_columns(schema, path, kind, id_column, vector_column)
    except DataError:
        return None
    vtype = schema.field(vec_col).type
    if n_rows == 0 or vec_col not in list_cols or id_col == vec_col:
        return None
    if not (pa.types.is_floating(vtype.value_type) or pa.types.is_integer(vtype.value_type)):
        return None
    return id_col, vec_col


def _stream_vectors(pf: Any, vec_col: str, n_rows: int) -> np.ndarray | None:
    """The vector column of ``pf`` read batch by batch into one float32 ``[n_rows, dim]`` matrix; None when a
    vector is null, the lengths differ, or the row count is not ``n_rows``. Arrow errors propagate."""
    import pyarrow.compute as pc

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
    if mat is None or row != n_rows:
        return None
    return mat


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
    return checked_vectors(ids, mat, str(path), kind, report)


def checked_vectors(
    ids: list[str], mat: np.ndarray, path: str, kind: str, report: ValidationReport | None
) -> tuple[list[str], np.ndarray]:
    """``(ids, rows L2-normalised)`` of vectors read from ``path`` (a file, or a vector database collection:
    :mod:`diagnose.io.vectordb`); ``DataError`` for no vectors, duplicate ids, NaN/inf; all-zero rows are reported
    (``zero_vector``) and stay zero. ``mat`` may be normalised in place when it is a writable float32 matrix."""
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
    finite = (
        np.concatenate([np.isfinite(mat[i : i + 65_536]).all(axis=1) for i in range(0, len(mat), 65_536)])
        if len(mat)
        else np.ones(0, dtype=bool)
    )
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
    query_path: Path | str | None,
    doc_ids_path: Path | str | None = None,
    query_ids_path: Path | str | None = None,
    *,
    id_column: str | None = None,
    vector_column: str | None = None,
    report: ValidationReport | None = None,
) -> PrecomputedEmbeddings:
    """Read document and query vectors computed elsewhere, so nothing is re-encoded (``query_path`` None: the
    document vectors alone, with no query side; the queries are then encoded by a model).

    Formats (chosen by extension, per file):

    - ``.npy``: a 2-D numeric matrix (read with ``allow_pickle=False``), plus an id file (``doc_ids_path`` /
      ``query_ids_path``): UTF-8 text, one id per line, line i = row i, surrounding whitespace stripped.
    - ``.parquet``: an id column (``doc_id``/``query_id``/``id``/``_id``..., or ``id_column``) and a vector column
      (the only list column, or one named ``embedding``/``vector``/..., or ``vector_column``).

    Rows are L2-normalised (the diagnosis uses cosine even if the index used raw dot products); all-zero rows stay
    zero and are reported (``zero_vector``). ``DataError`` for: missing file, ids/rows count mismatch, empty lines,
    duplicate ids, NaN/inf, ragged vectors, and documents and queries of different dimensions.
    """

    check_input_files(doc_path, query_path, doc_ids_path, query_ids_path, expected="vectors (.npy/.parquet)")
    doc_ids, doc_mat = _read_side(doc_path, doc_ids_path, "doc", id_column, vector_column, report)
    if (
        query_path is None
    ):  # document vectors alone: the queries are encoded by a model (VectorSpace.with_stored)
        empty = np.zeros((0, doc_mat.shape[1]), dtype=np.float32)
        return PrecomputedEmbeddings(tuple(doc_ids), doc_mat, (), empty, doc_source=str(doc_path))
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
