"""Minimal immutable pytree dataclasses (no NN-library dependency).

`@pytree_dataclass` turns a class into a frozen dataclass registered with JAX; every
field is a pytree child unless declared with `static_field()`, which makes it part of
the tree structure (hashable, compile-time) instead.
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

import jax

T = TypeVar("T")


def static_field(**kwargs: Any) -> Any:
    """A dataclass field that is part of the pytree *structure*, not a leaf."""
    return dataclasses.field(metadata={"static": True}, **kwargs)


def pytree_dataclass(cls: type[T]) -> type[T]:
    """Frozen dataclass registered as a JAX pytree, with a `replace(**changes)` method."""
    cls = dataclasses.dataclass(frozen=True)(cls)
    fields = dataclasses.fields(cls)
    data = [f.name for f in fields if not f.metadata.get("static", False)]
    meta = [f.name for f in fields if f.metadata.get("static", False)]
    jax.tree_util.register_dataclass(cls, data_fields=data, meta_fields=meta)

    def replace(self: T, **changes: Any) -> T:
        return dataclasses.replace(self, **changes)

    cls.replace = replace  # type: ignore[attr-defined]
    return cls
