""":class:`ArrayCache`: whole arrays by key, one checked file per key."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from diagnose.cache.base import text_key, warn
from diagnose.cache.files import load_arrays, load_npy, save_arrays, sweep_tmp
from diagnose.data import ValidationReport


class ArrayCache:
    """Arrays stored under string keys, one checked ``<sha1(key)>.npy`` file per key, in ``directory``.

    Meant for results that are recomputed as a whole (e.g. UMAP coordinates keyed by model identity + data hash
    + parameters). Each file records its full key, so a file renamed or copied from another key does not verify.
    ``get`` returns ``None`` on a miss or a file that does not verify (reported, deleted). :meth:`put_arrays` /
    :meth:`get_arrays` keep several arrays that belong together (e.g. the parts of an index) in one file: one
    write, one checksum over all of them.
    """

    def __init__(self, directory: Path, *, report: ValidationReport | None = None) -> None:
        self.directory = Path(directory)
        self.report = report

    def path_for(self, key: str) -> Path:
        return self.directory / f"{text_key(key)}.npy"

    def get(
        self,
        key: str,
        *,
        dtype: np.dtype | str | None = None,
        shape: tuple[int | None, ...] | None = None,
        mmap: bool = False,
    ) -> np.ndarray | None:
        return load_npy(
            self.path_for(key), dtype=dtype, shape=shape, mmap=mmap, meta={"key": key}, report=self.report
        )

    def get_arrays(
        self,
        key: str,
        names: Sequence[str],
        *,
        check: Callable[[dict[str, np.ndarray], dict[str, Any]], str | None] | None = None,
        mmap: bool = False,
    ) -> dict[str, np.ndarray] | None:
        """The arrays stored under ``key`` by :meth:`put_arrays` (exactly ``names``), or ``None``; ``check`` as in
        :func:`load_arrays`."""
        return load_arrays(
            self.path_for(key), meta={"key": key}, names=names, check=check, mmap=mmap, report=self.report
        )

    def put(self, key: str, array: np.ndarray) -> bool:
        """Store ``array`` under ``key`` (atomic). Returns ``False`` (and reports) when the disk refuses."""
        return self.put_arrays(key, {"array": np.asarray(array)})

    def put_arrays(self, key: str, arrays: Mapping[str, np.ndarray]) -> bool:
        """Store named ``arrays`` under ``key`` in one checked file (atomic); ``False`` (reported) when the disk
        refuses."""
        try:
            save_arrays(self.path_for(key), arrays, {"key": key})
        except OSError as e:
            warn(
                self.report,
                "cache_write_failed",
                f"could not write the cache ({e}); going on without it",
                None,
            )
            return False
        sweep_tmp(self.directory)
        return True
