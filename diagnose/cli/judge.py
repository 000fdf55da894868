"""``diagnose judge-queue``: the (query, document) pairs to judge first, as a TSV to grade."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from diagnose.cli.output import say
from diagnose.cli.shared import EXIT_OK, build_analysis, load_data, print_warnings
from diagnose.data import DataError
from diagnose.judging import judge_queue, with_texts, write_queue_tsv


def cmd_judge_queue(args: argparse.Namespace) -> int:
    if args.k < 1 or args.depth < 1 or (args.limit is not None and args.limit < 1):
        raise DataError(
            f"--k, --depth and --limit must be at least 1 (got {args.k}, {args.depth}, {args.limit})."
        )
    if not args.data and (not args.queries or not args.corpus):
        raise DataError(
            "diagnose judge-queue needs the texts: pass --data DIR, or --queries FILE and --corpus FILE."
        )
    ds = load_data(args, need_text=True, require_qrels=False)
    analysis = build_analysis(args, ds, k=args.k, depth=args.depth)
    queue = judge_queue(analysis, k=args.k, limit=args.limit)
    table = with_texts(queue, ds).assign(grade="")
    if len(ds.qrels) == 0:  # no golden set yet: that the run's queries have no judgements is the point
        ds.report.problems[:] = [p for p in ds.report.problems if p.code != "run_query_not_judged"]
    print_warnings(ds.report, "table")
    text = write_queue_tsv(table)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
        say(
            f"wrote {len(table)} pairs of {table['query_id'].nunique()} queries to {args.out} (pooled: "
            f"{', '.join(queue.attrs.get('pooled_runs', []))}); fill the grade column with 0-3 or skip and merge it "
            "with --extra-qrels",
            err=True,
        )
    elif sys.stdout.isatty():  # shown, not saved: no byte of the data acts on the terminal
        say(text, end="")
    else:  # piped or redirected: the file to grade and merge back, its ids exactly as they are
        sys.stdout.write(text)
    return EXIT_OK
