"""Sampling for learnability: success rates and the selection by hand, the cycle's
accounting, options, and a trained maze-sfl run."""

import dataclasses
from pathlib import Path

import jax.numpy as jnp
import numpy as np
import pytest

from arenax.curricula.sfl import first_episode_success, learnability, select
from arenax.options import ConfigError
from arenax.train import validate
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

    from arenax.train.build import make_curriculum

    algo = make_curriculum(tiny(tmp_path))
    state = algo.init(jax.random.key(0))
    buf = jax.jit(lambda p, k: algo._refresh(p, k, None))(state.learner, jax.random.key(1))
    p = np.asarray(buf.success)
    np.testing.assert_allclose(p * 3, np.round(p * 3), atol=1e-5)
    np.testing.assert_allclose(buf.learnability, p * (1 - p), atol=1e-6)
    assert np.all(np.diff(np.asarray(buf.learnability)) <= 1e-7)
