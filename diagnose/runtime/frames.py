"""Tables held as Arrow or numpy until a pandas DataFrame is asked for: what lets ``diagnose evaluate`` run
without importing pandas (:mod:`diagnose.runtime.lazy`; columns are read through :mod:`diagnose.runtime.arrays`).

- :class:`FrameField`: a dataclass field set to a DataFrame, an Arrow table or a :class:`ColumnsFrame`, read as a
  DataFrame (built on the first read and kept); :func:`held` gives the value as set, :func:`frame_column` one of
  its columns as numpy.
- :class:`Tabular`: what a run and a golden set (:mod:`diagnose.data`) share: their length and columns as Arrow or
  numpy without a DataFrame.
- :func:`arrow_to_pandas` (the one conversion of an Arrow table to a frame) and :func:`arrow_strings` (ids as one
  contiguous ``large_string`` array).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from diagnose.runtime.arrays import numpy_of, strings_of
from diagnose.runtime.lazy import pandas as pd

if TYPE_CHECKING:
    import pyarrow as pa


def is_arrow_table(value: Any) -> bool:
    """Whether ``value`` is a ``pyarrow.Table`` (without importing pyarrow: no Arrow table exists before it is)."""
    pa = sys.modules.get("pyarrow")
    return pa is not None and isinstance(value, pa.Table)


def is_arrow_array(value: Any) -> bool:
    """Whether ``value`` is a ``pyarrow.Array`` or ``ChunkedArray`` (without importing pyarrow)."""
    pa = sys.modules.get("pyarrow")
    return pa is not None and isinstance(value, pa.Array | pa.ChunkedArray)


def first_seen_codes(arr: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, pa.Array]:
    """Integer codes (int64) numbering the distinct values of ``arr`` in order of first appearance, and those values
    (an Arrow array, position = code).

    A dictionary array (a TREC run's query ids, dictionary-encoded by the CSV reader's threads) gives its own codes
    when its unified dictionary is already in order of first appearance with every value used (checked); otherwise,
    and for plain arrays, the values are dictionary-encoded here."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_dictionary(arr.type):
        found = _dictionary_codes(arr)
        if found is not None:
            return found
        arr = arr.cast(arr.type.value_type)
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    encoded = pc.dictionary_encode(arr)
    return numpy_of(encoded.indices).astype(np.int64), encoded.dictionary


def _dictionary_codes(arr: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, pa.Array] | None:
    """The indices and values of a dictionary array when they are :func:`first_seen_codes` already: no null, the
    first index 0 and each new index one more than the largest before it, every value used; else None."""
    import pyarrow as pa

    chunks = arr.unify_dictionaries().chunks if isinstance(arr, pa.ChunkedArray) else [arr]
    chunks = [c for c in chunks if len(c)]
    if not chunks or any(c.null_count for c in chunks):
        return None
    codes = np.concatenate([numpy_of(c.indices) for c in chunks]).astype(np.int64)
    values = chunks[0].dictionary
    highest = np.maximum.accumulate(codes)
    if codes[0] != 0 or highest[-1] != len(values) - 1 or (np.diff(highest) > 1).any():
        return None
    return codes, values


def arrow_to_pandas(table: pa.Table) -> pd.DataFrame:
    """The pandas frame of an Arrow table; string columns get pandas' default ``str`` dtype (pyarrow-backed since
    pandas 3). The one conversion every reader's frame goes through."""
    import pyarrow as pa

    df = table.to_pandas()
    for i, f in enumerate(table.schema):  # by position: a CSV header may repeat a name
        is_text = pa.types.is_string(f.type) or pa.types.is_large_string(f.type)
        if is_text and df.iloc[:, i].dtype != "str":
            df.isetitem(i, df.iloc[:, i].astype("str"))
    return df


def arrow_strings(values: Any) -> pa.Array:
    """A column of ids as one contiguous Arrow ``large_string`` array, nulls as ``""``: from a pandas Series (zero-copy
    for pandas' Arrow-backed ``str``) or an Arrow (chunked) array."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(values, pa.Array | pa.ChunkedArray):
        arr = values
    elif isinstance(values.dtype, pd.StringDtype) and values.dtype.storage == "pyarrow":
        arr = pa.array(values.array)
    else:
        obj = values.to_numpy(dtype=object)
        try:
            arr = pa.array(obj, type=pa.large_string())
        except (pa.ArrowTypeError, pa.ArrowInvalid):  # ids that are not str (the records promise str)
            arr = pa.array([str(v) for v in obj], type=pa.large_string())
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks else strings_of([])
    if arr.type != pa.large_string():
        arr = arr.cast(pa.large_string())
    if arr.null_count:
        arr = pc.fill_null(arr, "")
    return arr


@dataclass(frozen=True)
class ColumnsFrame:
    """A DataFrame not built yet: numpy ``columns`` by name, and an index (``index_name``, ``index``; None: a range
    index). A :class:`FrameField` holding one builds the frame on its first read; until then :func:`frame_column`
    reads a column without pandas."""

    columns: dict[str, np.ndarray]
    index_name: str | None = None
    index: np.ndarray | None = None

    def __len__(self) -> int:
        if self.index is not None:
            return len(self.index)
        return len(next(iter(self.columns.values()))) if self.columns else 0

    def to_frame(self) -> pd.DataFrame:
        index = None if self.index is None else pd.Index(self.index, name=self.index_name, dtype=object)
        return pd.DataFrame(self.columns, index=index)


class FrameField:
    """A dataclass field (its value goes through this descriptor) holding a table: set to a pandas DataFrame, an
    Arrow table with the same columns, or a :class:`ColumnsFrame`; read, always a DataFrame (built on the first read
    and kept). No default: the field is required. :func:`held` gives the value as set, without building anything."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.slot = f"_{name}_value"

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:
            raise AttributeError(self.slot)  # a dataclass reads this as "no default"
        value = obj.__dict__[self.slot]
        if is_arrow_table(value):
            value = arrow_to_pandas(value)
            obj.__dict__[self.slot] = value
        elif isinstance(value, ColumnsFrame):
            value = value.to_frame()
            obj.__dict__[self.slot] = value
        return value

    def __set__(self, obj: Any, value: Any) -> None:
        obj.__dict__[self.slot] = value


