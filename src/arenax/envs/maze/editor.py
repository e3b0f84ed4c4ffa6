"""The editor (teacher) MDP of PAIRED: a teacher builds a maze one cell per step.

Steps `0 .. n_walls-1` place a wall at the chosen interior cell (choosing a wall again
changes nothing), step `n_walls` places the goal and step `n_walls + 1` the agent, with
a uniformly random direction. Collisions (`collisions`):

* `"keep"` (the reference UED library's rule, default): the goal and the agent go where
  the teacher chose; a wall there is removed. Only an agent chosen on the goal is moved, to
  a uniformly random free cell.
* `"redirect"`: a goal chosen on a wall, or an agent chosen on a wall or the goal, is
  moved to a uniformly random free cell (the walls stay as built).

Either way every finished episode decodes to a valid level (`n_walls <= H * W - 2`
guarantees free cells). The teacher's reward is 0 on every step: curricula put the regret
on the last step.

Observation of team `"teacher"` (one agent): the full map with border in MiniGrid
encoding `(1, H+2, W+2, 3) uint8`, the step count `(1,) int32` and a fresh uniform noise
vector `(1, noise_dim) float32` per step. Action: one interior cell index `y * W + x`.
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
from arenax.envs.maze.env import full_map
from arenax.envs.maze.generators import sample_cell
from arenax.envs.maze.level import MazeLevel
from arenax.options import POSITIVE, Problem, check_on_init
from arenax.struct import pytree_dataclass


@pytree_dataclass
class EditorState:
    """The level under construction (goal/agent at `(-1, -1)` until placed).

    Attributes:
        walls: `(H, W) bool`; goal_pos, agent_pos: `(2,) int32`; agent_dir, time:
        `() int32`; noise: `(noise_dim,) float32`.
    """

    walls: jax.Array
    goal_pos: jax.Array
    agent_pos: jax.Array
    agent_dir: jax.Array
    time: jax.Array
    noise: jax.Array


@dataclasses.dataclass(frozen=True)
class MazeEditor(EditorOptions, Environment[None, EditorState]):
    """PAIRED's level-building MDP for mazes of `height x width` (checked when built)."""

    height: Annotated[int, POSITIVE] = 13
    """Interior rows of the levels built."""
    width: Annotated[int, POSITIVE] = 13
    """Interior columns of the levels built."""

    teams = ("teacher",)

    def __post_init__(self) -> None:
        check_on_init(self, "maze-editor")

    def problems(self) -> Iterator[Problem]:
        """`n_walls <= height * width - 2` leaves room for the goal and the agent."""
        cells = self.height * self.width - 2
        if isinstance(self.n_walls, int) and not 0 <= self.n_walls <= cells:
            yield Problem("n_walls", self.n_walls, f"must be in [0, {cells}] (height*width - 2)")

    @property
    def episode_length(self) -> int:
        """Steps of one editing episode: `n_walls + 2`."""
        return self.n_walls + 2

    def observation_space(self, team: str = "teacher") -> spaces.Dict:
        return spaces.Dict(
            (
                ("image", spaces.Box(0, 10, (self.height + 2, self.width + 2, 3), jnp.uint8)),
                ("time", spaces.Discrete(self.episode_length + 1)),  # 0 .. episode_length
                ("noise", spaces.Box(0.0, 1.0, (self.noise_dim,))),
            )
        )

    def action_space(self, team: str = "teacher") -> spaces.Discrete:
        return spaces.Discrete(self.height * self.width)

    def reset_state(self, key: jax.Array, level: Any = None) -> EditorState:
        del level
        off = jnp.full((2,), -1, jnp.int32)
        return EditorState(
            walls=jnp.zeros((self.height, self.width), jnp.bool_),
            goal_pos=off,
            agent_pos=off,
            agent_dir=jnp.zeros((), jnp.int32),
            time=jnp.zeros((), jnp.int32),
            noise=jax.random.uniform(key, (self.noise_dim,)),
        )

    def step_state(self, key: jax.Array, state: EditorState, action: Any) -> Any:
        w = self.width
        cell = jnp.asarray(action["teacher"]).reshape(()).astype(jnp.int32)
        k_goal, k_agent, k_dir, k_noise = jax.random.split(key, 4)
        walls = state.walls.reshape(-1)
        t = state.time
        # walls
        walls = jnp.where(t < self.n_walls, walls.at[cell].set(True), walls)
        goal_step, last = t == self.n_walls, t == self.n_walls + 1
        g_flat = state.goal_pos[1] * w + state.goal_pos[0]
        if self.collisions == "keep":  # the chosen cells; walls under them are removed
            goal = cell
            on_goal = last & (cell == g_flat)
            allowed = (~walls).at[g_flat].set(False)
            agent = jnp.where(on_goal, sample_cell(k_agent, allowed), cell)
            walls = jnp.where(
                goal_step | last, walls.at[jnp.where(on_goal, agent, cell)].set(False), walls
            )
        else:  # redirect: the chosen cell if free, else a random free cell
            goal = jnp.where(walls[cell], sample_cell(k_goal, ~walls), cell)
            allowed = (~walls).at[g_flat].set(False)
            agent = jnp.where(allowed[cell], cell, sample_cell(k_agent, allowed))
        goal_xy = jnp.stack([goal % w, goal // w]).astype(jnp.int32)
        goal_pos = jnp.where(goal_step, goal_xy, state.goal_pos)
        agent_xy = jnp.stack([agent % w, agent // w]).astype(jnp.int32)
        new = EditorState(
            walls=walls.reshape(self.height, self.width),
            goal_pos=goal_pos,
            agent_pos=jnp.where(last, agent_xy, state.agent_pos),
            agent_dir=jnp.where(last, jax.random.randint(k_dir, (), 0, 4), state.agent_dir),
            time=t + 1,
            noise=jax.random.uniform(k_noise, (self.noise_dim,)),
        )
        done = new.time >= self.episode_length
        reward = {"teacher": jnp.zeros((1,), jnp.float32)}
        return new, reward, done, jnp.zeros((), jnp.bool_), {}

    def observe(self, state: EditorState) -> dict[str, EditorObs]:
        image = full_map(state.walls, state.goal_pos, state.agent_pos, state.agent_dir)
        return {
            "teacher": EditorObs(image=image[None], time=state.time[None], noise=state.noise[None])
        }

    def decode(self, state: EditorState) -> MazeLevel:
        """The level built by a finished editing episode."""
        return MazeLevel(
            walls=state.walls,
            agent_pos=state.agent_pos,
            agent_dir=state.agent_dir.astype(jnp.int32),
            goal_pos=state.goal_pos,
        )
