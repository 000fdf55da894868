"""The documentation can fail (sqlite-utils' habit): the README is the front door, the reference is in ``docs/``.

docs/cli.md holds every command and every long option, its option tables written from the parser; docs/taxonomy.md
the failure-class table written from the records; every generated block of every page equals what
``python -m diagnose.docs`` writes; every relative link of the README and the docs resolves; the README's two
commands are what CI runs; the README's command table lists exactly the commands, and its table of the app's pages
and docs/app.md's exactly the pages of ``diagnose/ui/navigation.py``.
"""

from __future__ import annotations

import argparse
import re
import shutil
from pathlib import Path

import pytest

from diagnose import docs
from diagnose.cli import build_parser
from diagnose.cli.reference import options_markdown
from diagnose.failures import CLASSES, class_table

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
CLI_PAGE = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
TAXONOMY = (ROOT / "docs" / "taxonomy.md").read_text(encoding="utf-8")
PAGES = docs.pages(ROOT)


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    raise AssertionError("the CLI has no subcommands")


@pytest.mark.parametrize("name", sorted(_subcommands()))
def test_every_command_is_documented(name):
    assert f"## `diagnose {name}`" in CLI_PAGE, f"docs/cli.md has no section for `diagnose {name}`"


@pytest.mark.parametrize("name", sorted(_subcommands()))
def test_every_command_is_in_the_readme_with_an_example(name):
    section = README.split("## Command line", 1)[1].split("\n## ", 1)[0]
    examples = "\n".join(re.findall(r"```bash\n(.*?)```", section, flags=re.S))
    assert re.search(rf"^diagnose {re.escape(name)} ", examples, flags=re.M), f"no README example of {name}"
    assert f"| `diagnose {name}` |" in section, f"README's command table has no row for {name}"


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
    assert re.search(rf"`{re.escape(option)}[ `=\\]", CLI_PAGE), (
        f"`diagnose {command} {option}` is not in docs/cli.md"
    )


@pytest.mark.parametrize("name", sorted(_subcommands()))
def test_every_option_row_has_four_cells(name):
    # a `|` in a value or a help text (--filter-field's metavar FIELD|QUERY_FIELD=DOC_FIELD) must be escaped, or the
    # row splits into more cells than the header's four: 5 unescaped pipes per row
    rows = [r for r in options_markdown(name).splitlines() if r.startswith("| `--")]
    assert rows, name
    for row in rows:
        assert len(re.findall(r"(?<!\\)\|", row)) == 5, row


@pytest.mark.parametrize("name", sorted(_subcommands()))
def test_every_command_has_an_example(name):
    sub = _subcommands()[name]
    assert sub.epilog and "Example:" in sub.epilog


@pytest.mark.parametrize("cls", CLASSES)
def test_every_failure_class_is_documented(cls):
    assert f"`{cls}`" in TAXONOMY


def test_the_failure_class_table_is_generated_from_the_records():
    """docs/taxonomy.md's failure-class table is diagnose.failures.class_table(), row for row (ir_measures generates
    its measure docs from its registry): a class added, renamed or reworded in its record fails here until
    `python -m diagnose.docs` has rewritten the page."""
    table = class_table()
    header = table.splitlines()[0]
    assert TAXONOMY.count(header) == 1, "docs/taxonomy.md has no failure-class table (or two)"
    start = TAXONOMY.index(header)
    end = TAXONOMY.find("\n\n", start)
    assert TAXONOMY[start : end + 1] == table, (
        f"the class table differs; run `python -m diagnose.docs`:\n{table}"
    )


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_generated_blocks_are_current(page):
    text = page.read_text(encoding="utf-8")
    assert docs.render(text, str(page)) == text, f"{page} is stale: run `python -m diagnose.docs`"


def test_every_generator_has_its_block_on_a_page():
    # a generator whose block is on no page would document nothing: each name is marked once in all the pages
    text = "\n".join(p.read_text(encoding="utf-8") for p in PAGES)
    for name in docs.blocks():
        assert text.count(docs.BEGIN.format(name=name)) == 1, name


def test_render_rewrites_a_stale_block_and_refuses_an_unknown_one():
    stale = f"intro\n{docs.BEGIN.format(name='band-table')}\n| old | table |\n{docs.END}\nafter\n"
    fresh = docs.render(stale)
    assert "| old | table |" not in fresh and docs.blocks()["band-table"]() in fresh
    assert fresh.startswith("intro\n") and fresh.endswith(f"{docs.END}\nafter\n")
    assert docs.render(fresh) == fresh  # rendering twice changes nothing
    with pytest.raises(ValueError, match="unknown generated block 'no-such-table'"):
        docs.render(f"{docs.BEGIN.format(name='no-such-table')}\nx\n{docs.END}\n", "page.md")


