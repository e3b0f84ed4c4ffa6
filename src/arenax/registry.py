"""Registries of environment families, level generators, mutators and held-out suites.

Example::

    env = arenax.make("maze", height=13, width=13)
    gen = arenax.make_generator("maze/dr", height=13, width=13, n_walls=60)
    level = gen(key)

Your own families, generators, mutators and suites join the same registries with
:func:`register`, :func:`register_generator`, :func:`register_mutator` and
:func:`register_suite`; a registered family of one agent with vector observations is also a
training game (``TrainConfig(game=name)``, see ``docs/extending.md``).
"""

from __future__ import annotations

import functools
import importlib
import inspect
import os
import sys
from collections.abc import Callable
from typing import Any

from arenax.envs.classic import FAMILIES as CLASSIC
from arenax.envs.core import Environment
from arenax.envs.maze import suites as maze_suites
from arenax.envs.maze.editor import MazeEditor
from arenax.envs.maze.env import MazeEnv
from arenax.envs.maze.generators import empty_level, sample_dr_level
from arenax.envs.maze.mutators import mutate_level
from arenax.envs.maze.suites import HeldoutMaze
from arenax.envs.tag import GridTagEnv, TagEnv
from arenax.envs.tag import arenas as grid_arenas
from arenax.envs.tag import discs as tag_arenas

ENVS: dict[str, type[Environment]] = {
    "maze": MazeEnv,
    "maze-editor": MazeEditor,
    "tag": TagEnv,
    "grid-tag": GridTagEnv,
    **{name: cls for name, (cls, _) in CLASSIC.items()},
}

GENERATORS: dict[str, Callable[..., Any]] = {
    "maze/dr": sample_dr_level,
    "maze/dr-uniform": functools.partial(sample_dr_level, uniform_count=True),
    "maze/empty": empty_level,
    "maze/four-rooms": maze_suites.four_rooms,
    "maze/crossing": maze_suites.crossing,
    "maze/perfect": maze_suites.perfect_maze,
    # grid Tag arenas (obstacles and starts)
    **{
        f"grid-tag/{g}": getattr(grid_arenas, g)
        for g in ("empty", "dr", "rooms", "pillars", "corridors")
    },
    # continuous Tag arenas (disc obstacles, starts, skills); pass env=TagEnv(...)
    **{
        f"tag/{g}": getattr(tag_arenas, g)
        for g in ("empty", "dr", "pillars", "ring", "corridors", "rooms")
    },
    # classic control: every constant of the physics uniform in its documented range
    **{f"{name}/dr": cls().sample_physics for name, (cls, _) in CLASSIC.items()},
}

MUTATORS: dict[str, Callable[..., Any]] = {
    "maze/edits": mutate_level,
    "grid-tag/edits": grid_arenas.mutate,
    "tag/edits": tag_arenas.mutate,
    # classic control: each edit moves one constant by up to ±10% of its range
    **{f"{name}/physics": cls().mutate for name, (cls, _) in CLASSIC.items()},
}


BUILTIN_ENVS = frozenset(ENVS)

#: suites of registered (non-maze) families: name -> {level name: level}
USER_SUITES: dict[str, dict[str, Any]] = {}


def _check_new(kind: str, name: str, known: dict[str, Any], overwrite: bool) -> None:
    if not isinstance(name, str) or not name:
        raise ValueError(f"{kind} name {name!r}: must be a non-empty string")
    if name in known and not overwrite:
        raise ValueError(f"{kind} {name!r} is already registered (pass overwrite=True)")


def register(name: str, family: Callable[..., Environment], overwrite: bool = False) -> None:
    """Register an environment family: ``arenax.make(name, **params)`` then builds
    ``family(**params)`` (a class such as a frozen dataclass of static parameters, or any
    factory). A family of one team of one agent with vector observations is also a training
    game: ``TrainConfig(game=name, algorithm="dr" | "plr" | "accel")`` trains an MLP agent
    (``agent`` options) over its levels (``generate``; PLR/ACCEL also ``mutate`` and, for
    ``new_levels="empty"``, ``default_level``), and ``arenax eval`` plays its
    ``heldout_levels()`` if it has them. Built-in families cannot be replaced."""
    _check_new("environment", name, ENVS, overwrite)
    if name in BUILTIN_ENVS:
        raise ValueError(f"environment {name!r} is built in; choose another name")
    if not callable(family):
        raise TypeError(f"register({name!r}, ...): family must be a class or a factory")
    ENVS[name] = family


def register_generator(name: str, fn: Callable[..., Any], overwrite: bool = False) -> None:
    """Register a level generator ``fn(key, **params) -> level`` (``make_generator``)."""
    _check_new("generator", name, GENERATORS, overwrite)
    GENERATORS[name] = fn


