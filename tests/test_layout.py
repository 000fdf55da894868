"""The floor plan (docs/architecture.md): folders that say what they hold, arrows only downward.

Nodes are the package's folders (``ui/pages`` counts as ``ui``) and its root modules; an edge is any import, at the top
of a module or inside a function, from one node to another, except the imports under ``if TYPE_CHECKING:`` (names for
annotations only: they run never, as import-linter's ``exclude_type_checking_imports`` treats them). The plan holds when the graph has no circle, the root keeps
at most 8 modules (the doors and the vocabulary), and the longest chain of imports (the floors) is at most 13.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "diagnose"
DOORS_AND_VOCABULARY = {"__init__", "__main__", "api", "docs", "data", "errors", "checks", "defaults"}


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def _node(module: str) -> str:
    parts = module.split(".")
    if len(parts) == 1:
        return "diagnose"
    return parts[1]


def _runtime_nodes(tree: ast.AST) -> list[ast.AST]:
    """Every node of ``tree`` but those under ``if TYPE_CHECKING:``."""
    out: list[ast.AST] = []
    todo = [tree]
    while todo:
        n = todo.pop()
        if isinstance(n, ast.If) and "TYPE_CHECKING" in ast.unparse(n.test):
            todo.extend(n.orelse)
            continue
        out.append(n)
        todo.extend(ast.iter_child_nodes(n))
    return out


def _graph() -> dict[str, dict[str, list[str]]]:
    """node -> {imported node: [the imports that make the edge]}."""
    modules = _modules()
    edges: dict[str, dict[str, list[str]]] = {}
    for name, path in modules.items():
        for n in _runtime_nodes(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(n, ast.Import):
                targets = [a.name for a in n.names]
            elif isinstance(n, ast.ImportFrom) and n.module and not n.level:
                targets = [
                    n.module,
                    *(f"{n.module}.{a.name}" for a in n.names if f"{n.module}.{a.name}" in modules),
                ]
            else:
                continue
            for t in targets:
                if t.split(".")[0] != "diagnose" or t == "diagnose":
                    continue
                a, b = _node(name), _node(t)
                if a != b:
                    edges.setdefault(a, {}).setdefault(b, []).append(f"{name} -> {t}")
    return edges


def test_no_circle_between_folders() -> None:
    edges = _graph()
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(v: str) -> None:
        state[v] = 1
        stack.append(v)
        for w in edges.get(v, {}):
            if state.get(w) == 1:
                cycle = stack[stack.index(w) :] + [w]
                why = [edges[a][b][0] for a, b in zip(cycle, cycle[1:], strict=False)]
                raise AssertionError(f"a circle between folders: {' -> '.join(cycle)}; {why}")
            if w not in state:
                visit(w)
        stack.pop()
        state[v] = 2

    for v in sorted(edges):
        if v not in state:
            visit(v)


def test_the_root_holds_the_doors_and_the_vocabulary() -> None:
    root = {p.stem for p in PACKAGE.glob("*.py")}
    assert root <= DOORS_AND_VOCABULARY, f"a loose module at the root: {sorted(root - DOORS_AND_VOCABULARY)}"
    assert len(root) <= 8


def test_at_most_thirteen_floors() -> None:
    edges = _graph()

    @cache
    def floor(v: str) -> int:
        return 1 + max((floor(w) for w in edges.get(v, {})), default=0)

    floors = {v: floor(v) for v in {*edges, *(w for e in edges.values() for w in e)}}
    # 13: the doors (__main__, docs) over the faces (cli, ui), judging, analysis, whatif/report, failures, search,
    # the engines (embed, stats), io and metrics, cache and checks, data, runtime, errors and defaults
    assert max(floors.values()) <= 13, sorted(floors.items(), key=lambda kv: -kv[1])


def test_the_library_never_imports_a_face() -> None:
    edges = _graph()
    faces = {"cli", "ui"}
    wrong = {
        (a, b): why[0]
        for a, out in edges.items()
        for b, why in out.items()
        if b in faces and a not in {*faces, "docs", "__main__"}
    }
    assert not wrong, wrong
