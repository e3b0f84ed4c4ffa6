"""Replay curricula over the levels of a many-agent game: PLR, robust PLR (PLR⊥) and ACCEL
over grid Tag arenas, with every team driven by its policy as in multi-team PPO.

One cycle is :class:`~arenax.curricula.plr.ReplayCurriculum`'s sequential cycle, with
these differences::

    rollout <- every env is reset onto its level at the cycle's start (recurrent states
               zero) and replays it (auto-reset to the same level) for n_steps; every
               team acts with its policy
    score   <- the *scoring team*'s regret estimate on the level (``score_team``; MaxMC,
               PVL or L1 value loss over each of its agents' episodes, GAE with its
               policy's options), averaged over its agents; the best return is the best
               of its agents'
    update  <- each learning policy on its teams' agents (frozen policies only act);
               robust forms update only on replay cycles

Whose learning drives the curriculum is ``score_team``'s: with ``--runner.frozen`` the
runners are a fixed opponent and the taggers the learning team; with both teams learning
(self-play, e.g. one shared policy) the curriculum still ranks levels by the scoring team's
regret. Levels are stored whole in the global buffer (a grid arena is ``(L+1)²`` booleans
and the start cells: ``buffer/bytes_per_level`` in the metrics).

Episodes must fit a cycle to be scored: with ``n_steps`` below the episode length a level
whose episodes all run past the cycle gets no score that cycle (``-inf`` stays out of the
buffer, as for mazes).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
from jax.sharding import PartitionSpec

from arenax.curricula import buffer as B
from arenax.curricula.common import TrainState
from arenax.curricula.multiteam import MultiTeamDR, team_episode_metrics
from arenax.curricula.plr import Played, ReplayCurriculum
from arenax.curricula.scores import level_scores
from arenax.rl.gae import gae
from arenax.rl.learner import Learner, LearnerState, no_update_stats
from arenax.rl.rollout import start_rollout, team_rollout
from arenax.utils import tree_bytes


@dataclasses.dataclass(frozen=True)
class TeamReplayCurriculum(ReplayCurriculum):
    """PLR / PLR⊥ / ACCEL (sequential forms) over a many-agent game's levels.

    Attributes (beyond :class:`ReplayCurriculum`'s, whose ``learner`` is unused):
        learners: ``{policy name: Learner}``.
        team_policy: ``{team: policy name}``.
        frozen: policies that act but do not learn.
        score_team: the team whose regret estimate scores levels.
        bootstrap_truncation: per team, as in :class:`MultiTeamDR`.
    """

    learners: dict[str, Learner] = dataclasses.field(default_factory=dict)
    team_policy: dict[str, str] = dataclasses.field(default_factory=dict)
    frozen: frozenset[str] = frozenset()
    score_team: str = "tagger"
    bootstrap_truncation: bool | dict[str, bool] = False

    def __post_init__(self) -> None:
        if self.config.parallel:
            raise ValueError("plr.parallel: the parallel forms are for mazes only so far")
        if self.score_team not in self.env.teams:
            raise ValueError(f"score_team={self.score_team!r}: allowed {', '.join(self.env.teams)}")

    @property
    def teams(self) -> tuple[str, ...]:
        return tuple(self.env.teams)

    @property
    def multi(self) -> MultiTeamDR:
        """The multi-team machinery (policies per team, rollouts, updates)."""
        return MultiTeamDR(
            env=self.env, learners=self.learners, team_policy=self.team_policy,
            frozen=self.frozen, n_envs=self.n_envs, n_steps=self.n_steps,
            bootstrap_truncation=self.bootstrap_truncation,
        )  # fmt: skip

    @property
    def progress(self) -> dict[str, str]:
        return self.multi.progress

    # ------------------------------------------------------------------ state
    def init(self, key: jax.Array) -> TrainState:
        """Fresh policies and an empty level buffer."""
        k_params, k_level = jax.random.split(key)
        level = self.generator(k_level)
        obs, _ = self.env.reset(k_level, level)
        learners = self.multi.init_learners(k_params, obs)
        return TrainState.create(key, learners, B.create(level, self.config.buffer_size))

    def state_specs(self, axis: str) -> Any:
        return PartitionSpec()  # the buffer is global; no env state outlives a cycle

    def student_params(self, state: TrainState) -> Any:
        raise ValueError("a many-agent run has no maze student (see its teams' policies)")

    # ------------------------------------------------------------------ who learns
    def _agents(self, state: TrainState) -> dict[str, LearnerState]:
        return state.learner

    def _learners(self, agents: dict[str, LearnerState]) -> dict[str, LearnerState]:
        return agents

    def _params(self, agents: dict[str, LearnerState]) -> dict[str, Any]:
        return {name: s.params for name, s in agents.items()}

    def _no_stats(self) -> dict[str, jax.Array]:
        return {f"{p}/{k}": v for p in self.multi.learning for k, v in no_update_stats().items()}

    def _episode_metrics(self, episodes: dict, axis_name: str | None) -> dict[str, jax.Array]:
        return team_episode_metrics(episodes, axis_name)

    # ------------------------------------------------------------------ pieces
    def _play(self, params: dict[str, Any], key: jax.Array, levels: Any, ids: jax.Array) -> Played:
        """Every team plays this device's ``levels`` from their start (each env replaying
        its level), with advantages per team (its policy's GAE options)."""
        mt = self.multi
        k_reset, k_roll = jax.random.split(key)
        start = start_rollout(mt.rollout_env, k_reset, levels, ids, mt._carry(ids.shape[0]))
        policies = {t: self.learners[self.team_policy[t]].policy for t in mt.teams}
        team_params = {t: params[self.team_policy[t]] for t in mt.teams}
        trajs, _, episodes = team_rollout(
            mt.rollout_env, policies, team_params, k_roll, start, self.n_steps, ids,
            self.bootstrap_truncation,
        )  # fmt: skip
        advantages = {}
        for t, tr in trajs.items():
            c = self.learners[self.team_policy[t]].config
            advantages[t], _ = gae(tr.reward, tr.value, tr.next_value, tr.terminated, tr.done,
                                   c.gamma, c.gae_lambda)  # fmt: skip
        return Played(trajs, start.carry, advantages, episodes)

    def _score(self, played: Played, levels: Any, max_returns: jax.Array) -> tuple:
        """Each level's score: the mean over the scoring team's agents of their regret
        estimates; the best return: the best of its agents' (``max_returns (n,)``)."""
        t = self.score_team
        tr, a = played.traj[t], self.env.num_agents(t)
        n = max_returns.shape[0]
        scores, best = level_scores(
            self.config.score, tr.reward, tr.value, played.advantages[t], tr.done,
            jnp.repeat(max_returns, a),
        )  # fmt: skip
        scores, best = scores.reshape(n, a), best.reshape(n, a)
        scored = jnp.isfinite(scores)
        mean = jnp.sum(jnp.where(scored, scores, 0.0), axis=1) / jnp.maximum(jnp.sum(scored, 1), 1)
        return jnp.where(jnp.any(scored, axis=1), mean, -jnp.inf), jnp.max(best, axis=1)

    def _train(
        self, agents: dict[str, LearnerState], played: Played, key: jax.Array,
        axis_name: str | None,
    ) -> tuple[dict[str, LearnerState], dict[str, jax.Array]]:  # fmt: skip
        return self.multi.update(agents, played.traj, played.carry0, key, axis_name)

    def _metrics(self, buf: B.LevelBuffer, episodes: dict, stats: dict, levels_local: Any,
                 replay: jax.Array, updated: jax.Array, env_steps: jax.Array,
                 axis_name: str | None) -> dict:  # fmt: skip
        out = super()._metrics(buf, episodes, stats, levels_local, replay, updated, env_steps,
                               axis_name)  # fmt: skip
        one = jax.tree.map(lambda x: x[0], buf.levels)
        out["buffer/bytes_per_level"] = jnp.float32(tree_bytes(one))
        return out
