"""Compiled programs kept for the life of the process, keyed by what they are built from.

A run's chunks of cycles are one compiled program, a pure function of its curriculum (built
from the run's options), the mesh and the longest chunk (`--chunk`). `train` called again with options
that build the same program (in a notebook, a sweep over seeds or budgets, a resume, a test
suite) reuses it instead of tracing, lowering and compiling it again (JAX's persistent cache
saves only the compile).

The key (`program_key`) is exact or absent. It holds the options that shape the program
(every option but the outputs, logging, evaluation, seed and budget) with their types, and
the curriculum's `contents`: the classes it is made of and the plain values they hold, so a
game wrapped differently, a curriculum built by other code, or a value derived from the
budget (a linear learning-rate schedule's length, `Learner.total_updates`) makes another
key. A config holding anything that is not plain data (a callable, an array, an object of a
plugin's) gets no key, so its programs are always built anew. A curriculum keeps what it
derives from the budget (`Setup.update_rounds`) in its fields, where the key sees it.
"""

from __future__ import annotations

import dataclasses
import enum
from collections import OrderedDict
from collections.abc import Callable, Hashable
from pathlib import PurePath
from typing import Any

import jax
from jax import monitoring

from arenax.training.config import TrainConfig
from arenax.training.saved import RESUMABLE_FIELDS

#: options that never enter a compiled program: those a resumed run may change (outputs,
#: logging, evaluation, the launch, the device count and the chunk: the mesh and the longest
#: chunk are part of the chunk program's key; the budget: what a curriculum derives from it
#: is in its `contents`) and the seed (it enters through the state, an argument)
RUN_ONLY_FIELDS = RESUMABLE_FIELDS | {"seed"}

#: programs kept at most (least recently used first out)
MAX_PROGRAMS = 32

_PLAIN = (bool, int, float, str, type(None))


class _NotPlain(Exception):
    pass


def contents(obj: Any, strict: bool = False) -> Hashable:
    """The classes `obj` is made of and the plain values they hold, as nested tuples: each
    dataclass, tuple, list, set or dict with its type and its parts' contents, anything else
    by its type (`strict`: raise `_NotPlain` instead). A part that contains itself is cut."""
    path: set[int] = set()  # the parts being walked (a cycle ends at one of them)

    def walk(v: Any) -> Hashable:
        if isinstance(v, _PLAIN):
            return (type(v).__name__, v)
        if isinstance(v, PurePath):
            return ("path", str(v))
        name = f"{type(v).__module__}.{type(v).__qualname__}"
        if isinstance(v, enum.Enum):
            return (name, v.name)
        if id(v) in path:
            return "cycle"
        path.add(id(v))
        try:
            if dataclasses.is_dataclass(v) and not isinstance(v, type):
                fields = dataclasses.fields(v)
                return (name, tuple((f.name, walk(getattr(v, f.name))) for f in fields if f.init))
            if isinstance(v, (tuple, list)):
                return (name, tuple(walk(x) for x in v))
            if isinstance(v, (set, frozenset)):
                return (name, tuple(sorted((walk(x) for x in v), key=repr)))
            if isinstance(v, dict):
                return (name, tuple((walk(k), walk(x)) for k, x in v.items()))
        finally:
            path.discard(id(v))
        if strict:
            raise _NotPlain(name)
        return name

    return walk(obj)


def program_key(cfg: TrainConfig, curriculum: Any) -> Hashable | None:
    """What the run's compiled programs are built from (but the mesh and the chunk's
    length): the options that shape them and the curriculum's `contents`; `None` when an
    option is not plain data."""
    try:
        fields = tuple(
            (f.name, contents(_shaping(cfg, f.name), strict=True))
            for f in dataclasses.fields(cfg)
            if f.init and f.name not in RUN_ONLY_FIELDS
        )
    except _NotPlain:
        return None
    numerics = (jax.config.jax_enable_x64, str(jax.config.jax_default_matmul_precision))
    return (fields, contents(curriculum), numerics)


def _shaping(cfg: TrainConfig, field: str) -> Any:
    """What field `field` of `cfg` contributes to its programs: its value, but for a sweep
    its options only (their values are the programs' arguments; how many there are is in
    the chunk's key, its count of runs)."""
    if field == "sweep":
        return tuple(str(entry).partition("=")[0] for entry in cfg.sweep)
    return getattr(cfg, field)


_programs: OrderedDict[Hashable, Any] = OrderedDict()


def cached(key: Hashable | None, build: Callable[[], Any]) -> tuple[Any, bool]:
    """`(program, reused)`: the program kept under `key`, or `build()` (kept unless `key`
    is `None`)."""
    if key is None:
        return build(), False
    if key in _programs:
        _programs.move_to_end(key)
        monitoring.record_event("/arenax/programs/reused")
        return _programs[key], True
    program = build()
    _programs[key] = program
    while len(_programs) > MAX_PROGRAMS:
        _programs.popitem(last=False)
    return program, False


def clear() -> None:
    """Forget every kept program."""
    _programs.clear()
