"""What the command line sets for its own process before numpy loads: :mod:`diagnose.cli` imports this first (the
``diagnose`` package imports nothing heavy, so numpy is not loaded yet when the command runs).

A library never changes its host process like this; a command owns its process. A value the user set wins.
"""

from __future__ import annotations

import contextlib
import faulthandler
import os
import sys

#: OpenBLAS (numpy's BLAS) starts its threads when numpy loads, and each waits for work by spinning 2^N cycles before
#: it sleeps: N = 28 by default, ~0.1 s of a core burnt at every start (0.13 CPU-s of a 1.1 CPU-s ``diagnose
#: evaluate``, which makes no matrix product). 2^20 cycles (~0.4 ms) still spans the gaps between the blocks of a
#: long product; ``tests/test_cli.py`` checks that it is set before numpy loads.
BLAS_SPIN = ("OPENBLAS_THREAD_TIMEOUT", "20")

os.environ.setdefault(*BLAS_SPIN)


def report_fatal_signals() -> None:
    """:mod:`faulthandler` on for the command's process: a signal that ends it (SIGBUS when another program truncates
    a memory-mapped run file under it, SIGSEGV in a native library) prints "Fatal Python error: ..." and where on
    standard error instead of ending it without a word (docs/formats.md). Left alone when already on (``python -X
    faulthandler``, pytest) or when standard error has no file descriptor."""
    if faulthandler.is_enabled() or sys.__stderr__ is None:
        return
    with contextlib.suppress(AttributeError, OSError, ValueError):  # no usable descriptor
        faulthandler.enable(file=sys.__stderr__)
