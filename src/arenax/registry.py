"""Registries of environment families, level generators, mutators and held-out suites.

Example::

    env = arenax.make("maze", height=13, width=13)
    gen = arenax.make_generator("maze/dr", height=13, width=13, n_walls=60)
    level = gen(key)
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

from arenax.envs.classic import FAMILIES as CLASSIC
from arenax.envs.core import Environment
from arenax.envs.maze import suites as maze_suites
from arenax.envs.maze.editor import MazeEditor
from arenax.envs.maze.env import MazeEnv
from arenax.envs.maze.generators import empty_level, sample_dr_level
from arenax.envs.maze.mutators import mutate_level
from arenax.envs.tag import GridTagEnv, TagEnv

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
    # classic control: every constant of the physics uniform in its documented range
    **{f"{name}/dr": cls().sample_physics for name, (cls, _) in CLASSIC.items()},
}

MUTATORS: dict[str, Callable[..., Any]] = {
    "maze/edits": mutate_level,
    # classic control: each edit moves one constant by up to ±10% of its range
    **{f"{name}/physics": cls().mutate for name, (cls, _) in CLASSIC.items()},
}


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
    return {**maze_suites.SUITES, **classic}
