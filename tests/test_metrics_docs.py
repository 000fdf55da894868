"""docs/metrics.md's metric tables are the registry's (``diagnose.metrics.markdown_table`` and
``bands_markdown_table``): a family added to ``REGISTRY`` fails here until ``python -m diagnose.docs`` has rewritten
the page."""

from __future__ import annotations

from pathlib import Path

import pytest

from diagnose.metrics import REGISTRY, bands_markdown_table, markdown_table

PAGE = (Path(__file__).resolve().parents[1] / "docs" / "metrics.md").read_text(encoding="utf-8")


def page_table(header: str) -> str:
    """docs/metrics.md's Markdown table that starts with the line ``header``, up to the first line not starting with |."""
    lines = PAGE.splitlines()
    assert header in lines, f"docs/metrics.md has no table headed {header!r}"
    start = lines.index(header)
    end = start
    while end < len(lines) and lines[end].startswith("|"):
        end += 1
    return "\n".join(lines[start:end])


@pytest.mark.parametrize("table", [markdown_table, bands_markdown_table])
def test_the_pages_tables_are_the_registrys(table):
    generated = table()
    assert page_table(generated.splitlines()[0]) == generated, (
        f"docs/metrics.md's table differs from diagnose.metrics.{table.__name__}(): run `python -m diagnose.docs`"
    )


def test_every_form_and_band_is_in_the_tables():
    # one row per name form (12 today: mrr and map come with and without a cutoff); every quality family in the
    # band table, no coverage family
    rows = markdown_table().splitlines()[2:]
    assert [r.split(" | ")[0].removeprefix("| ") for r in rows] == [
        f"`{f.name}`" for m in REGISTRY.values() for f in m.forms
    ]
    bands = bands_markdown_table()
    for m in REGISTRY.values():
        assert (f"`{m.name}`" in bands) == (not m.coverage), m.name
