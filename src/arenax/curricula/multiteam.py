"""Many-agent training: every team acts with its own policy; each learning policy runs PPO
on the agents of the teams it drives.

One cycle::

    levels  <- a fresh start level per environment (domain randomisation over starts);
               episodes that begin during this cycle start from it
    rollout <- n_steps steps of every env, continuing where the last cycle stopped; each
               team's agents act with their policy (parameters shared within the team)
    update  <- for each policy that learns: PPO on the trajectories of its teams' agents
               (teams sharing a policy are concatenated); frozen policies only act

Episodes are longer than a cycle (Tag: 500 steps), so the environments' states persist in
the train state between cycles, sharded over devices with the environment batch (see
:meth:`MultiTeamDR.state_specs`). Agents out of the game are masked in the loss; an agent
that leaves the game ends its own sequence (terminal for GAE).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
from jax.sharding import PartitionSpec

from arenax.collectives import psum
from arenax.curricula.common import Curriculum, TrainState, ended_means
from arenax.envs.core import Environment
from arenax.envs.wrappers import AutoReplay, EpisodeStats, with_replay_level
from arenax.nn.mlp import MLPConfig
from arenax.rl.learner import Learner
from arenax.rl.ppo import PPOConfig
from arenax.rl.rollout import RolloutCarry, per_env_keys, start_rollout, team_rollout


@dataclasses.dataclass(frozen=True)
class TeamConfig(MLPConfig):
    """How one team of a many-agent game is driven and trained (its MLP's options, its
    policy name, and its PPO)."""

    policy: str = ""
    """Name of the policy driving this team (default: the team's name). Teams with the same
    policy name share one policy (their spaces must match; the first team's options apply
    and the others' must be equal)."""
    frozen: bool = False
    """The team acts but does not learn (keeps its initial parameters)."""
    scripted: bool = False
    """Tag: the team is played by the scripted players during training (taggers chase the
    nearest runner, runners flee the nearest tagger; privileged, they read the game state)
    and has no policy; evaluation's "trained" driver of this team is the script."""
    ppo: PPOConfig = PPOConfig(
        lr=3e-4, gamma=0.99, gae_lambda=0.95, ent_coef=0.01, epochs=4, minibatches=4,
        clip_value=False,
    )  # fmt: skip
    """The policy's PPO hyperparameters. The value loss is not clipped: Tag's rewards are
    ±10 per tag, and a clip at ±clip_eps in return units slows the critic (measured in
    ``benchmarks/tag_learning.py``)."""


@dataclasses.dataclass(frozen=True)
class MultiTeamDR(Curriculum):
    """Multi-team PPO over an environment with several teams, fresh start levels each cycle.

    Attributes:
        env: the (unwrapped) environment; ``env.teams`` are its teams.
        learners: ``{policy name: Learner}``.
        team_policy: ``{team: policy name}``; several teams may share a policy when their
            observation and action spaces match.
        frozen: policies that act but do not learn.
        n_envs: global number of environments (over all devices).
        n_steps: rollout length per cycle.
        bootstrap_truncation: per team, bootstrap at the time limit; ``False`` (Tag's
            default) treats it as terminal, since agents observe ``t/T`` and the game pays
            out at ``t = T``.
    """

    env: Environment
    learners: dict[str, Learner]
    team_policy: dict[str, str]
    frozen: frozenset[str] = frozenset()
    n_envs: int = 1
    n_steps: int = 1
    bootstrap_truncation: bool | dict[str, bool] = False

    @property
    def progress(self) -> dict[str, str]:
        """The progress bar's fields (label -> metric): the first team's return and the
        env's per-episode counters (Tag: runners tagged)."""
        first = self.teams[0]
        label = "return" if len(self.teams) == 1 else f"{first} return"
        return {label: f"return/{first}", **{k: k for k in self.env.episode_sums}}

    def __post_init__(self) -> None:
        missing = set(self.env.teams) - set(self.team_policy)
        if missing:
            raise ValueError(f"teams {sorted(missing)} have no policy")
        unknown = set(self.team_policy.values()) - set(self.learners)
        if unknown:
            raise ValueError(f"policies {sorted(unknown)} have no learner")

    @property
    def rollout_env(self) -> Environment:
        return EpisodeStats(AutoReplay(self.env))

    @property
    def teams(self) -> tuple[str, ...]:
        return tuple(self.env.teams)

    def teams_of(self, policy: str) -> tuple[str, ...]:
        return tuple(t for t in self.teams if self.team_policy[t] == policy)

    @property
    def learning(self) -> tuple[str, ...]:
        """Policies that learn, in a fixed order."""
        return tuple(p for p in sorted(self.learners) if p not in self.frozen)

    def _carry(self, n: int) -> dict[str, Any]:
        return {
            t: self.learners[self.team_policy[t]].policy.initial_carry(n * self.env.num_agents(t))
            for t in self.teams
        }

    def init(self, key: jax.Array) -> TrainState:
        """Fresh policies and ``n_envs`` environments reset to generated levels."""
        k_params, k_levels, k_reset = jax.random.split(key, 3)
        ids = jnp.arange(self.n_envs, dtype=jnp.int32)
        levels = jax.vmap(self.env.generate)(per_env_keys(k_levels, ids))
        start = start_rollout(self.rollout_env, k_reset, levels, ids, self._carry(self.n_envs))
        learners = self.init_learners(k_params, {t: start.obs[t][0] for t in self.teams})
        return TrainState.create(key, learners, {"rollout": start})

    def state_specs(self, axis: str) -> TrainState:
        """Placement of the train state: the environments' states and observations split
        over devices with the environment batch, everything else replicated."""
        return TrainState(
            learner=PartitionSpec(),
            curriculum={"rollout": PartitionSpec(axis)},
            cycle=PartitionSpec(),
            rng=PartitionSpec(),
        )

    def student_params(self, state: TrainState) -> Any:
        raise ValueError("a many-agent run has no maze student (see its teams' policies)")

    def team_policies(self) -> dict[str, Any]:
        """``{team: the policy that drives it}``."""
        return {t: self.learners[self.team_policy[t]].policy for t in self.teams}

    def team_params(self, state: TrainState) -> dict[str, Any]:
        """``{team: the parameters that drive it}`` of a train state."""
        return {t: state.learner[self.team_policy[t]].params for t in self.teams}

    def init_learners(self, key: jax.Array, obs: dict[str, jax.Array]) -> dict[str, Any]:
        """Fresh parameters of every policy, shaped by ``obs[team] (A_team, ...)`` of one env."""
        learners = {}
        for i, (name, learner) in enumerate(sorted(self.learners.items())):
            team = self.teams_of(name)[0]
            learners[name] = learner.init(jax.random.fold_in(key, i), obs[team][None])
        return learners

    def update(
        self, states: dict[str, Any], trajs: dict[str, Any], carry0: dict[str, Any],
        key: jax.Array, axis_name: str | None,
    ) -> tuple[dict[str, Any], dict[str, jax.Array]]:  # fmt: skip
        """PPO of each learning policy on the trajectories ``trajs[team] (T, N·A_team)`` of
        the teams it drives (concatenated), from their initial carries ``carry0``: the new
        learner states and ``<policy>/<stat>`` metrics."""
        learners = dict(states)
        metrics: dict[str, jax.Array] = {}
        for i, name in enumerate(self.learning):
            teams = self.teams_of(name)
            traj = jax.tree.map(lambda *x: jnp.concatenate(x, axis=1), *[trajs[t] for t in teams])
            carry = jax.tree.map(lambda *x: jnp.concatenate(x, axis=0), *[carry0[t] for t in teams])
            learners[name], st = self.learners[name].update(
                states[name], traj, carry, jax.random.fold_in(key, i), axis_name
            )
            metrics.update({f"{name}/{k}": v for k, v in st.items()})
        return learners, metrics

    def cycle(
        self, state: TrainState, key: jax.Array, env_ids: jax.Array, axis_name: str | None
    ) -> tuple[TrainState, dict[str, jax.Array]]:
        """One cycle over this device's environments ``env_ids`` (global indices)."""
        k_levels, k_roll, k_update = jax.random.split(key, 3)
        start: RolloutCarry = state.curriculum["rollout"]

        # 1. fresh start levels for the episodes that begin in this cycle
        levels = jax.vmap(self.env.generate)(per_env_keys(k_levels, env_ids))
        start = start.replace(env_state=with_replay_level(start.env_state, levels))

        # 2. every team acts
        policies = {t: self.learners[self.team_policy[t]].policy for t in self.teams}
        params = {t: state.learner[self.team_policy[t]].params for t in self.teams}
        trajs, end, episodes = team_rollout(
            self.rollout_env, policies, params, k_roll, start, self.n_steps, env_ids,
            self.bootstrap_truncation,
        )  # fmt: skip

        # 3. each learning policy updates on its teams' agents
        learners, metrics = self.update(state.learner, trajs, start.carry, k_update, axis_name)
        metrics.update(team_episode_metrics(episodes, axis_name))
        metrics["env_steps"] = jnp.int32(self.n_envs * self.n_steps)
        # agents in the game, step by step (tagged runners that left are not counted)
        in_game = sum(jnp.sum(trajs[t].mask) for t in self.teams)
        metrics["agent_steps"] = psum(in_game, axis_name).astype(jnp.int32)
        n_agents = sum(self.env.num_agents(t) for t in self.teams)  # and every agent slot
        metrics["agent_slot_steps"] = jnp.int32(self.n_envs * self.n_steps * n_agents)
        metrics["updates"] = jnp.int32(1)
        return state.next(learners, {"rollout": end}), metrics


def team_episode_metrics(episodes: dict[str, Any], axis_name: str | None) -> dict[str, jax.Array]:
    """Means over the episodes that ended in a rollout (over all devices): ``episodes``,
    ``episode_length``, ``return/<team>`` (per-agent episode reward, averaged over the
    team) and each per-episode counter (Tag: ``tagged``, runners tagged per episode). NaN
    when no episode ended."""
    values = {
        "episode_length": episodes["length"],
        **{f"return/{t}": r for t, r in episodes["returns"].items()},
        **episodes["sums"],
    }
    n, means = ended_means(episodes["done"], values, axis_name)
    return {"episodes": n, **means}
