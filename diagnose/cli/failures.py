"""``diagnose failures`` (why each failed query failed) and ``diagnose risk`` (which queries will fail)."""

from __future__ import annotations

import argparse
import sys

from diagnose.api import as_run
from diagnose.cli.shared import EXIT_OK, _analysis, _load, _print_warnings, _write_runs
from diagnose.data import DataError
from diagnose.failures import Thresholds
from diagnose.failures.kind import parse_kind_arg
from diagnose.io import parse_run_arg
from diagnose.report import dumps, failures_dict, failures_text, text_table
from diagnose.risk import failure_risk


def cmd_failures(args: argparse.Namespace) -> int:
    if len(args.run) + len(args.retriever) != 1:
        raise DataError(
            "diagnose failures analyses one run: pass exactly one --run [NAME=]FILE or one --retriever."
        )
    thresholds = Thresholds(seed_cosine=args.seed_threshold, duplicate_cosine=args.duplicate_cosine)
    ds = _load(args, need_text=True)
    kinds = dict(parse_kind_arg(x) for x in args.run_kind)
    analysis = _analysis(args, ds, k=args.k, failure=args.failure, thresholds=thresholds, kinds=kinds)
    (name,) = analysis.run_names
    diag = analysis.diagnosis(name)
    noise = analysis.label_noise(name)
    hubs = analysis.hubness(name)
    remedies = analysis.remedies(name, cross_encoder=args.cross_encoder) if args.remedies else None
    _write_runs(args, analysis)
    _print_warnings(ds.report, args.format)
    if args.format == "json":
        payload = failures_dict(diag, label_noise=noise, hubness=hubs, validation=ds.report)
        if remedies is not None:
            payload["remedies"] = remedies.to_dict()
        print(dumps(payload))
    elif args.format == "csv":
        sys.stdout.write(diag.frame().to_csv(index=False, float_format="%.6f"))
    else:
        print(failures_text(diag, model=analysis.space.model_label, label_noise=noise, hubness=hubs, remedies=remedies))
    return EXIT_OK


def cmd_risk(args: argparse.Namespace) -> int:
    if len(args.run) != 1:
        raise DataError("diagnose risk ranks the queries of one run: pass exactly one --run [NAME=]FILE.")
    if args.data or args.qrels:
        analysis = _analysis(args, _load(args), k=args.k)
        name = analysis.run_names[0]
        risk, validation = analysis.risk(name), analysis.risk_validation(name)
    else:
        name, path = parse_run_arg(args.run[0])
        risk, validation = failure_risk(as_run(path, name=name), k=args.k), None
    if args.top:
        risk = risk.head(args.top)
    if args.format == "json":
        payload = {"run": name, "k": args.k, "queries": risk.to_dict(orient="records")}
        payload["validation"] = validation.to_dict() if validation is not None else None
        print(dumps(payload))
    elif args.format == "csv":
        sys.stdout.write(risk.to_csv(index=False, float_format="%.6f"))
    else:
        print(text_table(risk.to_dict(orient="records"), list(risk.columns)))
        if validation is not None:
            print("\n" + validation.sentence())
    return EXIT_OK
