"""What whoever started the app asked it to open: ``streamlit run app.py -- --data DIR [--split S] [--run [NAME=]FILE
...] [--retriever NAME=module:attr ...]``, or the same through the environment (``DIAGNOSE_DATA``, ``DIAGNOSE_SPLIT``,
``DIAGNOSE_RUNS`` = ``[NAME=]FILE;[NAME=]FILE``; ``DIAGNOSE_RETRIEVERS`` is read by :mod:`diagnose.ui.settings`).

The command line wins over the environment. The data folder becomes the data root (the folder typed paths must lie
under) unless ``DIAGNOSE_DATA_ROOT`` says otherwise; run files named at launch are read even outside it: they were
chosen by the user who started the server, not typed into the page, and exactly those files (not their folders)
are allowed. A mistake in the arguments is a :class:`Launch` with ``error`` set, shown on the page, never a
traceback.

This module does not import Streamlit, so it can be tested on its own.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from diagnose.io import parse_run_arg

DATA_ENV = "DIAGNOSE_DATA"
SPLIT_ENV = "DIAGNOSE_SPLIT"
RUNS_ENV = "DIAGNOSE_RUNS"
APP_SCRIPT = "app.py"
USAGE = "streamlit run app.py -- --data DIR [--split test] [--run [NAME=]FILE ...] [--retriever NAME=module:attr ...]"
HINT = "The app takes: {usage} (or DIAGNOSE_DATA, DIAGNOSE_RUNS). Showing the demo."
_FLAGS = ("--data", "--split", "--run", "--retriever")


@dataclass(frozen=True)
class Launch:
    """The data the app opens on (``data`` None: the demo), or why the arguments could not be used."""

    data: str | None = None
    split: str = "test"
    runs: tuple[tuple[str | None, str], ...] = ()
    error: str | None = None  # what is wrong in the arguments; :data:`HINT` says what the app takes

    def message(self) -> str:
        """The error with the usage, as plain text."""
        return f"{self.error} {HINT.format(usage=USAGE)}"


def _app_args(argv: Sequence[str]) -> list[str]:
    """The arguments after ``--`` of ``streamlit run app.py -- ...`` (Streamlit sets ``argv[0]`` to the script);
    none when another program (a test runner) owns ``sys.argv``."""
    if not argv or Path(argv[0]).name != APP_SCRIPT:
        return []
    return list(argv[1:])


def _pairs(args: list[str]) -> list[tuple[str, str]]:
    """``(flag, value)`` for ``--flag value`` and ``--flag=value``; ValueError names an unknown or incomplete one."""
    out, i = [], 0
    while i < len(args):
        flag, sep, value = args[i].partition("=")
        if flag not in _FLAGS:
            raise ValueError(f"Unknown argument {args[i]!r}.")
        if not sep:
            if i + 1 >= len(args) or args[i + 1].startswith("--"):
                raise ValueError(f"{flag} needs a value.")
            i, value = i + 1, args[i + 1]
        out.append((flag, value))
        i += 1
    return out


def _run_arg(text: str) -> tuple[str | None, str]:

    name, path = parse_run_arg(text.strip())
    full = Path(path).expanduser().resolve()
    if not full.is_file():
        raise ValueError(f"The run file {str(path)!r} does not exist (resolved to {str(full)!r}).")
    return name, str(full)


def read_launch(argv: Sequence[str] | None = None, env: dict[str, str] | None = None) -> Launch:
    """The :class:`Launch` of ``argv`` (default ``sys.argv``) and ``env`` (default ``os.environ``)."""
    env = dict(os.environ) if env is None else env
    try:
        pairs = _pairs(_app_args(sys.argv if argv is None else argv))
        data = next((v for f, v in reversed(pairs) if f == "--data"), None) or env.get(DATA_ENV) or None
        split = next((v for f, v in reversed(pairs) if f == "--split"), None) or env.get(SPLIT_ENV) or "test"
        run_texts = [v for f, v in pairs if f == "--run"]
        if not run_texts:
            run_texts = [x for x in env.get(RUNS_ENV, "").split(";") if x.strip()]
        if run_texts and not data:
            raise ValueError(
                "--run (or DIAGNOSE_RUNS) needs --data (or DIAGNOSE_DATA): the folder the runs rank."
            )
        if data:
            folder = Path(data).expanduser().resolve()
            if not folder.is_dir():
                raise ValueError(f"The data folder {data!r} is not a folder (resolved to {str(folder)!r}).")
            data = str(folder)
        runs = tuple(_run_arg(t) for t in run_texts)
    except ValueError as e:
        return Launch(error=str(e))
    return Launch(data=data, split=split.strip() or "test", runs=runs)
