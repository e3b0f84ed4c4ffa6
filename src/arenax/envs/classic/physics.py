"""What the classic-control families share: a level is a set of physical constants.

Every family declares its constants once, as `Constant` s (Gymnasium's value, the
range domain randomisation draws from, a docstring), and its held-out levels as changes
to the defaults. From that table come the level's default (exactly Gymnasium's
environment), the DR generator (each constant uniform in its range, independently), the
mutator (`n_edits` times: one constant moved by up to `±scale` of its range, clipped to
the range) and the named held-out levels.

A classic env's state is `ClassicState(s, time, level)`: the physical state vector
`s (n,) float32` as Gymnasium stores it, the step count, and the level (the physics the
episode runs on). Single-agent: one team `"agent"` with one agent, so observations are
`(1, obs_dim)`, actions `(1,)` (discrete) or `(1, 1)` (continuous), rewards `(1,)`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any, ClassVar, Generic, Literal, TypeVar

import jax
import jax.numpy as jnp
import numpy as np

from arenax.envs import spaces
from arenax.envs.core import Environment
from arenax.struct import pytree_dataclass

L = TypeVar("L")


@dataclasses.dataclass(frozen=True)
class Constant:
    """One physical constant of a level: Gymnasium's value and the DR range."""

    default: float
    low: float
    high: float
    doc: str = ""
    physical: Literal["> 0", ">= 0", "any"] = "> 0"
    """What physics allows (checked on levels from outside): masses, lengths and inertias
    positive, gravity and forces not negative; any finite value otherwise."""

    def __post_init__(self) -> None:
        if not self.low <= self.default <= self.high:
            raise ValueError(f"default {self.default} outside [{self.low}, {self.high}]")


@pytree_dataclass
class ClassicState(Generic[L]):
    """Per-env state.

    Attributes:
        s: `(n,) float32` the physical state (Gymnasium's `env.state`).
        time: `() int32` steps taken in this episode.
        level: the physics of this episode.
    """

    s: jax.Array
    time: jax.Array
    level: L


def level_of(cls: type[L], values: Mapping[str, float]) -> L:
    """A level of `cls` with `float32` scalar constants."""
    return cls(**{k: jnp.float32(v) for k, v in values.items()})


def level_values(level: Any) -> dict[str, float]:
    """`{constant: python float}` of one (unbatched) level."""
    return {f.name: float(getattr(level, f.name)) for f in dataclasses.fields(level)}


