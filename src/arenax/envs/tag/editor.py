"""The editor (teacher) MDP for grid Tag arenas: a teacher builds an arena one cell per step,
as PAIRED's teacher builds a maze (`arenax.envs.maze.editor`).

Steps `0 .. n_walls-1` block the chosen cell (choosing a blocked cell again changes
nothing), the next `n_taggers` steps place the taggers' starts and the last step the
runner's. Agents may share a start cell, as the generators' random starts may. A start
chosen on an obstacle (`collisions`):

* `"keep"` (default, the maze editor's rule): the start stays where the teacher chose and
  the obstacle there is removed;
* `"redirect"`: the start moves to a uniformly random free cell (the obstacles stay).

Either way every finished episode decodes to a valid arena (`validate_level`; at least
one free cell remains because `n_walls <= (L+1)² - 1`). The teacher's reward is 0 on every
step: curricula put the regret on the last step.

Observation of team `"teacher"` (one agent): the arena as an image `(1, L+1, L+1, 3)
uint8` indexed `[y, x]` — channel 0: 2 on an obstacle (MiniGrid's wall index), channel
1: the number of taggers starting on the cell, channel 2: 1 where the runner starts — the
step count `(1,) int32` and a fresh uniform noise vector `(1, noise_dim) float32` per
step. Action: a cell index `y * (L+1) + x`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Annotated, Any

import jax
import jax.numpy as jnp

from arenax.envs import spaces
from arenax.envs.core import Environment
from arenax.envs.editor import EditorObs, EditorOptions
from arenax.envs.tag.grid import GridTagLevel
from arenax.options import POSITIVE, Problem, check_on_init
from arenax.struct import pytree_dataclass


@pytree_dataclass
class ArenaEditorState:
    """The arena under construction: `blocked (L+1, L+1) bool` `[y, x]`, starts
    `pos (A, 2) int32` `(x, y)` (`-1` until placed, taggers first), `time () int32`,
    `noise (noise_dim,) float32`."""

    blocked: jax.Array
    pos: jax.Array
    time: jax.Array
    noise: jax.Array


@dataclasses.dataclass(frozen=True)
class ArenaEditor(EditorOptions, Environment[None, ArenaEditorState]):
    """The level-building MDP for grid Tag arenas of cells `0..size` with `n_taggers`
    taggers and one runner (checked when built). `n_walls` is the obstacle budget."""

    size: Annotated[int, POSITIVE] = 14
    """L: the arenas' cells are 0..L on both axes."""
    n_taggers: Annotated[int, POSITIVE] = 4
    """Taggers placed (then one runner)."""

    teams = ("teacher",)

    def __post_init__(self) -> None:
        check_on_init(self, "arena-editor")

    def problems(self) -> Iterator[Problem]:
        """At least one cell stays free: `n_walls <= (size + 1)² - 1`."""
        cells = (self.size + 1) ** 2 - 1
        if isinstance(self.n_walls, int) and not 0 <= self.n_walls <= cells:
            yield Problem("n_walls", self.n_walls, f"must be in [0, {cells}] ((size+1)² - 1)")

    @property
    def n_agents(self) -> int:
        return self.n_taggers + 1

    @property
    def episode_length(self) -> int:
        """Steps of one editing episode: `n_walls + n_taggers + 1`."""
        return self.n_walls + self.n_agents

    def observation_space(self, team: str = "teacher") -> spaces.Dict:
        n = self.size + 1
        return spaces.Dict(
            (
                ("image", spaces.Box(0, max(self.n_taggers, 2), (n, n, 3), jnp.uint8)),
                ("time", spaces.Discrete(self.episode_length + 1)),
                ("noise", spaces.Box(0.0, 1.0, (self.noise_dim,))),
            )
        )

    def action_space(self, team: str = "teacher") -> spaces.Discrete:
        return spaces.Discrete((self.size + 1) ** 2)

    def reset_state(self, key: jax.Array, level: Any = None) -> ArenaEditorState:
        del level
        n = self.size + 1
        return ArenaEditorState(
            blocked=jnp.zeros((n, n), jnp.bool_),
            pos=jnp.full((self.n_agents, 2), -1, jnp.int32),
            time=jnp.zeros((), jnp.int32),
            noise=jax.random.uniform(key, (self.noise_dim,)),
        )

    def step_state(self, key: jax.Array, state: ArenaEditorState, action: Any) -> Any:
        n = self.size + 1
        cell = jnp.asarray(action["teacher"]).reshape(()).astype(jnp.int32)
        k_cell, k_noise = jax.random.split(key)
        blocked = state.blocked.reshape(-1)
        t = state.time
        placing = t >= self.n_walls  # a start, else an obstacle
        if self.collisions == "keep":  # the chosen cell; an obstacle there is removed
            start = cell
            blocked = jnp.where(placing, blocked.at[cell].set(False), blocked.at[cell].set(True))
        else:  # redirect: the chosen cell if free, else a random free cell
            free = ~blocked
            start = jnp.where(
                free[cell],
                cell,
                jax.random.categorical(k_cell, jnp.where(free, 0.0, -jnp.inf)).astype(jnp.int32),
            )
            blocked = jnp.where(placing, blocked, blocked.at[cell].set(True))
        agent = jnp.clip(t - self.n_walls, 0, self.n_agents - 1)
        xy = jnp.stack([start % n, start // n]).astype(jnp.int32)
        pos = jnp.where(placing, state.pos.at[agent].set(xy), state.pos)
        new = ArenaEditorState(
            blocked=blocked.reshape(n, n),
            pos=pos,
            time=t + 1,
            noise=jax.random.uniform(k_noise, (self.noise_dim,)),
        )
        done = new.time >= self.episode_length
        reward = {"teacher": jnp.zeros((1,), jnp.float32)}
        return new, reward, done, jnp.zeros((), jnp.bool_), {}

    def image(self, state: ArenaEditorState) -> jax.Array:
        """`(L+1, L+1, 3) uint8` (see the module docstring)."""
        n = self.size + 1
        placed = state.pos[:, 0] >= 0
        flat = jnp.where(placed, state.pos[:, 1] * n + state.pos[:, 0], n * n)  # n*n: dropped
        taggers = jnp.zeros(n * n + 1, jnp.int32).at[flat[:-1]].add(1)[:-1]
        runner = jnp.zeros(n * n + 1, jnp.int32).at[flat[-1]].set(1)[:-1]
        channels = [state.blocked.reshape(-1) * 2, taggers, runner]
        return jnp.stack(channels, axis=-1).reshape(n, n, 3).astype(jnp.uint8)

    def observe(self, state: ArenaEditorState) -> dict[str, EditorObs]:
        return {
            "teacher": EditorObs(
                image=self.image(state)[None], time=state.time[None], noise=state.noise[None]
            )
        }

    def decode(self, state: ArenaEditorState) -> GridTagLevel:
        """The arena built by a finished editing episode."""
        return GridTagLevel(pos=state.pos, blocked=state.blocked)


# ---------------------------------------------------------------------- continuous arenas
@pytree_dataclass
class DiscEditorState:
    """A continuous arena under construction: `discs (M, 3) float32` (unused slots 0),
    starts `pos (A, 2) float32` and `direction (A,) float32` (drawn when their team is
    placed), `time () int32`, `noise (noise_dim,) float32`."""

    discs: jax.Array
    pos: jax.Array
    direction: jax.Array
    time: jax.Array
    noise: jax.Array


@dataclasses.dataclass(frozen=True)
class DiscArenaEditor(EditorOptions, Environment[None, DiscEditorState]):
    """The level-building MDP for continuous Tag arenas of `game` (checked when built).

    The teacher works on a `canvas × canvas` grid over the arena `[0, L]²`. Steps `0 ..
    n_walls-1` place a disc of radius `obstacle_radius[1] · L` (the generators' largest)
    centred on the chosen cell (moved inward where it would cross the edge; discs may
    overlap); step `n_walls` chooses the taggers' start cell, the last step the runners':
    the team's agents start uniformly in that cell's square outside every disc, facing one of
    the four axes. An agent that finds no free point there (16 draws) starts uniformly over
    the free arena (the `redirect` rule; discs are never removed, so `collisions` has no
    effect here). Every finished episode decodes to a valid arena
    (`validate_level`) with the game's skills, tagging
    distance and (if its levels carry one) full episode length. Reward 0 on every step.

    Observation of team `"teacher"`: the canvas as an image `(1, canvas, canvas, 3)
    uint8` indexed `[y, x]` — channel 0: 2 where the cell's centre lies inside a disc,
    channel 1: the taggers starting in the cell, channel 2: the runners (each clipped at 255)
    — the step count `(1,) int32` and a fresh uniform noise vector. Action: a cell index
    `y * canvas + x`.
    """

    game: Any = None
    """The continuous Tag game (a `TagEnv` with
    `max_obstacles >= n_walls`)."""
    canvas: Annotated[int, POSITIVE] = 16
    """Cells per side of the teacher's grid over the arena."""

    teams = ("teacher",)

    def __post_init__(self) -> None:
        check_on_init(self, "disc-arena-editor")

    def problems(self) -> Iterator[Problem]:
        m = getattr(self.game, "max_obstacles", None)
        if m is None:
            yield Problem(
                "game", type(self.game).__name__, "must be a continuous Tag game (TagEnv)"
            )
        elif isinstance(self.n_walls, int) and not 0 <= self.n_walls <= m:
            yield Problem(
                "n_walls", self.n_walls, f"must be in [0, {m}] (the game's max_obstacles)"
            )

    @property
    def episode_length(self) -> int:
        """Steps of one editing episode: `n_walls + 2` (discs, taggers, runners)."""
        return self.n_walls + 2

    def observation_space(self, team: str = "teacher") -> spaces.Dict:
        g = self.canvas
        return spaces.Dict(
            (
                ("image", spaces.Box(0, 255, (g, g, 3), jnp.uint8)),
                ("time", spaces.Discrete(self.episode_length + 1)),
                ("noise", spaces.Box(0.0, 1.0, (self.noise_dim,))),
            )
        )

    def action_space(self, team: str = "teacher") -> spaces.Discrete:
        return spaces.Discrete(self.canvas**2)

    def reset_state(self, key: jax.Array, level: Any = None) -> DiscEditorState:
        del level
        a = self.game.n_agents
        return DiscEditorState(
            discs=jnp.zeros((self.game.max_obstacles, 3), jnp.float32),
            pos=jnp.zeros((a, 2), jnp.float32),
            direction=jnp.zeros((a,), jnp.float32),
            time=jnp.zeros((), jnp.int32),
            noise=jax.random.uniform(key, (self.noise_dim,)),
        )

    def step_state(self, key: jax.Array, state: DiscEditorState, action: Any) -> Any:
        from arenax.envs.tag.obstacles import free_positions

        g, L, nt = self.canvas, self.game.arena, self.game.n_taggers
        cell = jnp.asarray(action["teacher"]).reshape(()).astype(jnp.int32)
        k_in, k_any, k_dir, k_noise = jax.random.split(key, 4)
        x0 = (cell % g).astype(jnp.float32) * (L / g)
        y0 = (cell // g).astype(jnp.float32) * (L / g)
        t = state.time
        # a disc centred on the cell, moved inward to lie inside the arena (with a margin
        # of 1e-5 r, so that float32 rounding keeps it inside)
        r = jnp.float32(self.game.obstacle_radius[1] * L)
        inset = r * jnp.float32(1 + 1e-5)
        centre = jnp.clip(jnp.stack([x0, y0]) + 0.5 * L / g, inset, L - inset)
        slot = jnp.clip(t, 0, self.game.max_obstacles - 1) if self.game.max_obstacles else 0
        disc = jnp.concatenate([centre, r[None]])
        discs = state.discs
        if self.game.max_obstacles:
            discs = jnp.where(t < self.n_walls, discs.at[slot].set(disc), discs)
        # a team's starts: uniform in the cell outside the discs, else over the free arena
        a = self.game.n_agents
        lo = jnp.stack([x0, y0])
        inside = free_positions(k_in, a, discs, lo, lo + L / g)
        anywhere = free_positions(k_any, a, discs, 0.0, L, tries=64)
        found = ~jnp.all(inside == 0.0, axis=-1) | jnp.all(lo == 0.0)  # (0, 0): the fallback
        starts = jnp.where(found[:, None], inside, anywhere)
        team = jnp.arange(a) < nt
        placing = jnp.where(t == self.n_walls, team, (t == self.n_walls + 1) & ~team)
        axes = jax.random.randint(k_dir, (a,), 0, 4).astype(jnp.float32)
        new = DiscEditorState(
            discs=discs,
            pos=jnp.where(placing[:, None], starts, state.pos),
            direction=jnp.where(placing, axes * jnp.float32(jnp.pi / 2), state.direction),
            time=t + 1,
            noise=jax.random.uniform(k_noise, (self.noise_dim,)),
        )
        done = new.time >= self.episode_length
        reward = {"teacher": jnp.zeros((1,), jnp.float32)}
        return new, reward, done, jnp.zeros((), jnp.bool_), {}

    def observe(self, state: DiscEditorState) -> dict[str, EditorObs]:
        return {
            "teacher": EditorObs(
                image=self.image(state)[None], time=state.time[None], noise=state.noise[None]
            )
        }

    def image(self, state: DiscEditorState) -> jax.Array:
        """`(canvas, canvas, 3) uint8` (see the class docstring)."""
        g, L, nt = self.canvas, self.game.arena, self.game.n_taggers
        centres = (jnp.arange(g, dtype=jnp.float32) + 0.5) * (L / g)
        d = state.discs
        cx, cy = centres[None, :, None], centres[:, None, None]
        covered = jnp.any((cx - d[:, 0]) ** 2 + (cy - d[:, 1]) ** 2 < d[:, 2] ** 2, axis=-1)
        cell = jnp.clip((state.pos / L * g).astype(jnp.int32), 0, g - 1)
        flat = cell[:, 1] * g + cell[:, 0]
        placed_t = state.time > self.n_walls
        placed_r = state.time > self.n_walls + 1
        taggers = jnp.zeros(g * g, jnp.int32).at[flat[:nt]].add(placed_t.astype(jnp.int32))
        runners = jnp.zeros(g * g, jnp.int32).at[flat[nt:]].add(placed_r.astype(jnp.int32))
        channels = [covered.reshape(-1) * 2, taggers, runners]
        return jnp.clip(jnp.stack(channels, axis=-1), 0, 255).reshape(g, g, 3).astype(jnp.uint8)

    def decode(self, state: DiscEditorState) -> Any:
        """The arena built by a finished editing episode (a `TagLevel` of `game`)."""
        from arenax.envs.tag.continuous import TagLevel

        game = self.game
        level = TagLevel(
            pos=state.pos,
            direction=state.direction,
            skill=jnp.asarray([game.skill_tagger, game.skill_runner], jnp.float32),
            arena=jnp.float32(game.arena),
            tag_margin=jnp.float32(game.tag_margin),
            obstacles=state.discs if game.max_obstacles else None,
        )
        return game.with_default_rules(level)
