"""The registry of environment families (one `Family` record
each), their named level generators and mutators, and held-out suites.

Example:

    env = arenax.make("maze", height=13, width=13)
    gen = arenax.make_generator("maze/dr", height=13, width=13, n_walls=60)
    level = gen(key)

Built-in families register exactly as your own do, with `register`: a record, or a
name and an environment class (whose `generate`, `mutate`, `default_level`,
`heldout_levels` and `in_range` methods, where present, fill in the record). A
registered family trains with every curriculum its record supports.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import inspect
import os
import re
import sys
from collections.abc import Callable, Mapping
from typing import Any

from arenax.envs.classic import presets as classic_presets
from arenax.envs.classic.family import CLASSIC
from arenax.envs.core import Environment
from arenax.envs.family import Family, Preset, heldout_from_levels
from arenax.envs.maze.family import MAZE, MAZE_EDITOR
from arenax.envs.tag.family import GRID_TAG, TAG
from arenax.options import build, options_of

#: every registered family, by name
FAMILIES: dict[str, Family] = {}
#: named level generators `fn(key, **params) -> level` and mutators
#: `fn(key, level, n_edits, **params) -> level` of every family
GENERATORS: dict[str, Callable[..., Any]] = {}
MUTATORS: dict[str, Callable[..., Any]] = {}
#: held-out suites registered as `{level name: level}` (`register_suite`)
USER_SUITES: dict[str, dict[str, Any]] = {}


def _check_new(kind: str, name: str, known: dict[str, Any], overwrite: bool) -> None:
    if not isinstance(name, str) or not name:
        raise ValueError(f"{kind} name {name!r}: must be a non-empty string")
    if name in known and not overwrite:
        raise ValueError(f"{kind} {name!r} is already registered (pass overwrite=True)")


def family_of(
    name: str, cls: Callable[..., Environment], presets: Mapping[str, Preset] | None = None
) -> Family:
    """A record for an environment class (or factory) `cls`: its options are its fields
    (a dataclass), and its methods fill in the optional parts — `mutate(key, level,
    n_edits)` (ACCEL), `default_level()` (ACCEL's new levels: the default with one edit),
    `heldout_levels()` and `in_range(level)` (evaluation). Its `presets`, or by default
    `generic_presets(name)`."""
    if not callable(cls):
        raise TypeError(f"register({name!r}, ...): family must be a class or a factory")
    if isinstance(cls, type) and dataclasses.is_dataclass(cls):
        options = options_of(cls, f"{cls.__name__}Config", f"The {name} family.", name)
        make: Callable[[Any], Environment] = functools.partial(build, cls)
    else:  # a factory without options
        namespace = {"KIND": name, "__doc__": f"The {name} family (no options)."}
        options = dataclasses.make_dataclass(f"{name}Config", [], frozen=True, namespace=namespace)
        make = lambda opts: cls()  # noqa: E731

    kind = cls if isinstance(cls, type) else type(cls())  # a factory: look at what it builds
    if not issubclass(kind, Environment):
        what = "class" if isinstance(cls, type) else "factory's result"
        raise TypeError(
            f"register({name!r}, ...): the {what} {kind.__name__} is not an arenax "
            "environment (subclass arenax.envs.core.Environment)"
        )

    def has(method: str) -> bool:
        return callable(getattr(kind, method, None))

    mutator = empty = heldout = None
    if has("mutate"):
        mutator = lambda env, n: functools.partial(env.mutate, n_edits=n)  # noqa: E731
        if has("default_level"):
            empty = lambda env: lambda key: env.mutate(key, env.default_level(), n_edits=1)  # noqa: E731
    if has("heldout_levels"):

        def heldout(env: Environment, spec: str) -> dict[str, Any]:  # type: ignore[misc]
            levels = env.heldout_levels()
            names = [n.strip() for n in spec.split(",") if n.strip()] or list(levels)
            if names == ["heldout"]:
                names = list(levels)
            unknown = [n for n in names if n not in levels]
            if unknown:
                raise ValueError(f"unknown level {unknown[0]!r}; allowed: {', '.join(levels)}")
            out = heldout_from_levels({n: levels[n] for n in names})
            in_range = getattr(env, "in_range", None)
            if in_range is None:
                return out
            return {n: dataclasses.replace(h, in_range=in_range(levels[n])) for n, h in out.items()}

    doc = (inspect.getdoc(kind) or "").split("\n")[0]
    presets = generic_presets(name) if presets is None else dict(presets)
    return Family(
        name, make, options, doc, empty=empty, mutator=mutator, heldout=heldout, presets=presets
    )


def generic_presets(name: str) -> dict[str, Preset]:
    """`<name>-dr` and `<name>-plr`, what a family registered from its class gets unless it
    declares its own: classic control's recipe (one team `"agent"`, an MLP and PPO; DR with
    episodes continued across cycles, or PLR⊥), for vector observations."""
    summary = f"the {name} family (registered from its class): an MLP agent and PPO, "
    return {
        f"{name}-dr": classic_presets.dr(summary + "domain randomisation."),
        f"{name}-plr": classic_presets.plr(summary + "robust PLR (PLR⊥)."),
    }


def register(
    family: Family | str,
    cls: Callable[..., Environment] | None = None,
    overwrite: bool = False,
    presets: Mapping[str, Preset] | None = None,
) -> Family:
    """Register an environment family: a `Family` record, or a name and an environment
    class with its `presets` (see `family_of`). `arenax.make(name, **options)` then builds
    it, `arenax train <preset>` and `TrainConfig(env=<its options>)` train on it and
    `arenax eval` evaluates it. Built-in families cannot be replaced, and a preset name
    belongs to one family. Returns the record."""
    if isinstance(family, str):
        if cls is None:
            raise TypeError(f"register({family!r}): pass the environment class too")
        family = family_of(family, cls, presets)
    elif cls is not None or presets is not None:
        raise TypeError("register(record): a record carries its own environment and presets")
    if not isinstance(family.name, str) or not re.fullmatch(
        r"[A-Za-z0-9][A-Za-z0-9_.-]*", family.name
    ):
        raise ValueError(
            f"environment name {family.name!r}: letters, digits, '_', '.' and '-' only, "
            "starting with a letter or digit (it names run folders and presets)"
        )
    _check_new("environment", family.name, FAMILIES, overwrite)
    if family.name in BUILTIN and FAMILIES.get(family.name) is not family:
        raise ValueError(f"environment {family.name!r} is built in; choose another name")
    for kind, names, known in (
        ("generator", family.generators, GENERATORS),
        ("mutator", family.mutators, MUTATORS),
    ):
        for n in names:
            _check_new(kind, n, known, overwrite)
    for n in family.presets:
        owner = next((f.name for f in FAMILIES.values() if n in f.presets), family.name)
        if owner != family.name:
            raise ValueError(f"preset {n!r} belongs to family {owner!r}; choose another name")
    FAMILIES[family.name] = family
    GENERATORS.update(family.generators)
    MUTATORS.update(family.mutators)
    return family


def register_generator(name: str, fn: Callable[..., Any], overwrite: bool = False) -> None:
    """Register a level generator `fn(key, **params) -> level` (`make_generator`)."""
    _check_new("generator", name, GENERATORS, overwrite)
    GENERATORS[name] = fn


def register_mutator(name: str, fn: Callable[..., Any], overwrite: bool = False) -> None:
    """Register a level mutator `fn(key, level, n_edits, **params) -> level`."""
    _check_new("mutator", name, MUTATORS, overwrite)
    MUTATORS[name] = fn


def register_suite(name: str, levels: Any, overwrite: bool = False) -> None:
    """Register a held-out suite: a sequence of a family's own levels, which that family
    files (its record's `add_suite`; for mazes `HeldoutMaze` objects or maze names: then
    `arenax eval RUN --suite name` evaluates on it, and maze level files can also be passed
    to `--suite` directly by path); for other families a dict `{level name: level}`
    (`arenax.list_suites()`; pass it to `arenax.interop` exports)."""
    if isinstance(levels, dict):
        _check_new("suite", name, USER_SUITES, overwrite)
        if not levels:
            raise ValueError(f"suite {name!r}: no levels")
        USER_SUITES[name] = dict(levels)
        return
    items = list(levels)
    for f in FAMILIES.values():
        if f.add_suite is not None and f.add_suite(name, items, overwrite):
            return
    kinds = ", ".join(f.name for f in FAMILIES.values() if f.add_suite is not None)
    raise TypeError(
        f"suite {name!r}: a sequence of levels must be of a family that takes them ({kinds}: "
        "a maze suite is a sequence of HeldoutMaze or maze names); other families register "
        "a dict {level name: level}"
    )


def suite_levels(name: str) -> dict[str, Any]:
    """The levels of a registered non-maze suite `{level name: level}`."""
    if name not in USER_SUITES:
        raise _unknown("suite", name, USER_SUITES)
    return USER_SUITES[name]


def _unknown(kind: str, name: str, known: dict[str, Any]) -> ValueError:
    return ValueError(f"unknown {kind} {name!r}; available: {', '.join(sorted(known))}")


def family(name: str) -> Family:
    """The record of family `name` (a one-line error naming the known ones)."""
    if name not in FAMILIES:
        raise _unknown("environment", name, FAMILIES)
    return FAMILIES[name]


def family_of_options(options: Any) -> Family:
    """The record whose options `options` are (a run's `env`)."""
    kind = getattr(type(options), "KIND", "")
    if kind in FAMILIES and isinstance(options, FAMILIES[kind].options or ()):
        return FAMILIES[kind]
    for f in FAMILIES.values():
        if f.options is not None and isinstance(options, f.options):
            return f
    if isinstance(options, str):
        raise ValueError(
            f"{options!r}: not a registered family with options ({', '.join(FAMILIES)})"
        )
    raise ValueError(f"{type(options).__name__}: not the options of a registered family")


def make(name: str, **params: Any) -> Environment:
    """Build the environment family `name` with static `params` (its options)."""
    rec = family(name)
    if rec.options is None:
        return rec.make(None)
    fields = {f.name for f in dataclasses.fields(rec.options) if f.init}
    bad = sorted(set(params) - fields)
    if bad:
        raise ValueError(
            f"{name}: unknown parameter(s) {', '.join(bad)}; allowed: {', '.join(sorted(fields))}"
        )
    return rec.make(rec.options(**params))


def make_generator(name: str, **params: Any) -> Callable[[Any], Any]:
    """A `key -> level` function from generator `name` with its parameters bound."""
    if name not in GENERATORS:
        raise _unknown("generator", name, GENERATORS)
    fn = GENERATORS[name]
    try:
        inspect.signature(fn).bind_partial(None, **params)
    except TypeError as e:
        raise ValueError(f"generator {name}: {e}") from None
    return functools.partial(fn, **params)


def make_mutator(name: str, **params: Any) -> Callable[..., Any]:
    """A `(key, level, n_edits) -> level` function from mutator `name`."""
    if name not in MUTATORS:
        raise _unknown("mutator", name, MUTATORS)
    return functools.partial(MUTATORS[name], **params)


PLUGINS_VARIABLE = "ARENAX_PLUGINS"


def load_plugins(spec: str | None = None) -> list[str]:
    """Import the modules named in `spec` (default: the `ARENAX_PLUGINS` environment
    variable; comma-separated, e.g. `examples.corridor`), which register their families,
    generators, mutators and suites as they are imported. The current folder is searched
    too. Raises `ImportError` naming the module that failed."""
    spec = os.environ.get(PLUGINS_VARIABLE, "") if spec is None else spec
    names = [m.strip() for m in spec.split(",") if m.strip()]
    if names and os.getcwd() not in sys.path:
        sys.path.append(os.getcwd())
    for name in names:
        try:
            importlib.import_module(name)
        except Exception as e:
            why = f"{type(e).__name__}: {e}"
            raise ImportError(f"{PLUGINS_VARIABLE}: importing {name!r} failed: {why}") from None
    return names


def user_families() -> list[str]:
    """Families registered after the built-ins (plugins)."""
    return sorted(set(FAMILIES) - BUILTIN)


def list_envs() -> list[str]:
    """Registered environment families."""
    return sorted(FAMILIES)


def list_generators() -> list[str]:
    """Registered level generators."""
    return sorted(GENERATORS)


def list_mutators() -> list[str]:
    """Registered level mutators."""
    return sorted(MUTATORS)


def family_suites() -> dict[str, dict[str, tuple[str, ...]]]:
    """Held-out suites of each family: `{family: {suite: level names}}` (a suite's name
    is looked up within its family, so two families may both have `arenas`)."""
    return {n: dict(f.suites()) for n, f in FAMILIES.items() if f.suites is not None}


def list_suites() -> dict[str, tuple[str, ...]]:
    """Held-out suites and the levels in each, of every family (and registered dicts). A
    suite name that more than one family uses is listed as `family/suite` for each."""
    per_family = family_suites()
    count: dict[str, int] = {}
    for suites in per_family.values():
        for name in suites:
            count[name] = count.get(name, 0) + 1
    out = {
        (name if count[name] == 1 else f"{family}/{name}"): levels
        for family, suites in per_family.items()
        for name, levels in suites.items()
    }
    return {**out, **{n: tuple(levels) for n, levels in USER_SUITES.items()}}


BUILTIN: frozenset[str] = frozenset()
for _record in (MAZE, MAZE_EDITOR, TAG, GRID_TAG, *CLASSIC):
    register(_record)
BUILTIN = frozenset(FAMILIES)
