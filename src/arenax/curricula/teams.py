"""Level curricula over the levels of a many-agent game: PLR, robust PLR (PLR⊥), ACCEL,
their parallel forms (PLR∥, ACCEL∥) and SFL over grid Tag arenas, with every team driven by
its policy as in multi-team PPO (:class:`TeamPlay`).

A replay cycle is :class:`~arenax.curricula.plr.ReplayCurriculum`'s (sequential or
parallel), with these differences::

    rollout <- every env is reset onto its level at the cycle's start (recurrent states
               zero) and replays it (auto-reset to the same level) for n_steps; every
               team acts with its policy
    score   <- the *scoring team*'s regret estimate on the level (``score_team``; MaxMC,
               PVL or L1 value loss over each of its agents' episodes, GAE with its
               policy's options), averaged over its agents; the best return is the best
               of its agents'
    update  <- each learning policy on its teams' agents (frozen policies only act);
               robust forms update only on replay cycles, parallel forms on the replay
               block only

An SFL cycle is :class:`~arenax.curricula.sfl.SFLCurriculum`'s with the same rollouts and
updates; a level's success rate is the scoring team's (:class:`TeamSFLCurriculum`).

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
from arenax.curricula.plr import Blocks, Played, ReplayCurriculum
from arenax.curricula.scores import level_scores
from arenax.curricula.sfl import SFLCurriculum
from arenax.rl.gae import gae
from arenax.rl.learner import Learner, LearnerState, no_update_stats
from arenax.rl.rollout import start_rollout, team_rollout
from arenax.utils import tree_bytes


@dataclasses.dataclass(frozen=True)
class TeamPlay:
    """What a level curriculum needs to drive the teams of a many-agent game instead of one
    student: the policies, their initialisation, rollouts where every team acts, and the
    updates of the learning policies. Mixed into :class:`TeamReplayCurriculum` and
    :class:`TeamSFLCurriculum` ahead of the single-student curriculum, whose ``env``,
    ``n_envs`` and ``n_steps`` it reads (its ``learner`` is unused).

    Attributes:
        learners: ``{policy name: Learner}``.
        team_policy: ``{team: policy name}``.
        frozen: policies that act but do not learn.
        score_team: the team whose results score levels.
        bootstrap_truncation: per team, as in :class:`MultiTeamDR`.
    """

    learners: dict[str, Learner] = dataclasses.field(default_factory=dict)
    team_policy: dict[str, str] = dataclasses.field(default_factory=dict)
    frozen: frozenset[str] = frozenset()
    score_team: str = "tagger"
    bootstrap_truncation: bool | dict[str, bool] = False

    def __post_init__(self) -> None:
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

    def state_specs(self, axis: str) -> Any:
        return PartitionSpec()  # the buffer is global; no env state outlives a cycle

    def student_params(self, state: TrainState) -> Any:
        raise ValueError("a many-agent run has no maze student (see its teams' policies)")

    def _init_learners(
        self, key: jax.Array, level_key: jax.Array, level: Any
    ) -> dict[str, LearnerState]:
        """Fresh policies, shaped by the observations of ``level``."""
        obs, _ = self.env.reset(level_key, level)
        return self.multi.init_learners(key, obs)

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

    def _train(
        self, agents: dict[str, LearnerState], played: Played, key: jax.Array,
        axis_name: str | None,
    ) -> tuple[dict[str, LearnerState], dict[str, jax.Array]]:  # fmt: skip
        return self.multi.update(agents, played.traj, played.carry0, key, axis_name)

    def _team_rollout(
        self, params: dict[str, Any], key: jax.Array, levels: Any, ids: jax.Array, steps: int
    ) -> Played:
        """Every team plays this device's ``levels`` from their start for ``steps`` steps
        (each env replaying its level; recurrent states zero); ``advantages`` ``None``."""
        mt = self.multi
        k_reset, k_roll = jax.random.split(key)
        start = start_rollout(mt.rollout_env, k_reset, levels, ids, mt._carry(ids.shape[0]))
        policies = {t: self.learners[self.team_policy[t]].policy for t in mt.teams}
        team_params = {t: params[self.team_policy[t]] for t in mt.teams}
        trajs, _, episodes = team_rollout(
            mt.rollout_env, policies, team_params, k_roll, start, steps, ids,
            self.bootstrap_truncation,
        )  # fmt: skip
        return Played(trajs, start.carry, None, episodes)

    def _bytes_per_level(self, levels: Any) -> dict[str, jax.Array]:
        """Memory of one stored level (leaves ``(K, ...)``) in bytes."""
        one = jax.tree.map(lambda x: x[0], levels)
        return {"buffer/bytes_per_level": jnp.float32(tree_bytes(one))}


@dataclasses.dataclass(frozen=True)
class TeamReplayCurriculum(TeamPlay, ReplayCurriculum):
    """PLR / PLR⊥ / ACCEL and PLR∥ / ACCEL∥ over a many-agent game's levels (see the
    module docstring; the attributes are :class:`ReplayCurriculum`'s and
    :class:`TeamPlay`'s)."""

    def init(self, key: jax.Array) -> TrainState:
        """Fresh policies and an empty level buffer."""
        k_params, k_level = jax.random.split(key)
        level = self.generator(k_level)
        learners = self._init_learners(k_params, k_level, level)
        return TrainState.create(key, learners, B.create(level, self.config.buffer_size))

    def _play(self, params: dict[str, Any], key: jax.Array, levels: Any, ids: jax.Array) -> Played:
        """Every team plays this device's ``levels`` from their start (each env replaying
        its level), with advantages per team (its policy's GAE options)."""
        played = self._team_rollout(params, key, levels, ids, self.n_steps)
        advantages = {}
        for t, tr in played.traj.items():
            c = self.learners[self.team_policy[t]].config
            advantages[t], _ = gae(tr.reward, tr.value, tr.next_value, tr.terminated, tr.done,
                                   c.gamma, c.gae_lambda)  # fmt: skip
        return played._replace(advantages=advantages)

    def _block(self, layout: Blocks, played: Played, name: str) -> Played:
        """Block ``name``'s part of a parallel cycle's rollout: each team's columns are its
        agents, environment-major, so a block is ``n_local × agents`` of them."""
        a = {t: self.env.num_agents(t) for t in played.traj}
        return Played(
            {t: layout.part(x, name, 1, a[t]) for t, x in played.traj.items()},
            {t: layout.part(x, name, 0, a[t]) for t, x in played.carry0.items()},
            {t: layout.part(x, name, 1, a[t]) for t, x in played.advantages.items()},
            layout.part(played.episodes, name, axis=1),
        )  # fmt: skip

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

    def _metrics(self, buf: B.LevelBuffer, episodes: dict, stats: dict, levels_local: Any,
                 replay: jax.Array, updated: jax.Array, env_steps: jax.Array,
                 axis_name: str | None) -> dict:  # fmt: skip
        out = super()._metrics(buf, episodes, stats, levels_local, replay, updated, env_steps,
                               axis_name)  # fmt: skip
        return {**out, **self._bytes_per_level(buf.levels)}


