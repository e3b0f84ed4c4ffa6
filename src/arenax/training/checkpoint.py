"""Checkpoints with Orbax: the latest one plus periodic archives, written atomically and
verified when read.

A checkpoint holds the whole `TrainState` (parameters,
optimiser state, curriculum state, RNG, cycle counter) and a JSON record (step counters, the
resolved config, and a SHA-256 digest of the state's arrays). Orbax writes into a temporary
folder and renames it when complete, so a run killed while saving keeps its previous
checkpoint; leftovers are cleaned up. On restore the digest is checked; a checkpoint that
cannot be read or does not match is reported in one line and the next older one is tried
(`Checkpointer.restore_good`).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import logging
import os
import shutil
import sys
import tempfile
import threading
import time
import traceback
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import jax
import numpy as np
import orbax.checkpoint as ocp
from jax.sharding import Mesh, PartitionSpec

from arenax.options import ConfigError
from arenax.training import distributed
from arenax.training.parallel import shardings


class CheckpointError(ConfigError):
    """No checkpoint of a run could be restored."""


class CheckpointWriteError(ConfigError):
    """A checkpoint could not be written (a full disk...): the run stops, the checkpoints
    written before are intact."""


class _SaveNoise(logging.Filter):
    """Keeps the tracebacks Orbax's background save threads log when a write fails (a full
    disk: four tracebacks, hundreds of lines) off the terminal: they go to `log` (the
    run's `checkpoint_errors.log`); the failure itself reaches the run as one line."""

    MARKS = ("_SignalingThread.run() raised", "background save thread", "Save Finalize thread")

    def __init__(self, log: Path) -> None:
        super().__init__()
        self.log = log

    def filter(self, record: logging.LogRecord) -> bool:
        if not any(m in record.getMessage() for m in self.MARKS):
            return True
        with contextlib.suppress(OSError), self.log.open("a") as f:
            f.write(logging.Formatter().format(record) + "\n")
        return False


def _quiet_failed_saves(log: Path) -> None:
    """Route the background save threads' error records to `log` (once per process; a
    later run of the process moves them to its own log)."""
    logger = logging.getLogger("absl")
    for f in logger.filters:
        if isinstance(f, _SaveNoise):
            f.log = log
            return
    logger.addFilter(_SaveNoise(log))


class _AsyncNoise(logging.Filter):
    """Keeps the reads Orbax abandons on a damaged checkpoint off the terminal: asyncio
    reports each as "Task exception was never retrieved" with a long traceback when the task
    is collected (hundreds of lines, long after the one-line warning). Those records go to
    `log` (the run's `checkpoint_errors.log`) instead."""

    def __init__(self, log: Path) -> None:
        super().__init__()
        self.log = log

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()
        if "exception was never retrieved" not in text and "Event loop is closed" not in text:
            return True
        try:
            with self.log.open("a") as f:
                f.write(logging.Formatter().format(record) + "\n")
        except OSError:
            pass
        return False


def _abandoned(exc: BaseException | None, where: Any = None) -> bool:
    """An error of a read Orbax abandoned: its event loop closed under it, or a coroutine
    of its deserialisation collected unfinished."""
    if isinstance(exc, RuntimeError) and "Event loop is closed" in str(exc):
        return True
    return "orbax" in repr(where) or "_read_array_index" in repr(where)


def _quiet_abandoned_reads(log: Path) -> Path | None:
    """Send the noise of reads and writes Orbax abandoned (a damaged checkpoint, a full
    disk) to `log` (the latest run's `checkpoint_errors.log`) instead of the terminal:
    asyncio's "never retrieved" records (`_AsyncNoise`), errors TensorStore's callback
    threads print through `sys.excepthook` ("Event loop is closed") and unfinished
    coroutines reported through `sys.unraisablehook` or `threading.excepthook`. Other
    errors pass through untouched. Installed before the first read or write (TensorStore's
    threads report a failure at once, before Orbax has raised), once per process; a later
    call only moves the log. Returns the log used before (None: the first call)."""
    logger = logging.getLogger("asyncio")
    for f in logger.filters:
        if isinstance(f, _AsyncNoise):
            previous, f.log = f.log, log
            return previous
    noise = _AsyncNoise(log)
    logger.addFilter(noise)
    warnings.filterwarnings("ignore", message="coroutine '_read_array_index.*' was never awaited")

    def write(text: str) -> None:
        with contextlib.suppress(OSError), noise.log.open("a") as f:
            f.write(text + "\n")

    previous_hook, previous_unraisable = sys.excepthook, sys.unraisablehook

    def excepthook(kind: type, exc: BaseException, tb: Any) -> None:
        if _abandoned(exc):
            write("".join(traceback.format_exception(kind, exc, tb)))
            return
        previous_hook(kind, exc, tb)

    def unraisablehook(u: Any) -> None:
        if _abandoned(u.exc_value, u.object):
            write(f"{u.err_msg or 'Exception ignored in'}: {u.object!r}: {u.exc_value!r}")
            return
        previous_unraisable(u)

    previous_thread_hook = threading.excepthook

    def thread_hook(args: Any) -> None:  # a callback thread's read of a closed loop
        if _abandoned(args.exc_value):
            write(
                "".join(
                    traceback.format_exception(args.exc_type, args.exc_value, args.exc_traceback)
                )
            )
            return
        previous_thread_hook(args)

    sys.excepthook, sys.unraisablehook = excepthook, unraisablehook
    threading.excepthook = thread_hook
    return None


def state_digest(state: Any) -> str:
    """SHA-256 over the dtype, shape and bytes of every leaf of `state` (host copies of
    the global arrays: the same on every process of a multi-process run)."""
    h = hashlib.sha256()
    for leaf in jax.tree.leaves(distributed.host_copy(state)):
        a = np.ascontiguousarray(np.asarray(leaf))
        h.update(f"{a.dtype}{a.shape}".encode())
        h.update(a.tobytes())
    return h.hexdigest()


class Checkpointer:
    """Save/restore train states under `run_dir / "checkpoints"`.

    Args:
        run_dir: the run directory.
        archive_every: also keep every checkpoint whose cycle is a multiple of this
            (0: keep only the latest).
        keep: how many of the latest checkpoints to keep.
        writer: this process is the run's one writer (it holds the run's lock): the
            unfinished checkpoints a killed writer left behind are deleted now, before any
            save. (Left to Orbax, which deletes them at the first save, the nested temporary
            directories of one unfinished checkpoint are removed concurrently and can fail
            with FileNotFoundError.) Readers never delete anything.
    """

    def __init__(
        self, run_dir: Path, archive_every: int = 0, writer: bool = False, keep: int = 1
    ) -> None:
        self.run_dir = Path(run_dir).absolute()
        self.directory = self.run_dir / "checkpoints"
        self.archive_every = archive_every
        self.keep = keep
        if writer and self.directory.is_dir():
            for tmp in self.directory.glob("*.orbax-checkpoint-tmp*"):
                shutil.rmtree(tmp, ignore_errors=True)
        distributed.barrier("checkpoints-clean")
        self.manager = self._manager()
        self._pending: int | None = None  # the cycle of the write in flight
        self._failed = False
        if writer:
            _quiet_failed_saves(self.run_dir / "checkpoint_errors.log")
            _quiet_abandoned_reads(self.run_dir / "checkpoint_errors.log")

    def _manager(self) -> ocp.CheckpointManager:
        options = ocp.CheckpointManagerOptions(
            max_to_keep=self.keep,
            keep_period=self.archive_every or None,
            cleanup_tmp_directories=True,
            enable_async_checkpointing=True,
        )
        return ocp.CheckpointManager(self.directory, options=options)

    def save(self, cycle: int, state: Any, record: dict[str, Any]) -> None:
        """Start writing the checkpoint of `cycle` (asynchronously; see `wait`)."""
        record = {**record, "digest": state_digest(state)}
        args = ocp.args.Composite(
            state=ocp.args.StandardSave(state), record=ocp.args.JsonSave(record)
        )
        self.wait()  # the write before (Orbax would wait for it too): its failure is its own
        self._pending = cycle
        with self._writing():
            self.manager.save(cycle, args=args, force=True)

    def wait(self) -> None:
        """Block until pending writes are complete (`CheckpointWriteError` if one failed)."""
        with self._writing():
            self.manager.wait_until_finished()
        self._pending = None

    @contextlib.contextmanager
    def _writing(self) -> Iterator[None]:
        """Turn a failed write into one `CheckpointWriteError` line: what failed, that
        the earlier checkpoints are intact, what to do; its partial files are removed."""
        try:
            yield
        except Exception as exc:
            self._failed = True
            raise CheckpointWriteError(self._write_failure(exc)) from exc

    def _write_failure(self, exc: BaseException) -> str:
        text = str(exc)
        full = "No space left on device" in text or getattr(exc, "errno", None) == errno.ENOSPC
        reason = (
            "the disk is full (No space left on device)"
            if full
            else f"{type(exc).__name__}: {(text.strip().splitlines() or [''])[0][:160]}"
        )
        for tmp in self.directory.glob("*.orbax-checkpoint-tmp*"):
            shutil.rmtree(tmp, ignore_errors=True)  # the partial write: give its space back
        done = sorted(int(p.name) for p in self.directory.glob("*") if p.name.isdigit())
        done = [c for c in done if c != self._pending]
        kept = (
            f"the last complete checkpoint ({done[-1]}) is intact"
            if done
            else "no earlier checkpoint was written"
        )
        fix = "free disk space" if full else "fix the cause"
        log = self.run_dir / "checkpoint_errors.log"
        with contextlib.suppress(OSError), log.open("a") as f:
            f.write(f"checkpoint {self._pending}: {type(exc).__name__}: {text}\n")
        what = f"checkpoint {self._pending}" if self._pending is not None else "a checkpoint"
        return (
            f"{what} could not be written to {self.directory}: {reason}; {kept}: {fix}, "
            f"then `arenax resume {self.run_dir}` (details in {log})"
        )

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
        """`(state, record)` of checkpoint `cycle` (default: the latest), placed on
        `mesh` as the `PartitionSpec` prefix `specs` says (default: replicated), or
        on the first device without a mesh. Raises if its digest does not match."""
        step = self.latest() if cycle is None else cycle
        if step is None:
            raise FileNotFoundError(f"no checkpoint in {self.directory}")
        if mesh is not None:
            per_leaf = shardings(mesh, PartitionSpec() if specs is None else specs, abstract_state)
        else:
            one = jax.sharding.SingleDeviceSharding(jax.local_devices()[0])
            per_leaf = jax.tree.map(lambda _: one, abstract_state)
        target = jax.tree.map(
            lambda x, s: jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=s),
            abstract_state,
            per_leaf,
        )
        out = self.manager.restore(
            step,
            args=ocp.args.Composite(
                state=ocp.args.StandardRestore(target), record=ocp.args.JsonRestore()
            ),
        )
        state, record = out["state"], out["record"]
        digest = record.get("digest")
        if digest is not None and digest != state_digest(state):
            raise ValueError("its arrays do not match the digest saved with them")
        return state, record

    def restore_good(
        self,
        abstract_state: Any,
        mesh: Mesh | None = None,
        specs: Any = None,
        cycle: int | None = None,
        report: Callable[[str], None] = print,
        read_only: bool = False,
        unreadable: Sequence[int] = (),
    ) -> tuple[Any, dict[str, Any]]:
        """Restore checkpoint `cycle`, or the newest one that reads and verifies: each
        failure is reported in one line and the next older checkpoint (the latest, then the
        archives) is tried. Unreadable checkpoints newer than the one restored are moved to
        `<run>/corrupt_checkpoints/` so that the run continues from it. Rolling back to an
        older `cycle` starts a new branch of the run: the later checkpoints and a copy of
        the logs move to `<run>/rolled_back/<time>/` (the logs then drop their rows after
        `cycle`), said in one line. Raises `CheckpointError` if none works.

        `read_only` (evaluation, `arenax.load_run`): the same fallback, reported the same
        way, but nothing in the run is moved or written (the details of failed reads stay
        in the temporary folder's log). `unreadable`: checkpoints already found unreadable
        (set aside with the others when an older one is restored)."""
        every = sorted(self.all_steps())
        steps = every[::-1]
        if cycle is not None:
            if cycle not in steps:
                have = ", ".join(map(str, sorted(steps))) or "none"
                raise CheckpointError(f"checkpoint={cycle}: no such checkpoint (have: {have})")
            steps = [cycle]
        if not steps:
            raise CheckpointError(f"{self.directory}: no checkpoint to resume from")
        bad = [s for s in unreadable if s in every]
        # details of failed reads; the run directory is not written until a restore works
        log = Path(tempfile.gettempdir()) / f"arenax-checkpoint-errors-{os.getpid()}.log"
        earlier = _quiet_abandoned_reads(log)
        for step in steps:
            try:
                state, record = self.restore(abstract_state, mesh, step, specs)
            except Exception as exc:  # an unreadable checkpoint: report, try an older one
                why = (str(exc).strip().splitlines() or [""])[0]
                why = why.split(" See full TensorStore details")[0][:160]
                with contextlib.suppress(OSError), log.open("a") as f:
                    f.write(f"checkpoint {step}: {type(exc).__name__}: {exc}\n")
                report(f"checkpoint {step} is unreadable ({type(exc).__name__}: {why})")
                bad.append(step)
                continue
            if not bad and earlier is not None:
                _quiet_abandoned_reads(earlier)  # nothing failed: the noise goes where it went
            if bad and read_only:
                report(f"reading the older checkpoint {step} instead (details: {log})")
            elif bad:
                self.set_aside([s for s in bad if s > step])
                kept = self._keep_error_log(log)
                report(f"resuming from the older checkpoint {step} (details: {kept})")
            later = [s for s in every if s > step and s not in bad]
            if later and not read_only:
                dest = self.set_aside(later, "rolled_back")
                report(
                    f"rolled back to checkpoint {step}: the later checkpoints "
                    f"({', '.join(map(str, later))}) and the logs so far moved to {dest}; "
                    f"the run continues from cycle {step} as a new branch"
                )
            return state, record
        others = [s for s in every if s not in bad]
        hint = f"; the others: {', '.join(map(str, others))}" if others else ""
        raise CheckpointError(
            f"{self.directory}: no readable checkpoint ({', '.join(map(str, bad))} failed"
            f"{hint}); details in {log}"
        )

    def _keep_error_log(self, log: Path) -> Path:
        """Move the details of the failed reads into the run (`checkpoint_errors.log`),
        where the reads still abandoned in the background also go from now on."""
        dest = self.run_dir / "checkpoint_errors.log"
        if not distributed.is_main():
            return log
        with contextlib.suppress(OSError):
            with dest.open("a") as f:
                f.write(log.read_text() if log.exists() else "")
            log.unlink(missing_ok=True)
            _quiet_abandoned_reads(dest)
            return dest
        return log

    def set_aside(self, steps: list[int], why: str = "corrupt") -> Path:
        """Move checkpoints out of the manager's folder (kept for inspection):
        `corrupt_checkpoints/<step>-<time>`, or (a rollback) `rolled_back/<time>/` with
        a copy of the run's logs. Returns the destination folder."""
        stamp = time.strftime("%Y%m%d-%H%M%S")
        dest = self.run_dir / (
            "corrupt_checkpoints" if why == "corrupt" else f"rolled_back/{stamp}"
        )
        if not steps:
            return dest
        self.manager.wait_until_finished()
        self.manager.close()
        if distributed.is_main():  # the run directory's one writer
            dest.mkdir(parents=True, exist_ok=True)
            for s in steps:
                src = self.directory / str(s)
                if src.exists():
                    name = f"{s}-{stamp}" if why == "corrupt" else f"checkpoint-{s}"
                    shutil.move(str(src), str(dest / name))
            if why != "corrupt":
                for log in ("metrics.jsonl", "metrics.csv", "eval.jsonl", "eval.csv"):
                    if (self.run_dir / log).is_file():
                        shutil.copy2(self.run_dir / log, dest / log)
        distributed.barrier("set-aside")
        self.manager = self._manager()
        return dest

    def close(self) -> None:
        """Wait for the write in flight and close (after a failed write: close only)."""
        if not self._failed:
            self.wait()
        with contextlib.suppress(Exception) if self._failed else contextlib.nullcontext():
            self.manager.close()
