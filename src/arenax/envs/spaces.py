"""Observation and action spaces, per team (shapes exclude the leading agent axis)."""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np


@dataclasses.dataclass(frozen=True)
class Discrete:
    """One integer action in `[0, n)`."""

    n: int
    dtype: Any = jnp.int32

    @property
    def shape(self) -> tuple[int, ...]:
        return ()

    def sample(self, key: jax.Array, shape: tuple[int, ...] = ()) -> jax.Array:
        """Uniform samples of shape `shape`."""
        return jax.random.randint(key, shape, 0, self.n, dtype=self.dtype)

    def contains(self, x: Any) -> bool:
        x = np.asarray(x)
        return bool(np.issubdtype(x.dtype, np.integer) and np.all((x >= 0) & (x < self.n)))


@dataclasses.dataclass(frozen=True)
class MultiDiscrete:
    """Several independent discrete heads; head `i` takes values in `[0, nvec[i])`."""

    nvec: tuple[int, ...]
    dtype: Any = jnp.int32

    @property
    def shape(self) -> tuple[int, ...]:
        return (len(self.nvec),)

    def sample(self, key: jax.Array, shape: tuple[int, ...] = ()) -> jax.Array:
        u = jax.random.uniform(key, (*shape, len(self.nvec)))
        return jnp.floor(u * jnp.asarray(self.nvec)).astype(self.dtype)

    def contains(self, x: Any) -> bool:
        x = np.asarray(x)
        return bool(np.all((x >= 0) & (x < np.asarray(self.nvec))))


@dataclasses.dataclass(frozen=True)
class Box:
    """An array with element-wise bounds: `low`/`high` are one number for every
    element, or (observations of a 1-D `shape`) a tuple of one bound per element."""

    low: float | tuple[float, ...]
    high: float | tuple[float, ...]
    shape: tuple[int, ...]
    dtype: Any = jnp.float32

    def sample(self, key: jax.Array, shape: tuple[int, ...] = ()) -> jax.Array:
        if jnp.issubdtype(self.dtype, jnp.integer):
            return jax.random.randint(
                key, (*shape, *self.shape), int(self.low), int(self.high) + 1
            ).astype(self.dtype)
        low, high = np.asarray(self.low, np.float32), np.asarray(self.high, np.float32)
        return jax.random.uniform(key, (*shape, *self.shape), minval=low, maxval=high).astype(
            self.dtype
        )

    def contains(self, x: Any) -> bool:
        x = np.asarray(x)
        shape_ok = x.shape[x.ndim - len(self.shape) :] == self.shape
        # bounds in the space's dtype (float32(-1.2) is below the float -1.2)
        low, high = (np.asarray(b).astype(np.dtype(self.dtype)) for b in (self.low, self.high))
        return shape_ok and bool(np.all((x >= low) & (x <= high)))


@dataclasses.dataclass(frozen=True)
class Dict:
    """A named collection of spaces (for structured observations)."""

    spaces: tuple[tuple[str, Any], ...]

    def __getitem__(self, name: str) -> Any:
        return dict(self.spaces)[name]

    def sample(self, key: jax.Array, shape: tuple[int, ...] = ()) -> dict[str, jax.Array]:
        keys = jax.random.split(key, len(self.spaces))
        return {n: s.sample(k, shape) for (n, s), k in zip(self.spaces, keys, strict=False)}