def held(record: Any, name: str) -> Any:
    """The value of ``record``'s :class:`FrameField` ``name`` as it is held (a DataFrame, an Arrow table or a
    :class:`ColumnsFrame`), without building a DataFrame."""
    return record.__dict__[f"_{name}_value"]


def frame_column(table: Any, name: str) -> np.ndarray:
    """One column of a held table (:func:`held`) as a numpy array."""
    if isinstance(table, ColumnsFrame):
        return table.columns[name]
    if is_arrow_table(table):
        return numpy_of(table.column(name))
    return table[name].to_numpy()


class Tabular:
    """What a run and a golden set share: the table as given (``_held``: a DataFrame or an Arrow table), its length,
    and its columns as Arrow without building a DataFrame (:meth:`arrow`, :meth:`strings`)."""

    df: pd.DataFrame

    def _held(self) -> Any:
        return held(self, "df")

    def __len__(self) -> int:
        held = self._held()
        return held.num_rows if is_arrow_table(held) else len(held)

    def is_arrow(self) -> bool:
        """Whether the table is held as Arrow (immutable: what is derived from it can be kept), not a DataFrame."""
        return is_arrow_table(self._held())

    @property
    def columns(self) -> list[str]:
        held = self._held()
        return list(held.column_names) if is_arrow_table(held) else [str(c) for c in held.columns]

    def arrow(self, column: str) -> pa.Array | pa.ChunkedArray:
        """One column as Arrow: the held Arrow column, or the DataFrame's converted (ids as ``large_string``)."""
        import pyarrow as pa

        held = self._held()
        if is_arrow_table(held):
            return held.column(column)
        values = held[column]
        if values.dtype == object or isinstance(values.dtype, pd.StringDtype):
            return arrow_strings(values)
        return pa.array(values.to_numpy())

    def strings(self, column: str) -> pa.Array:
        """A string column as one contiguous ``large_string`` array (see :func:`arrow_strings`); kept for the next
        call when the table is held as Arrow (immutable), built again from a DataFrame (which can change)."""
        held = self._held()
        if not is_arrow_table(held):
            return arrow_strings(held[column])
        kept = self.__dict__.setdefault("_strings", {})
        if column not in kept:
            kept[column] = arrow_strings(held.column(column))
        return kept[column]

    def keep_strings(self, column: str, values: pa.Array) -> None:
        """Record ``values`` (a contiguous ``large_string`` array equal to the held Arrow column) as what
        :meth:`strings` returns for ``column``: the reader hands over the array whose fingerprints it knows
        (:func:`diagnose.runtime.ids.remember_fingerprints`)."""
        if is_arrow_table(self._held()):
            self.__dict__.setdefault("_strings", {})[column] = values

    def codes(self, column: str) -> tuple[np.ndarray, pa.Array]:
        """A string column's :func:`first_seen_codes` (the codes read-only); kept like :meth:`strings` (the reader
        hands over the codes it sorted the run by)."""
        kept = self.__dict__.get("_codes", {}).get(column)
        if kept is not None and self.is_arrow():
            return kept
        found = first_seen_codes(self.strings(column))
        self.keep_codes(column, *found)
        return found

    def keep_codes(self, column: str, codes: np.ndarray, values: pa.Array) -> None:
        """Record what :meth:`codes` returns for ``column`` (when the table is held as Arrow)."""
        if self.is_arrow():
            codes.flags.writeable = False
            self.__dict__.setdefault("_codes", {})[column] = (codes, values)

    def numbers(self, column: str, dtype: Any = None) -> np.ndarray:
        """A numeric column as a numpy array (of ``dtype`` when given)."""
        held = self._held()
        values = numpy_of(held.column(column)) if is_arrow_table(held) else held[column].to_numpy()
        return values if dtype is None else values.astype(dtype, copy=False)

    def unique(self, column: str) -> list[str]:
        """The distinct values of a string column, in first-seen order (those of the kept :meth:`codes` when the
        table is held as Arrow: no second hashing of the column)."""
        import pyarrow.compute as pc

        held = self._held()
        if is_arrow_table(held):
            kept = self.__dict__.get("_codes", {}).get(column)
            return (kept[1] if kept is not None else pc.unique(held.column(column))).to_pylist()
        return list(pd.unique(held[column]))
