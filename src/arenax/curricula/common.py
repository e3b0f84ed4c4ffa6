"""Pieces every curriculum shares: the train state, the curriculum contract, rollout
metrics.

A curriculum owns one training *cycle*: choose levels -> roll out -> score -> update the
learner(s) -> update its own state. The host loop (:mod:`arenax.train.loop`) owns the device
mesh and the cycle keys and calls ``cycle`` inside ``jax.shard_map``.
"""

from __future__ import annotations

from typing import Any, ClassVar, Protocol

import jax
import jax.numpy as jnp
from jax.sharding import PartitionSpec

from arenax.collectives import psum
from arenax.envs.core import Environment
from arenax.envs.wrappers import AutoReplay, EpisodeStats
from arenax.rl.learner import LearnerState, no_update_stats
from arenax.rl.ppo import bootstraps
from arenax.rl.rollout import rollout, start_rollout
from arenax.struct import pytree_dataclass

#: the policy name of a maze student in :attr:`TrainState.learner`
STUDENT = "student"


@pytree_dataclass
class TrainState:
    """Everything a run needs to continue (checkpointed as one pytree).

    Attributes:
        learner: the learning agents' states, ``{policy name: LearnerState}``: ``"student"``
            for a maze student (PAIRED: the students stacked on a leading axis, the
            protagonist first), one entry per policy of a many-agent game.
        curriculum: the curriculum's own state (``{}`` for DR, the level buffer for PLR,
            the teacher for PAIRED, the running environments for multi-team training).
        cycle: ``() int32``, cycles done; the key of cycle ``c`` is ``fold_in(rng, c)``, so
            the run does not depend on how cycles are grouped into chunks.
        rng: ``(2,) uint32``, raw data of the run's base key.
    """

    learner: dict[str, LearnerState]
    curriculum: Any
    cycle: jax.Array
    rng: jax.Array

    @classmethod
    def create(
        cls, key: jax.Array, learner: dict[str, LearnerState], curriculum: Any
    ) -> TrainState:
        """A run's first state (explicit dtypes: no weak types, so no recompiles)."""
        return cls(
            learner=learner,
            curriculum=curriculum,
            cycle=jnp.zeros((), jnp.int32),
            rng=jax.random.key_data(key).astype(jnp.uint32),
        )

    def next(self, learner: dict[str, LearnerState], curriculum: Any) -> TrainState:
        """The state after one cycle."""
        return self.replace(learner=learner, curriculum=curriculum, cycle=self.cycle + 1)


def cycle_key(state: TrainState) -> jax.Array:
    """The key of the current cycle."""
    return jax.random.fold_in(jax.random.wrap_key_data(state.rng), state.cycle)


class Curriculum(Protocol):
    """What the host loop needs of a curriculum (every curriculum subclasses this for its
    defaults).

    Attributes:
        env: the (unwrapped) environment family the learners play.
        progress: the progress bar's fields, ``{label: metric}``.
    """

    env: Environment
    progress: ClassVar[dict[str, str]] = {"return": "return", "solved": "solved"}

    def init(self, key: jax.Array) -> TrainState:
        """The first train state of a run seeded by ``key``."""
        ...

    def cycle(
        self, state: TrainState, key: jax.Array, env_ids: jax.Array, axis_name: str | None
    ) -> tuple[TrainState, dict[str, jax.Array]]:
        """One cycle over this device's environments ``env_ids (n_local,)`` (global
        indices); metrics are global (reduced over ``axis_name``) scalars, and ``*_steps``
        metrics count this cycle's steps."""
        ...

    def state_specs(self, axis: str) -> Any:
        """Placement of the train state as a ``PartitionSpec`` prefix: replicated unless
        the curriculum keeps per-device state (environments that persist between cycles)
        split over the mesh axis ``axis``."""
        return PartitionSpec()

    def student_params(self, state: TrainState) -> Any:
        """Parameters of the maze student that held-out evaluation plays (PAIRED: the
        protagonist)."""
        return state.learner[STUDENT].params


class OneStudent:
    """The hooks through which a level curriculum reaches its learner(s), for one student
    (``TrainState.learner[STUDENT]``): mixed into the replay and SFL curricula;
    :class:`~arenax.curricula.teams.TeamPlay` overrides them for the policies of a
    many-agent game."""

    def _agents(self, state: TrainState) -> Any:
        """The learner state(s) a cycle plays and trains."""
        return state.learner[STUDENT]

    def _learners(self, agents: Any) -> dict[str, Any]:
        """``TrainState.learner`` holding ``agents``."""
        return {STUDENT: agents}

    def _params(self, agents: Any) -> Any:
        return agents.params

    def _no_stats(self) -> dict[str, jax.Array]:
        """The update statistics of a cycle that does not train (NaN)."""
        return no_update_stats()

    def _episode_metrics(self, episodes: dict, axis_name: str | None) -> dict[str, jax.Array]:
        return episode_metrics(episodes, axis_name)


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
    n = psum(jnp.float32(jax.tree.leaves(levels)[0].shape[0]), axis_name)
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


def replay_rollout(
    env: Environment, learner: Any, params: Any, key: jax.Array, levels: Any, ids: jax.Array,
    n_steps: int,
) -> tuple[Any, Any, dict[str, jax.Array]]:  # fmt: skip
    """The student plays this device's ``levels`` (leading ``n_local``, global indices
    ``ids``) for ``n_steps``, each env replaying its level from a zero recurrent state:
    ``(trajectory, initial carry, episode statistics)``."""
    wrapped = EpisodeStats(AutoReplay(env))
    k_reset, k_roll = jax.random.split(key)
    carry0 = learner.policy.initial_carry(ids.shape[0])
    start = start_rollout(wrapped, k_reset, levels, ids, carry0)
    traj, _, episodes = rollout(
        wrapped, learner.policy, params, k_roll, start, n_steps, ids,
        bootstrap_truncation=bootstraps(learner.config, env),
    )  # fmt: skip
    return traj, carry0, episodes
