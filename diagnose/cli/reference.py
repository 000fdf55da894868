"""The CLI's option tables for ``docs/cli.md``, generated from :func:`~diagnose.cli.parser.build_parser` (sqlite-utils
keeps its CLI reference true the same way): an option added, renamed or re-helped in the parser changes these tables,
and ``tests/test_docs.py`` fails until ``python -m diagnose.docs`` has rewritten the page.

An argument group that several commands share (data, embeddings, live retrievers) is one table,
:func:`shared_options_markdown`; an option of such a group whose flags, value, default or help differ between the
commands (``--run``: required or not, one run or several) is listed with each command instead. Each command's own
options are :func:`options_markdown`.
"""

from __future__ import annotations

import argparse

from diagnose.cli.parser import build_parser, subcommand_parsers

__all__ = ["command_names", "options_markdown", "shared_options_markdown"]

_HEADER = ["| option | value | default | meaning |", "|---|---|---|---|"]


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    return subcommand_parsers(build_parser())


def command_names() -> list[str]:
    """The subcommands of ``diagnose``, in the parser's order."""
    return list(_subparsers())


def _options(parser: argparse.ArgumentParser) -> list[tuple[str, argparse.Action]]:
    """Every option of ``parser`` but ``--help``, with the title of its argument group ("" for the command's own
    options, which argparse keeps outside any named group)."""
    return [
        ("" if group in (parser._optionals, parser._positionals) else group.title or "", action)
        for group in parser._action_groups
        for action in group._group_actions
        if action.option_strings and "--help" not in action.option_strings
    ]


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _row(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    """One table row: the flags, the value it takes (its choices, its metavar, or nothing for a switch; "repeatable"
    for an appending option), its default (empty when there is none) and its help."""
    flags = ", ".join(f"`{o}`" for o in action.option_strings)
    if action.choices:
        value = "`" + "\\|".join(map(str, action.choices)) + "`"
    elif action.nargs == 0:
        value = "(switch)"
    else:
        value = f"`{_cell(str(action.metavar or action.dest.upper()))}`"
    if isinstance(action, argparse._AppendAction):
        value += " (repeatable)"
    default = action.default
    shown = "" if default is None or default is False or default == [] else f"`{default}`"
    meaning = parser._get_formatter()._expand_help(action) if action.help else "—"
    return f"| {flags} | {value} | {shown} | {_cell(meaning)} |"


def _shared_rows() -> dict[str, dict[str, tuple[str, list[str]]]]:
    """For every argument group that two or more commands have: option key -> (its row, the commands), for the
    options whose row is the same in every command holding the group."""
    rows: dict[str, dict[str, dict[str, set[str]]]] = {}
    for name, parser in _subparsers().items():
        for title, action in _options(parser):
            row = _row(parser, action)
            by_row = rows.setdefault(title, {}).setdefault(action.option_strings[0], {})
            by_row.setdefault(row, set()).add(name)
    commands_of = {
        title: {n for by_row in options.values() for names in by_row.values() for n in names}
        for title, options in rows.items()
    }
    shared: dict[str, dict[str, tuple[str, list[str]]]] = {}
    for title, options in rows.items():
        if not title or len(commands_of[title]) < 2:
            continue
        shared[title] = {
            key: (next(iter(by_row)), sorted(commands_of[title]))
            for key, by_row in options.items()
            if len(by_row) == 1 and next(iter(by_row.values())) == commands_of[title]
        }
    return shared


def _is_shared(
    title: str, action: argparse.Action, shared: dict[str, dict[str, tuple[str, list[str]]]]
) -> bool:
    return action.option_strings[0] in shared.get(title, {})


def options_markdown(command: str) -> str:
    """The option table of ``diagnose COMMAND``: its options that no shared group table holds, in the parser's
    order, and a line naming the shared groups it also takes."""
    parser = _subparsers()[command]
    shared = _shared_rows()
    options = _options(parser)
    lines = _HEADER + [_row(parser, a) for title, a in options if not _is_shared(title, a, shared)]
    groups = list(dict.fromkeys(t for t, a in options if _is_shared(t, a, shared)))
    if groups:
        names = ", ".join(f"[{g}](#{_anchor(g)})" for g in groups)
        lines += ["", f"Also the shared options: {names}."]
    return "\n".join(lines)


def _anchor(title: str) -> str:
    """GitHub's anchor of the heading ``### {title} options``."""
    return f"{title} options".lower().replace(" ", "-")


def shared_options_markdown() -> str:
    """One section per argument group that several commands share: a heading ``### TITLE options``, the commands
    that take it, and its table."""
    parts = []
    for title, options in _shared_rows().items():
        commands = next(iter(options.values()))[1] if options else []
        order = [c for c in command_names() if c in commands]
        taken = ", ".join(f"`{c}`" for c in order)
        rows = [row for row, _ in options.values()]
        parts.append("\n".join([f"### {title} options", "", f"Taken by {taken}.", "", *_HEADER, *rows]))
    return "\n\n".join(parts)
