"""A new arenax environment family from scratch: a slippery corridor.

The agent walks along a corridor of ``length`` cells (at most ``MAX_LENGTH``) from
``start`` to ``goal``; with probability ``slip`` its action is replaced by a random one.
A **level** is those four numbers, so curricula choose corridors: DR draws them, PLR
replays the ones with high regret estimates, ACCEL edits them.

* observation ``(3,) float32``: position / MAX_LENGTH, goal / MAX_LENGTH, (goal − position)
  / MAX_LENGTH; actions: 0 left, 1 right, 2 stay (``Discrete(3)``);
* reward ``1 − 0.9 · t / max_steps`` on reaching the goal (MiniGrid's), then the episode
  terminates; truncated after ``max_steps`` steps.

Importing this module registers the family ``corridor``, its generator ``corridor/dr``,
mutator ``corridor/edits`` and held-out suite ``corridor/heldout``; with
``ARENAX_PLUGINS=examples.corridor`` the command line gains its presets ``corridor-dr`` and
``corridor-plr`` (``PRESETS`` below). See ``docs/extending.md``.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp

import arenax
from arenax.envs import spaces
from arenax.envs.core import Environment
from arenax.struct import pytree_dataclass

MAX_LENGTH = 16


@pytree_dataclass
class CorridorLevel:
    """One corridor: ``length``, ``start``, ``goal`` (int32 scalars), ``slip`` (float32)."""

    length: jax.Array
    start: jax.Array
    goal: jax.Array
    slip: jax.Array


@pytree_dataclass
class CorridorState:
    pos: jax.Array
    time: jax.Array
    level: CorridorLevel


def corridor(length: int, start: int, goal: int, slip: float = 0.0) -> CorridorLevel:
    """A level from plain numbers (checked)."""
    if not 2 <= length <= MAX_LENGTH:
        raise ValueError(f"length={length}: must be in [2, {MAX_LENGTH}]")
    for name, v in (("start", start), ("goal", goal)):
        if not 0 <= v < length:
            raise ValueError(f"{name}={v}: must be in [0, length={length})")
    if start == goal or not 0.0 <= slip <= 1.0:
        raise ValueError("start must differ from goal and slip lie in [0, 1]")
    i = lambda x: jnp.asarray(x, jnp.int32)  # noqa: E731
    return CorridorLevel(i(length), i(start), i(goal), jnp.asarray(slip, jnp.float32))


@dataclasses.dataclass(frozen=True)
class Corridor(Environment[CorridorLevel, CorridorState]):
    """The corridor family (static parameters: the time limit and the DR ranges)."""

    max_steps: int = 32
    """Steps before truncation."""
    max_slip: float = 0.3
    """DR draws the slip probability uniformly in [0, max_slip]."""

    # --- levels ----------------------------------------------------------------------
    def generate(self, key: jax.Array) -> CorridorLevel:
        """DR: length uniform in [4, MAX_LENGTH], start and goal two distinct cells,
        slip uniform in [0, max_slip]."""
        k_len, k_start, k_goal, k_slip = jax.random.split(key, 4)
        length = jax.random.randint(k_len, (), 4, MAX_LENGTH + 1)
        start = jax.random.randint(k_start, (), 0, length)
        goal = jax.random.randint(k_goal, (), 0, length - 1)
        goal = goal + (goal >= start)  # uniform over the other cells
        slip = jax.random.uniform(k_slip, (), jnp.float32, 0.0, self.max_slip)
        return CorridorLevel(length.astype(jnp.int32), start.astype(jnp.int32),
                             goal.astype(jnp.int32), slip)  # fmt: skip

    def mutate(self, key: jax.Array, level: CorridorLevel, n_edits: int = 1) -> CorridorLevel:
        """``n_edits`` edits, each one of: move the goal by ±1, move the start by ±1,
        change the slip by ±0.05 (clipped to [0, max_slip]); the goal never lands on the
        start."""

        def edit(lv: CorridorLevel, k: jax.Array) -> tuple[CorridorLevel, None]:
            k_what, k_sign = jax.random.split(k)
            what = jax.random.randint(k_what, (), 0, 3)
            d = jnp.where(jax.random.bernoulli(k_sign), 1, -1).astype(jnp.int32)
            goal = jnp.clip(lv.goal + d * (what == 0), 0, lv.length - 1)
            start = jnp.clip(lv.start + d * (what == 1), 0, lv.length - 1)
            slip = jnp.clip(lv.slip + 0.05 * d * (what == 2), 0.0, self.max_slip)
            ok = goal != start
            new = CorridorLevel(lv.length, jnp.where(ok, start, lv.start),
                                jnp.where(ok, goal, lv.goal), slip)  # fmt: skip
            return new, None

        level, _ = jax.lax.scan(edit, level, jax.random.split(key, n_edits))
        return level

    def default_level(self) -> CorridorLevel:
        """Where ACCEL starts (``plr.new_levels="empty"``): a short, non-slippery corridor."""
        return corridor(8, 0, 7)

    def heldout_levels(self) -> dict[str, CorridorLevel]:
        """Zero-shot tests: the longest corridor, a slippery one, the goal behind."""
        return {
            "default": self.default_level(),
            "longest": corridor(MAX_LENGTH, 0, MAX_LENGTH - 1),
            "slippery": corridor(10, 0, 9, slip=0.6),
            "goal-behind": corridor(12, 10, 1),
        }

    def in_range(self, level: CorridorLevel) -> bool:
        """Whether DR could draw ``level``."""
        return bool(int(level.length) >= 4 and float(level.slip) <= self.max_slip)

    # --- dynamics ----------------------------------------------------------------------
    def observation_space(self, team: str = "agent") -> spaces.Box:
        return spaces.Box(-1.0, 1.0, (3,), jnp.float32)

    def action_space(self, team: str = "agent") -> spaces.Discrete:
        return spaces.Discrete(3)

    def reset_state(self, key: jax.Array, level: CorridorLevel) -> CorridorState:
        del key
        return CorridorState(pos=level.start, time=jnp.int32(0), level=level)

    def step_state(
        self, key: jax.Array, state: CorridorState, action: dict[str, jax.Array]
    ) -> tuple[CorridorState, dict[str, jax.Array], jax.Array, jax.Array, dict[str, Any]]:
        k_slip, k_act = jax.random.split(key)
        a = jnp.asarray(action["agent"])[0]
        a = jnp.where(jax.random.uniform(k_slip) < state.level.slip,
                      jax.random.randint(k_act, (), 0, 3), a)  # fmt: skip
        move = jnp.where(a == 0, -1, jnp.where(a == 1, 1, 0))
        pos = jnp.clip(state.pos + move, 0, state.level.length - 1)
        time = state.time + 1
        at_goal = pos == state.level.goal
        reward = jnp.where(at_goal, 1.0 - 0.9 * time / self.max_steps, 0.0).astype(jnp.float32)
        new = CorridorState(pos=pos.astype(jnp.int32), time=time, level=state.level)
        info = {"success": at_goal}
        return new, {"agent": reward[None]}, at_goal, time >= self.max_steps, info

    def observe(self, state: CorridorState) -> dict[str, jax.Array]:
        lv = state.level
        x = jnp.stack([state.pos, lv.goal, lv.goal - state.pos]).astype(jnp.float32) / MAX_LENGTH
        return {"agent": x[None]}


# --- presets: what `arenax train corridor-*` runs (a run's config.json, less the defaults) --
AGENT = {
    "network": {"kind": "mlp", "hidden": [64, 64]},
    "learner": {"kind": "ppo", "lr": 3e-4, "gamma": 0.99, "gae_lambda": 0.95, "ent_coef": 0.0,
                "epochs": 4, "minibatches": 4, "clip_value": False},
}  # fmt: skip
RUN = {"total_steps": 2_000_000, "chunk": 10, "checkpoint_every": 100, "archive_every": 0,
       "eval": {"every": 0}}  # fmt: skip
PRESETS = {
    "corridor-dr": arenax.Preset(
        "Slippery corridors, domain randomisation (examples/corridor.py): an MLP agent, PPO.",
        {"teams": {"agent": AGENT}, "curriculum": {"kind": "dr", "episodes": "continue"},
         "n_envs": 16, "n_steps": 128, **RUN},
    ),
    "corridor-plr": arenax.Preset(
        "Slippery corridors, robust PLR (PLR⊥) on MaxMC (examples/corridor.py).",
        {"teams": {"agent": AGENT}, "curriculum": {"kind": "plr", "buffer_size": 512},
         "n_envs": 4, "n_steps": 512, **RUN},
    ),
}  # fmt: skip


def _register() -> None:
    if "corridor" in arenax.list_envs():  # imported twice (e.g. as a plugin and by a test)
        return
    arenax.register("corridor", Corridor, presets=PRESETS)
    arenax.register_generator("corridor/dr", lambda key, **p: Corridor(**p).generate(key))
    arenax.register_mutator("corridor/edits", lambda key, level, n_edits=1, **p:
                            Corridor(**p).mutate(key, level, n_edits))  # fmt: skip
    arenax.register_suite("corridor/heldout", Corridor().heldout_levels())


_register()
