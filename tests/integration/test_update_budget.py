"""Budgets in PPO updates: only cycles that train count, and the first budget reached ends the run."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from arenax.training import ConfigError, TrainConfig, train, validate
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


def test_the_budget_given_on_the_command_line_is_the_budget() -> None:
    """``--total-steps`` on a preset budgeted in updates drops the update budget (and the
    other way round); both given, both stay; the learning-rate schedule and the progress
    bar follow the budget that ends the run first."""
    from arenax.cli.train import only_given_budget
    from arenax.training import PRESETS

    maze = dataclasses.replace(PRESETS["maze-dr"], total_steps=200_000)  # as tyro parsed it
    cfg = only_given_budget(maze, ["--total-steps", "200000"])
    assert (cfg.total_steps, cfg.total_updates) == (200_000, None)
    assert cfg.update_rounds == cfg.cycles == 25  # 200,000 / (32 x 256), rounded up
    assert only_given_budget(maze, ["--total-steps=200000", "--total-updates", "30000"]) == maze
    tag = dataclasses.replace(PRESETS["tag-grid"], total_updates=7)
    assert only_given_budget(tag, ["--total-updates", "7"]).total_steps is None
    # a config with both (the Python API): the schedule is as long as the run
    assert maze.update_rounds == 25


def test_replay_warm_up_is_announced_and_an_overshot_budget_resumes_as_spent(
    tmp_path: Path, capsys
) -> None:
    """Robust PLR says when its first update can come (and when the budget ends before);
    resuming a run whose last cycle went past its step budget says there is nothing to do
    instead of refusing the budget."""
    cfg = small("maze-plr", tmp_path, total_updates=None, total_steps=3 * 4 * 16 - 5, name="w")
    rows = train(cfg).rows
    out = " ".join(capsys.readouterr().out.split())
    need = int(cfg.curriculum.min_fill * cfg.curriculum.buffer_size + 0.999)
    assert f"plr: no PPO update until the level buffer holds {need} levels" in out
    assert rows[-1]["env_steps"] == 3 * 4 * 16  # past the budget by the last cycle
    assert train(cfg, resume=tmp_path / "w").rows == []
    late = small("maze-plr", tmp_path, total_updates=None, total_steps=16, name="late",
                 curriculum=dataclasses.replace(cfg.curriculum, buffer_size=64))  # fmt: skip
    train(late)
    assert "this run would never update" in " ".join(capsys.readouterr().out.split())


def test_a_time_limit_stops_after_the_chunk_that_passes_it_and_resumes(
    tmp_path: Path, capsys
) -> None:
    """A time limit every chunk passes stops the run after its first chunk with a
    checkpoint of that cycle (a normal return); the projection and the way to continue are
    printed; resuming without the limit finishes the run with the uninterrupted rows."""
    import numpy as np

    from arenax.training.saved import load_config

    cfg = small("maze-dr", tmp_path, total_updates=6, checkpoint_every=4, name="t")
    with pytest.raises(ConfigError, match="time_limit=0"):
        validate(dataclasses.replace(cfg, time_limit=0))
    stopped = train(dataclasses.replace(cfg, time_limit=1e-9))
    assert [r["updates"] for r in stopped.rows] == [1, 2]  # one chunk of 2 cycles
    assert stopped.timed_out
    out = " ".join(capsys.readouterr().out.split())
    assert "remaining 4 updates take" in out and "past the limit" in out
    assert "stopped after cycle 2 (2 of 6 updates) and saved a checkpoint; " in out
    assert f"continue with: arenax resume {tmp_path / 't'}" in out
    assert load_config(tmp_path / "t" / "config.json").time_limit == 1e-9
    rest = train(dataclasses.replace(cfg, time_limit=None), resume=tmp_path / "t").rows
    full_run = train(dataclasses.replace(cfg, name="full"))
    full = full_run.rows
    assert not full_run.timed_out
    assert [r["updates"] for r in rest] == [3, 4, 5, 6]
    for a, b in zip(stopped.rows + rest, full, strict=True):
        assert np.isclose(a["loss"], b["loss"], rtol=0, atol=0), (a, b)


def test_the_projected_update_rate_is_measured_after_the_replay_warm_up(
    tmp_path: Path, capsys
) -> None:
    """Against a time limit, robust PLR's remaining updates are projected at the rate of
    the first chunk begun with its buffer warm: a chunk of warm-up cycles makes few or no
    updates (on the chip a paper run's first chunk projected 529 s for a run that took
    397 s; here, with none, nothing was projected at all), and a robust-PLR chunk may make
    none after it too (its replay coin)."""
    cfg = small("maze-plr", tmp_path, total_updates=6, time_limit=1e6, name="p")
    rows = train(cfg).rows
    out = " ".join(capsys.readouterr().out.split())
    updates = [0] + [r["updates"] for r in rows]  # after each cycle (chunks of 2 cycles)
    # the first chunk begun warm that made an update (a chunk of 2 cycles may make none)
    first = next(c for c in range(0, len(rows), 2) if 0 < updates[c] < updates[c + 2])
    assert updates[1] == updates[2] == 0  # the first chunk is all warm-up
    left = cfg.total_updates - updates[first + 2]
    assert out.count("time limit") == 1
    assert f"the remaining {left} updates take" in out and "within the limit" in out


def test_resume_clears_a_saved_time_limit_with_none_as_train_does(tmp_path: Path) -> None:
    """`arenax resume RUN --time-limit None` means what it means on `train`: no limit (it
    once kept the saved limit, with no way to clear it); an option not given keeps the
    saved value, and the budgets take None the same way."""
    from arenax.cli.common import parse
    from arenax.cli.train import ResumeArgs, resumed_config
    from arenax.training.saved import save_config

    cfg = small("maze-dr", tmp_path, total_steps=4096, time_limit=60.0, name="t")
    (tmp_path / "t").mkdir()
    save_config(cfg, tmp_path / "t" / "config.json")

    def resumed(*argv: str) -> TrainConfig:
        return resumed_config(parse(ResumeArgs, [str(tmp_path / "t"), *argv], "arenax resume"))

    kept = resumed()
    assert (kept.time_limit, kept.total_steps, kept.total_updates) == (60.0, 4096, 4)
    assert resumed("--time-limit", "None").time_limit is None
    assert resumed("--time-limit", "5").time_limit == 5.0
    assert resumed("--total-updates", "None").total_updates is None
    assert resumed("--total-steps", "None").total_steps is None
