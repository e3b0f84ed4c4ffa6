"""Many processes on JAX's multi-controller runtime (`jax.distributed`).

One program, many processes (one per host, or one per GPU of a node): every process runs
the same training loop over its own devices; the mesh spans the devices of all of them
(`arenax.training.parallel.make_mesh`), each process steps only its shard of the
environment batch, and everything else (parameters, the level buffer, the teacher) stays
replicated and identical on every process. The host loop differs only where it touches the
outside world:

- process 0 alone creates, locks and writes the run directory (config, logs, evaluations,
  plots); the others write nothing but their share of each checkpoint;
- checkpoints are Orbax's multi-process saves: every process takes part, so the run
  directory must be on storage every process sees (a shared file system);
- a stop request (SIGINT / SIGTERM) on any process stops them all after the same chunk.

`initialize` starts the runtime: explicit `coordinator` / `num_processes` /
`process_id`, or detected by JAX from SLURM, Open MPI or a Cloud TPU's environment.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import re
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Annotated, Any, ClassVar, TypeVar

import jax
import numpy as np

from arenax.options import AtLeast, ConfigError, IntIn, OrNone, Problem

T = TypeVar("T")

POSITIVE_OR_NONE = OrNone(AtLeast(1))
NON_NEGATIVE_OR_NONE = OrNone(AtLeast(0))


@dataclasses.dataclass(frozen=True)
class DistributedOptions:
    """How this process joins a multi-process run (`arenax train` and `arenax resume`
    share these options; they are the launch's, not the run's, so a run may resume under
    another launch)."""

    #: its options are top-level on the command line (`--coordinator`), and so are the
    #: names its problems report
    FLAT: ClassVar[bool] = True

    distributed: bool = False
    """Join a multi-process run on JAX's distributed runtime (one process per host or per
    GPU; start the same command in every process). Without --coordinator, JAX detects the
    cluster (SLURM, Open MPI, Cloud TPU)."""
    coordinator: str | None = None
    """HOST:PORT of the coordinator service, which process 0 starts (with --distributed)."""
    num_processes: Annotated[int | None, POSITIVE_OR_NONE] = None
    """Processes in the run (with --coordinator)."""
    process_id: Annotated[int | None, NON_NEGATIVE_OR_NONE] = None
    """This process's index, 0 … num_processes − 1 (with --coordinator)."""
    join_timeout: Annotated[int, IntIn(1, 86_400)] = 300
    """Seconds a process waits for every process of the run to join before it stops with
    an error (with --distributed)."""

    def problems(self) -> Iterator[Problem]:
        """The rules of the launch options (their ranges are checked with the fields)."""
        explicit = {
            "coordinator": self.coordinator,
            "num_processes": self.num_processes,
            "process_id": self.process_id,
        }
        given = [k for k, v in explicit.items() if v is not None]
        if given and not self.distributed:
            yield Problem(given[0], explicit[given[0]], "needs --distributed")
            return
        if given and len(given) < 3:
            missing = next(k for k in explicit if explicit[k] is None)
            yield Problem(
                missing,
                None,
                f"set it too (with --{given[0].replace('_', '-')}; "
                "or none of the three, to let JAX detect the cluster)",
            )
            return
        if self.coordinator is not None:
            m = re.fullmatch(r"[^\s:]+:(\d{1,5})", self.coordinator)
            if m is None:
                yield Problem(
                    "coordinator", self.coordinator, "must be HOST:PORT (e.g. node0:1234)"
                )
            elif not 1 <= int(m.group(1)) <= 65535:
                yield Problem("coordinator", self.coordinator, "the port must be in [1, 65535]")
        n, i = self.num_processes, self.process_id
        if n is not None and i is not None and i >= n:
            yield Problem("process_id", i, f"must be below num_processes={n}")


