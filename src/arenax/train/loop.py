"""The host loop: compiled chunks of cycles, then hooks (check, log, evaluate, checkpoint).

cfg, run_dir <- prepare_run_dir(cfg, resume)     # validate; new, overwritten or resumed
run          <- start_run(cfg, run_dir)          # curriculum, mesh, init or restore
repeat:  state, metrics <- chunk(state)          # K cycles, one compiled program
         rows <- one row per cycle
         hooks(run, metrics, rows)               # stop on a non-finite loss; log;
                                                 # evaluate / checkpoint when due
"""

from __future__ import annotations

import dataclasses
import math
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from arenax.curricula.common import Curriculum, TrainState
from arenax.train import distributed
from arenax.train.build import make_curriculum
from arenax.train.checkpoint import Checkpointer, CheckpointError
from arenax.train.config import (
    TrainConfig,
    save_config,
    to_dict,
)
from arenax.train.hooks import Hook, default_hooks
from arenax.train.logging import Logger
from arenax.train.memory import OutOfMemory, check_compiled_memory
from arenax.train.parallel import (
    AXIS,
    init_state,
    make_chunk,
    make_mesh,
    place,
    stacked_specs,
    state_specs,
)
from arenax.train.prepare import check_budget_left, prepare_run_dir
from arenax.train.rundir import RunLock
from arenax.utils import make_console

# Host timing columns: everything else in a metrics row is a deterministic function of the
# seed (bitwise on CPU), which the resume tests check.
TIMING_COLUMNS = ("wall_time", "sps")


class Interrupted(RuntimeError):
    """SIGINT (Ctrl-C) or SIGTERM: the run finished its chunk, saved a checkpoint and
    stopped. `exit_code` is 130 or 143, as the shell reports those signals."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


class StopRequests:
    """Turns the first SIGINT / SIGTERM into a request to stop after the current chunk; a
    second SIGINT aborts at once (`KeyboardInterrupt`), a second SIGTERM terminates."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self) -> None:
        self.signum: int | None = None
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> StopRequests:
        if threading.current_thread() is threading.main_thread():
            for sig in self.SIGNALS:
                self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def _handle(self, signum: int, frame: Any) -> None:
        self.signum = signum
        for sig in self.SIGNALS:  # the next signal acts at once
            signal.signal(
                sig, signal.default_int_handler if sig == signal.SIGINT else signal.SIG_DFL
            )

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)


@dataclasses.dataclass
class TrainResult:
    """What `train` returns."""

    run_dir: Path
    state: TrainState
    rows: list[dict[str, Any]]
    """The run's metrics rows (several seeds: every seed's, each with its `seed`)."""
    compile_seconds: float
    steady_sps: float
    seed_rows: list[list[dict[str, Any]]] = dataclasses.field(default_factory=list)
    """Each seed's rows, in seed order (one seed: `[rows]`)."""


@dataclasses.dataclass
class Member:
    """One seed of a run (the run itself when it has one seed): its config (whose
    `run_dir` is its folder), checkpoints, logs, step counters and progress."""

    cfg: TrainConfig
    ckpt: Checkpointer
    logger: Logger | NullLogger
    counters: dict[str, int]
    last_good: int | None
    #: still training (its budget is not spent)
    active: bool = True
    #: the cycle its own run's current chunk would end at (its budget is checked there)
    chunk_end: int = 0
    rows: list[dict[str, Any]] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class Run:
    """A run in progress: its parts and where it stands (what hooks read and update)."""

    cfg: TrainConfig
    run_dir: Path
    algorithm: Curriculum
    mesh: Mesh
    console: Console
    state: TrainState
    cycle: int
    members: list[Member]
    #: the seeds' folders' locks (several seeds; the run's own lock is held by train())
    locks: list[RunLock] = dataclasses.field(default_factory=list)
    progress: Progress | None = None

    def print(self, text: str) -> None:
        (self.progress.console if self.progress is not None else self.console).print(text)

    def member_state(self, i: int) -> TrainState:
        """Seed `i`'s train state (the state itself for one seed)."""
        if len(self.members) == 1:
            return self.state
        return jax.tree.map(lambda x: x[i], self.state)




