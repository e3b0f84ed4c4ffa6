"""Grid Tag: `n` taggers chase one runner on integer cells `[0, L]^2` — WarpDrive's
`TagGridWorld`, rule for rule (checked against WarpDrive's own code in
`tests/conformance/test_tag_warpdrive.py`).

Rules: actions stay / +x / -x / +y / -y; a move that would leave the grid is clipped and the
agent receives `wall_reward` (≤ 0, −0.1); after everyone has moved, if any tagger shares
the runner's cell, every tagger gets `tag_reward` (+10), the runner `tag_penalty` (≤ 0,
−2) and the episode terminates; otherwise taggers get `tagger_step_reward` (−0.01) and
the runner `runner_step_reward` (+0.01) — WarpDrive's one `step_cost_for_tagger` c is
`tagger_step_reward = -c`, `runner_step_reward = +c`. Truncated at `t = T`.

Observations (after the move; WarpDrive's types: 0 tagger, 1 runner). Full
(`partial=False`): positions of every agent `/ L` (all `x` then all `y`), their
types, a one-hot of the agent itself, `t/T` — `4A + 1` numbers. `partial=True`: own
position, the target's position (the runner's for taggers; for the runner its nearest
tagger by squared Euclidean distance, lowest index on ties), own type, `t/T` — 6 numbers.

Obstacles (an arenax extension; a level without any is WarpDrive's game exactly): a level
may block cells (`GridTagLevel.blocked`, `(L+1, L+1) bool` indexed `[y, x]`). A move
into a blocked cell is refused like a move off the grid — the agent stays and gets
`wall_reward`. Tagging is unchanged (sharing the runner's cell). With `view = r > 0`
every observation ends with the agent's `(2r+1)^2` occupancy patch centred on it, row by
row from `(x−r, y−r)`: 1 for a blocked cell or one off the grid, else 0. Generators,
mutators, validation and metrics of such arenas: `arenax.envs.tag.arenas`.

Rules per level (arenax extensions; a level without them plays WarpDrive's rules): a level
may carry `skill (2,)` — the taggers' and the runner's probability that an agent's chosen
move is carried out (otherwise it stays; an independent draw per agent and step) —,
`tag_distance ()` — the runner is tagged when a tagger is within this Manhattan distance
after the move (0: the same cell, WarpDrive's rule) — and `episode_length ()` — the level
is truncated at this step (at most the env's `episode_length`, the static maximum every
rollout is shaped by) and observations give `t` over it. The env's `skill_range`,
`tag_distance_range` and `episode_length_range` make generated levels carry them, drawn
uniformly; a level without a field plays the default (checkpoints of runs without them are
unchanged).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterator
from typing import Annotated, Any

import jax
import jax.numpy as jnp
import numpy as np

from arenax.envs import spaces
from arenax.envs.core import Environment
from arenax.envs.tag.warpdrive import grid_options
from arenax.options import NON_NEGATIVE, POSITIVE, In, Problem, check_on_init
from arenax.selects import select_row
from arenax.struct import pytree_dataclass
from arenax.utils import gathers_are_cheap

NON_POSITIVE = In(-1e9, 0.0)

# stay, +x, -x, +y, -y
MOVES = np.array([[0, 0], [1, 0], [-1, 0], [0, 1], [0, -1]], np.int32)


@pytree_dataclass
class GridTagLevel:
    """An arena: start cells `pos (A, 2) int32` as `(x, y)` (taggers first, the runner
    last) and obstacles `blocked (L+1, L+1) bool` indexed `[y, x]`; optional rules
    (`None`: the default): `skill (2,) float32` (each team's probability that a move is
    carried out; 1), `tag_distance () int32` (0) and `episode_length () int32` (the
    env's)."""

    pos: jax.Array
    blocked: jax.Array
    skill: jax.Array | None = None
    tag_distance: jax.Array | None = None
    episode_length: jax.Array | None = None

    RULES = ("skill", "tag_distance", "episode_length")

    @classmethod
    def open_field(cls, pos: Any, size: int) -> GridTagLevel:
        """Starts `pos` on an arena of cells `0..size` without obstacles."""
        return cls(jnp.asarray(pos, jnp.int32), jnp.zeros((size + 1, size + 1), jnp.bool_))


@pytree_dataclass
class GridTagState:
    pos: jax.Array
    time: jax.Array
    blocked: jax.Array
    skill: jax.Array | None = None
    tag_distance: jax.Array | None = None
    episode_length: jax.Array | None = None


@dataclasses.dataclass(frozen=True)
class GridTagEnv(Environment[GridTagLevel, GridTagState]):
    """Grid Tag with `n_taggers` taggers and one runner (static parameters, checked when
    built)."""

    n_taggers: Annotated[int, POSITIVE] = 10
    """Taggers (there is one runner)."""
    size: Annotated[int, POSITIVE] = 10
    """L: cells are 0..L on both axes."""
    episode_length: Annotated[int, POSITIVE] = 100
    """Steps per episode (T)."""
    partial: bool = False
    """The 6-number partial observation (own and target position, type, t/T) instead of
    everyone's positions."""
    tag_reward: Annotated[float, NON_NEGATIVE] = 10.0
    """Reward of every tagger when the runner is tagged, >= 0 (tag_reward_for_tagger)."""
    tag_penalty: Annotated[float, NON_POSITIVE] = -2.0
    """Reward of the tagged runner, <= 0 (minus WarpDrive's tag_penalty_for_runner)."""
    tagger_step_reward: Annotated[float, NON_POSITIVE] = -0.01
    """Reward of each tagger per step without a tag, <= 0 (-step_cost_for_tagger)."""
    runner_step_reward: Annotated[float, NON_NEGATIVE] = 0.01
    """Reward of the runner per step without a tag, >= 0 (+step_cost_for_tagger)."""
    wall_reward: Annotated[float, NON_POSITIVE] = -0.1
    """Reward of an agent that bumps into the border, <= 0 (-wall_hit_penalty)."""
    random_start: bool = False
    """Generated levels draw every start cell uniformly (an arenax option); False: taggers
    at the centre, the runner in the corner (0, 0), as WarpDrive (starting_location_x/y)."""
    max_obstacles: Annotated[int, NON_NEGATIVE] = 0
    """Generated levels block a uniform number 0..max_obstacles of distinct random cells
    (starts on free cells, drawn uniformly; an arenax option; 0: no obstacles)."""
    view: Annotated[int, In(0, 8)] = 0
    """r: observations end with the agent's (2r+1)^2 occupancy patch (1: blocked or off
    the grid); 0: none (WarpDrive's observations)."""
    skill_range: tuple[float, float] | None = None
    """Generated levels draw each team's skill — the probability that an agent's chosen
    move is carried out (else it stays) — uniformly in [lo, hi] within (0, 1]; None: every
    move is carried out (WarpDrive)."""
    tag_distance_range: tuple[int, int] | None = None
    """Generated levels draw their tagging distance d uniformly in lo..hi: a tagger within
    Manhattan distance d of the runner after the move tags it; None: d = 0, the same cell
    (WarpDrive)."""
    episode_length_range: tuple[int, int] | None = None
    """Generated levels draw their episode length uniformly in lo..hi (hi at most
    episode_length, the static maximum); observations give t over it. None: every level
    lasts episode_length."""

    teams = ("tagger", "runner")
    episode_sums = ("tagged",)
    observes_time = True  # t/T is in every observation
    reset_ignores_key = True

    def __post_init__(self) -> None:
        check_on_init(self, "grid-tag")

    def problems(self) -> Iterator[Problem]:
        cells = (self.size + 1) ** 2
        if self.max_obstacles >= cells:
            yield Problem(
                "max_obstacles",
                self.max_obstacles,
                f"must leave a free cell (below {cells} cells of a size-{self.size} grid)",
            )
        bounds = {
            "skill_range": (0.0, 1.0),
            "tag_distance_range": (0, 2 * self.size),
            "episode_length_range": (1, self.episode_length),
        }
        for name, (lo, hi) in bounds.items():
            r = getattr(self, name)
            if r is not None and not (
                lo <= r[0] <= r[1] <= hi and (name != "skill_range" or r[0] > 0)
            ):
                low = "0 < lo" if name == "skill_range" else f"{lo} <= lo"
                yield Problem(name, r, f"must be {low} <= hi <= {hi}")

    @property
    def rules(self) -> tuple[str, ...]:
        """The level fields this env's generated levels carry (`GridTagLevel.RULES`)."""
        ranges = (self.skill_range, self.tag_distance_range, self.episode_length_range)
        return tuple(f for f, r in zip(GridTagLevel.RULES, ranges, strict=True) if r is not None)

    def draw_rules(self, key: jax.Array, level: GridTagLevel) -> GridTagLevel:
        """`level` with the rules of `rules` drawn uniformly from their ranges."""
        k_skill, k_dist, k_len = jax.random.split(key, 3)
        out: dict[str, jax.Array] = {}
        if self.skill_range is not None:
            lo, hi = self.skill_range
            out["skill"] = jax.random.uniform(k_skill, (2,), jnp.float32, lo, hi)
        if self.tag_distance_range is not None:
            lo, hi = self.tag_distance_range
            out["tag_distance"] = jax.random.randint(k_dist, (), lo, hi + 1, jnp.int32)
        if self.episode_length_range is not None:
            lo, hi = self.episode_length_range
            out["episode_length"] = jax.random.randint(k_len, (), lo, hi + 1, jnp.int32)
        return level.replace(**out)

    def with_default_rules(self, level: GridTagLevel) -> GridTagLevel:
        """`level` with every rule of `rules` it lacks at its default (the levels a
        teacher or a held-out suite builds, made alike to generated ones)."""
        default = {
            "skill": jnp.ones(2, jnp.float32),
            "tag_distance": jnp.zeros((), jnp.int32),
            "episode_length": jnp.asarray(self.episode_length, jnp.int32),
        }
        return level.replace(**{f: default[f] for f in self.rules if getattr(level, f) is None})

    @classmethod
    def from_warpdrive(cls, **kwargs: Any) -> GridTagEnv:
        """The env of a WarpDrive `TagGridWorld(**kwargs)` (its parameter names and sign
        conventions; start locations belong to levels, `seed` and `env_backend` to
        nothing)."""
        return cls(**grid_options(**kwargs))

    @property
    def n_agents(self) -> int:
        return self.n_taggers + 1

    @property
    def obs_size(self) -> int:
        patch = (2 * self.view + 1) ** 2 if self.view else 0
        return (6 if self.partial else 4 * self.n_agents + 1) + patch

    def num_agents(self, team: str) -> int:
        return {"tagger": self.n_taggers, "runner": 1}[team]

    def observation_space(self, team: str = "tagger") -> spaces.Box:
        return spaces.Box(-1.0, 1.0, (self.obs_size,), jnp.float32)

    def action_space(self, team: str = "tagger") -> spaces.Discrete:
        return spaces.Discrete(len(MOVES))

    def generate(self, key: jax.Array) -> GridTagLevel:
        n = self.size + 1
        if self.rules:
            key, k_rules = jax.random.split(key)
            return self.draw_rules(k_rules, self._layout(key, n))
        return self._layout(key, n)

    def _layout(self, key: jax.Array, n: int) -> GridTagLevel:
        if self.max_obstacles:
            k_obs, k_pos = jax.random.split(key)
            blocked = random_obstacles(k_obs, n, self.max_obstacles)
            return GridTagLevel(pos=random_starts(k_pos, blocked, self.n_agents), blocked=blocked)
        if self.random_start:
            pos = jax.random.randint(key, (self.n_agents, 2), 0, n, jnp.int32)
        else:
            centre = jnp.full((self.n_taggers, 2), self.size // 2, jnp.int32)
            pos = jnp.concatenate([centre, jnp.zeros((1, 2), jnp.int32)])
        return GridTagLevel(pos=pos, blocked=jnp.zeros((n, n), jnp.bool_))

    def reset_state(self, key: jax.Array, level: GridTagLevel) -> GridTagState:
        del key

        def cast(x: jax.Array | None, dtype: Any) -> jax.Array | None:
            return None if x is None else jnp.asarray(x, dtype)

        return GridTagState(
            pos=jnp.asarray(level.pos, jnp.int32),
            time=jnp.zeros((), jnp.int32),
            blocked=jnp.asarray(level.blocked, jnp.bool_),
            skill=cast(level.skill, jnp.float32),
            tag_distance=cast(level.tag_distance, jnp.int32),
            episode_length=cast(level.episode_length, jnp.int32),
        )

    def horizon(self, state: GridTagState) -> jax.Array | int:
        """The step at which `state`'s episode is truncated (its level's, else T)."""
        return self.episode_length if state.episode_length is None else state.episode_length

    def step_state(
        self,
        key: jax.Array,
        state: GridTagState,
        action: dict[str, jax.Array],
        obstacles: bool = True,
    ) -> tuple[GridTagState, dict[str, jax.Array], jax.Array, jax.Array, dict[str, Any]]:
        """One step; `obstacles=False` skips the blocked-cell check (its numbers when no
        cell is blocked)."""
        act = jnp.concatenate([action["tagger"], action["runner"]]).reshape(-1).astype(jnp.int32)
        if state.skill is not None:  # a move is carried out with its team's probability
            skill = jnp.concatenate(
                [jnp.broadcast_to(state.skill[0], (self.n_taggers,)), state.skill[1:]]
            )
            act = jnp.where(jax.random.uniform(key, (self.n_agents,)) < skill, act, 0)
        target = state.pos + move_vectors(act)
        pos = jnp.clip(target, 0, self.size)
        if obstacles:  # a blocked cell refuses the move as the border does
            pos = jnp.where(state.blocked[pos[:, 1], pos[:, 0]][:, None], state.pos, pos)
        hit_wall = jnp.any(pos != target, axis=-1)
        runner = pos[-1]
        if state.tag_distance is None:
            tagged = jnp.any(jnp.all(pos[:-1] == runner, axis=-1))
        else:
            tagged = jnp.any(jnp.sum(jnp.abs(pos[:-1] - runner), axis=-1) <= state.tag_distance)
        time = state.time + 1
        r_tagger = jnp.where(tagged, self.tag_reward, self.tagger_step_reward)
        r_runner = jnp.where(tagged, self.tag_penalty, self.runner_step_reward)
        wall = jnp.where(hit_wall, self.wall_reward, 0.0)
        reward = {
            "tagger": (jnp.full((self.n_taggers,), r_tagger) + wall[:-1]).astype(jnp.float32),
            "runner": (r_runner + wall[-1:]).astype(jnp.float32),
        }
        info = {"tagged": tagged.astype(jnp.int32)}
        new = state.replace(pos=pos, time=time)
        return new, reward, tagged, time >= self.horizon(state), info

    def step_states(
        self, keys: jax.Array, states: GridTagState, actions: dict[str, jax.Array]
    ) -> tuple[GridTagState, dict[str, jax.Array], jax.Array, jax.Array, dict[str, Any]]:
        """`vmap(step_state)`; off the CPU, a batch without a blocked cell (WarpDrive's game)
        skips the blocked-cell lookup, a gather per agent that a TPU does one after
        another."""
        if gathers_are_cheap():
            return jax.vmap(self.step_state)(keys, states, actions)

        def batch(obstacles: bool) -> Any:
            return jax.vmap(functools.partial(self.step_state, obstacles=obstacles))(
                keys, states, actions
            )

        return jax.lax.cond(jnp.any(states.blocked), lambda: batch(True), lambda: batch(False))

    def global_state(self, state: GridTagState) -> jax.Array:
        """Every agent's cell `x / L, y / L` (taggers, then the runner), then `t / T`:
        `(2 A + 1,) float32` (an arena's obstacles are not in it)."""
        p = state.pos.astype(jnp.float32) / float(self.size)
        time = state.time.astype(jnp.float32) / self.horizon(state)
        return jnp.concatenate([p.reshape(-1), time[None]])

    def observe(self, state: GridTagState) -> dict[str, jax.Array]:
        a, size = self.n_agents, float(self.size)
        p = state.pos.astype(jnp.float32) / size
        t = state.time.astype(jnp.float32) / self.horizon(state)
        is_runner = (jnp.arange(a) >= self.n_taggers).astype(jnp.float32)  # WarpDrive's types
        if self.partial:
            diff = state.pos[:-1] - state.pos[-1]
            d = jnp.sum(diff * diff, axis=-1)  # squared Euclidean, first index on ties
            nearest = select_row(p, jnp.argmin(d))
            targets = jnp.concatenate([jnp.broadcast_to(p[-1], (a - 1, 2)), nearest[None]])
            obs = jnp.concatenate([p, targets, is_runner[:, None], jnp.full((a, 1), t)], axis=-1)
        else:
            shared = jnp.concatenate([p[:, 0], p[:, 1], is_runner])
            obs = jnp.concatenate(
                [jnp.broadcast_to(shared, (a, 3 * a)), jnp.eye(a), jnp.full((a, 1), t)], axis=-1
            )
        if self.view:
            obs = jnp.concatenate([obs, self.patches(state)], axis=-1)
        obs = obs.astype(jnp.float32)
        return {"tagger": obs[:-1], "runner": obs[-1:]}

    def patches(self, state: GridTagState) -> jax.Array:
        """`(A, (2r+1)^2) float32`: each agent's occupancy patch (1: blocked or off the
        grid), rows from `y − r` to `y + r`, each from `x − r` to `x + r`."""
        r = self.view
        padded = jnp.pad(state.blocked, r, constant_values=True)
        d = jnp.arange(-r, r + 1)
        ys = state.pos[:, 1, None, None] + d[None, :, None] + r
        xs = state.pos[:, 0, None, None] + d[None, None, :] + r
        return padded[ys, xs].reshape(self.n_agents, -1).astype(jnp.float32)


def move_vectors(act: jax.Array) -> jax.Array:
    """`MOVES[act]` by selects: `(A,) int32` actions -> `(A, 2) int32` moves (a table
    lookup is a gather per agent)."""
    dx = jnp.where(act == 1, 1, jnp.where(act == 2, -1, 0))
    dy = jnp.where(act == 3, 1, jnp.where(act == 4, -1, 0))
    return jnp.stack([dx, dy], axis=-1).astype(jnp.int32)


# ------------------------------------------------------------------ arena building blocks
def random_obstacles(key: jax.Array, n: int, max_obstacles: int) -> jax.Array:
    """`(n, n) bool`: a uniform number `0..max_obstacles` of distinct random cells."""
    k_count, k_cells = jax.random.split(key)
    count = jax.random.randint(k_count, (), 0, max_obstacles + 1)
    rank = jnp.argsort(jnp.argsort(jax.random.uniform(k_cells, (n * n,))))
    return (rank < count).reshape(n, n)


def random_starts(key: jax.Array, blocked: jax.Array, n_agents: int) -> jax.Array:
    """`(n_agents, 2) int32` start cells `(x, y)`, each uniform over the free cells."""
    n = blocked.shape[0]
    logits = jnp.where(blocked.reshape(-1), -jnp.inf, 0.0)
    cell = jax.random.categorical(key, logits, shape=(n_agents,))
    return jnp.stack([cell % n, cell // n], axis=-1).astype(jnp.int32)
