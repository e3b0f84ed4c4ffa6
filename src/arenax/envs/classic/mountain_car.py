"""MountainCar and its continuous form as level families: the level is the hill's physics.

Gymnasium's `MountainCar-v0` and `MountainCarContinuous-v0` are the default levels: a
car on the curve `sin(3x)` pushed by its engine against `gravity`; positions clipped
to `[-1.2, 0.6]` (at the left end a car moving left stops), velocities to `±0.07`.
State `s = (x, v)`, observed as is. Start `x ~ U(-0.6, -0.4)`, `v = 0`. Terminated
when `x ≥ goal_position` and `v ≥ goal_velocity`.

* Discrete (`mountain-car`): actions 0 left, 1 coast, 2 right;
  `v ← v + (a − 1)·force − gravity·cos(3x)`; reward −1 per step; truncated at 200.
* Continuous (`mountain-car-continuous`): action `(1,)` float32;
  `v ← v + clip(a, −1, 1)·power − gravity·cos(3x)`; reward `100·[terminated] − 0.1 a²`
  (of the action as given, before the clip, as Gymnasium); truncated at 999.
"""

from __future__ import annotations

import dataclasses
from typing import Annotated, ClassVar

import jax
import jax.numpy as jnp

from arenax import trig
from arenax.envs import spaces
from arenax.envs.classic.physics import ClassicEnv, Constant, check_constants
from arenax.options import POSITIVE, POSITIVE_REAL, check_on_init
from arenax.struct import pytree_dataclass

MIN_POSITION, MAX_POSITION, MAX_SPEED = -1.2, 0.6, 0.07


@pytree_dataclass
class MountainCarLevel:
    """Physics of one hill (`() float32` each; see `MountainCarEnv.CONSTANTS`)."""

    force: jax.Array
    gravity: jax.Array
    goal_position: jax.Array
    goal_velocity: jax.Array


@pytree_dataclass
class ContinuousMountainCarLevel:
    """Physics of one hill (`() float32` each; see
    `ContinuousMountainCarEnv.CONSTANTS`)."""

    power: jax.Array
    gravity: jax.Array
    goal_position: jax.Array
    goal_velocity: jax.Array


def _move(x: jax.Array, v: jax.Array, push: jax.Array, gravity: jax.Array) -> jax.Array:
    """Gymnasium's update of `(x, v)` given the engine's `push` (velocity change)."""
    v = jnp.clip(v + push - gravity * trig.cos(3 * x), -MAX_SPEED, MAX_SPEED)
    x = jnp.clip(x + v, MIN_POSITION, MAX_POSITION)
    v = jnp.where((x == MIN_POSITION) & (v < 0), 0.0, v)
    return jnp.stack([x, v])


class _MountainCar(ClassicEnv):
    obs_dim = 2

    def start(self, key: jax.Array, level: object) -> jax.Array:
        x = jax.random.uniform(key, (), jnp.float32, -0.6, -0.4)
        return jnp.stack([x, jnp.float32(0.0)])

    def obs(self, s: jax.Array) -> jax.Array:
        return s

    def obs_low(self) -> tuple[float, ...]:
        return (MIN_POSITION, -MAX_SPEED)

    def obs_high(self) -> tuple[float, ...]:
        return (MAX_POSITION, MAX_SPEED)


@dataclasses.dataclass(frozen=True)
class MountainCarEnv(_MountainCar):
    """MountainCar (discrete actions); the physics is the level."""

    max_steps: Annotated[int, POSITIVE] = 200
    """Truncation (MountainCar-v0: 200)."""

    level_cls = MountainCarLevel
    CONSTANTS: ClassVar[dict[str, Constant]] = {
        "force": Constant(0.001, 0.0008, 0.0015, "engine's velocity change per step", ">= 0"),
        "gravity": Constant(0.0025, 0.002, 0.003, "gravity's velocity change scale", ">= 0"),
        "goal_position": Constant(0.5, 0.3, 0.55, "flag position (x ≤ 0.6)", "any"),
        "goal_velocity": Constant(
            0.0, 0.0, 0.0, "minimum speed at the flag (not randomised)", ">= 0"
        ),
    }
    HELDOUT: ClassVar[dict[str, dict[str, float]]] = {
        "weak-engine": {"force": 0.0007},
        "strong-engine": {"force": 0.002},
        "steep": {"gravity": 0.0032},
        "flat": {"gravity": 0.0015},
        "high-goal": {"goal_position": 0.58},
        "fast-finish": {"goal_velocity": 0.02},
    }

    def __post_init__(self) -> None:
        check_on_init(self, "mountain-car")

    def action_space(self, team: str = "agent") -> spaces.Discrete:
        return spaces.Discrete(3)

    def dynamics(
        self, key: jax.Array, level: MountainCarLevel, s: jax.Array, action: jax.Array
    ) -> tuple[jax.Array, jax.Array, jax.Array]:
        push = (action.astype(jnp.float32) - 1.0) * level.force
        s = _move(s[0], s[1], push, level.gravity)
        terminated = (s[0] >= level.goal_position) & (s[1] >= level.goal_velocity)
        return s, jnp.float32(-1.0), terminated


@dataclasses.dataclass(frozen=True)
class ContinuousMountainCarEnv(_MountainCar):
    """MountainCar with a continuous engine; the physics is the level."""

    max_steps: Annotated[int, POSITIVE] = 999
    """Truncation (MountainCarContinuous-v0: 999)."""
    goal_reward: Annotated[float, POSITIVE_REAL] = 100.0
    """Reward on reaching the goal."""

    level_cls = ContinuousMountainCarLevel
    CONSTANTS: ClassVar[dict[str, Constant]] = {
        "power": Constant(0.0015, 0.001, 0.002, "engine's velocity change per unit action", ">= 0"),
        "gravity": Constant(0.0025, 0.002, 0.003, "gravity's velocity change scale", ">= 0"),
        "goal_position": Constant(0.45, 0.3, 0.55, "flag position (x ≤ 0.6)", "any"),
        "goal_velocity": Constant(
            0.0, 0.0, 0.0, "minimum speed at the flag (not randomised)", ">= 0"
        ),
    }
    HELDOUT: ClassVar[dict[str, dict[str, float]]] = {
        "weak-engine": {"power": 0.0008},
        "steep": {"gravity": 0.0032},
        "flat": {"gravity": 0.0015},
        "high-goal": {"goal_position": 0.58},
    }

    def __post_init__(self) -> None:
        check_on_init(self, "mountain-car-continuous")

    def action_space(self, team: str = "agent") -> spaces.Box:
        return spaces.Box(-1.0, 1.0, (1,), jnp.float32)

    def dynamics(
        self, key: jax.Array, level: ContinuousMountainCarLevel, s: jax.Array, action: jax.Array
    ) -> tuple[jax.Array, jax.Array, jax.Array]:
        a = jnp.asarray(action, jnp.float32).reshape(())
        s = _move(s[0], s[1], jnp.clip(a, -1.0, 1.0) * level.power, level.gravity)
        terminated = (s[0] >= level.goal_position) & (s[1] >= level.goal_velocity)
        reward = jnp.where(terminated, self.goal_reward, 0.0) - 0.1 * a**2
        return s, reward, terminated


check_constants(MountainCarEnv)
check_constants(ContinuousMountainCarEnv)
