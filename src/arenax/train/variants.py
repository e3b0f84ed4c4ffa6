"""Variants of a preset: the tiny shapes the tests and `benchmarks/preset_fingerprints.py`
run (`tiny`), and another recurrent core in every network that has one (`with_cell`)."""

from __future__ import annotations

import dataclasses

from arenax.curricula import PairedConfig, PLRConfig, SFLConfig
from arenax.curricula.coplayers import CoplayerOptions
from arenax.envs.maze.family import MazeConfig
from arenax.envs.tag.family import GridTagConfig, TagConfig
from arenax.nn.student import ModelConfig
from arenax.train.config import TrainConfig

r = dataclasses.replace


def tiny(cfg: TrainConfig) -> TrainConfig:
    """`cfg` at the smallest shapes that still run every part of its cycle (a few
    seconds a cycle on a CPU): small levels, networks, batches and buffers, a checkpoint
    every cycle, no evaluation or progress bar. The tests and the fingerprints of
    `benchmarks/preset_fingerprints.py` run these."""
    env, c = cfg.env, cfg.curriculum
    if isinstance(env, MazeConfig):
        env = r(env, height=5, width=5, n_walls=4, max_steps=8)
    elif isinstance(env, TagConfig):
        env = r(
            env,
            n_taggers=2,
            n_runners=3,
            episode_length=8,
            k_nearest=None if env.k_nearest is None else 2,
            max_obstacles=min(env.max_obstacles, 4),
        )
    elif isinstance(env, GridTagConfig):
        env = r(
            env,
            n_taggers=2,
            size=5,
            episode_length=8,
            max_obstacles=min(env.max_obstacles, 6),
            view=min(env.view, 1),
        )
    teams = {}
    for t, tc in cfg.teams.items():
        net = tc.network
        net = r(net, hidden=16) if isinstance(net, ModelConfig) else r(net, hidden=(16, 16))
        minibatches = tc.ppo.minibatches if isinstance(net, ModelConfig) else 1
        ddpg = tc.ddpg and r(
            tc.ddpg,
            buffer_size=256,
            batch_size=16,
            update_to_data=4 / 64,  # 4 gradient steps a cycle of 4 x 16
            learning_starts=32,
            hidden=(16, 16),
        )
        teams[t] = r(tc, network=net, ppo=r(tc.ppo, epochs=2, minibatches=minibatches), ddpg=ddpg)
    if isinstance(c, PLRConfig):
        c = r(c, buffer_size=8, min_fill=0.5, **({"n_edits": 2} if c.accel else {}))
    if isinstance(c, CoplayerOptions):
        c = r(c, population=2, snapshot_every=1, groups=2)
    if isinstance(c, SFLConfig):
        c = r(
            c,
            buffer_size=4,
            sample_levels=8,
            episodes=2,
            refresh_every=2,
            eval_steps=min(c.eval_steps, 20),
            sample_chunks=min(c.sample_chunks, 2),
        )
    elif isinstance(c, PairedConfig):
        t = c.teacher
        c = r(
            c,
            teacher=r(
                t,
                n_walls=min(4, t.n_walls),
                noise_dim=4,
                conv_filters=8,
                hidden=16,
                head_hidden=8,
                ppo=r(t.ppo, epochs=2),
            ),
        )
    one_agent = len(cfg.teams) == 1 and not isinstance(env, MazeConfig)
    return r(
        cfg,
        env=env,
        teams=teams,
        curriculum=c,
        n_envs=4,
        n_steps=16 if one_agent else 8,
        chunk=1,
        checkpoint_every=1,
        archive_every=0,
        eval=r(cfg.eval, every=0),
        progress=False,
        tensorboard=False,
    )


def with_cell(cfg: TrainConfig, cell: str) -> TrainConfig:
    """`cfg` with recurrent core `cell` in every network that has one (the maze
    student's and the PAIRED teacher's)."""
    teams = {
        t: r(tc, network=r(tc.network, cell=cell)) if isinstance(tc.network, ModelConfig) else tc
        for t, tc in cfg.teams.items()
    }
    c = cfg.curriculum
    if isinstance(c, PairedConfig):
        c = r(c, teacher=r(c.teacher, cell=cell))
    return r(cfg, teams=teams, curriculum=c)
