"""Continuous Tag: taggers chase runners in a walled square arena — WarpDrive's
`TagContinuous`, rule for rule (checked against WarpDrive's own code in
`tests/conformance/test_tag_warpdrive.py`).

One step, in WarpDrive's order (`still` = the agents in the game during this step):

1. `accel += Δa`; `dir = (dir + Δturn) mod 2π` (0 when out); `speed = clip(speed +
   accel, 0, max_speed · skill)` (0 when out); `accel = 0` whenever the speed is 0 or at
   its maximum; `pos += speed · (cos dir, sin dir)`, clipped to `[0, L]²`; an agent in the
   game whose move left the arena gets `edge_reward` (≤ 0).
2. The observation is taken now, **before** tagging: a runner tagged in this step still
   observes normally and is seen in the game by the others (its speed and acceleration are
   not reset).
3. Tagging: each runner in the game whose nearest tagger (lowest index on ties) is closer
   than `tag_distance · L` is tagged: the runner gets `tag_penalty` (≤ 0) and that tagger
   `tag_reward` (≥ 0) — once per runner, so a tagger tagging several runners is paid for
   each. With `runners_leave` the runner leaves the game (from the next step on it
   neither moves nor is observed); otherwise it stays and can be tagged again.
4. Agents in the game get their team's step reward (`tagger_step_reward` ≤ 0,
   `runner_step_reward` ≥ 0); at `t = T` runners still in the game get `end_reward`.
5. Terminated when no runner is left in the game; truncated at `t = T`.

Observation of an agent, per observed other agent, feature by feature (all `Δx` first…):
`Δx/(√2 L), Δy/(√2 L), Δspeed/max_speed, Δaccel/max_speed, Δdir/(2π)`, then each
other's type (1 tagger, 0 runner) and in-game flag, then `t/T`. Either everyone else in
index order (`k_nearest=None`, WarpDrive's `use_full_observation`) or the `k` nearest
agents in the game, nearest first — exactly: ranked by squared float32 distance, equal ones
to the lower index (`arenax.envs.tag.kernels`: a fused CPU kernel, JAX elsewhere) —
zero-padded when fewer remain. An agent out of the game
sees zeros, except, with the full observation, the others' types and flags (as in
WarpDrive).

Agents are one array axis: taggers are agents `0 .. n_taggers-1`, runners the rest (the
teams `"tagger"` and `"runner"` are slices; WarpDrive draws which ids are taggers at
random — a relabelling, agents of a team being interchangeable). `info["active"]` marks,
per team, the agents in the game during the step, `info["out"]` those that leave at it,
`info["tagged"]` counts tags.

Every constructor parameter of WarpDrive's `TagContinuous` has an equivalent here (see
`TagEnv.from_warpdrive`); `seed` and `env_backend` have none (keys and JAX
replace them).

**Obstacles** (arenax's extension; none by default, and without them the game is
WarpDrive's): a level holds up to `max_obstacles` static discs `(x, y, r)` (`r = 0`: an
unused slot), each inside the arena. After step 1's move and clip, an agent whose move
would pass through a disc — the segment from where it was to where it would be comes
closer than `r` to the disc's centre — bumps into it: it stays where it was, its speed
and acceleration drop to 0, and the bump counts as hitting the edge (`edge_reward`); so
an agent that starts outside every disc never enters one, nor cuts across one within a
step (and a corner is never covered). Discs do not block tagging
(the tagging distance is a few percent of `L`) nor observation. Each agent observes every
slot, appended after `t/T` feature by feature: `Δx/(√2 L)` of each disc's centre,
then `Δy/(√2 L)`, then `r/L` (zeros for unused slots and for agents out of the game),
so the first `7k + 1` numbers are WarpDrive's observation.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Iterator
from typing import Annotated, Any

import jax
import jax.numpy as jnp
import numpy as np

from arenax.envs import spaces
from arenax.envs.core import Environment
from arenax.envs.tag.kernels import (
    k_nearest_observation,
    off_diagonal,
    tag_observation,
)
from arenax.envs.tag.obstacles import (
    crosses_discs,
    free_positions,
    inside_discs,
    obstacle_features,
    random_discs,
)
from arenax.envs.tag.state import TagLevel, TagState
from arenax.envs.tag.warpdrive import continuous_options
from arenax.options import (
    NON_NEGATIVE,
    POSITIVE,
    POSITIVE_REAL,
    AtLeast,
    In,
    OrNone,
    Problem,
    check_on_init,
)
from arenax.selects import lookup
from arenax.utils import gathers_are_cheap

TWO_PI = 2.0 * math.pi
NON_POSITIVE = In(-1e9, 0.0)


def _table(levels: int, lo: float, hi: float) -> jax.Array:
    """An action head: `[0, linspace(lo, hi, levels)]`, computed as WarpDrive does under
    NumPy 1 (float32 bounds, float64 linspace, rounded to float32)."""
    grid = np.linspace(np.float64(np.float32(lo)), np.float64(np.float32(hi)), levels)
    return jnp.asarray(np.insert(grid, 0, 0.0).astype(np.float32))


@dataclasses.dataclass(frozen=True)
class TagEnv(Environment[TagLevel, TagState]):
    """Continuous Tag (static parameters, checked when built; defaults: WarpDrive's
    `TagContinuous`; `BENCHMARK` is the benchmark configuration)."""

    n_taggers: Annotated[int, POSITIVE] = 1
    """Taggers (WarpDrive: num_taggers)."""
    n_runners: Annotated[int, POSITIVE] = 10
    """Runners (num_runners)."""
    episode_length: Annotated[int, POSITIVE] = 100
    """Steps per episode, T (episode_length)."""
    arena: Annotated[float, POSITIVE_REAL] = 10.0
    """Side L of the walled square arena of generated levels (grid_length)."""
    tag_distance: Annotated[float, In(0.0, 1.0)] = 0.01
    """Tagging distance as a fraction of L (tagging_distance)."""
    max_speed: Annotated[float, POSITIVE_REAL] = 1.0
    """Speed limit before the team's skill multiplier (max_speed)."""
    skill_tagger: Annotated[float, POSITIVE_REAL] = 1.0
    """Max-speed multiplier of taggers in generated levels (skill_level_tagger)."""
    skill_runner: Annotated[float, POSITIVE_REAL] = 1.0
    """Max-speed multiplier of runners in generated levels (skill_level_runner)."""
    accel_levels: Annotated[int, AtLeast(0)] = 10
    """Acceleration head: no-op + this many levels in [min_accel, max_accel]
    (num_acceleration_levels)."""
    min_accel: float = -1.0
    """Smallest acceleration change (min_acceleration)."""
    max_accel: float = 1.0
    """Largest acceleration change (max_acceleration)."""
    turn_levels: Annotated[int, AtLeast(0)] = 10
    """Turn head: no-op + this many levels in [min_turn, max_turn] (num_turn_levels)."""
    min_turn: float = -math.pi / 2
    """Smallest turn, radians (min_turn)."""
    max_turn: float = math.pi / 2
    """Largest turn, radians (max_turn)."""
    k_nearest: Annotated[int | None, OrNone(POSITIVE)] = None
    """Observe the k nearest agents in the game (num_other_agents_observed); None: everyone,
    in index order (use_full_observation, WarpDrive's default)."""
    tag_reward: Annotated[float, NON_NEGATIVE] = 1.0
    """Reward of a tagger per runner it tags, >= 0 (tag_reward_for_tagger)."""
    tag_penalty: Annotated[float, NON_POSITIVE] = -1.0
    """Reward of a tagged runner, <= 0 (tag_penalty_for_runner)."""
    runner_step_reward: Annotated[float, NON_NEGATIVE] = 0.0
    """Reward of each runner in the game, every step, >= 0 (step_reward_for_runner)."""
    tagger_step_reward: Annotated[float, NON_POSITIVE] = 0.0
    """Reward of each tagger, every step, <= 0 (step_penalty_for_tagger)."""
    end_reward: Annotated[float, NON_NEGATIVE] = 1.0
    """Reward of each runner still in the game at t = T, >= 0
    (end_of_game_reward_for_runner)."""
    edge_reward: Annotated[float, NON_POSITIVE] = 0.0
    """Reward of an agent whose move left the arena (it is clipped back), <= 0
    (edge_hit_penalty)."""
    runners_leave: bool = True
    """A tagged runner leaves the game; False: it stays and can be tagged again
    (runner_exits_game_after_tagged)."""
    random_start: bool = True
    """Generated levels draw start positions uniformly in [0, L)² and directions among the
    four axes, per episode; False: one fixed start for every copy and episode (WarpDrive
    draws it once at construction; starting_location_x/y, starting_directions)."""
    max_obstacles: Annotated[int, AtLeast(0)] = 0
    """Disc obstacles a level may hold (0: WarpDrive's open arena). Generated levels draw a
    uniform number 0..max_obstacles of discs, radii uniform in [obstacle_radius[0],
    obstacle_radius[1]] · L, centres uniform where the disc lies inside the arena; a start
    that falls inside a disc is drawn again outside them."""
    obstacle_radius: tuple[float, float] = (0.03, 0.08)
    """Range of generated discs' radii, as fractions of L."""
    episode_length_range: tuple[int, int] | None = None
    """Generated levels draw their episode length uniformly in lo..hi (hi at most
    episode_length, the static maximum every rollout is shaped by); observations give t
    over it. None: every level lasts episode_length (WarpDrive)."""

    teams = ("tagger", "runner")
    episode_sums = ("tagged",)
    observes_time = True  # t/T is in every observation

    def __post_init__(self) -> None:
        check_on_init(self, "tag")

    def problems(self) -> Iterator[Problem]:
        """`k_nearest` must not exceed the other agents; head ranges must be ordered."""
        k, n = self.k_nearest, self.n_taggers + self.n_runners
        if k is not None and isinstance(k, int) and not 1 <= k <= n - 1:
            yield Problem("k_nearest", k, f"must be in [1, {n - 1}] or None (everyone)")
        if self.min_accel > self.max_accel:
            yield Problem("min_accel", self.min_accel, f"must be <= max_accel={self.max_accel}")
        if self.min_turn > self.max_turn:
            yield Problem("min_turn", self.min_turn, f"must be <= max_turn={self.max_turn}")
        lo, hi = self.obstacle_radius
        if not 0.0 < lo <= hi < 0.5:
            yield Problem(
                "obstacle_radius",
                self.obstacle_radius,
                "must be 0 < min <= max < 0.5 (fractions of L)",
            )
        r = self.episode_length_range
        if r is not None and not 1 <= r[0] <= r[1] <= self.episode_length:
            yield Problem(
                "episode_length_range", r, f"must be 1 <= lo <= hi <= {self.episode_length}"
            )

    @classmethod
    def from_warpdrive(cls, **kwargs: Any) -> TagEnv:
        """The env of a WarpDrive `TagContinuous(**kwargs)` (its parameter names; the start
        locations and directions belong to levels, `seed` and `env_backend` to nothing)."""
        return cls(**continuous_options(**kwargs))

    # ------------------------------------------------------------------ layout
    @property
    def n_agents(self) -> int:
        return self.n_taggers + self.n_runners

    @property
    def n_observed(self) -> int:
        return self.n_agents - 1 if self.k_nearest is None else self.k_nearest

    @property
    def obs_size(self) -> int:
        return 7 * self.n_observed + 1 + 3 * self.max_obstacles

    def num_agents(self, team: str) -> int:
        return {"tagger": self.n_taggers, "runner": self.n_runners}[team]

    def observation_space(self, team: str = "runner") -> spaces.Box:
        """`(obs_size,) float32`. Positions, speeds and directions differ by at most 1 in
        their units; an acceleration stays below the top speed in magnitude, so the
        difference of two reaches ±2 (levels with skills <= 1, as generated by default)."""
        return spaces.Box(-2.0, 2.0, (self.obs_size,), jnp.float32)

    def action_space(self, team: str = "runner") -> spaces.MultiDiscrete:
        return spaces.MultiDiscrete((self.accel_levels + 1, self.turn_levels + 1))

    def _split(self, x: jax.Array) -> dict[str, jax.Array]:
        return {"tagger": x[: self.n_taggers], "runner": x[self.n_taggers :]}

    # ------------------------------------------------------------------ levels
    @property
    def tag_margin(self) -> np.float32:
        """The absolute tagging distance of generated levels, rounded as WarpDrive rounds
        it (`tagging_distance · float32(grid_length)` in float64, then float32)."""
        return np.float32(self.tag_distance * np.float64(np.float32(self.arena)))

    def generate(self, key: jax.Array) -> TagLevel:
        """Start positions uniform in `[0, L)²` and directions among the four axes (or one
        fixed such start with `random_start=False`), skills and tagging distance of the
        env; with `episode_length_range`, an episode length drawn uniformly in it."""
        length = None
        if self.episode_length_range is not None:
            lo, hi = self.episode_length_range
            length = jax.random.randint(jax.random.fold_in(key, 2), (), lo, hi + 1, jnp.int32)
        key = key if self.random_start else jax.random.key(0)
        k_pos, k_dir = jax.random.split(key)
        axes = jax.random.randint(k_dir, (self.n_agents,), 0, 4)
        level = TagLevel(
            pos=jax.random.uniform(k_pos, (self.n_agents, 2), jnp.float32, 0.0, self.arena),
            direction=(axes.astype(jnp.float32) * jnp.float32(math.pi / 2)),
            skill=jnp.asarray([self.skill_tagger, self.skill_runner], jnp.float32),
            arena=jnp.float32(self.arena),
            tag_margin=jnp.float32(self.tag_margin),
            episode_length=length,
        )
        if not self.max_obstacles:
            return level
        k_discs, k_free = jax.random.split(jax.random.fold_in(key, 1))
        discs = random_discs(k_discs, self.max_obstacles, self.arena, self.obstacle_radius)
        free = free_positions(k_free, self.n_agents, discs, 0.0, self.arena)
        pos = jnp.where(inside_discs(level.pos, discs)[:, None], free, level.pos)
        return level.replace(obstacles=discs, pos=pos)

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
            tagged=jnp.zeros((a,), jnp.bool_),
            time=jnp.zeros((), jnp.int32),
            skill=jnp.where(is_tagger, level.skill[0], level.skill[1]).astype(jnp.float32),
            arena=jnp.asarray(level.arena, jnp.float32),
            tag_margin=jnp.asarray(level.tag_margin, jnp.float32),
            obstacles=self.obstacles_of(level),
            episode_length=None
            if level.episode_length is None
            else jnp.asarray(level.episode_length, jnp.int32),
        )

    def with_default_rules(self, level: TagLevel) -> TagLevel:
        """`level` carrying the env's episode length when generated levels carry one
        (`episode_length_range`) and it has none (arenas built by other generators)."""
        if self.episode_length_range is None or level.episode_length is not None:
            return level
        return level.replace(episode_length=jnp.asarray(self.episode_length, jnp.int32))

    def horizon(self, state: TagState) -> jax.Array | int:
        """The step at which `state`'s episode is truncated (its level's, else T)."""
        return self.episode_length if state.episode_length is None else state.episode_length

    def obstacles_of(self, level: TagLevel) -> jax.Array | None:
        """`(max_obstacles, 3) float32` discs of `level` (unused slots zero); `None`
        when the env holds none (no zero-size array: checkpoints cannot store them)."""
        m = self.max_obstacles
        if level.obstacles is None or m == 0:
            if level.obstacles is not None and level.obstacles.shape[0]:
                raise ValueError(
                    f"obstacles: shape {level.obstacles.shape}, the env holds none (max_obstacles=0)"
                )
            return None if m == 0 else jnp.zeros((m, 3), jnp.float32)
        discs = jnp.asarray(level.obstacles, jnp.float32)
        if discs.shape != (m, 3):
            raise ValueError(
                f"obstacles: shape {discs.shape}, the env holds ({m}, 3) (max_obstacles={m})"
            )
        return discs

    # ------------------------------------------------------------------ dynamics
    def step_state(
        self, key: jax.Array, state: TagState, action: dict[str, jax.Array]
    ) -> tuple[TagState, dict[str, jax.Array], jax.Array, jax.Array, dict[str, Any]]:
        del key
        nt = self.n_taggers
        act = jnp.concatenate([action["tagger"], action["runner"]], axis=0).astype(jnp.int32)
        still = state.in_game  # the agents in the game during this step
        # 1. movement
        d_acc = lookup(_table(self.accel_levels, self.min_accel, self.max_accel), act[:, 0])
        d_turn = lookup(_table(self.turn_levels, self.min_turn, self.max_turn), act[:, 1])
        accel = state.accel + d_acc
        direction = jnp.where(still, jnp.mod(state.direction + d_turn, jnp.float32(TWO_PI)), 0.0)
        top = jnp.float32(self.max_speed) * state.skill
        speed = jnp.where(still, jnp.clip(state.speed + accel, 0.0, top), 0.0)
        accel = jnp.where((speed > 0.0) & (speed < top), accel, 0.0)
        moved = state.pos + speed[:, None] * jnp.stack([jnp.cos(direction), jnp.sin(direction)], -1)
        pos = jnp.clip(moved, 0.0, state.arena)
        hit_edge = jnp.any(pos != moved, axis=-1) & still
        if self.max_obstacles:  # a move through a disc is refused: the agent stops where it was
            bumped = crosses_discs(state.pos, pos, state.obstacles)
            pos = jnp.where(bumped[:, None], state.pos, pos)
            speed = jnp.where(bumped, 0.0, speed)
            accel = jnp.where(bumped, 0.0, accel)
            hit_edge = hit_edge | (bumped & still)

        # 3. tagging: each runner in the game against its nearest tagger
        runners = pos[nt:]
        dx = runners[:, None, 0] - pos[None, :nt, 0]
        dy = runners[:, None, 1] - pos[None, :nt, 1]
        dist = jnp.sqrt(dx * dx + dy * dy)  # (R, T)
        nearest = jnp.argmin(dist, axis=1)
        tagged = still[nt:] & (jnp.min(dist, axis=1) < state.tag_margin)
        if gathers_are_cheap():
            tags_by = jax.ops.segment_sum(tagged.astype(jnp.float32), nearest, num_segments=nt)
        else:  # a scatter-add runs one runner after another on a TPU; counts are exact
            by = (nearest[:, None] == jnp.arange(nt)) & tagged[:, None]  # (R, T)
            tags_by = jnp.sum(by.astype(jnp.float32), axis=0)

        # 4. rewards
        time = state.time + 1
        end = time >= self.horizon(state)
        left = still[nt:] & ~tagged if self.runners_leave else still[nt:]
        r_tagger = self.tag_reward * tags_by + jnp.where(still[:nt], self.tagger_step_reward, 0.0)
        r_runner = (
            jnp.where(tagged, self.tag_penalty, 0.0)
            + jnp.where(still[nt:], self.runner_step_reward, 0.0)
            + jnp.where(end & left, self.end_reward, 0.0)
        )
        reward = jnp.concatenate([r_tagger, r_runner]) + jnp.where(hit_edge, self.edge_reward, 0.0)
        tagged_all = jnp.concatenate([jnp.zeros((nt,), jnp.bool_), tagged])
        new = state.replace(
            pos=pos,
            speed=speed,
            direction=direction,
            accel=accel,
            active=still,
            tagged=tagged_all if self.runners_leave else jnp.zeros_like(tagged_all),
            time=time,
        )
        terminated = ~jnp.any(left)
        info = {
            "active": self._split(still),
            "out": self._split(tagged_all & self.runners_leave),
            "tagged": jnp.sum(tagged).astype(jnp.int32),
        }
        return new, self._split(reward.astype(jnp.float32)), terminated, end, info

    # ------------------------------------------------------------------ observation
    def global_state(self, state: TagState) -> jax.Array:
        """Every agent's `x / L, y / L, speed / max, acceleration / max, cos and sin of its
        direction, in the game` (agent order: taggers, then runners), then `t / T`:
        `(7 A + 1,) float32` (the discs of an arena are not in it)."""
        per = jnp.stack(
            [
                state.pos[:, 0] / state.arena,
                state.pos[:, 1] / state.arena,
                state.speed / self.max_speed,
                state.accel / self.max_speed,
                jnp.cos(state.direction),
                jnp.sin(state.direction),
                state.in_game.astype(jnp.float32),
            ],
            axis=-1,
        )
        time = state.time.astype(jnp.float32) / self.horizon(state)
        return jnp.concatenate([per.reshape(-1), time[None]]).astype(jnp.float32)

    def observe(self, state: TagState) -> dict[str, jax.Array]:
        a, nt = self.n_agents, self.n_taggers
        is_tagger = (jnp.arange(a) < nt).astype(jnp.float32)
        active = state.active  # the flags of the step just taken (before its tags)
        diag = jnp.float32(math.sqrt(2.0)) * state.arena
        feats = jnp.stack(
            [
                state.pos[:, 0] / diag,
                state.pos[:, 1] / diag,
                state.speed / self.max_speed,
                state.accel / self.max_speed,
                state.direction / jnp.float32(TWO_PI),
            ],
            axis=-1,
        )  # (A, 5), differenced below
        time = state.time.astype(jnp.float32) / self.horizon(state)
        t = jnp.full((a, 1), time)
        flags = active.astype(jnp.float32)
        if self.k_nearest is None:
            # everyone else in index order: pairwise differences with the diagonal cut
            # out by static reshapes (no gather); an agent out of the game keeps the
            # others' types and flags, zero differences and zero time (as WarpDrive)
            diffs = [f[None, :] - f[:, None] for f in feats.T]
            diffs = [jnp.where(active[:, None], d, 0.0) for d in diffs]
            cols = diffs + [jnp.broadcast_to(f[None, :], (a, a)) for f in (is_tagger, flags)]
            flat = jnp.concatenate([off_diagonal(c.astype(jnp.float32)) for c in cols], axis=-1)
            obs = jnp.concatenate([flat, jnp.where(active[:, None], t, 0.0)], axis=-1)
        else:
            discs = None
            if self.max_obstacles:  # written by the same kernel pass on CPUs
                discs = (state.obstacles, state.arena, obstacle_features)
            return self._split(
                tag_observation(
                    feats,
                    state.pos,
                    active,
                    is_tagger,
                    time,
                    self.k_nearest,
                    functools.partial(k_nearest_observation, k=self.k_nearest),
                    discs,
                ).astype(jnp.float32)
            )
        if self.max_obstacles:
            obs = jnp.concatenate(
                [obs, obstacle_features(state.pos, active, state.obstacles, state.arena)], -1
            )
        return self._split(obs.astype(jnp.float32))
