"""``diagnose ann``: the recall/latency frontier of approximate indexes over the analysis' vectors."""

from __future__ import annotations

import argparse

from diagnose.cli.output import Output, emit
from diagnose.cli.shared import EXIT_OK, build_analysis, load_data, print_warnings, with_warnings
from diagnose.data import DataError
from diagnose.report.whatif import ann_text


def cmd_ann(args: argparse.Namespace) -> int:
    if len(args.run) > 1:
        raise DataError(
            "diagnose ann looks for the index_gap recovery of one run: pass at most one --run [NAME=]FILE."
        )
    ds = load_data(args, need_text=True)
    analysis = build_analysis(args, ds, k=args.k, baselines=("dense",))
    user = list(analysis.user_runs())
    frontier = analysis.ann_frontier(user[0] if user else None, k=args.k)
    print_warnings(ds.report, args.format)
    emit(
        Output(table=lambda: ann_text(frontier), json=with_warnings(frontier.to_dict, ds.report)), args.format
    )
    return EXIT_OK
