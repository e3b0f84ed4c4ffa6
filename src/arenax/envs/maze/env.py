"""The MiniGrid-faithful partially observable maze.

Facts reproduced from MiniGrid (checked against the real package in
`tests/conformance/test_maze_minigrid_conformance.py`):

* egocentric `view_size x view_size` view, agent at the bottom centre looking "up" the
  image; MiniGrid's 3-channel encoding (object, colour, state): empty `(1, 0, 0)`,
  wall `(2, 5, 0)`, goal `(8, 1, 0)`; walls are see-through; cells beyond the grid
  read as wall; the agent's own cell reads as empty;
* 7 actions (left, right, forward, pickup, drop, toggle, done); only the first three act;
  every action consumes a step;
* forward into the goal succeeds with reward `1 - 0.9 * step_count / max_steps`
  (`step_count` counts this step), `terminated`; `truncated` once
  `step_count >= max_steps` (both can hold on the same step, as in MiniGrid).

Layout: our images are row-major `[row, col, channel]` (row 0 is farthest ahead);
MiniGrid's `obs["image"]` is `[col, row, channel]`, i.e. ours is its transpose
`(1, 0, 2)`. One deliberate difference: the agent never stands on the goal (MiniGrid
moves it there on the terminating step), so only the observation returned *with*
`terminated` differs; it is never used for learning (no bootstrap through termination).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from enum import IntEnum
from typing import Annotated, Any

import jax
import jax.numpy as jnp
import numpy as np

from arenax.envs import spaces
from arenax.envs.core import Environment
from arenax.envs.maze.generators import sample_dr_level
from arenax.envs.maze.level import MazeLevel, validate_level
from arenax.options import POSITIVE, Problem, check_on_init
from arenax.struct import pytree_dataclass, static_field
from arenax.utils import gathers_are_cheap

# MiniGrid's (object, colour, state) codes used by the maze.
EMPTY = (1, 0, 0)
WALL = (2, 5, 0)
GOAL = (8, 1, 0)
AGENT_OBJECT = 10  # only shown in the teacher's full-map view
RED = 0


class Actions(IntEnum):
    """MiniGrid's action set."""

    LEFT = 0
    RIGHT = 1
    FORWARD = 2
    PICKUP = 3
    DROP = 4
    TOGGLE = 5
    DONE = 6


def goal_reward(steps: Any, max_steps: int) -> Any:
    """MiniGrid's reward for reaching the goal at step `steps` (1-based): `1 - 0.9 *
    steps / max_steps` (a float array, or a float for Python numbers)."""
    return 1.0 - 0.9 * steps / max_steps


def _is_size(v: Any) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool) and v >= 1


