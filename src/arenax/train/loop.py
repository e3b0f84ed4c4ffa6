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
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import numpy as np
from jax.sharding import Mesh
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from arenax.curricula.common import Curriculum, TrainState
from arenax.rl.evaluation import evaluate, summarize
from arenax.train.build import make_algorithm, make_policy
from arenax.train.checkpoint import Checkpointer
from arenax.train.config import (
    ConfigError,
    TrainConfig,
    load_config,
    resume_differences,
    save_config,
    to_dict,
    validate,
)
from arenax.train.logging import Logger
from arenax.train.parallel import AXIS, make_chunk, make_mesh, place

# Host timing columns: everything else in a metrics row is a deterministic function of the
# seed (bitwise on CPU), which the resume tests check.
TIMING_COLUMNS = ("wall_time", "sps")


class NonFiniteLoss(RuntimeError):
    """A loss became NaN/inf; the run stopped and the last good checkpoint was kept."""


@dataclasses.dataclass
class TrainResult:
    """What :func:`train` returns."""

    run_dir: Path
    state: TrainState
    rows: list[dict[str, Any]]
    compile_seconds: float
    steady_sps: float


@dataclasses.dataclass
class Run:
    """A run in progress: its parts and where it stands (what hooks read and update)."""

    cfg: TrainConfig
    run_dir: Path
    algorithm: Curriculum
    mesh: Mesh
    ckpt: Checkpointer
    logger: Logger
    console: Console
    state: TrainState
    cycle: int
    counters: dict[str, int]
    last_good: int | None
    progress: Progress | None = None

    def print(self, text: str) -> None:
        (self.progress.console if self.progress is not None else self.console).print(text)


Hook = Callable[[Run, dict[str, np.ndarray], list[dict[str, Any]]], None]


# ------------------------------------------------------------------ preparing a run
def prepare_run_dir(cfg: TrainConfig, resume: Path | None) -> tuple[TrainConfig, Path]:
    """Validate ``cfg`` and make its run directory: a new one, an overwritten one, or (with
    ``resume``) the existing run, whose saved config ``cfg`` may change only in budget,
    logging and outputs. Writes ``config.json``; returns the config to run and the folder."""
    validate(cfg, available_devices=len(jax.devices()))
    if resume is not None:
        run_dir = Path(resume)
        if not (run_dir / "config.json").exists():
            raise ConfigError(
                f"resume={str(run_dir)!r}: no config.json there (not a run directory)"
            )
        saved = load_config(run_dir / "config.json")
        diffs = resume_differences(saved, cfg)
        budget = ("total_steps", "total_updates")
        changed = any(getattr(saved, f) != getattr(cfg, f) for f in budget)
        if cfg.ppo.lr_schedule == "linear" and changed:
            diffs.append("the budget (it sets the linear learning-rate schedule)")
        if diffs:
            raise ConfigError(
                f"resume={str(run_dir)!r}: config differs from the saved run in {'; '.join(diffs)}"
            )
        cfg = dataclasses.replace(cfg, out_dir=run_dir.parent, name=run_dir.name)
    else:
        run_dir = cfg.run_dir
        if run_dir.exists() and any(run_dir.iterdir()):
            if not cfg.overwrite:
                raise ConfigError(
                    f"name={cfg.run_name!r}: {run_dir} exists; pass --resume {run_dir}, "
                    "--overwrite, or another --name"
                )
            shutil.rmtree(run_dir)
        run_dir.mkdir(parents=True, exist_ok=True)
    save_config(cfg, run_dir / "config.json")
    return cfg, run_dir


def start_run(cfg: TrainConfig, run_dir: Path, resume: bool, console: Console) -> Run:
    """Build the curriculum and the mesh, then a fresh train state, or (``resume``) the
    latest checkpoint's with its counters."""
    algorithm = make_algorithm(cfg)
    mesh = make_mesh(cfg.devices)
    specs = algorithm.state_specs(AXIS)
    ckpt = Checkpointer(run_dir, cfg.archive_every)
    counters = {"env_steps": 0}
    if resume and ckpt.latest() is not None:
        abstract = jax.eval_shape(algorithm.init, jax.random.key(cfg.seed))
        state, record = ckpt.restore(abstract, mesh, specs=specs)
        counters = {k: int(v) for k, v in record.items() if is_counter(k)}
        start = int(record["cycle"])
        console.print(
            f"[bold]resumed[/] {run_dir} at cycle {start} ({counters['env_steps']:,} env steps)"
        )
    else:
        state = place(algorithm.init(jax.random.key(cfg.seed)), mesh, specs)
        start = 0
    logger = Logger(
        run_dir, to_dict(cfg), resume_cycle=start, tensorboard=cfg.tensorboard,
        wandb=cfg.wandb, wandb_project=cfg.wandb_project,
    )  # fmt: skip
    return Run(cfg, run_dir, algorithm, mesh, ckpt, logger, console, state, start, counters,
               ckpt.latest())  # fmt: skip


