"""The `diagnose` command line: a thin layer over the library.

Exit codes: 0 ok, 1 an unexpected internal error (or a CI gate that failed), 2 an input or usage error, or not
enough memory (a message, never a traceback), 130 interrupted by Ctrl-C (during a live retriever: what it had done
is printed, and written with ``--write-runs DIR`` as ``NAME.partial.trec``).

Where things are
----------------
Each command parses its flags, calls the library (mostly one :class:`~diagnose.analysis.Analysis`), builds an
:class:`~diagnose.cli.output.Output` and :func:`~diagnose.cli.output.emit` prints it in the ``--format`` asked for;
this package holds :func:`main` and the table of commands, and re-exports the public names.

``parser``
    :func:`build_parser`: the argument groups (data, live retrievers, embeddings) and one parser per command
    (add a flag here).
``shared``
    the steps every command shares: loading the data, building the ``Analysis``, ``--write-runs``, warnings,
    ``--k`` and ``METRIC=VALUE`` parsing, the exit codes and :data:`PARAM_FLAGS` (library parameter -> flag).
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
"""

from __future__ import annotations

import sys
import traceback
from collections.abc import Sequence

from diagnose.cli.ann import cmd_ann
from diagnose.cli.chunking import cmd_chunking
from diagnose.cli.evaluate import cmd_evaluate
from diagnose.cli.failures import cmd_failures, cmd_risk
from diagnose.cli.finetune import cmd_finetune
from diagnose.cli.judge import cmd_judge_queue
from diagnose.cli.models import cmd_fuse, cmd_models, cmd_rerank
from diagnose.cli.parser import build_parser
from diagnose.cli.shared import (
    EXIT_FAIL,
    EXIT_INPUT,
    EXIT_INTERRUPTED,
    EXIT_OK,
    PARAM_FLAGS,
    write_partial_run,
)
from diagnose.data import DataError
from diagnose.extras import missing_extra
from diagnose.memory import is_out_of_memory, out_of_memory
from diagnose.retrievers import RetrieverInterrupted

__all__ = [
    "COMMANDS",
    "EXIT_FAIL",
    "EXIT_INPUT",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "PARAM_FLAGS",
    "build_parser",
    "cmd_ann",
    "cmd_chunking",
    "cmd_evaluate",
    "cmd_failures",
    "cmd_finetune",
    "cmd_fuse",
    "cmd_judge_queue",
    "cmd_models",
    "cmd_rerank",
    "cmd_risk",
    "main",
]

COMMANDS = {
    "evaluate": cmd_evaluate,
    "failures": cmd_failures,
    "models": cmd_models,
    "rerank": cmd_rerank,
    "fuse": cmd_fuse,
    "risk": cmd_risk,
    "judge-queue": cmd_judge_queue,
    "ann": cmd_ann,
    "finetune": cmd_finetune,
    "chunking": cmd_chunking,
}


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code (the console script passes it to ``sys.exit``)."""
    parser = build_parser()
    args = None
    try:
        args = parser.parse_args(argv)
        if not args.command:
            parser.print_help()
            return EXIT_INPUT
        return COMMANDS[args.command](args)
    except DataError as e:
        flag = PARAM_FLAGS.get(e.param or "")
        print(f"error: {flag}: {e}" if flag else f"error: {e}", file=sys.stderr)
        return EXIT_INPUT
    except (
        ModuleNotFoundError
    ) as e:  # an optional package (torch, bm25s, ...): name the extra that installs it
        err = missing_extra(e, f"diagnose {getattr(args, 'command', '') or ''}".strip())
        if err is None:
            raise
        print(f"error: {err}", file=sys.stderr)
        return EXIT_INPUT
    except RetrieverInterrupted as stop:
        write_partial_run(args, stop)
        return EXIT_INTERRUPTED
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return EXIT_OK
    except SystemExit as e:
        if args is None:  # argparse: --help, or a usage error it printed
            return int(e.code or 0) if isinstance(e.code, int | None) else EXIT_INPUT
        traceback.print_exc()  # not ours to exit with: code the command called (user code is contained first)
        print(
            f"internal error: SystemExit({e.code!r}) raised during `diagnose {args.command}`; stopped.",
            file=sys.stderr,
        )
        return EXIT_FAIL
    except Exception as e:  # noqa: BLE001 - the last line of defence: a bug, not a user mistake
        if is_out_of_memory(e):  # not a bug: how much it needed, how much the machine allowed
            doing = f"running diagnose {getattr(args, 'command', '') or ''}".strip()
            print(f"error: {out_of_memory(e, doing)}", file=sys.stderr)
            return EXIT_INPUT
        traceback.print_exc()
        print(
            f"internal error: {type(e).__name__}: {e}. This is a bug in diagnose; please report it.",
            file=sys.stderr,
        )
        return EXIT_FAIL