def test_the_docs_command_checks_then_rewrites(tmp_path, capsys):
    (tmp_path / "docs").mkdir()
    shutil.copy(ROOT / "README.md", tmp_path / "README.md")
    page = tmp_path / "docs" / "metrics.md"
    page.write_text(f"# m\n\n{docs.BEGIN.format(name='metric-table')}\nstale\n{docs.END}\n", encoding="utf-8")
    assert docs.main(["--check", "--root", str(tmp_path)]) == 1
    assert "metrics.md" in capsys.readouterr().err and "stale" in page.read_text(encoding="utf-8")
    assert docs.main(["--root", str(tmp_path)]) == 0
    assert docs.main(["--check", "--root", str(tmp_path)]) == 0
    assert docs.blocks()["metric-table"]() in page.read_text(encoding="utf-8")
    with pytest.raises(SystemExit):  # not a checkout: said, not a traceback
        docs.main(["--root", str(tmp_path / "docs")])
    assert "give the repository with --root" in capsys.readouterr().err


def _anchors(markdown: str) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation but hyphens and underscores dropped, spaces as hyphens;
    a repeated heading gets -1, -2, ..."""
    seen: dict[str, int] = {}
    anchors = set()
    for heading in re.findall(r"^#{1,6} (.+)$", _without_code_blocks(markdown), flags=re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        anchors.add(slug if n == 0 else f"{slug}-{n}")
        seen[slug] = n + 1
    return anchors


def _without_code_blocks(markdown: str) -> str:
    return re.sub(r"^```.*?^```", "", markdown, flags=re.M | re.S)


def test_the_anchor_rule():
    # "## `diagnose judge-queue`" -> backticks dropped, hyphen kept; "## The run's kind" -> apostrophe dropped
    assert _anchors("## `diagnose judge-queue`\n## The run's kind\n## A b\n## A b\n") == {
        "diagnose-judge-queue",
        "the-runs-kind",
        "a-b",
        "a-b-1",
    }


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_relative_link_resolves(page):
    text = re.sub(r"`[^`\n]*`", "", _without_code_blocks(page.read_text(encoding="utf-8")))
    links = re.findall(r"\]\(([^)\s]+)\)", text)
    assert links, f"{page} links nowhere"
    for link in links:
        if re.match(r"[a-z]+:", link):
            continue
        path, _, anchor = link.partition("#")
        target = (page.parent / path).resolve() if path else page
        assert target.exists(), f"{page.name}: {link} points to a missing file"
        if anchor:
            assert anchor in _anchors(target.read_text(encoding="utf-8")), (
                f"{page.name}: no heading for {link}"
            )


def test_every_docs_page_is_linked_from_the_readme():
    for page in PAGES[1:]:
        assert f"](docs/{page.name})" in README, f"README does not link docs/{page.name}"


def test_the_readme_is_a_front_door():
    # the reference lives in docs/: the README stays short enough to read on arrival (issue 23: about 250 lines)
    assert len(README.splitlines()) <= 300, "README is over 300 lines: move the reference into docs/"
    first_screen = "\n".join(README.splitlines()[:60])
    assert (
        "Python 3.11" in first_screen and "git clone" in first_screen and "pip install torch" in first_screen
    )


def test_the_readme_commands_are_what_ci_runs():
    """The README's clone and two commands: install + the app, then install + tests, the latter verbatim in .ci/run."""
    section = README.split("## Two commands", 1)[1].split("\n## ", 1)[0]
    clone, install_app, install_test = re.findall(r"```bash\n(.*?)\n```", section, flags=re.S)
    assert clone.startswith("git clone ") and clone.endswith("&& cd diagnose")
    assert install_app.endswith("&& streamlit run app.py") and 'pip install -e ".[all]"' in install_app
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert install_test in ci and install_test.endswith("python -m pytest")


def _first_cells(markdown: str, header: str) -> list[str]:
    """The first cell of every row of the table whose header line is ``header`` (exactly once in ``markdown``)."""
    assert markdown.count(header + "\n") == 1, f"no table (or two) headed {header!r}"
    rows = markdown.split(header + "\n", 1)[1].split("\n\n", 1)[0].splitlines()[1:]  # [1:]: the |---| line
    return [row.split("|")[1].strip() for row in rows]


def test_the_readme_command_table_lists_exactly_the_commands():
    # a row for every command (checked one by one above) and none for a command the parser does not have
    section = README.split("## Command line", 1)[1].split("\n## ", 1)[0]
    listed = _first_cells(section, "| command | what it answers |")
    assert sorted(listed) == sorted(f"`diagnose {name}`" for name in _subcommands())


def test_the_page_tables_list_exactly_the_pages_of_the_app():
    """The README's table of app pages and docs/app.md's list the pages of diagnose/ui/navigation.py, by their
    titles and in the sidebar's order: a page added, renamed or dropped fails here until both tables follow."""
    from diagnose.ui.navigation import PAGES as APP_PAGES

    titles = [title for _, title, _ in APP_PAGES.values()]
    assert _first_cells(README, "| page | what it answers |") == titles, (
        "README.md's table of the app's pages"
    )
    app_page = (ROOT / "docs" / "app.md").read_text(encoding="utf-8")
    assert _first_cells(app_page, "| page | what it shows |") == titles, "docs/app.md's table of pages"
