"""Budgets in PPO updates: only cycles that train count, and the first budget reached ends the run."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from arenax.train import PRESETS, ConfigError, EnvConfig, EvalConfig, ModelConfig, train
from arenax.train.config import TrainConfig, validate


def small(preset: str, tmp_path: Path, **changes: object) -> TrainConfig:
    cfg = PRESETS[preset]
    cfg = dataclasses.replace(
        cfg,
        env=EnvConfig(height=5, width=5, n_walls=4, max_steps=8),
        model=ModelConfig(hidden=16),
        plr=dataclasses.replace(cfg.plr, buffer_size=8, n_edits=2),
        n_envs=4, n_steps=16, chunk=2, checkpoint_every=2, archive_every=0,
        eval=EvalConfig(every=0), out_dir=tmp_path, progress=False, tensorboard=False,
        total_steps=None, total_updates=4,
    )  # fmt: skip
    return dataclasses.replace(cfg, **changes)


# ---------------------------------------------------------------------- budgets
def test_update_budget_counts_only_cycles_that_train(tmp_path: Path) -> None:
    cfg = small("maze-plr", tmp_path, total_updates=3, name="upd")
    rows = train(cfg).rows
    assert rows[-1]["updates"] == 3
    assert sum(r["updated"] for r in rows) == 3
    assert len(rows) > 3  # robust PLR also runs new-level cycles without an update
    assert rows[-1]["env_steps"] == len(rows) * cfg.n_envs * cfg.n_steps
    # the first budget reached ends the run
    both = train(dataclasses.replace(cfg, name="both", total_steps=2 * 4 * 16)).rows
    assert both[-1]["env_steps"] == 2 * 4 * 16
    with pytest.raises(ConfigError, match="total_steps=None: set total_steps or total_updates"):
        validate(dataclasses.replace(cfg, total_updates=None))
