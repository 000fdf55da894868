"""The README documents the CLI: every command and every long option (sqlite-utils' habit: docs that can fail)."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from diagnose.cli import build_parser
from diagnose.failures import CLASSES, class_table

README = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    raise AssertionError("the CLI has no subcommands")


@pytest.mark.parametrize("name", sorted(_subcommands()))
def test_every_command_is_documented(name):
    assert f"### `diagnose {name}`" in README, f"README has no section for `diagnose {name}`"


@pytest.mark.parametrize(
    ("command", "option"),
    [
        (name, opt)
        for name, sub in sorted(_subcommands().items())
        for action in sub._actions
        for opt in action.option_strings
        if opt.startswith("--") and opt != "--help"
    ],
)
def test_every_option_is_documented(command, option):
    assert re.search(rf"`{re.escape(option)}[ `=\\]", README), (
        f"`diagnose {command} {option}` is not in README"
    )


@pytest.mark.parametrize("name", sorted(_subcommands()))
def test_every_command_has_an_example(name):
    sub = _subcommands()[name]
    assert sub.epilog and "Example:" in sub.epilog


@pytest.mark.parametrize("cls", CLASSES)
def test_every_failure_class_is_documented(cls):
    assert f"`{cls}`" in README


def test_the_failure_class_table_is_generated_from_the_records():
    """The README's failure-class table is diagnose.failures.class_table(), row for row (ir_measures generates its
    measure docs from its registry): a class added, renamed or reworded in its record fails here until the README
    holds the new table."""
    table = class_table()
    header = table.splitlines()[0]
    assert README.count(header) == 1, "README has no failure-class table (or two)"
    start = README.index(header)
    end = README.find("\n\n", start)
    in_readme = README[start : end + 1]
    assert in_readme == table, f"README's failure-class table differs; replace it by class_table():\n{table}"
