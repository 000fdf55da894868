"""Arrow <-> numpy through the buffers (:mod:`diagnose.runtime.arrays`): the same values as pyarrow's converters,
and no pandas imported on the way (checked in a fresh interpreter: the test process has pandas loaded)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pyarrow as pa
import pytest

from diagnose.runtime.arrays import arrow_of, numpy_of, strings_of


@pytest.mark.parametrize(
    "arr",
    [
        pa.array([3, -1, 7], type=pa.int64()),
        pa.array([1, 2, 250], type=pa.uint8()),
        pa.array([0.5, float("nan"), -2.0], type=pa.float32()),
        pa.array([True, False, True, True, False, False, False, False, True]),  # 9 bits: two bytes
        pa.array([4, 5, 6, 7, 8], type=pa.int32()).slice(2, 2),  # an offset into the buffer: [6, 7]
        pa.array([True, False, True, False, True]).slice(3),  # bits from an offset: [False, True]
        pa.chunked_array([pa.array([1.0, 2.0]), pa.array([3.0])]),  # joined: [1, 2, 3]
        pa.chunked_array([pa.array([9], type=pa.int16())]),
        pa.chunked_array([], type=pa.float64()),
        pa.array([], type=pa.int64()),
        pa.array(["a", "b"]),  # not a number: pyarrow's converter
        pa.array([1, None, 3]),  # a null, no value given: pyarrow's converter (floats, NaN)
    ],
)
def test_numpy_of_gives_what_to_numpy_gives(arr):
    got = numpy_of(arr)
    want = arr.to_numpy() if isinstance(arr, pa.ChunkedArray) else arr.to_numpy(zero_copy_only=False)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


def test_numpy_of_reads_nulls_as_the_value_given_and_shares_one_chunk():
    # [1, null, 3] with null=-1: the null slot reads -1, the others their values
    assert numpy_of(pa.array([1, None, 3]), null=-1).tolist() == [1, -1, 3]
    assert numpy_of(pa.array([True, None]), null=False).tolist() == [True, False]
    arr = pa.array(np.arange(4, dtype=np.int64))
    view = numpy_of(arr)
    assert not view.flags.writeable  # Arrow's memory, read-only, as to_numpy() gives it
    assert np.shares_memory(view, np.frombuffer(arr.buffers()[1], dtype=np.int64))


@pytest.mark.parametrize(
    ("values", "type"),
    [
        (np.array([5, 1, 9], dtype=np.int64), None),
        (np.array([5, 1, 9], dtype=np.int64), pa.float64()),  # cast like pa.array: [5.0, 1.0, 9.0]
        (np.array([0.25, np.nan]), None),  # NaN stays a float (not a null), as pa.array gives it
        (np.array([True, False, True, True, True, False, False, False, True, False]), None),
        (np.arange(10, dtype=np.int32)[::3], pa.int64()),  # not contiguous: [0, 3, 6, 9]
        (np.array([], dtype=np.int64), None),
        (np.array(["x", "y"], dtype=object), pa.large_string()),  # objects: pa.array itself
    ],
)
def test_arrow_of_gives_what_pa_array_gives(values, type):
    got = arrow_of(values, type)
    want = pa.array(values, type=type)
    assert got.type == want.type and got.null_count == want.null_count == 0
    # element by element (NaN equal to NaN, which Array.equals does not grant)
    np.testing.assert_array_equal(got.to_numpy(zero_copy_only=False), want.to_numpy(zero_copy_only=False))


def test_strings_of_gives_what_pa_array_gives():
    values = ["q1", "", "é", "日本", "q1"]  # 2 + 0 + 2 + 6 + 2 UTF-8 bytes: offsets 0, 2, 2, 4, 10, 12
    got = strings_of(values)
    assert got.equals(pa.array(values, type=pa.large_string()))
    assert np.frombuffer(got.buffers()[1], dtype=np.int64).tolist() == [0, 2, 2, 4, 10, 12]
    small = strings_of(values, pa.string())  # 32-bit offsets, the same bytes
    assert small.type == pa.string() and small.equals(pa.array(values, type=pa.string()))
    assert np.frombuffer(small.buffers()[1], dtype=np.int32).tolist() == [0, 2, 2, 4, 10, 12]
    assert strings_of([]).equals(pa.array([], type=pa.large_string()))
    assert strings_of(["a", None]).null_count == 1  # not all str: pa.array (None is a null)


def test_none_of_them_imports_pandas():
    code = """
        import sys
        import numpy as np
        import pyarrow as pa
        from diagnose.runtime.arrays import arrow_of, numpy_of, strings_of
        a = arrow_of(np.arange(5))
        b = arrow_of(np.array([True, False]))
        n = numpy_of(a) + numpy_of(a.slice(1)).sum() + numpy_of(b).sum()
        m = numpy_of(a.take(arrow_of(np.array([0, 2]))))
        s = strings_of(["a", "b"]), strings_of(["c"], pa.string())
        print("pandas" in sys.modules)
        """
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, check=False
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False"]
