"""Sharding: the environment batch over a 1-D device mesh, everything else replicated.

The same program runs on 1 or N devices (and N hosts under ``jax.distributed``): a chunk
of cycles runs inside ``jax.shard_map`` over the mesh axis ``"data"``; each device steps its
slice of the global environment batch (global indices ``device * n_local + i``) and
learners reduce sums with ``psum``, so parameters stay identical on every device.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from arenax.curricula.common import TrainState, cycle_key

AXIS = "data"


def make_mesh(n_devices: int) -> Mesh:
    """A 1-D mesh over the first ``n_devices`` devices."""
    devices = jax.devices()
    if n_devices > len(devices):
        raise ValueError(
            f"devices={n_devices}: only {len(devices)} available (on CPU set "
            f"XLA_FLAGS=--xla_force_host_platform_device_count={n_devices})"
        )
    return Mesh(np.asarray(devices[:n_devices]), (AXIS,))


def replicate(tree: Any, mesh: Mesh) -> Any:
    """Place a pytree fully replicated on the mesh."""
    return jax.device_put(tree, NamedSharding(mesh, PartitionSpec()))


def make_chunk(algorithm: Any, mesh: Mesh, n_envs: int, n_cycles: int) -> Callable:
    """``jit``-ed ``state -> (state, metrics)`` running ``n_cycles`` cycles.

    ``metrics`` leaves have a leading ``(n_cycles,)`` axis. The input state is donated.
    """
    n_dev = mesh.devices.size
    n_local = n_envs // n_dev

    def chunk(state: TrainState) -> tuple[TrainState, Any]:
        env_ids = jax.lax.axis_index(AXIS) * n_local + jnp.arange(n_local, dtype=jnp.int32)

        def body(s: TrainState, _: None) -> tuple[TrainState, Any]:
            return algorithm.cycle(s, cycle_key(s), env_ids, AXIS)

        return jax.lax.scan(body, state, None, length=n_cycles)

    sharded = jax.shard_map(
        chunk, mesh=mesh, in_specs=PartitionSpec(), out_specs=PartitionSpec(), check_vma=False
    )
    return jax.jit(sharded, donate_argnums=0)
