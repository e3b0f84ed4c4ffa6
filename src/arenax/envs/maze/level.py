"""The maze `Level`: a compact, fixed-shape description of one maze.

Coordinates are *interior* coordinates: `x` is the column in `[0, width)`, `y` the
row in `[0, height)`; the 1-cell outer wall of MiniGrid is implicit (MiniGrid's cell is
`(x + 1, y + 1)`). Directions follow MiniGrid: 0 right (+x), 1 down (+y), 2 left, 3 up.

ASCII form (interior only, one row per line): `#` wall, `.` free, `G` goal and
`>`, `v`, `<`, `^` the agent facing right, down, left, up.
"""

from __future__ import annotations

import json
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from arenax.struct import pytree_dataclass

DIR_CHARS = (">", "v", "<", "^")
#: unit vectors (dx, dy) per direction
DIR_TO_VEC = np.array([[1, 0], [0, 1], [-1, 0], [0, -1]], dtype=np.int32)
JSON_FORMAT = "arenax.maze.level/1"


@pytree_dataclass
class MazeLevel:
    """One maze; batch by stacking (leading axes on every field).

    Attributes:
        walls: `(H, W) bool`, True where a wall stands (interior only).
        agent_pos: `(2,) int32`, the agent's `(x, y)`.
        agent_dir: `() int32`, 0 right, 1 down, 2 left, 3 up.
        goal_pos: `(2,) int32`, the goal's `(x, y)`.
    """

    walls: jax.Array
    agent_pos: jax.Array
    agent_dir: jax.Array
    goal_pos: jax.Array

    @property
    def height(self) -> int:
        return int(self.walls.shape[-2])

    @property
    def width(self) -> int:
        return int(self.walls.shape[-1])

    # ---------------------------------------------------------------- construction
    @classmethod
    def create(
        cls,
        walls: Any,
        agent_pos: Any,
        agent_dir: Any,
        goal_pos: Any,
        validate: bool = True,
    ) -> MazeLevel:
        """Build a level with canonical dtypes; `validate` checks it (host-side)."""
        level = cls(
            walls=jnp.asarray(walls, dtype=jnp.bool_),
            agent_pos=jnp.asarray(agent_pos, dtype=jnp.int32),
            agent_dir=jnp.asarray(agent_dir, dtype=jnp.int32),
            goal_pos=jnp.asarray(goal_pos, dtype=jnp.int32),
        )
        if validate:
            validate_level(level)
        return level

    @classmethod
    def from_ascii(cls, text: str) -> MazeLevel:
        """Parse the ASCII form (see module docstring); raises `ValueError` if malformed."""
        rows = [r.strip() for r in text.strip().splitlines() if r.strip()]
        if not rows:
            raise ValueError("maze ASCII is empty")
        width = len(rows[0])
        for i, r in enumerate(rows):
            if len(r) != width:
                raise ValueError(
                    f"maze ASCII row {i} has {len(r)} characters, expected {width} like row 0"
                )
        walls = np.zeros((len(rows), width), dtype=bool)
        agent, goal, agent_dir = None, None, 0
        for y, row in enumerate(rows):
            for x, c in enumerate(row):
                if c == "#":
                    walls[y, x] = True
                elif c == "G":
                    if goal is not None:
                        raise ValueError(f"maze ASCII has two goals: {goal} and {(x, y)}")
                    goal = (x, y)
                elif c in DIR_CHARS:
                    if agent is not None:
                        raise ValueError(f"maze ASCII has two agents: {agent} and {(x, y)}")
                    agent, agent_dir = (x, y), DIR_CHARS.index(c)
                elif c != ".":
                    raise ValueError(
                        f"maze ASCII has unknown character {c!r} at (x={x}, y={y}); "
                        "allowed: '#', '.', 'G', '>', 'v', '<', '^'"
                    )
        if agent is None:
            raise ValueError("maze ASCII has no agent (one of '>', 'v', '<', '^')")
        if goal is None:
            raise ValueError("maze ASCII has no goal ('G')")
        return cls.create(walls, agent, agent_dir, goal)

    def to_ascii(self) -> str:
        """The ASCII form of a single (unbatched) level."""
        walls = np.asarray(self.walls)
        if walls.ndim != 2:
            raise ValueError(f"to_ascii takes one level, got walls of shape {walls.shape}")
        grid = np.where(walls, "#", ".").astype("<U1")
        gx, gy = np.asarray(self.goal_pos)
        ax, ay = np.asarray(self.agent_pos)
        grid[gy, gx] = "G"
        grid[ay, ax] = DIR_CHARS[int(self.agent_dir)]
        return "\n".join("".join(r) for r in grid)

    def to_json(self) -> str:
        """JSON text: `{"format", "height", "width", "ascii": [rows]}`."""
        return json.dumps(
            {
                "format": JSON_FORMAT,
                "height": self.height,
                "width": self.width,
                "ascii": self.to_ascii().splitlines(),
            }
        )

    @classmethod
    def from_json(cls, text: str) -> MazeLevel:
        """Inverse of `to_json`."""
        data = json.loads(text)
        if not isinstance(data, dict) or data.get("format") != JSON_FORMAT:
            raise ValueError(f"not an arenax maze level: expected format {JSON_FORMAT!r}")
        rows = data.get("ascii")
        if not isinstance(rows, list) or not rows or not all(isinstance(r, str) for r in rows):
            raise ValueError("a maze level's 'ascii' must be a non-empty list of row strings")
        declared = (data.get("height"), data.get("width"))
        found = (len(rows), len(rows[0]))
        if declared != (None, None) and declared != found:
            raise ValueError(
                f"the level declares height={declared[0]}, width={declared[1]} but its rows "
                f"are {found[0]} x {found[1]}"
            )
        return cls.from_ascii("\n".join(rows))


