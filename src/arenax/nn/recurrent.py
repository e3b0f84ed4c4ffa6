"""Recurrent cores with the input projection hoisted out of the time loop.

A cell's gates are ``x_t @ W_x + h_{t-1} @ W_h + b``. The ``x_t @ W_x + b`` part does not
depend on the recurrence, so it is computed for all time steps in one large matmul
(``(T*B, in) @ (in, G)``) and only ``h @ W_h`` stays inside ``lax.scan``. The carry is reset
to zeros at the first step of every episode (``first[t]``).
"""

from __future__ import annotations

from typing import Literal

import flax.linen as nn
import jax
import jax.numpy as jnp

from arenax.nn.layers import orthogonal

CellKind = Literal["lstm", "gru", "ff"]


class Core(nn.Module):
    """Sequence core over ``(T, B, in)`` inputs.

    Attributes:
        kind: ``"lstm"``, ``"gru"`` or ``"ff"`` (a ReLU layer, no memory; the carry is a dummy).
        hidden: units.
    """

    kind: CellKind = "lstm"
    hidden: int = 256

    def initial_carry(self, batch: int) -> tuple[jax.Array, jax.Array]:
        """Zero carry ``(h, c)``, each ``(B, hidden) float32`` (``c`` unused by GRU/FF)."""
        z = jnp.zeros((batch, self.hidden), jnp.float32)
        return z, z

    @nn.compact
    def __call__(
        self, x: jax.Array, first: jax.Array, carry: tuple[jax.Array, jax.Array]
    ) -> tuple[tuple[jax.Array, jax.Array], jax.Array]:
        """``x (T, B, in)``, ``first (T, B) bool``, carry -> (carry, outputs ``(T, B, hidden)``)."""
        h_dim = self.hidden
        if self.kind == "ff":
            out = nn.relu(nn.Dense(h_dim, kernel_init=orthogonal(2**0.5), name="dense")(x))
            return carry, out
        n_gates = {"lstm": 4, "gru": 3}[self.kind]
        xw = nn.Dense(n_gates * h_dim, kernel_init=orthogonal(), name="input")(x)  # one matmul
        w_h = self.param("recurrent", orthogonal(), (h_dim, n_gates * h_dim), jnp.float32)
        keep = 1.0 - first.astype(jnp.float32)[..., None]

        if self.kind == "lstm":

            def step(c, inp):
                h, cell = c
                xw_t, k = inp
                h, cell = h * k, cell * k
                g = xw_t + h @ w_h
                i, f, u, o = jnp.split(g, 4, axis=-1)
                cell = jax.nn.sigmoid(f) * cell + jax.nn.sigmoid(i) * jnp.tanh(u)
                h = jax.nn.sigmoid(o) * jnp.tanh(cell)
                return (h, cell), h

        else:
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

        carry, out = jax.lax.scan(step, carry, (xw, keep))
        return carry, out
