"""Budgets in PPO updates: only cycles that train count, and the first budget reached ends the run."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from arenax.train import ConfigError, TrainConfig, train, validate
from helpers import tiny_preset


def small(preset: str, tmp_path: Path, **changes: object) -> TrainConfig:
    cfg = tiny_preset(preset, tmp_path, n_steps=16, chunk=2, checkpoint_every=2)
    cfg = dataclasses.replace(cfg, total_steps=None, total_updates=4)
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
