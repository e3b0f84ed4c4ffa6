"""Checkpoints with Orbax: the latest one plus periodic archives, written atomically.

A checkpoint holds the whole :class:`~arenax.curricula.common.TrainState` (parameters,
optimiser state, curriculum state, RNG, cycle counter) and a JSON record (step counters,
the resolved config). Orbax writes into a temporary folder and renames it when complete,
so a run killed while saving keeps its previous checkpoint; leftovers are cleaned up.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jax
import orbax.checkpoint as ocp
from jax.sharding import Mesh, PartitionSpec

from arenax.train.parallel import shardings


class Checkpointer:
    """Save/restore train states under ``run_dir / "checkpoints"``.

    Args:
        run_dir: the run directory.
        archive_every: also keep every checkpoint whose cycle is a multiple of this
            (0: keep only the latest).
    """

    def __init__(self, run_dir: Path, archive_every: int = 0) -> None:
        self.directory = (Path(run_dir) / "checkpoints").absolute()
        options = ocp.CheckpointManagerOptions(
            max_to_keep=1,
            keep_period=archive_every or None,
            cleanup_tmp_directories=True,
            enable_async_checkpointing=True,
        )
        self.manager = ocp.CheckpointManager(self.directory, options=options)

    def save(self, cycle: int, state: Any, record: dict[str, Any]) -> None:
        """Start writing the checkpoint of ``cycle`` (asynchronously; see :meth:`wait`)."""
        self.manager.save(
            cycle,
            args=ocp.args.Composite(
                state=ocp.args.StandardSave(state), record=ocp.args.JsonSave(record)
            ),
            force=True,
        )

    def wait(self) -> None:
        """Block until pending writes are complete."""
        self.manager.wait_until_finished()

    def latest(self) -> int | None:
        """Cycle of the latest complete checkpoint."""
        return self.manager.latest_step()

    def all_steps(self) -> list[int]:
        return list(self.manager.all_steps())

    def restore(
        self,
        abstract_state: Any,
        mesh: Mesh | None = None,
        cycle: int | None = None,
        specs: Any = None,
    ) -> tuple[Any, dict[str, Any]]:
        """``(state, record)`` of checkpoint ``cycle`` (default: the latest), placed on
        ``mesh`` as the ``PartitionSpec`` prefix ``specs`` says (default: replicated), or
        on the first device without a mesh."""
        step = self.latest() if cycle is None else cycle
        if step is None:
            raise FileNotFoundError(f"no checkpoint in {self.directory}")
        if mesh is not None:
            per_leaf = shardings(mesh, PartitionSpec() if specs is None else specs, abstract_state)
        else:
            one = jax.sharding.SingleDeviceSharding(jax.devices()[0])
            per_leaf = jax.tree.map(lambda _: one, abstract_state)
        target = jax.tree.map(
            lambda x, s: jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=s),
            abstract_state, per_leaf,
        )  # fmt: skip
        out = self.manager.restore(
            step,
            args=ocp.args.Composite(
                state=ocp.args.StandardRestore(target), record=ocp.args.JsonRestore()
            ),
        )
        return out["state"], out["record"]

    def close(self) -> None:
        self.manager.wait_until_finished()
        self.manager.close()
