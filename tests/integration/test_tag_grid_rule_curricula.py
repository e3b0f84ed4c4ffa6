"""ACCEL over grid Tag arenas whose levels carry rules (skill, tagging distance, episode length):
the buffer keeps valid levels."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import jax
import numpy as np

from arenax.envs.tag import arenas as A
from arenax.training import train
from helpers import tiny_preset

STAY, PX, MX, PY, MY = range(5)


def test_accel_over_arenas_with_varying_rules(tmp_path: Path) -> None:
    """ACCEL's buffer holds arenas with rules: open fields at the default rules and their
    mutations (rules redrawn) train, and the stored levels stay valid."""
    cfg = tiny_preset("tag-grid-accel", tmp_path, cycles=3)
    cfg = dataclasses.replace(cfg, env=dataclasses.replace(
        cfg.env, skill_range=(0.5, 1.0), tag_distance_range=(0, 1),
        episode_length_range=(4, 8)))  # fmt: skip
    result = train(cfg)
    buf = result.state.curriculum
    n = int(np.sum(np.asarray(buf.filled)))
    assert n > 0
    levels = buf.levels
    for i in range(n):
        A.validate_level(jax.tree.map(lambda x, i=i: x[i], levels), 5, 3, 8)
    assert levels.skill is not None and levels.episode_length is not None
