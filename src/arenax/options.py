"""Options: frozen dataclasses whose fields carry their own checks.

Every option is defined once, in the dataclass of the thing it configures (the environment,
the network, the learner, the curriculum), with its docstring (tyro's `--help` text) and
its allowed values:

* a `Literal[...]` type lists the allowed values;
* `Annotated[T, rule]` attaches a rule (`Positive`, `AtLeast`,
  `In`, `PositiveInts`) to one field;
* a `problems()` method yields the rules that tie several fields of the owner together.

`check` walks a (nested) options dataclass and raises `ConfigError` for the
first broken rule, named by its path: `runner.ppo.gamma=2.0: must be in [0.0, 1.0]`.
Options objects are plain values (building one never fails, so a config can be assembled
and checked as a whole, with full paths); the runtime objects built from them (environments)
check themselves on construction with the same rules.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import typing
from collections.abc import Iterator
from typing import Any, Literal, TypeVar

T = TypeVar("T")


class ConfigError(ValueError):
    """A configuration value that is not allowed (one-line message)."""


@dataclasses.dataclass(frozen=True)
class Problem:
    """One broken rule: `field` (dotted path inside the owner), its `value`, the `rule`."""

    field: str
    value: Any
    rule: str

    def message(self, prefix: str = "") -> str:
        return f"{prefix}{self.field.lstrip('/')}={self.shown}: {self.rule}"

    @property
    def shown(self) -> str:
        """The value as the message shows it: its `repr`, a whole options object by its
        class name only, and anything longer than 80 characters cut (one-line errors)."""
        if dataclasses.is_dataclass(self.value) and not isinstance(self.value, type):
            return f"{type(self.value).__name__}(…)"
        text = repr(self.value)
        return text if len(text) <= 80 else text[:77] + "…"


# ------------------------------------------------------------------ rules
def _is_int(v: Any) -> bool:
    return (isinstance(v, int) and not isinstance(v, bool)) or type(v).__name__.startswith("int")


def _is_number(v: Any) -> bool:
    return (isinstance(v, (int, float)) and not isinstance(v, bool)) or _is_int(v)


class Rule:
    """A rule on one value: `rule(value)` returns `None` when it holds, else what is
    allowed (`"must be a positive integer"`)."""

    def __call__(self, v: Any) -> str | None:
        raise NotImplementedError


#: the largest integer option: sizes and counts live in int32 arrays
INT_MAX = 2**31 - 1


@dataclasses.dataclass(frozen=True)
class Positive(Rule):
    """An integer in `[1, 2**31 - 1]`."""

    def __call__(self, v: Any) -> str | None:
        if _is_int(v) and 1 <= v <= INT_MAX:
            return None
        return "must be a positive integer" + (" below 2**31" if _is_int(v) and v > 0 else "")


@dataclasses.dataclass(frozen=True)
class AtLeast(Rule):
    """An integer in `[lo, 2**31 - 1]`."""

    lo: int

    def __call__(self, v: Any) -> str | None:
        if _is_int(v) and self.lo <= v <= INT_MAX:
            return None
        return f"must be an integer >= {self.lo}" + (
            " and below 2**31" if _is_int(v) and v > 0 else ""
        )


@dataclasses.dataclass(frozen=True)
class IntIn(Rule):
    """An integer in `[lo, hi]`."""

    lo: int
    hi: int

    def __call__(self, v: Any) -> str | None:
        ok = _is_int(v) and self.lo <= v <= self.hi
        return None if ok else f"must be an integer in [{self.lo}, {self.hi}]"


@dataclasses.dataclass(frozen=True)
class OrNone(Rule):
    """`None`, or a value the inner rule accepts."""

    rule: Rule

    def __call__(self, v: Any) -> str | None:
        return None if v is None else self.rule(v)


#: the value of a resumed run's option that keeps what the run saved (`arenax resume`)
SAVED = "saved"


@dataclasses.dataclass(frozen=True)
class OrSaved(Rule):
    """`SAVED` ("keep the saved run's value"), or a value the inner rule accepts."""

    rule: Rule

    def __call__(self, v: Any) -> str | None:
        return None if v == SAVED else self.rule(v)


#: a value the program chooses when it starts (`devices="auto"`)
AUTO = "auto"


@dataclasses.dataclass(frozen=True)
class OrAuto(Rule):
    """`AUTO` ("chosen when the run starts"), or a value the inner rule accepts."""

    rule: Rule

    def __call__(self, v: Any) -> str | None:
        return None if v == AUTO else self.rule(v)


@dataclasses.dataclass(frozen=True)
class In(Rule):
    """A finite number in `[lo, hi]` (`(lo, hi]` with `lo_open`)."""

    lo: float
    hi: float
    lo_open: bool = False

    def __call__(self, v: Any) -> str | None:
        ok = (
            _is_number(v)
            and math.isfinite(v)
            and self.lo <= v <= self.hi
            and not (self.lo_open and v == self.lo)
        )
        return None if ok else f"must be in {'(' if self.lo_open else '['}{self.lo}, {self.hi}]"


@dataclasses.dataclass(frozen=True)
class PositiveInts(Rule):
    """A non-empty tuple of positive integers (layer sizes)."""

    def __call__(self, v: Any) -> str | None:
        ok = (
            isinstance(v, (tuple, list))
            and len(v) > 0
            and all(_is_int(h) and 1 <= h <= INT_MAX for h in v)
        )
        return None if ok else "must be one or more positive integers"


@dataclasses.dataclass(frozen=True)
class Registered(Rule):
    """A name in a registry (`names()`: the names registered when the value is checked,
    plugins' included)."""

    names: typing.Callable[[], typing.Iterable[str]]

    def __call__(self, v: Any) -> str | None:
        allowed = list(self.names())
        return None if v in allowed else "allowed: " + ", ".join(allowed)


POSITIVE = Positive()
SEED = IntIn(0, 2**32 - 1)
UNIT = In(0.0, 1.0)  # probabilities, discounts, fractions
LEARNING_RATE = In(0.0, 1.0, lo_open=True)
NON_NEGATIVE = In(0.0, 1e9)
POSITIVE_REAL = In(0.0, 1e9, lo_open=True)


# ------------------------------------------------------------------ checking
@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls, include_extras=True)


