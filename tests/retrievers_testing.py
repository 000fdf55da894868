"""What the tests of live retrievers share (tests/test_retrievers_*.py): the demo folder and a Run's round trip
through a TREC file (``write_trec_run``, then ``read_run``)."""

from __future__ import annotations

from pathlib import Path

from diagnose.data import Run
from diagnose.io import read_run, write_trec_run

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "demo_corpus"


def round_trip(run: Run, tmp_path: Path) -> Run:
    path = tmp_path / f"{run.name}.trec"
    write_trec_run(run, path)
    return read_run(path, name=run.name)
