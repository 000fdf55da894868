"""``diagnose finetune``: fine-tune the embedding model on the golden set and measure it on queries it never saw."""

from __future__ import annotations

import argparse
from pathlib import Path

from diagnose.cli.output import Output, emit, say
from diagnose.cli.shared import EXIT_OK, build_analysis, load_data, parse_ks, print_warnings, with_warnings
from diagnose.data import DataError, Qrels
from diagnose.io import read_qrels
from diagnose.report.whatif import finetune_text
from diagnose.whatif.finetune import Cost, TrainSettings


def _train_qrels(args: argparse.Namespace) -> Qrels | None:
    """``--train-split S``: the BEIR folder's ``qrels/S.tsv``, or a qrels file."""
    if not args.train_split:
        return None
    if args.train_split == args.split and not Path(args.train_split).is_file():
        raise DataError(
            f"--train-split {args.train_split!r} is the evaluation split (--split): train on another one."
        )
    path = Path(args.train_split)
    if not path.is_file():
        if not args.data:
            raise DataError(
                f"--train-split {args.train_split!r}: no such qrels file (a split name needs --data DIR)."
            )
        path = Path(args.data) / "qrels" / f"{args.train_split}.tsv"
        if not path.is_file():
            found = sorted(p.stem for p in (Path(args.data) / "qrels").glob("*.tsv"))
            raise DataError(
                f"--train-split {args.train_split!r}: no {path}; the splits there are: {', '.join(found) or 'none'}."
            )
    return read_qrels(path)


def cmd_finetune(args: argparse.Namespace) -> int:
    ks = parse_ks(args.k)
    train_qrels = _train_qrels(args)
    ds = load_data(args, need_text=True)
    analysis = build_analysis(args, ds, runs={}, k=ks[-1], ks=ks)
    if args.sample is not None:  # --sample 0 is refused, not ignored
        from diagnose.analysis.finetuning import sampled

        analysis = sampled(analysis, args.sample, args.seed)
    settings = TrainSettings(
        epochs=args.epochs,
        batch_size=args.batch_size,
        max_seq_length=args.max_seq_length,
        learning_rate=args.learning_rate,
        pairs_per_query=args.pairs_per_query,
        seed=args.seed,
        precision=args.precision,
    )
    result = analysis.finetune(
        args.out,
        train_qrels=train_qrels,
        folds=args.folds,
        settings=settings,
        announce=_announce,
    )
    print_warnings(ds.report, args.format)
    emit(
        Output(table=lambda: finetune_text(result), json=with_warnings(result.to_dict, ds.report)),
        args.format,
    )
    return EXIT_OK


def _announce(cost: Cost) -> None:
    say(cost.sentence() + ".", err=True)
