"""Turn a :class:`TrainConfig` into the objects of a run: environment, learners, curriculum.

Options are passed as the dataclasses that define them (no field-by-field copying): an
environment is built from its options (:func:`arenax.options.build`), a network from its
options, a learner from its :class:`~arenax.rl.PPOConfig`.
"""

from __future__ import annotations

import functools
from typing import Any

import jax

from arenax import distributions as D
from arenax.curricula.common import Curriculum
from arenax.curricula.dr import DomainRandomisation
from arenax.curricula.multiteam import MultiTeamDR
from arenax.curricula.offpolicy import OffPolicyDR
from arenax.curricula.paired import TeacherCurriculum
from arenax.curricula.plr import ReplayCurriculum
from arenax.curricula.sfl import SFLCurriculum
from arenax.curricula.teams import TeamReplayCurriculum, TeamSFLCurriculum, TeamTeacherCurriculum
from arenax.envs.classic import FAMILIES as CLASSIC
from arenax.envs.core import Environment
from arenax.envs.maze import (
    EditorOptions,
    MazeEditor,
    MazeEnv,
    empty_level,
    level_metrics,
    mutate_level,
    optimal_return,
)
from arenax.envs.tag import GridTagEnv, TagEnv, arenas
from arenax.envs.tag import discs as tag_discs
from arenax.envs.tag.editor import ArenaEditor, DiscArenaEditor
from arenax.envs.tag.scripted import ScriptedTeams
from arenax.nn.mlp import MLPConfig, MLPPolicy
from arenax.nn.student import StudentPolicy
from arenax.nn.teacher import TeacherPolicy
from arenax.options import ConfigError, build, fields_of
from arenax.registry import make, user_games
from arenax.rl.learner import Learner
from arenax.rl.policy import Policy
from arenax.rl.ppo import PPOConfig, bootstraps
from arenax.train.config import CLASSIC_GAMES, TrainConfig


def make_env(cfg: TrainConfig) -> Environment:
    """The environment of ``cfg.game``, built (and checked) from its options."""
    if cfg.game in CLASSIC_GAMES:
        return build(CLASSIC[cfg.game][0], getattr(cfg, CLASSIC_GAMES[cfg.game]))
    if cfg.game in user_games():
        return make(cfg.game)  # a registered family, with its defaults
    if cfg.game == "tag":
        return build(TagEnv, cfg.tag)
    if cfg.game == "grid-tag":
        return build(GridTagEnv, cfg.grid_tag)
    return build(MazeEnv, cfg.env)


def make_policy(cfg: TrainConfig, n_actions: int = 7) -> StudentPolicy:
    """The maze student's network."""
    return StudentPolicy.of(cfg.model, n_actions)


def make_learner(cfg: TrainConfig, policy: Policy, ppo: PPOConfig) -> Learner:
    """A PPO learner for ``policy`` (its learning-rate schedule spans the whole run)."""
    return Learner(policy, ppo, total_updates=cfg.update_rounds * ppo.epochs * ppo.minibatches)


def make_student(cfg: TrainConfig) -> Learner:
    """The maze student's learner."""
    return make_learner(cfg, make_policy(cfg, make_env(cfg).action_space().n), cfg.ppo)


def make_editor(cfg: TrainConfig) -> MazeEditor | ArenaEditor | DiscArenaEditor:
    """The teacher's editor MDP for the students' maze size (or grid / continuous Tag
    arena)."""
    options = fields_of(cfg.teacher, EditorOptions)
    if cfg.game == "tag":
        return DiscArenaEditor(game=build(TagEnv, cfg.tag), **options)
    if cfg.game == "grid-tag":
        g = cfg.grid_tag
        return ArenaEditor(size=g.size, n_taggers=g.n_taggers, **options)
    return MazeEditor(height=cfg.env.height, width=cfg.env.width, **options)


def make_teacher(cfg: TrainConfig) -> Learner:
    """The PAIRED teacher's learner (its own network, optimiser and learning rate)."""
    editor = make_editor(cfg)
    policy = TeacherPolicy.of(cfg.teacher, editor.action_space().n, editor.episode_length)
    return make_learner(cfg, policy, cfg.teacher.ppo)


def make_team_policy(cfg: TrainConfig, team: str) -> MLPPolicy:
    """The MLP actor-critic that drives ``team`` of a Tag game (its action distribution
    from the team's action space)."""
    space = make_env(cfg).action_space(team)
    return MLPPolicy(
        dist=D.for_space(space, cfg.team_configs[team].squash), n_actions=int(getattr(space, "n", 0)),
        **fields_of(cfg.team_configs[team], MLPConfig),
    )  # fmt: skip


