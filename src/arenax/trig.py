"""Sine and cosine without branches, for float32 physics.

XLA's CPU backend evaluates `sin` and `cos` with a routine that branches on the argument:
on random float32 arguments beyond ±π/4 it costs 3–4 ns an element on the 2-core
development machine, 0.6–0.8 ns within ±π/4. Here every element takes the same path, so
XLA vectorises it: 0.4 ns an element on any argument. A classic-control step is mostly
trigonometry (Acrobot: 22 sines and cosines per env step, from RK4's four stages, the
observation and the goal line): with this module Acrobot's auto-resetting step at 4,096
envs went from 160 to 34 ns an env step (`benchmarks/classic_throughput.py`).

The argument is reduced by `k` quarter turns, `k = round(x · 2/π)`, with π/2 split in
three parts (Cody and Waite's reduction), to `r` in `[-π/4, π/4]`; then the minimax
polynomials of Cephes' `sinf` and `cosf` on that interval, and a select
by quadrant (`k mod 4`). Measured against float64 NumPy on 2 M random arguments per range
up to `|x| ≤ 10^6` (`tests/unit/test_trig.py`): at most 2 ulp where `|result| ≥ 1/16`
(XLA's own: ≤ 0.56 ulp) and an absolute error below 1.1e-7 everywhere (XLA's: 3.3e-8).
Classic control's arguments stay far inside that range (angles wrapped to ±π, a
pendulum's angle after 200 steps at most ±83 rad). `nan` and `±inf` give `nan`, as
`jnp.sin` does.

Float32 only: other dtypes (float64 under `jax_enable_x64`, bfloat16) go to `jnp.sin`
and `jnp.cos`, whose precision those callers expect.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

_TWO_OVER_PI = np.float32(2.0 / np.pi)
# π/2 = P1 + P2 + P3, P1 and P2 with few significant bits (Cephes' DP1..DP3, doubled)
_P1 = np.float32(1.5703125)
_P2 = np.float32(4.837512969970703125e-4)
_P3 = np.float32(7.54978995489188216e-8)
# minimax polynomials on [-π/4, π/4] (Cephes' sinf.c and cosf.c)
_S1, _S2, _S3 = np.float32(-1.6666654611e-1), np.float32(8.3321608736e-3), np.float32(-1.9515295891e-4)  # fmt: skip
_C1, _C2, _C3 = np.float32(4.166664568298827e-2), np.float32(-1.388731625493765e-3), np.float32(2.443315711809948e-5)  # fmt: skip


def _reduced(x: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    """(sin r, cos r, k mod 4) for `x = k·π/2 + r`, `|r| ≤ π/4`; float32, shape of `x`."""
    k = jnp.round(x * _TWO_OVER_PI)
    r = ((x - k * _P1) - k * _P2) - k * _P3
    r2 = r * r
    sin_r = r + r * r2 * (_S1 + r2 * (_S2 + r2 * _S3))
    cos_r = 1.0 - 0.5 * r2 + r2 * r2 * (_C1 + r2 * (_C2 + r2 * _C3))
    quadrant = k.astype(jnp.int32) & 3
    return sin_r, cos_r, quadrant


def _float32(x: jax.Array) -> bool:
    return jnp.result_type(x) == jnp.float32


def sincos(x: jax.Array) -> tuple[jax.Array, jax.Array]:
    """`(sin x, cos x)` from one reduction; float32 `x` of any shape (other dtypes:
    `jnp.sin`, `jnp.cos`)."""
    x = jnp.asarray(x)
    if not _float32(x):
        return jnp.sin(x), jnp.cos(x)
    s, c, q = _reduced(x)
    odd = (q & 1) == 1  # a quarter turn swaps sine and cosine
    sin_x = jnp.where(odd, c, s)
    cos_x = jnp.where(odd, s, c)
    return jnp.where(q >= 2, -sin_x, sin_x), jnp.where((q == 1) | (q == 2), -cos_x, cos_x)


def sin(x: jax.Array) -> jax.Array:
    """`sin x`, float32 `x` of any shape (see the module's docstring for its accuracy)."""
    return sincos(x)[0]


def cos(x: jax.Array) -> jax.Array:
    """`cos x`, float32 `x` of any shape (see the module's docstring for its accuracy)."""
    return sincos(x)[1]
