"""The steps every command shares: load the data, build the one :class:`~diagnose.analysis.Analysis`, write the
runs computed here, print the warnings, parse ``--k`` and ``METRIC=VALUE`` bounds; the exit codes and the flags that
set each library parameter."""

from __future__ import annotations

import argparse
import functools
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any

from diagnose import defaults
from diagnose.analysis import YOUR_RUN, Analysis
from diagnose.analysis.base import check_runs
from diagnose.cli.output import say
from diagnose.cli.parser import build_parser, subcommand_parsers
from diagnose.data import DataError, Run, ValidationReport
from diagnose.io import load_dataset, parse_run_arg, read_run, write_trec_run
from diagnose.retrievers import DEFAULT_TIMEOUT, RetrieverInterrupted, load_retriever, parse_retriever_spec

EXIT_OK = 0
EXIT_FAIL = 1
EXIT_INPUT = 2
EXIT_INTERRUPTED = 130  # Ctrl-C (128 + SIGINT, what a shell reports)


#: The library parameters whose name is not the ``dest`` of the flag that sets them (or whose message names two
#: flags), with their flag; every other parameter is named like its flag's dest (``k``, ``rrf_k``, ``filter_field``)
#: and :func:`param_flags` reads its flag from the parser.
PARAM_FLAG_EXCEPTIONS = {
    "ks": "--k",  # Analysis(ks=): the cutoffs evaluate's --k gives (dest k)
    "models": "--model",  # compare_models(models=): every --model of `diagnose models` (dest model)
    "runs": "--run",  # Analysis(runs=): every --run (dest run)
    "baselines": "--baseline",  # Analysis(baselines=): every --baseline (dest baseline)
    "kinds": "--run-kind",  # Analysis(kinds=): every --run-kind NAME=KIND (dest run_kind)
    "slice_by": "--slice",  # evaluate(slice_by=) (dest slice)
    "seed_cosine": "--seed-threshold",  # Thresholds.seed_cosine, the cosine of the seed rule (dest seed_threshold)
    "embeddings": "--doc-embeddings/--query-embeddings",  # Analysis(embeddings=): one dict from four flags
    "corpus": "--corpus (or --data)",  # the corpus is read from either flag
    "queries": "--queries (or --data)",  # the queries too
}


@functools.cache
def param_flags() -> Mapping[str, str]:
    """Library parameters (``DataError.param``) and the flags that set them, so an error names what the user typed:
    each option's ``dest`` -> its first option string, over every command of the parser (``--remedies`` for
    ``remedies``), then :data:`PARAM_FLAG_EXCEPTIONS`. Built on the first error (the parser, ~8 ms), not on import."""
    flags: dict[str, str] = {}
    for parser in subcommand_parsers(build_parser()).values():
        for action in parser._actions:
            if action.option_strings and not isinstance(action, argparse._HelpAction):
                flags.setdefault(action.dest, action.option_strings[0])
    return MappingProxyType({**flags, **PARAM_FLAG_EXCEPTIONS})


def load_data(args: argparse.Namespace, *, need_text: bool = False, require_qrels: bool = True):
    extra = list(getattr(args, "extra_qrels", None) or [])
    if require_qrels and not args.data and not args.qrels and not extra:
        raise DataError(
            "No golden set given. Pass --data DIR (a BEIR folder), --qrels FILE or --extra-qrels FILE."
        )
    _retriever_specs(args)
    fields = {
        k: v for k, v in (("id", args.id_field), ("text", args.text_field), ("title", args.title_field)) if v
    }
    report = ValidationReport()
    ds = load_dataset(
        data_dir=args.data,
        split=args.split,
        corpus=args.corpus,
        queries=args.queries,
        qrels=args.qrels,
        runs=[parse_run_arg(r) for r in args.run],
        corpus_fields=fields or None,
        report=report,
        require_qrels=require_qrels and not extra,
        qrels_transform=_extra_qrels(extra, report) if extra else None,
        progress=True,  # a --corpus chroma:PATH#COLLECTION is read with a bar
        parent_field=getattr(args, "parent_field", None),
    )
    _write_qrels(args, ds)
    if need_text and (ds.corpus is None or ds.queries is None):
        raise DataError(
            "This needs the texts of the corpus and the queries. Pass --data DIR, or --corpus and --queries."
        )
    return ds


