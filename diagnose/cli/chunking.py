"""``diagnose chunking``: which chunking, measured on the golden set against the documents as they are."""

from __future__ import annotations

import argparse

from diagnose.cli.output import Output, emit
from diagnose.cli.shared import EXIT_OK, build_analysis, load_data, print_warnings, with_warnings
from diagnose.report.whatif import chunking_text
from diagnose.whatif.chunking import check_grid


def cmd_chunking(args: argparse.Namespace) -> int:
    check_grid(args.sizes, args.overlaps)  # a bad grid fails before any data is read
    ds = load_data(args, need_text=True)
    analysis = build_analysis(args, ds, k=args.k)
    sweep = analysis.chunking(args.sizes, args.overlaps, k=args.k)
    print_warnings(ds.report, args.format)
    emit(
        Output(table=lambda: chunking_text(sweep), json=with_warnings(sweep.to_dict, ds.report)), args.format
    )
    return EXIT_OK
