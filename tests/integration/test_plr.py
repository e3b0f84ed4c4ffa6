"""Replay curricula end to end: every preset on small shapes, robust PLR's skipped updates,
the parallel batch composition, resume exactness with the buffer, 1 vs 2 devices."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from arenax.curricula import buffer as B
from arenax.training import TrainConfig, train
from arenax.training.build import make_curriculum
from arenax.training.loop import TIMING_COLUMNS
from arenax.training.parallel import jit_init
from helpers import assert_same, tiny_preset

pytestmark = pytest.mark.slow  # every test here trains


def small(preset: str, tmp_path: Path, cycles: int = 6, **changes: object) -> TrainConfig:
    """The tiny preset (episodes of 8 steps end in a rollout of 16), chunks of 2 cycles."""
    cfg = tiny_preset(preset, tmp_path, n_steps=16, chunk=2, checkpoint_every=2)
    cfg = dataclasses.replace(cfg, total_steps=cfg.steps_per_cycle * cycles)
    return dataclasses.replace(cfg, **changes)


def rows_of(result) -> list[dict]:
    return [{k: v for k, v in r.items() if k not in TIMING_COLUMNS} for r in result.rows]


@pytest.mark.parametrize("preset", ["maze-plr", "maze-pplr", "maze-accel", "maze-paccel"])
def test_presets_run_and_count_every_step(preset: str, tmp_path: Path) -> None:
    cfg = small(preset, tmp_path)
    res = train(cfg)
    rows = res.rows
    n_t = cfg.n_envs * cfg.n_steps
    assert rows[-1]["buffer/fill"] == 1.0
    for r in rows:
        steps = r["env_steps"] - (rows[rows.index(r) - 1]["env_steps"] if rows.index(r) else 0)
        if cfg.curriculum.parallel:
            assert steps == cfg.blocks * n_t
        elif preset == "maze-accel" and r["replay"]:
            assert steps == 2 * n_t  # the children's evaluation rollout counts too
        else:
            assert steps == n_t
    trained = [r["updated"] for r in rows]
    assert rows[-1]["student_steps"] == n_t * sum(trained)
    assert any(r["replay"] for r in rows)
    # robust forms never update on a new-level cycle; losses are NaN exactly then
    for r in rows:
        assert r["updated"] == r["replay"]
        assert np.isfinite(r["loss"]) == bool(r["updated"])


def test_robust_plr_skips_updates_on_new_levels(tmp_path: Path) -> None:
    cfg = small("maze-plr", tmp_path)
    algo = make_curriculum(cfg)
    state = jit_init(algo)(jax.random.key(0))
    ids = jnp.arange(cfg.n_envs, dtype=jnp.int32)
    step = jax.jit(lambda s, k: algo.cycle(s, k, ids, None))
    seen = set()
    for i in range(12):
        new, m = step(state, jax.random.key(i))
        same = all(
            bool(jnp.array_equal(a, b))
            for a, b in zip(
                jax.tree.leaves(state.learner), jax.tree.leaves(new.learner), strict=True
            )
        )
        assert same == (float(m["replay"]) == 0.0)
        seen.add(float(m["replay"]))
        state = new
    assert seen == {0.0, 1.0}
    # the non-robust form updates on every cycle
    algo2 = make_curriculum(
        dataclasses.replace(cfg, curriculum=dataclasses.replace(cfg.curriculum, robust=False))
    )
    s2 = jit_init(algo2)(jax.random.key(0))
    n2, m2 = jax.jit(lambda s, k: algo2.cycle(s, k, ids, None))(s2, jax.random.key(0))
    assert float(m2["replay"]) == 0.0 and float(m2["updated"]) == 1.0
    assert not jnp.array_equal(
        jax.tree.leaves(s2.learner["agent"].params)[0],
        jax.tree.leaves(n2.learner["agent"].params)[0],
    )


def test_parallel_batch_composition(tmp_path: Path) -> None:
    cfg = small("maze-paccel", tmp_path)
    # a roomy buffer: nothing is refused, so every block's levels must land in it
    cfg = dataclasses.replace(
        cfg, curriculum=dataclasses.replace(cfg.curriculum, buffer_size=64, min_fill=0.1)
    )
    algo = make_curriculum(cfg)
    ids = jnp.arange(cfg.n_envs, dtype=jnp.int32)
    step = jax.jit(lambda s, k: algo.cycle(s, k, ids, None))
    state = jit_init(algo)(jax.random.key(0))
    state, m = step(state, jax.random.key(1))  # cold: no training, all blocks inserted
    assert float(m["updated"]) == 0.0
    while float(B.fill_ratio(state.curriculum)) < cfg.curriculum.min_fill:
        state, m = step(state, jax.random.key(2 + int(state.cycle)))
    before = state.curriculum
    key = jax.random.key(99)
    after, m = step(state, key)
    assert float(m["updated"]) == 1.0
    # the blocks, rebuilt from the cycle's key exactly as the cycle draws them
    k_new, _k_new2, k_sample, k_mut, _, _ = jax.random.split(key, 6)
    new = algo._new_levels(k_new)
    _, idx = B.sample(before, k_sample, cfg.n_envs, algo._probs(before))
    buf = after.curriculum
    # replayed levels were stamped as just seen
    assert bool(jnp.all(buf.last_seen[idx] >= before.clock))
    # mutated children of the replayed levels were built with the configured edits
    kids, _ = algo._children(
        k_mut, jax.tree.map(lambda a: a[idx], before.levels), before.scores[idx]
    )
    for block in (new, kids):
        present = [
            bool(
                jnp.any(B._equal(buf.levels, jax.tree.map(lambda a, i=i: a[i], block)) & buf.filled)
            )
            for i in range(cfg.n_envs)
        ]
        # episodes end within the rollout (max_steps 8 < 16 steps): every score is finite
        assert all(present)
    assert int(jnp.max(buf.mutations)) >= cfg.curriculum.n_edits


def test_resume_keeps_the_buffer_bitwise(tmp_path: Path) -> None:
    full = train(small("maze-accel", tmp_path, cycles=8, name="full"))
    half = small("maze-accel", tmp_path, cycles=4, name="half")
    train(half)
    resumed = train(small("maze-accel", tmp_path, cycles=8, name="x"), resume=tmp_path / "half")
    start = resumed.rows[0]["cycle"] - 1  # ACCEL's replay cycles take 2x steps: not always 4
    assert 0 < start < len(full.rows)
    assert_same(rows_of(full)[start:], rows_of(resumed))
    for a, b in zip(jax.tree.leaves(full.state), jax.tree.leaves(resumed.state), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    # the buffer gallery of the resumed run
    from arenax.eval.report import buffer_gallery

    path, n = buffer_gallery(tmp_path / "half", n=6)
    assert path == tmp_path / "half" / "buffer.png" and path.stat().st_size > 1000 and n == 6


@pytest.mark.parametrize("preset", ["maze-plr", "maze-paccel"])
def test_one_and_two_devices_agree(preset: str, tmp_path: Path) -> None:
    one = train(small(preset, tmp_path, name="one", devices=1))
    two = train(small(preset, tmp_path, name="two", devices=2))
    for a, b in zip(rows_of(one), rows_of(two), strict=True):
        for k in a:
            np.testing.assert_allclose(a[k], b[k], rtol=2e-4, atol=1e-6, err_msg=k)
    np.testing.assert_array_equal(
        np.asarray(one.state.curriculum.filled), np.asarray(two.state.curriculum.filled)
    )
    for a, b in zip(
        jax.tree.leaves(one.state.curriculum.levels),
        jax.tree.leaves(two.state.curriculum.levels),
        strict=True,
    ):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
