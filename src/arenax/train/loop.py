"""The host loop: compiled chunks of cycles, then logging, evaluation and checkpoints.

state <- init (or restore the latest checkpoint of --resume RUN_DIR)
repeat: state, metrics <- chunk(state)           # K cycles, one compiled program
        stop if a loss is not finite             # the last good checkpoint stays
        log rows; evaluate / checkpoint when due
"""

from __future__ import annotations

import dataclasses
import math
import shutil
import time
from pathlib import Path
from typing import Any

import jax
import numpy as np
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from arenax.curricula.common import TrainState
from arenax.eval.heldout import evaluate, summarize
from arenax.train.build import make_algorithm, make_policy, student_params
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
from arenax.train.parallel import make_chunk, make_mesh, place, state_specs

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


def _rows(metrics: dict[str, np.ndarray], first_cycle: int, counters: dict[str, int]) -> list:
    """One row per cycle; ``*_steps`` metrics are per-cycle counts, accumulated here."""
    n = len(next(iter(metrics.values())))
    steps = sorted(k for k in metrics if k.endswith("_steps"))
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
    validate(cfg, available_devices=len(jax.devices()))
    resume = resume if resume is not None else cfg.resume
    if resume is not None:
        run_dir = Path(resume)
        if not (run_dir / "config.json").exists():
            raise ConfigError(
                f"resume={str(run_dir)!r}: no config.json there (not a run directory)"
            )
        saved = load_config(run_dir / "config.json")
        diffs = resume_differences(saved, cfg)
        if cfg.ppo.lr_schedule == "linear" and saved.total_steps != cfg.total_steps:
            diffs.append("total_steps (sets the linear learning-rate schedule)")
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

    algorithm = make_algorithm(cfg)
    mesh = make_mesh(cfg.devices)
    ckpt = Checkpointer(run_dir, cfg.archive_every)
    base_key = jax.random.key(cfg.seed)
    counters = {"env_steps": 0, ("student_steps" if cfg.game == "maze" else "agent_steps"): 0}
    if resume is not None and ckpt.latest() is not None:
        abstract = jax.eval_shape(algorithm.init, base_key)
        state, record = ckpt.restore(abstract, mesh, specs=state_specs(algorithm))
        counters = {k: int(v) for k, v in record.items() if k.endswith("_steps")}
        start = int(record["cycle"])
        console.print(
            f"[bold]resumed[/] {run_dir} at cycle {start} ({counters['env_steps']:,} env steps)"
        )
    else:
        state = place(algorithm.init(base_key), mesh, state_specs(algorithm))
        start = 0
    logger = Logger(
        run_dir, to_dict(cfg), resume_cycle=start, tensorboard=cfg.tensorboard,
        wandb=cfg.wandb, wandb_project=cfg.wandb_project,
    )  # fmt: skip

    total_steps = cfg.total_steps
    compiled: dict[int, Any] = {}
    compile_s = 0.0
    all_rows: list[dict[str, Any]] = []
    steady_steps, steady_time = 0, 0.0
    policy = make_policy(cfg) if cfg.game == "maze" else None
    # progress-bar fields: label -> metric
    shown = getattr(algorithm, "progress", {"return": "return", "solved": "solved"})
    last_good = ckpt.latest()

    def get_chunk(n: int) -> Any:
        nonlocal compile_s
        if n not in compiled:
            t0 = time.perf_counter()
            fn = make_chunk(algorithm, mesh, cfg.n_envs, n)
            compiled[n] = fn.lower(state).compile()
            dt = time.perf_counter() - t0
            compile_s += dt
            console.print(f"compiled a chunk of {n} cycles in {dt:.1f} s")
        return compiled[n]

    progress = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        TextColumn("{task.completed:,.0f}/{task.total:,.0f} steps"),
        TextColumn("{task.fields[sps]} sps"),
        TextColumn("{task.fields[shown]}"),
        TimeElapsedColumn(),
        TextColumn("eta"),
        TimeRemainingColumn(),
        console=console,
        disable=not cfg.progress,
    )
    t_start = time.perf_counter()
    cycle = start
    try:
        with progress:
            task = progress.add_task(
                cfg.run_name, total=total_steps, completed=counters["env_steps"], sps="-",
                shown="",
            )  # fmt: skip
            while counters["env_steps"] < total_steps:
                remaining = total_steps - counters["env_steps"]
                n = min(cfg.chunk, math.ceil(remaining / cfg.steps_per_cycle))
                fn = get_chunk(n)
                t0 = time.perf_counter()
                state, metrics = fn(state)
                metrics = jax.device_get(metrics)
                dt = time.perf_counter() - t0
                # cycles without a student update report NaN losses on purpose
                updated = np.asarray(metrics.get("updated", np.ones(n))) > 0
                bad = [
                    k for k in metrics
                    if k.rsplit("/", 1)[-1] in ("loss", "value_loss", "pg_loss")
                    and not np.all(np.isfinite(metrics[k][updated]))
                ]  # fmt: skip
                if bad:
                    i = int(np.argmax(updated & ~np.isfinite(metrics[bad[0]])))
                    raise NonFiniteLoss(
                        f"non-finite {bad[0]} at cycle {cycle + i + 1}; stopped. The last good "
                        f"checkpoint (cycle {last_good}) in {run_dir} is intact: lower ppo.lr "
                        "or ppo.max_grad_norm and resume or restart"
                    )
                before = counters["env_steps"]
                rows = _rows(metrics, cycle, counters)
                sps = (counters["env_steps"] - before) / dt
                steady_steps += counters["env_steps"] - before
                steady_time += dt
                for r in rows:
                    r["wall_time"] = round(time.perf_counter() - t_start, 3)
                    r["sps"] = round(sps, 1)
                logger.log(rows)
                all_rows += rows
                cycle += n
                last = rows[-1]
                progress.update(
                    task, completed=counters["env_steps"], sps=f"{sps:,.0f}",
                    shown="  ".join(f"{k} {_fmt(last[m])}" for k, m in shown.items()),
                )  # fmt: skip
                if policy is not None and cfg.eval.every and cycle % cfg.eval.every == 0:
                    _evaluate(cfg, policy, state, cycle, counters, logger, console, progress)
                if cycle % cfg.checkpoint_every == 0 or counters["env_steps"] >= total_steps:
                    ckpt.save(cycle, state, {"cycle": cycle, **counters, "config": to_dict(cfg)})
                    last_good = cycle
    finally:
        ckpt.close()
        logger.close()
    return TrainResult(
        run_dir, state, all_rows, compile_s, steady_steps / steady_time if steady_time else math.nan
    )


def _fmt(x: float) -> str:
    return "-" if not math.isfinite(x) else f"{x:.3f}"


def _evaluate(
    cfg: TrainConfig, policy: Any, state: TrainState, cycle: int, counters: dict[str, int],
    logger: Logger, console: Console, progress: Progress,
) -> None:  # fmt: skip
    params = jax.device_get(student_params(cfg, state))
    key = jax.random.fold_in(jax.random.key(cfg.seed ^ 0x5EED), cycle)
    results = evaluate(
        policy, params, cfg.eval.suite, cfg.eval.episodes, key, cfg.eval.greedy,
        cfg.env.view_size, cfg.env.normalize_obs,
    )  # fmt: skip
    rows = [{"cycle": cycle, **counters, **dataclasses.asdict(r)} for r in results]
    summary = summarize(results)
    logger.log_eval(rows, summary)
    progress.console.print(
        f"eval @ {counters['env_steps']:,} steps: solved {summary['eval/solved']:.3f}, "
        f"return {summary['eval/return']:.3f} ({cfg.eval.suite}, {cfg.eval.episodes} episodes/maze)"
    )
