"""A run in progress: its seeds (`Member`: config, checkpoints, logs, counters), how it
starts (new or restored from the latest good checkpoint), and when it checkpoints (the
budget's rules are `TrainConfig`'s: `spent`, `cycles_left`, `budget_problems`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
from rich.console import Console
from rich.progress import Progress

from arenax.curricula.common import Curriculum, TrainState
from arenax.options import ConfigError
from arenax.training import distributed
from arenax.training.checkpoint import Checkpointer, CheckpointError
from arenax.training.config import TrainConfig
from arenax.training.logging import Logger
from arenax.training.parallel import place, stacked_specs
from arenax.training.program import Program
from arenax.training.rundir import RunLock
from arenax.training.saved import save_config, to_dict


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
    program: Program
    console: Console
    state: TrainState
    cycle: int
    members: list[Member]
    #: the seeds' folders' locks (several seeds; the run's own lock is held by train())
    locks: list[RunLock] = dataclasses.field(default_factory=list)
    progress: Progress | None = None

    @property
    def algorithm(self) -> Curriculum:
        """The run's curriculum (its program's)."""
        return self.program.curriculum

    def print(self, text: str) -> None:
        (self.progress.console if self.progress is not None else self.console).print(text)

    def member_state(self, i: int) -> TrainState:
        """Seed `i`'s train state (the state itself for one seed)."""
        if len(self.members) == 1:
            return self.state
        return _member(self.state, jnp.int32(i))


@jax.jit
def _member(state: TrainState, i: jax.Array) -> TrainState:
    """Row `i` of every leaf of a stack of seeds' states: one program for the whole state
    (compiled once per run; op by op, each leaf's indexing would compile its own)."""
    return jax.tree.map(lambda x: x[i], state)


def start_run(
    program: Program,
    run_dir: Path,
    resume: bool,
    console: Console,
    checkpoint: int | None = None,
) -> Run:
    """A fresh train state of `program`, or (`resume`) the latest readable checkpoint's
    (or `checkpoint`'s) with its counters. With several seeds, each seed's folder
    `RUN/seed<s>` is a run of its own (config, lock, logs, checkpoints), and their states
    are stacked."""
    cfg = program.cfg
    configs = cfg.member_runs()
    group = len(configs) > 1
    warn = lambda text: console.print(f"[yellow]warning:[/] {text}")  # noqa: E731
    # the locks are held (by process 0, the one writer of a multi-process run)
    writer = distributed.is_main()
    locks: list[RunLock] = []
    ckpts: list[Checkpointer] = []
    try:
        for c in configs:
            if group:
                if writer:
                    c.run_dir.mkdir(parents=True, exist_ok=True)
                    locks.append(RunLock.acquire(c.run_dir))
                distributed.barrier("seed-folders")
            # several seeds keep two checkpoints: one complete set survives a crash mid-save
            ckpts.append(Checkpointer(c.run_dir, cfg.archive_every, writer, keep=1 + group))
        restored = None
        if resume and (any(k.all_steps() for k in ckpts) or checkpoint is not None):
            restored = restore_members(program, ckpts, checkpoint, warn)
        if restored is not None:
            state, records, start = restored
            counters = [{k: int(v) for k, v in r.items() if is_counter(k)} for r in records]
            for c, n, r in zip(configs, counters, records, strict=True):
                for problem in c.budget_problems(n, int(r["cycle"])):
                    raise ConfigError(problem.message())
            steps = sum(n["env_steps"] for n in counters)
            console.print(f"[bold]resumed[/] {run_dir} at cycle {start} ({steps:,} env steps)")
        else:
            state = program.init()
            start, counters = 0, [{"env_steps": 0} for _ in configs]
    except BaseException:
        for k in ckpts:
            k.close()
        for lock in locks:
            lock.release()
        raise
    if resume and all(cfg.spent(n) for n in counters):  # spent: change nothing
        for k in ckpts:
            k.close()
        for lock in locks:
            lock.release()
        raise NothingToDo(state)
    if writer and cfg.sweep and cfg.seeds > 1:  # a point's folder: its seeds as --seeds
        for point in cfg.sweep_points():
            save_config(point, point.run_dir / "config.json")
    members = []
    for c, k, n in zip(configs, ckpts, counters, strict=True):
        if not writer:  # process 0 writes the logs
            logger: Logger | NullLogger = NullLogger()
        else:
            if resume or group:  # (a resumed run: now that the restore worked)
                save_config(c, c.run_dir / "config.json")
            logger = Logger(
                c.run_dir,
                to_dict(c),
                resume_cycle=start,
                tensorboard=c.tensorboard,
                wandb=c.wandb,
                wandb_project=c.wandb_project,
                warn=warn,
            )
        done = cfg.spent(n)
        members.append(Member(c, k, logger, n, start if resume else None, not done, start))
    return Run(cfg, run_dir, program, console, state, start, members, locks)


