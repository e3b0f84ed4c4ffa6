"""Variants of a preset: the tiny shapes the tests and `benchmarks/preset_fingerprints.py`
run (`tiny`), and another recurrent core in every network that has one (`with_cell`)."""

from __future__ import annotations

import dataclasses

from arenax.training.config import TrainConfig

r = dataclasses.replace


def tiny(cfg: TrainConfig) -> TrainConfig:
    """`cfg` at the smallest shapes that still run every part of its cycle (a few
    seconds a cycle on a CPU), each part's own (`Family.tiny`: small levels; the teams'
    `TeamConfig.tiny`: small networks; the curriculum's `tiny`: small buffers), 4
    environments, a checkpoint every cycle, no evaluation or progress bar. The tests and
    the fingerprints of `benchmarks/preset_fingerprints.py` run these."""
    family = cfg.family
    return r(
        cfg,
        env=family.tiny(cfg.env) if family.tiny is not None else cfg.env,
        teams={t: tc.tiny() for t, tc in cfg.teams.items()},
        curriculum=cfg.curriculum.tiny(),
        **{
            "n_envs": 4,
            "n_steps": 16,
            "chunk": 1,
            "checkpoint_every": 1,
            "archive_every": 0,
            "eval": r(cfg.eval, every=0),
            "progress": False,
            "tensorboard": False,
            **family.tiny_run,
        },
    )


def with_cell(cfg: TrainConfig, cell: str) -> TrainConfig:
    """`cfg` with recurrent core `cell` in every network that has one (the maze
    student's and the PAIRED teacher's)."""
    teams = {
        t: r(tc, network=r(tc.network, cell=cell)) if hasattr(tc.network, "cell") else tc
        for t, tc in cfg.teams.items()
    }
    return r(cfg, teams=teams, curriculum=cfg.curriculum.with_cell(cell))
