"""The family records of classic control: one per game, the physics as the level."""

from __future__ import annotations

import functools
from typing import Any

import jax

from arenax.envs.classic import presets as P
from arenax.envs.classic.acrobot import AcrobotEnv
from arenax.envs.classic.cartpole import CartPoleEnv
from arenax.envs.classic.mountain_car import ContinuousMountainCarEnv, MountainCarEnv
from arenax.envs.classic.pendulum import PendulumEnv
from arenax.envs.classic.physics import ClassicEnv
from arenax.envs.family import Family, Heldout, Preset
from arenax.options import build, options_of


def near_default(env: ClassicEnv) -> Any:
    """ACCEL's new levels: the default level (Gymnasium's physics) with one random edit
    (the default level alone is a single level: a buffer of unique levels would never
    fill)."""
    return lambda key: env.mutate(key, env.default_level(), n_edits=1)


def heldout(env: ClassicEnv, spec: str) -> dict[str, Heldout]:
    """The family's held-out physics (all of them, or the names in `spec`)."""
    levels = env.heldout_levels()
    names = [n.strip() for n in spec.split(",") if n.strip()]
    if not names or names == ["heldout"] or (len(names) == 1 and names[0].endswith("/heldout")):
        names = list(levels)
    unknown = [n for n in names if n not in levels]
    if unknown:
        raise ValueError(f"unknown level {unknown[0]!r}; allowed: {', '.join(levels)}")
    return {
        n: Heldout(n, functools.partial(_fixed, levels[n]), in_range=env.in_range(levels[n]))
        for n in names
    }


def _fixed(level: Any, key: jax.Array) -> Any:
    return level


def family(
    name: str, cls: type[ClassicEnv], gym_id: str, presets: dict[str, Preset] | None = None
) -> Family:
    """The record of one classic-control game (Gymnasium's `gym_id` by default) and its
    `presets`."""
    options = options_of(
        cls,
        f"{cls.__name__.removesuffix('Env')}Config",
        f"{gym_id} with its physics as the level.",
        name,
    )
    return Family(
        name=name,
        make=functools.partial(build, cls),
        options=options,
        summary=f"{gym_id} (Gymnasium's physics by default; DR over its constants)",
        generators={f"{name}/dr": cls().sample_physics},
        mutators={f"{name}/physics": cls().mutate},
        empty=near_default,
        mutator=lambda env, n: functools.partial(env.mutate, n_edits=n),
        heldout=heldout,
        suites=lambda: {f"{name}/heldout": tuple(cls().heldout_levels())},
        named=lambda env, generator: env.sample_physics,
        presets=presets or {},
    )


CARTPOLE = family("cartpole", CartPoleEnv, "CartPole-v1", P.CARTPOLE_PRESETS)
ACROBOT = family("acrobot", AcrobotEnv, "Acrobot-v1")
MOUNTAIN_CAR = family("mountain-car", MountainCarEnv, "MountainCar-v0")
MOUNTAIN_CAR_CONTINUOUS = family(
    "mountain-car-continuous", ContinuousMountainCarEnv, "MountainCarContinuous-v0"
)
PENDULUM = family("pendulum", PendulumEnv, "Pendulum-v1", P.PENDULUM_PRESETS)
CLASSIC = (CARTPOLE, ACROBOT, MOUNTAIN_CAR, MOUNTAIN_CAR_CONTINUOUS, PENDULUM)

#: the games' options (a run's `env`)
CartPoleConfig = CARTPOLE.options
AcrobotConfig = ACROBOT.options
MountainCarConfig = MOUNTAIN_CAR.options
ContinuousMountainCarConfig = MOUNTAIN_CAR_CONTINUOUS.options
PendulumConfig = PENDULUM.options