def initialize(options: DistributedOptions) -> None:
    """Start JAX's distributed runtime if `options.distributed` (once per process; before
    anything else touches a device). On CPU, collectives between processes use Gloo.

    While it waits for the other processes it says so (every 30 s); if they have not all
    joined after `options.join_timeout` seconds it stops the process with a one-line
    error and exit status 2 (JAX's own deadline, a little later, would abort with a C++
    stack trace)."""
    if not options.distributed or jax.distributed.is_initialized():
        return
    # CPU devices of different processes talk through Gloo (ignored by GPU / TPU clients)
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    where = options.coordinator or "the detected cluster's coordinator"
    who = (
        f"process {options.process_id} of {options.num_processes}"
        if options.num_processes is not None
        else "this process"
    )
    say = functools.partial(print, file=sys.stderr, flush=True)
    say(f"{who}: joining the run at {where} (waiting up to {options.join_timeout} s) ...")
    joined = threading.Event()

    def watchdog() -> None:
        start = time.monotonic()
        while not joined.wait(30.0 if options.join_timeout > 30 else options.join_timeout):
            waited = time.monotonic() - start
            if waited >= options.join_timeout:
                say(
                    f"error: distributed: not every process joined within "
                    f"{options.join_timeout} s at {where} ({who}): start the same command in "
                    "every process (each with its --process-id), or raise --join-timeout"
                )
                os._exit(2)
            say(f"{who}: still waiting for the other processes at {where} ({waited:.0f} s)")

    threading.Thread(target=watchdog, name="arenax-join-watchdog", daemon=True).start()
    try:
        jax.distributed.initialize(
            coordinator_address=options.coordinator,
            num_processes=options.num_processes,
            process_id=options.process_id,
            initialization_timeout=options.join_timeout + 60,  # ours fires first
        )
    except (RuntimeError, ValueError) as exc:
        why = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
        hint = (
            ""
            if options.coordinator
            else " (no cluster detected: pass --coordinator HOST:PORT --num-processes N --process-id I)"
        )
        raise ConfigError(f"distributed: the runtime did not start: {why}{hint}") from None
    finally:
        joined.set()


def is_main() -> bool:
    """Whether this is process 0, the one that writes the run directory."""
    return jax.process_index() == 0


def multi_process() -> bool:
    return jax.process_count() > 1


def barrier(name: str) -> None:
    """Wait until every process gets here (nothing to wait for in a one-process run)."""
    if multi_process():
        from jax.experimental import multihost_utils

        multihost_utils.sync_global_devices(f"arenax:{name}")


def on_main(fn: Callable[[], T], what: str) -> T | None:
    """Run `fn` on process 0 only and tell the others whether it worked: its result on
    process 0, `None` elsewhere. Its error is raised on process 0; the others raise a
    `ConfigError` that points at process 0's output."""
    if not multi_process():
        return fn()
    from jax.experimental import multihost_utils

    result, error = None, None
    if is_main():
        try:
            result = fn()
        except BaseException as exc:  # tell the others before raising
            error = exc
    ok = int(multihost_utils.broadcast_one_to_all(np.int32(error is None)))
    if error is not None:
        raise error
    if not ok:
        raise ConfigError(f"process 0 could not {what} (its output says why)")
    return result


def any_process(flag: int) -> int:
    """The largest of every process's `flag` (e.g. a stop request seen by any of them)."""
    if not multi_process():
        return flag
    from jax.experimental import multihost_utils

    return int(np.max(multihost_utils.process_allgather(np.int32(flag))))


def host_copy(tree: Any) -> Any:
    """NumPy copies of a pytree's global arrays on every process (arrays split over
    processes are gathered first)."""

    def one(x: Any) -> np.ndarray:
        if isinstance(x, jax.Array) and not x.is_fully_addressable and not x.is_fully_replicated:
            from jax.experimental import multihost_utils

            return np.asarray(multihost_utils.process_allgather(x, tiled=True))
        return np.asarray(jax.device_get(x))

    return jax.tree.map(one, tree)


def announce() -> None:
    """One line from every process but 0 (which reports the run), on stderr."""
    if multi_process() and not is_main():
        local = ", ".join(str(d.id) for d in jax.local_devices())
        print(
            f"arenax: process {jax.process_index()} of {jax.process_count()} (devices {local}) "
            "joined; process 0 reports the run",
            file=sys.stderr,
            flush=True,
        )
