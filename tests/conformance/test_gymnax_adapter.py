"""gymnax environments as arenax level families (env params = level): episodes equal
gymnax's own public API step for step, levels stay in their ranges, and the replay
curricula train over them."""

import gymnax
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import arenax
from arenax.interop.gymnax import GymnaxFamily, cartpole_derive

CARTPOLE = GymnaxFamily("CartPole-v1", ranges=(("length", 0.25, 1.0), ("masspole", 0.05, 0.5)),
                        derive=cartpole_derive, heldout=(("long-pole", (("length", 1.5),)),))  # fmt: skip


@pytest.mark.parametrize(
    "family", [CARTPOLE, GymnaxFamily("Pendulum-v1", ranges=(("g", 5.0, 15.0),))]
)
def test_episodes_equal_gymnax_public_api(family: GymnaxFamily) -> None:
    genv, _ = gymnax.make(family.env_id)
    level = family.generate(jax.random.key(7))
    rng = np.random.default_rng(0)
    obs, state = family.reset(jax.random.key(1), level)
    g_obs, g_state = genv.reset(jax.random.key(1), level)
    np.testing.assert_array_equal(obs["agent"][0], np.ravel(g_obs))
    step, g_step = jax.jit(family.step), jax.jit(genv.step)
    space = family.action_space()
    for t in range(600):
        if isinstance(space, arenax.envs.spaces.Discrete):
            a = jnp.int32(rng.integers(space.n))
        else:
            a = jnp.asarray(rng.uniform(space.low, space.high, space.shape), jnp.float32)
        key = jax.random.key(100 + t)
        k_step, _ = jax.random.split(key)  # gymnax's step splits (step, reset) keys
        obs, state, r, te, tr, _ = step(k_step, state, {"agent": a[None]})
        g_obs, g_state, g_r, g_te, g_tr, info = g_step(key, g_state, a, level)
        np.testing.assert_allclose(obs["agent"][0], np.ravel(info["final_observation"]), rtol=1e-6)
        assert float(r["agent"][0]) == pytest.approx(float(g_r))
        assert (bool(te), bool(tr)) == (bool(g_te), bool(g_tr))
        if te or tr:
            break
    assert te or tr, "the episode did not end"


def test_levels_in_range_and_derived_fields() -> None:
    keys = jax.random.split(jax.random.key(0), 200)
    levels = jax.vmap(CARTPOLE.generate)(keys)
    mutated = jax.vmap(lambda k, lv: CARTPOLE.mutate(k, lv, 4))(keys, levels)
    for lv in (levels, mutated):
        length, mp = np.asarray(lv.length), np.asarray(lv.masspole)
        assert np.all((length >= 0.25) & (length <= 1.0) & (mp >= 0.05) & (mp <= 0.5))
        np.testing.assert_allclose(lv.total_mass, np.asarray(lv.masscart) + mp, rtol=1e-6)
        np.testing.assert_allclose(lv.polemass_length, mp * length, rtol=1e-6)
    assert np.any(np.asarray(mutated.length) != np.asarray(levels.length))
    held = CARTPOLE.heldout_levels()
    assert set(held) == {"default", "long-pole"} and not CARTPOLE.in_range(held["long-pole"])
    assert float(held["long-pole"].polemass_length) == pytest.approx(0.1 * 1.5)
    with pytest.raises(ValueError, match="no env param 'pole'"):
        GymnaxFamily("CartPole-v1", ranges=(("pole", 0.1, 1.0),))
