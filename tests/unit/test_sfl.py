"""Sampling for learnability: success rates and the selection by hand, the cycle's
accounting, options, and a trained maze-sfl run."""

import dataclasses
from pathlib import Path

import jax.numpy as jnp
import numpy as np
import pytest

from arenax.curricula.sfl import first_episode_success, learnability, select
from arenax.options import ConfigError
from arenax.training import validate
from arenax.training.parallel import jit_init
from helpers import tiny_preset


def test_success_rate_and_selection_hand_computed() -> None:
    # 4 envs over 4 steps: env 0's first episode fails (its second, solved, does not
    # count), env 1 solves its first, env 2 never ends, env 3 solves at t = 0 and again
    done = jnp.array([[1, 0, 0, 1], [0, 1, 0, 1], [1, 0, 0, 0], [0, 0, 0, 0]], bool)
    success = jnp.array([[0, 0, 0, 1], [0, 1, 0, 1], [1, 0, 0, 0], [0, 0, 0, 0]], bool)
    np.testing.assert_array_equal(first_episode_success(done, success), [0.0, 1.0, 0.0, 1.0])
    p = jnp.array([0.0, 0.5, 1.0, 0.3, 0.9, 0.6])
    np.testing.assert_allclose(learnability(p), [0, 0.25, 0, 0.21, 0.09, 0.24], atol=1e-7)
    levels = {"id": jnp.arange(6)}
    buf = select(levels, p, 3)
    assert buf.levels["id"].tolist() == [1, 5, 3]  # highest p (1 - p) first
    np.testing.assert_allclose(buf.success, [0.5, 0.6, 0.3])
    np.testing.assert_allclose(buf.learnability, [0.25, 0.24, 0.21], atol=1e-7)


def tiny(tmp_path: Path, **sfl: object) -> object:
    cfg = tiny_preset("maze-sfl", tmp_path)
    q = dataclasses.replace(cfg.curriculum, **{"episodes": 3, **sfl})
    return dataclasses.replace(cfg, curriculum=q, n_steps=16, total_steps=None, total_updates=4)


def test_options_are_checked(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"sfl\.buffer_size=9: must be <= sfl\.sample_levels=8"):
        validate(tiny(tmp_path, buffer_size=9))


def test_refresh_estimates_p_from_whole_episodes(tmp_path: Path) -> None:
    """A refresh's success rates are fractions of the 3 first episodes per level, and the
    buffer holds their learnability, highest first."""
    import jax

    from arenax.training.build import make_curriculum

    algo = make_curriculum(tiny(tmp_path))
    state = jit_init(algo)(jax.random.key(0))
    buf = jax.jit(lambda p, k: algo._refresh(p, k, None))(state.learner, jax.random.key(1))
    p = np.asarray(buf.success)
    np.testing.assert_allclose(p * 3, np.round(p * 3), atol=1e-5)
    np.testing.assert_allclose(buf.learnability, p * (1 - p), atol=1e-6)
    assert np.all(np.diff(np.asarray(buf.learnability)) <= 1e-7)


def test_counted_episodes_by_hand() -> None:
    """The paper's estimator counts the first k finished episodes of one long rollout:
    env 0 finishes three (lost, won, won), env 1 one (won), env 2 none."""
    from arenax.curricula.sfl import counted_success

    done = jnp.array([[1, 0, 0], [1, 0, 0], [0, 1, 0], [1, 0, 0]], bool)
    success = jnp.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 0, 0]], bool)
    wins, ended = counted_success(done, success, 2)
    np.testing.assert_array_equal(wins, [1.0, 1.0, 0.0])
    np.testing.assert_array_equal(ended, [2.0, 1.0, 0.0])
    wins, ended = counted_success(done, success, 10)
    np.testing.assert_array_equal(wins, [2.0, 1.0, 0.0])
    np.testing.assert_array_equal(ended, [3.0, 1.0, 0.0])


def test_refresh_in_chunks_with_long_rollouts(tmp_path: Path) -> None:
    """The paper's refresh (one copy per level, ``eval_steps`` steps, the first 3 finished
    episodes, 2 chunks) equals each chunk's levels played on their own: p = wins / finished
    episodes (0 where none finished), then the selection."""
    import jax

    from arenax.curricula.sfl import counted_success
    from arenax.training.build import make_curriculum

    cfg = tiny(tmp_path, episodes=1, eval_steps=20, counted_episodes=3, sample_chunks=2)
    validate(cfg)
    algo = make_curriculum(cfg)
    assert algo.eval_steps == 20
    state = jit_init(algo)(jax.random.key(0))
    key = jax.random.key(1)
    buf = jax.jit(lambda p, k: algo._refresh(p, k, None))(state.learner, key)
    k_levels, k_play = jax.random.split(key)
    levels = jax.jit(jax.vmap(algo.generator))(jax.random.split(k_levels, 8))
    play = jax.jit(algo._play, static_argnums=4)
    p = []
    for i, ids in enumerate(jnp.arange(8, dtype=jnp.int32).reshape(2, 4)):
        part = jax.tree.map(lambda x, ids=ids: x[ids], levels)
        ep = play(state.learner, jax.random.fold_in(k_play, i), part, ids, 20).episodes
        wins, ended = counted_success(ep["done"], ep["success"], 3)
        assert np.all(np.asarray(ended) <= 3)
        p.append(np.where(ended > 0, wins / np.maximum(ended, 1), 0.0))
    want = select(levels, jnp.asarray(np.concatenate(p), jnp.float32), 4)
    np.testing.assert_allclose(buf.success, want.success, atol=1e-6)
    with pytest.raises(
        ConfigError, match=r"must be divisible by devices=1 times sfl\.sample_chunks=3"
    ):
        validate(tiny(tmp_path, episodes=1, sample_chunks=3))
