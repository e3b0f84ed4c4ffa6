"""Continuous Tag: taggers chase runners in a walled square arena (many agents per env).

Facts of the reference game (GPU multi-agent RL's Tag benchmark), reproduced here:

* arena ``[0, L]^2`` with walls: positions are clipped, never wrapped; an agent whose move
  is clipped receives ``edge_reward`` (0 by default; make it negative to penalise);
* per agent: position, speed, direction (radians in ``[0, 2π)``), accumulated
  acceleration, still-in-game flag; actions are two discrete heads, acceleration change and
  turn, index 0 = no-op, indices ``1..k`` = ``linspace(-max, max, k)``;
* step, in order: ``accel += Δa``; ``dir = (dir + Δturn) mod 2π`` (0 when out); ``speed =
  clip(speed + accel, 0, max_speed * skill(team))`` (0 when out); ``accel = 0`` whenever the
  speed hits 0 or its maximum; ``pos += speed * (cos dir, sin dir)``, clipped to the arena;
* tagging: a runner still in the game whose nearest tagger is closer than
  ``tag_distance * L`` is tagged: it gets ``tag_penalty`` and leaves the game, and that
  tagger gets ``tag_reward`` — once per runner it tags (a scatter-add, so one tagger
  tagging several runners in one step is paid for each; the CUDA original could lose them);
* every step, runners in the game get ``runner_step_reward``, taggers
  ``tagger_step_reward``; runners still in the game at ``t = T`` get ``end_reward``;
* the episode is truncated at ``t = T`` and terminated when no runner is left.

Observation of each agent, relative to itself, for each observed other agent:
``Δx/(√2 L), Δy/(√2 L), Δspeed/max_speed, Δaccel/max_speed, Δdir/(2π), is-tagger,
in-game``, laid out feature by feature (all ``Δx`` first, …), then ``t/T``. Either all
other agents (``k_nearest=None``, in index order) or the ``k`` nearest agents still in the
game, nearest first, zero-padded. An agent out of the game sees zeros.

Agents are one array axis: taggers are agents ``0 .. n_taggers-1``, runners the rest; the
teams ``"tagger"`` and ``"runner"`` are slices of it. ``info["active"]`` holds, per team,
which agents were in the game at the start of the step (their step counts for learning),
``info["out"]`` which left it at this step (their last step), ``info["tagged"]`` how many
runners were tagged.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator
from typing import Annotated, Any

import jax
import jax.numpy as jnp
import numpy as np

from arenax.envs import spaces
from arenax.envs.core import Environment
from arenax.options import POSITIVE, POSITIVE_REAL, In, Problem, check_on_init
from arenax.struct import pytree_dataclass

TWO_PI = 2.0 * math.pi


@pytree_dataclass
class TagLevel:
    """What an episode starts from (curricula can act on it).

    Attributes:
        pos: ``(A, 2) float32`` start positions (taggers first).
        direction: ``(A,) float32`` start directions in ``[0, 2π)``.
        skill: ``(2,) float32`` max-speed multipliers of taggers and runners.
        arena: ``() float32`` side ``L``.
        tag_distance: ``() float32`` tagging distance as a fraction of ``L``.
    """

    pos: jax.Array
    direction: jax.Array
    skill: jax.Array
    arena: jax.Array
    tag_distance: jax.Array


@pytree_dataclass
class TagState:
    """Per-env state; agent arrays have a leading ``A`` axis."""

    pos: jax.Array
    speed: jax.Array
    direction: jax.Array
    accel: jax.Array
    active: jax.Array
    time: jax.Array
    skill: jax.Array
    arena: jax.Array
    tag_distance: jax.Array


@dataclasses.dataclass(frozen=True)
class TagEnv(Environment[TagLevel, TagState]):
    """Continuous Tag (static parameters, checked when built; defaults: the reference
    game's; see :data:`BENCHMARK` for the benchmark configuration)."""

    n_taggers: Annotated[int, POSITIVE] = 1
    """Taggers."""
    n_runners: Annotated[int, POSITIVE] = 10
    """Runners."""
    episode_length: Annotated[int, POSITIVE] = 100
    """Steps per episode (T)."""
    arena: Annotated[float, POSITIVE_REAL] = 10.0
    """Side L of the walled square arena (of generated levels)."""
    tag_distance: Annotated[float, In(0.0, 2.0)] = 0.01
    """Tagging distance as a fraction of L (of generated levels)."""
    max_speed: Annotated[float, POSITIVE_REAL] = 1.0
    """Speed limit (times the team's skill)."""
    accel_levels: Annotated[int, POSITIVE] = 10
    """Acceleration head: no-op + this many levels in [-max_accel, max_accel]."""
    max_accel: float = 1.0
    """Largest acceleration change."""
    turn_levels: Annotated[int, POSITIVE] = 10
    """Turn head: no-op + this many levels in [-max_turn, max_turn]."""
    max_turn: float = math.pi / 2
    """Largest turn (radians)."""
    k_nearest: int | None = 2
    """Observe the k nearest agents still in the game (None: everyone, in index order)."""
    tag_reward: float = 1.0
    """Reward of a tagger per runner it tags."""
    tag_penalty: float = -1.0
    """Reward of a tagged runner."""
    runner_step_reward: float = 0.0
    """Reward of each runner in the game, every step."""
    tagger_step_reward: float = 0.0
    """Reward of each tagger, every step."""
    end_reward: float = 1.0
    """Reward of each runner still in the game at t = T."""
    edge_reward: float = 0.0
    """Reward of an agent whose move is clipped at the wall (negative: a penalty)."""
    random_start: bool = True
    """Generated levels draw start positions and directions uniformly (False: one fixed
    start for every copy and episode, as in the original)."""

    teams = ("tagger", "runner")
    episode_sums = ("tagged",)
    observes_time = True  # t/T is in every observation

    def __post_init__(self) -> None:
        check_on_init(self, "tag")

    def problems(self) -> Iterator[Problem]:
        """``k_nearest`` must leave someone to observe and not exceed the others."""
        k, n = self.k_nearest, self.n_taggers + self.n_runners
        if k is not None and not (isinstance(k, int) and 1 <= k <= n - 1):
            yield Problem("k_nearest", k, f"must be in [1, {n - 1}] or None (everyone)")

    # ------------------------------------------------------------------ layout
    @property
    def n_agents(self) -> int:
        return self.n_taggers + self.n_runners

    @property
    def n_observed(self) -> int:
        return self.n_agents - 1 if self.k_nearest is None else self.k_nearest

    @property
    def obs_size(self) -> int:
        return 7 * self.n_observed + 1

    def num_agents(self, team: str) -> int:
        return {"tagger": self.n_taggers, "runner": self.n_runners}[team]

    def observation_space(self, team: str = "runner") -> spaces.Box:
        """``(obs_size,) float32``. Positions, speeds and directions differ by at most 1 in
        their units; an acceleration stays below the top speed in magnitude, so the
        difference of two reaches ±2 (levels with skills <= 1, as generated)."""
        return spaces.Box(-2.0, 2.0, (self.obs_size,), jnp.float32)

    def action_space(self, team: str = "runner") -> spaces.MultiDiscrete:
        return spaces.MultiDiscrete((self.accel_levels + 1, self.turn_levels + 1))

    def _split(self, x: jax.Array) -> dict[str, jax.Array]:
        return {"tagger": x[: self.n_taggers], "runner": x[self.n_taggers :]}

    # ------------------------------------------------------------------ levels
    def generate(self, key: jax.Array) -> TagLevel:
        """Uniform start positions and directions (``random_start``), or one fixed start."""
        key = key if self.random_start else jax.random.key(0)
        k_pos, k_dir = jax.random.split(key)
        return TagLevel(
            pos=jax.random.uniform(k_pos, (self.n_agents, 2), jnp.float32, 0.0, self.arena),
            direction=jax.random.uniform(k_dir, (self.n_agents,), jnp.float32, 0.0, TWO_PI),
            skill=jnp.ones((2,), jnp.float32),
            arena=jnp.float32(self.arena),
            tag_distance=jnp.float32(self.tag_distance),
        )

    def reset_state(self, key: jax.Array, level: TagLevel) -> TagState:
        del key
        a = self.n_agents
        is_tagger = jnp.arange(a) < self.n_taggers
        return TagState(
            pos=jnp.asarray(level.pos, jnp.float32),
            speed=jnp.zeros((a,), jnp.float32),
            direction=jnp.asarray(level.direction, jnp.float32),
            accel=jnp.zeros((a,), jnp.float32),
            active=jnp.ones((a,), jnp.bool_),
            time=jnp.zeros((), jnp.int32),
            skill=jnp.where(is_tagger, level.skill[0], level.skill[1]).astype(jnp.float32),
            arena=jnp.asarray(level.arena, jnp.float32),
            tag_distance=jnp.asarray(level.tag_distance, jnp.float32),
        )

    # ------------------------------------------------------------------ dynamics
    def _table(self, levels: int, mx: float) -> jax.Array:
        """Head values: ``[0, linspace(-mx, mx, levels)]`` (float64 rounded to float32)."""
        return jnp.asarray(np.concatenate([[0.0], np.linspace(-mx, mx, levels)]), jnp.float32)

    def step_state(
        self, key: jax.Array, state: TagState, action: dict[str, jax.Array]
    ) -> tuple[TagState, dict[str, jax.Array], jax.Array, jax.Array, dict[str, Any]]:
        del key
        nt = self.n_taggers
        act = jnp.concatenate([action["tagger"], action["runner"]], axis=0).astype(jnp.int32)
        active = state.active
        d_acc = self._table(self.accel_levels, self.max_accel)[act[:, 0]]
        d_turn = self._table(self.turn_levels, self.max_turn)[act[:, 1]]
        accel = state.accel + d_acc
        direction = jnp.where(active, jnp.mod(state.direction + d_turn, TWO_PI), 0.0)
        top = self.max_speed * state.skill
        speed = jnp.where(active, jnp.clip(state.speed + accel, 0.0, top), 0.0)
        accel = jnp.where((speed <= 0.0) | (speed >= top), 0.0, accel)
        moved = state.pos + speed[:, None] * jnp.stack([jnp.cos(direction), jnp.sin(direction)], -1)
        pos = jnp.clip(moved, 0.0, state.arena)
        hit_edge = jnp.any(pos != moved, axis=-1) & active

        # tagging: each runner in the game vs its nearest tagger
        runners = pos[nt:]
        diff = runners[:, None, :] - pos[None, :nt, :]
        dist = jnp.sqrt(jnp.sum(diff * diff, axis=-1))  # (R, T)
        nearest = jnp.argmin(dist, axis=1)
        tagged = active[nt:] & (jnp.min(dist, axis=1) < state.tag_distance * state.arena)
        tags_by = jax.ops.segment_sum(tagged.astype(jnp.float32), nearest, num_segments=nt)

        time = state.time + 1
        still = active[nt:] & ~tagged
        end = time >= self.episode_length
        r_tagger = self.tag_reward * tags_by + self.tagger_step_reward
        r_runner = (
            jnp.where(tagged, self.tag_penalty, 0.0)
            + jnp.where(active[nt:], self.runner_step_reward, 0.0)
            + jnp.where(end & still, self.end_reward, 0.0)
        )
        reward = jnp.concatenate([r_tagger, r_runner]) + jnp.where(hit_edge, self.edge_reward, 0.0)
        new_active = active.at[nt:].set(still)
        new = state.replace(
            pos=pos,
            speed=jnp.where(new_active, speed, 0.0),
            direction=direction,
            accel=jnp.where(new_active, accel, 0.0),
            active=new_active,
            time=time,
        )
        terminated = ~jnp.any(still)
        info = {
            "active": self._split(active),
            "out": self._split(jnp.concatenate([jnp.zeros((nt,), jnp.bool_), tagged])),
            "tagged": jnp.sum(tagged).astype(jnp.int32),
        }
        return new, self._split(reward.astype(jnp.float32)), terminated, end, info

    # ------------------------------------------------------------------ observation
    def observe(self, state: TagState) -> dict[str, jax.Array]:
        a, nt = self.n_agents, self.n_taggers
        is_tagger = (jnp.arange(a) < nt).astype(jnp.float32)
        scale = math.sqrt(2.0) * state.arena
        feats = jnp.stack(
            [
                state.pos[:, 0] / scale,
                state.pos[:, 1] / scale,
                state.speed / self.max_speed,
                state.accel / self.max_speed,
                state.direction / TWO_PI,
            ],
            axis=-1,
        )  # (A, 5) absolute, differenced below
        if self.k_nearest is None:
            # everyone else, in index order (row i lists j = 0..A-1 without i): pairwise
            # differences with the diagonal cut out by a static reshape, no gather
            cols = [f[None, :] - f[:, None] for f in feats.T]
            cols += [jnp.broadcast_to(f[None, :], (a, a)) for f in (is_tagger, state.active)]
            flat = jnp.concatenate([_off_diagonal(c.astype(jnp.float32)) for c in cols], axis=-1)
        else:
            others, valid = _k_nearest(state.pos, state.active, self.k_nearest)
            rel = feats[others] - feats[:, None, :]  # (A, K, 5)
            extra = jnp.stack(
                [is_tagger[others], state.active[others].astype(jnp.float32)], axis=-1
            )  # (A, K, 2)
            per = jnp.concatenate([rel, extra], axis=-1) * valid[..., None]  # (A, K, 7)
            flat = jnp.moveaxis(per, -1, 1).reshape(a, -1)  # feature by feature
        t = jnp.full((a, 1), state.time.astype(jnp.float32) / self.episode_length)
        obs = jnp.concatenate([flat, t], axis=-1)
        obs = jnp.where(state.active[:, None], obs, 0.0)
        return self._split(obs.astype(jnp.float32))


def _off_diagonal(m: jax.Array) -> jax.Array:
    """``(A, A) -> (A, A-1)``: row ``i`` without its ``i``-th entry (static reshapes)."""
    a = m.shape[0]
    return m.reshape(-1)[1:].reshape(a - 1, a + 1)[:, :-1].reshape(a, a - 1)


def _k_nearest(pos: jax.Array, active: jax.Array, k: int) -> tuple[jax.Array, jax.Array]:
    """The ``k`` nearest other agents still in the game, nearest first.

    Ranks by the key ``(d² with its lowest b mantissa bits cleared) | index`` where ``b`` is
    the number of bits of an agent index: equal or near-equal squared distances (within a
    relative ``2^(b-23)``) go to the lower index. The keys are distinct, so ``k`` passes of
    an integer ``min`` (which vectorises) select them; this is 2–3× faster than
    ``lax.top_k`` on CPU. ``pos (A, 2)``, ``active (A,)`` -> ``(others (A, k) int32,
    valid (A, k) bool)`` (``valid`` is False for padding when fewer than ``k`` remain).
    """
    a = pos.shape[0]
    x, y = pos[:, 0], pos[:, 1]
    dx, dy = x[None, :] - x[:, None], y[None, :] - y[:, None]
    dist = dx * dx + dy * dy  # (A, A), separate axes: no size-2 minor dimension
    big = jnp.iinfo(jnp.int32).max
    bad = jnp.eye(a, dtype=jnp.bool_) | ~active[None, :]
    if a > 1 << 16:  # too many index bits for the packed key: plain top_k
        neg, others = jax.lax.top_k(-jnp.where(bad, jnp.inf, dist), k)
        return others, jnp.isfinite(neg)
    b = max(1, (a - 1).bit_length())
    bits = jax.lax.bitcast_convert_type(dist, jnp.int32)  # d² >= 0: monotone as int32
    key = jnp.where(bad, big, (bits & ~((1 << b) - 1)) | jnp.arange(a, dtype=jnp.int32))
    picked = []
    for _ in range(k):
        m = jnp.min(key, axis=-1)
        picked.append(m)
        key = jnp.where(key == m[:, None], big, key)
    keys = jnp.stack(picked, axis=-1)
    valid = keys != big
    return jnp.where(valid, keys & ((1 << b) - 1), 0), valid


# The benchmark configuration of the reference work.
BENCHMARK = dict(
    n_taggers=10, n_runners=100, episode_length=500, arena=20.0, tag_distance=0.02,
    accel_levels=20, max_accel=0.1, turn_levels=20, max_turn=3 * math.pi / 4, k_nearest=10,
    tag_reward=10.0, tag_penalty=-10.0,
)  # fmt: skip
