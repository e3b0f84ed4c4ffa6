"""Replay curricula and SFL over grid Tag arenas end to end: the presets train and count every
step, parallel forms, exact resume after SIGKILL, devices agree."""

from __future__ import annotations

import csv
import dataclasses
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from arenax import cli
from arenax.training import PRESETS, train, validate
from arenax.training.logging import read_jsonl
from helpers import CACHE_DIR, assert_same, learning_rows, tiny_preset

WORKER = Path(__file__).parent / "mp_worker.py"


@pytest.mark.slow
@pytest.mark.parametrize("preset", ["tag-grid-plr", "tag-grid-accel"])
def test_presets_train_and_count_every_step(
    tmp_path: Path, preset: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    validate(PRESETS[preset])
    cfg = tiny_preset(preset, tmp_path, 8)
    rows = train(cfg).rows
    n_t = cfg.n_envs * cfg.n_steps
    prev = 0
    for r in rows:
        steps, prev = r["env_steps"] - prev, r["env_steps"]
        # ACCEL: the children's evaluation rollout counts too
        assert steps == (2 * n_t if preset == "tag-grid-accel" and r["replay"] else n_t)
        assert r["updated"] == r["replay"]  # robust: updates on replay cycles only
        # an arena of 6 x 6 cells and 3 agents' (x, y) int32 starts
        assert r["buffer/bytes_per_level"] == 36 + 3 * 2 * 4
        assert 0.0 <= r["level/coverage"] <= 6 / 36 + 1e-6
    assert any(r["replay"] for r in rows) and rows[-1]["buffer/fill"] > 0
    assert all(np.isfinite(r["shared/value_loss"]) for r in rows if r["updated"])
    if preset == "tag-grid-plr":  # held-out arenas: every matchup on every arena
        monkeypatch.setattr("sys.argv", ["arenax", "eval", str(cfg.run_dir), "--suite",
                                         "rooms,cornered", "--episodes", "4", "--opponents",
                                         "scripted", "--cvar-alpha", "0.25", "--cvar-levels",
                                         "8", "--cvar-episodes", "2"])  # fmt: skip
        cli.main()
        with (cfg.run_dir / "eval_cvar.csv").open() as f:
            (rob,) = list(csv.DictReader(f))  # the trained taggers vs scripted runners
        assert (rob["opponent"], rob["levels"], rob["episodes"]) == ("scripted", "8", "2")
        # the worst levels' success on the episodes that chose them is at most the mean;
        # measured again on independent episodes (the CVaR) it may be higher
        assert 0.0 <= float(rob["cvar_same"]) <= float(rob["mean"]) <= 1.0
        assert 0.0 <= float(rob["cvar"]) <= 1.0 and rob["solvable_only"] == "False"
        monkeypatch.setattr("sys.argv", ["arenax", "render", str(cfg.run_dir), "--buffer",
                                         "--n", "4", "--out", str(tmp_path / "buffer.png")])  # fmt: skip
        cli.main()
        assert (tmp_path / "buffer.png").stat().st_size > 0
        with (cfg.run_dir / "eval_tag.csv").open() as f:
            got = [(r["arena"], r["taggers"], r["runners"]) for r in csv.DictReader(f)]
        assert got == [(a, *m) for a in ("rooms", "cornered")
                       for m in (("trained", "scripted"), ("scripted", "trained"), ("random", "random"))]  # fmt: skip


@pytest.mark.slow
def test_arena_buffer_resumes_exactly_after_sigkill(tmp_path: Path) -> None:
    cycles = 10
    run = tmp_path / "killed" / "tag-grid-accel"
    env = {**os.environ, "XLA_FLAGS": os.environ["XLA_FLAGS"],
           "ARENAX_CACHE": str(CACHE_DIR)}  # fmt: skip
    # the uninterrupted run first: the killed one then loads its compiled chunk from the cache
    full = train(tiny_preset("tag-grid-accel", tmp_path / "full", cycles, devices=2))
    proc = subprocess.Popen(
        [sys.executable, str(WORKER), "0", "1", "0", "2", str(tmp_path / "killed"),
         f"tag-grid-accel:{cycles}"], env=env, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        deadline = time.time() + 300
        while time.time() < deadline and proc.poll() is None:
            if len(read_jsonl(run / "metrics.jsonl")) >= 3:
                break
            time.sleep(0.1)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    done = len(read_jsonl(run / "metrics.jsonl"))
    assert 3 <= done < len(full.rows), f"not killed mid-way ({done} rows)"
    train(tiny_preset("tag-grid-accel", tmp_path / "killed", cycles, devices=2), resume=run)
    assert_same(learning_rows(read_jsonl(run / "metrics.jsonl")), learning_rows(full.rows))


@pytest.mark.slow
@pytest.mark.parametrize("preset", ["tag-grid-plr", "tag-grid-accel"])
def test_parallel_forms_train_on_the_replay_block(tmp_path: Path, preset: str) -> None:
    """PLR∥ / ACCEL∥ over arenas: every cycle plays 2 (3) blocks side by side; the policy
    trains once the buffer is warm, on the replay block only."""
    cfg = tiny_preset(preset, tmp_path, 6, curriculum=dataclasses.replace(
        tiny_preset(preset, tmp_path).curriculum, parallel=True))  # fmt: skip
    blocks = 3 if preset == "tag-grid-accel" else 2
    cfg = dataclasses.replace(cfg, total_steps=blocks * cfg.n_envs * cfg.n_steps * 6)
    rows = train(cfg).rows
    assert len(rows) == 6
    assert [r["env_steps"] for r in rows] == [blocks * 32 * (i + 1) for i in range(6)]
    # cold at first (the buffer of 8 needs 4 levels); a cycle inserts 8 or more
    assert [r["updated"] for r in rows] == [0.0] + [1.0] * 5
    assert all(np.isfinite(r["shared/value_loss"]) for r in rows[1:])
    assert all(r["buffer/bytes_per_level"] == 36 + 3 * 2 * 4 for r in rows)


def tiny_sfl(tmp_path: Path, name: str, updates: int, **changes: object):
    cfg = tiny_preset("tag-grid-sfl", tmp_path, name=name, **changes)
    q = dataclasses.replace(
        cfg.curriculum, buffer_size=4, sample_levels=8, episodes=2, refresh_every=2
    )
    return dataclasses.replace(cfg, curriculum=q, total_steps=None, total_updates=updates)


@pytest.mark.slow
def test_tag_grid_sfl_trains_counts_its_steps_resumes_and_devices_agree(tmp_path: Path) -> None:
    """Every cycle trains the shared policy on 4 envs × 8 steps; a refresh (every 2nd cycle)
    adds 8 arenas × 2 copies × the 8-step episode. The selected arenas' tag rates are
    fractions of 2 first episodes, ranked by p (1 − p); a run stopped after 3 updates and
    resumed equals an uninterrupted one bitwise; 2 devices select the same arenas."""
    import jax

    full = train(tiny_sfl(tmp_path, "full", 6))
    rows = full.rows
    assert [r["sfl/refresh"] for r in rows] == [1.0, 0.0] * 3
    steps = [r["env_steps"] - (rows[i - 1]["env_steps"] if i else 0) for i, r in enumerate(rows)]
    assert steps == [4 * 8 + 8 * 2 * 8, 4 * 8] * 3
    assert [r["updates"] for r in rows] == [1, 2, 3, 4, 5, 6]  # cumulative
    assert all(r["buffer/bytes_per_level"] == 36 + 3 * 2 * 4 for r in rows)
    assert all(np.isfinite(r["shared/value_loss"]) for r in rows)
    buf = full.state.curriculum
    p = np.asarray(buf.success)
    np.testing.assert_allclose(p * 2, np.round(p * 2), atol=1e-6)
    np.testing.assert_allclose(buf.learnability, p * (1 - p), atol=1e-6)
    assert np.all(np.diff(np.asarray(buf.learnability)) <= 1e-7)

    train(tiny_sfl(tmp_path, "half", 3))
    resumed = train(tiny_sfl(tmp_path, "x", 6), resume=tmp_path / "half")
    assert_same(learning_rows(rows)[3:], learning_rows(resumed.rows))
    for a, b in zip(jax.tree.leaves(full.state), jax.tree.leaves(resumed.state), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    two = train(tiny_sfl(tmp_path, "two", 6, devices=2))
    for a, b in zip(learning_rows(rows), learning_rows(two.rows), strict=True):
        for k in a:
            np.testing.assert_allclose(a[k], b[k], rtol=2e-4, atol=1e-6, err_msg=k)
    for a, b in zip(jax.tree.leaves(buf.levels), jax.tree.leaves(two.state.curriculum.levels),
                    strict=True):  # fmt: skip
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
