"""Recurrent cores with the input projection hoisted out of the time loop.

A cell's gates are `x_t @ W_x + h_{t-1} @ W_h + b`. The `x_t @ W_x + b` part does not
depend on the recurrence, so it is computed for all time steps in one large matmul
(`(T*B, in) @ (in, G)`) and only `h @ W_h` stays inside `lax.scan`. The carry is reset
to zeros at the first step of every episode (`first[t]`).

`"s5"` is a diagonal state-space layer (S5: Smith, Warrington & Linderman, "Simplified
State Space Layers for Sequence Modeling", ICLR 2023) in a pre-norm residual block:

    u_t = x_t W_in + b                       (hoisted, (T*B, in) @ (in, H))
    s_t = Λ̄ ⊙ s_{t-1} · (1 − first_t) + B̄ LayerNorm(u_t)      (complex, P = H states)
    y_t = Re(C s_t) + D ⊙ LayerNorm(u_t);    out_t = u_t + GELU(y_t)

Λ is initialised from the eigenvalues of the normal part of the HiPPO-LegS matrix
(−1/2 + iω), kept stable by storing `log(−Re Λ)`; the step Δ = exp(log Δ) per state with
log Δ ~ U[log 0.001, log 0.1]; zero-order hold: Λ̄ = exp(ΛΔ), B̄ = (Λ̄ − 1)/Λ · B; B and C
complex normal with variance 1/H and 1/P, D ~ N(0, 1). The recurrence is linear, so all T
steps are computed by one parallel associative scan (`jax.lax.associative_scan`,
O(log T) depth) over pairs `(a_t, b_t) = (Λ̄ (1 − first_t), B̄ u_t)` with
`(a, b) ∘ (a', b') = (a a', a' b + b')`: an episode start multiplies the state by zero
inside the scan, so the reset is exact. The carry is the state's real and imaginary parts,
each `(B, H)` float32 — the same shapes as the LSTM's `(h, c)`.
"""

from __future__ import annotations

import functools
from typing import Literal

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from arenax.nn.layers import orthogonal, per_block
from arenax.utils import scan_unroll

CellKind = Literal["lstm", "gru", "ff", "s5"]
GateInit = Literal["joint", "per_gate"]

S5_DT_MIN, S5_DT_MAX = 0.001, 0.1
"""Range of the S5 step sizes Δ at initialisation (log-uniform)."""