def register_mutator(name: str, fn: Callable[..., Any], overwrite: bool = False) -> None:
    """Register a level mutator ``fn(key, level, n_edits, **params) -> level``."""
    _check_new("mutator", name, MUTATORS, overwrite)
    MUTATORS[name] = fn


def register_suite(name: str, levels: Any, overwrite: bool = False) -> None:
    """Register a held-out suite: for mazes a sequence of :class:`HeldoutMaze` objects or
    maze names (then ``arenax eval RUN --suite name`` evaluates on it; maze level files can
    also be passed to ``--suite`` directly by path); for other families a dict ``{level
    name: level}`` (``arenax.list_suites()``; pass it to ``arenax.interop`` exports)."""
    if isinstance(levels, dict):
        _check_new("suite", name, USER_SUITES, overwrite)
        if not levels:
            raise ValueError(f"suite {name!r}: no levels")
        USER_SUITES[name] = dict(levels)
        return
    items = list(levels)
    if not all(isinstance(m, HeldoutMaze | str) for m in items):
        raise TypeError(
            f"suite {name!r}: a maze suite is a sequence of HeldoutMaze or maze names; "
            "other families register a dict {level name: level}"
        )
    maze_suites.register_suite(name, items, overwrite)


def suite_levels(name: str) -> dict[str, Any]:
    """The levels of a registered non-maze suite ``{level name: level}``."""
    if name not in USER_SUITES:
        raise _unknown("suite", name, USER_SUITES)
    return USER_SUITES[name]


def _unknown(kind: str, name: str, known: dict[str, Any]) -> ValueError:
    return ValueError(f"unknown {kind} {name!r}; available: {', '.join(sorted(known))}")


def make(name: str, **params: Any) -> Environment:
    """Build the environment family ``name`` with static ``params``."""
    if name not in ENVS:
        raise _unknown("environment", name, ENVS)
    cls = ENVS[name]
    fields = set(inspect.signature(cls).parameters)
    bad = sorted(set(params) - fields)
    if bad:
        raise ValueError(
            f"{name}: unknown parameter(s) {', '.join(bad)}; allowed: {', '.join(sorted(fields))}"
        )
    return cls(**params)


def make_generator(name: str, **params: Any) -> Callable[[Any], Any]:
    """A ``key -> level`` function from generator ``name`` with its parameters bound."""
    if name not in GENERATORS:
        raise _unknown("generator", name, GENERATORS)
    fn = GENERATORS[name]
    try:
        inspect.signature(fn).bind_partial(None, **params)
    except TypeError as e:
        raise ValueError(f"generator {name}: {e}") from None
    return functools.partial(fn, **params)


def make_mutator(name: str, **params: Any) -> Callable[..., Any]:
    """A ``(key, level, n_edits) -> level`` function from mutator ``name``."""
    if name not in MUTATORS:
        raise _unknown("mutator", name, MUTATORS)
    return functools.partial(MUTATORS[name], **params)


PLUGINS_VARIABLE = "ARENAX_PLUGINS"


def load_plugins(spec: str | None = None) -> list[str]:
    """Import the modules named in ``spec`` (default: the ``ARENAX_PLUGINS`` environment
    variable; comma-separated, e.g. ``examples.corridor``), which register their families,
    generators, mutators and suites as they are imported. The current folder is searched
    too. Raises ``ImportError`` naming the module that failed."""
    spec = os.environ.get(PLUGINS_VARIABLE, "") if spec is None else spec
    names = [m.strip() for m in spec.split(",") if m.strip()]
    if names and os.getcwd() not in sys.path:
        sys.path.append(os.getcwd())
    for name in names:
        try:
            importlib.import_module(name)
        except Exception as e:
            raise ImportError(f"{PLUGINS_VARIABLE}: importing {name!r} failed: {type(e).__name__}: {e}") from None  # fmt: skip
    return names


def user_games() -> list[str]:
    """Families registered with :func:`register` (candidate training games)."""
    return sorted(set(ENVS) - BUILTIN_ENVS)


def list_envs() -> list[str]:
    """Registered environment families."""
    return sorted(ENVS)


def list_generators() -> list[str]:
    """Registered level generators."""
    return sorted(GENERATORS)


def list_mutators() -> list[str]:
    """Registered level mutators."""
    return sorted(MUTATORS)


def list_suites() -> dict[str, tuple[str, ...]]:
    """Held-out suites and the levels in each (mazes; ``<family>/heldout`` for classic
    control, whose levels ``make(family).heldout_levels()`` returns)."""
    classic = {f"{n}/heldout": tuple(cls().heldout_levels()) for n, (cls, _) in CLASSIC.items()}
    user = {n: tuple(levels) for n, levels in USER_SUITES.items()}
    return {**maze_suites.SUITES, **classic, **user}
