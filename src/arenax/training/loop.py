"""The host loop: compiled chunks of cycles, then hooks (check, log, evaluate, checkpoint).

program      <- Program.build(cfg)                  # validate; devices; curriculum; mesh
program, run_dir <- prepare_run_dir(program, resume)  # new, overwritten or resumed
run          <- start_run(program, run_dir)       # init or restore (run.py)
repeat:  state, metrics <- chunk(state)          # K cycles, one compiled program
         rows <- one row per cycle
         hooks(run, metrics, rows)               # stop on a non-finite loss; log;
                                                 # evaluate / checkpoint when due
"""

from __future__ import annotations

import dataclasses
import math
import signal
import time
from pathlib import Path
from typing import Any

import jax
import numpy as np
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from arenax.curricula.common import TrainState
from arenax.training import distributed
from arenax.training.config import TrainConfig
from arenax.training.hooks import Hook, default_hooks
from arenax.training.memory import OutOfMemory
from arenax.training.parallel import request_cpu_devices, resolve_devices
from arenax.training.prepare import prepare_run_dir
from arenax.training.program import Chunk, Program
from arenax.training.run import (
    NothingToDo,
    Run,
    checkpoint_when_due,
    is_counter,
    save_members,
    start_run,
)
from arenax.training.signals import Interrupted, StopRequests
from arenax.utils import make_console, persistent_cache_dir

# Host timing columns: everything else in a metrics row is a deterministic function of the
# seed (bitwise on CPU), which the resume tests check.
TIMING_COLUMNS = ("wall_time", "sps")


@dataclasses.dataclass
class TrainResult:
    """What `train` returns."""

    run_dir: Path
    state: TrainState
    rows: list[dict[str, Any]]
    """The run's metrics rows (several runs: every run's, each with its `seed` and, in a
    sweep, its swept options' values)."""
    compile_seconds: float
    steady_sps: float
    seed_rows: list[list[dict[str, Any]]] = dataclasses.field(default_factory=list)
    """Each seed's rows, in seed order (one seed: `[rows]`)."""
    timed_out: bool = False
    """Stopped at `time_limit` before the budget was spent."""


# ------------------------------------------------------------------ the chunk loop
def _rows(metrics: dict[str, np.ndarray], first_cycle: int, counters: dict[str, int]) -> list:
    """One row per cycle; counters (`is_counter`) are per-cycle counts, accumulated.
    Metrics with an array per cycle are left to `logging.array_rows`."""
    n = len(next(iter(metrics.values())))
    steps = sorted(k for k in metrics if is_counter(k))
    rows = []
    for i in range(n):
        for k in steps:
            counters[k] = counters.get(k, 0) + int(metrics[k][i])
        row: dict[str, Any] = {"cycle": first_cycle + i + 1, **counters}
        for k, v in metrics.items():
            if k not in steps and np.ndim(v) == 1:
                row[k] = float(v[i])
        rows.append(row)
    return rows


def _progress(run: Run) -> Progress:
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        TextColumn("{task.completed:,.0f}/{task.total:,.0f} {task.fields[unit]}"),
        TextColumn("{task.fields[sps]} sps"),
        TextColumn("{task.fields[shown]}"),
        TimeElapsedColumn(),
        TextColumn("eta"),
        TimeRemainingColumn(),
        console=run.console,
        disable=not run.cfg.progress or not distributed.is_main(),
    )


def warm_up_note(run: Run) -> None:
    """Say, before a robust replay curriculum starts, that it does not update the policy
    until its level buffer is warm, and when that is at the earliest (and if the budget
    ends first)."""
    cfg, c = run.cfg, run.cfg.curriculum
    warm_up = c.warm_up(cfg)
    if warm_up is None:
        return
    if any(m.counters.get("updates") for m in run.members):
        return  # a resumed run that already updates
    need, cycles = warm_up
    steps = cycles * cfg.steps_per_cycle
    late = cfg.total_steps is not None and steps >= cfg.total_steps
    run.print(
        f"{c.KIND}: no PPO update until the level buffer holds {need:,} levels "
        f"({c.KIND}.min_fill={c.min_fill:g} of {c.buffer_size:,}): at least {cycles:,} cycles, "
        f"{steps:,} env steps"
        + (
            f" — more than total_steps={cfg.total_steps:,}: this run would never update "
            f"(lower {c.KIND}.buffer_size or {c.KIND}.min_fill, or raise the budget)"
            if late
            else ""
        )
    )


