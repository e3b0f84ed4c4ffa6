"""No two modules of arenax import each other, directly or around a circle, counting the
imports inside functions too (a circle of late imports still ties the modules: neither
can be read, moved or tested without the other). Before this test three were left:
`training/build.py` → `config.py` → `sweep.py` → `build.py`, `envs/evaluation.py` ↔
`envs/family.py` and `eval/pairs.py` ↔ `eval/plots.py`."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"


def _modules() -> dict[str, Path]:
    found = {}
    for path in SRC.rglob("*.py"):
        name = ".".join(path.relative_to(SRC).with_suffix("").parts)
        found[name.removesuffix(".__init__")] = path
    return found


def _imports(name: str, modules: dict[str, Path]) -> set[str]:
    """The arenax modules `name` imports anywhere in its file (a package's own
    `__init__` counted when a name is imported from it, not a submodule)."""
    out = set()
    for node in ast.walk(ast.parse(modules[name].read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                out.add(full if full in modules else node.module)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    # (a submodule reading its own package's __init__ is how Python imports it anyway)
    return {m for m in out if m in modules and m != name and not name.startswith(m + ".")}


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    groups: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return groups


def test_the_checker_finds_a_circle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _circles(graph) == [["a", "b", "c"]]


def test_no_import_circles() -> None:
    modules = _modules()
    graph = {m: _imports(m, modules) for m in modules}
    assert len(graph) > 100 and graph["arenax.training.program"]  # it read the package
    assert _circles(graph) == []
