"""The `diagnose` command line: a thin layer over the library.

Exit codes: 0 ok, 1 an unexpected internal error (or a CI gate that failed), 2 an input or usage error, or not
enough memory (a message, never a traceback), 130 interrupted by Ctrl-C (during a live retriever: what it had done
is printed, and written with ``--write-runs DIR`` as ``NAME.partial.trec``).

Where things are
----------------
Each command parses its flags, calls the library (mostly one :class:`~diagnose.analysis.Analysis`), builds an
:class:`~diagnose.cli.output.Output` and :func:`~diagnose.cli.output.emit` prints it in the ``--format`` asked for;
this package holds :func:`main`, the command functions by name (from the parser's table of commands) and
:func:`entry` (the console script), and re-exports the public names.

``parser``
    :func:`build_parser`: the argument groups (data, live retrievers, embeddings), the table of commands (name,
    help, example, options, the function that runs it; add a command there) and one parser per command (add a
    flag here).
``shared``
    the steps every command shares: loading the data, building the ``Analysis``, ``--write-runs``, warnings,
    ``--k`` and ``METRIC=VALUE`` parsing, the exit codes and :func:`param_flags` (library parameter -> flag, from the parser).
``output``
    :class:`~diagnose.cli.output.Output` and :func:`~diagnose.cli.output.emit`: a result in every format (table,
    JSON, CSV, Markdown), written the same way for every command.
``evaluate``
    ``diagnose evaluate``: metrics, comparisons, the CI gate.
``failures``
    ``diagnose failures`` and ``diagnose risk``: why queries failed, which ones will.
``models``
    ``diagnose models``, ``rerank`` and ``fuse``: what another model, a reranker or a fusion would change.
``judge``
    ``diagnose judge-queue``: which pairs to judge first.
``finetune``
    ``diagnose finetune``: fine-tune the embedding model, measured on queries it never saw.
``report``
    ``diagnose report``: one run's answer and evidence in one HTML (or Markdown) file a team can share.
"""

from __future__ import annotations

import argparse
import atexit
import importlib
import os
import sys
import threading
import traceback
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

import diagnose.cli.process  # noqa: F401  (first: it sets up the process before numpy loads)
from diagnose.cli.output import say
from diagnose.cli.parser import COMMAND_TABLE, build_parser
from diagnose.cli.shared import (
    EXIT_FAIL,
    EXIT_INPUT,
    EXIT_INTERRUPTED,
    EXIT_OK,
    param_flags,
    write_partial_run,
)
from diagnose.data import DataError
from diagnose.retrievers import RetrieverInterrupted
from diagnose.runtime.extras import missing_extra
from diagnose.runtime.memory import is_out_of_memory, out_of_memory

__all__ = [
    "COMMANDS",
    "EXIT_FAIL",
    "EXIT_INPUT",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "build_parser",
    "entry",
    "main",
    "param_flags",
    *sorted(command.function for command in COMMAND_TABLE),  # cmd_evaluate, cmd_failures, ...
]

#: Where each command's function lives (``cmd_NAME`` -> its module), from the table of commands: its module is
#: imported only when the command runs (or the name is asked of this package).
_HOMES = {command.function: command.module for command in COMMAND_TABLE}


def _command(name: str) -> Callable[[argparse.Namespace], int]:
    """The command function ``name`` (a key of :data:`_HOMES`), its module imported on the first call."""

    def run(args: argparse.Namespace) -> int:
        return __getattr__(name)(args)

    run.__name__ = name
    return run


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        return getattr(importlib.import_module(_HOMES[name]), name)
    raise AttributeError(f"module 'diagnose.cli' has no attribute {name!r}")


#: The function that runs each subcommand, by its name on the command line.
COMMANDS = {command.name: _command(command.function) for command in COMMAND_TABLE}


def entry() -> NoReturn:
    """The ``diagnose`` console script and ``python -m diagnose``: :func:`main` on ``sys.argv``, then the exit."""
    diagnose.cli.process.report_fatal_signals()
    exit_fast(main())


def exit_fast(code: int) -> NoReturn:
    """End the process with ``code`` without the interpreter's teardown, which frees every object and module one by
    one: ~70 ms after evaluating a 1M-line run, 7 % of the command (mypy exits the same way). The output is flushed
    and the ``atexit`` handlers run first (logging, Ray, temporary directories, coverage), as in a normal exit.

    The normal exit (``sys.exit``) is kept when it does more than that: another non-daemon thread still runs (Python
    waits for it), a tracer or profiler is on (coverage, a debugger, ``python -m cProfile``, which report after the
    program ends), the process is not the command's alone (an interactive interpreter, IPython or Jupyter's
    ``%run -m diagnose``, pytest: ``SystemExit`` returns to them), or this Python has no ``atexit._run_exitfuncs``.
    """
    run_handlers = getattr(atexit, "_run_exitfuncs", None)
    others = [t for t in threading.enumerate() if t is not threading.main_thread() and not t.daemon]
    traced = sys.gettrace() is not None or sys.getprofile() is not None
    if run_handlers is None or others or traced or not _process_is_the_command():
        sys.exit(code)
    _flush()
    run_handlers()
    _flush()
    os._exit(code)


def _process_is_the_command() -> bool:
    """Whether nothing else runs in this process that ``SystemExit`` would return to."""
    hosts = ("IPython", "ipykernel", "_pytest")
    return not (sys.flags.interactive or hasattr(sys, "ps1") or any(h in sys.modules for h in hosts))


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):  # a closed pipe or stream: nothing more can be written to it
            pass


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code (:func:`entry`, the console script, exits with it)."""
    parser = build_parser()
    args = None
    try:
        args = parser.parse_args(argv)
        if not args.command:
            parser.print_help()
            return EXIT_INPUT
        return COMMANDS[args.command](args)
    except DataError as e:
        # param_flags() builds a parser on its first call: not for an error without a parameter (a usage error)
        flag = param_flags().get(e.param) if e.param else None
        say(f"error: {flag}: {e}" if flag else f"error: {e}", err=True)
        return EXIT_INPUT
    except (
        ModuleNotFoundError
    ) as e:  # an optional package (torch, bm25s, ...): name the extra that installs it
        err = missing_extra(e, f"diagnose {getattr(args, 'command', '') or ''}".strip())
        if err is None:
            raise
        say(f"error: {err}", err=True)
        return EXIT_INPUT
    except RetrieverInterrupted as stop:
        write_partial_run(args, stop)
        return EXIT_INTERRUPTED
    except KeyboardInterrupt:
        say("interrupted", err=True)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return EXIT_OK
    except SystemExit as e:
        if args is None:  # argparse: --help, or a usage error it printed
            return int(e.code or 0) if isinstance(e.code, int | None) else EXIT_INPUT
        say(
            traceback.format_exc(), err=True, end=""
        )  # not ours to exit with: code the command called (user code is contained first)
        say(
            f"internal error: SystemExit({e.code!r}) raised during `diagnose {args.command}`; stopped.",
            err=True,
        )
        return EXIT_FAIL
    except Exception as e:  # noqa: BLE001 - the last line of defence: a bug, not a user mistake
        if is_out_of_memory(e):  # not a bug: how much it needed, how much the machine allowed
            doing = f"running diagnose {getattr(args, 'command', '') or ''}".strip()
            say(f"error: {out_of_memory(e, doing)}", err=True)
            return EXIT_INPUT
        say(traceback.format_exc(), err=True, end="")
        say(
            f"internal error: {type(e).__name__}: {e}. This is a bug in diagnose; please report it.",
            err=True,
        )
        return EXIT_FAIL
