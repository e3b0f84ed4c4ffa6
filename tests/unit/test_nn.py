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


def s5_reference(p: dict, x: np.ndarray, first: np.ndarray, s0: np.ndarray):
    """S5 block one step at a time in complex128: ZOH discretisation from the stored
    parameters, ``s_t = Λ̄ s_{t-1} (1 - first_t) + B̄ z_t``, ``y_t = Re(C s_t) + D z_t``."""
    lam = -np.exp(np.float64(p["log_neg_lambda_re"])) + 1j * np.float64(p["lambda_im"])
    dt = np.exp(np.float64(p["log_step"]))
    lam_bar = np.exp(lam * dt)
    b_bar = ((lam_bar - 1) / lam)[:, None] * (np.float64(p["B_re"]) + 1j * np.float64(p["B_im"]))
    c = np.float64(p["C_re"]) + 1j * np.float64(p["C_im"])
    d = np.float64(p["D"])
    w, bias = np.float64(p["input"]["kernel"]), np.float64(p["input"]["bias"])
    scale, shift = np.float64(p["norm"]["scale"]), np.float64(p["norm"]["bias"])
    s, outs = s0.astype(np.complex128), []
    for t in range(x.shape[0]):
        u = x[t] @ w + bias
        mu, var = u.mean(-1, keepdims=True), u.var(-1, keepdims=True)
        z = (u - mu) / np.sqrt(var + 1e-6) * scale + shift
        s = lam_bar * s * (1 - first[t])[:, None] + z @ b_bar.T
        y = (s @ c.T).real + d * z
        gelu = 0.5 * y * (1 + np.tanh(np.sqrt(2 / np.pi) * (y + 0.044715 * y**3)))
        outs.append(u + gelu)
    return np.stack(outs), s


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


def test_lstm_gradient_matches_autodiff_of_the_plain_scan(seq: tuple) -> None:
    """`lstm_scan`'s written-out gradient (dW_h as one matmul after the reverse loop)
    against JAX's autodiff of the textbook step in a plain `lax.scan`: the forward bit for
    bit, every gradient (weights, inputs, initial carry; through the outputs and the final
    carry, across an episode start) to float32 precision."""
    x, first = seq
    first = first.copy()
    first[0, :2] = 0  # envs 0 and 1 continue from the initial carry (env 1 restarts at t = 3)
    core = Core("lstm", 8)
    rng = np.random.default_rng(3)
    h0 = rng.normal(size=(3, 8)).astype(np.float32)
    c0 = rng.normal(size=(3, 8)).astype(np.float32)
    params = core.init(jax.random.key(0), x, first, (h0, c0))
    weights = rng.normal(size=(6, 3, 8)).astype(np.float32)  # a loss that weighs every output

    def plain(p: dict, x: jax.Array, carry: tuple) -> tuple:
        p = p["params"]
        xw = x @ p["input"]["kernel"] + p["input"]["bias"]
        keep = 1.0 - jnp.asarray(first)[..., None]

        def step(c: tuple, inp: tuple) -> tuple:
            h, cell = c
            xw_t, k = inp
            h, cell = h * k, cell * k
            i, f, u, o = jnp.split(xw_t + h @ p["recurrent"], 4, axis=-1)
            cell = jax.nn.sigmoid(f) * cell + jax.nn.sigmoid(i) * jnp.tanh(u)
            h = jax.nn.sigmoid(o) * jnp.tanh(cell)
            return (h, cell), h

        return jax.lax.scan(step, carry, (xw, keep))

    def loss(fn):
        def value(p, x, carry):
            (h, c), out = fn(p, x, carry)
            return (out * weights).sum() + (h * h).sum() + 0.5 * c.sum()

        return jax.jit(jax.value_and_grad(value, argnums=(0, 1, 2)))

    (v_ours, g_ours) = loss(lambda p, x, c: core.apply(p, x, first, c))(params, x, (h0, c0))
    (v_ref, g_ref) = loss(plain)(params, x, (h0, c0))
    assert v_ours == v_ref  # the same forward, bit for bit
    for name, a, b in zip(("params", "x", "carry"), g_ours, g_ref, strict=True):
        for leaf_a, leaf_b in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
            scale = float(np.abs(leaf_b).max())
            assert scale > 0, name
            np.testing.assert_allclose(leaf_a, leaf_b, rtol=2e-5, atol=2e-6 * scale, err_msg=name)


def test_gru_matches_reference(seq: tuple) -> None:
    x, first = seq
    core = Core("gru", 8)
    h0 = np.random.default_rng(2).normal(size=(3, 8)).astype(np.float32)
    params = core.init(jax.random.key(0), x, first, (h0, h0))
    (h, _), out = core.apply(params, x, first, (h0, h0))
    want, wh = gru_reference(params["params"], x, first, h0)
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(h, wh, rtol=1e-4, atol=1e-5)


