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
optimiser (and learning rate).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from arenax.curricula.common import TrainState, episode_metrics, level_batch_metrics, psum
from arenax.curricula.scores import episode_returns, teacher_score
from arenax.envs.core import Environment
from arenax.envs.wrappers import AutoReplay, EpisodeStats, Wrapper
from arenax.rl.learner import Learner
from arenax.rl.rollout import RolloutCarry, per_env_keys, rollout


@dataclasses.dataclass(frozen=True)
class OneEpisode(Wrapper):
    """No reset: the episode fills the rollout exactly (the teacher's editing episode).
    Adds ``info["final_obs"]`` like the auto-reset wrappers."""

    def step_state(self, key: jax.Array, state: Any, action: Any) -> Any:
        state, reward, terminated, truncated, info = self.env.step_state(key, state, action)
        return state, reward, terminated, truncated, {**info, "final_obs": self.env.observe(state)}


@dataclasses.dataclass(frozen=True)
class TeacherCurriculum:
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
        k_students, k_teacher, k_env = jax.random.split(key, 3)
        t_obs, _ = self.editor.reset(k_env, None)
        level = self.editor.decode(self.editor.reset_state(k_env, None))
        s_obs, _ = self.env.reset(k_env, level)
        example = jax.tree.map(lambda x: x[None], s_obs["agent"])
        students = jax.vmap(lambda k: self.students.init(k, example))(
            jax.random.split(k_students, self.n_students)
        )
        return TrainState(
            learner=students,
            curriculum=self.teacher.init(
                k_teacher, jax.tree.map(lambda x: x[None], t_obs["teacher"])
            ),
            cycle=jnp.zeros((), jnp.int32),
            rng=jax.random.key_data(key).astype(jnp.uint32),
        )

    def generate(self, params: Any, key: jax.Array, ids: jax.Array) -> tuple[Any, Any, Any]:
        """The teacher builds one level per env ``ids``: ``(levels, traj, init carry)``."""
        env = EpisodeStats(OneEpisode(self.editor))
        k_reset, k_roll = jax.random.split(key)
        n = ids.shape[0]
        obs, state = jax.vmap(env.reset)(per_env_keys(k_reset, ids), jnp.zeros((n,)))
        carry0 = self.teacher.policy.initial_carry(n)
        start = RolloutCarry(state, obs, jnp.ones((n,), jnp.bool_), carry0)
        traj, end, _ = rollout(
            env, self.teacher.policy, params, k_roll, start, self.editor.episode_length, ids,
            team="teacher",
        )  # fmt: skip
        levels = jax.vmap(self.editor.decode)(end.env_state.inner)
        return levels, traj, carry0

    def cycle(
        self, state: TrainState, key: jax.Array, ids: jax.Array, axis_name: str | None
    ) -> tuple[TrainState, dict[str, jax.Array]]:
        k_teach, k_students, k_update = jax.random.split(key, 3)
        n = ids.shape[0]

        # 1. the teacher builds the levels
        levels, t_traj, t_carry0 = self.generate(state.curriculum.params, k_teach, ids)

        # 2-3. every student plays copies of each level, then learns from its own rollout
        env = EpisodeStats(AutoReplay(self.env))

        def student(learner_state: Any, k: jax.Array) -> tuple[Any, dict, Any, Any]:
            k_reset, k_roll, k_upd = jax.random.split(k, 3)
            obs, st = jax.vmap(env.reset)(per_env_keys(k_reset, ids), levels)
            carry0 = self.students.policy.initial_carry(n)
            start = RolloutCarry(st, obs, jnp.ones((n,), jnp.bool_), carry0)
            traj, _, eps = rollout(
                env, self.students.policy, learner_state.params, k_roll, start, self.n_steps, ids
            )
            new_state, stats = self.students.update(learner_state, traj, carry0, k_upd, axis_name)
            mean_r, best_r = episode_returns(traj.reward, traj.done)
            returns = (jnp.where(jnp.isfinite(mean_r), mean_r, 0.0),
                       jnp.where(jnp.isfinite(best_r), best_r, 0.0))  # fmt: skip
            return new_state, stats, returns, eps

        keys = jax.random.split(k_students, self.n_students)
        students, s_stats, (mean_r, best_r), eps = jax.vmap(student)(state.learner, keys)

        # 4. regret of each level -> the reward of the teacher's last step
        regret = teacher_score(self.score, mean_r, best_r)  # (n,)
        reward = t_traj.reward.at[-1].set(regret)
        t_traj = t_traj.replace(reward=reward)

        # 5. teacher update
        teacher, t_stats = self.teacher.update(
            state.curriculum, t_traj, t_carry0, k_update, axis_name
        )

        total = jnp.float32(self.n_envs)
        metrics: dict[str, jax.Array] = {
            **{f"teacher/{k}": v for k, v in t_stats.items()},
            "regret": psum(jnp.sum(regret), axis_name) / total,
            **level_batch_metrics(self.level_metrics, levels, axis_name),
        }
        for i in range(self.n_students):
            pre = "" if i == 0 else f"student{i}/"
            one = jax.tree.map(lambda x, i=i: x[i], eps)
            metrics.update({pre + k: v for k, v in episode_metrics(one, axis_name).items()})
            metrics.update({pre + k: v[i] for k, v in s_stats.items()})
        student_steps = self.n_students * self.n_envs * self.n_steps
        teacher_steps = self.n_envs * self.editor.episode_length
        metrics["student_steps"] = jnp.int32(student_steps)
        metrics["teacher_steps"] = jnp.int32(teacher_steps)
        metrics["env_steps"] = jnp.int32(student_steps + teacher_steps)
        return state.replace(learner=students, curriculum=teacher, cycle=state.cycle + 1), metrics