def words_per_row(width: int) -> int:
    """32-bit words that hold one row of a `width`-cell maze's walls."""
    return -(-width // 32)


def pack_walls(walls: jax.Array) -> jax.Array:
    """Walls as bits: `(..., H, W) bool` -> `(..., H * words_per_row(W)) uint32`, bit
    `x % 32` of word `y * words + x // 32` set where `(x, y)` is a wall."""
    *lead, _, w = walls.shape
    walls = jnp.asarray(walls, jnp.bool_)
    x = np.arange(w)
    # distinct powers of two: their sum is their bitwise or
    weights = jnp.asarray(np.left_shift(np.uint32(1), (x % 32).astype(np.uint32)))
    cols = [slice(32 * j, 32 * (j + 1)) for j in range(words_per_row(w))]
    out = [
        jnp.sum(jnp.where(walls[..., c], weights[c], 0), axis=-1, dtype=jnp.uint32) for c in cols
    ]
    return jnp.stack(out, axis=-1).reshape(*lead, -1)


def unpack_walls(bits: jax.Array, width: int) -> jax.Array:
    """`pack_walls`' inverse: `(..., H * words) uint32` -> `(..., H, width) bool`."""
    words = words_per_row(width)
    *lead, n = bits.shape
    rows = jnp.asarray(bits).reshape(*lead, n // words, words, 1)
    shifts = jnp.arange(32, dtype=jnp.uint32)
    cells = (jnp.right_shift(rows, shifts) & 1).astype(jnp.bool_)
    return cells.reshape(*lead, n // words, 32 * words)[..., :width]


def walls_at(bits: jax.Array, width: int, x: jax.Array, y: jax.Array) -> jax.Array:
    """Whether cells `(x, y)` (int32 arrays of one shape) are walls, cells off the grid
    included: `bool`, the shape of `x`.

    One row's words are picked by compares and selects over the grid's rows (no gather: on
    a TPU a batched gather or dynamic slice runs one env after another).
    """
    words = words_per_row(width)
    height = bits.shape[-1] // words
    if gathers_are_cheap():  # a gather is cheap here
        index = jnp.clip(y, 0, height - 1) * words + jnp.clip(x >> 5, 0, words - 1)
        word = jnp.take(bits, index, axis=-1)
    else:
        word = jnp.zeros(x.shape, jnp.uint32)
        for row in range(height):
            for j in range(words):
                hit = y == row if words == 1 else (y == row) & (x >> 5 == j)
                word = jnp.where(hit, bits[..., row * words + j], word)
    bit = jnp.right_shift(word, (x & 31).astype(jnp.uint32)) & 1
    inside = (x >= 0) & (x < width) & (y >= 0) & (y < height)
    return ~inside | (bit == 1)


def direction_vector(d: jax.Array) -> tuple[jax.Array, jax.Array]:
    """`DIR_TO_VEC[d]` as two int32 arrays `(dx, dy)` of `d`'s shape, by selects."""
    dx = jnp.where(d == 0, 1, jnp.where(d == 2, -1, 0)).astype(jnp.int32)
    dy = jnp.where(d == 1, 1, jnp.where(d == 3, -1, 0)).astype(jnp.int32)
    return dx, dy


@pytree_dataclass
class MazeState:
    """Per-env state (add leading axes to batch).

    Attributes:
        wall_bits: `(H * words_per_row(W),) uint32`, the walls as bits (`pack_walls`): a
            13 x 13 maze's walls are 13 words, not 169 booleans (what an accelerator copies
            and selects on every step).
        goal_pos: `(2,) int32` `(x, y)`.
        agent_pos: `(2,) int32` `(x, y)`.
        agent_dir: `() int32`.
        time: `() int32`, steps taken in this episode.
        width: the maze's width `W` (static).
    """

    wall_bits: jax.Array
    goal_pos: jax.Array
    agent_pos: jax.Array
    agent_dir: jax.Array
    time: jax.Array
    width: int = static_field()

    @property
    def walls(self) -> jax.Array:
        """`(..., H, W) bool`, True where a wall stands."""
        return unpack_walls(self.wall_bits, self.width)


@pytree_dataclass
class MazeObs:
    """One team's observation (leading agent axis `n = 1`).

    Attributes:
        image: `(n, V, V, 3)` `uint8` (or `float32 / 10` when normalised).
        direction: `(n,) int32`.
    """

    image: jax.Array
    direction: jax.Array


@dataclasses.dataclass(frozen=True)
class MazeEnv(Environment[MazeLevel, MazeState]):
    """Single-agent maze, one team `"agent"` of one agent (static parameters; checked
    when built)."""

    height: Annotated[int, POSITIVE] = 13
    """Interior rows (the outer wall is implicit)."""
    width: Annotated[int, POSITIVE] = 13
    """Interior columns."""
    view_size: Annotated[int, POSITIVE] = 5
    """Side of the agent's egocentric view (odd)."""
    max_steps: Annotated[int, POSITIVE] = 250
    """Episode step limit (truncation)."""
    normalize_obs: bool = False
    """Images as float32 divided by 10 instead of uint8."""
    n_walls: int | None = None
    """Walls placed by the default (domain-randomisation) generator; None keeps the
    literature's density of 60 walls per 13 x 13 = 169 cells."""
    walls_with_replacement: bool = True
    """The default generator draws wall cells with replacement (the literature's DR: fewer
    distinct walls than n_walls)."""
    edits_move_agent: bool = False
    """ACCEL's edits may also move the agent (besides flipping walls and moving the goal)."""

    teams = ("agent",)
    reset_ignores_key = True

    def __post_init__(self) -> None:
        if self.n_walls is None and _is_size(self.height) and _is_size(self.width):
            object.__setattr__(self, "n_walls", round(60 * self.height * self.width / 169))
        check_on_init(self, "maze")

    def problems(self) -> Iterator[Problem]:
        """Rules tying the fields together (see `arenax.options`)."""
        if not (_is_size(self.height) and _is_size(self.width) and _is_size(self.view_size)):
            return
        if self.height * self.width < 2:
            yield Problem("height*width", self.height * self.width, "must be >= 2 (agent and goal)")
        if self.view_size % 2 != 1:
            yield Problem("view_size", self.view_size, "must be odd")
        if self.view_size > 2 * max(self.height, self.width) + 1:
            yield Problem(
                "view_size",
                self.view_size,
                f"must be at most {2 * max(self.height, self.width) + 1} (twice the maze: "
                "any larger view sees only the outer wall beyond)",
            )
        cells = self.height * self.width - 2
        if self.n_walls is not None and not 0 <= self.n_walls <= cells:
            yield Problem(
                "n_walls",
                self.n_walls,
                f"must be in [0, {cells}] (height*width - 2 leaves room for the agent and the goal)",
            )

    # ------------------------------------------------------------------ spaces
    def observation_space(self, team: str = "agent") -> spaces.Dict:
        v = self.view_size
        dtype = jnp.float32 if self.normalize_obs else jnp.uint8
        high = 1.0 if self.normalize_obs else 10
        return spaces.Dict(
            (("image", spaces.Box(0, high, (v, v, 3), dtype)), ("direction", spaces.Discrete(4)))
        )

    def action_space(self, team: str = "agent") -> spaces.Discrete:
        return spaces.Discrete(len(Actions))

    # ---------------------------------------------------------------- dynamics
    def generate(self, key: jax.Array) -> MazeLevel:
        """A domain-randomised level: `n_walls` walls (drawn with replacement unless
        `walls_with_replacement` is off), then the agent and the goal on free cells."""
        return sample_dr_level(
            key, self.height, self.width, self.n_walls, replace=self.walls_with_replacement
        )

    def level_problems(self, level: MazeLevel) -> list[str]:
        """The level's size against the env's, positions on the grid and off walls, a valid
        direction (`validate_level`)."""
        shape = tuple(np.shape(level.walls))
        if shape != (self.height, self.width):
            return [f"a {shape} maze for a {self.height}x{self.width} env"]
        try:
            validate_level(level)
        except ValueError as exc:
            return [str(exc)]
        return []

    def reset_state(self, key: jax.Array, level: MazeLevel) -> MazeState:
        del key  # the maze starts deterministically from its level
        return MazeState(
            wall_bits=pack_walls(level.walls),
            goal_pos=jnp.asarray(level.goal_pos, jnp.int32),
            agent_pos=jnp.asarray(level.agent_pos, jnp.int32),
            agent_dir=jnp.asarray(level.agent_dir, jnp.int32),
            time=jnp.zeros((), jnp.int32),
            width=int(np.shape(level.walls)[-1]),
        )

    def step_state(
        self, key: jax.Array, state: MazeState, action: dict[str, jax.Array]
    ) -> tuple[MazeState, dict[str, jax.Array], jax.Array, jax.Array, dict[str, Any]]:
        del key
        a = jnp.asarray(action["agent"]).reshape(())
        d = state.agent_dir
        new_dir = jnp.where(
            a == Actions.LEFT, (d + 3) % 4, jnp.where(a == Actions.RIGHT, (d + 1) % 4, d)
        )
        fwd = state.agent_pos + jnp.stack(direction_vector(d))
        h, w = state.wall_bits.shape[-1] // words_per_row(state.width), state.width
        inside = (fwd[0] >= 0) & (fwd[0] < w) & (fwd[1] >= 0) & (fwd[1] < h)
        wall = walls_at(state.wall_bits, w, fwd[0], fwd[1])
        at_goal = jnp.all(fwd == state.goal_pos)
        forward = a == Actions.FORWARD
        success = forward & inside & at_goal
        moves = forward & inside & ~wall & ~at_goal
        time = state.time + 1
        new_state = state.replace(
            agent_pos=jnp.where(moves, fwd, state.agent_pos),
            agent_dir=new_dir,
            time=time,
        )
        reward = jnp.where(success, goal_reward(time.astype(jnp.float32), self.max_steps), 0.0)
        truncated = time >= self.max_steps
        info = {"success": success}
        return new_state, {"agent": reward[None].astype(jnp.float32)}, success, truncated, info

    # ------------------------------------------------------------- observation
    def observe(self, state: MazeState) -> dict[str, MazeObs]:
        """The egocentric view: view cell `(r, c)` is the grid cell `v - 1 - r` ahead of
        the agent and `c - v // 2` to its right, turned so that the agent looks up."""
        if gathers_are_cheap():
            code = self._view_codes_by_slice(state)
        else:
            code = self._view_codes_by_selects(state)
        wall, goal = code == 1, code == 2
        obj = jnp.where(wall, WALL[0], jnp.where(goal, GOAL[0], EMPTY[0]))
        col = jnp.where(wall, WALL[1], jnp.where(goal, GOAL[1], EMPTY[1]))
        image = jnp.stack([obj, col, jnp.zeros_like(obj)], axis=-1).astype(jnp.uint8)
        if self.normalize_obs:
            image = image.astype(jnp.float32) / 10.0
        obs = MazeObs(image=image[None], direction=state.agent_dir[None].astype(jnp.int32))
        return {"agent": obs}

    def _view_codes_by_selects(self, state: MazeState) -> jax.Array:
        """The view's cells `(v, v) int32` (0 empty, 1 wall, 2 goal), each read from the
        wall bits by compares and selects (`walls_at`): no slice or gather of the grid,
        which a TPU does one env after another."""
        v = self.view_size
        ahead, right = (jnp.asarray(a) for a in _view_offsets(v))  # (v, v)
        fx, fy = direction_vector(state.agent_dir)
        # right of facing (dx, dy) (y grows downwards) is (-dy, dx)
        x = state.agent_pos[0] + ahead * fx - right * fy
        y = state.agent_pos[1] + ahead * fy + right * fx
        wall = walls_at(state.wall_bits, state.width, x, y)
        # a goal off the grid falls on the wall beyond it and stays wall, as in MiniGrid
        goal = (x == state.goal_pos[0]) & (y == state.goal_pos[1])
        return jnp.where(wall, 1, jnp.where(goal, 2, 0))

    def _view_codes_by_slice(self, state: MazeState) -> jax.Array:
        """`_view_codes_by_selects`' numbers as the CPU computes them fastest: the
        `v x v` box in front of the agent cut from the grid padded with wall (one
        contiguous slice), turned so that the agent looks up."""
        v = self.view_size
        walls = unpack_walls(state.wall_bits, state.width)
        h, w = walls.shape
        pad, half = v - 1, v // 2
        # the grid as codes (0 empty, 1 wall, 2 goal), walls around it read as wall
        ys = np.arange(h + 2 * pad)[:, None] - pad
        xs = np.arange(w + 2 * pad)[None, :] - pad
        walls = jnp.pad(walls, pad, constant_values=True)
        goal = (xs == state.goal_pos[0]) & (ys == state.goal_pos[1])
        code = jnp.where(walls, 1, jnp.where(goal, 2, 0)).astype(jnp.uint8)
        # top-left corner of the box seen facing +x, +y, -x, -y (padded coordinates)
        x, y, d = state.agent_pos[0] + pad, state.agent_pos[1] + pad, state.agent_dir
        x0 = jnp.stack([x, x - half, x - pad, x - half])[d]
        y0 = jnp.stack([y - half, y, y - half, y - pad])[d]
        box = jax.lax.dynamic_slice(code, (y0, x0), (v, v))
        return jnp.stack([jnp.rot90(box, 1), jnp.rot90(box, 2), jnp.rot90(box, 3), box])[d]


def _view_offsets(v: int) -> tuple[np.ndarray, np.ndarray]:
    """`(ahead, right)`, each `(v, v) int32`: how far view cell `(r, c)` lies ahead of the
    agent and to its right."""
    r, c = np.meshgrid(np.arange(v), np.arange(v), indexing="ij")
    return (v - 1 - r).astype(np.int32), (c - v // 2).astype(np.int32)


def full_map(
    walls: jax.Array, goal_pos: jax.Array, agent_pos: jax.Array, agent_dir: jax.Array
) -> jax.Array:
    """The whole grid with its 1-cell border in MiniGrid encoding: `(H+2, W+2, 3) uint8`.

    Row-major (`[y + 1, x + 1]`). The agent is shown as MiniGrid does (object 10, red,
    state = direction). A goal or agent at a negative position is not drawn. This is the
    teacher's view in PAIRED.
    """
    walls = jnp.pad(walls, 1, constant_values=True)
    hh, ww = walls.shape
    ys, xs = jnp.meshgrid(jnp.arange(hh), jnp.arange(ww), indexing="ij")
    goal = (xs == goal_pos[0] + 1) & (ys == goal_pos[1] + 1) & (goal_pos[0] >= 0)
    agent = (xs == agent_pos[0] + 1) & (ys == agent_pos[1] + 1) & (agent_pos[0] >= 0)
    obj = jnp.where(walls, WALL[0], jnp.where(goal, GOAL[0], EMPTY[0]))
    obj = jnp.where(agent, AGENT_OBJECT, obj)
    col = jnp.where(walls, WALL[1], jnp.where(goal, GOAL[1], EMPTY[1]))
    col = jnp.where(agent, RED, col)
    st = jnp.where(agent, agent_dir, 0)
    return jnp.stack([obj, col, st], axis=-1).astype(jnp.uint8)