def test_s5_parallel_scan_matches_step_by_step_recurrence_with_resets(seq: tuple) -> None:
    """The associative scan (resets inside it) equals the recurrence run one step at a time
    from a non-zero carry; a reset cuts the dependence on everything before it."""
    x, first = seq
    first = first.copy()
    first[0, 1:] = 0  # envs 1 and 2 continue from the carry (env 1 resets at t = 3)
    core = Core("s5", 8)
    rng = np.random.default_rng(4)
    s0 = rng.normal(size=(3, 8)) + 1j * rng.normal(size=(3, 8))
    carry0 = (jnp.asarray(s0.real, jnp.float32), jnp.asarray(s0.imag, jnp.float32))
    params = jax.jit(core.init)(jax.random.key(0), x, first, carry0)
    apply = jax.jit(core.apply)  # one program for the three calls below
    (re, im), out = apply(params, x, first, carry0)
    want, ws = s5_reference(params["params"], x, first, s0)
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(re + 1j * im, ws, rtol=1e-4, atol=1e-5)
    other = (carry0[0] + 1.0, carry0[1])
    _, out_other = apply(params, x, first, other)
    np.testing.assert_array_equal(out_other[:, 0], out[:, 0])  # env 0 starts at t = 0
    assert not np.allclose(out_other[:, 2], out[:, 2])  # env 2 carries its state on
    np.testing.assert_allclose(out_other[3:, 1], out[3:, 1], rtol=1e-5, atol=1e-6)
    x2 = x.copy()
    x2[:3, 1] += 5.0
    _, out2 = apply(params, x2, first, carry0)
    np.testing.assert_allclose(out2[3:, 1], out[3:, 1], rtol=1e-5, atol=1e-6)
    assert not np.allclose(out2[:3, 1], out[:3, 1])


def test_s5_initial_eigenvalues_are_hippo_legs_normal_part() -> None:
    """Λ's initial values equal the eigenvalues of the full HiPPO-LegS normal matrix
    A + p pᵀ built entry by entry (real parts −1/2)."""
    n = 6
    a = np.zeros((n, n))
    for i in range(n):
        for k in range(n):
            if i > k:
                a[i, k] = -np.sqrt(2 * i + 1) * np.sqrt(2 * k + 1)
            elif i == k:
                a[i, k] = -(i + 1)
    p = np.sqrt(np.arange(n) + 0.5)
    eig = np.linalg.eigvals(a + np.outer(p, p))
    core = Core("s5", n)
    x, first = np.zeros((2, 1, 3), np.float32), np.ones((2, 1), bool)
    params = jax.jit(core.init)(jax.random.key(0), x, first, core.initial_carry(1))["params"]
    np.testing.assert_allclose(-np.exp(params["log_neg_lambda_re"]), eig.real, atol=1e-6)
    np.testing.assert_allclose(params["lambda_im"], np.sort(eig.imag), atol=1e-4)
    step = np.exp(params["log_step"])
    assert np.all((step >= 0.001) & (step <= 0.1))