def restore_members(
    program: Program,
    ckpts: list[Checkpointer],
    checkpoint: int | None,
    warn: Callable[[str], None],
) -> tuple[TrainState, list[dict[str, Any]], int] | None:
    """`(state, records, cycle)` of a run's checkpoint `checkpoint` or newest readable
    one; several runs (seeds, sweep points): the newest checkpoint that every one has and
    reads, their states stacked (an unreadable one falls back to the next older common
    one, as a single run falls back), or None when a run has none at all: the run stopped
    while its first checkpoints were written, and starts over (said in one line; the
    checkpoints that were written are set aside)."""
    cfg, mesh, specs = program.cfg, program.mesh, program.specs
    abstract = program.abstract_state()
    if len(ckpts) == 1:
        state, record = ckpts[0].restore_good(abstract, mesh, specs, checkpoint, warn)
        return state, [record], int(record["cycle"])
    root = Path(cfg.run_dir)
    unit = "seed" if not cfg.sweep else "sweep point"

    def name(k: Checkpointer) -> str:
        return (
            str(k.run_dir.relative_to(root)) if k.run_dir.is_relative_to(root) else str(k.run_dir)
        )

    every = [k.all_steps() for k in ckpts]
    has = "; ".join(
        f"{name(k)}: {', '.join(map(str, st)) or 'none'}"
        for k, st in zip(ckpts, every, strict=True)
    )
    common = sorted(set.intersection(*map(set, every)), reverse=True)
    if checkpoint is None and not common:
        if not all(every):  # a run without any: stopped while the first ones were written
            warn(
                f"{cfg.run_dir}: not every {unit} has a complete checkpoint ({has}): it stopped "
                "while writing its first checkpoints; starting over from cycle 0 (those "
                "written are set aside in each run's rolled_back/)"
            )
            for k, st in zip(ckpts, every, strict=True):
                k.set_aside(st, "rolled_back")
            return None
        raise CheckpointError(
            f"{cfg.run_dir}: no checkpoint that every {unit} has ({has}; a {unit} resumed on "
            f"its own went its own way): resume each {unit}'s folder on its own "
            f"(arenax resume {ckpts[0].run_dir} ...)"
        )
    bad: list[list[int]] = [[] for _ in ckpts]
    for step in [checkpoint] if checkpoint is not None else common:
        states, records = [], []
        try:
            for i, k in enumerate(ckpts):
                try:
                    state, record = k.restore_good(abstract, mesh, specs, step, warn,
                                                   unreadable=bad[i])  # fmt: skip
                except CheckpointError:
                    bad[i].append(step)
                    raise
                states.append(state)
                records.append(record)
        except CheckpointError:
            if checkpoint is not None:
                raise
            continue
        stacked = place(
            jax.tree.map(lambda *xs: jnp.stack(xs), *states), mesh, stacked_specs(specs)
        )
        return stacked, records, step
    raise CheckpointError(
        f"{cfg.run_dir}: no checkpoint that every {unit} has reads ({has}; unreadable: "
        + "; ".join(
            f"{name(k)}: {', '.join(map(str, b))}" for k, b in zip(ckpts, bad, strict=True) if b
        )
        + ")"
    )


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


def is_counter(metric: str) -> bool:
    """Per-cycle counts that rows accumulate: `*_steps` and `updates`."""
    return metric.endswith("_steps") or metric == "updates"
