"""The diagonal Gaussian for continuous actions: log-densities against the normal density
(and, squashed, against the change of variables and numerical integration), entropies in
closed form and by Monte Carlo, KL, the MLP policy's parameterisations, and PPO moving the
mean of a one-step continuous task toward its optimum."""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.scipy.stats import norm

from arenax import distributions as D
from arenax.curricula import DomainRandomisation, DRConfig, Players
from arenax.envs import spaces
from arenax.nn.mlp import MLPPolicy
from arenax.rl.learner import Learner
from arenax.rl.ppo import PPOConfig
from arenax.training.parallel import jit_init
from helpers import Reach


def params(mean: list[float], log_std: list[float]) -> jax.Array:
    return jnp.asarray([*mean, *log_std], jnp.float32)


def test_log_prob_is_the_normal_density() -> None:
    g = D.DiagGaussian(2)
    p = params([0.3, -1.0], [0.0, math.log(0.5)])
    a = jnp.asarray([1.3, -0.2])
    expected = norm.logpdf(1.3, 0.3, 1.0) + norm.logpdf(-0.2, -1.0, 0.5)
    assert float(g.log_prob(p, a)) == pytest.approx(float(expected), rel=1e-6)
    # hand-computed: standard normal at 1 in one dimension
    g1 = D.DiagGaussian(1)
    assert float(g1.log_prob(params([0.0], [0.0]), jnp.ones(1))) == pytest.approx(
        -0.5 - 0.5 * math.log(2 * math.pi), rel=1e-6
    )


def test_entropy_closed_form_and_monte_carlo() -> None:
    g = D.DiagGaussian(3)
    p = params([0.0, 1.0, -2.0], [0.0, -1.0, 0.7])
    closed = sum(s + 0.5 * math.log(2 * math.pi * math.e) for s in (0.0, -1.0, 0.7))
    assert float(g.entropy(p)) == pytest.approx(closed, rel=1e-6)
    a = jax.vmap(g.sample, (0, None))(jax.random.split(jax.random.key(0), 200_000), p)
    mc = -float(jnp.mean(jax.vmap(g.log_prob, (None, 0))(p, a)))
    assert mc == pytest.approx(closed, abs=0.02)
    # samples have the parameterised mean and standard deviation
    np.testing.assert_allclose(a.mean(0), [0.0, 1.0, -2.0], atol=0.02)
    np.testing.assert_allclose(a.std(0), np.exp([0.0, -1.0, 0.7]), rtol=0.01)


@pytest.mark.parametrize("low, high", [(-1.0, 1.0), (-2.0, 2.0), (0.0, 3.0)])
def test_squashed_density_integrates_to_one_and_is_the_change_of_variables(
    low: float, high: float
) -> None:
    g = D.DiagGaussian(1, squash=True, low=low, high=high)
    p = params([0.4], [math.log(0.8)])
    # the density over the box integrates to 1 (midpoint rule, fine grid)
    n = 200_000
    # compiled: op by op, each distinct primitive compiles on its own
    log_prob = jax.jit(jax.vmap(g.log_prob, (None, 0)))
    a = low + (jnp.arange(n) + 0.5) * (high - low) / n
    dens = np.exp(np.asarray(log_prob(p, a[:, None]), np.float64))
    assert float(np.sum(dens) * (high - low) / n) == pytest.approx(1.0, abs=2e-3)
    # against the change of variables written directly: p(a) = N(u) / |da/du|
    u = np.asarray([-1.5, -0.2, 0.0, 0.9, 2.0], np.float32)
    act = low + (np.tanh(u) + 1) * (high - low) / 2
    direct = norm.logpdf(u, 0.4, 0.8) - jnp.log((high - low) / 2 * (1 - jnp.tanh(u) ** 2))
    ours = log_prob(p, act[:, None])
    np.testing.assert_allclose(ours, direct, rtol=1e-4, atol=1e-4)
    # samples lie in the box; the mode is the squashed mean
    s = jax.jit(jax.vmap(g.sample, (0, None)))(jax.random.split(jax.random.key(1), 1000), p)
    assert float(np.min(s)) >= low and float(np.max(s)) <= high
    assert float(g.mode(p)[0]) == pytest.approx(low + (math.tanh(0.4) + 1) * (high - low) / 2)


def test_kl() -> None:
    g = D.DiagGaussian(2)
    p, q = params([0.0, 1.0], [0.0, -0.5]), params([0.5, 0.0], [0.3, 0.1])
    assert float(g.kl(p, p)) == pytest.approx(0.0, abs=1e-7)
    a = jax.vmap(g.sample, (0, None))(jax.random.split(jax.random.key(2), 200_000), p)
    mc = jnp.mean(jax.vmap(g.log_prob, (None, 0))(p, a) - jax.vmap(g.log_prob, (None, 0))(q, a))
    assert float(g.kl(p, q)) == pytest.approx(float(mc), abs=0.01)


def test_for_space_and_the_mlp_parameterisations() -> None:
    box = spaces.Box(-2.0, 2.0, (3,), jnp.float32)
    assert D.for_space(box) == D.DiagGaussian(3, False, -2.0, 2.0)
    assert D.for_space(spaces.Discrete(4)) == D.CATEGORICAL
    obs = jnp.zeros((1, 5, 7))
    for log_std, n_out in (("parameter", 3), ("network", 6)):
        pol = MLPPolicy(hidden=(16,), dist=D.for_space(box), log_std=log_std)
        prm = pol.init(jax.random.key(0), obs)
        _, logits, value = pol.apply(prm, obs, jnp.zeros((1, 5), bool), ())
        assert logits.shape == (1, 5, 6) and value.shape == (1, 5)
        assert prm["params"]["Dense_0"]["kernel"].shape[-1] == n_out  # the actor head
        assert ("log_std" in prm["params"]) == (log_std == "parameter")


# ---------------------------------------------------------------- PPO with the Gaussian
@pytest.mark.parametrize("squash", [False, True])
def test_ppo_moves_the_gaussian_to_the_optimum(squash: bool) -> None:
    env = Reach()
    policy = MLPPolicy(hidden=(16,), dist=D.for_space(env.action_space(), squash))
    ppo = PPOConfig(lr=3e-2, gamma=0.0, gae_lambda=0.0, ent_coef=0.0, epochs=4, minibatches=1)
    players = Players(env, {"agent": Learner(policy, ppo)}, {"agent": "agent"},
                      bootstrap_truncation={"agent": False})  # fmt: skip
    algo = DomainRandomisation(players, 64, 4, env.generate, DRConfig("continue"))
    state = jit_init(algo)(jax.random.key(0))
    cycle = jax.jit(lambda s, k: algo.cycle(s, k, jnp.arange(64, dtype=jnp.int32), None))

    def mode(state: Any) -> float:
        _, logits, _ = policy.apply(state.learner["agent"].params, jnp.ones((1, 1, 2)),
                                    jnp.zeros((1, 1), bool), ())  # fmt: skip
        return float(policy.dist.mode(logits[0, 0])[0])

    assert abs(mode(state)) < 0.05  # starts near 0
    for i in range(60):
        state, metrics = cycle(state, jax.random.key(i))
    assert np.isfinite(float(metrics["loss"]))
    assert mode(state) == pytest.approx(0.7, abs=0.1), mode(state)