def run_chunks(run: Run, hooks: list[Hook], started: float | None = None) -> TrainResult:
    """Run compiled chunks of cycles until every seed's budget is spent, calling `hooks`
    after each chunk for each seed that trained in it, then checkpointing when due.

    Each seed keeps the chunk boundaries its own run would have (a chunk of
    `min(chunk, cycles_left)` cycles, its budget checked at the end), and the stacked
    chunk ends at the first of them: every seed trains exactly the cycles its own run does.
    `cfg.time_limit` counts from `started` (a `time.perf_counter()` reading; default: now)."""
    cfg = run.cfg
    seeds = len(run.members)
    chunk: Chunk | None = None
    compile_s = 0.0
    steady_steps, steady_time = 0, 0.0
    t_start = time.perf_counter()
    started = t_start if started is None else started

    def building() -> None:
        cache = persistent_cache_dir()
        where = f"compilation cache {cache}" if cache else "no compilation cache"
        run.print(
            f"compiling a chunk of up to {cfg.chunk} cycles on {cfg.devices} "
            f"device{'s' if cfg.devices != 1 else ''} ({where}; a first compile takes roughly "
            "2-20 s on a 2-core CPU, 25-60 s on a TPU) ..."
        )

    def get_chunk() -> Chunk:
        """The run's one chunk program (`Program.chunk`): built, or reused from an earlier
        run of this process that built the same (`arenax.training.programs`)."""
        nonlocal chunk, compile_s
        if chunk is None:
            chunk = run.program.chunk(state=run.state, building=building)
            compile_s += chunk.seconds
            if chunk.loaded:
                run.print(
                    f"loaded the chunk of up to {cfg.chunk} cycles from the compilation cache "
                    f"in {chunk.seconds:.1f} s"
                )
            elif not chunk.reused:
                run.print(f"compiled a chunk of up to {cfg.chunk} cycles in {chunk.seconds:.1f} s")
        return chunk

    for m in run.members:
        m.chunk_end = run.cycle + min(cfg.chunk, cfg.cycles_left(m.counters))
    run.progress = _progress(run)
    # the bar follows the budget that ends the run first (of the slowest seed): the update
    # budget, unless the step budget's cycles are fewer
    unit = "updates" if cfg.total_updates is not None else "env_steps"
    if unit == "updates" and cfg.total_steps is not None and cfg.cycles < cfg.total_updates:
        unit = "env_steps"
    total = cfg.total_updates if unit == "updates" else cfg.total_steps
    warm_up_note(run)
    slowest = lambda: min(m.counters.get(unit, 0) for m in run.members)  # noqa: E731
    # a robust replay curriculum makes no update until its buffer is warm: the update rate
    # projected against a time limit is that of the first chunk begun warm
    warms_up = cfg.curriculum.warm_up(cfg) is not None
    projected, timed_out = False, False
    with StopRequests() as stop, run.progress as progress:
        task = progress.add_task(
            cfg.run_name,
            total=total,
            completed=slowest(),
            sps="-",
            shown="",
            unit=unit.replace("env_", ""),
        )
        while any(m.active for m in run.members):
            active = [m for m in run.members if m.active]
            n = min(m.chunk_end for m in active) - run.cycle
            fn = get_chunk()
            units_before = slowest()
            began_warm = not warms_up or all(m.counters.get("updates") for m in active)
            t0 = time.perf_counter()
            run.state, metrics = fn(run.state, n, [m.active for m in run.members])
            metrics = {k: v[:n] for k, v in jax.device_get(metrics).items()}
            dt = time.perf_counter() - t0
            steps, trained = 0, []
            for i, m in enumerate(run.members):
                if not m.active:
                    continue
                own = metrics if seeds == 1 else {k: v[:, i] for k, v in metrics.items()}
                before = m.counters["env_steps"]
                rows = _rows(own, run.cycle, m.counters)
                steps += m.counters["env_steps"] - before
                m.rows += rows
                for r in rows:
                    r["wall_time"] = round(time.perf_counter() - t_start, 3)
                    r["sps"] = round((m.counters["env_steps"] - before) / dt, 1)
                trained.append((m, own, rows))
            run.cycle += n
            steady_steps += steps
            steady_time += dt
            for m, own, rows in trained:
                for hook in hooks:
                    hook(run, m, own, rows)
            ending = [m for m in active if m.chunk_end == run.cycle and cfg.spent(m.counters)]
            checkpoint_when_due(run, bool(ending))
            for m in active:
                if m in ending:
                    m.active = False
                elif m.chunk_end == run.cycle:
                    m.chunk_end = run.cycle + min(cfg.chunk, cfg.cycles_left(m.counters))
            last = active[0].rows[-1]
            shown = "  ".join(f"{k} {_fmt(last[m])}" for k, m in run.algorithm.progress.items())
            min_fill = getattr(cfg.curriculum, "min_fill", None)
            if (
                min_fill is not None
                and "buffer/fill" in last
                and not active[0].counters.get("updates")
            ):
                shown = f"warm-up: buffer {last['buffer/fill']:.0%} (updates from {min_fill:.0%})  {shown}"
            progress.update(task, completed=slowest(), sps=f"{steps / dt:,.0f}", shown=shown)
            # every process stops after the same chunk (a signal may reach only some)
            signum = distributed.any_process(stop.signum or 0)
            if signum:
                _stop(run, signum)
            if cfg.time_limit is not None and any(m.active for m in run.members):
                elapsed = time.perf_counter() - started
                done = slowest() - units_before  # (a replay chunk may make no update)
                if not projected and done > 0 and (unit != "updates" or began_warm):  # once
                    projected = True
                    _project(run, done, total - slowest(), unit, dt, elapsed)
                if distributed.any_process(int(elapsed >= cfg.time_limit)):
                    _stop_at_time_limit(run, elapsed, slowest(), total, unit)
                    timed_out = True
                    break
    run.progress = None
    steady = steady_steps / steady_time if steady_time else math.nan
    per_seed = [m.rows for m in run.members]
    sweep = run.program.sweep
    swept = (lambda m: sweep.values_of(m.cfg)) if sweep is not None else (lambda m: {})
    rows = (
        per_seed[0]
        if seeds == 1
        else [{"seed": m.cfg.seed, **swept(m), **r} for m in run.members for r in m.rows]
    )
    return TrainResult(run.run_dir, run.state, rows, compile_s, steady, per_seed, timed_out)


