"""A2C (WarpDrive's trainer) against hand computations: returns, the loss, normalisation,
where the gradient flows, and the optimiser without clipping."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from arenax.rl.a2c import A2CConfig, a2c_loss, a2c_returns, normalize_per_step
from arenax.rl.learner import make_optimizer

# one column per case: an episode terminated at t=1 (column 0), truncated there with the
# cut state worth 8 (column 1); rewards 1, 2, 3, 4; V(s_t) = 10, 20, 30, 40; V(s_T) = 50
REWARD = np.array([[1.0, 1.0], [2.0, 2.0], [3.0, 3.0], [4.0, 4.0]], np.float32)
VALUE = np.array([[10.0, 10.0], [20.0, 20.0], [30.0, 30.0], [40.0, 40.0]], np.float32)
NEXT = np.array([[20.0, 20.0], [99.0, 8.0], [40.0, 40.0], [50.0, 50.0]], np.float32)
DONE = np.array([[0, 0], [1, 1], [0, 0], [0, 0]], bool)
TERM = np.array([[0, 0], [1, 0], [0, 0], [0, 0]], bool)


def returns(tail: str) -> np.ndarray:
    out = a2c_returns(*map(jnp.asarray, (REWARD, VALUE, NEXT, TERM, DONE)), 0.5, tail)
    return np.asarray(out)


def test_returns_bootstrap_the_rollouts_end_from_the_next_state() -> None:
    # R3 = 4 + .5 * 50 = 29; R2 = 3 + .5 * 29 = 17.5; terminated at t=1: R1 = 2, R0 = 1 + .5 * 2
    # truncated at t=1 (worth 8): R1 = 2 + .5 * 8 = 6, R0 = 1 + .5 * 6 = 4
    expected = [[2.0, 4.0], [2.0, 6.0], [17.5, 17.5], [29.0, 29.0]]
    np.testing.assert_allclose(returns("bootstrap"), expected)


def test_returns_with_warpdrives_tail_take_the_last_states_value() -> None:
    # WarpDrive: R_{T-1} = V(s_{T-1}) = 40 when the last step did not end an episode
    expected = [[2.0, 4.0], [2.0, 6.0], [23.0, 23.0], [40.0, 40.0]]
    np.testing.assert_allclose(returns("warpdrive"), expected)


def test_warpdrives_tail_ends_with_the_reward_when_the_last_step_ends_the_episode() -> None:
    done = DONE.copy()
    done[-1] = True
    term = done.copy()
    got = a2c_returns(*map(jnp.asarray, (REWARD, VALUE, NEXT, term, done)), 0.5, "warpdrive")
    np.testing.assert_allclose(np.asarray(got)[2:, 0], [3.0 + 0.5 * 4.0, 4.0])


def test_a_bad_tail_is_refused() -> None:
    with pytest.raises(ValueError, match="tail='last'"):
        returns("last")


def _loss(hp: A2CConfig, value: jax.Array) -> tuple[jax.Array, dict]:
    """Two steps of one sequence: uniform logits then (3:1); actions 0 then 1; returns 2, 1."""
    logits = jnp.array([[[0.0, 0.0]], [[math.log(3.0), 0.0]]])
    action = jnp.array([[0], [1]])
    ret = jnp.array([[2.0], [1.0]])
    mask = jnp.ones((2, 1))
    return a2c_loss(logits, value, action, ret, mask, hp, jnp.float32(2.0))


def test_loss_by_hand() -> None:
    hp = A2CConfig(vf_coef=1.0, ent_coef=0.05)
    value = jnp.array([[1.0], [3.0]])
    loss, stats = _loss(hp, value)
    adv = [2.0 - 1.0, 1.0 - 3.0]
    logp = [math.log(0.5), math.log(0.25)]
    pg = -(logp[0] * adv[0] + logp[1] * adv[1]) / 2
    vf = (1.0**2 + 2.0**2) / 2  # WarpDrive's MSELoss: no factor 1/2
    ent = (math.log(2.0) - (0.75 * math.log(0.75) + 0.25 * math.log(0.25))) / 2
    assert float(stats["pg_loss"]) == pytest.approx(pg, rel=1e-6)
    assert float(stats["value_loss"]) == pytest.approx(vf, rel=1e-6)
    assert float(stats["entropy"]) == pytest.approx(ent, rel=1e-6)
    assert float(loss) == pytest.approx(pg + vf - 0.05 * ent, rel=1e-6)


def test_the_value_learns_only_from_the_value_loss() -> None:
    """The advantage is `R - stopgrad(V)`: d loss / d V = vf_coef · 2 (V - R) / count."""
    hp = A2CConfig(vf_coef=0.7)
    grad = jax.grad(lambda v: _loss(hp, v)[0])(jnp.array([[1.0], [3.0]]))
    np.testing.assert_allclose(np.asarray(grad)[:, 0], [0.7 * (1 - 2), 0.7 * 2 * (3 - 1) / 2])


def test_normalisation_per_time_step_uses_the_unbiased_std_over_acting_steps() -> None:
    x = jnp.array([[1.0, 3.0, 100.0], [2.0, 2.0, 5.0]])
    mask = jnp.array([[1.0, 1.0, 0.0], [1.0, 1.0, 1.0]])
    got = np.asarray(normalize_per_step(x, mask))
    # t=0: mean 2, std sqrt(2) over the two acting steps; t=1: mean 3, std sqrt(3)
    np.testing.assert_allclose(got[0, :2], [-1 / math.sqrt(2), 1 / math.sqrt(2)], rtol=1e-6)
    np.testing.assert_allclose(got[1], np.array([-1.0, -1.0, 2.0]) / math.sqrt(3), rtol=1e-6)


def test_the_loss_over_two_devices_equals_the_loss_over_one() -> None:
    """Every mean and per-step normalisation reduces over the mesh axis (the suite runs
    with two CPU devices)."""
    from functools import partial

    from jax.sharding import Mesh
    from jax.sharding import PartitionSpec as P

    from arenax.collectives import psum

    hp = A2CConfig(normalize_returns=True, normalize_advantages=True)
    keys = jax.random.split(jax.random.key(0), 5)
    logits = jax.random.normal(keys[0], (5, 8, 3))
    value, ret = jax.random.normal(keys[1], (5, 8)), jax.random.normal(keys[2], (5, 8))
    action = jax.random.randint(keys[3], (5, 8), 0, 3)
    mask = (jax.random.uniform(keys[4], (5, 8)) > 0.3).astype(jnp.float32)

    def stats(*args: jax.Array, axis: str | None) -> tuple[dict, jax.Array]:
        count = jnp.maximum(psum(jnp.sum(args[-1]), axis), 1.0)
        lo, va, ac, re, ma = args
        grad, st = jax.grad(
            lambda v: a2c_loss(lo, v, ac, re, ma, hp, count, axis_name=axis), has_aux=True
        )(va)
        return psum(st, axis), grad

    ref, ref_grad = jax.jit(partial(stats, axis=None))(logits, value, action, ret, mask)
    mesh = Mesh(np.array(jax.devices()[:2]), ("d",))
    sharded = jax.jit(jax.shard_map(
        partial(stats, axis="d"), mesh=mesh, in_specs=(P(None, "d"),) * 5,
        out_specs=(P(), P(None, "d")), check_vma=False,
    ))  # fmt: skip
    got, got_grad = sharded(logits, value, action, ret, mask)
    for k in ref:
        assert float(got[k]) == pytest.approx(float(ref[k]), rel=1e-5), k
    np.testing.assert_allclose(np.asarray(got_grad), np.asarray(ref_grad), atol=1e-6)


def test_normalised_returns_and_advantages_by_hand() -> None:
    hp = A2CConfig(vf_coef=1.0, ent_coef=0.0, normalize_returns=True, normalize_advantages=True)
    logits = jnp.zeros((1, 2, 2))
    value = jnp.array([[0.0, 2.0]])
    ret = jnp.array([[1.0, 3.0]])  # normalised: -1/√2, 1/√2
    _, stats = a2c_loss(logits, value, jnp.zeros((1, 2), int), ret, jnp.ones((1, 2)), hp,
                        jnp.float32(2.0))  # fmt: skip
    r = np.array([-1.0, 1.0]) / math.sqrt(2)
    assert float(stats["value_loss"]) == pytest.approx(np.mean((r - [0.0, 2.0]) ** 2), rel=1e-6)
    adv = r - [0.0, 2.0]
    adv = (adv - adv.mean()) / adv.std(ddof=1)
    assert float(stats["pg_loss"]) == pytest.approx(-np.mean(math.log(0.5) * adv), abs=1e-6)


def test_no_clipping_when_max_grad_norm_is_none() -> None:
    """Adam's first step is `-lr · g / (|g| + eps)` per coordinate; with eps = 1 it shows
    whether the gradient `(30, 40)` (norm 50) was clipped to norm 0.5 first."""
    params = {"w": jnp.zeros(2)}
    grads = {"w": jnp.array([30.0, 40.0])}
    for max_norm, g in ((0.5, np.array([0.3, 0.4])), (None, np.array([30.0, 40.0]))):
        tx, _ = make_optimizer(1.0, max_norm, adam_eps=1.0)
        step, _ = tx.update(grads, tx.init(params), params)
        np.testing.assert_allclose(np.asarray(step["w"]), -g / (g + 1.0), rtol=1e-5)
