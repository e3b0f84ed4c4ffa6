"""The import contract's hole closed: `lint-imports` forbids the application layers to import a
family's package or a concrete curriculum's module, but a name imported through a package
facade (`from arenax.curricula import PLRConfig`) reaches the same module unseen. This test
resolves every name those layers import from an arenax package to the module that defines
it, and fails on a forbidden one."""

from __future__ import annotations

import ast
import importlib
import tomllib
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"
PYPROJECT = SRC.parent / "pyproject.toml"


def _contract() -> tuple[list[str], list[str]]:
    contracts = tomllib.loads(PYPROJECT.read_text())["tool"]["importlinter"]["contracts"]
    (forbidden,) = [c for c in contracts if c["type"] == "forbidden"]
    return forbidden["source_modules"], forbidden["forbidden_modules"]


def _modules(package: str) -> list[Path]:
    base = SRC / Path(*package.split("."))
    return sorted(base.rglob("*.py")) if base.is_dir() else [base.with_suffix(".py")]


def _is_under(module: str, roots: list[str]) -> bool:
    return any(module == r or module.startswith(r + ".") for r in roots)


def violations(sources: list[str], forbidden: list[str]) -> list[str]:
    """`file:line name -> defining module` for each name imported through a facade."""
    found = []
    for package in sources:
        for path in _modules(package):
            tree = ast.parse(path.read_text(), str(path))
            for node in ast.walk(tree):
                if not isinstance(node, ast.ImportFrom) or not node.module or node.level:
                    continue
                if not node.module.startswith("arenax") or _is_under(node.module, forbidden):
                    continue  # (a direct import of a forbidden module: lint-imports' case)
                facade = importlib.import_module(node.module)
                for alias in node.names:
                    value = getattr(facade, alias.name, None)
                    defined = getattr(value, "__module__", None) or ""
                    if _is_under(defined, forbidden):
                        rel = path.relative_to(SRC)
                        found.append(f"{rel}:{node.lineno} {alias.name} -> {defined}")
    return found


def test_no_application_module_imports_a_family_or_curriculum_through_a_facade() -> None:
    sources, forbidden = _contract()
    assert violations(sources, forbidden) == []


def test_the_check_sees_a_name_imported_through_a_facade(tmp_path, monkeypatch) -> None:
    """The check fails on exactly the import the contract once kept."""
    import arenax

    pkg = tmp_path / "arenax_probe"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from arenax.curricula import PLRConfig, TeamConfig\n")
    monkeypatch.setattr("test_import_facades.SRC", tmp_path)
    assert arenax  # (the real package stays importable)
    found = violations(["arenax_probe"], ["arenax.curricula.plr"])
    assert found == ["arenax_probe/__init__.py:1 PLRConfig -> arenax.curricula.plr"]