def _stop(run: Run, signum: int) -> None:
    """Save the current state (if the last chunk did not) and raise `Interrupted`."""
    if any(m.active and m.last_good != run.cycle for m in run.members):
        save_members(run)
    for m in run.members:
        m.ckpt.wait()
    name = "SIGINT" if signum == signal.SIGINT else "SIGTERM"
    steps = sum(m.counters["env_steps"] for m in run.members)
    raise Interrupted(
        f"{name}: stopped after cycle {run.cycle} ({steps:,} env steps) "
        f"and saved a checkpoint; continue with: arenax resume {run.run_dir}",
        130 if signum == signal.SIGINT else 143,
    )


def _project(run: Run, done: int, left: int, unit: str, seconds: float, elapsed: float) -> None:
    """Print, once, how long the rest of the budget takes at one chunk's rate (`done`
    units in `seconds`: the first chunk's, or in updates the first begun after a replay
    buffer's warm-up), against the time limit."""
    limit = run.cfg.time_limit
    if seconds <= 0:
        return
    need = left / (done / seconds)
    fits = "within" if elapsed + need <= limit else "past"
    unit = unit.replace("env_", "")
    run.print(
        f"time limit {_secs(limit)} s: at {done / seconds:,.1f} {unit}/s the remaining "
        f"{left:,} {unit} take ≈{_secs(need)} s more, {fits} the limit"
    )


