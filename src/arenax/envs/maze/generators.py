"""Level generators: domain randomisation (DR) and empty mazes.

All generators are pure, static-shape functions of a key (`vmap` them for batches).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from arenax.envs.maze.level import MazeLevel
from arenax.utils import gathers_are_cheap


def sample_cell(key: jax.Array, allowed: jax.Array) -> jax.Array:
    """Uniform random index among the True entries of a flat mask `(N,) bool` (at least
    one must be True): `() int32`."""
    logits = jnp.where(allowed, 0.0, -jnp.inf)
    return jax.random.categorical(key, logits).astype(jnp.int32)


def place_agent_and_goal(key: jax.Array, walls: jax.Array) -> MazeLevel:
    """Put the agent (uniform free cell, uniform direction), then the goal on another free cell.

    Args:
        walls: `(H, W) bool` with at least two free cells.
    """
    _h, w = walls.shape
    k_agent, k_dir, k_goal = jax.random.split(key, 3)
    free = ~walls.reshape(-1)
    agent = sample_cell(k_agent, free)
    goal = sample_cell(k_goal, free & (jnp.arange(free.shape[0]) != agent))
    return MazeLevel(
        walls=walls,
        agent_pos=jnp.stack([agent % w, agent // w]).astype(jnp.int32),
        agent_dir=jax.random.randint(k_dir, (), 0, 4, dtype=jnp.int32),
        goal_pos=jnp.stack([goal % w, goal // w]).astype(jnp.int32),
    )


def sample_dr_level(
    key: jax.Array,
    height: int,
    width: int,
    n_walls: int,
    replace: bool = True,
    uniform_count: bool = False,
) -> MazeLevel:
    """Domain-randomised maze: walls, then the agent, then the goal.

    Args:
        key: PRNG key.
        height, width: interior size.
        n_walls: wall budget, at most `height * width - 2`.
        replace: draw the `n` wall cells with replacement (the literature's DR: repeated
            draws overlap, so fewer than `n` distinct walls may result) or without
            (exactly `n` walls).
        uniform_count: draw the number of walls `n` uniformly from `{0, ..., n_walls}`
            instead of always `n_walls`.

    Returns:
        One `MazeLevel` with `walls (height, width)`.
    """
    cells = height * width
    if not 0 <= n_walls <= cells - 2:
        raise ValueError(
            f"n_walls={n_walls} must be in [0, {cells - 2}] for a {height}x{width} maze"
        )
    k_n, k_walls, k_place = jax.random.split(key, 3)
    n = jax.random.randint(k_n, (), 0, n_walls + 1) if uniform_count else jnp.asarray(n_walls)
    if replace:
        draws = jax.random.randint(k_walls, (max(n_walls, 1),), 0, cells)
        active = jnp.arange(max(n_walls, 1)) < n
        if gathers_are_cheap():
            flat = jnp.zeros(cells, jnp.bool_).at[draws].max(active)
        else:  # a compare per draw and cell: a scatter runs one level after another on a TPU
            hits = (draws[:, None] == jnp.arange(cells)) & active[:, None]
            flat = jnp.any(hits, axis=0)
    else:
        rank = jnp.argsort(jnp.argsort(jax.random.uniform(k_walls, (cells,))))
        flat = rank < n
    return place_agent_and_goal(k_place, flat.reshape(height, width))


def empty_level(key: jax.Array, height: int, width: int) -> MazeLevel:
    """A wall-free maze with random agent pose and goal (ACCEL's starting levels)."""
    return place_agent_and_goal(key, jnp.zeros((height, width), jnp.bool_))
