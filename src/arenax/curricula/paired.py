"""Teacher-based autocurricula: PAIRED, population PAIRED and the minimax adversary.

One cycle, as in the PAIRED paper's loop::

    levels   <- the teacher builds one level per editor env (its whole episode)
    rollouts <- every student (protagonist, antagonist, or a population) plays copies of
                each level for n_steps steps (auto-reset to the same level)
    students <- PPO update of every student on its own rollout
    regret   <- score each level from the students' returns (PAIRED, mean-relative,
                population regret, or the negative return for the minimax adversary)
    teacher  <- the regret is the reward of the teacher's last step; PPO update

Students share one architecture and are stacked along a leading axis and ``vmap``-ed, so a
population costs one batched program. Each student and the teacher have their own
optimiser (and learning rate). With ``carry_over`` in a learner's PPO options (the
reference library's rule) its rollouts start from the recurrent state its previous rollout
ended in, kept in :class:`TeacherState`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from typing import Annotated, Any, Literal

import jax
import jax.numpy as jnp
from jax.sharding import PartitionSpec

from arenax.collectives import psum
from arenax.curricula.common import (
    STUDENT,
    Curriculum,
    TrainState,
    episode_metrics,
    level_batch_metrics,
)
from arenax.curricula.scores import episode_returns, teacher_score
from arenax.envs.core import Environment
from arenax.envs.maze.editor import EditorOptions
from arenax.envs.wrappers import AutoReplay, EpisodeStats, Wrapper
from arenax.nn.teacher import TeacherNetConfig
from arenax.options import POSITIVE, Problem
from arenax.rl.learner import Learner, LearnerState
from arenax.rl.ppo import PPOConfig, bootstraps
from arenax.rl.rollout import example_obs, rollout, start_rollout
from arenax.struct import pytree_dataclass

#: students each teacher score needs at least
MIN_STUDENTS = {"paired": 2, "mean_relative": 2, "population": 2, "neg_return": 1}


@dataclasses.dataclass(frozen=True)
class PairedConfig:
    """Options of the teacher curricula (``--algorithm paired``)."""

    n_students: Annotated[int, POSITIVE] = 2
    """Students: 2 for PAIRED (protagonist, antagonist), 1 for the minimax adversary, >= 3
    for population PAIRED. Student 0 is the one evaluated."""
    score: Literal["paired", "mean_relative", "population", "neg_return"] = "paired"
    """Teacher reward: PAIRED regret, mean-relative regret, population regret, or the
    negative return (minimax adversary)."""

    def problems(self) -> Iterator[Problem]:
        need = MIN_STUDENTS.get(self.score, 1)
        if isinstance(self.n_students, int) and self.n_students < need:
            yield Problem(
                "n_students", self.n_students, f"score {self.score!r} needs at least {need}"
            )


@dataclasses.dataclass(frozen=True)
class TeacherConfig(EditorOptions, TeacherNetConfig):
    """The PAIRED teacher: its editor MDP, its network and its own PPO."""

    ppo: PPOConfig = PPOConfig(lr=1e-4, gamma=0.995, gae_lambda=0.98, ent_coef=0.05)
    """The teacher's PPO (its own learning rate, discounting and entropy bonus)."""


@pytree_dataclass
class TeacherState:
    """The curriculum state of PAIRED: the teacher's learner state and the recurrent states
    carried over between cycles (``{}`` unless a learner has ``carry_over``: then
    ``"teacher" (N, ...)`` and/or ``"students" (n_students, N, ...)``)."""

    learner: LearnerState
    carry: dict[str, Any]

    @property
    def params(self) -> Any:
        """The teacher's parameters."""
        return self.learner.params


@dataclasses.dataclass(frozen=True)
class OneEpisode(Wrapper):
    """No reset: the episode fills the rollout exactly (the teacher's editing episode).
    Adds ``info["final_obs"]`` like the auto-reset wrappers."""

    def step_state(self, key: jax.Array, state: Any, action: Any) -> Any:
        state, reward, terminated, truncated, info = self.env.step_state(key, state, action)
        return state, reward, terminated, truncated, {**info, "final_obs": self.env.observe(state)}


