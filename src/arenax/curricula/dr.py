"""Domain randomisation (DR): the student trains on freshly generated levels.

One cycle::

    levels  <- generate (n_steps + 1) fresh levels per environment
    rollout <- the student plays n_steps steps; every ended episode auto-resets to the
               environment's next fresh level (no level is generated inside the rollout)
    student <- PPO update on the rollout

With ``ppo.carry_over`` (the reference library's rule) the rollout starts from the recurrent
state the previous cycle ended in, without a reset; that state is kept, split over devices
with the environments, in the curriculum state.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
from jax.sharding import PartitionSpec

from arenax.curricula.common import (
    STUDENT,
    Curriculum,
    TrainState,
    episode_metrics,
    level_batch_metrics,
)
from arenax.envs.core import Environment
from arenax.envs.wrappers import AutoResetFromBatch, EpisodeStats
from arenax.rl.learner import Learner
from arenax.rl.ppo import bootstraps
from arenax.rl.rollout import example_obs, per_env_keys, rollout, start_rollout


@dataclasses.dataclass(frozen=True)
class DomainRandomisation(Curriculum):
    """DR over ``env``'s levels from ``generator`` (default: ``env.generate``).

    Attributes:
        env: the (unwrapped) environment family.
        learner: the student's PPO learner.
        n_envs: global number of environments (over all devices).
        n_steps: rollout length per cycle.
        generator: ``key -> level``.
        level_metrics: optional ``level -> dict`` of family metrics to log.
    """

    env: Environment
    learner: Learner
    n_envs: int
    n_steps: int
    generator: Callable[[jax.Array], Any] | None = None
    level_metrics: Callable[[Any], dict[str, jax.Array]] | None = None

    @property
    def rollout_env(self) -> Environment:
        return EpisodeStats(AutoResetFromBatch(self.env))

    def _generate(self, key: jax.Array) -> Any:
        return (self.generator or self.env.generate)(key)

    @property
    def carry_over(self) -> bool:
        return self.learner.config.carry_over

    def init(self, key: jax.Array) -> TrainState:
        """A fresh student (and a zero recurrent state per environment with carry-over)."""
        k_params, k_level = jax.random.split(key)
        example = example_obs(self.env, k_level, self._generate(k_level), "agent")
        own = {"carry": self.learner.policy.initial_carry(self.n_envs)} if self.carry_over else {}
        return TrainState.create(key, {STUDENT: self.learner.init(k_params, example)}, own)

    def state_specs(self, axis: str) -> Any:
        """Replicated, but for a carried-over recurrent state: split with the environments."""
        if not self.carry_over:
            return PartitionSpec()
        return TrainState(
            learner=PartitionSpec(), curriculum={"carry": PartitionSpec(axis)},
            cycle=PartitionSpec(), rng=PartitionSpec(),
        )  # fmt: skip

    def cycle(
        self, state: TrainState, key: jax.Array, env_ids: jax.Array, axis_name: str | None
    ) -> tuple[TrainState, dict[str, jax.Array]]:
        """One DR cycle over this device's environments ``env_ids`` (global indices)."""
        k_levels, k_reset, k_roll, k_update = jax.random.split(key, 4)
        student = state.learner[STUDENT]

        # 1. fresh levels: one per episode that can start in this rollout
        per_env = per_env_keys(k_levels, env_ids)
        levels = jax.vmap(
            lambda k: jax.vmap(self._generate)(jax.random.split(k, self.n_steps + 1))
        )(per_env)  # leaves (n, n_steps + 1, ...)

        # 2. rollout
        c = self.learner.config
        if self.carry_over:
            carry0 = state.curriculum["carry"]
        else:
            carry0 = self.learner.policy.initial_carry(env_ids.shape[0])
        start = start_rollout(
            self.rollout_env, k_reset, levels, env_ids, carry0, reset_carry=not self.carry_over
        )
        traj, end, episodes = rollout(
            self.rollout_env, self.learner.policy, student.params, k_roll, start, self.n_steps,
            env_ids, bootstrap_truncation=bootstraps(c, self.env),
        )  # fmt: skip

        # 3. update the student
        student, stats = self.learner.update(student, traj, carry0, k_update, axis_name)

        steps = jnp.int32(self.n_envs * self.n_steps)
        metrics = {
            **episode_metrics(episodes, axis_name),
            **stats,
            **level_batch_metrics(
                self.level_metrics, jax.tree.map(lambda x: x[:, 0], levels), axis_name
            ),
            "env_steps": steps,
            "student_steps": steps,
            "updates": jnp.int32(1),
        }
        own = {"carry": end.carry} if self.carry_over else {}
        return state.next({STUDENT: student}, own), metrics
