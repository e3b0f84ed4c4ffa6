"""Domain randomisation (DR): the student trains on freshly generated levels.

One cycle::

    levels  <- generate (n_steps + 1) fresh levels per environment
    rollout <- the student plays n_steps steps; every ended episode auto-resets to the
               environment's next fresh level (no level is generated inside the rollout)
    student <- PPO update on the rollout
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from arenax.curricula.common import TrainState, episode_metrics, level_batch_metrics
from arenax.envs.core import Environment
from arenax.envs.wrappers import AutoResetFromBatch, EpisodeStats
from arenax.rl.learner import Learner
from arenax.rl.rollout import RolloutCarry, per_env_keys, reset_batch, rollout


@dataclasses.dataclass(frozen=True)
class DomainRandomisation:
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

    def init(self, key: jax.Array) -> TrainState:
        """Fresh student and counters (explicit dtypes: no weak types, no recompiles)."""
        k_params, k_level = jax.random.split(key)
        obs, _ = self.env.reset(k_level, self._generate(k_level))
        example = jax.tree.map(lambda x: x[None], obs["agent"])  # (T=1, B=1, ...)
        return TrainState(
            learner=self.learner.init(k_params, example),
            curriculum={},
            cycle=jnp.zeros((), jnp.int32),
            rng=jax.random.key_data(key).astype(jnp.uint32),
        )

    def cycle(
        self, state: TrainState, key: jax.Array, env_ids: jax.Array, axis_name: str | None
    ) -> tuple[TrainState, dict[str, jax.Array]]:
        """One DR cycle over this device's environments ``env_ids`` (global indices)."""
        k_levels, k_reset, k_roll, k_update = jax.random.split(key, 4)
        n = env_ids.shape[0]
        env = self.rollout_env

        # 1. fresh levels: one per episode that can start in this rollout
        per_env = per_env_keys(k_levels, env_ids)
        levels = jax.vmap(
            lambda k: jax.vmap(self._generate)(jax.random.split(k, self.n_steps + 1))
        )(per_env)  # leaves (n, n_steps + 1, ...)

        # 2. rollout
        obs, env_state = reset_batch(env, k_reset, levels, env_ids)
        carry0 = self.learner.policy.initial_carry(n)
        start = RolloutCarry(env_state, obs, jnp.ones((n,), jnp.bool_), carry0)
        traj, _, episodes = rollout(
            env, self.learner.policy, state.learner.params, k_roll, start, self.n_steps, env_ids
        )

        # 3. update the student
        learner, stats = self.learner.update(state.learner, traj, carry0, k_update, axis_name)

        metrics = {
            **episode_metrics(episodes, axis_name),
            **stats,
            **level_batch_metrics(
                self.level_metrics, jax.tree.map(lambda x: x[:, 0], levels), axis_name
            ),
            "env_steps": jnp.int32(self.n_envs * self.n_steps),
            "student_steps": jnp.int32(self.n_envs * self.n_steps),
        }
        return state.replace(learner=learner, cycle=state.cycle + 1), metrics
