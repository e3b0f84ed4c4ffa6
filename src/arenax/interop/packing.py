"""One flat buffer for a pytree of arrays, so that a compiled call of an export takes and
returns a couple of arrays instead of dozens.

On a CPU every array a compiled call returns costs about as much as a small step (a buffer
and its ready-event each); the exports return an env batch's state, observations,
rewards, flags and episode totals every step. :class:`Packing` lays out the leaves of
one pytree (fixed shapes and dtypes) as 32-bit words of one `uint32` array: packed and
unpacked inside the compiled step, unpacked on the host as NumPy views after one
transfer. Exact for every dtype it takes (bit patterns are kept).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np


@dataclasses.dataclass(frozen=True)
class _Leaf:
    shape: tuple[int, ...]
    dtype: Any  # the leaf's dtype, or "key" for a typed PRNG key array
    start: int  # offset in words
    words: int


@dataclasses.dataclass(frozen=True)
class Packing:
    """The layout of one pytree of arrays in a `uint32` buffer of `size` words.

    Leaves of 4-byte dtypes are stored bit for bit, narrower ones (bool, uint8, int8,
    16-bit) one per word, typed PRNG keys as their key data. 8-byte dtypes are refused.
    """

    treedef: Any
    leaves: tuple[_Leaf, ...]
    size: int

    @classmethod
    def of(cls, tree: Any) -> Packing:
        """The layout of `tree`'s structure, shapes and dtypes (arrays or
        `jax.ShapeDtypeStruct` s)."""
        flat, treedef = jax.tree.flatten(tree)
        leaves, start = [], 0
        for x in flat:
            shape = tuple(x.shape)
            if jnp.issubdtype(x.dtype, jax.dtypes.prng_key):
                data = jax.eval_shape(jax.random.key_data, x)  # (*shape, words per key)
                leaves.append(_Leaf(shape, "key", start, math.prod(data.shape)))
            else:
                dtype = np.dtype(x.dtype)
                if dtype.itemsize > 4:
                    raise TypeError(f"Packing: {dtype} leaves are not supported (32-bit at most)")
                leaves.append(_Leaf(shape, dtype, start, math.prod(shape)))
            start += leaves[-1].words
        return cls(treedef, tuple(leaves), start)

    # ------------------------------------------------------------- inside jit
    def pack(self, tree: Any) -> jax.Array:
        """`(size,) uint32` holding `tree` (traceable)."""
        parts = []
        for leaf, x in zip(self.leaves, jax.tree.leaves(tree), strict=True):
            if leaf.dtype == "key":
                parts.append(jax.random.key_data(x).reshape(-1))
            elif leaf.dtype.itemsize == 4:
                parts.append(jax.lax.bitcast_convert_type(x, jnp.uint32).reshape(-1))
            else:
                parts.append(x.astype(jnp.uint32).reshape(-1))
        return jnp.concatenate(parts) if parts else jnp.zeros((0,), jnp.uint32)

    def unpack(self, buf: jax.Array) -> Any:
        """The pytree held by `buf` (traceable)."""
        out = []
        for leaf in self.leaves:
            w = buf[leaf.start : leaf.start + leaf.words]
            if leaf.dtype == "key":
                out.append(jax.random.wrap_key_data(w.reshape(*leaf.shape, -1)))
            elif leaf.dtype.itemsize == 4:
                out.append(jax.lax.bitcast_convert_type(w, leaf.dtype).reshape(leaf.shape))
            else:
                out.append(w.astype(leaf.dtype).reshape(leaf.shape))
        return jax.tree.unflatten(self.treedef, out)

    # ---------------------------------------------------------------- on host
    @functools.cached_property
    def _host_plan(self) -> tuple[tuple[tuple[int, ...], Any, int, bool], ...]:
        """Per leaf `(shape, dtype, byte offset, is_view)`, worked out once: the host
        unpacks every step of an export, where a microsecond per leaf counts."""
        return tuple(
            (
                leaf.shape,
                leaf.dtype,
                4 * leaf.start,
                leaf.dtype != "key" and leaf.dtype.itemsize == 4,
            )
            for leaf in self.leaves
        )

    def unpack_numpy(self, buf: np.ndarray) -> Any:
        """The pytree held by a host copy of the buffer, as NumPy arrays (views of `buf`
        for 4-byte dtypes)."""
        if buf.shape != (self.size,):
            raise ValueError(
                f"Packing.unpack_numpy: expected ({self.size},) words, got {buf.shape}"
            )
        if buf.dtype != np.uint32 or not buf.flags.c_contiguous:
            buf = np.ascontiguousarray(buf, np.uint32)
        out = []
        for shape, dtype, offset, view in self._host_plan:
            if view:
                out.append(np.ndarray(shape, dtype, buf, offset))
            elif dtype == "key":
                raise TypeError("Packing.unpack_numpy: PRNG keys stay on the device")
            else:
                out.append(np.ndarray(shape, np.uint32, buf, offset).astype(dtype))
        return jax.tree.unflatten(self.treedef, out)
