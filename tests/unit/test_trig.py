"""`arenax.trig`: branch-free float32 sine and cosine, against float64 NumPy."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from arenax import trig

SINCOS = jax.jit(trig.sincos)


def _ulps(ours: np.ndarray, exact: np.ndarray) -> float:
    """Largest error in float32 ulps of the exact result, where `|exact| ≥ 1/16` (near a
    zero of the function, absolute error is the measure)."""
    big = np.abs(exact) >= 2**-4
    spacing = np.spacing(np.abs(exact[big]).astype(np.float32)).astype(np.float64)
    return float((np.abs(ours[big] - exact[big]) / spacing).max())


@pytest.mark.parametrize("bound", [np.pi / 4, 4.0, 100.0, 1e4, 1e6])
def test_sincos_within_two_ulps_of_float64(bound: float) -> None:
    x = np.random.default_rng(0).uniform(-bound, bound, 200_000).astype(np.float32)
    exact_sin, exact_cos = np.sin(x.astype(np.float64)), np.cos(x.astype(np.float64))
    s, c = (np.asarray(v, np.float64) for v in SINCOS(x))
    assert _ulps(s, exact_sin) <= 2.0
    assert _ulps(c, exact_cos) <= 2.0
    assert np.abs(s - exact_sin).max() < 1.1e-7
    assert np.abs(c - exact_cos).max() < 1.1e-7
    # sin and cos alone are sincos's halves
    np.testing.assert_array_equal(np.asarray(jax.jit(trig.sin)(x), np.float64), s)
    np.testing.assert_array_equal(np.asarray(jax.jit(trig.cos)(x), np.float64), c)


def test_quadrant_boundaries_and_special_values() -> None:
    k = np.arange(-8, 9)
    x = np.concatenate([k * np.pi / 2, k * np.pi / 2 + 1e-3, k * np.pi / 4]).astype(np.float32)
    s, c = (np.asarray(v, np.float64) for v in SINCOS(x))
    np.testing.assert_allclose(s, np.sin(x.astype(np.float64)), rtol=0, atol=1.1e-7)
    np.testing.assert_allclose(c, np.cos(x.astype(np.float64)), rtol=0, atol=1.1e-7)
    s, c = SINCOS(jnp.array([0.0, np.nan, np.inf, -np.inf, 1e-30], jnp.float32))
    np.testing.assert_array_equal(np.asarray(s), np.float32([0.0, np.nan, np.nan, np.nan, 1e-30]))
    np.testing.assert_array_equal(np.asarray(c), np.float32([1.0, np.nan, np.nan, np.nan, 1.0]))


def test_shapes_and_other_dtypes() -> None:
    x = jnp.linspace(-7.0, 7.0, 24, dtype=jnp.float32).reshape(2, 3, 4)
    s, c = trig.sincos(x)
    assert s.shape == c.shape == (2, 3, 4) and s.dtype == c.dtype == jnp.float32
    assert trig.sin(jnp.float32(0.5)).shape == ()
    # a Python float is a weakly typed float32 under JAX's defaults
    np.testing.assert_allclose(float(trig.cos(1.0)), np.cos(1.0), atol=1.1e-7)
    # other float types are XLA's own sin and cos, bit for bit
    h = x.astype(jnp.bfloat16)
    np.testing.assert_array_equal(np.asarray(trig.sin(h)), np.asarray(jnp.sin(h)))
    np.testing.assert_array_equal(np.asarray(trig.cos(h)), np.asarray(jnp.cos(h)))
