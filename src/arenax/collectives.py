"""Collectives over the device mesh, in one place.

Inside `jax.shard_map` each device holds a slice of the environment batch; these helpers
reduce or gather over the mesh axis `axis_name`. With `axis_name=None` (one device, no
`shard_map`) they are the identity, so the same code runs on 1 or N devices.
"""

from __future__ import annotations

from typing import Any

import jax


def psum(x: Any, axis_name: str | None) -> Any:
    """Sum of a pytree over devices (identity without a mesh axis)."""
    return x if axis_name is None else jax.lax.psum(x, axis_name)


def all_gather(x: Any, axis_name: str | None) -> Any:
    """Local slices `(n_local, ...)` -> the global batch `(n, ...)` on every device,
    in device order (identity without a mesh axis)."""
    if axis_name is None:
        return x
    return jax.tree.map(lambda a: jax.lax.all_gather(a, axis_name, tiled=True), x)
