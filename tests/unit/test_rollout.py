"""The rollout against an independent replay of the environment."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from arenax.envs import AutoResetFromBatch, EpisodeStats
from arenax.envs.maze import MazeEnv, sample_dr_level
from arenax.nn import StudentPolicy
from arenax.rl.rollout import RolloutCarry, reset_batch, rollout, step_keys


@pytest.mark.parametrize("unroll", ["1", "3"])  # 3: unrolled, 40 steps leave a remainder
def test_rollout_matches_replay_and_bootstraps_truncations(unroll: str, monkeypatch) -> None:
    monkeypatch.setenv("ARENAX_SCAN_UNROLL", unroll)  # read when the rollout is traced
    base = MazeEnv(height=4, width=4, max_steps=6, normalize_obs=True)
    env = EpisodeStats(AutoResetFromBatch(base))
    pol = StudentPolicy(cell="ff", hidden=16)  # value depends on the observation only
    n, t_len = 3, 40
    gen = functools.partial(sample_dr_level, height=4, width=4, n_walls=3)
    levels = jax.jit(jax.vmap(lambda k: jax.vmap(gen)(jax.random.split(k, t_len + 1))))(
        jax.random.split(jax.random.key(0), n)
    )
    ids = jnp.arange(n, dtype=jnp.int32)
    obs, state = jax.jit(reset_batch, static_argnums=0)(env, jax.random.key(1), levels, ids)
    params = jax.jit(pol.init)(
        jax.random.key(2), jax.tree.map(lambda x: x[None, :, 0], obs["agent"])
    )
    start = RolloutCarry(state, obs, jnp.ones((n,), bool), pol.initial_carry(n))
    # a new function for each case: traced afresh, with this case's unrolling
    traj, _, eps = jax.jit(lambda p, k, c: rollout(env, pol, p, k, c, t_len, ids))(
        params, jax.random.key(3), start
    )
    traj = jax.device_get(traj)

    @jax.jit
    def value(o: object) -> jax.Array:
        o = jax.tree.map(lambda x: x[None], o["agent"])
        return pol.apply(params, o, jnp.ones((1, 1), bool), pol.initial_carry(1))[2][0, 0]

    # the replay steps one env at a time through the env's own functions (compiled: op by op
    # a maze step takes ~0.1 s)
    observe, step_state = jax.jit(base.observe), jax.jit(base.step_state)
    reset_state = jax.jit(base.reset_state)

    n_trunc = 0
    for j in range(n):
        k = 0
        s = reset_state(None, jax.tree.map(lambda x, j=j: x[j, 0], levels))
        ret = 0.0
        for t in range(t_len):
            o = observe(s)
            np.testing.assert_array_equal(traj.obs.image[t, j], o["agent"].image[0])
            assert traj.first[t, j] == (t == 0 or traj.done[t - 1, j])
            s, r, term, trunc, _ = step_state(None, s, {"agent": jnp.array([traj.action[t, j]])})
            ret += float(r["agent"][0])
            assert traj.reward[t, j] == float(r["agent"][0])
            assert traj.terminated[t, j] == bool(term) and traj.done[t, j] == bool(term | trunc)
            if bool(trunc) and not bool(term):
                # bootstrap from the final observation of the old episode, not the new one
                np.testing.assert_allclose(traj.next_value[t, j], value(observe(s)), rtol=1e-5)
                n_trunc += 1
            elif not bool(term | trunc) and t + 1 < t_len:
                assert traj.next_value[t, j] == traj.value[t + 1, j]
            if bool(term | trunc):
                assert eps["done"][t, j]
                np.testing.assert_allclose(eps["return"][t, j], ret, rtol=1e-6)
                k += 1
                ret = 0.0
                s = reset_state(None, jax.tree.map(lambda x, j=j, k=k: x[j, k], levels))
    assert n_trunc > 0


@pytest.mark.parametrize("parts", [2, 3])
@pytest.mark.parametrize("make_key", [jax.random.key, jax.random.PRNGKey])  # typed / raw
def test_step_keys_are_each_steps_own_draw(parts: int, make_key) -> None:
    """The batched draw gives step `s` of env `i` the keys a draw inside that step gave:
    `split(fold_in(fold_in(key, s), env_ids[i]), parts)`, one by one (global env ids, not
    positions)."""
    key, ids, t_len = make_key(7), jnp.array([3, 0, 11], jnp.int32), 5
    got = jax.jit(step_keys, static_argnums=(1, 3))(key, t_len, ids, parts)
    assert len(got) == parts
    for s in range(t_len):
        for i, env_id in enumerate(ids):
            want = jax.random.split(jax.random.fold_in(jax.random.fold_in(key, s), env_id), parts)
            for p in range(parts):
                np.testing.assert_array_equal(
                    jax.random.key_data(got[p][s, i]), jax.random.key_data(want[p])
                )
