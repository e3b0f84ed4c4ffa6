"""The layout of a parallel (PLR∥ / ACCEL∥ / MAESTRO∥) cycle's batch in named blocks of levels, and
two pytree helpers the replay curricula share."""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp

from arenax.collectives import all_gather


def take(tree: Any, idx: jax.Array) -> Any:
    """Entries `idx` of every leaf's leading axis."""
    return jax.tree.map(lambda a: jnp.take(a, idx, axis=0), tree)


def where(pred: jax.Array, on_true: Any, on_false: Any) -> Any:
    """`jnp.where(pred, ...)` leaf by leaf of two pytrees of one structure."""
    return jax.tree.map(lambda a, b: jnp.where(pred, a, b), on_true, on_false)


@dataclasses.dataclass(frozen=True)
class Blocks:
    """The layout of a parallel cycle's batch: named blocks of `n` levels side by side.

    Each device rolls out its `n_local` environments of every block: locally the batch is
    `[block 0 | block 1 | ...]`, `n_local` columns each. Environment `i` of block
    `b` has the global index `b * n + i` (its random stream).
    """

    names: tuple[str, ...]
    n: int
    n_local: int

    def local(self, blocks: dict[str, Any], ids: jax.Array) -> Any:
        """This device's levels of every block, concatenated: leaves `(B * n_local, ...)`."""
        return jax.tree.map(
            lambda *xs: jnp.concatenate(xs), *[take(blocks[b], ids) for b in self.names]
        )

    def env_ids(self, ids: jax.Array) -> jax.Array:
        """Global indices of this device's environments of every block `(B * n_local,)`."""
        return jnp.concatenate([ids + i * self.n for i in range(len(self.names))])

    def concat(self, per_block: dict[str, jax.Array]) -> jax.Array:
        """Per-block local arrays `(n_local, ...)` laid out like the batch."""
        return jnp.concatenate([per_block[b] for b in self.names])

    def part(self, tree: Any, name: str, axis: int = 0, per_env: int = 1) -> Any:
        """Block `name`'s columns of a local batch (environment axis `axis`; with
        `per_env` columns per environment, e.g. a team's agents, environment-major)."""
        i, w = self.names.index(name), self.n_local * per_env
        sl = slice(i * w, (i + 1) * w)
        return jax.tree.map(lambda a: a[(slice(None),) * axis + (sl,)], tree)

    def played(self, played: Any, name: str, agents: dict[str, int]) -> Any:
        """Block `name`'s part of a rollout (`arenax.curricula.players.Played`: per team
        trajectories `(T, n_local x agents)`, initial carries, advantages; episodes `(T,
        n_local)`); `agents`: each team's agents per environment."""
        return type(played)(
            {t: self.part(x, name, 1, agents[t]) for t, x in played.traj.items()},
            {t: self.part(x, name, 0, agents[t]) for t, x in played.carry0.items()},
            {t: self.part(x, name, 1, agents[t]) for t, x in played.advantages.items()},
            self.part(played.episodes, name, axis=1),
        )

    def gather(self, x: jax.Array, axis_name: str | None) -> dict[str, jax.Array]:
        """A local per-environment array `(B * n_local,)` -> each block's global `(n,)`."""
        return {b: all_gather(self.part(x, b), axis_name) for b in self.names}