@dataclasses.dataclass(frozen=True)
class ClassicEnv(Environment[Any, ClassicState]):
    """Base of the classic-control families (subclasses are frozen dataclasses).

    A subclass sets `level_cls`, `CONSTANTS` (one `Constant` per field of the
    level, in its order), `HELDOUT` (name → changes to the defaults), `obs_dim`,
    `state_dim` and implements `start` (the reset distribution of `s`),
    `dynamics` and `obs`.
    """

    level_cls: ClassVar[type]
    CONSTANTS: ClassVar[dict[str, Constant]]
    HELDOUT: ClassVar[dict[str, dict[str, float]]]
    obs_dim: ClassVar[int]

    max_steps: int = 500
    """Truncation (time limit)."""
    levels: Literal["dr", "default"] = "dr"
    """What `generate` returns: physics drawn by domain randomisation (every constant
    uniform in its range), or always the default level (Gymnasium's environment)."""

    # --- to implement -----------------------------------------------------------------
    def start(self, key: jax.Array, level: L) -> jax.Array:
        """Initial physical state `(n,) float32`."""
        raise NotImplementedError

    def dynamics(
        self, key: jax.Array, level: L, s: jax.Array, action: jax.Array
    ) -> tuple[jax.Array, jax.Array, jax.Array]:
        """One step of one agent: `(s', reward (), terminated ())`."""
        raise NotImplementedError

    def obs(self, s: jax.Array) -> jax.Array:
        """Observation `(obs_dim,) float32` of the physical state."""
        raise NotImplementedError

    # --- levels -------------------------------------------------------------------------
    def default_level(self) -> L:
        """Gymnasium's environment."""
        return level_of(self.level_cls, {k: c.default for k, c in self.CONSTANTS.items()})

    def generate(self, key: jax.Array) -> L:
        """Domain randomisation: every constant uniform in its range, independently (with
        `levels="default"`: Gymnasium's constants)."""
        if self.levels == "default":
            return self.default_level()
        return self.sample_physics(key)

    def sample_physics(self, key: jax.Array) -> L:
        """Every constant uniform in its range, independently."""
        keys = jax.random.split(key, len(self.CONSTANTS))
        return self.level_cls(
            **{
                name: jax.random.uniform(k, (), jnp.float32, c.low, c.high)
                for k, (name, c) in zip(keys, self.CONSTANTS.items(), strict=True)
            }
        )

    def mutate(self, key: jax.Array, level: L, n_edits: int | jax.Array, scale: float = 0.1) -> L:
        """`n_edits` edits (may be traced), each moving one constant with a non-empty
        range (chosen uniformly) by `U(-scale, scale)` of its range, clipped to the range."""
        names = [n for n, c in self.CONSTANTS.items() if c.high > c.low]
        lo = jnp.asarray([self.CONSTANTS[n].low for n in names], jnp.float32)
        hi = jnp.asarray([self.CONSTANTS[n].high for n in names], jnp.float32)

        def edit(i: jax.Array, v: jax.Array) -> jax.Array:
            k_which, k_by = jax.random.split(jax.random.fold_in(key, i))
            j = jax.random.randint(k_which, (), 0, len(names))
            by = jax.random.uniform(k_by, (), jnp.float32, -scale, scale) * (hi[j] - lo[j])
            return v.at[j].set(jnp.clip(v[j] + by, lo[j], hi[j]))

        v = jnp.stack([getattr(level, n) for n in names])
        v = jax.lax.fori_loop(0, n_edits, edit, v)
        return level.replace(**{n: v[i] for i, n in enumerate(names)})

    def heldout_levels(self) -> dict[str, L]:
        """The named held-out levels (`"default"` is Gymnasium's)."""
        base = {k: c.default for k, c in self.CONSTANTS.items()}
        out = {"default": self.default_level()}
        for name, changes in self.HELDOUT.items():
            out[name] = level_of(self.level_cls, {**base, **changes})
        return out

    def level_problems(self, level: L) -> list[str]:
        """Non-finite constants, and constants physics does not allow (a zero mass, a
        negative gravity): such a level gives NaN states."""
        out = []
        for name, c in self.CONSTANTS.items():
            v = np.asarray(getattr(level, name), np.float64)
            if v.shape != ():
                out.append(f"{name}: one number per level, got shape {v.shape}")
            elif not np.isfinite(v):
                out.append(f"{name}={float(v)} is not finite")
            elif c.physical == "> 0" and not v > 0:
                out.append(f"{name}={float(v):g} must be > 0")
            elif c.physical == ">= 0" and not v >= 0:
                out.append(f"{name}={float(v):g} must be >= 0")
        return out

    def in_range(self, level: L) -> bool:
        """Whether every constant of an (unbatched) level lies in its DR range."""
        v = level_values(level)
        return all(c.low <= np.float32(v[n]) <= c.high for n, c in self.CONSTANTS.items())

    # --- the environment contract ----------------------------------------------------------
    def observation_space(self, team: str = "agent") -> spaces.Box:
        """Gymnasium's bounds of the observation (`obs_high`, symmetric unless a
        family overrides `obs_low`)."""
        return spaces.Box(self.obs_low(), self.obs_high(), (self.obs_dim,), jnp.float32)

    def obs_high(self) -> tuple[float, ...]:
        """Upper bound of each observed value (Gymnasium's; `inf` where it has none)."""
        return (math.inf,) * self.obs_dim

    def obs_low(self) -> tuple[float, ...]:
        """Lower bound of each observed value (default: `-obs_high`)."""
        return tuple(-h for h in self.obs_high())

    def reset_state(self, key: jax.Array, level: L) -> ClassicState:
        return ClassicState(s=self.start(key, level), time=jnp.int32(0), level=level)

    def step_state(
        self, key: jax.Array, state: ClassicState, action: dict[str, jax.Array]
    ) -> tuple[ClassicState, dict[str, jax.Array], jax.Array, jax.Array, dict[str, Any]]:
        a = jnp.asarray(action["agent"])[0]
        s, reward, terminated = self.dynamics(key, state.level, state.s, a)
        time = state.time + 1
        new = state.replace(s=s.astype(jnp.float32), time=time)
        reward = jnp.asarray(reward, jnp.float32)[None]
        terminated, truncated = jnp.asarray(terminated), time >= self.max_steps
        info = {"success": self.success(terminated, truncated)}
        return new, {"agent": reward}, terminated, truncated, info

    def success(self, terminated: jax.Array, truncated: jax.Array) -> jax.Array:
        """Whether an episode ending at this step counts as solved (`solved` in the
        metrics): reaching the goal (termination) unless the family says otherwise."""
        del truncated
        return terminated

    def observe(self, state: ClassicState) -> dict[str, jax.Array]:
        return {"agent": self.obs(state.s).astype(jnp.float32)[None]}


def check_constants(cls: type[ClassicEnv]) -> None:
    """Import-time check of a family's table: constants match the level's fields in
    order, held-out levels change known constants."""
    fields = [f.name for f in dataclasses.fields(cls.level_cls)]
    if list(cls.CONSTANTS) != fields:
        raise TypeError(f"{cls.__name__}: CONSTANTS {list(cls.CONSTANTS)} != level {fields}")
    for name, changes in cls.HELDOUT.items():
        bad = set(changes) - set(fields)
        if bad:
            raise TypeError(f"{cls.__name__}: held-out {name!r} changes unknown {sorted(bad)}")