@functools.lru_cache(maxsize=8)
def hippo_legs_normal_eigs(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Eigenvalues `(re (n,), im (n,))` of the normal part of the `n × n` HiPPO-LegS
    matrix: `A + p pᵀ` with `A[i, k] = −√(2i+1)√(2k+1)` (i > k), `−(i+1)` (i = k), 0
    (i < k) and `p_i = √(i + 1/2)`, which is `−I/2` plus a skew-symmetric matrix; so the
    real parts are all −1/2 and the imaginary parts are the eigenvalues of that skew part."""
    q = np.sqrt(2.0 * np.arange(n) + 1.0)
    skew = 0.5 * np.outer(q, q)
    skew = np.tril(skew, -1)
    skew = skew.T - skew  # S[i, k] = -q_i q_k / 2 below the diagonal, +q_i q_k / 2 above
    im = np.linalg.eigvalsh(-1j * skew)  # S is skew-symmetric: -iS is Hermitian
    return np.full(n, -0.5), np.sort(im)


def s5_discretise(
    log_neg_lambda_re: jax.Array,
    lambda_im: jax.Array,
    log_step: jax.Array,
    b_re: jax.Array,
    b_im: jax.Array,
) -> tuple[jax.Array, jax.Array]:
    """Zero-order-hold discretisation of an S5 core's parameters (`(P,)` for the first
    three, `(P, H)` for B): `(Λ̄ (P,) complex64, B̄ (P, H) complex64)`."""
    lam = -jnp.exp(log_neg_lambda_re) + 1j * lambda_im
    lam_bar = jnp.exp(lam * jnp.exp(log_step))
    b = b_re + 1j * b_im
    b_bar = ((lam_bar - 1.0) / lam)[:, None] * b
    return lam_bar.astype(jnp.complex64), b_bar.astype(jnp.complex64)


def _lstm_step(w_h: jax.Array, c: tuple, inp: tuple) -> tuple[tuple, tuple]:
    """One LSTM step: carry `(h, cell)` each `(B, H)`, `(xw_t (B, 4H), keep_t (B, 1))`
    -> (new carry, (h_t, what its gradient needs)); `keep_t` zeroes the carry at an
    episode start."""
    h, cell = c
    xw_t, k = inp
    h, cell = h * k, cell * k
    g = xw_t + h @ w_h
    i, f, u, o = jnp.split(g, 4, axis=-1)
    si, sf, tu, so = jax.nn.sigmoid(i), jax.nn.sigmoid(f), jnp.tanh(u), jax.nn.sigmoid(o)
    new_cell = sf * cell + si * tu
    tc = jnp.tanh(new_cell)
    new_h = so * tc
    return (new_h, new_cell), (new_h, (h, cell, si, sf, tu, so, tc))


@jax.custom_vjp
def lstm_scan(
    w_h: jax.Array, xw: jax.Array, keep: jax.Array, carry: tuple[jax.Array, jax.Array]
) -> tuple[tuple[jax.Array, jax.Array], jax.Array]:
    """The LSTM's time loop: `w_h (H, 4H)`, the hoisted input projections
    `xw (T, B, 4H)`, `keep (T, B, 1) float32` (0 at an episode start), carry `(h, c)`
    each `(B, H)` -> (final carry, outputs `h_t (T, B, H)`).

    Its gradient is written out (`jax.custom_vjp`) rather than left to autodiff of
    `lax.scan`, which adds each step's `h_{t-1}ᵀ dg_t` into `dW_h` inside the reverse
    loop: a `(B, H)ᵀ @ (B, 4H)` matmul and a read-modify-write of the whole `(H, 4H)`
    accumulator every step (at B = 32, H = 256: 1 MB a step, 256 steps, 5 epochs). Here
    the reverse loop carries only `(dh, dc)` and records `dg_t`; `dW_h` is one
    `(T·B, H)ᵀ @ (T·B, 4H)` matmul after it. The values are autodiff's up to the order of
    float sums (`tests/unit/test_nn.py` compares them). `keep` is a constant mask (it
    comes from the episode starts): its cotangent is zero.
    """
    final, (outs, _) = jax.lax.scan(
        functools.partial(_lstm_step, w_h), carry, (xw, keep), unroll=scan_unroll()
    )
    return final, outs


def _lstm_scan_fwd(w_h, xw, keep, carry):
    final, (outs, saved) = jax.lax.scan(
        functools.partial(_lstm_step, w_h), carry, (xw, keep), unroll=scan_unroll()
    )
    return (final, outs), (w_h, keep, saved)


def _lstm_scan_bwd(res, cts):
    w_h, keep, (h_in, c_in, si, sf, tu, so, tc) = res
    (dh_last, dc_last), douts = cts
    w_t = w_h.T

    def step(dcarry: tuple, inp: tuple) -> tuple[tuple, jax.Array]:
        dh, dc = dcarry
        dout, k, c_prev, si, sf, tu, so, tc = inp
        dh = dh + dout
        dc = dc + dh * so * (1.0 - tc * tc)
        dg = jnp.concatenate(
            [
                dc * tu * si * (1.0 - si),  # input gate
                dc * c_prev * sf * (1.0 - sf),  # forget gate
                dc * si * (1.0 - tu * tu),  # candidate
                dh * tc * so * (1.0 - so),  # output gate
            ],
            axis=-1,
        )
        return ((dg @ w_t) * k, (dc * sf) * k), dg

    (dh0, dc0), dg = jax.lax.scan(
        step,
        (dh_last, dc_last),
        (douts, keep, c_in, si, sf, tu, so, tc),
        reverse=True,
        unroll=scan_unroll(),
    )
    t, b, h = h_in.shape
    dw_h = h_in.reshape(t * b, h).T @ dg.reshape(t * b, -1)
    return dw_h, dg, jnp.zeros_like(keep), (dh0, dc0)


lstm_scan.defvjp(_lstm_scan_fwd, _lstm_scan_bwd)


def _linear_recurrence(a, b):
    """Associative operator of `s_t = a_t s_{t-1} + b_t`: compose two segments."""
    a1, b1 = a
    a2, b2 = b
    return a2 * a1, a2 * b1 + b2


class Core(nn.Module):
    """Sequence core over `(T, B, in)` inputs.

    Attributes:
        kind: `"lstm"`, `"gru"`, `"s5"` (see the module docstring) or `"ff"` (a ReLU
            layer, no memory; the carry is a dummy).
        hidden: units (S5: the width H and the number of complex states P).
        gate_init: LSTM / GRU kernels `(in, G * hidden)` drawn orthogonal as one matrix
            (`"joint"`, as PyTorch's `orthogonal_` on its stacked gate weights) or one
            orthogonal block per gate (`"per_gate"`, flax's cells: entries `sqrt(G)`
            times larger).
    """

    kind: CellKind = "lstm"
    hidden: int = 256
    gate_init: GateInit = "joint"

    def initial_carry(self, batch: int) -> tuple[jax.Array, jax.Array]:
        """Zero carry `(h, c)`, each `(B, hidden) float32` (`c` unused by GRU/FF)."""
        z = jnp.zeros((batch, self.hidden), jnp.float32)
        return z, z

    @nn.compact
    def __call__(
        self, x: jax.Array, first: jax.Array, carry: tuple[jax.Array, jax.Array]
    ) -> tuple[tuple[jax.Array, jax.Array], jax.Array]:
        """`x (T, B, in)`, `first (T, B) bool`, carry -> (carry, outputs `(T, B, hidden)`)."""
        h_dim = self.hidden
        if self.kind == "ff":
            out = nn.relu(nn.Dense(h_dim, kernel_init=orthogonal(2**0.5), name="dense")(x))
            return carry, out
        if self.kind == "s5":
            return self._s5(x, first, carry)
        n_gates = {"lstm": 4, "gru": 3}[self.kind]
        init = orthogonal() if self.gate_init == "joint" else per_block(orthogonal(), n_gates)
        xw = nn.Dense(n_gates * h_dim, kernel_init=init, name="input")(x)  # one matmul
        w_h = self.param("recurrent", init, (h_dim, n_gates * h_dim), jnp.float32)
        keep = 1.0 - first.astype(jnp.float32)[..., None]

        if self.kind == "lstm":
            return lstm_scan(w_h, xw, keep, carry)
        b_hn = self.param("recurrent_bias_n", nn.initializers.zeros, (h_dim,), jnp.float32)

        def step(c, inp):
            h, cell = c
            xw_t, k = inp
            h = h * k
            hw = h @ w_h
            xr, xz, xn = jnp.split(xw_t, 3, axis=-1)
            hr, hz, hn = jnp.split(hw, 3, axis=-1)
            r = jax.nn.sigmoid(xr + hr)
            z = jax.nn.sigmoid(xz + hz)
            n = jnp.tanh(xn + r * (hn + b_hn))
            h = (1.0 - z) * n + z * h
            return (h, cell), h

        carry, out = jax.lax.scan(step, carry, (xw, keep), unroll=scan_unroll())
        return carry, out

    def _s5(
        self, x: jax.Array, first: jax.Array, carry: tuple[jax.Array, jax.Array]
    ) -> tuple[tuple[jax.Array, jax.Array], jax.Array]:
        h = self.hidden
        re0, im0 = hippo_legs_normal_eigs(h)
        log_neg_re = self.param(
            "log_neg_lambda_re", lambda k, s: jnp.log(-jnp.asarray(re0, jnp.float32)), (h,)
        )
        lam_im = self.param("lambda_im", lambda k, s: jnp.asarray(im0, jnp.float32), (h,))
        log_step = self.param(
            "log_step",
            lambda k, s: jax.random.uniform(
                k, s, jnp.float32, np.log(S5_DT_MIN), np.log(S5_DT_MAX)
            ),
            (h,),
        )
        normal = nn.initializers.normal
        b_re = self.param("B_re", normal((0.5 / h) ** 0.5), (h, h), jnp.float32)
        b_im = self.param("B_im", normal((0.5 / h) ** 0.5), (h, h), jnp.float32)
        c_re = self.param("C_re", normal((0.5 / h) ** 0.5), (h, h), jnp.float32)
        c_im = self.param("C_im", normal((0.5 / h) ** 0.5), (h, h), jnp.float32)
        d = self.param("D", normal(1.0), (h,), jnp.float32)
        lam_bar, b_bar = s5_discretise(log_neg_re, lam_im, log_step, b_re, b_im)
        u = nn.Dense(h, kernel_init=orthogonal(), name="input")(x)  # (T, B, H), one matmul
        z = nn.LayerNorm(name="norm")(u)
        # B̄ z_t for every step at once: two real matmuls, (T*B, H) @ (H, P)
        bu = (z @ b_bar.real.T) + 1j * (z @ b_bar.imag.T)
        keep = 1.0 - first.astype(jnp.float32)[..., None]  # (T, B, 1)
        a = lam_bar * keep  # (T, B, P): zero at an episode start
        s0 = carry[0] + 1j * carry[1]
        bu = bu.at[0].add(a[0] * s0)  # fold the incoming state into the first element
        _, s = jax.lax.associative_scan(_linear_recurrence, (a, bu), axis=0)
        y = s.real @ c_re.T - s.imag @ c_im.T + d * z  # Re(C s_t) + D z_t
        out = u + nn.gelu(y)
        return (s[-1].real, s[-1].imag), out
