"""Layers written for speed on every backend.

`PatchConv` is a VALID convolution computed as patches (im2col) times the kernel:
one matmul forward and backward. XLA's CPU backend runs convolution *gradients* inside
`while` loops (our PPO epochs are a `lax.scan`) through a slow generic path — measured
20x slower than outside a loop for the PAIRED teacher's 128-filter conv — while matmuls
stay fast. Parameters have `nn.Conv`'s names and shapes (`kernel (kh, kw, C, F)`,
`bias (F,)`), and the output equals `nn.Conv(F, (kh, kw), padding="VALID")`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp

from arenax.selects import gather_rows
from arenax.utils import gathers_are_cheap


def orthogonal(scale: float = 1.0) -> Callable:
    """Orthogonal initialiser scaled by `scale` (the literature's actor-critic init)."""
    return nn.initializers.orthogonal(scale)


def per_block(init: Callable, blocks: int) -> Callable:
    """An initialiser of `(in, blocks * n)` kernels that draws each of the `blocks`
    column blocks `(in, n)` with `init` on its own (flax's LSTM and GRU cells, which hold
    one kernel per gate, initialise this way; one `(in, blocks * n)` orthogonal draw has
    entries `sqrt(blocks)` times smaller)."""

    def draw(key: jax.Array, shape: tuple[int, ...], dtype: Any = jnp.float32) -> jax.Array:
        n_in, n_out = shape
        if n_out % blocks:
            raise ValueError(f"{n_out} columns do not split into {blocks} blocks")
        keys = jax.random.split(key, blocks)
        return jnp.concatenate([init(k, (n_in, n_out // blocks), dtype) for k in keys], -1)

    return draw


class PatchConv(nn.Module):
    """VALID, stride-1 convolution over `(N, H, W, C)` -> `(N, H-kh+1, W-kw+1, F)`."""

    features: int
    kernel_size: tuple[int, int] = (3, 3)
    kernel_init: Callable = nn.initializers.lecun_normal()
    bias_init: Callable = nn.initializers.zeros

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        kh, kw = self.kernel_size
        c = x.shape[-1]
        kernel = self.param("kernel", self.kernel_init, (kh, kw, c, self.features), jnp.float32)
        bias = self.param("bias", self.bias_init, (self.features,), jnp.float32)
        h, w = x.shape[-3] - kh + 1, x.shape[-2] - kw + 1
        patches = jnp.concatenate(
            [x[..., i : i + h, j : j + w, :] for i in range(kh) for j in range(kw)], axis=-1
        )  # (N, h, w, kh*kw*C), feature order (i, j, c) = the kernel's
        return patches @ kernel.reshape(kh * kw * c, self.features) + bias


class Embed(nn.Embed):
    """`flax.linen.Embed` (the same parameter, `embedding (num_embeddings, features)`, and
    the same numbers forward) whose lookup off the CPU is a one-hot matrix times the table
    at the highest precision (`arenax.selects.gather_rows`: exact) instead of a gather: a
    batched gather, and the scatter-add its gradient is, run one element after another on
    a TPU (the maze student's direction embedding: 8,192 of each per PPO minibatch). The
    gradient's sums may then add in another order (last bits)."""

    def __call__(self, inputs: jax.Array) -> jax.Array:
        if gathers_are_cheap() or self.num_embeddings == 1:
            return super().__call__(inputs)
        (embedding,) = nn.dtypes.promote_dtype(self.embedding, dtype=self.dtype, inexact=False)
        return gather_rows(embedding, inputs.astype(jnp.int32))
