"""ACCEL mutators: small random edits of a level.

Each edit is one of: no-op, flip a wall (never under the agent or the goal), move the goal
to a free cell, and (`move_agent=True`) move the agent to a free cell with a random
direction. Edits are applied in sequence with `lax.scan`; the result is always valid.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from arenax.envs.maze.generators import sample_cell
from arenax.envs.maze.level import MazeLevel

NO_OP, FLIP_WALL, MOVE_GOAL, MOVE_AGENT = 0, 1, 2, 3


def mutate_level(
    key: jax.Array,
    level: MazeLevel,
    n_edits: int | jax.Array,
    max_edits: int | None = None,
    move_agent: bool = False,
) -> MazeLevel:
    """Apply `n_edits` random edits to one level.

    Args:
        key: PRNG key.
        level: an unbatched level.
        n_edits: number of edits (may be traced when `max_edits` is given).
        max_edits: static upper bound of `n_edits` (defaults to `n_edits`).
        move_agent: also allow moving the agent.

    Returns:
        The mutated level (same shapes).
    """
    if max_edits is None:
        max_edits = int(n_edits)
    h, w = level.walls.shape
    n_kinds = 4 if move_agent else 3

    def edit(lv: MazeLevel, inp: tuple[jax.Array, jax.Array]) -> tuple[MazeLevel, None]:
        k, active = inp
        k_kind, k_cell, k_dir = jax.random.split(k, 3)
        kind = jnp.where(active, jax.random.randint(k_kind, (), 0, n_kinds), NO_OP)
        walls = lv.walls.reshape(-1)
        agent = lv.agent_pos[1] * w + lv.agent_pos[0]
        goal = lv.goal_pos[1] * w + lv.goal_pos[0]
        unoccupied = jnp.ones(h * w, jnp.bool_).at[agent].set(False).at[goal].set(False)
        # flip: any cell but the agent's and the goal's
        flip_cell = sample_cell(k_cell, unoccupied)
        flipped = walls.at[flip_cell].set(~walls[flip_cell])
        # moves: a free cell that is neither the agent's nor the goal's
        targets = ~walls & unoccupied
        target = sample_cell(k_cell, targets)
        has_target = jnp.any(targets)
        xy = jnp.stack([target % w, target // w]).astype(jnp.int32)
        new_walls = jnp.where(kind == FLIP_WALL, flipped, walls)
        move_g = (kind == MOVE_GOAL) & has_target
        move_a = (kind == MOVE_AGENT) & has_target
        lv = MazeLevel(
            walls=new_walls.reshape(h, w),
            agent_pos=jnp.where(move_a, xy, lv.agent_pos),
            agent_dir=jnp.where(move_a, jax.random.randint(k_dir, (), 0, 4), lv.agent_dir),
            goal_pos=jnp.where(move_g, xy, lv.goal_pos),
        )
        return lv, None

    keys = jax.random.split(key, max(max_edits, 1))
    active = jnp.arange(max(max_edits, 1)) < n_edits
    out, _ = jax.lax.scan(edit, level, (keys, active))
    return out
