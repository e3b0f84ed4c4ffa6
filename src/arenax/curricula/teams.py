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

from arenax.collectives import psum
from arenax.curricula import buffer as B
from arenax.curricula.common import TrainState, level_batch_metrics
from arenax.curricula.multiteam import MultiTeamDR, team_episode_metrics
from arenax.curricula.paired import TeacherCurriculum, TeacherState
from arenax.curricula.plr import Blocks, Played, ReplayCurriculum
from arenax.curricula.scores import (
    finite_mean,
    level_scores,
    teacher_score,
    team_episode_returns,
)
from arenax.curricula.sfl import SFLCurriculum
from arenax.envs.wrappers import AutoReplay, EpisodeStats
from arenax.rl.gae import gae
from arenax.rl.learner import Learner, LearnerState, no_update_stats
from arenax.rl.rollout import example_obs, start_rollout, team_rollout
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
        score_team: the team whose results score levels (replay curricula: also
            ``"both"``, the mean of the teams' value-loss scores).
        bootstrap_truncation: per team, as in :class:`MultiTeamDR`.
    """

    learners: dict[str, Learner] = dataclasses.field(default_factory=dict)
    team_policy: dict[str, str] = dataclasses.field(default_factory=dict)
    frozen: frozenset[str] = frozenset()
    score_team: str = "tagger"
    bootstrap_truncation: bool | dict[str, bool] = False

    def __post_init__(self) -> None:
        if self.score_team not in (*self.env.teams, "both"):
            raise ValueError(f"score_team={self.score_team!r}: allowed {', '.join(self.env.teams)}, both")  # fmt: skip

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

    def team_policies(self) -> dict[str, Any]:
        return self.multi.team_policies()

    def team_params(self, state: TrainState) -> dict[str, Any]:
        return self.multi.team_params(state)

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
        estimates; the best return: the best of its agents' (``max_returns (n,)``). With
        ``score_team="both"`` (value-loss scores only): the mean of the teams' scores
        that are finite, each team weighing the same."""
        if self.score_team == "both":
            per = [self._team_score(t, played, max_returns) for t in self.teams]
            scores = jnp.stack([sc for sc, _ in per])
            return finite_mean(scores, 0, -jnp.inf), per[0][1]
        return self._team_score(self.score_team, played, max_returns)

    def _team_score(self, t: str, played: Played, max_returns: jax.Array) -> tuple:
        tr, a = played.traj[t], self.env.num_agents(t)
        n = max_returns.shape[0]
        scores, best = level_scores(
            self.config.score, tr.reward, tr.value, played.advantages[t], tr.done,
            jnp.repeat(max_returns, a),
        )  # fmt: skip
        scores, best = scores.reshape(n, a), best.reshape(n, a)
        return finite_mean(scores, 1, -jnp.inf), jnp.max(best, axis=1)

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
    episodes in which the runner is tagged, for runners the fraction survived. With many
    runners (continuous Tag, runners leaving when tagged) each runner is one trial: an
    episode's outcome is the fraction of its runners tagged (survived, for runners), and
    ``p`` its mean over first episodes. The learnability ``p (1 − p)`` is the same for
    both, so the buffer does not depend on the scoring team; ``sfl/success`` is the
    scoring team's rate.
    """

    @property
    def eval_steps(self) -> int:
        """The episode length: every copy of a refresh ends its first episode."""
        return int(self.env.episode_length)

    def _success(self, episodes: dict) -> jax.Array:
        runners = self.env.num_agents("runner")
        if runners == 1:  # grid Tag: the episode ends when its runner is tagged
            tagged = episodes["success"]
            return episodes["done"] & ~tagged if self.score_team == "runner" else tagged
        share = jnp.minimum(episodes["sums"]["tagged"] / runners, 1.0)  # of an ended episode
        return (
            jnp.where(episodes["done"], 1.0 - share, 0.0) if self.score_team == "runner" else share
        )

    def _play(self, params: Any, key: jax.Array, levels: Any, ids: jax.Array, steps: int) -> Played:
        return self._team_rollout(params, key, levels, ids, steps)

    def cycle(
        self, state: TrainState, key: jax.Array, env_ids: jax.Array, axis_name: str | None
    ) -> tuple[TrainState, dict[str, jax.Array]]:
        state, metrics = super().cycle(state, key, env_ids, axis_name)
        return state, {**metrics, **self._bytes_per_level(state.curriculum.levels)}


@dataclasses.dataclass(frozen=True)
class TeamTeacherCurriculum(TeacherCurriculum):
    """PAIRED, the minimax adversary and population PAIRED over a many-agent game's levels:
    a teacher builds each arena (``editor``, e.g. :class:`~arenax.envs.tag.editor.ArenaEditor`)
    and the **students are policies of the learning team** (``team``; taggers by default):
    student 0 (the protagonist), student 1 (the antagonist) or a population, stacked and
    ``vmap``-ed as for mazes. Every other team is driven by one policy per team shared by
    every student's games (``others``), which learns from the protagonist's games unless
    frozen. One cycle::

        levels   <- the teacher builds one arena per env (its whole episode)
        rollouts <- for each student: the student's team plays against the other teams
                    (each env replays its arena, recurrent states zero) for n_steps
        students <- PPO of each student on its team's agents
        others   <- PPO of each learning other-team policy on its agents in the
                    protagonist's games
        regret   <- the teacher score from each student's episode returns on the arena
                    (mean over its team's agents; best: the best of its agents')
        teacher  <- the regret is the reward of its last step; PPO update

    Attributes (beyond :class:`TeacherCurriculum`'s, whose ``students`` is the learning
    team's learner):
        team: the learning team.
        others: ``{team: Learner}`` of every other team.
        frozen: other teams that act but do not learn.
        bootstrap_truncation: per team, as in :class:`MultiTeamDR`.
    """

    team: str = "tagger"
    others: dict[str, Learner] = dataclasses.field(default_factory=dict)
    frozen: frozenset[str] = frozenset()
    bootstrap_truncation: bool | dict[str, bool] = False

    @property
    def teams(self) -> tuple[str, ...]:
        return tuple(self.env.teams)

    @property
    def learners(self) -> dict[str, Learner]:
        """``{team: its learner}`` (the students' for the learning team)."""
        return {**self.others, self.team: self.students}

    @property
    def team_policy(self) -> dict[str, str]:
        return {t: t for t in self.teams}

    @property
    def progress(self) -> dict[str, str]:
        """The protagonist's team return, the regret and the env's per-episode counters."""
        sums = {k: k for k in self.env.episode_sums}
        return {f"{self.team} return": f"return/{self.team}", "regret": "regret", **sums}

    def team_policies(self) -> dict[str, Any]:
        return {t: self.learners[t].policy for t in self.teams}

    def team_params(self, state: TrainState) -> dict[str, Any]:
        """The protagonist's parameters for the learning team, the others' own."""
        own = jax.tree.map(lambda x: x[0], state.learner[self.team].params)
        return {t: own if t == self.team else state.learner[t].params for t in self.teams}

    def student_params(self, state: TrainState) -> Any:
        raise ValueError("a many-agent run has no maze student (see its teams' policies)")

    def init(self, key: jax.Array) -> TrainState:
        """Fresh students (stacked, the protagonist first), other-team policies and teacher."""
        k_students, k_others, k_teacher, k_env = jax.random.split(key, 4)
        level = self.editor.decode(self.editor.reset_state(k_env, None))
        obs, _ = self.env.reset(k_env, level)
        students = jax.vmap(lambda k: self.students.init(k, obs[self.team][None]))(
            jax.random.split(k_students, self.n_students)
        )
        learners = {self.team: students}
        for i, (t, learner) in enumerate(sorted(self.others.items())):
            learners[t] = learner.init(jax.random.fold_in(k_others, i), obs[t][None])
        teacher = self.teacher.init(k_teacher, example_obs(self.editor, k_env, None, "teacher"))
        return TrainState.create(key, learners, TeacherState(teacher, {}))

    def state_specs(self, axis: str) -> Any:
        return PartitionSpec()  # no recurrent state or env state outlives a cycle

    def cycle(
        self, state: TrainState, key: jax.Array, ids: jax.Array, axis_name: str | None
    ) -> tuple[TrainState, dict[str, jax.Array]]:
        k_teach, k_students, k_update, k_others = jax.random.split(key, 4)
        n, me = ids.shape[0], self.team
        env = EpisodeStats(AutoReplay(self.env))
        policies = self.team_policies()
        carry = {t: policies[t].initial_carry(n * self.env.num_agents(t)) for t in self.teams}
        other_params = {t: state.learner[t].params for t in self.others}

        # 1. the teacher builds the arenas
        levels, t_traj, t_carry0, _ = self._build(state.curriculum.params, k_teach, ids)

        # 2-3. every student's team plays against the others, then learns from its agents
        def student(learner_state: Any, k: jax.Array) -> tuple:
            k_reset, k_roll, k_upd = jax.random.split(k, 3)
            start = start_rollout(env, k_reset, levels, ids, carry)
            trajs, _, eps = team_rollout(
                env, policies, {**other_params, me: learner_state.params}, k_roll, start,
                self.n_steps, ids, self.bootstrap_truncation,
            )  # fmt: skip
            new_state, stats = self.students.update(learner_state, trajs[me], carry[me], k_upd,
                                                    axis_name)  # fmt: skip
            returns = team_episode_returns(trajs[me].reward, trajs[me].done,
                                           self.env.num_agents(me))  # fmt: skip
            others = {t: trajs[t] for t in self.others}
            return new_state, stats, returns, eps, others

        keys = jax.random.split(k_students, self.n_students)
        students, s_stats, (mean_r, best_r), eps, o_trajs = jax.vmap(student)(
            state.learner[me], keys
        )

        # 4. the other teams learn from the protagonist's games
        learners = {me: students}
        metrics: dict[str, jax.Array] = {}
        for i, (t, learner) in enumerate(sorted(self.others.items())):
            if t in self.frozen:
                learners[t] = state.learner[t]
                continue
            traj0 = jax.tree.map(lambda x: x[0], o_trajs[t])
            learners[t], st = learner.update(state.learner[t], traj0, carry[t],
                                             jax.random.fold_in(k_others, i), axis_name)  # fmt: skip
            metrics.update({f"{t}/{k}": v for k, v in st.items()})

        # 5. regret of each arena -> the reward of the teacher's last step; teacher update
        regret = teacher_score(self.score, mean_r, best_r)  # (n,)
        t_traj = t_traj.replace(reward=t_traj.reward.at[-1].set(regret))
        teacher, t_stats = self.teacher.update(
            state.curriculum.learner, t_traj, t_carry0, k_update, axis_name
        )

        metrics.update({f"teacher/{k}": v for k, v in t_stats.items()})
        metrics["regret"] = psum(jnp.sum(regret), axis_name) / jnp.float32(self.n_envs)
        metrics.update(level_batch_metrics(self.level_metrics, levels, axis_name))
        metrics.update(
            self._student_metrics(eps, s_stats, axis_name, team_episode_metrics, f"{me}/")
        )
        return state.next(learners, TeacherState(teacher, {})), metrics
