"""Acrobot as a level family: the level is the two links' physics.

Gymnasium's `Acrobot-v1` (Sutton and Barto's book dynamics) is the default level: two
links hanging from a fixed joint, a torque of −1, 0 or +1 (actions 0, 1, 2) on the joint
between them, one RK4 step of `dt = 0.2` s per action. State
`s = (θ1, θ2, θ̇1, θ̇2)`, observed as `(cos θ1, sin θ1, cos θ2, sin θ2, θ̇1, θ̇2)`;
angles wrapped to `[-π, π]`, velocities bounded by `4π` and `9π`. Start: each
component `U(-0.1, 0.1)`. Terminated when `-cos θ1 - cos(θ1 + θ2) > 1` (Gymnasium's
goal line, in units of unit links whatever the level's lengths); reward −1 per step and 0
at termination; truncated at `max_steps` (500).
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
from arenax.options import NON_NEGATIVE, POSITIVE, POSITIVE_REAL, check_on_init
from arenax.struct import pytree_dataclass

MAX_VEL_1, MAX_VEL_2 = 4 * math.pi, 9 * math.pi


@pytree_dataclass
class AcrobotLevel:
    """Physics of one acrobot (`() float32` each; see `AcrobotEnv.CONSTANTS`)."""

    link_mass_1: jax.Array
    link_mass_2: jax.Array
    link_length_1: jax.Array
    link_com_pos_1: jax.Array
    link_com_pos_2: jax.Array
    link_moi: jax.Array
    gravity: jax.Array


def wrap(x: jax.Array, lo: float, hi: float) -> jax.Array:
    """Gymnasium's `wrap`: subtract (add) `hi − lo` until `x ≤ hi` (`x ≥ lo`)."""
    d = hi - lo
    x = jnp.where(x > hi, x - d * jnp.ceil((x - hi) / d), x)
    return jnp.where(x < lo, x + d * jnp.ceil((lo - x) / d), x)