def make_multiteam(cfg: TrainConfig) -> MultiTeamDR:
    """Multi-team PPO for a Tag game: one learner per policy name, from the options of the
    first team that uses it."""
    env = make_env(cfg)
    if cfg.scripted_teams:  # played inside the env; the others act, learn and are rewarded
        env = ScriptedTeams(env, cfg.scripted_teams)
    team_policy = cfg.team_policy()
    acting = {t: tc for t, tc in cfg.team_configs.items() if t in team_policy}
    learners, frozen = {}, set()
    for team, tc in acting.items():
        name = team_policy[team]
        if name in learners:
            first = next(t for t in acting if team_policy[t] == name)
            for f in ("observation_space", "action_space"):
                a, b = getattr(env, f)(first), getattr(env, f)(team)
                if a != b:
                    raise ConfigError(
                        f"{team}.policy={name!r}: its {f.replace('_', ' ')} {b} differs from "
                        f"{first}'s {a}; give the teams their own policies"
                    )
            continue
        learners[name] = make_learner(cfg, make_team_policy(cfg, team), tc.ppo)
        if tc.frozen:
            frozen.add(name)
    return MultiTeamDR(
        env=env, learners=learners, team_policy=team_policy, frozen=frozenset(frozen),
        n_envs=cfg.n_envs, n_steps=cfg.n_steps,
        bootstrap_truncation={t: bootstraps(tc.ppo, env) for t, tc in acting.items()},
    )  # fmt: skip


def _near_default_level(env: Environment, key: object) -> object:
    """ACCEL's "empty" level for a one-agent family: the default level (Gymnasium's
    physics) with one random edit. (The default level alone is a single level: the buffer,
    which keeps one copy of duplicates, would never fill to ``min_fill`` and never replay.)"""
    return env.mutate(key, env.default_level(), n_edits=1)


def make_classic_replay(cfg: TrainConfig) -> ReplayCurriculum:
    """PLR / ACCEL over a one-agent family's levels: classic control's physics, or a
    registered family's (``new_levels="empty"``: new levels are the family's
    ``default_level()`` — Gymnasium's physics — each with one random edit, and ACCEL
    mutates replayed levels further with ``mutate``)."""
    env = make_env(cfg)
    q = cfg.plr
    return ReplayCurriculum(
        env=env,
        learner=make_learner(cfg, make_team_policy(cfg, "agent"), cfg.agent.ppo),
        n_envs=cfg.n_envs,
        n_steps=cfg.n_steps,
        config=q,
        generator=functools.partial(_near_default_level, env)
        if q.new_levels == "empty"
        else env.generate,
        accel=cfg.algorithm == "accel",
        mutator=functools.partial(env.mutate, n_edits=q.n_edits),
    )


def make_arena_curriculum(cfg: TrainConfig) -> TeamReplayCurriculum | TeamSFLCurriculum:
    """PLR / ACCEL / SFL over grid Tag arenas (PLR / ACCEL over continuous Tag arenas),
    every team driven as in multi-team PPO; new arenas are the env's (domain randomisation
    over obstacles and starts) or, for ``plr.new_levels="empty"``, open fields with random
    starts."""
    mt = make_multiteam(cfg)
    env, q = mt.env, cfg.plr
    if cfg.game == "tag":  # continuous arenas: disc obstacles, starts and skills
        empty = functools.partial(tag_discs.empty, env=env)
        mutator = functools.partial(tag_discs.mutate, n_edits=q.n_edits,
                                    radius=env.obstacle_radius,
                                    episode_length_range=env.episode_length_range)  # fmt: skip
        metrics = functools.partial(tag_discs.level_metrics, n_taggers=env.n_taggers)
    else:

        def empty(key: jax.Array) -> Any:  # an open field, its rules (if any) at defaults
            return env.default_rules(arenas.empty(key, size=env.size, n_taggers=env.n_taggers))

        mutator = functools.partial(arenas.mutate, n_edits=q.n_edits, env=env)
        metrics = arenas.level_metrics
    teams = dict(
        learners=mt.learners, team_policy=mt.team_policy, frozen=mt.frozen,
        bootstrap_truncation=mt.bootstrap_truncation,
    )  # fmt: skip
    if cfg.algorithm == "sfl":
        return TeamSFLCurriculum(
            env=env, learner=mt.learners[mt.team_policy["tagger"]], n_envs=cfg.n_envs,
            n_steps=cfg.n_steps, config=cfg.sfl, generator=env.generate,
            level_metrics=metrics, n_devices=cfg.devices, **teams,
        )  # fmt: skip
    return TeamReplayCurriculum(
        env=env, learner=mt.learners[mt.team_policy["tagger"]], n_envs=cfg.n_envs,
        n_steps=cfg.n_steps, config=q, accel=cfg.algorithm == "accel", mutator=mutator,
        generator=empty if q.new_levels == "empty" else env.generate, level_metrics=metrics,
        score_team=q.score_team, **teams,
    )  # fmt: skip


