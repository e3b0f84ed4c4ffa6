"""Pieces every curriculum algorithm shares: the train state and rollout metrics."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from arenax.rl.learner import LearnerState
from arenax.rl.ppo import psum
from arenax.struct import pytree_dataclass


@pytree_dataclass
class TrainState:
    """Everything a run needs to continue (checkpointed as one pytree).

    Attributes:
        learner: the student's parameters and optimiser state.
        curriculum: the algorithm's own state (``{}`` for DR, the level buffer for PLR…).
        cycle: ``() int32``, cycles done; the key of cycle ``c`` is ``fold_in(rng, c)``, so
            the run does not depend on how cycles are grouped into chunks.
        rng: ``(2,) uint32``, raw data of the run's base key.
    """

    learner: LearnerState
    curriculum: Any
    cycle: jax.Array
    rng: jax.Array


def cycle_key(state: TrainState) -> jax.Array:
    """The key of the current cycle."""
    return jax.random.fold_in(jax.random.wrap_key_data(state.rng), state.cycle)


def ended_means(
    done: jax.Array, values: dict[str, jax.Array], axis_name: str | None
) -> tuple[jax.Array, dict[str, jax.Array]]:
    """Count of ended episodes and the mean of each ``(T, N)`` value over them (over all
    devices; NaN when none ended). ``done`` marks the steps that end an episode."""
    d = done.astype(jnp.float32)
    sums = psum({"n": jnp.sum(d), **{k: jnp.sum(d * v) for k, v in values.items()}}, axis_name)
    n = sums.pop("n")
    return n, {k: jnp.where(n > 0, v / jnp.maximum(n, 1.0), jnp.nan) for k, v in sums.items()}


def episode_metrics(episodes: dict[str, jax.Array], axis_name: str | None) -> dict[str, jax.Array]:
    """Means over the episodes that *ended* during a rollout (over all devices).

    ``episodes`` holds ``(T, N)`` arrays ``done``, ``return``, ``success``, ``length``.
    Returns ``episodes`` (count), ``return``, ``solved`` and ``episode_length`` (NaN when no
    episode ended).
    """
    n, means = ended_means(
        episodes["done"],
        {
            "return": episodes["return"],
            "solved": episodes["success"],
            "episode_length": episodes["length"],
        },
        axis_name,
    )
    return {"episodes": n, **means}


def level_batch_metrics(
    metrics_fn: Any, levels: Any, axis_name: str | None, prefix: str = "level/"
) -> dict[str, jax.Array]:
    """Means of a family's level metrics (e.g. walls, shortest path, solvable) over a batch
    of levels with leading ``N`` (over all devices); ``shortest_path`` averages solvable
    levels only."""
    if metrics_fn is None:
        return {}
    m = jax.vmap(metrics_fn)(levels)
    n = psum(jnp.float32(m["walls"].shape[0]), axis_name)
    out = {}
    for k, v in m.items():
        v = v.astype(jnp.float32)
        if k == "shortest_path":
            ok = (v >= 0).astype(jnp.float32)
            s = psum(jnp.stack([jnp.sum(ok * v), jnp.sum(ok)]), axis_name)
            out[prefix + k] = jnp.where(s[1] > 0, s[0] / jnp.maximum(s[1], 1.0), jnp.nan)
        else:
            out[prefix + k] = psum(jnp.sum(v), axis_name) / n
    return out
