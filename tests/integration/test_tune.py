"""Batch auto-sizing (``arenax tune``, ``--n-envs auto``): the knee rule by hand, a ladder
that stops before a size that would not fit (never running it), and the command line."""

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from arenax.benchmarking import TuneArgs, knee, tune
from arenax.envs.maze.family import MazeConfig
from arenax.training import (
    PRESETS,
    ModelConfig,
    PPOConfig,
    TeamConfig,
)

TINY = dataclasses.replace(PRESETS["maze-dr"], env=MazeConfig(height=5, width=5, n_walls=4, max_steps=8),
                           teams={"agent": TeamConfig(network=ModelConfig(hidden=8), learner=PPOConfig())},
                           n_steps=8)  # fmt: skip


def test_knee_rule_hand_computed() -> None:
    sizes = [8, 16, 32, 64]
    assert knee(sizes, [10.0, 19.0, 20.0, 30.0]) == 16  # 16 -> 32 gains 5% < 10%
    assert knee(sizes, [10.0, 20.0, 40.0, 80.0]) == 64  # every doubling pays: the largest
    assert knee(sizes, [10.0, 10.5, 30.0, 31.0], gain=0.04) == 32
    with pytest.raises(ValueError):
        knee([], [])


@pytest.mark.slow
def test_ladder_stops_before_memory_runs_out() -> None:
    # XLA's estimate of the tiny cycle grows with the envs; a limit between the 4- and
    # 8-env programs stops the ladder at 8 without running it
    probe = tune(TINY, TuneArgs(start=2, max=4, repeats=1))
    mem = {r["value"]: r["memory_bytes"] for r in probe["rows"]}
    assert mem[4] > mem[2] > 0
    limit_mib = 1.6 * mem[4] / 2**20  # 8 envs need ~2x the memory of 4: over 80% of this
    out = tune(
        TINY, TuneArgs(start=2, max=64, repeats=1, memory_limit_mib=limit_mib, stop_at_knee=False)
    )  # (the memory stop alone)
    assert [r["value"] for r in out["rows"]] == [2, 4]
    assert out["stopped"] == "the next size would not fit" and out["suggested"] in (2, 4)
    assert all(r["sps"] > 0 and r["compile_s"] > 0 for r in out["rows"])


@pytest.mark.slow
def test_n_envs_auto_trains_at_the_suggestion(tmp_path: Path) -> None:
    # a cache of its own: the ladder's rung at the knee is the training's chunk, which
    # training then loads from the cache the ladder wrote (it compiled it a second time)
    env = {**os.environ, "ARENAX_TUNE_MAX": "8", "ARENAX_CACHE": str(tmp_path / "cache")}
    r = subprocess.run(
        [sys.executable, "-m", "arenax.cli", "train", "maze-dr", "--n-envs", "auto",
         "--env.height", "5", "--env.width", "5", "--env.n-walls", "4", "--agent.hidden", "8",
         "--n-steps", "8", "--total-steps", "256", "--chunk", "1", "--checkpoint-every", "1",
         "--eval.every", "0", "--out-dir", str(tmp_path), "--name", "a", "--no-progress"],
        capture_output=True, text=True, env=env, timeout=600,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    suggested = int(r.stdout.split("suggested: --n-envs ")[1].split()[0])
    assert suggested == 8  # the ladder starts at 8 and ARENAX_TUNE_MAX=8 ends it there
    saved = json.loads((tmp_path / "a" / "config.json").read_text())
    assert saved["n_envs"] == suggested
    assert "loaded the chunk of up to 1 cycles from the compilation cache" in r.stdout


def test_tune_prints_each_rung_stops_at_the_knee_and_checks_its_options(capsys) -> None:
    """Each rung is printed as it is measured; with gain 1000% every doubling is "flat", so
    the ladder stops right after its second rung (the knee is the first); start > max is
    refused in one line."""
    from arenax.options import ConfigError

    out = tune(TINY, TuneArgs(start=2, max=64, repeats=1, gain=10.0))
    assert [r["value"] for r in out["rows"]] == [2, 4]
    assert out["stopped"].startswith("past the knee") and out["suggested"] == 2
    printed = capsys.readouterr().out
    assert "envs 2: compile" in printed and "envs 4: compile" in printed
    with pytest.raises(ConfigError, match=r"start=64: must be <= tune.max=8"):
        tune(TINY, TuneArgs(start=64, max=8))


@pytest.mark.slow
def test_ctrl_c_keeps_the_rungs_measured(monkeypatch, capsys) -> None:
    """Ctrl-C while the second rung is being prepared: the first rung's row is kept, the
    table is printed and the suggestion names why the ladder stopped."""
    import arenax.benchmarking.tuning as B

    real = B._rung

    def interrupt_at_4(cfg, vary, value):
        if value == 4:
            raise KeyboardInterrupt
        return real(cfg, vary, value)

    monkeypatch.setattr(B, "_rung", interrupt_at_4)
    out = tune(TINY, TuneArgs(start=2, max=64, repeats=1))
    assert [r["value"] for r in out["rows"]] == [2] and out["rows"][0]["sps"] > 0
    assert out["stopped"] == "interrupted (Ctrl-C)" and out["suggested"] == 2
    printed = capsys.readouterr().out
    assert "suggested: --n-envs 2 (the largest measured; interrupted (Ctrl-C))" in printed
