"""Preparing a run before anything compiles (its `Program` checked its options): what it
asks of this process (devices, packages, memory), the run directory made (new or
overwritten) or reopened (resume: what may change, the budget left) and locked."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import jax

from arenax.options import ConfigError
from arenax.training import distributed
from arenax.training.config import TrainConfig
from arenax.training.program import Program
from arenax.training.rundir import RunLock, make_new_run_dir
from arenax.training.saved import load_config, resume_differences, save_config


def check_extras(cfg: TrainConfig) -> None:
    """Optional packages the run asks for, before anything is written."""
    if cfg.wandb:
        try:
            import wandb  # noqa: F401
        except ImportError:
            raise ConfigError(
                "wandb=True: Weights & Biases is not installed (pip install wandb), or pass --no-wandb"
            ) from None


def load_saved_config(run_dir: Path) -> TrainConfig:
    """The config a run directory was trained with (a one-line `ConfigError` when it
    is missing, not JSON, or not a config of this arenax)."""
    path = Path(run_dir) / "config.json"
    if not path.is_file():
        raise ConfigError(f"resume={str(run_dir)!r}: no config.json there (not a run directory)")
    try:
        return load_config(path)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}: not valid JSON ({exc.msg}, line {exc.lineno})") from None
    except (ConfigError, TypeError, KeyError, AttributeError) as exc:
        raise ConfigError(f"{path}: not a config of this arenax ({exc})") from None


def prepare_run_dir(program: Program, resume: Path | None) -> tuple[Program, Path, RunLock]:
    """Check what the config (validated when `program` was built) asks of this process
    (its devices, optional packages, memory), then make and lock its run directory: a new
    one, an overwritten one, or (with `resume`) the existing run, whose saved config the
    config may change only in budget, logging and outputs. A new run's `config.json` is
    written now; a resumed run's only once its checkpoint has been restored (`start_run`).
    Returns the program to run (its config naming the folder), the folder and its lock
    (`None` on processes other than 0 of a multi-process run, which only read the
    folder)."""
    cfg = program.cfg
    check_process_devices(cfg)
    check_extras(cfg)
    program.check_memory()
    if resume is None:

        def new_run() -> RunLock:
            lock = make_new_run_dir(cfg.run_dir, cfg.overwrite)
            save_config(cfg, cfg.run_dir / "config.json")
            return lock

        return program, cfg.run_dir, distributed.on_main(new_run, "create the run directory")
    run_dir = Path(resume)
    saved = load_saved_config(run_dir)
    diffs = resume_differences(saved, cfg)
    budget = ("total_steps", "total_updates")
    changed = any(getattr(saved, f) != getattr(cfg, f) for f in budget)
    linear = any(getattr(t.learner, "lr_schedule", "") == "linear" for t in cfg.teams.values())
    if linear and changed:
        diffs.append("the budget (it sets the linear learning-rate schedule)")
    if diffs:
        raise ConfigError(
            f"resume={str(run_dir)!r}: config differs from the saved run in {'; '.join(diffs)}"
        )
    cfg = dataclasses.replace(cfg, out_dir=run_dir.parent, name=run_dir.name)
    lock = distributed.on_main(lambda: RunLock.acquire(run_dir), "lock the run")
    return program.with_config(cfg), run_dir, lock


def check_process_devices(cfg: TrainConfig) -> None:
    """A multi-process run's mesh spans every device of every process."""
    if distributed.multi_process() and cfg.devices != jax.device_count():
        raise ConfigError(
            f"devices={cfg.devices}: a multi-process run uses every device of its "
            f"{jax.process_count()} processes; pass --devices {jax.device_count()} (or leave "
            "the default)"
        )