@pytest.mark.parametrize("cell", ["lstm", "s5"])
def test_sequence_equals_step_by_step(cell: str) -> None:
    """Running T steps at once equals T calls of one step (how the rollout uses it)."""
    pol = StudentPolicy(hidden=16, cell=cell)
    rng = np.random.default_rng(3)
    obs = MazeObs(
        image=jnp.asarray(rng.integers(0, 9, (5, 2, 5, 5, 3)), jnp.float32) / 10,
        direction=jnp.asarray(rng.integers(0, 4, (5, 2)), jnp.int32),
    )
    first = jnp.asarray([[1, 1], [0, 0], [0, 1], [0, 0], [1, 0]], jnp.bool_)
    params = jax.jit(pol.init)(jax.random.key(0), obs)
    apply = jax.jit(pol.apply)  # one program for the sequence, one for a step
    _, logits, value = apply(params, obs, first, pol.initial_carry(2))
    carry = pol.initial_carry(2)
    for t in range(5):
        o = jax.tree.map(lambda a, t=t: a[t : t + 1], obs)
        carry, lg, v = apply(params, o, first[t : t + 1], carry)
        np.testing.assert_allclose(lg[0], logits[t], rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(v[0], value[t], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("cell", ["lstm", "gru", "ff", "s5"])
def test_student_shapes_and_near_uniform_initial_policy(cell: str) -> None:
    pol = StudentPolicy(cell=cell)
    obs = MazeObs(image=jnp.ones((4, 3, 5, 5, 3)), direction=jnp.zeros((4, 3), jnp.int32))
    params = jax.jit(pol.init)(jax.random.key(0), obs)
    apply = jax.jit(pol.apply)  # op by op, every distinct primitive compiles on its own
    carry, logits, value = apply(params, obs, jnp.ones((4, 3), bool), pol.initial_carry(3))
    assert logits.shape == (4, 3, 7) and value.shape == (4, 3)
    assert carry[0].shape == (3, 256)
    assert float(np.abs(np.asarray(logits)).max()) < 0.1  # last policy layer scaled by 0.01
    p = params["params"]
    assert p["Conv_0"]["kernel"].shape == (3, 3, 3, 16)
    assert p["Embed_0"]["embedding"].shape == (4, 5)
    assert p["Dense_0"]["kernel"].shape == (256, 32)
    if cell == "lstm":
        assert p["core"]["recurrent"].shape == (256, 1024)
        assert p["core"]["input"]["kernel"].shape == (3 * 3 * 16 + 5, 1024)


def _orthonormal(w: np.ndarray) -> bool:
    """Orthonormal rows (a wide matrix) or columns (a tall one): orthogonal init's result."""
    g = w @ w.T if w.shape[0] <= w.shape[1] else w.T @ w
    return bool(np.allclose(g, np.eye(len(g)), atol=1e-4))


@pytest.mark.parametrize("cell,gates", [("lstm", 4), ("gru", 3)])
def test_gate_init_one_orthogonal_matrix_or_one_block_per_gate(cell: str, gates: int) -> None:
    """`joint`: the `(in, G*H)` kernels are orthonormal as one matrix (entries of size
    1/sqrt(G*H)); `per_gate`: each `(in, H)` gate block is on its own and the whole is not
    (flax's cells, minimax's: entries sqrt(G) times larger)."""
    obs = MazeObs(image=jnp.ones((2, 3, 5, 5, 3)), direction=jnp.zeros((2, 3), jnp.int32))
    for gate_init in ("joint", "per_gate"):
        pol = StudentPolicy(cell=cell, hidden=64, gate_init=gate_init)
        core = jax.jit(pol.init)(jax.random.key(0), obs)["params"]["core"]
        for w in (core["input"]["kernel"], core["recurrent"]):
            w = np.asarray(w, np.float64)
            blocks = np.split(w, gates, axis=1)
            assert _orthonormal(w) == (gate_init == "joint")
            assert all(_orthonormal(b) for b in blocks) == (gate_init == "per_gate")
            rms = float(np.sqrt(np.mean(w**2)))
            wide = 1 / np.sqrt(w.shape[1] / (gates if gate_init == "per_gate" else 1))
            tall = 1 / np.sqrt(w.shape[0])
            assert rms == pytest.approx(min(wide, tall), rel=1e-3)


def test_policy_init_constant_gives_an_exactly_uniform_initial_policy() -> None:
    obs = MazeObs(
        image=jax.random.uniform(jax.random.key(1), (2, 3, 5, 5, 3)),
        direction=jnp.arange(6, dtype=jnp.int32).reshape(2, 3) % 4,
    )
    for policy_init, uniform in (("orthogonal", False), ("constant", True)):
        pol = StudentPolicy(policy_init=policy_init)
        params = jax.jit(pol.init)(jax.random.key(0), obs)
        _, logits, _ = jax.jit(pol.apply)(params, obs, jnp.ones((2, 3), bool), pol.initial_carry(3))
        spread = float(np.ptp(np.asarray(logits), axis=-1).max())
        assert (spread == 0.0) == uniform, (policy_init, spread)
        if uniform:
            np.testing.assert_array_equal(params["params"]["Dense_1"]["kernel"], np.float32(0.01))


def test_embed_is_flaxs_embed_with_a_one_hot_lookup_off_the_cpu(monkeypatch) -> None:
    """`arenax.nn.layers.Embed`: flax's parameter tree and initial values, and its numbers
    forward bit for bit in both forms (`ARENAX_GATHERS=dear`: a one-hot matmul at the
    highest precision, no gather); the table's gradient agrees to rounding (its sums may
    add in another order)."""
    import flax.linen as fnn

    from arenax.nn.layers import Embed, orthogonal

    idx = jax.random.randint(jax.random.key(0), (5, 3), 0, 4)
    ours, flax_embed = (
        Embed(4, 8, embedding_init=orthogonal()),
        fnn.Embed(4, 8, embedding_init=orthogonal()),
    )
    params = ours.init(jax.random.key(1), idx)
    reference = flax_embed.init(jax.random.key(1), idx)
    assert jax.tree.structure(params) == jax.tree.structure(reference)
    np.testing.assert_array_equal(params["params"]["embedding"], reference["params"]["embedding"])
    up = jax.random.normal(jax.random.key(2), (5, 3, 8))
    loss = lambda p, m: jnp.sum(up * m.apply(p, idx))  # noqa: E731
    out, grads = {}, {}
    for form in ("cheap", "dear"):
        monkeypatch.setenv("ARENAX_GATHERS", form)
        jax.clear_caches()
        out[form] = jax.jit(lambda p: ours.apply(p, idx))(params)
        grads[form] = jax.jit(jax.grad(lambda p: loss(p, ours)))(params)
        text = jax.jit(lambda p: ours.apply(p, idx)).lower(params).compile().as_text()
        assert (" gather(" in text) == (form == "cheap")
    np.testing.assert_array_equal(out["cheap"], out["dear"])
    np.testing.assert_array_equal(out["cheap"], flax_embed.apply(reference, idx))
    np.testing.assert_allclose(grads["dear"]["params"]["embedding"],
                               grads["cheap"]["params"]["embedding"], rtol=1e-6, atol=1e-6)  # fmt: skip