def validate_level(level: MazeLevel) -> None:
    """Raise `ValueError` naming the first problem of a single concrete level."""
    walls = np.asarray(level.walls)
    if walls.ndim != 2:
        raise ValueError(f"walls must be (H, W), got shape {walls.shape}")
    h, w = walls.shape
    for name in ("agent_pos", "goal_pos"):
        x, y = (int(v) for v in np.asarray(getattr(level, name)))
        if not (0 <= x < w and 0 <= y < h):
            raise ValueError(f"{name}=({x}, {y}) is out of bounds for a {h}x{w} (HxW) maze")
        if walls[y, x]:
            raise ValueError(f"{name}=({x}, {y}) is on a wall")
    d = int(level.agent_dir)
    if not 0 <= d < 4:
        raise ValueError(f"agent_dir={d} is not one of 0 (right), 1 (down), 2 (left), 3 (up)")
    if np.array_equal(np.asarray(level.agent_pos), np.asarray(level.goal_pos)):
        raise ValueError(f"agent and goal share the cell {tuple(np.asarray(level.goal_pos))}")


def is_valid(level: MazeLevel) -> jax.Array:
    """Traceable validity check of one level: `() bool`."""
    h, w = level.walls.shape[-2:]

    def ok(pos: jax.Array) -> jax.Array:
        inb = (pos[0] >= 0) & (pos[0] < w) & (pos[1] >= 0) & (pos[1] < h)
        cell = level.walls[jnp.clip(pos[1], 0, h - 1), jnp.clip(pos[0], 0, w - 1)]
        return inb & ~cell

    return (
        ok(level.agent_pos)
        & ok(level.goal_pos)
        & jnp.any(level.agent_pos != level.goal_pos)
        & (level.agent_dir >= 0)
        & (level.agent_dir < 4)
    )


def levels_equal(a: MazeLevel, b: MazeLevel) -> jax.Array:
    """Equality of two levels (same walls, agent pose and goal): `() bool`.

    Works on batches by broadcasting leading axes of equal shape.
    """
    return (
        jnp.all(a.walls == b.walls, axis=(-2, -1))
        & jnp.all(a.agent_pos == b.agent_pos, axis=-1)
        & (a.agent_dir == b.agent_dir)
        & jnp.all(a.goal_pos == b.goal_pos, axis=-1)
    )


def pad_level(level: MazeLevel, height: int, width: int) -> MazeLevel:
    """Pad a level to `height x width` with walls on the bottom and right.

    The agent's observations and dynamics are unchanged: cells beyond a maze's interior
    read as walls either way.
    """
    h, w = level.walls.shape[-2:]
    if h > height or w > width:
        raise ValueError(f"cannot pad a {h}x{w} maze to the smaller {height}x{width}")
    pad = [(0, 0)] * (level.walls.ndim - 2) + [(0, height - h), (0, width - w)]
    return level.replace(walls=jnp.pad(level.walls, pad, constant_values=True))


def stack_levels(levels: list[MazeLevel]) -> MazeLevel:
    """Stack single levels into a batch, padding every one to the largest size."""
    h = max(lv.height for lv in levels)
    w = max(lv.width for lv in levels)
    padded = [pad_level(lv, h, w) for lv in levels]
    return jax.tree.map(lambda *xs: jnp.stack(xs), *padded)
