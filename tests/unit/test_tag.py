"""Continuous Tag: hand-checked cases of WarpDrive's rules (the step-by-step comparison with
WarpDrive's own code is in ``test_tag_warpdrive.py``) and exact nearest neighbours."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from arenax.envs.tag import TagEnv, TagLevel, kernels
from arenax.envs.tag.kernels import k_nearest


def _level(pos: list[list[float]], arena: float = 10.0, margin: float = 0.5) -> TagLevel:
    a = len(pos)
    return TagLevel(pos=jnp.array(pos, jnp.float32), direction=jnp.zeros(a, jnp.float32),
                    skill=jnp.ones(2, jnp.float32), arena=jnp.float32(arena),
                    tag_margin=jnp.float32(margin))  # fmt: skip


NOOP = {"tagger": jnp.zeros((1, 2), jnp.int32), "runner": jnp.zeros((4, 2), jnp.int32)}


def test_one_tagger_tags_several_runners_in_one_step_observed_before_tagging() -> None:
    env = TagEnv(n_taggers=1, n_runners=4, episode_length=3, arena=10.0, tag_distance=0.05)
    # three runners within 0.5 of the tagger, one far away
    level = _level([[5.0, 5.0], [5.2, 5.0], [5.0, 5.3], [4.8, 4.9], [9.0, 9.0]])
    # compiled: op by op, every distinct primitive of the step compiles on its own
    step, observe = jax.jit(env.step_state), jax.jit(env.observe)
    state = jax.jit(env.reset_state)(None, level)
    state, rew, term, trunc, info = step(None, state, NOOP)
    assert float(rew["tagger"][0]) == 3.0 and int(info["tagged"]) == 3  # paid for each
    np.testing.assert_allclose(rew["runner"], [-1, -1, -1, 0])
    np.testing.assert_array_equal(info["out"]["runner"], [True, True, True, False])
    # observed before tagging: the tagged runners still see and are seen normally
    obs = observe(state)
    assert np.all(np.asarray(obs["runner"][:3]).any(axis=-1))
    in_game_flags = np.asarray(obs["tagger"][0]).reshape(-1)[6 * 4 : 7 * 4]
    np.testing.assert_array_equal(in_game_flags, [1, 1, 1, 1])
    # the next step: the tagged runners are out (zero observation, seen out by others)
    state, rew, *_ = step(None, state, NOOP)
    obs = observe(state)
    np.testing.assert_array_equal(np.asarray(obs["runner"][:3])[:, : 5 * 4], 0)
    np.testing.assert_array_equal(np.asarray(obs["tagger"][0]).reshape(-1)[24:28], [0, 0, 0, 1])
    state, rew, term, trunc, _ = step(None, state, NOOP)
    np.testing.assert_allclose(rew["runner"], [0, 0, 0, 1.0])  # end-of-game reward at t = T
    assert bool(trunc) and not bool(term)


def test_runners_that_stay_are_tagged_again() -> None:
    env = TagEnv(n_taggers=1, n_runners=4, episode_length=3, tag_distance=0.05,
                 runners_leave=False)  # fmt: skip
    state = jax.jit(env.reset_state)(None, _level([[5.0, 5.0], [5.2, 5.0], [9, 9], [1, 1], [9, 1]]))
    step = jax.jit(env.step_state)
    for _ in range(3):
        state, rew, term, _, info = step(None, state, NOOP)
        np.testing.assert_allclose(rew["runner"][0], -1.0 + (1.0 if int(state.time) == 3 else 0))
        assert int(info["tagged"]) == 1 and not bool(term)


def test_observation_layout_sizes_and_starts() -> None:
    env = TagEnv(n_taggers=10, n_runners=100, k_nearest=10)
    assert env.obs_size == 71  # the benchmark's 7 x 10 + 1
    obs, _ = env.reset(jax.random.key(0), env.generate(jax.random.key(0)))
    assert obs["tagger"].shape == (10, 71) and obs["runner"].shape == (100, 71)
    assert env.action_space("runner").nvec == (11, 11)
    # starts face one of the four axes (WarpDrive's rule); a fixed start never changes
    level = env.generate(jax.random.key(3))
    m = np.mod(np.asarray(level.direction, np.float64), np.pi / 2)
    assert np.all(np.minimum(m, np.pi / 2 - m) < 1e-6)
    fixed = TagEnv(random_start=False)
    a, b = fixed.generate(jax.random.key(1)), fixed.generate(jax.random.key(2))
    np.testing.assert_array_equal(a.pos, b.pos)
    with pytest.raises(ValueError, match="k_nearest"):
        TagEnv(n_taggers=1, n_runners=1, k_nearest=2)


@given(
    seed=st.integers(0, 2**16),
    a=st.sampled_from([3, 17, 40]),
    k=st.sampled_from([1, 3, 6]),
    crowd=st.booleans(),
)  # fmt: skip (a few fixed shapes: one compile each)
def test_k_nearest_is_an_exact_sort(seed: int, a: int, k: int, crowd: bool) -> None:
    """The same neighbours, in the same order, as a stable sort of squared float32
    distances (equal ones to the lower index), agents out of the game skipped: the CPU
    kernel exactly; the pure-JAX path too, up to distances one rounding apart (XLA may fuse
    the multiply-add)."""
    k = min(k, a - 1)
    rng = np.random.default_rng(seed)
    pos = rng.random((a, 2), np.float32) * (1.0 if crowd else 20.0)
    if crowd:  # exact ties: agents on the same spots
        pos[rng.integers(0, a, a // 2)] = pos[0]
    active = rng.random(a) < 0.8
    want_o, want_v = kernels.reference(pos, active, k)
    got_o, got_v = map(np.asarray, jax.jit(lambda p, m: k_nearest(p, m, k))(pos, active))
    assert kernels.cpu_kernel_available(), "the suite checks the CPU kernel"
    np.testing.assert_array_equal(got_v, want_v)
    np.testing.assert_array_equal(np.where(got_v, got_o, 0), want_o)
    jax_o, jax_v = map(
        np.asarray, jax.jit(lambda p, m: kernels.k_nearest_jax(p, m, k))(pos, active)
    )
    np.testing.assert_array_equal(jax_v, want_v)
    d2 = ((pos[None] - pos[:, None]) ** 2).sum(-1).astype(np.float64)
    for i in range(a):
        for m in np.nonzero(jax_o[i] != want_o[i])[0]:  # only one rounding apart
            x, y = d2[i, jax_o[i, m]], d2[i, want_o[i, m]]
            assert abs(x - y) <= 4e-7 * max(x, y), (i, m, x, y)


def test_kernel_is_batched_like_the_jax_path() -> None:
    """Under vmap (the env batch) the kernel sees a leading batch axis."""
    rng = np.random.default_rng(0)
    pos = rng.random((5, 30, 2), np.float32) * 10
    active = rng.random((5, 30)) < 0.9
    got = jax.jit(jax.vmap(lambda p, m: k_nearest(p, m, 4)))(pos, active)
    for e in range(5):
        want = kernels.reference(pos[e], active[e], 4)
        np.testing.assert_array_equal(np.asarray(got[1][e]), want[1])
        np.testing.assert_array_equal(np.where(got[1][e], got[0][e], 0), want[0])
