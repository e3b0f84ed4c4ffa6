"""Continuous Tag's data: a level (what an episode starts from) and the per-env state
(`arenax.envs.tag.continuous` is the game that steps them; both names are importable
from there too)."""

from __future__ import annotations

import jax

from arenax.struct import pytree_dataclass

__all__ = ["TagLevel", "TagState"]


@pytree_dataclass
class TagLevel:
    """What an episode starts from (curricula can act on it).

    Attributes:
        pos: `(A, 2) float32` start positions (taggers first).
        direction: `(A,) float32` start directions in `[0, 2π)`.
        skill: `(2,) float32` max-speed multipliers of taggers and runners.
        arena: `() float32` side `L`.
        tag_margin: `() float32` tagging distance (absolute: `tag_distance · L`).
        obstacles: `(M, 3) float32` discs `(x, y, r)`, `r = 0` for an unused slot
            (`M` is the env's `max_obstacles`); `None`: none (`M = 0`).
        episode_length: `() int32` steps before truncation, at most the env's
            `episode_length` (the static maximum); observations give `t` over it.
            `None`: the env's.
    """

    pos: jax.Array
    direction: jax.Array
    skill: jax.Array
    arena: jax.Array
    tag_margin: jax.Array
    obstacles: jax.Array | None = None
    episode_length: jax.Array | None = None


@pytree_dataclass
class TagState:
    """Per-env state; agent arrays have a leading `A` axis.

    `active`: in the game at the last observation (before that step's tags);
    `tagged`: tagged at the last step (with `runners_leave`, out from the next step).
    """

    pos: jax.Array
    speed: jax.Array
    direction: jax.Array
    accel: jax.Array
    active: jax.Array
    tagged: jax.Array
    time: jax.Array
    skill: jax.Array
    arena: jax.Array
    tag_margin: jax.Array
    obstacles: jax.Array | None
    episode_length: jax.Array | None = None

    @property
    def in_game(self) -> jax.Array:
        """`(A,) bool`: agents in the game for the next step."""
        return self.active & ~self.tagged
