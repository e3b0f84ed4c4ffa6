"""Sampling for learnability end to end: the cycle's accounting, exact resume, devices agree."""

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from arenax.training import train
from helpers import tiny_preset


def tiny(tmp_path: Path, **sfl: object) -> object:
    cfg = tiny_preset("maze-sfl", tmp_path)
    q = dataclasses.replace(cfg.curriculum, **{"episodes": 3, **sfl})
    return dataclasses.replace(cfg, curriculum=q, n_steps=16, total_steps=None, total_updates=4)


@pytest.mark.slow
def test_maze_sfl_cycles_count_their_steps(tmp_path: Path) -> None:
    rows = train(tiny(tmp_path)).rows
    assert [r["sfl/refresh"] for r in rows] == [1.0, 0.0, 1.0, 0.0]
    steps = [r["env_steps"] - (rows[i - 1]["env_steps"] if i else 0) for i, r in enumerate(rows)]
    refresh = 8 * 3 * 8  # sample_levels x episodes x the maze's max_steps
    assert steps == [4 * 16 + refresh, 4 * 16, 4 * 16 + refresh, 4 * 16]
    assert [r["student_steps"] for r in rows] == [64, 128, 192, 256]
    for r in rows:
        assert 0.0 <= r["sfl/learnability"] <= 0.25 and 0.0 <= r["sfl/success"] <= 1.0
        assert np.isfinite(r["value_loss"])


@pytest.mark.slow
def test_resume_is_bitwise_exact_and_devices_agree(tmp_path: Path) -> None:
    """The buffer is in the checkpoint: a run stopped after 3 updates (between refreshes)
    and resumed equals an uninterrupted one bitwise; on 2 devices (each playing half of the
    sampled copies) the metrics and the selected levels equal 1 device's."""
    import jax

    from helpers import assert_same, learning_rows

    full = train(dataclasses.replace(tiny(tmp_path), total_updates=6, name="full"))
    train(dataclasses.replace(tiny(tmp_path), total_updates=3, name="half"))
    resumed = train(dataclasses.replace(tiny(tmp_path), total_updates=6, name="x"),
                    resume=tmp_path / "half")  # fmt: skip
    assert_same(learning_rows(full.rows)[3:], learning_rows(resumed.rows))
    for a, b in zip(jax.tree.leaves(full.state), jax.tree.leaves(resumed.state), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    two = train(dataclasses.replace(tiny(tmp_path), total_updates=6, name="two", devices=2))
    for a, b in zip(learning_rows(full.rows), learning_rows(two.rows), strict=True):
        for k in a:
            np.testing.assert_allclose(a[k], b[k], rtol=2e-4, atol=1e-6, err_msg=k)
    for a, b in zip(jax.tree.leaves(full.state.curriculum.levels),
                    jax.tree.leaves(two.state.curriculum.levels), strict=True):  # fmt: skip
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


@pytest.mark.slow
def test_stacked_runs_take_their_cycles_in_turn_and_each_is_its_own_run(tmp_path: Path) -> None:
    """Two seeds in one program (`--seeds 2`): SFL's refresh is due on each run's own cycle
    count, so stacked runs take their cycles in turn (`runs_in_turn`, `lax.map`: under
    `vmap` every run played a refresh on every cycle); each seed is its own run."""
    from helpers import assert_close, learning_rows

    cfg = tiny(tmp_path)
    stack = train(dataclasses.replace(cfg, name="stack", seeds=2, seed=3))
    assert program_of(cfg).curriculum.runs_in_turn
    for i, seed in enumerate((3, 4)):
        own = train(dataclasses.replace(cfg, name=f"own{seed}", seed=seed))
        assert [r["sfl/refresh"] for r in stack.seed_rows[i]] == [1.0, 0.0, 1.0, 0.0]
        assert_close(learning_rows(stack.seed_rows[i]), learning_rows(own.rows))


def program_of(cfg: object) -> object:
    from arenax.training.program import Program

    return Program.build(cfg)