def _stop_at_time_limit(run: Run, elapsed: float, done: int, total: int, unit: str) -> None:
    """Save the current state (if the last chunk did not) and say how to continue."""
    if any(m.active and m.last_good != run.cycle for m in run.members):
        save_members(run)
    for m in run.members:
        m.ckpt.wait()
    run.print(
        f"time limit {_secs(run.cfg.time_limit)} s reached ({_secs(elapsed)} s): stopped after "
        f"cycle {run.cycle} ({done:,} of {total:,} {unit.replace('env_', '')}) and saved a "
        f"checkpoint; continue with: arenax resume {run.run_dir}"
    )


def _secs(x: float) -> str:
    return f"{x:,.0f}" if x >= 10 else f"{x:.2g}"


def _fmt(x: float) -> str:
    return "-" if not math.isfinite(x) else f"{x:.3f}"


def train(
    cfg: TrainConfig | Program,
    resume: Path | None = None,
    console: Console | None = None,
    checkpoint: int | None = None,
) -> TrainResult:
    """Train according to `cfg` (a config, or its `Program` built already); with `resume`
    (or `cfg.resume`), continue the run in that directory from its newest readable
    checkpoint (or `checkpoint`).

    The run directory is locked for the life of the call (a second writer is refused).
    SIGINT / SIGTERM end the current chunk, save a checkpoint and raise
    `Interrupted`.

    On resume the saved config is used; `cfg` may differ from it only in budget, logging
    and output fields (`RESUMABLE_FIELDS`), otherwise this raises
    `ConfigError` listing the differences.

    With `cfg.time_limit`, the run stops after the first chunk that ends past that many
    seconds from this call's start, saving a checkpoint (a normal return, not an error).
    """
    started = time.perf_counter()
    program = cfg if isinstance(cfg, Program) else None
    cfg = program.cfg if program is not None else cfg
    distributed.initialize(cfg.launch)
    request_cpu_devices(cfg.devices)  # before the first use of a device
    if distributed.is_main():
        console = console or make_console()
    else:  # process 0 reports the run; errors still reach every process's stderr
        distributed.announce()
        console = Console(quiet=True)
    if program is None:
        cfg, _ = resolve_devices(cfg)  # ("auto": a count; the compile line says it)
    if distributed.multi_process() and cfg.devices == 1:  # the default: every device
        cfg, program = dataclasses.replace(cfg, devices=jax.device_count()), None
    program = program or Program.build(cfg)
    resume = resume if resume is not None else cfg.resume
    program, run_dir, lock = prepare_run_dir(program, resume)
    cfg = program.cfg
    try:
        if lock is not None and lock.reclaimed:
            console.print(f"reclaimed the lock of {run_dir} left by {lock.reclaimed} (not running)")
        try:
            try:
                run = start_run(program, run_dir, resume is not None, console, checkpoint)
            except NothingToDo as done:
                return TrainResult(run_dir, done.state, [], 0.0, math.nan)
            try:
                return run_chunks(run, default_hooks(cfg), started)
            finally:
                for m in run.members:
                    m.ckpt.close()
                    m.logger.close()
                for seed_lock in run.locks:
                    seed_lock.release()
        except jax.errors.JaxRuntimeError as exc:
            if "RESOURCE_EXHAUSTED" not in str(exc):
                raise
            raise OutOfMemory(
                f"out of device memory ({str(exc).splitlines()[0][:120]}); lower --n-envs, "
                f"--n-steps, --chunk or the level / network sizes (the run directory {run_dir} "
                "keeps its last checkpoint)"
            ) from None
    finally:
        if lock is not None:
            lock.release()