def _write_qrels(args: argparse.Namespace, ds) -> None:
    """``--write-qrels F`` (and ``--write-spans F``): the golden set as loaded, as BEIR TSV (and spans JSONL)."""
    path = getattr(args, "write_qrels", None)
    if getattr(args, "write_spans", None) and not path:
        raise DataError("--write-spans needs --write-qrels F (the spans are written beside the qrels).")
    if path:
        from diagnose.api import write_qrels

        spans = write_qrels(ds, path, spans_path=getattr(args, "write_spans", None))
        also = f" and {len(ds.qrels.spans):,} spans to {spans}" if spans is not None else ""
        say(f"Wrote {len(ds.qrels):,} judgements to {path}{also}.", err=True)


def read_checked_run(name: str, path: str, ds) -> Run:
    """A run file given beside the data (``--compare-to``, ``--candidates``, ``--reranked``), read into the data's
    validation report and refused when it can only score 0 against its golden set; cross-checked like the runs of
    ``--run`` (documents not in the corpus, golden queries it lacks: counted as warnings)."""
    run = read_run(path, name=name, report=ds.report)
    check_runs({name: run}, ds)
    return run


def _extra_qrels(paths: list[str], report):
    """``--extra-qrels``: merge each file's judgements into the golden set (printing what was merged)."""
    from diagnose.judging import merge, merge_counts, read_judgements

    def transform(qrels):
        for path in paths:
            new = read_judgements(path, report=report)
            say(merge_counts(qrels, new).sentence() + " (--extra-qrels)", err=True)
            qrels = merge(qrels, new, report=report)
        return qrels

    return transform


def _retriever_specs(args: argparse.Namespace) -> list[tuple[str, str]]:
    """``--retriever NAME=module:attr`` as ``(name, target)`` pairs (checked before any file is read)."""
    return [parse_retriever_spec(spec) for spec in getattr(args, "retriever", None) or []]


def _retrievers(args: argparse.Namespace, taken: Sequence[str]) -> dict[str, Any]:
    """The user's retriever objects (a factory is called), by name."""
    out: dict[str, Any] = {}
    for name, target in _retriever_specs(args):
        if name in out or name in taken:
            raise DataError(f"--retriever {name!r}: a run already has that name; name each run differently.")
        out[name] = load_retriever(target)
    return out


def build_analysis(args: argparse.Namespace, ds, *, runs=None, **kwargs: Any):
    """The :class:`~diagnose.analysis.Analysis` of the parsed arguments (the one pipeline)."""

    embeddings = None
    if getattr(args, "doc_embeddings", None) or getattr(args, "query_embeddings", None):
        embeddings = {
            "doc": args.doc_embeddings,
            "query": args.query_embeddings,
            "doc_ids": args.doc_ids,
            "query_ids": args.query_ids,
        }
    return Analysis(
        ds,
        runs if runs is not None else {**ds.runs, **_retrievers(args, list(ds.runs))},
        model=None
        if isinstance(getattr(args, "model", None), list)
        else getattr(args, "model", None),  # models: many
        cache_dir=getattr(args, "cache_dir", None),
        bm25_engine=getattr(args, "bm25_engine", defaults.BM25_ENGINE),
        embeddings=embeddings,
        precision=getattr(args, "precision", defaults.PRECISION),
        progress=True,
        retriever_timeout=_retriever_timeout(args),
        ignore_identical_ids=bool(getattr(args, "ignore_identical_ids", False)),
        passage_candidates=_passage_candidates(args),
        **kwargs,
    )


