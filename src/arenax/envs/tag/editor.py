"""The editor (teacher) MDP for grid Tag arenas: a teacher builds an arena one cell per step,
as PAIRED's teacher builds a maze (:mod:`arenax.envs.maze.editor`).

Steps ``0 .. n_walls-1`` block the chosen cell (choosing a blocked cell again changes
nothing), the next ``n_taggers`` steps place the taggers' starts and the last step the
runner's. Agents may share a start cell, as the generators' random starts may. A start
chosen on an obstacle (``collisions``):

* ``"keep"`` (default, the maze editor's rule): the start stays where the teacher chose and
  the obstacle there is removed;
* ``"redirect"``: the start moves to a uniformly random free cell (the obstacles stay).

Either way every finished episode decodes to a valid arena (:func:`validate_level`; at least
one free cell remains because ``n_walls <= (L+1)² - 1``). The teacher's reward is 0 on every
step: curricula put the regret on the last step.

Observation of team ``"teacher"`` (one agent): the arena as an image ``(1, L+1, L+1, 3)
uint8`` indexed ``[y, x]`` — channel 0: 2 on an obstacle (MiniGrid's wall index), channel
1: the number of taggers starting on the cell, channel 2: 1 where the runner starts — the
step count ``(1,) int32`` and a fresh uniform noise vector ``(1, noise_dim) float32`` per
step. Action: a cell index ``y * (L+1) + x``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Annotated, Any

import jax
import jax.numpy as jnp

from arenax.envs import spaces
from arenax.envs.core import Environment
from arenax.envs.maze.editor import EditorObs, EditorOptions
from arenax.envs.tag.grid import GridTagLevel
from arenax.options import POSITIVE, Problem, check_on_init
from arenax.struct import pytree_dataclass


@pytree_dataclass
class ArenaEditorState:
    """The arena under construction: ``blocked (L+1, L+1) bool`` ``[y, x]``, starts
    ``pos (A, 2) int32`` ``(x, y)`` (``-1`` until placed, taggers first), ``time () int32``,
    ``noise (noise_dim,) float32``."""

    blocked: jax.Array
    pos: jax.Array
    time: jax.Array
    noise: jax.Array


@dataclasses.dataclass(frozen=True)
class ArenaEditor(EditorOptions, Environment[None, ArenaEditorState]):
    """The level-building MDP for grid Tag arenas of cells ``0..size`` with ``n_taggers``
    taggers and one runner (checked when built). ``n_walls`` is the obstacle budget."""

    size: Annotated[int, POSITIVE] = 14
    """L: the arenas' cells are 0..L on both axes."""
    n_taggers: Annotated[int, POSITIVE] = 4
    """Taggers placed (then one runner)."""

    teams = ("teacher",)

    def __post_init__(self) -> None:
        check_on_init(self, "arena-editor")

    def problems(self) -> Iterator[Problem]:
        """At least one cell stays free: ``n_walls <= (size + 1)² - 1``."""
        cells = (self.size + 1) ** 2 - 1
        if isinstance(self.n_walls, int) and not 0 <= self.n_walls <= cells:
            yield Problem("n_walls", self.n_walls, f"must be in [0, {cells}] ((size+1)² - 1)")

    @property
    def n_agents(self) -> int:
        return self.n_taggers + 1

    @property
    def episode_length(self) -> int:
        """Steps of one editing episode: ``n_walls + n_taggers + 1``."""
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
            start = jnp.where(free[cell], cell, jax.random.categorical(
                k_cell, jnp.where(free, 0.0, -jnp.inf)).astype(jnp.int32))  # fmt: skip
            blocked = jnp.where(placing, blocked, blocked.at[cell].set(True))
        agent = jnp.clip(t - self.n_walls, 0, self.n_agents - 1)
        xy = jnp.stack([start % n, start // n]).astype(jnp.int32)
        pos = jnp.where(placing, state.pos.at[agent].set(xy), state.pos)
        new = ArenaEditorState(
            blocked=blocked.reshape(n, n), pos=pos, time=t + 1,
            noise=jax.random.uniform(k_noise, (self.noise_dim,)),
        )  # fmt: skip
        done = new.time >= self.episode_length
        reward = {"teacher": jnp.zeros((1,), jnp.float32)}
        return new, reward, done, jnp.zeros((), jnp.bool_), {}

    def image(self, state: ArenaEditorState) -> jax.Array:
        """``(L+1, L+1, 3) uint8`` (see the module docstring)."""
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
