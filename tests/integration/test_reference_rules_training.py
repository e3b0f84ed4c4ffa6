"""The reference UED library's rules through whole runs: ACCEL∥'s cold third block, compat runs
train and resume exactly, the cycle-start recurrent state."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from arenax.training import TrainConfig, train, with_compat
from arenax.training.build import make_curriculum
from arenax.training.parallel import jit_init
from helpers import tiny_preset


def small(preset: str, tmp_path: Path, **changes: object) -> TrainConfig:
    cfg = tiny_preset(preset, tmp_path, n_steps=16, chunk=2, checkpoint_every=2)
    cfg = dataclasses.replace(cfg, total_steps=None, total_updates=4)
    return dataclasses.replace(cfg, **changes)


# ---------------------------------------------------------------------- recurrent state
@dataclasses.dataclass(frozen=True)
class Spy:
    """Wraps a learner and reports the carry and ``first`` flags its update was given."""

    inner: object

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)

    def update(self, state, traj, carry, key, axis_name=None):
        new, stats = self.inner.update(state, traj, carry, key, axis_name)
        stats["spy_carry"] = jnp.sum(jnp.abs(carry[0]))
        stats["spy_first"] = jnp.mean(traj.first[0].astype(jnp.float32))
        return new, stats


@pytest.mark.parametrize("carry_over", [False, True])
def test_cycle_start_recurrent_state(carry_over: bool, tmp_path: Path) -> None:
    cfg = small("maze-dr", tmp_path)
    agent = cfg.teams["agent"]
    agent = dataclasses.replace(
        agent, learner=dataclasses.replace(agent.learner, carry_over=carry_over)
    )
    cfg = dataclasses.replace(cfg, teams={"agent": agent})
    algo = make_curriculum(cfg)
    players = algo.players
    spied = dataclasses.replace(players, learners={"agent": Spy(players.learners["agent"])})
    algo = dataclasses.replace(algo, players=spied)
    ids = jnp.arange(cfg.n_envs, dtype=jnp.int32)
    step = jax.jit(lambda s, k: algo.cycle(s, k, ids, None))
    state = jit_init(algo)(jax.random.key(0))
    state, m1 = step(state, jax.random.key(1))
    _, m2 = step(state, jax.random.key(2))
    assert float(m1["spy_carry"]) == 0.0  # the first cycle starts from zero either way
    if carry_over:  # the second starts where the first ended, with no reset at step 0
        ended = jnp.sum(jnp.abs(state.curriculum["carry"]["agent"][0]))
        assert float(ended) > 0 and float(m2["spy_carry"]) == pytest.approx(float(ended))
        assert float(m2["spy_first"]) == 0.0
    else:
        assert state.curriculum == {}
        assert float(m2["spy_carry"]) == 0.0 and float(m2["spy_first"]) == 1.0


@pytest.mark.parametrize("cold", ["mutate", "new"])
def test_accel_parallel_cold_third_block(cold: str, tmp_path: Path) -> None:
    """Before warm-up the third block holds mutations of fresh levels (n_edits edits each),
    or fresh levels (the reference): the buffer's entries say which."""
    cfg = small("maze-paccel", tmp_path)
    cfg = dataclasses.replace(
        cfg, curriculum=dataclasses.replace(cfg.curriculum, cold_children=cold, buffer_size=64)
    )
    algo = make_curriculum(cfg)
    ids = jnp.arange(cfg.n_envs, dtype=jnp.int32)
    state, m = jax.jit(lambda s, k: algo.cycle(s, k, ids, None))(
        jit_init(algo)(jax.random.key(0)), jax.random.key(1)
    )
    assert float(m["updated"]) == 0.0  # cold
    muts = set(np.asarray(state.curriculum.mutations)[np.asarray(state.curriculum.filled)].tolist())
    assert muts == ({0, cfg.curriculum.n_edits} if cold == "mutate" else {0})


@pytest.mark.slow
@pytest.mark.parametrize("preset", ["maze-dr", "maze-pplr", "maze-paccel", "maze-paired"])
def test_compat_runs_train_and_resume_exactly(preset: str, tmp_path: Path) -> None:
    cfg = with_compat(small(preset, tmp_path, name="full", total_updates=4, chunk=1,
                            checkpoint_every=1))  # fmt: skip
    full = train(cfg)
    train(dataclasses.replace(cfg, name="half", total_updates=2))
    res = train(dataclasses.replace(cfg, name="x"), resume=tmp_path / "half")
    for a, b in zip(jax.tree.leaves(full.state), jax.tree.leaves(res.state), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert full.rows[-1]["updates"] == 4
