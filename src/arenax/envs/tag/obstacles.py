"""Disc obstacles of continuous Tag: the observation of the discs, and the geometry of
positions and moves against them. A disc is a row `(x, y, r)` of an `(M, 3)` array; a
radius of 0 marks an unused slot."""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp


def obstacle_features(
    pos: jax.Array, active: jax.Array, discs: jax.Array, arena: jax.Array
) -> jax.Array:
    """`(A, 3M)`: each disc's `Δx/(√2 L)`, then `Δy/(√2 L)`, then `r/L` (zeros for
    unused slots and agents out of the game). `pos (A, 2)`, `active (A,)`, `discs
    (M, 3)`, `arena ()`: `L`."""
    diag = jnp.float32(math.sqrt(2.0)) * arena
    scale = jnp.where(discs[:, 2] > 0.0, 1.0 / diag, 0.0)[None, :]  # 0 for unused slots
    dx = (discs[None, :, 0] - pos[:, None, 0]) * scale
    dy = (discs[None, :, 1] - pos[:, None, 1]) * scale
    r = jnp.broadcast_to(discs[None, :, 2] * (1.0 / arena), dx.shape)  # as the kernel
    return jnp.concatenate([dx, dy, r], axis=-1) * active[:, None]


def inside_discs(pos: jax.Array, discs: jax.Array | None) -> jax.Array:
    """`(A,) bool`: positions `(A, 2)` strictly inside a used disc of `(M, 3)`."""
    if discs is None:
        return jnp.zeros(pos.shape[:1], jnp.bool_)
    # per coordinate (no minor axis of 2 to reduce over: that vectorises poorly on CPUs)
    dx = pos[:, None, 0] - discs[None, :, 0]
    dy = pos[:, None, 1] - discs[None, :, 1]
    return jnp.any(dx * dx + dy * dy < discs[None, :, 2] ** 2, axis=-1)


def crosses_discs(start: jax.Array, end: jax.Array, discs: jax.Array | None) -> jax.Array:
    """`(A,) bool`: moves from `start (A, 2)` to `end (A, 2)` whose segment comes
    strictly closer than `r` to the centre of a used disc of `(M, 3)` (the end point
    inside a disc included)."""
    if discs is None:
        return jnp.zeros(start.shape[:1], jnp.bool_)
    # per coordinate, as inside_discs: the nearest point of each segment to each centre
    ux, uy = (end[:, 0] - start[:, 0])[:, None], (end[:, 1] - start[:, 1])[:, None]
    cx = discs[None, :, 0] - start[:, None, 0]
    cy = discs[None, :, 1] - start[:, None, 1]
    length2 = ux * ux + uy * uy
    t = jnp.clip((cx * ux + cy * uy) / jnp.where(length2 > 0.0, length2, 1.0), 0.0, 1.0)
    dx, dy = cx - t * ux, cy - t * uy
    return jnp.any(dx * dx + dy * dy < discs[None, :, 2] ** 2, axis=-1)


def free_positions(
    key: jax.Array, n: int, discs: jax.Array, lo: Any, hi: Any, tries: int = 16
) -> jax.Array:
    """`(n, 2)` positions uniform in `[lo, hi)²` outside every disc: the first of
    `tries` draws outside; if all fall inside, the corner `(0, 0)` (a disc inside the
    arena never covers a corner)."""
    u = jax.random.uniform(key, (tries, n, 2), jnp.float32)
    cand = jnp.asarray(lo, jnp.float32) + u * (jnp.asarray(hi, jnp.float32) - lo)
    ok = ~jax.vmap(lambda c: inside_discs(c, discs))(cand)  # (tries, n)
    first = jnp.argmax(ok, axis=0)
    pick = jnp.take_along_axis(cand, first[None, :, None], axis=0)[0]
    return jnp.where(jnp.any(ok, axis=0)[:, None], pick, 0.0)


def random_discs(
    key: jax.Array, max_obstacles: int, arena: float, radius: tuple[float, float]
) -> jax.Array:
    """`(max_obstacles, 3)` discs: a uniform number `0..max_obstacles` used, radii
    uniform in `radius · arena`, centres uniform over the positions that keep the disc
    inside the arena; unused slots zero."""
    k_n, k_c, k_r = jax.random.split(key, 3)
    n = jax.random.randint(k_n, (), 0, max_obstacles + 1)
    r = jax.random.uniform(k_r, (max_obstacles,), jnp.float32, radius[0] * arena, radius[1] * arena)
    u = jax.random.uniform(k_c, (max_obstacles, 2), jnp.float32)
    centres = r[:, None] + u * (arena - 2.0 * r[:, None])
    used = jnp.arange(max_obstacles) < n
    return jnp.where(used[:, None], jnp.concatenate([centres, r[:, None]], axis=-1), 0.0)
