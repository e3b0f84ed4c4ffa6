"""Curricula over continuous Tag arenas with disc obstacles: PLR⊥ / ACCEL, ACCEL with episode
lengths per level, and SFL train end to end."""

from __future__ import annotations

import dataclasses

import jax
import numpy as np
import pytest

from arenax.envs.tag import discs as D


def tiny_tag(tmp_path, algorithm: str, cycles: int, **changes):
    from arenax.training import PRESETS
    from helpers import tiny_preset

    cfg = tiny_preset("tag-plr", tmp_path, cycles, **changes)
    tag = dataclasses.replace(cfg.env, n_taggers=2, n_runners=3, episode_length=8,
                              max_obstacles=3, arena=10.0, k_nearest=None)  # fmt: skip
    q = cfg.curriculum if algorithm == "plr" else dataclasses.replace(
        PRESETS["maze-accel"].curriculum, buffer_size=8, n_edits=2)  # fmt: skip
    cfg = dataclasses.replace(cfg, env=tag, curriculum=q)
    return dataclasses.replace(cfg, total_steps=cfg.steps_per_cycle * cycles)


@pytest.mark.slow
@pytest.mark.parametrize("algorithm", ["plr", "accel"])
def test_replay_curricula_over_continuous_arenas(tmp_path, algorithm, monkeypatch) -> None:
    """tag-plr (and ACCEL from open fields) train, count every step, keep valid arenas in
    the buffer and resume bitwise; the taggers are evaluated on held-out continuous arenas."""
    import csv

    from arenax import cli
    from arenax.training import train, validate
    from arenax.training.build import make_env
    from helpers import assert_same, learning_rows

    validate(tiny_tag(tmp_path, algorithm, 8))
    full = train(tiny_tag(tmp_path, algorithm, 8, name="full"))
    rows, prev = full.rows, 0
    for r in rows:
        steps, prev = r["env_steps"] - prev, r["env_steps"]
        assert steps == (2 if algorithm == "accel" and r["replay"] else 1) * 4 * 8
        assert r["updated"] == r["replay"]
        # pos (5, 2), direction (5,), skill (2,), arena, tag_margin, discs (3, 3): float32
        assert r["buffer/bytes_per_level"] == 4 * (10 + 5 + 2 + 1 + 1 + 9)
        assert 0.0 <= r["level/coverage"] <= 1.0 and 0.0 <= r["level/connectivity"] <= 1.0
    assert any(r["replay"] for r in rows)
    env = make_env(tiny_tag(tmp_path, algorithm, 8))
    buf = full.state.curriculum
    filled = np.flatnonzero(np.asarray(buf.filled))
    assert filled.size > 0
    for i in filled:
        D.validate_level(jax.tree.map(lambda x, i=i: x[i], buf.levels), env)
    if algorithm == "accel":
        return
    train(tiny_tag(tmp_path, algorithm, 4, name="half"))
    resumed = train(tiny_tag(tmp_path, algorithm, 8, name="x"), resume=tmp_path / "half")
    assert_same(learning_rows(rows)[4:], learning_rows(resumed.rows))
    monkeypatch.setattr("sys.argv", ["arenax", "eval", str(tmp_path / "full"), "--suite",
                                     "arenas", "--episodes", "3", "--opponents", "scripted"])  # fmt: skip
    cli.main()
    with (tmp_path / "full" / "eval_tag.csv").open() as f:
        arenas = [r["arena"] for r in csv.DictReader(f)]
    assert arenas == [a for a in D.HELDOUT_ARENAS for _ in range(3)]


@pytest.mark.slow
def test_accel_over_continuous_arenas_with_episode_lengths(tmp_path) -> None:
    """ACCEL from open fields (the full length) whose edits redraw lengths: trains, and the
    buffer keeps valid levels whose lengths lie in the range."""
    from arenax.training import train
    from arenax.training.build import make_env

    cfg = tiny_tag(tmp_path, "accel", 4)
    cfg = dataclasses.replace(cfg, env=dataclasses.replace(cfg.env, episode_length_range=(3, 8)))
    buf = train(cfg).state.curriculum
    env = make_env(cfg)
    filled = np.flatnonzero(np.asarray(buf.filled))
    assert filled.size > 0
    for i in filled:
        D.validate_level(jax.tree.map(lambda x, i=i: x[i], buf.levels), env)
    assert set(np.asarray(buf.levels.episode_length)[filled].tolist()) <= set(range(3, 9))


@pytest.mark.slow
def test_sfl_over_continuous_arenas_trains(tmp_path) -> None:
    """tag-sfl: each cycle trains both teams on 4 envs × 8 steps; a refresh (every 2nd
    cycle) adds 8 arenas × 2 copies × the 8-step episode; the kept arenas' p are shares of
    3 runners × 2 first episodes, ranked by p (1 − p), and valid arenas."""
    from arenax.training import PRESETS, train
    from arenax.training.build import make_env

    cfg = tiny_tag(tmp_path, "plr", 4)
    q = dataclasses.replace(PRESETS["tag-sfl"].curriculum, buffer_size=4, sample_levels=8,
                            episodes=2, refresh_every=2)  # fmt: skip
    cfg = dataclasses.replace(cfg, curriculum=q, total_steps=None, total_updates=4)
    result = train(cfg)
    rows = result.rows
    assert [r["sfl/refresh"] for r in rows] == [1.0, 0.0] * 2
    steps = [r["env_steps"] - (rows[i - 1]["env_steps"] if i else 0) for i, r in enumerate(rows)]
    assert steps == [4 * 8 + 8 * 2 * 8, 4 * 8] * 2
    assert all(np.isfinite(r["tagger/value_loss"]) and np.isfinite(r["runner/value_loss"]) for r in rows)  # fmt: skip
    buf = result.state.curriculum
    p = np.asarray(buf.success)
    np.testing.assert_allclose(p * 6, np.round(p * 6), atol=1e-5)  # 3 runners x 2 episodes
    np.testing.assert_allclose(buf.learnability, p * (1 - p), atol=1e-6)
    assert np.all(np.diff(np.asarray(buf.learnability)) <= 1e-7)
    env = make_env(cfg)
    for i in range(4):
        D.validate_level(jax.tree.map(lambda x, i=i: x[i], buf.levels), env)
