"""Turn a :class:`TrainConfig` into the objects of a run: environment, learner, algorithm."""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import jax
import jax.numpy as jnp

from arenax.curricula.dr import DomainRandomisation
from arenax.curricula.multiteam import MultiTeamDR
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
from arenax.envs.tag import GridTagEnv, TagEnv
from arenax.nn.mlp import MLPPolicy
from arenax.nn.student import StudentPolicy
from arenax.nn.teacher import TeacherPolicy
from arenax.rl import distributions as D
from arenax.rl.learner import Learner, make_optimizer
from arenax.rl.ppo import PPOHyper
from arenax.train.config import ConfigError, PPOConfig, TrainConfig


def make_env(cfg: TrainConfig) -> MazeEnv | TagEnv | GridTagEnv:
    """The environment of ``cfg.game``."""
    if cfg.game == "tag":
        t = dataclasses.asdict(cfg.tag)
        t["k_nearest"] = t["k_nearest"] or None  # 0: everyone
        return TagEnv(**t)
    if cfg.game == "grid-tag":
        return GridTagEnv(**dataclasses.asdict(cfg.grid_tag))
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


def make_team_policy(cfg: TrainConfig, team: str) -> MLPPolicy:
    """The MLP actor-critic that drives ``team`` of a Tag game (its action distribution
    from the team's action space)."""
    space = make_env(cfg).action_space(team)
    return MLPPolicy(
        dist=D.for_space(space), n_actions=int(getattr(space, "n", 0)),
        hidden=tuple(cfg.team_configs[team].hidden),
    )  # fmt: skip


def make_multiteam(cfg: TrainConfig) -> MultiTeamDR:
    """Multi-team PPO for a Tag game: one learner per policy name, from the options of the
    first team that uses it."""
    env = make_env(cfg)
    team_policy = cfg.team_policy()
    learners, frozen = {}, set()
    for team, tc in cfg.team_configs.items():
        name = team_policy[team]
        if name in learners:
            first = next(t for t in cfg.team_configs if team_policy[t] == name)
            for f in ("observation_space", "action_space"):
                a, b = getattr(env, f)(first), getattr(env, f)(team)
                if a != b:
                    raise ConfigError(
                        f"{team}.policy={name!r}: its {f.replace('_', ' ')} {b} differs from "
                        f"{first}'s {a}; give the teams their own policies"
                    )
            continue
        learners[name] = _ppo_learner(cfg, make_team_policy(cfg, team), tc.ppo)
        if tc.frozen:
            frozen.add(name)
    return MultiTeamDR(
        env=env, learners=learners, team_policy=team_policy, frozen=frozenset(frozen),
        n_envs=cfg.n_envs, n_steps=cfg.n_steps, bootstrap_truncation=False,
    )  # fmt: skip


def make_algorithm(
    cfg: TrainConfig,
) -> DomainRandomisation | ReplayCurriculum | TeacherCurriculum | MultiTeamDR:
    """The curriculum algorithm named by ``cfg.algorithm`` (multi-team PPO for Tag)."""
    if cfg.game != "maze":
        return make_multiteam(cfg)
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