def start_run(
    cfg: TrainConfig, run_dir: Path, resume: bool, console: Console,
    checkpoint: int | None = None,
) -> Run:  # fmt: skip
    """Build the curriculum and the mesh, then a fresh train state, or (`resume`) the
    latest readable checkpoint's (or `checkpoint`'s) with its counters. With several
    seeds, each seed's folder `RUN/seed<s>` is a run of its own (config, lock, logs,
    checkpoints), and their states are stacked."""
    algorithm = make_curriculum(cfg)
    mesh = make_mesh(cfg.devices)
    configs = cfg.seed_runs()
    group = cfg.seeds > 1
    warn = lambda text: console.print(f"[yellow]warning:[/] {text}")  # noqa: E731
    # the locks are held (by process 0, the one writer of a multi-process run)
    writer = distributed.is_main()
    locks: list[RunLock] = []
    ckpts: list[Checkpointer] = []
    try:
        for c in configs:
            if group:
                if writer:
                    c.run_dir.mkdir(exist_ok=True)
                    locks.append(RunLock.acquire(c.run_dir))
                distributed.barrier("seed-folders")
            # several seeds keep two checkpoints: one complete set survives a crash mid-save
            ckpts.append(Checkpointer(c.run_dir, cfg.archive_every, writer, keep=1 + group))
        if resume and (any(k.all_steps() for k in ckpts) or checkpoint is not None):
            state, records, start = restore_members(algorithm, mesh, cfg, ckpts, checkpoint, warn)
            counters = [{k: int(v) for k, v in r.items() if is_counter(k)} for r in records]
            for c, n, r in zip(configs, counters, records, strict=True):
                check_budget_left(c, n, int(r["cycle"]))
            steps = sum(n["env_steps"] for n in counters)
            console.print(f"[bold]resumed[/] {run_dir} at cycle {start} ({steps:,} env steps)")
        else:
            state = init_state(algorithm, [c.seed for c in configs])
            state = place(state, mesh, state_specs(algorithm, cfg.seeds))
            start, counters = 0, [{"env_steps": 0} for _ in configs]
    except BaseException:
        for k in ckpts:
            k.close()
        for lock in locks:
            lock.release()
        raise
    if resume and all(finished(cfg, n) for n in counters):  # spent: change nothing
        for k in ckpts:
            k.close()
        for lock in locks:
            lock.release()
        raise NothingToDo(state)
    members = []
    for c, k, n in zip(configs, ckpts, counters, strict=True):
        if not writer:  # process 0 writes the logs
            logger: Logger | NullLogger = NullLogger()
        else:
            if resume or group:  # (a resumed run: now that the restore worked)
                save_config(c, c.run_dir / "config.json")
            logger = Logger(
                c.run_dir, to_dict(c), resume_cycle=start, tensorboard=c.tensorboard,
                wandb=c.wandb, wandb_project=c.wandb_project, warn=warn,
            )  # fmt: skip
        done = finished(cfg, n)
        members.append(Member(c, k, logger, n, start if resume else None, not done, start))
    return Run(cfg, run_dir, algorithm, mesh, console, state, start, members, locks)


def restore_members(
    algorithm: Curriculum, mesh: Mesh, cfg: TrainConfig, ckpts: list[Checkpointer],
    checkpoint: int | None, warn: Callable[[str], None],
) -> tuple[TrainState, list[dict[str, Any]], int]:  # fmt: skip
    """`(state, records, cycle)` of a run's checkpoint `checkpoint` or newest readable
    one; several seeds: the newest checkpoint every seed has, their states stacked."""
    specs = algorithm.state_specs(AXIS)
    abstract = jax.eval_shape(algorithm.init, jax.random.key(cfg.seed))
    if len(ckpts) == 1:
        state, record = ckpts[0].restore_good(abstract, mesh, specs, checkpoint, warn)
        return state, [record], int(record["cycle"])
    common = set.intersection(*(set(k.all_steps()) for k in ckpts))
    if checkpoint is None and not common:
        has = "; ".join(
            f"{k.run_dir.name}: {', '.join(map(str, k.all_steps())) or 'none'}" for k in ckpts
        )
        raise CheckpointError(
            f"{cfg.run_dir}: no checkpoint that every seed has ({has}; a seed resumed on its "
            "own went its own way): resume each seed's folder on its own "
            f"(arenax resume {Path(cfg.run_dir) / ckpts[0].run_dir.name} ...)"
        )
    step = checkpoint if checkpoint is not None else max(common)
    states, records = [], []
    for k in ckpts:
        state, record = k.restore_good(abstract, mesh, specs, step, warn)
        states.append(state)
        records.append(record)
    stacked = place(jax.tree.map(lambda *xs: jnp.stack(xs), *states), mesh, stacked_specs(specs))
    return stacked, records, step