def _field_problems(obj: Any) -> Iterator[Problem]:
    """Rules attached to single fields: `Literal` values and `Annotated` rules."""
    hints = _hints(type(obj))
    for f in dataclasses.fields(obj):
        if not f.init:
            continue
        v = getattr(obj, f.name)
        hint = hints.get(f.name)
        rules: tuple[Any, ...] = ()
        if typing.get_origin(hint) is typing.Annotated:
            hint, *extra = typing.get_args(hint)
            rules = tuple(extra)
        if typing.get_origin(hint) is Literal:
            allowed = typing.get_args(hint)
            if v not in allowed:
                yield Problem(f.name, v, "allowed: " + ", ".join(map(str, allowed)))
                continue
        for rule in rules:
            if isinstance(rule, Rule):
                msg = rule(v)
                if msg:
                    yield Problem(f.name, v, msg)
                    break


def _is_options(v: Any) -> bool:
    return dataclasses.is_dataclass(v) and not isinstance(v, type)


def problems(obj: Any) -> Iterator[Problem]:
    """Every broken rule of `obj` and of the options dataclasses nested in it, in field
    order, then `obj.problems()`. A nested field's rules are named by its path: the
    field's name, or the name `obj.option_prefix(field)` gives it (the command line's;
    `""`: its options are top-level ones; `"/name"`: named from the top, whatever
    holds it); a dict of options dataclasses names each by its key (`tagger.ppo.gamma`)."""
    yield from _field_problems(obj)
    name_of = getattr(obj, "option_prefix", lambda field: field)
    for f in dataclasses.fields(obj):
        v = getattr(obj, f.name)
        nested = [(name_of(f.name), v)] if _is_options(v) else []
        if isinstance(v, dict):
            nested = [(str(k), x) for k, x in v.items() if _is_options(x)]
        for name, x in nested:
            prefix = f"{name}." if name else ""
            for p in problems(x):
                absolute = p.field.startswith("/")
                yield dataclasses.replace(p, field=p.field if absolute else f"{prefix}{p.field}")
    own = getattr(type(obj), "problems", None)
    if own is not None:
        yield from own(obj)


def check(obj: Any, prefix: str = "") -> None:
    """Raise `ConfigError` for the first broken rule of `obj` (see `problems`)."""
    for p in problems(obj):
        raise ConfigError(p.message(prefix))


def check_on_init(obj: Any, owner: str) -> None:
    """For runtime objects that check themselves when built (environments): raise
    `ValueError("<owner>: <field>=<value> <rule>")` for the first broken rule."""
    for p in problems(obj):
        raise ValueError(f"{owner}: {p.field.lstrip('/')}={p.shown} {p.rule}")


def fields_of(obj: Any, cls: type | None = None) -> dict[str, Any]:
    """`{name: value}` of a dataclass's init fields (one level, not recursive); with
    `cls`, only the fields `cls` defines (`obj` combines several options classes)."""
    names = None if cls is None else {f.name for f in dataclasses.fields(cls)}
    return {
        f.name: getattr(obj, f.name)
        for f in dataclasses.fields(obj)
        if f.init and (names is None or f.name in names)
    }


def build(cls: type[T], options: Any, **extra: Any) -> T:
    """`cls` built from the fields of `options` (an options dataclass whose fields are a
    subset of `cls`'s) plus `extra`: e.g. a checked environment from its options."""
    return cls(**fields_of(options), **extra)


def options_of(cls: type[T], name: str, doc: str, kind: str = "") -> type[T]:
    """The options of a self-checking class `cls` (an environment) as a config dataclass.

    The result has `cls`'s fields, defaults, docstrings and rules (each defined once, on
    `cls`), and does not check itself when built: `check` does, naming each
    field's path. `build` turns it into `cls`. `kind` names it in a saved config
    (a family's name).
    """
    namespace = {
        "__post_init__": lambda self: None,
        "__doc__": doc,
        "__module__": cls.__module__,
        "KIND": kind,
    }
    return dataclasses.make_dataclass(name, [], bases=(cls,), frozen=True, namespace=namespace)
