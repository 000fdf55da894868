"""Blocks of numpy work: :func:`in_threads` runs independent blocks on several cores, :func:`nonzero_2d` finds the
few hits of a block fast.

numpy's matrix products, comparisons, partitions and sorts, scipy's sparse products and Arrow's kernels release the
GIL, so blocks of them that share nothing run on several cores from one process (no pickling, no second copy of
the data). The callers split their work so that each block writes only its own rows of the outputs: the results,
and their order, are those of the serial loop whatever the number of threads."""

from __future__ import annotations

import contextlib
import contextvars
import ctypes
import functools
import os
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

import numpy as np

T = TypeVar("T")
R = TypeVar("R")


def available_cpus() -> int:
    """The CPUs this process may run on (its affinity mask where the OS has one), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # macOS, Windows
        return max(1, os.cpu_count() or 1)


def in_threads(
    fn: Callable[[T], R], items: Iterable[T], *, workers: int | None = None, blas: bool = True
) -> list[R]:
    """``[fn(x) for x in items]``, run in up to ``workers`` threads (default: :func:`available_cpus`); in the
    calling thread when there is one item or one worker. The results are in the order of ``items``; the first
    exception (in that order) is raised once every call has ended. ``blas``: the blocks run matrix products, each
    limited to one BLAS thread meanwhile (:func:`one_blas_thread`), and the memory they free goes back to the OS
    afterwards (:func:`release_freed_memory`); False for short blocks without any (sorts, hashing, takes), which
    then pay for neither."""
    todo = list(items)
    n = min(len(todo), available_cpus() if workers is None else max(1, int(workers)))
    if n <= 1:
        return [fn(x) for x in todo]
    limit = one_blas_thread() if blas else contextlib.nullcontext()
    with limit, ThreadPoolExecutor(max_workers=n, thread_name_prefix="diagnose") as pool:
        futures = [pool.submit(fn, x) for x in todo]
    if blas:
        release_freed_memory()
    return [f.result() for f in futures]


@contextlib.contextmanager
def beside(fn: Callable[..., R], *args: Any, name: str = "diagnose") -> Iterator[Future[R] | None]:
    """``fn(*args)`` in one thread while the ``with`` body runs in the caller's, joined when the body ends. The thread
    runs in a copy of the caller's context (its context variables, such as the app's confinement to its data folder,
    hold there). Yields the Future, or None when the thread cannot start (:func:`try_submit`): the caller then calls
    ``fn`` itself. Whether a second thread pays (:func:`available_cpus`) is the caller's call."""
    with ThreadPoolExecutor(1, thread_name_prefix=name) as pool:
        yield try_submit(pool, contextvars.copy_context().run, fn, *args)


def try_submit(pool: ThreadPoolExecutor, fn: Callable[..., R], *args: Any) -> Future[R] | None:
    """The first task of a new one-thread ``pool``: ``pool.submit(fn, *args)``, or None when its thread cannot be
    started (an address-space limit, the process' or the system's thread limit). The caller then calls ``fn`` itself,
    so the work is only slower; with no thread in the pool, nothing else ever runs the task."""
    try:
        return pool.submit(fn, *args)
    except RuntimeError as e:
        if not is_thread_start_failure(e):
            raise
        return None


def is_thread_start_failure(e: BaseException) -> bool:
    """Whether ``e`` is Python's failure to start a thread (its stack could not be allocated)."""
    return isinstance(e, RuntimeError) and "can't start new thread" in str(e)


@functools.cache
def _libc() -> Any:
    try:
        return ctypes.CDLL("libc.so.6")
    except OSError:  # not glibc (macOS, Windows, musl)
        return None


def release_freed_memory() -> None:
    """Hand freed memory back to the OS: glibc's (``malloc_trim``: glibc gives each thread its own heap and keeps the
    freed pages of each, which at 1M documents held ~150 MB more at the process' peak, the label-noise step after
    the threaded dense pass, than the serial code) and Arrow's (its allocator keeps freed pages for a while: the
    corpus' texts of the BM25 build, ~0.2-0.4 GB at 1M documents, would sit under the document vectors loaded
    next). Nothing for glibc where the C library is not glibc; nothing for Arrow before pyarrow is imported."""
    libc = _libc()
    if libc is not None and hasattr(libc, "malloc_trim"):
        libc.malloc_trim(0)
    pa = sys.modules.get("pyarrow")
    if pa is not None:
        pa.default_memory_pool().release_unused()


_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters (malloc.h)


def reuse_freed_memory() -> None:
    """For a short process that allocates and frees many large arrays (``diagnose evaluate`` on a 1M-line run):
    glibc serves each allocation over its (adaptive) threshold with a fresh ``mmap`` and unmaps it when freed, so every such
    numpy array costs page faults again (~0.1-0.2 s of system time there). Raising the mmap and trim thresholds
    makes freed blocks reusable from the heap; the process' peak does not change, its memory goes back at exit.
    Nothing where the C library is not glibc."""
    libc = _libc()
    if libc is not None and hasattr(libc, "mallopt"):
        libc.mallopt(_M_MMAP_THRESHOLD, 32 << 20)  # glibc's largest (64-bit)
        libc.mallopt(_M_TRIM_THRESHOLD, 1 << 30)


_blas_lock = threading.Lock()
_blas_users = 0
_blas_limit: Any = None


@contextlib.contextmanager
def one_blas_thread() -> Iterator[None]:
    """While blocks run in threads, each matrix product in one BLAS thread: two blocks whose products each
    started OpenBLAS' two threads made four threads on two cores, spinning (~20 % more CPU on the dense pass).
    Through threadpoolctl where it is installed (scikit-learn's dependency); without it, nothing changes. The limit
    is process-wide, so it is counted: the first of concurrent callers sets it, the last one restores it. A
    product's values do not depend on its number of BLAS threads, which split its rows and columns, not the sums
    (each score is summed in the kernel's order); the 200k and 1M outputs were byte-identical."""
    global _blas_users, _blas_limit
    with _blas_lock:
        if _blas_users == 0:
            try:
                from threadpoolctl import threadpool_limits
            except ImportError:
                threadpool_limits = None
            _blas_limit = threadpool_limits(1, user_api="blas") if threadpool_limits else None
        _blas_users += 1
    try:
        yield
    finally:
        with _blas_lock:
            _blas_users -= 1
            if _blas_users == 0 and _blas_limit is not None:
                _blas_limit.restore_original_limits()
                _blas_limit = None


def nonzero_2d(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.nonzero`` of a 2-D boolean array (rows, columns, in row-major order) through the flat positions: ~10x
    faster on a block of 512 x 8192 scores, where numpy's 2-D nonzero was the largest cost of the dense pass."""
    return np.divmod(np.flatnonzero(mask), mask.shape[1])
