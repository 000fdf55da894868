"""Arrow arrays to numpy and back through their buffers, the way ``diagnose evaluate`` moves every column.

pyarrow's converters (``Array.to_numpy``, ``ChunkedArray.to_numpy``, ``numpy.asarray(arr)``, ``pa.array``,
``pa.scalar``, and a compute function given a Python number) import pandas the first time one runs, when it is
installed, only to recognise pandas objects: 0.25-0.35 s of CPU in a ``diagnose evaluate`` process that never builds
a frame. The functions here use only public buffer APIs that never ask for pandas (``Array.buffers``,
``numpy.frombuffer``, ``Array.from_buffers``, ``pyarrow.py_buffer``), so the command's process imports pandas only
when a step really builds a frame. They give the same values as the converters:

- :func:`numpy_of`: a numeric or boolean Arrow array (or chunked array) as numpy; zero-copy and read-only for one
  chunk without nulls, a copy for several chunks; nulls as ``null`` when given.
- :func:`arrow_of`: a numeric or boolean numpy array as Arrow (zero-copy for numbers, like ``pa.array``).
- :func:`strings_of`: Python strings as one Arrow string array (``large_string`` or ``string``).

pyarrow itself is imported on first use (like :mod:`diagnose.runtime.frames`, which uses these). Any other input (another type, nulls without a ``null`` value, objects) goes through pyarrow's own converter: the
same result, pandas possibly imported. ``tests/test_pandas_free.py`` checks that ``diagnose evaluate`` on files
imports no pandas, and ``tests/test_arrays.py`` that each function agrees with pyarrow's converter.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["arrow_of", "numpy_of", "strings_of"]


def numpy_of(arr: pa.Array | pa.ChunkedArray, null: Any = None) -> np.ndarray:
    """The values of ``arr`` as numpy, as ``arr.to_numpy(zero_copy_only=False)`` gives them (same dtype and
    values), read from its buffers for a fixed-width number type or a boolean.

    One chunk of numbers without nulls: a read-only view of Arrow's buffer (no copy; ``.copy()`` it to write).
    Several chunks: one copy joining them (writable, as ``to_numpy`` gives it). Booleans: unpacked from their bits (a copy). Nulls: set to ``null``
    when it is given (the values array is then a copy); without ``null``, an array with nulls, like an array of
    another type (strings, dictionaries, timestamps), goes through ``to_numpy(zero_copy_only=False)``."""
    import pyarrow as pa  # imported by the caller already: pyarrow is imported on first use

    if isinstance(arr, pa.ChunkedArray):
        if arr.num_chunks == 1:
            return numpy_of(arr.chunk(0), null)
        if not _readable(arr.type) or (arr.null_count and null is None):
            return arr.to_numpy()
        if arr.num_chunks == 0:
            return np.empty(
                0, dtype=np.bool_ if pa.types.is_boolean(arr.type) else arr.type.to_pandas_dtype()
            )
        return np.concatenate([numpy_of(c, null) for c in arr.chunks])
    if not _readable(arr.type) or (arr.null_count and null is None):
        return arr.to_numpy(zero_copy_only=False)
    n, start = len(arr), arr.offset
    buffer = arr.buffers()[1]
    if pa.types.is_boolean(arr.type):
        bits = np.frombuffer(buffer, dtype=np.uint8) if buffer is not None else np.empty(0, dtype=np.uint8)
        values = np.unpackbits(bits, count=start + n, bitorder="little")[start:].view(np.bool_)
    else:
        dtype = np.dtype(arr.type.to_pandas_dtype())
        values = (
            np.frombuffer(buffer, dtype=dtype, count=n, offset=start * dtype.itemsize)
            if n
            else np.empty(0, dtype)
        )
        values.flags.writeable = (
            False  # Arrow's memory (a numpy array's, when built from one): read-only, as to_numpy
        )
    if arr.null_count:
        values = np.where(numpy_of(arr.is_valid()), values, np.asarray(null, dtype=values.dtype))
    return values


def arrow_of(values: np.ndarray, type: pa.DataType | None = None) -> pa.Array:
    """A numpy array of numbers or booleans as an Arrow array without nulls, as ``pa.array(values, type=type)``
    gives it: the Arrow array shares a contiguous input's memory (like ``pa.array``); NaN stays a float, not a
    null. ``type``: cast to it first (numpy's ``astype``, as ``pa.array`` casts numbers). Objects and other
    dtypes go through ``pa.array``."""
    import pyarrow as pa  # imported by the caller already: pyarrow is imported on first use

    values = np.asarray(values)
    if type is not None and _readable(type) and values.dtype.kind in "biuf":
        values = values.astype(np.bool_ if pa.types.is_boolean(type) else type.to_pandas_dtype(), copy=False)
    if values.ndim != 1 or values.dtype.kind not in "biuf" or values.dtype.byteorder == ">":
        return pa.array(values, type=type)
    values = np.ascontiguousarray(values)
    if values.dtype.kind == "b":
        bits = np.packbits(values, bitorder="little")
        return pa.Array.from_buffers(pa.bool_(), len(values), [None, pa.py_buffer(bits)])
    return pa.Array.from_buffers(pa.from_numpy_dtype(values.dtype), len(values), [None, pa.py_buffer(values)])


def strings_of(values: Iterable[str], type: pa.DataType | None = None) -> pa.Array:
    """Python strings as one Arrow string array (UTF-8) of ``type``, ``large_string`` (the default) or ``string``, as
    ``pa.array(list(values), type=type)`` gives it; a value that is not a ``str`` (None, a number), a lone surrogate,
    or a ``string`` array over 2 GiB goes through ``pa.array`` (which makes None a null and refuses the others)."""
    import pyarrow as pa  # imported by the caller already: pyarrow is imported on first use

    type = pa.large_string() if type is None else type
    values = list(values)
    if type not in (pa.string(), pa.large_string()) or not all(v.__class__ is str for v in values):
        return pa.array(values, type=type)
    try:
        encoded = [v.encode("utf-8") for v in values]
    except UnicodeEncodeError:  # a lone surrogate: pyarrow's converter refuses it in its own words
        return pa.array(values, type=type)
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded)), out=offsets[1:])
    if type == pa.string():
        if offsets[-1] >= 2**31:
            return pa.array(values, type=type)
        offsets = offsets.astype(np.int32)
    data = pa.py_buffer(b"".join(encoded))
    return pa.Array.from_buffers(type, len(encoded), [None, pa.py_buffer(offsets), data])


def _readable(t: pa.DataType) -> bool:
    """Whether :func:`numpy_of` reads arrays of type ``t`` from their buffers: integers, floats (not half
    floats: numpy has them, Arrow's converter too, but kept on the converter), booleans."""
    import pyarrow as pa  # imported by the caller already: pyarrow is imported on first use

    return pa.types.is_integer(t) or pa.types.is_boolean(t) or (pa.types.is_floating(t) and t != pa.float16())