def _passage_candidates(args: argparse.Namespace) -> int | str | None:
    """``--passage-remedy-corpus``: None (every document); ``--passage-candidates N``: N; neither: ``"auto"``."""
    if getattr(args, "passage_remedy_corpus", False):
        return None
    n = getattr(args, "passage_candidates", None)
    return "auto" if n is None else n


def _retriever_timeout(args: argparse.Namespace) -> float | None:
    """``--retriever-timeout SECONDS``: the library's default when not given, no limit for 0."""
    seconds = getattr(args, "retriever_timeout", None)
    if seconds is None:
        return DEFAULT_TIMEOUT
    return None if seconds == 0 else seconds


def write_partial_run(args: argparse.Namespace, stop: RetrieverInterrupted) -> None:
    """Ctrl-C during a live retriever: say what was done and, with ``--write-runs DIR``, write the partial run."""
    say(str(stop), err=True)
    if stop.run is None:
        return
    errors = stop.run.errors or {}
    say(
        f"the partial run has {len(stop.run.query_ids())} queries with results ({len(errors)} failed or timed "
        "out); it was not evaluated",
        err=True,
    )
    if getattr(args, "write_runs", None):
        from diagnose.cache import slug

        out = Path(args.write_runs)
        out.mkdir(parents=True, exist_ok=True)
        path = out / f"{slug(stop.run_name)}.partial.trec"
        write_trec_run(stop.run, path)
        say(f"wrote {path}", err=True)


def write_run_files(args: argparse.Namespace, analysis) -> None:
    """``--write-runs DIR``: the runs computed here (baselines, live retrievers) as TREC files."""
    if not getattr(args, "write_runs", None):
        return
    from diagnose.cache import slug

    out = Path(args.write_runs)
    out.mkdir(parents=True, exist_ok=True)
    for name, run in analysis.runs.items():
        if analysis.kinds[name] == YOUR_RUN:
            continue
        path = out / f"{slug(name)}.trec"
        write_trec_run(run, path)
        say(f"wrote {path}", err=True)


def print_warnings(report, fmt: str) -> None:
    """The warnings of ``report`` on standard error, one per problem; in ``json`` format nothing is printed: the
    payload carries them instead (:func:`with_warnings`)."""
    if fmt == "json":
        return
    for p in report.warnings:
        say(f"{p.severity}: " + p.format().removeprefix(f"[{p.severity}] "), err=True)


def with_warnings(payload: Any, report: ValidationReport | None) -> Any:
    """The JSON payload of a command (a callable returning a dict) with ``"warnings"``: the problems its table
    format prints on standard error (:func:`print_warnings`), one dict each (``code``, ``severity``, ``message``,
    ...), the key ``diagnose evaluate`` and ``diagnose failures`` use. ``report`` None: ``[]``."""

    def build() -> dict[str, Any]:
        out = dict(payload())
        out["warnings"] = [p.to_dict() for p in report.warnings] if report is not None else []
        return out

    return build


def parse_ks(text: str) -> list[int]:
    try:
        ks = sorted({int(x) for x in text.split(",") if x.strip()})
    except ValueError:
        raise DataError(
            f"--k expects comma-separated positive integers like 1,3,5,10; got {text!r}."
        ) from None
    if not ks or ks[0] < 1:
        raise DataError(f"--k expects comma-separated positive integers like 1,3,5,10; got {text!r}.")
    return ks


def parse_bounds(items: list[str], flag: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for item in items:
        name, sep, value = item.partition("=")
        try:
            if not sep or not name.strip():
                raise ValueError
            bound = float(value)
        except ValueError:
            raise DataError(f"{flag} expects METRIC=VALUE like ndcg@10=0.60; got {item!r}.") from None
        if not math.isfinite(bound):
            raise DataError(
                f"{flag} {item!r}: the bound must be a finite number (a NaN bound can never fail)."
            )
        out[name.strip()] = bound
    return out
