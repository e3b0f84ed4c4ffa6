"""Packages whose names are imported on first use (PEP 562): the root package,
`arenax.training` and `arenax.eval`, so that a command line that only prints help,
refuses an option or reads files imports no more than it needs."""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable, Mapping


def lazy_names(
    package: str, table: Mapping[str, str], namespace: dict
) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """`(__getattr__, __dir__)` for `package`: a name of `table` (name -> module) is imported
    on first use and kept in `namespace` (the package's globals); any other name is a
    submodule not imported yet, or an `AttributeError`."""

    def getattr_(name: str) -> object:
        module = table.get(name)
        if module is None:
            if name.startswith("_") or importlib.util.find_spec(f"{package}.{name}") is None:
                raise AttributeError(f"module {package!r} has no attribute {name!r}")
            return importlib.import_module(f"{package}.{name}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def dir_() -> list[str]:
        return sorted({*namespace, *table})

    return getattr_, dir_
