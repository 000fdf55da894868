"""``diagnose failures`` (why each failed query failed) and ``diagnose risk`` (which queries will fail)."""

from __future__ import annotations

import argparse

from diagnose.cli.output import Output, emit
from diagnose.cli.shared import (
    EXIT_OK,
    build_analysis,
    load_data,
    print_warnings,
    with_warnings,
    write_run_files,
)
from diagnose.data import DataError, ValidationReport
from diagnose.failures import Thresholds
from diagnose.failures.kind import parse_kind_arg
from diagnose.failures.risk import failure_risk
from diagnose.io import parse_run_arg
from diagnose.io.convert import as_run
from diagnose.metrics.identical import drop_identical_ids
from diagnose.report.failures import failures_dict, failures_text
from diagnose.report.tables import records_text
from diagnose.report.whatif import filter_recall_text


def cmd_failures(args: argparse.Namespace) -> int:
    if len(args.run) + len(args.retriever) != 1:
        raise DataError(
            "diagnose failures analyses one run: pass exactly one --run [NAME=]FILE or one --retriever."
        )
    thresholds = Thresholds(seed_cosine=args.seed_threshold, duplicate_cosine=args.duplicate_cosine)
    ds = load_data(args, need_text=True)
    kinds = dict(parse_kind_arg(x) for x in args.run_kind)
    analysis = build_analysis(
        args, ds, k=args.k, failure=args.failure, thresholds=thresholds, kinds=kinds,
        filter_field=args.filter_field, filters=args.filters,
    )  # fmt: skip
    (name,) = analysis.run_names
    diag = analysis.diagnosis(name)
    noise = analysis.label_noise(name)
    hubs = analysis.hubness(name)
    remedies = analysis.remedies(name, cross_encoder=args.cross_encoder) if args.remedies else None
    matrix = analysis.remedy_matrix(name, cross_encoder=args.cross_encoder) if args.remedies else None
    advice = analysis.advice(name, cross_encoder=args.cross_encoder) if args.remedies else None
    found = analysis.findings(name, cross_encoder=args.cross_encoder) if args.remedies else None
    by_filter = analysis.filter_recall(name) if analysis.filters is not None else None
    write_run_files(args, analysis)
    print_warnings(ds.report, args.format)
    result = Output(
        table=lambda: (
            failures_text(
                diag,
                model=analysis.space.model_label,
                label_noise=noise,
                hubness=hubs,
                remedies=remedies,
                remedy_matrix=matrix,
                findings=found,
                advice=advice,
            )
            + (f"\n\n{filter_recall_text(by_filter)}" if by_filter is not None else "")
        ),
        json=lambda: (
            failures_dict(diag, label_noise=noise, hubness=hubs, validation=ds.report)
            | ({"remedies": remedies.to_dict()} if remedies is not None else {})
            | (
                {"remedy_matrix": matrix.to_dict(), "remedy_matrix_sentences": matrix.sentences()}
                if matrix is not None
                else {}
            )
            | ({"advice": advice.to_dict()} if advice is not None else {})
            | ({"filter_recall": by_filter.to_dict()} if by_filter is not None else {})
            | ({"findings": found.to_dict()} if found is not None else {})
        ),
        csv=diag.frame,
    )
    emit(result, args.format)
    return EXIT_OK


def cmd_risk(args: argparse.Namespace) -> int:
    if len(args.run) != 1:
        raise DataError("diagnose risk ranks the queries of one run: pass exactly one --run [NAME=]FILE.")
    if args.data or args.qrels:
        ds = load_data(args)
        analysis = build_analysis(args, ds, k=args.k)
        name = analysis.run_names[0]
        risk, validation = analysis.risk(name), analysis.risk_validation(name)
        report = ds.report
    else:  # the run alone: its own problems (duplicate lines, ...) are still counted
        name, path = parse_run_arg(args.run[0])
        report = ValidationReport()
        run = as_run(path, name=name, report=report)
        if args.ignore_identical_ids:
            run = drop_identical_ids(run)
        risk, validation = failure_risk(run, k=args.k), None
    print_warnings(report, args.format)
    if args.top:
        risk = risk.head(args.top)
    result = Output(
        table=lambda: records_text(risk) + (f"\n\n{validation.sentence()}" if validation is not None else ""),
        json=with_warnings(
            lambda: {
                "run": name,
                "k": args.k,
                "queries": risk.to_dict(orient="records"),
                "validation": validation.to_dict() if validation is not None else None,
            },
            report,
        ),
        csv=lambda: risk,
    )
    emit(result, args.format)
    return EXIT_OK