# ------------------------------------------------------------------ hooks
def stop_on_non_finite_loss(run: Run, metrics: dict[str, np.ndarray], rows: list) -> None:
    """Raise :class:`NonFiniteLoss` if a loss of an updating cycle is NaN/inf (cycles
    without an update report NaN losses on purpose)."""
    n = len(rows)
    updated = np.asarray(metrics.get("updated", np.ones(n))) > 0
    bad = [
        k for k in metrics
        if k.rsplit("/", 1)[-1] in ("loss", "value_loss", "pg_loss")
        and not np.all(np.isfinite(metrics[k][updated]))
    ]  # fmt: skip
    if bad:
        i = int(np.argmax(updated & ~np.isfinite(metrics[bad[0]])))
        raise NonFiniteLoss(
            f"non-finite {bad[0]} at cycle {run.cycle - n + i + 1}; stopped. The last good "
            f"checkpoint (cycle {run.last_good}) in {run.run_dir} is intact: lower ppo.lr "
            "or ppo.max_grad_norm and resume or restart"
        )


def log_rows(run: Run, metrics: dict[str, np.ndarray], rows: list) -> None:
    """Write the chunk's rows to every sink."""
    run.logger.log(rows)


def evaluate_when_due(run: Run, metrics: dict[str, np.ndarray], rows: list) -> None:
    """Evaluate the maze student on the held-out suite every ``eval.every`` cycles."""
    cfg = run.cfg
    if not cfg.eval.every or run.cycle % cfg.eval.every:
        return
    params = jax.device_get(run.algorithm.student_params(run.state))
    key = jax.random.fold_in(jax.random.key(cfg.seed ^ 0x5EED), run.cycle)
    results = evaluate(
        make_policy(cfg), params, cfg.eval.suite, cfg.eval.episodes, key, cfg.eval.greedy,
        cfg.env.view_size, cfg.env.normalize_obs,
    )  # fmt: skip
    evals = [{"cycle": run.cycle, **run.counters, **dataclasses.asdict(r)} for r in results]
    summary = summarize(results)
    run.logger.log_eval(evals, summary)
    run.print(
        f"eval @ {run.counters['env_steps']:,} steps: solved {summary['eval/solved']:.3f}, "
        f"return {summary['eval/return']:.3f} ({cfg.eval.suite}, {cfg.eval.episodes} episodes/maze)"
    )


def checkpoint_when_due(run: Run, metrics: dict[str, np.ndarray], rows: list) -> None:
    """Save the latest checkpoint every ``checkpoint_every`` cycles and at the end."""
    if run.cycle % run.cfg.checkpoint_every and not finished(run.cfg, run.counters):
        return
    record = {"cycle": run.cycle, **run.counters, "config": to_dict(run.cfg)}
    run.ckpt.save(run.cycle, run.state, record)
    run.last_good = run.cycle


def default_hooks(cfg: TrainConfig) -> list[Hook]:
    """Check losses, log, evaluate (maze students), checkpoint — in this order."""
    hooks: list[Hook] = [stop_on_non_finite_loss, log_rows]
    if cfg.game == "maze" and cfg.eval.every:
        hooks.append(evaluate_when_due)
    return [*hooks, checkpoint_when_due]


# ------------------------------------------------------------------ the chunk loop
def is_counter(metric: str) -> bool:
    """Per-cycle counts that rows accumulate: ``*_steps`` and ``updates``."""
    return metric.endswith("_steps") or metric == "updates"


def finished(cfg: TrainConfig, counters: dict[str, int]) -> bool:
    """Whether a budget is spent (the first one reached ends the run)."""
    steps = cfg.total_steps is not None and counters.get("env_steps", 0) >= cfg.total_steps
    updates = cfg.total_updates is not None and counters.get("updates", 0) >= cfg.total_updates
    return steps or updates


