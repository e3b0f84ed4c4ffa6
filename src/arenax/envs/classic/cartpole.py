"""CartPole as a level family: the level is the cart-pole's physics.

Gymnasium's `CartPole-v1` (Barto, Sutton and Anderson's cart-pole) is the default level:
a push of `±force_mag` on a cart of mass `masscart` carrying a pole of mass
`masspole` and half-length `length`, under `gravity`; Euler steps of `tau` seconds
(static). State `s = (x, ẋ, θ, θ̇)`, observed as is (4 numbers). Start: every component
`U(-0.05, 0.05)`. Reward +1 per step, including the terminating one (or
`sutton_barto_reward`: 0, and −1 at termination). Terminated when `|x| > 2.4` or
`|θ| > 12°`; truncated at `max_steps` (500). Actions: 0 push left, 1 push right.
(Gymnasium's rewards for steps taken after termination do not arise: arenax resets.)
"""

from __future__ import annotations

import dataclasses
import math
from typing import Annotated, ClassVar, Literal

import jax
import jax.numpy as jnp

from arenax import trig
from arenax.envs import spaces
from arenax.envs.classic.physics import ClassicEnv, Constant, check_constants
from arenax.options import POSITIVE, POSITIVE_REAL, check_on_init
from arenax.struct import pytree_dataclass


@pytree_dataclass
class CartPoleLevel:
    """Physics of one cart-pole (`() float32` each; see `CartPoleEnv.CONSTANTS`)."""

    gravity: jax.Array
    masscart: jax.Array
    masspole: jax.Array
    length: jax.Array
    force_mag: jax.Array


@dataclasses.dataclass(frozen=True)
class CartPoleEnv(ClassicEnv):
    """CartPole with static simulation settings; the physics is the level."""

    max_steps: Annotated[int, POSITIVE] = 500
    """Truncation (CartPole-v1: 500)."""
    tau: Annotated[float, POSITIVE_REAL] = 0.02
    """Seconds per step."""
    integrator: Literal["euler", "semi-implicit"] = "euler"
    """Gymnasium's `kinematics_integrator`."""
    x_threshold: Annotated[float, POSITIVE_REAL] = 2.4
    """Terminated when the cart leaves `[-x_threshold, x_threshold]`."""
    theta_threshold_deg: Annotated[float, POSITIVE_REAL] = 12.0
    """Terminated when the pole leans more than this (degrees)."""
    sutton_barto_reward: bool = False
    """0 per step and −1 at termination instead of +1 per step."""

    level_cls = CartPoleLevel
    CONSTANTS: ClassVar[dict[str, Constant]] = {
        "gravity": Constant(9.8, 9.8, 9.8, "m/s² (not randomised by DR)", ">= 0"),
        "masscart": Constant(1.0, 0.5, 2.0, "kg"),
        "masspole": Constant(0.1, 0.05, 0.5, "kg"),
        "length": Constant(0.5, 0.25, 1.0, "half the pole's length, m"),
        "force_mag": Constant(10.0, 5.0, 15.0, "push, N", ">= 0"),
    }
    HELDOUT: ClassVar[dict[str, dict[str, float]]] = {
        "long-pole": {"length": 1.5},
        "short-pole": {"length": 0.1},
        "heavy-pole": {"masspole": 1.0},
        "heavy-cart": {"masscart": 3.0},
        "weak-push": {"force_mag": 3.0},
        "moon": {"gravity": 1.62},
        "jupiter": {"gravity": 24.8},
    }
    obs_dim = 4

    def __post_init__(self) -> None:
        check_on_init(self, "cartpole")

    def obs_high(self) -> tuple[float, ...]:
        # Gymnasium's: twice the termination bounds, so the ending observation is inside
        theta = self.theta_threshold_deg * 2 * math.pi / 360
        return (2 * self.x_threshold, math.inf, 2 * theta, math.inf)

    def action_space(self, team: str = "agent") -> spaces.Discrete:
        return spaces.Discrete(2)

    def start(self, key: jax.Array, level: CartPoleLevel) -> jax.Array:
        return jax.random.uniform(key, (4,), jnp.float32, -0.05, 0.05)

    def dynamics(
        self, key: jax.Array, level: CartPoleLevel, s: jax.Array, action: jax.Array
    ) -> tuple[jax.Array, jax.Array, jax.Array]:
        x, x_dot, theta, theta_dot = s[0], s[1], s[2], s[3]
        force = jnp.where(action == 1, level.force_mag, -level.force_mag)
        sin, cos = trig.sincos(theta)
        total_mass = level.masspole + level.masscart
        polemass_length = level.masspole * level.length
        temp = (force + polemass_length * theta_dot**2 * sin) / total_mass
        theta_acc = (level.gravity * sin - cos * temp) / (
            level.length * (4.0 / 3.0 - level.masspole * cos**2 / total_mass)
        )
        x_acc = temp - polemass_length * theta_acc * cos / total_mass
        if self.integrator == "euler":
            x, x_dot = x + self.tau * x_dot, x_dot + self.tau * x_acc
            theta, theta_dot = theta + self.tau * theta_dot, theta_dot + self.tau * theta_acc
        else:
            x_dot = x_dot + self.tau * x_acc
            x = x + self.tau * x_dot
            theta_dot = theta_dot + self.tau * theta_acc
            theta = theta + self.tau * theta_dot
        limit = self.theta_threshold_deg * 2 * math.pi / 360
        terminated = (x < -self.x_threshold) | (x > self.x_threshold)
        terminated |= (theta < -limit) | (theta > limit)
        reward = jnp.where(terminated, -1.0, 0.0) if self.sutton_barto_reward else 1.0
        return jnp.stack([x, x_dot, theta, theta_dot]), reward, terminated

    def obs(self, s: jax.Array) -> jax.Array:
        return s

    def success(self, terminated: jax.Array, truncated: jax.Array) -> jax.Array:
        """Solved: the pole stayed up until the time limit."""
        return truncated & ~terminated


check_constants(CartPoleEnv)