def make_arena_teacher(cfg: TrainConfig) -> TeamTeacherCurriculum:
    """PAIRED-family teachers over Tag arenas (grid: :class:`ArenaEditor`; continuous:
    :class:`DiscArenaEditor`): the taggers are the students (their policy stacked per
    student); the runners' policy is shared by every student's games."""
    mt = make_multiteam(cfg)
    others = {t: mt.learners[mt.team_policy[t]] for t in mt.teams if t != "tagger"}
    return TeamTeacherCurriculum(
        env=mt.env, editor=make_editor(cfg), students=mt.learners[mt.team_policy["tagger"]],
        teacher=make_teacher(cfg), n_students=cfg.paired.n_students, score=cfg.paired.score,
        n_envs=cfg.n_envs, n_steps=cfg.n_steps, team="tagger", others=others,
        level_metrics=functools.partial(tag_discs.level_metrics, n_taggers=mt.env.n_taggers)
        if cfg.game == "tag" else arenas.level_metrics,
        frozen=frozenset(t for t in others if mt.team_policy[t] in mt.frozen),
        bootstrap_truncation=mt.bootstrap_truncation,
    )  # fmt: skip


def make_algorithm(cfg: TrainConfig) -> Curriculum:
    """The curriculum named by ``cfg.algorithm`` (multi-team PPO for Tag games, and for
    classic control with ``dr``)."""
    if cfg.learner == "ddpg":
        return OffPolicyDR(env=make_env(cfg), config=cfg.ddpg, n_envs=cfg.n_envs, n_steps=cfg.n_steps)  # fmt: skip
    if cfg.agent_game and cfg.algorithm in ("plr", "accel"):
        return make_classic_replay(cfg)
    if cfg.game in ("grid-tag", "tag") and cfg.algorithm in ("plr", "accel", "sfl"):
        return make_arena_curriculum(cfg)
    if cfg.game in ("grid-tag", "tag") and cfg.algorithm == "paired":
        return make_arena_teacher(cfg)
    if cfg.game != "maze":
        return make_multiteam(cfg)
    env = make_env(cfg)
    if cfg.algorithm == "paired":
        return TeacherCurriculum(
            env=env,
            editor=make_editor(cfg),
            students=make_student(cfg),
            teacher=make_teacher(cfg),
            n_students=cfg.paired.n_students,
            score=cfg.paired.score,
            n_envs=cfg.n_envs,
            n_steps=cfg.n_steps,
            level_metrics=level_metrics,
        )
    if cfg.algorithm == "sfl":
        return SFLCurriculum(
            env=env, learner=make_student(cfg), n_envs=cfg.n_envs, n_steps=cfg.n_steps,
            config=cfg.sfl, generator=env.generate, level_metrics=level_metrics,
            n_devices=cfg.devices,
        )  # fmt: skip
    if cfg.algorithm in ("plr", "accel"):
        q = cfg.plr
        new = (
            functools.partial(empty_level, height=env.height, width=env.width)
            if q.new_levels == "empty"
            else env.generate
        )
        return ReplayCurriculum(
            env=env,
            learner=make_student(cfg),
            n_envs=cfg.n_envs,
            n_steps=cfg.n_steps,
            config=q,
            generator=new,
            accel=cfg.algorithm == "accel",
            mutator=functools.partial(mutate_level, n_edits=q.n_edits, move_agent=q.move_agent),
            level_metrics=level_metrics,
            optimal_return=functools.partial(optimal_return, max_steps=env.max_steps),
        )
    return DomainRandomisation(
        env=env,
        learner=make_student(cfg),
        n_envs=cfg.n_envs,
        n_steps=cfg.n_steps,
        generator=env.generate,
        level_metrics=level_metrics,
    )