class NullLogger:
    """The logger of processes other than 0 in a multi-process run: they write nothing."""

    def log(self, rows: list[dict[str, Any]]) -> None:
        pass

    def log_eval(self, rows: list[dict[str, Any]], summary: dict[str, float]) -> None:
        pass

    def close(self) -> None:
        pass


class NothingToDo(Exception):
    """A resumed run whose budget is already spent (carries its restored state)."""

    def __init__(self, state: TrainState) -> None:
        super().__init__("the budget is spent")
        self.state = state


def save_members(run: Run) -> None:
    """Start writing every seed's checkpoint of the current cycle. A seed whose budget is
    spent saves its final state again (its record keeps its own last cycle), so that every
    seed has every checkpoint of the run."""
    for i, m in enumerate(run.members):
        if m.active:
            m.last_good = run.cycle
        record = {"cycle": m.last_good, **m.counters, "config": to_dict(m.cfg)}
        m.ckpt.save(run.cycle, run.member_state(i), record)


def checkpoint_when_due(run: Run, ended: bool) -> None:
    """Save the latest checkpoints every `checkpoint_every` cycles, and when a seed
    spends its budget (`ended`)."""
    if run.cycle % run.cfg.checkpoint_every == 0 or ended:
        save_members(run)


# ------------------------------------------------------------------ the chunk loop
def is_counter(metric: str) -> bool:
    """Per-cycle counts that rows accumulate: `*_steps` and `updates`."""
    return metric.endswith("_steps") or metric == "updates"


def finished(cfg: TrainConfig, counters: dict[str, int]) -> bool:
    """Whether a budget is spent (the first one reached ends the run)."""
    steps = cfg.total_steps is not None and counters.get("env_steps", 0) >= cfg.total_steps
    updates = cfg.total_updates is not None and counters.get("updates", 0) >= cfg.total_updates
    return steps or updates


def cycles_left(cfg: TrainConfig, counters: dict[str, int]) -> int:
    """Cycles that may still run without passing a budget (at least one): a cycle takes
    at least `steps_per_cycle` steps and makes at most one update."""
    left = []
    if cfg.total_steps is not None:
        left.append(
            math.ceil((cfg.total_steps - counters.get("env_steps", 0)) / cfg.steps_per_cycle)
        )
    if cfg.total_updates is not None:
        left.append(cfg.total_updates - counters.get("updates", 0))
    return max(1, min(left))


def _rows(metrics: dict[str, np.ndarray], first_cycle: int, counters: dict[str, int]) -> list:
    """One row per cycle; counters (`is_counter`) are per-cycle counts, accumulated."""
    n = len(next(iter(metrics.values())))
    steps = sorted(k for k in metrics if is_counter(k))
    rows = []
    for i in range(n):
        for k in steps:
            counters[k] = counters.get(k, 0) + int(metrics[k][i])
        row: dict[str, Any] = {"cycle": first_cycle + i + 1, **counters}
        for k, v in metrics.items():
            if k not in steps:
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
    if not (getattr(c, "robust", False) and hasattr(c, "min_fill")):
        return
    if any(m.counters.get("updates") for m in run.members):
        return  # a resumed run that already updates
    need = math.ceil(c.min_fill * c.buffer_size)
    per_cycle = cfg.n_envs * (cfg.blocks if c.parallel else 1)  # new levels a cycle can add
    cycles = math.ceil(need / per_cycle)
    steps = cycles * cfg.steps_per_cycle
    late = cfg.total_steps is not None and steps >= cfg.total_steps
    run.print(
        f"{c.KIND}: no PPO update until the level buffer holds {need:,} levels "
        f"({c.KIND}.min_fill={c.min_fill:g} of {c.buffer_size:,}): at least {cycles:,} cycles, "
        f"{steps:,} env steps"
        + (f" — more than total_steps={cfg.total_steps:,}: this run would never update "
           f"(lower {c.KIND}.buffer_size or {c.KIND}.min_fill, or raise the budget)" if late else "")
    )  # fmt: skip


