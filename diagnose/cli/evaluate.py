"""``diagnose evaluate``: score runs against a golden set, compare them, gate a CI job."""

from __future__ import annotations

import argparse

from diagnose.cli.output import Output, emit, say
from diagnose.cli.shared import (
    EXIT_FAIL,
    EXIT_OK,
    build_analysis,
    load_data,
    param_flags,
    parse_bounds,
    parse_ks,
    print_warnings,
    read_checked_run,
    write_run_files,
)
from diagnose.data import DataError, Dataset
from diagnose.io import parse_run_arg
from diagnose.runtime.threads import reuse_freed_memory


def cmd_evaluate(args: argparse.Namespace) -> int:
    reuse_freed_memory()  # a short process of large arrays: fewer page faults
    ks = parse_ks(args.k)
    fail_under = parse_bounds(args.fail_under, "--fail-under")
    max_drop = parse_bounds(args.max_drop, "--max-drop")
    if args.resamples < 1:
        raise DataError(f"--resamples must be at least 1 (got {args.resamples}).")
    ds, reference = _with_compare_to(args, load_data(args))
    analysis = build_analysis(
        args,
        ds,
        k=ks[-1],
        ks=ks,
        metrics=args.metrics.split(",") if args.metrics else None,
        baselines=list(dict.fromkeys(args.baseline)),
        depth=args.depth,
    )
    if not analysis.run_names:
        raise DataError(
            "No run to evaluate. Pass --run [NAME=]FILE (repeatable), --retriever NAME=module:attr or "
            "--baseline bm25|dense|hybrid."
        )
    reference = reference or args.reference
    if reference is not None and reference not in analysis.run_names:
        raise DataError(f"--reference {reference!r} is not one of the runs: {', '.join(analysis.run_names)}.")
    if max_drop and len(analysis.run_names) < 2:
        raise DataError("--max-drop needs a reference: pass --compare-to NAME=FILE or a second --run.")
    rep = analysis.evaluation_report(
        reference,
        headline=analysis.metric_names() if args.metrics else None,
        fail_under=fail_under,
        max_drop=max_drop,
        skip_reference=bool(args.compare_to or max_drop),
        slice_by=args.slice,
        n_resamples=args.resamples,
        seed=args.seed,
    )
    rep.gate = [_with_flags(msg) for msg in rep.gate]
    if args.bounds:
        heads = [c.metric for c in rep.comparisons] or analysis.metric_names(
            [f"ndcg@{analysis.k}", f"recall@{analysis.k}", "mrr"]
        )
        rep.bounds = analysis.bounds(list(dict.fromkeys(heads)))
        rep.coverage = analysis.metrics([f"judged@{analysis.k}", f"hole@{analysis.k}"])
    if args.detect is not None:
        if len(analysis.run_names) < 2:
            raise DataError("--detect needs two runs to compare (a second --run or a --baseline).")
        rep.queries_needed = analysis.queries_needed(
            args.detect, rep.reference, [c.metric for c in rep.comparisons] or None
        )
    write_run_files(args, analysis)
    print_warnings(ds.report, args.format)
    pq = args.per_query
    result = Output(
        table=lambda: rep.to_text(per_query=pq),
        json=lambda: rep.to_dict(per_query=pq),
        csv=lambda: rep.to_csv(per_query=pq),
        markdown=lambda: rep.to_markdown(per_query=pq),
    )
    emit(result, args.format)
    return _gate_exit(rep.gate)


def _with_compare_to(args: argparse.Namespace, ds: Dataset) -> tuple[Dataset, str | None]:
    """``--compare-to NAME=FILE``: the data set with that run first (the reference), and its name."""
    if not args.compare_to:
        return ds, None
    name, path = parse_run_arg(args.compare_to)
    if name in ds.runs:
        raise DataError(f"--compare-to {name!r}: a --run has the same name; name the reference differently.")
    return ds.with_run(read_checked_run(name, path, ds), first=True), name


def _with_flags(message: str) -> str:
    """A gate message of the library names the Python parameter ("(fail_under)"); on the command line, the flag
    ("(--fail-under)", as docs/cli.md shows)."""
    for param in ("fail_under", "max_drop"):
        message = message.replace(f"({param})", f"({param_flags()[param]})")
    return message


def _gate_exit(gate: list[str]) -> int:
    for msg in gate:
        say(f"gate failed: {msg}", err=True)
    return EXIT_FAIL if gate else EXIT_OK
