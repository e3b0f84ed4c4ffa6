"""Turn a :class:`TrainConfig` into the objects of a run: environment, learner, algorithm."""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import jax
import jax.numpy as jnp

from arenax.curricula.dr import DomainRandomisation
from arenax.curricula.paired import TeacherCurriculum
from arenax.curricula.plr import PLRHyper, ReplayCurriculum
from arenax.envs.maze import (
    MazeEditor,
    MazeEnv,
    empty_level,
    level_metrics,
    mutate_level,
    optimal_steps,
    sample_dr_level,
)
from arenax.envs.maze.paths import UNREACHABLE
from arenax.nn.student import StudentPolicy
from arenax.nn.teacher import TeacherPolicy
from arenax.rl.learner import Learner, make_optimizer
from arenax.rl.ppo import PPOHyper
from arenax.train.config import PPOConfig, TrainConfig


def make_env(cfg: TrainConfig) -> MazeEnv:
    e = cfg.env
    return MazeEnv(
        height=e.height,
        width=e.width,
        view_size=e.view_size,
        max_steps=e.max_steps,
        normalize_obs=e.normalize_obs,
        n_walls=e.n_walls,
    )


def make_policy(cfg: TrainConfig, n_actions: int = 7) -> StudentPolicy:
    m = cfg.model
    return StudentPolicy(
        n_actions=n_actions,
        cell=m.cell,
        hidden=m.hidden,
        conv_filters=m.conv_filters,
        dir_embed=m.dir_embed,
        head_hidden=m.head_hidden,
    )


def _ppo_learner(cfg: TrainConfig, policy: Any, p: PPOConfig) -> Learner:
    """A PPO learner for ``policy`` with the options ``p`` (schedule over the whole run)."""
    total_updates = cfg.cycles * p.epochs * p.minibatches
    tx, sched = make_optimizer(p.lr, p.max_grad_norm, p.adam_eps, p.lr_schedule, total_updates)
    hp = PPOHyper(
        gamma=p.gamma,
        gae_lambda=p.gae_lambda,
        clip_eps=p.clip_eps,
        clip_value=p.clip_value,
        ent_coef=p.ent_coef,
        vf_coef=p.vf_coef,
        epochs=p.epochs,
        minibatches=p.minibatches,
        normalize_advantages=p.normalize_advantages,
    )
    return Learner(policy, hp, tx, sched)


def make_learner(cfg: TrainConfig) -> Learner:
    """The student's learner."""
    return _ppo_learner(cfg, make_policy(cfg, make_env(cfg).action_space().n), cfg.ppo)


def maze_optimal_return(level: Any, max_steps: int) -> jax.Array:
    """Best achievable return of a maze level: ``1 - 0.9 * optimal_steps / max_steps`` (0 if
    unsolvable or out of reach within ``max_steps``)."""
    steps = optimal_steps(level)
    ok = (steps < UNREACHABLE) & (steps <= max_steps)
    return jnp.where(ok, 1.0 - 0.9 * steps.astype(jnp.float32) / max_steps, 0.0)


def make_editor(cfg: TrainConfig) -> MazeEditor:
    t = cfg.teacher
    return MazeEditor(cfg.env.height, cfg.env.width, n_walls=t.n_walls, noise_dim=t.noise_dim)


def make_teacher(cfg: TrainConfig) -> Learner:
    """The PAIRED teacher's learner (its own network, optimiser and learning rate)."""
    t = cfg.teacher
    editor = make_editor(cfg)
    policy = TeacherPolicy(
        n_actions=editor.action_space().n, episode_length=editor.episode_length,
        hidden=t.hidden, conv_filters=t.conv_filters, time_embed=t.time_embed,
        head_hidden=t.head_hidden,
    )  # fmt: skip
    # the students' PPO options, with the teacher's own rate, discounting, entropy and epochs
    ppo = dataclasses.replace(
        cfg.ppo, lr=t.lr, gamma=t.gamma, gae_lambda=t.gae_lambda, ent_coef=t.ent_coef,
        epochs=t.epochs, minibatches=t.minibatches,
    )  # fmt: skip
    return _ppo_learner(cfg, policy, ppo)


def student_params(cfg: TrainConfig, state: Any) -> Any:
    """The parameters of the evaluated student (PAIRED: the protagonist, student 0)."""
    params = state.learner.params
    if cfg.algorithm == "paired":
        params = jax.tree.map(lambda x: x[0], params)
    return params


def make_algorithm(cfg: TrainConfig) -> DomainRandomisation | ReplayCurriculum | TeacherCurriculum:
    """The curriculum algorithm named by ``cfg.algorithm``."""
    env = make_env(cfg)
    if cfg.algorithm == "paired":
        return TeacherCurriculum(
            env=env,
            editor=make_editor(cfg),
            students=make_learner(cfg),
            teacher=make_teacher(cfg),
            n_students=cfg.paired.n_students,
            score=cfg.paired.score,
            n_envs=cfg.n_envs,
            n_steps=cfg.n_steps,
            level_metrics=level_metrics,
        )
    e = cfg.env
    generator = functools.partial(
        sample_dr_level,
        height=e.height,
        width=e.width,
        n_walls=e.n_walls,
        replace=e.walls_with_replacement,
    )
    if cfg.algorithm in ("plr", "accel"):
        q = cfg.plr
        hp = PLRHyper(
            score=q.score, replay_prob=q.replay_prob, capacity=q.buffer_size,
            staleness_coef=q.staleness_coef, temperature=q.temperature,
            prioritization=q.prioritization, topk=q.topk, min_fill=q.min_fill, robust=q.robust,
            parallel=q.parallel, accel=cfg.algorithm == "accel", n_edits=q.n_edits,
            mutation_criterion=q.mutation_criterion,
        )  # fmt: skip
        new = (
            functools.partial(empty_level, height=e.height, width=e.width)
            if q.new_levels == "empty"
            else generator
        )
        mutator = functools.partial(mutate_level, n_edits=q.n_edits, move_agent=q.move_agent)
        return ReplayCurriculum(
            env=env,
            learner=make_learner(cfg),
            n_envs=cfg.n_envs,
            n_steps=cfg.n_steps,
            hp=hp,
            generator=new,
            mutator=mutator,
            level_metrics=level_metrics,
            optimal_return=functools.partial(maze_optimal_return, max_steps=e.max_steps),
        )
    return DomainRandomisation(
        env=env,
        learner=make_learner(cfg),
        n_envs=cfg.n_envs,
        n_steps=cfg.n_steps,
        generator=generator,
        level_metrics=level_metrics,
    )
