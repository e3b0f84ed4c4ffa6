"""Array lookups in the two forms the platforms want: indexing where gathers are cheap (the
CPU), compares and selects (or a one-hot matmul) where a batched gather runs one example
after another (a TPU). `arenax.utils.gathers_are_cheap` chooses when a program is traced;
both forms give the same numbers bit for bit (exactly one term is nonzero in every sum).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from arenax.utils import gathers_are_cheap


def lookup(table: jax.Array, index: jax.Array) -> jax.Array:
    """`table[index]` of a small constant table `(N,)`: the shape and dtype of `index`'s
    entries looked up, `index.shape` (a compare with each of the `N` entries off the CPU)."""
    table = jnp.asarray(table)
    if gathers_are_cheap():
        return table[index]
    hit = index[..., None] == jnp.arange(table.shape[0], dtype=index.dtype)
    return jnp.sum(jnp.where(hit, table, jnp.zeros((), table.dtype)), axis=-1, dtype=table.dtype)


def pick(x: jax.Array, index: jax.Array) -> jax.Array:
    """`x[..., index]` element by element: `x (..., N)`, `index (...)` int -> `(...)` (a
    categorical's log-probability of its action). On the CPU `take_along_axis`; off it a
    compare with each of the `N` entries and a sum: the batched gather, and the scatter-add
    its gradient is, run one element after another on a TPU (a `tag-continuous` training
    program held 210 gathers and 100 scatters, `benchmarks/hlo_sources.py`)."""
    index = index[..., None].astype(jnp.int32)
    if gathers_are_cheap():
        return jnp.take_along_axis(x, index, axis=-1)[..., 0]
    hit = index == jnp.arange(x.shape[-1], dtype=jnp.int32)
    return jnp.sum(jnp.where(hit, x, jnp.zeros((), x.dtype)), axis=-1, dtype=x.dtype)


def select_row(x: jax.Array, i: jax.Array) -> jax.Array:
    """`x[i]` of `x (N, ...)` for a traced scalar `i`: `(...)` (a one-hot sum off the CPU)."""
    if gathers_are_cheap():
        return x[i]
    hit = (jnp.arange(x.shape[0]) == i).reshape((-1,) + (1,) * (x.ndim - 1))
    if x.dtype == jnp.bool_:
        return jnp.any(hit & x, axis=0)
    return jnp.sum(jnp.where(hit, x, jnp.zeros((), x.dtype)), axis=0, dtype=x.dtype)


def gather_rows(x: jax.Array, index: jax.Array) -> jax.Array:
    """`x[index]` of `x (A, F)` float32 for `index (..., K)` int32: `(..., K, F)`. Off the
    CPU a one-hot matrix times `x` at the highest precision (exact: each output is one
    entry times 1 plus zeros), which a TPU's matrix unit does at once."""
    if gathers_are_cheap():
        return x[index]
    one_hot = (index[..., None] == jnp.arange(x.shape[0], dtype=index.dtype)).astype(x.dtype)
    return jnp.matmul(one_hot, x, precision=jax.lax.Precision.HIGHEST)


def take_rows(x: jax.Array, index: jax.Array) -> jax.Array:
    """`x[n, index[n]]` for every `n`: `x (N, K, ...)`, `index (N,) int32` -> `(N, ...)`.

    One gather of whole rows of `x` seen as `(N * K, ...)`, on every platform: a one-hot
    compare and sum over `K` reads all `K` rows (12% of a `maze-dr` cycle on a TPU at
    `K = 257`), and a plain gather of whole rows costs a fraction of a microsecond there."""
    n, k = x.shape[:2]
    rows = jnp.arange(n, dtype=index.dtype) * k + index
    return jnp.take(x.reshape((n * k, *x.shape[2:])), rows, axis=0)