@dataclasses.dataclass(frozen=True)
class TeacherCurriculum(Curriculum):
    """PAIRED-family curriculum.

    Attributes:
        env: the students' environment family.
        editor: the teacher's level-building environment (``decode(state) -> level``).
        students: the students' PPO learner (one per student, same architecture).
        teacher: the teacher's PPO learner.
        n_students: 2 for PAIRED, 1 for the minimax adversary, ≥ 3 for population PAIRED.
        score: a :data:`~arenax.curricula.scores.TEACHER_SCORES` name.
        n_envs: levels per cycle (global).
        n_steps: student rollout length.
        level_metrics: optional ``level -> dict`` of family metrics to log.
    """

    env: Environment
    editor: Any
    students: Learner
    teacher: Learner
    n_students: int
    score: str
    n_envs: int
    n_steps: int
    level_metrics: Callable[[Any], dict[str, jax.Array]] | None = None

    def init(self, key: jax.Array) -> TrainState:
        """Fresh students (stacked, the protagonist first) and a fresh teacher."""
        k_students, k_teacher, k_env = jax.random.split(key, 3)
        level = self.editor.decode(self.editor.reset_state(k_env, None))
        example = example_obs(self.env, k_env, level, "agent")
        students = jax.vmap(lambda k: self.students.init(k, example))(
            jax.random.split(k_students, self.n_students)
        )
        teacher = self.teacher.init(k_teacher, example_obs(self.editor, k_env, None, "teacher"))
        carry = {}
        if self.teacher.config.carry_over:
            carry["teacher"] = self.teacher.policy.initial_carry(self.n_envs)
        if self.students.config.carry_over:
            one = self.students.policy.initial_carry(self.n_envs)
            carry["students"] = jax.tree.map(lambda x: jnp.stack([x] * self.n_students), one)
        return TrainState.create(key, {STUDENT: students}, TeacherState(teacher, carry))

    def state_specs(self, axis: str) -> Any:
        """Replicated, but for carried-over recurrent states: split with the environments."""
        carry = {}
        if self.teacher.config.carry_over:
            carry["teacher"] = PartitionSpec(axis)
        if self.students.config.carry_over:
            carry["students"] = PartitionSpec(None, axis)
        if not carry:
            return PartitionSpec()
        return TrainState(
            learner=PartitionSpec(), curriculum=TeacherState(PartitionSpec(), carry),
            cycle=PartitionSpec(), rng=PartitionSpec(),
        )  # fmt: skip

    def student_params(self, state: TrainState) -> Any:
        """The protagonist's parameters (student 0)."""
        return jax.tree.map(lambda x: x[0], state.learner[STUDENT].params)

    def generate(self, params: Any, key: jax.Array, ids: jax.Array) -> tuple[Any, Any, Any]:
        """The teacher builds one level per env ``ids``: ``(levels, traj, init carry)``."""
        return self._build(params, key, ids)[:3]

    def _build(
        self, params: Any, key: jax.Array, ids: jax.Array, carry: Any = None
    ) -> tuple[Any, Any, Any, Any]:
        """:meth:`generate` starting from ``carry`` (carried over) or a zero state:
        ``(levels, traj, start carry, end carry)``."""
        env = EpisodeStats(OneEpisode(self.editor))
        k_reset, k_roll = jax.random.split(key)
        n = ids.shape[0]
        carry0 = self.teacher.policy.initial_carry(n) if carry is None else carry
        start = start_rollout(env, k_reset, jnp.zeros((n,)), ids, carry0, reset_carry=carry is None)
        traj, end, _ = rollout(
            env, self.teacher.policy, params, k_roll, start, self.editor.episode_length, ids,
            team="teacher",
        )  # fmt: skip
        levels = jax.vmap(self.editor.decode)(end.env_state.inner)
        return levels, traj, carry0, end.carry

    def _student_metrics(
        self, eps: dict, stats: dict, axis_name: str | None, episode_fn: Callable,
        stat_prefix: str = "",
    ) -> dict[str, jax.Array]:  # fmt: skip
        """Each student's episode metrics (``episode_fn``) and update statistics (the
        protagonist unprefixed, then ``student<i>/``) and the cycle's step counts."""
        out: dict[str, jax.Array] = {}
        for i in range(self.n_students):
            pre = "" if i == 0 else f"student{i}/"
            one = jax.tree.map(lambda x, i=i: x[i], eps)
            out.update({pre + k: v for k, v in episode_fn(one, axis_name).items()})
            out.update({f"{pre}{stat_prefix}{k}": v[i] for k, v in stats.items()})
        student_steps = self.n_students * self.n_envs * self.n_steps
        teacher_steps = self.n_envs * self.editor.episode_length
        out["student_steps"] = jnp.int32(student_steps)
        out["teacher_steps"] = jnp.int32(teacher_steps)
        out["env_steps"] = jnp.int32(student_steps + teacher_steps)
        out["updates"] = jnp.int32(1)
        return out

    def cycle(
        self, state: TrainState, key: jax.Array, ids: jax.Array, axis_name: str | None
    ) -> tuple[TrainState, dict[str, jax.Array]]:
        k_teach, k_students, k_update = jax.random.split(key, 3)
        n = ids.shape[0]

        carried = state.curriculum.carry
        carry = {}

        # 1. the teacher builds the levels
        levels, t_traj, t_carry0, carry["teacher"] = self._build(
            state.curriculum.params, k_teach, ids, carried.get("teacher")
        )

        # 2-3. every student plays copies of each level, then learns from its own rollout
        env = EpisodeStats(AutoReplay(self.env))
        sc = self.students.config

        def student(learner_state: Any, k: jax.Array, s_carry: Any) -> tuple:
            k_reset, k_roll, k_upd = jax.random.split(k, 3)
            carry0 = s_carry if sc.carry_over else self.students.policy.initial_carry(n)
            start = start_rollout(env, k_reset, levels, ids, carry0, reset_carry=not sc.carry_over)
            traj, end, eps = rollout(
                env, self.students.policy, learner_state.params, k_roll, start, self.n_steps,
                ids, bootstrap_truncation=bootstraps(sc, self.env),
            )  # fmt: skip
            new_state, stats = self.students.update(learner_state, traj, carry0, k_upd, axis_name)
            mean_r, best_r = episode_returns(traj.reward, traj.done)
            returns = (jnp.where(jnp.isfinite(mean_r), mean_r, 0.0),
                       jnp.where(jnp.isfinite(best_r), best_r, 0.0))  # fmt: skip
            return new_state, stats, returns, eps, end.carry

        keys = jax.random.split(k_students, self.n_students)
        students, s_stats, (mean_r, best_r), eps, carry["students"] = jax.vmap(student)(
            state.learner[STUDENT], keys, carried.get("students", jnp.zeros((self.n_students,)))
        )

        # 4. regret of each level -> the reward of the teacher's last step
        regret = teacher_score(self.score, mean_r, best_r)  # (n,)
        reward = t_traj.reward.at[-1].set(regret)
        t_traj = t_traj.replace(reward=reward)

        # 5. teacher update
        teacher, t_stats = self.teacher.update(
            state.curriculum.learner, t_traj, t_carry0, k_update, axis_name
        )

        total = jnp.float32(self.n_envs)
        metrics: dict[str, jax.Array] = {
            **{f"teacher/{k}": v for k, v in t_stats.items()},
            "regret": psum(jnp.sum(regret), axis_name) / total,
            **level_batch_metrics(self.level_metrics, levels, axis_name),
        }
        metrics.update(self._student_metrics(eps, s_stats, axis_name, episode_metrics))
        kept = {k: carry[k] for k in carried}  # the carries that carry over
        return state.next({STUDENT: students}, TeacherState(teacher, kept)), metrics