@dataclasses.dataclass(frozen=True)
class AcrobotEnv(ClassicEnv):
    """Acrobot with static simulation settings; the physics is the level."""

    max_steps: Annotated[int, POSITIVE] = 500
    """Truncation (Acrobot-v1: 500)."""
    dt: Annotated[float, POSITIVE_REAL] = 0.2
    """Seconds per action (one RK4 step)."""
    book_or_nips: Literal["book", "nips"] = "book"
    """The book's dynamics (Gymnasium's default) or the NIPS paper's (no θ̇1² term)."""
    torque_noise: Annotated[float, NON_NEGATIVE] = 0.0
    """Uniform noise `U(-n, n)` added to the torque."""

    level_cls = AcrobotLevel
    CONSTANTS: ClassVar[dict[str, Constant]] = {
        "link_mass_1": Constant(1.0, 0.5, 2.0, "kg"),
        "link_mass_2": Constant(1.0, 0.5, 2.0, "kg"),
        "link_length_1": Constant(1.0, 0.75, 1.25, "m"),
        "link_com_pos_1": Constant(0.5, 0.3, 0.7, "centre of mass of link 1, m"),
        "link_com_pos_2": Constant(0.5, 0.3, 0.7, "centre of mass of link 2, m"),
        "link_moi": Constant(1.0, 0.5, 1.5, "moment of inertia of each link"),
        "gravity": Constant(9.8, 9.8, 9.8, "m/s² (not randomised by DR)", ">= 0"),
    }
    HELDOUT: ClassVar[dict[str, dict[str, float]]] = {
        "heavy-lower": {"link_mass_2": 3.0},
        "light-lower": {"link_mass_2": 0.3},
        "long-upper": {"link_length_1": 1.5},
        "stiff": {"link_moi": 2.0},
        "low-gravity": {"gravity": 4.0},
    }
    obs_dim = 6

    def __post_init__(self) -> None:
        check_on_init(self, "acrobot")

    def obs_high(self) -> tuple[float, ...]:
        return (1.0, 1.0, 1.0, 1.0, MAX_VEL_1, MAX_VEL_2)

    def action_space(self, team: str = "agent") -> spaces.Discrete:
        return spaces.Discrete(3)

    def start(self, key: jax.Array, level: AcrobotLevel) -> jax.Array:
        return jax.random.uniform(key, (4,), jnp.float32, -0.1, 0.1)

    def _dsdt(self, lv: AcrobotLevel, s: tuple, torque: jax.Array) -> tuple:
        """`ds/dt` of `s = (θ1, θ2, θ̇1, θ̇2)`, each `()`: kept as four scalars (not a
        stacked vector) so that under `vmap` every quantity is one contiguous `(N,)` array."""
        m1, m2, l1, lc1, lc2 = (
            lv.link_mass_1,
            lv.link_mass_2,
            lv.link_length_1,
            lv.link_com_pos_1,
            lv.link_com_pos_2,
        )
        i1 = i2 = lv.link_moi
        g = lv.gravity
        th1, th2, dth1, dth2 = s
        sin2, cos2 = trig.sincos(th2)
        d1 = m1 * lc1**2 + m2 * (l1**2 + lc2**2 + 2 * l1 * lc2 * cos2) + i1 + i2
        d2 = m2 * (lc2**2 + l1 * lc2 * cos2) + i2
        phi2 = m2 * lc2 * g * trig.cos(th1 + th2 - math.pi / 2.0)
        phi1 = (
            -m2 * l1 * lc2 * dth2**2 * sin2
            - 2 * m2 * l1 * lc2 * dth2 * dth1 * sin2
            + (m1 * lc1 + m2 * l1) * g * trig.cos(th1 - math.pi / 2)
            + phi2
        )
        num = torque + d2 / d1 * phi1 - phi2
        if self.book_or_nips == "book":
            num = num - m2 * l1 * lc2 * dth1**2 * sin2
        ddth2 = num / (m2 * lc2**2 + i2 - d2**2 / d1)
        ddth1 = -(d2 * ddth2 + phi1) / d1
        return dth1, dth2, ddth1, ddth2

    def dynamics(
        self, key: jax.Array, level: AcrobotLevel, s: jax.Array, action: jax.Array
    ) -> tuple[jax.Array, jax.Array, jax.Array]:
        torque = action.astype(jnp.float32) - 1.0
        if self.torque_noise > 0:
            torque = torque + jax.random.uniform(
                key, (), jnp.float32, -self.torque_noise, self.torque_noise
            )
        h = self.dt

        def along(k: tuple, by: float) -> tuple:  # s + by * k
            return tuple(x + by * d for x, d in zip(s4, k, strict=True))

        s4 = (s[0], s[1], s[2], s[3])
        k1 = self._dsdt(level, s4, torque)
        k2 = self._dsdt(level, along(k1, h / 2), torque)
        k3 = self._dsdt(level, along(k2, h / 2), torque)
        k4 = self._dsdt(level, along(k3, h), torque)
        ns = [
            x + h / 6.0 * (a + 2 * b + 2 * c + d)
            for x, a, b, c, d in zip(s4, k1, k2, k3, k4, strict=True)
        ]
        ns = jnp.stack(
            [
                wrap(ns[0], -math.pi, math.pi),
                wrap(ns[1], -math.pi, math.pi),
                jnp.clip(ns[2], -MAX_VEL_1, MAX_VEL_1),
                jnp.clip(ns[3], -MAX_VEL_2, MAX_VEL_2),
            ]
        )
        terminated = -trig.cos(ns[0]) - trig.cos(ns[1] + ns[0]) > 1.0
        return ns, jnp.where(terminated, 0.0, -1.0), terminated

    def obs(self, s: jax.Array) -> jax.Array:
        (sin1, cos1), (sin2, cos2) = trig.sincos(s[0]), trig.sincos(s[1])
        return jnp.stack([cos1, sin1, cos2, sin2, s[2], s[3]])


check_constants(AcrobotEnv)
