"""``diagnose report``: one run's answer and evidence in one file a team can share (HTML, or Markdown for a pull
request): :meth:`diagnose.analysis.Analysis.shareable_report` rendered by :mod:`diagnose.report.html`."""

from __future__ import annotations

import argparse
from pathlib import Path

from diagnose.checks import positive_int
from diagnose.cli.output import say
from diagnose.cli.shared import EXIT_OK, build_analysis, load_data, print_warnings
from diagnose.data import DataError
from diagnose.report.html import to_html, to_markdown


def cmd_report(args: argparse.Namespace) -> int:
    if len(args.run) + len(args.retriever) != 1:
        raise DataError(
            "diagnose report shows one run: pass exactly one --run [NAME=]FILE or one --retriever."
        )
    out = Path(args.out)
    markdown = out.suffix.lower() in (".md", ".markdown")
    positive_int(args.worst, "worst")  # checked before the work, as the folder to write in
    if not out.parent.is_dir():
        raise DataError(
            f"No folder {out.parent} to write the report in: create it or pass another --out.", param="out"
        )
    ds = load_data(args, need_text=True)
    analysis = build_analysis(
        args,
        ds,
        k=args.k,
        failure=args.failure,
        baselines=list(dict.fromkeys(args.baseline or ("bm25", "dense", "hybrid"))),
    )
    name = next(n for n, kind in analysis.kinds.items() if kind != "baseline")
    lines = [
        f"corpus: {ds.corpus.size_phrase()}" if ds.corpus is not None else "",
        f"golden queries: {len(analysis.golden):,} (split {args.split})" if args.data else "",
        f"run: {args.run[0]}" if args.run else "run: a live retriever",
    ]
    report = analysis.shareable_report(
        name,
        data_label=str(args.data or args.qrels or ds.name),
        data_lines=[x for x in lines if x],
        worst=args.worst,
        charts=not markdown and args.charts,
    )
    text = to_markdown(report) if markdown else to_html(report)
    try:
        out.write_text(text, encoding="utf-8")
    except OSError as e:
        raise DataError(
            f"Could not write the report to {out}: {e.strerror}. Pass another --out.", param="out"
        ) from None
    print_warnings(ds.report, "table")
    first = report.findings.lines()
    say(f"Wrote {out} ({len(text.encode()) / 1024:,.0f} KB). {first[1] if len(first) > 1 else first[0]}")
    return EXIT_OK
