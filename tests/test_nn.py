"""Networks: the hoisted-projection recurrent cores against step-by-step references."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from arenax.envs.maze import MazeObs
from arenax.nn import Core, StudentPolicy


def sigmoid(x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-x))


def lstm_reference(p: dict, x: np.ndarray, first: np.ndarray, h0: np.ndarray, c0: np.ndarray):
    """Textbook LSTM, one step at a time: gates i, f, g, o from [x, h]."""
    wx, b, wh = (
        np.asarray(p["input"]["kernel"]),
        np.asarray(p["input"]["bias"]),
        np.asarray(p["recurrent"]),
    )
    h, c, outs = h0, c0, []
    for t in range(x.shape[0]):
        keep = (1 - first[t])[:, None]
        h, c = h * keep, c * keep
        g = x[t] @ wx + b + h @ wh
        i, f, u, o = np.split(g, 4, axis=-1)
        c = sigmoid(f) * c + sigmoid(i) * np.tanh(u)
        h = sigmoid(o) * np.tanh(c)
        outs.append(h)
    return np.stack(outs), h, c


def gru_reference(p: dict, x: np.ndarray, first: np.ndarray, h0: np.ndarray):
    """GRU (PyTorch/cuDNN form: the reset gate multiplies W_hn h + b_hn)."""
    wx, b, wh = (
        np.asarray(p["input"]["kernel"]),
        np.asarray(p["input"]["bias"]),
        np.asarray(p["recurrent"]),
    )
    bhn = np.asarray(p["recurrent_bias_n"])
    h, outs = h0, []
    for t in range(x.shape[0]):
        h = h * (1 - first[t])[:, None]
        xr, xz, xn = np.split(x[t] @ wx + b, 3, -1)
        hr, hz, hn = np.split(h @ wh, 3, -1)
        r, z = sigmoid(xr + hr), sigmoid(xz + hz)
        n = np.tanh(xn + r * (hn + bhn))
        h = (1 - z) * n + z * h
        outs.append(h)
    return np.stack(outs), h


@pytest.fixture
def seq() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(6, 3, 5)).astype(np.float32)
    first = np.zeros((6, 3), np.float32)
    first[0] = 1
    first[3, 1] = 1  # env 1 starts a new episode at t = 3
    return x, first


def test_lstm_matches_reference_and_resets(seq: tuple) -> None:
    x, first = seq
    core = Core("lstm", 8)
    rng = np.random.default_rng(1)
    h0 = rng.normal(size=(3, 8)).astype(np.float32)
    c0 = rng.normal(size=(3, 8)).astype(np.float32)
    params = core.init(jax.random.key(0), x, first, (h0, c0))
    (h, c), out = core.apply(params, x, first, (h0, c0))
    want, wh, wc = lstm_reference(params["params"], x, first, h0, c0)
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(h, wh, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(c, wc, rtol=1e-4, atol=1e-5)
    # the reset makes env 1's outputs from t = 3 independent of what came before
    x2 = x.copy()
    x2[:3, 1] += 5.0
    _, out2 = core.apply(params, x2, first, (h0, c0))
    np.testing.assert_allclose(out2[3:, 1], out[3:, 1], rtol=1e-5, atol=1e-6)
    assert not np.allclose(out2[:3, 1], out[:3, 1])


def test_gru_matches_reference(seq: tuple) -> None:
    x, first = seq
    core = Core("gru", 8)
    h0 = np.random.default_rng(2).normal(size=(3, 8)).astype(np.float32)
    params = core.init(jax.random.key(0), x, first, (h0, h0))
    (h, _), out = core.apply(params, x, first, (h0, h0))
    want, wh = gru_reference(params["params"], x, first, h0)
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(h, wh, rtol=1e-4, atol=1e-5)


def test_sequence_equals_step_by_step() -> None:
    """Running T steps at once equals T calls of one step (how the rollout uses it)."""
    pol = StudentPolicy(hidden=16)
    rng = np.random.default_rng(3)
    obs = MazeObs(
        image=jnp.asarray(rng.integers(0, 9, (5, 2, 5, 5, 3)), jnp.float32) / 10,
        direction=jnp.asarray(rng.integers(0, 4, (5, 2)), jnp.int32),
    )
    first = jnp.asarray([[1, 1], [0, 0], [0, 1], [0, 0], [1, 0]], jnp.bool_)
    params = pol.init(jax.random.key(0), obs)
    _, logits, value = pol.apply(params, obs, first, pol.initial_carry(2))
    carry = pol.initial_carry(2)
    for t in range(5):
        o = jax.tree.map(lambda a, t=t: a[t : t + 1], obs)
        carry, lg, v = pol.apply(params, o, first[t : t + 1], carry)
        np.testing.assert_allclose(lg[0], logits[t], rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(v[0], value[t], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("cell", ["lstm", "gru", "ff"])
def test_student_shapes_and_near_uniform_initial_policy(cell: str) -> None:
    pol = StudentPolicy(cell=cell)
    obs = MazeObs(image=jnp.ones((4, 3, 5, 5, 3)), direction=jnp.zeros((4, 3), jnp.int32))
    params = pol.init(jax.random.key(0), obs)
    carry, logits, value = pol.apply(params, obs, jnp.ones((4, 3), bool), pol.initial_carry(3))
    assert logits.shape == (4, 3, 7) and value.shape == (4, 3)
    assert carry[0].shape == (3, 256)
    assert float(jnp.abs(logits).max()) < 0.1  # last policy layer scaled by 0.01
    p = params["params"]
    assert p["Conv_0"]["kernel"].shape == (3, 3, 3, 16)
    assert p["Embed_0"]["embedding"].shape == (4, 5)
    assert p["Dense_0"]["kernel"].shape == (256, 32)
    if cell == "lstm":
        assert p["core"]["recurrent"].shape == (256, 1024)
        assert p["core"]["input"]["kernel"].shape == (3 * 3 * 16 + 5, 1024)
