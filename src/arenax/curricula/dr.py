"""Domain randomisation (DR): the players train on freshly generated levels.

One cycle, episodes restarted every cycle (`episodes="restart"`, the maze's):

    levels  <- generate (n_steps + 1) fresh levels per environment
    rollout <- every env is reset onto its first level; the players act for n_steps steps;
               an ended episode auto-resets to the env's next fresh level (no level is
               generated inside the rollout)
    update  <- PPO of each learning policy on its teams' agents

or, episodes continued across cycles (`episodes="continue"`: Tag, classic control, whose
episodes are longer than a cycle):

    levels  <- one fresh level per environment, where episodes that begin this cycle start
    rollout <- n_steps steps continuing where the last cycle stopped
    update  <- PPO of each learning policy on its teams' agents

The environments' states of the second form persist in the train state, split over devices
with the environment batch. With `ppo.carry_over` (the reference library's rule; one-team
games, restarted episodes) the rollout starts from the recurrent state the previous cycle
ended in, kept in the curriculum state the same way.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, ClassVar, Literal

import jax
import jax.numpy as jnp
from jax.sharding import PartitionSpec

from arenax.curricula.common import (
    Curriculum,
    CurriculumOptions,
    Setup,
    TrainState,
    level_batch_metrics,
)
from arenax.curricula.players import Players
from arenax.envs.wrappers import (
    AutoReplay,
    AutoResetFromBatch,
    EpisodeStats,
    with_replay_level,
)
from arenax.rl.rollout import per_env_keys, start_rollout


@dataclasses.dataclass(frozen=True)
class DRConfig(CurriculumOptions):
    """Options of domain randomisation (`--dr.*`)."""

    episodes: Literal["restart", "continue"] = "restart"
    """Episodes restart on fresh levels every cycle (a cycle holds whole episodes), or
    continue across cycles (episodes longer than a cycle: Tag, classic control)."""

    KIND: ClassVar[str] = "dr"
    SUMMARY: ClassVar[str] = "domain randomisation: fresh levels from the family's generator"
    carries_over: ClassVar[bool] = True

    def curriculum(self, s: Setup) -> DomainRandomisation:
        """DR over the game's generator."""
        return DomainRandomisation(
            s.players, s.n_envs, s.n_steps, s.game.generate, self, s.level_metrics()
        )

    def off_policy_curriculum(self, game: Any, ddpg: Any, n_envs: int, n_steps: int) -> Any:
        """DR for a team that learns with DDPG / TD3 (`ddpg`, its options): fresh levels
        from the game's generator, an off-policy cycle (`arenax.curricula.offpolicy`)."""
        from arenax.curricula.offpolicy import OffPolicyDR

        return OffPolicyDR(game, ddpg, n_envs, n_steps)