def cycles_left(cfg: TrainConfig, counters: dict[str, int]) -> int:
    """Cycles that may still run without passing a budget (at least one): a cycle takes
    at least ``steps_per_cycle`` steps and makes at most one update."""
    left = []
    if cfg.total_steps is not None:
        left.append(
            math.ceil((cfg.total_steps - counters.get("env_steps", 0)) / cfg.steps_per_cycle)
        )
    if cfg.total_updates is not None:
        left.append(cfg.total_updates - counters.get("updates", 0))
    return max(1, min(left))


def _rows(metrics: dict[str, np.ndarray], first_cycle: int, counters: dict[str, int]) -> list:
    """One row per cycle; counters (:func:`is_counter`) are per-cycle counts, accumulated."""
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
        disable=not run.cfg.progress,
    )


def run_chunks(run: Run, hooks: list[Hook]) -> TrainResult:
    """Run compiled chunks of cycles until the budget is spent, calling ``hooks`` after
    each chunk."""
    cfg = run.cfg
    compiled: dict[int, Any] = {}
    compile_s = 0.0
    all_rows: list[dict[str, Any]] = []
    steady_steps, steady_time = 0, 0.0
    t_start = time.perf_counter()

    def get_chunk(n: int) -> Any:
        nonlocal compile_s
        if n not in compiled:
            t0 = time.perf_counter()
            fn = make_chunk(run.algorithm, run.mesh, cfg.n_envs, n)
            compiled[n] = fn.lower(run.state).compile()
            dt = time.perf_counter() - t0
            compile_s += dt
            run.print(f"compiled a chunk of {n} cycles in {dt:.1f} s")
        return compiled[n]

    run.progress = _progress(run)
    # the bar follows the update budget when there is one, else the step budget
    unit = "updates" if cfg.total_updates is not None else "env_steps"
    total = cfg.total_updates if unit == "updates" else cfg.total_steps
    with run.progress as progress:
        task = progress.add_task(
            cfg.run_name, total=total, completed=run.counters.get(unit, 0), sps="-", shown="",
            unit=unit.replace("env_", ""),
        )  # fmt: skip
        while not finished(cfg, run.counters):
            n = min(cfg.chunk, cycles_left(cfg, run.counters))
            fn = get_chunk(n)
            t0 = time.perf_counter()
            run.state, metrics = fn(run.state)
            metrics = jax.device_get(metrics)
            dt = time.perf_counter() - t0
            before = run.counters["env_steps"]
            rows = _rows(metrics, run.cycle, run.counters)
            run.cycle += n
            sps = (run.counters["env_steps"] - before) / dt
            steady_steps += run.counters["env_steps"] - before
            steady_time += dt
            for r in rows:
                r["wall_time"] = round(time.perf_counter() - t_start, 3)
                r["sps"] = round(sps, 1)
            for hook in hooks:
                hook(run, metrics, rows)
            all_rows += rows
            last = rows[-1]
            shown = run.algorithm.progress.items()
            progress.update(
                task, completed=run.counters.get(unit, 0), sps=f"{sps:,.0f}",
                shown="  ".join(f"{k} {_fmt(last[m])}" for k, m in shown),
            )  # fmt: skip
    run.progress = None
    steady = steady_steps / steady_time if steady_time else math.nan
    return TrainResult(run.run_dir, run.state, all_rows, compile_s, steady)


def _fmt(x: float) -> str:
    return "-" if not math.isfinite(x) else f"{x:.3f}"


def train(
    cfg: TrainConfig, resume: Path | None = None, console: Console | None = None
) -> TrainResult:
    """Train according to ``cfg``; with ``resume`` (or ``cfg.resume``), continue the run in
    that directory.

    On resume the saved config is used; ``cfg`` may differ from it only in budget, logging
    and output fields (:data:`~arenax.train.config.RESUMABLE_FIELDS`), otherwise this raises
    :class:`ConfigError` listing the differences.
    """
    console = console or Console()
    resume = resume if resume is not None else cfg.resume
    cfg, run_dir = prepare_run_dir(cfg, resume)
    run = start_run(cfg, run_dir, resume is not None, console)
    try:
        return run_chunks(run, default_hooks(cfg))
    finally:
        run.ckpt.close()
        run.logger.close()
