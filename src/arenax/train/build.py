"""Turn a :class:`TrainConfig` into the objects of a run: environment, learner, algorithm."""

from __future__ import annotations

import functools

from arenax.curricula.dr import DomainRandomisation
from arenax.envs.maze import MazeEnv, level_metrics, sample_dr_level
from arenax.nn.student import StudentPolicy
from arenax.rl.learner import Learner, make_optimizer
from arenax.rl.ppo import PPOHyper
from arenax.train.config import TrainConfig


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


def make_learner(cfg: TrainConfig) -> Learner:
    p = cfg.ppo
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
    env = make_env(cfg)
    return Learner(make_policy(cfg, env.action_space().n), hp, tx, sched)


def make_algorithm(cfg: TrainConfig) -> DomainRandomisation:
    """The curriculum algorithm named by ``cfg.algorithm``."""
    env = make_env(cfg)
    e = cfg.env
    generator = functools.partial(
        sample_dr_level,
        height=e.height,
        width=e.width,
        n_walls=e.n_walls,
        replace=e.walls_with_replacement,
    )
    return DomainRandomisation(
        env=env,
        learner=make_learner(cfg),
        n_envs=cfg.n_envs,
        n_steps=cfg.n_steps,
        generator=generator,
        level_metrics=level_metrics,
    )