@dataclasses.dataclass(frozen=True)
class TeamSFLCurriculum(TeamPlay, SFLCurriculum):
    """Sampling for learnability over a many-agent game's levels: SFL's cycle, with every
    team acting by its policy in the refresh's evaluation rollout and in the training
    rollout, and every learning policy updated each cycle.

    A level's success rate ``p`` is the scoring team's: for taggers the fraction of first
    episodes in which the runner is tagged, for runners the fraction survived. The
    learnability ``p (1 − p)`` is the same for both, so the buffer does not depend on the
    scoring team; ``sfl/success`` is the scoring team's rate.
    """

    @property
    def eval_steps(self) -> int:
        """The episode length: every copy of a refresh ends its first episode."""
        return int(self.env.episode_length)

    def _success(self, episodes: dict) -> jax.Array:
        tagged = episodes["success"]
        return tagged if self.score_team == "tagger" else episodes["done"] & ~tagged

    def _play(self, params: Any, key: jax.Array, levels: Any, ids: jax.Array, steps: int) -> Played:
        return self._team_rollout(params, key, levels, ids, steps)

    def cycle(
        self, state: TrainState, key: jax.Array, env_ids: jax.Array, axis_name: str | None
    ) -> tuple[TrainState, dict[str, jax.Array]]:
        state, metrics = super().cycle(state, key, env_ids, axis_name)
        return state, {**metrics, **self._bytes_per_level(state.curriculum.levels)}
