"""Hand-written categorical distributions against reference formulas."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from arenax import distributions as D


def np_logp(logits: np.ndarray) -> np.ndarray:
    z = logits - logits.max(-1, keepdims=True)
    return z - np.log(np.exp(z).sum(-1, keepdims=True))


@pytest.fixture
def logits() -> np.ndarray:
    return np.random.default_rng(0).normal(size=(6, 7)).astype(np.float32) * 3


def test_log_prob_and_entropy_match_formulas(logits: np.ndarray) -> None:
    a = np.arange(6) % 7
    lp = np_logp(logits.astype(np.float64))
    np.testing.assert_allclose(
        D.log_prob(jnp.asarray(logits), jnp.asarray(a)), lp[np.arange(6), a], rtol=1e-5
    )
    p = np.exp(lp)
    np.testing.assert_allclose(D.entropy(jnp.asarray(logits)), -(p * lp).sum(-1), rtol=1e-5)
    q = np_logp(logits[::-1].astype(np.float64))
    np.testing.assert_allclose(
        D.kl(jnp.asarray(logits), jnp.asarray(logits[::-1])),
        (p * (lp - q)).sum(-1),
        rtol=1e-4,
        atol=1e-6,
    )


def test_uniform_entropy_and_masked_actions() -> None:
    assert float(D.entropy(jnp.zeros(7))) == pytest.approx(np.log(7), rel=1e-6)
    masked = jnp.array([0.0, -jnp.inf, 0.0])
    assert float(D.entropy(masked)) == pytest.approx(np.log(2), rel=1e-6)
    assert np.isfinite(float(D.entropy(masked)))
    assert float(D.log_prob(masked, jnp.array(1))) == -np.inf
    samples = D.sample(jax.random.key(0), jnp.broadcast_to(masked, (1000, 3)))
    assert not np.any(np.asarray(samples) == 1)


def test_sampling_frequencies_follow_probabilities() -> None:
    logits = jnp.log(jnp.array([0.1, 0.2, 0.3, 0.4]))
    n = 40_000
    s = np.asarray(D.sample(jax.random.key(1), jnp.broadcast_to(logits, (n, 4))))
    freq = np.bincount(s, minlength=4) / n
    # 5 standard errors of a binomial proportion
    se = np.sqrt(np.array([0.1, 0.2, 0.3, 0.4]) * 0.9 / n)
    assert np.all(np.abs(freq - [0.1, 0.2, 0.3, 0.4]) < 5 * se + 1e-3)


def test_mode_is_argmax_lowest_index_on_ties() -> None:
    assert int(D.mode(jnp.array([1.0, 3.0, 3.0, 0.0]))) == 1


def test_multi_discrete_sums_heads(logits: np.ndarray) -> None:
    heads = [jnp.asarray(logits[:, :3]), jnp.asarray(logits[:, 3:])]
    a = jnp.stack([jnp.arange(6) % 3, jnp.arange(6) % 4], -1)
    want = D.log_prob(heads[0], a[:, 0]) + D.log_prob(heads[1], a[:, 1])
    np.testing.assert_allclose(D.multi_log_prob(heads, a), want, rtol=1e-6)
    np.testing.assert_allclose(
        D.multi_entropy(heads), D.entropy(heads[0]) + D.entropy(heads[1]), rtol=1e-6
    )
    s = D.multi_sample(jax.random.key(0), heads)
    assert s.shape == (6, 2) and int(s[:, 0].max()) < 3 and int(s[:, 1].max()) < 4
    np.testing.assert_array_equal(D.multi_mode(heads)[:, 1], np.argmax(logits[:, 3:], -1))


def test_log_prob_and_its_gradient_are_the_same_bits_in_both_forms(monkeypatch) -> None:
    """`log_prob` off the CPU (`ARENAX_GATHERS=dear`: compares and a sum, no gather and no
    scatter-add in its gradient) gives `take_along_axis`'s numbers bit for bit, forward and
    backward, masked (`-inf`) actions included; its program holds neither operation."""
    logits = jax.random.normal(jax.random.key(1), (6, 5, 7)).at[..., 3].set(-jnp.inf)
    action = jax.random.randint(jax.random.key(2), (6, 5), 0, 3)  # never the masked one
    weights = jax.random.normal(jax.random.key(3), (6, 5))
    loss = lambda lg, a: jnp.sum(weights * D.log_prob(lg, a))  # noqa: E731
    got = {}
    for form in ("cheap", "dear"):
        monkeypatch.setenv("ARENAX_GATHERS", form)
        jax.clear_caches()  # the form is chosen when traced
        got[form] = jax.jit(jax.value_and_grad(loss))(logits, action)
        text = jax.jit(jax.value_and_grad(loss)).lower(logits, action).compile().as_text()
        serial = " gather(" in text or " scatter(" in text
        assert serial == (form == "cheap")  # (the check sees them where they are)
    for a, b in zip(jax.tree.leaves(got["cheap"]), jax.tree.leaves(got["dear"]), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
