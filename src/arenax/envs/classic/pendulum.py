"""Pendulum as a level family: the level is the pendulum's physics.

Gymnasium's `Pendulum-v1` is the default level: a rod of mass `m` and length `l`
under gravity `g`, a torque `u ∈ [-2, 2]` (clipped) at its pivot, steps of `dt = 0.05`
s. State `s = (θ, θ̇)` (θ = 0 upright), observed as `(cos θ, sin θ, θ̇)`. Start
`θ ~ U(-π, π)`, `θ̇ ~ U(-1, 1)`. Reward `-(norm(θ)² + 0.1 θ̇² + 0.001 u²)` of the state
before the step; `θ̇ ← clip(θ̇ + (3g/(2l) sin θ + 3u/(m l²)) dt, ±8)`, `θ ← θ + θ̇ dt`.
Never terminates; truncated at `max_steps` (200). Action `(1,)` float32. (`solved`
in the metrics is always 0: the task has no goal state.)
"""

from __future__ import annotations

import dataclasses
import math
from typing import Annotated, ClassVar

import jax
import jax.numpy as jnp

from arenax import trig
from arenax.envs import spaces
from arenax.envs.classic.physics import ClassicEnv, Constant, check_constants
from arenax.options import POSITIVE, POSITIVE_REAL, check_on_init
from arenax.struct import pytree_dataclass


@pytree_dataclass
class PendulumLevel:
    """Physics of one pendulum (`() float32` each; see `PendulumEnv.CONSTANTS`)."""

    g: jax.Array
    m: jax.Array
    l: jax.Array  # noqa: E741 (Gymnasium's name)


def angle_normalize(x: jax.Array) -> jax.Array:
    """Angle in `[-π, π)` (Python's modulo: the result has the divisor's sign)."""
    return jnp.mod(x + math.pi, 2 * math.pi) - math.pi


@dataclasses.dataclass(frozen=True)
class PendulumEnv(ClassicEnv):
    """Pendulum with static simulation settings; the physics is the level."""

    max_steps: Annotated[int, POSITIVE] = 200
    """Truncation (Pendulum-v1: 200)."""
    dt: Annotated[float, POSITIVE_REAL] = 0.05
    """Seconds per step."""
    max_speed: Annotated[float, POSITIVE_REAL] = 8.0
    """Angular velocity bound, rad/s."""
    max_torque: Annotated[float, POSITIVE_REAL] = 2.0
    """Torque bound (the action space and its clip)."""

    level_cls = PendulumLevel
    CONSTANTS: ClassVar[dict[str, Constant]] = {
        "g": Constant(10.0, 5.0, 15.0, "gravity, m/s²", ">= 0"),
        "m": Constant(1.0, 0.5, 2.0, "mass, kg"),
        "l": Constant(1.0, 0.5, 1.5, "length, m"),
    }
    HELDOUT: ClassVar[dict[str, dict[str, float]]] = {
        "heavy": {"m": 3.0},
        "long": {"l": 2.0},
        "short": {"l": 0.3},
        "mars": {"g": 3.7},
        "jupiter": {"g": 24.8},
        "heavy-long": {"m": 2.0, "l": 1.5},
    }
    obs_dim = 3

    def __post_init__(self) -> None:
        check_on_init(self, "pendulum")

    def obs_high(self) -> tuple[float, ...]:
        return (1.0, 1.0, self.max_speed)

    def action_space(self, team: str = "agent") -> spaces.Box:
        return spaces.Box(-self.max_torque, self.max_torque, (1,), jnp.float32)

    def start(self, key: jax.Array, level: PendulumLevel) -> jax.Array:
        high = jnp.asarray([math.pi, 1.0], jnp.float32)
        return jax.random.uniform(key, (2,), jnp.float32, -high, high)

    def dynamics(
        self, key: jax.Array, level: PendulumLevel, s: jax.Array, action: jax.Array
    ) -> tuple[jax.Array, jax.Array, jax.Array]:
        th, thdot = s[0], s[1]
        u = jnp.clip(
            jnp.asarray(action, jnp.float32).reshape(()), -self.max_torque, self.max_torque
        )
        cost = angle_normalize(th) ** 2 + 0.1 * thdot**2 + 0.001 * u**2
        g, m, l = level.g, level.m, level.l  # noqa: E741
        new_thdot = thdot + (3 * g / (2 * l) * trig.sin(th) + 3.0 / (m * l**2) * u) * self.dt
        new_thdot = jnp.clip(new_thdot, -self.max_speed, self.max_speed)
        new_th = th + new_thdot * self.dt
        return jnp.stack([new_th, new_thdot]), -cost, jnp.bool_(False)

    def obs(self, s: jax.Array) -> jax.Array:
        sin, cos = trig.sincos(s[0])
        return jnp.stack([cos, sin, s[1]])


check_constants(PendulumEnv)