def run_chunks(run: Run, hooks: list[Hook]) -> TrainResult:
    """Run compiled chunks of cycles until every seed's budget is spent, calling `hooks`
    after each chunk for each seed that trained in it, then checkpointing when due.

    Each seed keeps the chunk boundaries its own run would have (a chunk of
    `min(chunk, cycles_left)` cycles, its budget checked at the end), and the stacked
    chunk ends at the first of them: every seed trains exactly the cycles its own run does."""
    cfg = run.cfg
    seeds = len(run.members)
    compiled: dict[int, Any] = {}
    compile_s = 0.0
    steady_steps, steady_time = 0, 0.0
    t_start = time.perf_counter()

    def get_chunk(n: int) -> Any:
        nonlocal compile_s
        if n not in compiled:
            run.print(
                f"compiling a chunk of {n} cycles (the first run of a configuration takes "
                "roughly 10-40 s on a 2-core CPU; later runs load it from the compilation cache) ..."
            )
            t0 = time.perf_counter()
            fn = make_chunk(run.algorithm, run.mesh, cfg.n_envs, n, seeds)
            args = (run.state,) if seeds == 1 else (run.state, np.ones(seeds, bool))
            compiled[n] = fn.lower(*args).compile()
            check_compiled_memory(compiled[n], cfg)
            dt = time.perf_counter() - t0
            compile_s += dt
            run.print(f"compiled a chunk of {n} cycles in {dt:.1f} s")
        return compiled[n]

    for m in run.members:
        m.chunk_end = run.cycle + min(cfg.chunk, cycles_left(cfg, m.counters))
    run.progress = _progress(run)
    # the bar follows the budget that ends the run first (of the slowest seed): the update
    # budget, unless the step budget's cycles are fewer
    unit = "updates" if cfg.total_updates is not None else "env_steps"
    if unit == "updates" and cfg.total_steps is not None and cfg.cycles < cfg.total_updates:
        unit = "env_steps"
    total = cfg.total_updates if unit == "updates" else cfg.total_steps
    warm_up_note(run)
    slowest = lambda: min(m.counters.get(unit, 0) for m in run.members)  # noqa: E731
    with StopRequests() as stop, run.progress as progress:
        task = progress.add_task(
            cfg.run_name, total=total, completed=slowest(), sps="-", shown="",
            unit=unit.replace("env_", ""),
        )  # fmt: skip
        while any(m.active for m in run.members):
            active = [m for m in run.members if m.active]
            n = min(m.chunk_end for m in active) - run.cycle
            fn = get_chunk(n)
            mask = np.array([m.active for m in run.members])
            t0 = time.perf_counter()
            run.state, metrics = fn(run.state) if seeds == 1 else fn(run.state, mask)
            metrics = jax.device_get(metrics)
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
            ending = [m for m in active if m.chunk_end == run.cycle and finished(cfg, m.counters)]
            checkpoint_when_due(run, bool(ending))
            for m in active:
                if m in ending:
                    m.active = False
                elif m.chunk_end == run.cycle:
                    m.chunk_end = run.cycle + min(cfg.chunk, cycles_left(cfg, m.counters))
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
    run.progress = None
    steady = steady_steps / steady_time if steady_time else math.nan
    per_seed = [m.rows for m in run.members]
    rows = per_seed[0] if seeds == 1 else [
        {"seed": m.cfg.seed, **r} for m in run.members for r in m.rows
    ]  # fmt: skip
    return TrainResult(run.run_dir, run.state, rows, compile_s, steady, per_seed)


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


def _fmt(x: float) -> str:
    return "-" if not math.isfinite(x) else f"{x:.3f}"


def train(
    cfg: TrainConfig,
    resume: Path | None = None,
    console: Console | None = None,
    checkpoint: int | None = None,
) -> TrainResult:
    """Train according to `cfg`; with `resume` (or `cfg.resume`), continue the run in
    that directory from its newest readable checkpoint (or `checkpoint`).

    The run directory is locked for the life of the call (a second writer is refused).
    SIGINT / SIGTERM end the current chunk, save a checkpoint and raise
    `Interrupted`.

    On resume the saved config is used; `cfg` may differ from it only in budget, logging
    and output fields (`RESUMABLE_FIELDS`), otherwise this raises
    `ConfigError` listing the differences.
    """
    distributed.initialize(cfg.launch)
    if distributed.is_main():
        console = console or make_console()
    else:  # process 0 reports the run; errors still reach every process's stderr
        distributed.announce()
        console = Console(quiet=True)
    if distributed.multi_process() and cfg.devices == 1:  # the default: every device
        cfg = dataclasses.replace(cfg, devices=jax.device_count())
    resume = resume if resume is not None else cfg.resume
    cfg, run_dir, lock = prepare_run_dir(cfg, resume)
    try:
        if lock is not None and lock.reclaimed:
            console.print(f"reclaimed the lock of {run_dir} left by {lock.reclaimed} (not running)")
        try:
            try:
                run = start_run(cfg, run_dir, resume is not None, console, checkpoint)
            except NothingToDo as done:
                return TrainResult(run_dir, done.state, [], 0.0, math.nan)
            try:
                return run_chunks(run, default_hooks(cfg))
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
