"""Shortest paths and level metrics by breadth-first frontier relaxation.

Distances are computed for all cells at once: every sweep lowers each free cell's
distance to `1 + min(neighbours)`; sweeps repeat (a few per loop iteration) until
nothing changes, so the loop runs `~ longest shortest path / sweeps_per_iter` times
with static shapes and no Python control flow on traced values. `vmap` for batches.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from arenax.envs.maze.env import goal_reward
from arenax.envs.maze.level import MazeLevel

#: distance of unreachable cells and walls
UNREACHABLE = 1 << 24
_SWEEPS = 8


def _fixpoint(relax, d0: jax.Array) -> jax.Array:
    def body(carry):
        d, _ = carry
        new = d
        for _ in range(_SWEEPS):
            new = relax(new)
        return new, jnp.any(new != d)

    d, _ = jax.lax.while_loop(lambda c: c[1], body, (d0, jnp.array(True)))
    return d


def _shift(d: jax.Array, dx: int, dy: int) -> jax.Array:
    """`out[y, x] = d[y + dy, x + dx]` with UNREACHABLE outside (last two axes)."""
    pad = [(0, 0)] * (d.ndim - 2) + [(1, 1), (1, 1)]
    p = jnp.pad(d, pad, constant_values=UNREACHABLE)
    h, w = d.shape[-2:]
    return p[..., 1 + dy : 1 + dy + h, 1 + dx : 1 + dx + w]


def distance_map(walls: jax.Array, goal_pos: jax.Array) -> jax.Array:
    """Fewest moves from each cell to the goal (4-neighbour): `(H, W) int32`.

    Walls and cells that cannot reach the goal hold `UNREACHABLE`.
    """
    h, w = walls.shape
    free = ~walls
    ys, xs = jnp.meshgrid(jnp.arange(h), jnp.arange(w), indexing="ij")
    goal = (xs == goal_pos[0]) & (ys == goal_pos[1])
    d0 = jnp.where(goal, 0, UNREACHABLE).astype(jnp.int32)

    def relax(d: jax.Array) -> jax.Array:
        nb = jnp.minimum(
            jnp.minimum(_shift(d, 1, 0), _shift(d, -1, 0)),
            jnp.minimum(_shift(d, 0, 1), _shift(d, 0, -1)),
        )
        return jnp.where(free, jnp.minimum(d, jnp.minimum(nb + 1, UNREACHABLE)), UNREACHABLE)

    return _fixpoint(relax, d0)


def action_distance_map(walls: jax.Array, goal_pos: jax.Array) -> jax.Array:
    """Fewest *actions* (turns count) to reach the goal from each pose: `(4, H, W) int32`.

    Entry `[d, y, x]` is for the agent at `(x, y)` facing `d`; the last action is the
    forward step into the goal. Walls, the goal cell and hopeless poses hold
    `UNREACHABLE`.
    """
    h, w = walls.shape
    ys, xs = jnp.meshgrid(jnp.arange(h), jnp.arange(w), indexing="ij")
    goal = (xs == goal_pos[0]) & (ys == goal_pos[1])
    standable = ~walls & ~goal
    vecs = ((1, 0), (0, 1), (-1, 0), (0, -1))
    # poses whose forward cell is the goal finish in one action
    d0 = jnp.stack([_shift(jnp.where(goal, 0, UNREACHABLE), dx, dy) for dx, dy in vecs])
    d0 = jnp.where(standable & (d0 == 0), 1, UNREACHABLE).astype(jnp.int32)

    def relax(d: jax.Array) -> jax.Array:
        p = jnp.pad(d, ((0, 0), (1, 1), (1, 1)), constant_values=UNREACHABLE)
        fwd = jnp.stack(
            [p[0, 1:-1, 2:], p[1, 2:, 1:-1], p[2, 1:-1, :-2], p[3, :-2, 1:-1]]
        )  # value of the cell ahead, per facing direction
        turn = jnp.minimum(d[jnp.array([3, 0, 1, 2])], d[jnp.array([1, 2, 3, 0])])
        best = jnp.minimum(jnp.minimum(fwd, turn) + 1, UNREACHABLE)
        return jnp.where(standable, jnp.minimum(d, best), UNREACHABLE)

    return _fixpoint(relax, d0)


def shortest_path_length(level: MazeLevel) -> jax.Array:
    """Fewest forward moves from the agent to the goal: `() int32` (UNREACHABLE if none)."""
    d = distance_map(level.walls, level.goal_pos)
    return d[level.agent_pos[1], level.agent_pos[0]]


def optimal_steps(level: MazeLevel) -> jax.Array:
    """Fewest actions (turns included) to solve the level: `() int32`."""
    d = action_distance_map(level.walls, level.goal_pos)
    return d[level.agent_dir, level.agent_pos[1], level.agent_pos[0]]


def optimal_return(level: MazeLevel, max_steps: int) -> jax.Array:
    """Best achievable return of a level: the goal reward after `optimal_steps`
    (`() float32`; 0 if unsolvable or out of reach within `max_steps`)."""
    steps = optimal_steps(level)
    ok = (steps < UNREACHABLE) & (steps <= max_steps)
    return jnp.where(ok, goal_reward(steps.astype(jnp.float32), max_steps), 0.0)


def level_metrics(level: MazeLevel) -> dict[str, jax.Array]:
    """Metrics of one level (`vmap` for a batch).

    Returns:
        `walls` (int32 wall count), `shortest_path` (int32 moves, `-1` if unsolvable),
        `solvable` (bool).
    """
    sp = shortest_path_length(level)
    solvable = sp < UNREACHABLE
    return {
        "walls": jnp.sum(level.walls, dtype=jnp.int32),
        "shortest_path": jnp.where(solvable, sp, -1),
        "solvable": solvable,
    }