@dataclasses.dataclass(frozen=True)
class DomainRandomisation(Curriculum):
    """DR over `players.env`'s levels from `generator`.

    Attributes:
        players: the policies and how they act and learn.
        n_envs: global number of environments (over all devices).
        n_steps: rollout length per cycle.
        generator: `key -> level`.
        config: the DR options.
        level_metrics: optional `level -> dict` of family metrics to log.
    """

    players: Players
    n_envs: int
    n_steps: int
    generator: Callable[[jax.Array], Any]
    config: DRConfig = DRConfig()
    level_metrics: Callable[[Any], dict[str, jax.Array]] | None = None

    @property
    def continued(self) -> bool:
        return self.config.episodes == "continue"

    @property
    def carry_over(self) -> bool:
        """The recurrent state carries over between cycles (one-team games)."""
        return not self.continued and self.players.learner(self.players.teams[0]).config.carry_over

    @property
    def rollout_env(self) -> Any:
        inner = AutoReplay(self.env) if self.continued else AutoResetFromBatch(self.env)
        return EpisodeStats(inner)

    def init(self, key: jax.Array) -> TrainState:
        """Fresh policies; the environments (continued episodes) or recurrent states
        (carried over) that persist between cycles."""
        p = self.players
        if self.continued:
            k_params, k_levels, k_reset = jax.random.split(key, 3)
            ids = jnp.arange(self.n_envs, dtype=jnp.int32)
            levels = jax.vmap(self.generator)(per_env_keys(k_levels, ids))
            start = start_rollout(
                self.rollout_env, k_reset, levels, ids, p.initial_carry(self.n_envs)
            )
            learners = p.init(
                k_params, {t: jax.tree.map(lambda x: x[0], start.obs[t]) for t in p.teams}
            )
            return TrainState.create(key, learners, {"rollout": start})
        k_params, k_level = jax.random.split(key)
        obs, _ = self.env.reset(k_level, self.generator(k_level))
        own = {"carry": p.initial_carry(self.n_envs)} if self.carry_over else {}
        return TrainState.create(key, p.init(k_params, obs), own)

    def state_specs(self, axis: str) -> Any:
        """Replicated, but for what persists per environment: split with them."""
        if self.continued:
            own: Any = {"rollout": PartitionSpec(axis)}
        elif self.carry_over:
            own = {"carry": PartitionSpec(axis)}
        else:
            return PartitionSpec()
        return TrainState(
            learner=PartitionSpec(), curriculum=own, cycle=PartitionSpec(), rng=PartitionSpec()
        )

    def cycle(
        self, state: TrainState, key: jax.Array, env_ids: jax.Array, axis_name: str | None
    ) -> tuple[TrainState, dict[str, jax.Array]]:
        """One DR cycle over this device's environments `env_ids` (global indices)."""
        if self.continued:
            return self._continued_cycle(state, key, env_ids, axis_name)
        p = self.players
        k_levels, k_reset, k_roll, k_update = jax.random.split(key, 4)

        # 1. fresh levels: one per episode that can start in this rollout
        per_env = per_env_keys(k_levels, env_ids)
        levels = jax.vmap(
            lambda k: jax.vmap(self.generator)(jax.random.split(k, self.n_steps + 1))
        )(per_env)  # leaves (n, n_steps + 1, ...)

        # 2. rollout
        fresh = p.initial_carry(env_ids.shape[0])
        carry0 = state.curriculum["carry"] if self.carry_over else fresh
        start = start_rollout(
            self.rollout_env, k_reset, levels, env_ids, carry0, reset_carry=not self.carry_over
        )
        trajs, end, episodes = p.rollout(
            self.rollout_env, state.learner, k_roll, start, self.n_steps, env_ids
        )

        # 3. update the learning policies
        learners, stats = p.update(state.learner, trajs, carry0, k_update, axis_name)

        steps = jnp.int32(self.n_envs * self.n_steps)
        firsts = jax.tree.map(lambda x: x[:, 0], levels)
        metrics = {
            **p.episode_metrics(episodes, axis_name),
            **stats,
            **level_batch_metrics(self.level_metrics, firsts, axis_name),
            **p.agent_steps(trajs, self.n_envs, self.n_steps, axis_name),
            "env_steps": steps,
            "student_steps": steps,
            "updates": jnp.int32(1),
        }
        own = {"carry": end.carry} if self.carry_over else {}
        return state.next(learners, own), metrics

    def _continued_cycle(
        self, state: TrainState, key: jax.Array, env_ids: jax.Array, axis_name: str | None
    ) -> tuple[TrainState, dict[str, jax.Array]]:
        p = self.players
        k_levels, k_roll, k_update = jax.random.split(key, 3)
        start = state.curriculum["rollout"]

        # 1. fresh start levels for the episodes that begin in this cycle
        levels = jax.vmap(self.generator)(per_env_keys(k_levels, env_ids))
        start = start.replace(env_state=with_replay_level(start.env_state, levels))

        # 2. every team acts, continuing where the last cycle stopped
        trajs, end, episodes = p.rollout(
            self.rollout_env, state.learner, k_roll, start, self.n_steps, env_ids
        )

        # 3. each learning policy updates on its teams' agents
        learners, metrics = p.update(state.learner, trajs, start.carry, k_update, axis_name)
        steps = jnp.int32(self.n_envs * self.n_steps)
        metrics.update(p.episode_metrics(episodes, axis_name))
        metrics.update(p.agent_steps(trajs, self.n_envs, self.n_steps, axis_name))
        metrics.update({"env_steps": steps, "student_steps": steps, "updates": jnp.int32(1)})
        return state.next(learners, {"rollout": end}), metrics
