"""`arenax eval`: a run's checkpoint through its family's evaluation (table + CSV)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import tyro

from arenax.cli.common import (
    console,
    dir_problem,
    file_problem,
    one_seed_problems,
    parse,
    run_config,
    run_problems,
)
from arenax.eval.exploit import ExploitOptions
from arenax.eval.report import EvaluationOptions
from arenax.options import Problem, check


@dataclasses.dataclass(frozen=True)
class EvalArgs:
    """Evaluate a run's checkpoint with its family's evaluation: a maze student on held-out
    mazes, Tag teams against trained, random and scripted opponents, a one-team game on its
    held-out levels (table + CSV, optional GIFs)."""

    run_dir: tyro.conf.Positional[Path]
    """The run directory (holds config.json and checkpoints/)."""
    options: Annotated[EvaluationOptions, tyro.conf.arg(name="")] = EvaluationOptions()
    """How it is evaluated (`arenax.eval.report.EvaluationOptions`)."""

    def option_prefix(self, field: str) -> str:
        """The evaluation's options are top-level ones (`--suite`)."""
        return "" if field == "options" else field

    def problems(self) -> Iterator[Problem]:
        o = self.options
        yield from run_problems(self.run_dir)
        cfg = run_config(self.run_dir) if (Path(self.run_dir) / "config.json").is_file() else None
        if cfg is not None and o.suite:
            family = cfg.family
            if family.heldout is None:
                yield Problem("suite", o.suite, f"family {family.name!r} has no held-out levels")
            else:
                try:
                    family.heldout(cfg.game(), o.suite)
                except ValueError as exc:
                    yield Problem("suite", o.suite, str(exc))
        if o.snapshots and cfg is not None and not hasattr(cfg.curriculum, "coplayer_team"):
            yield Problem(
                "snapshots",
                True,
                f"curriculum {cfg.curriculum.KIND!r} keeps no population of co-players (population, maestro)",
            )
        for run in o.coplayers:
            if not o.cross_play:  # a round robin takes a run of several seeds as its seeds
                yield from one_seed_problems(run, "coplayers")
            yield from run_problems(run, "coplayers")
        if o.cross_play:
            yield from _cross_play_problems(self.run_dir, o)
        yield from file_problem(o.out, "out", (".csv",))
        yield from dir_problem(o.gif_dir, "gif_dir")
        if o.out is None and (Path(self.run_dir) / "config.json").is_file():
            yield from dir_problem(self.run_dir, "run_dir")


def _cross_play_problems(run_dir: Path, o: EvaluationOptions) -> Iterator[Problem]:
    from arenax.eval.report import seed_runs

    runs = [run_dir, *o.coplayers]
    members = sum(max(1, len(seed_runs(r))) for r in runs)
    if members < 2:
        yield Problem(
            "cross_play", True,
            "a round robin needs two runs or more: name others with --coplayers (a run of "
            "several seeds counts each seed)",
        )  # fmt: skip
    for field in ("snapshots", "gif_dir"):
        if getattr(o, field):
            yield Problem(field, getattr(o, field), "not with --cross-play")


def _eval_one(args: EvalArgs) -> Any:
    from arenax.eval.report import evaluate_run

    return evaluate_run(args.run_dir, console=console, options=args.options)


# how the over-seeds line names a family's summary value (others: the key without "eval/")
SUMMARY_LABELS = {
    "eval/solved": "held-out solved rate (mean over levels)",
    "eval/return": "held-out return (mean over levels)",
}


def eval_command(argv: Sequence[str]) -> None:
    """Evaluate a run (each seed of a run of several, then the mean over seeds of every
    summary value of the family's evaluation)."""
    from arenax.eval.plots import seed_dirs
    from arenax.stats import mean_ci

    args: EvalArgs = parse(EvalArgs, argv, "arenax eval")
    check(args)
    seeds = seed_dirs(args.run_dir)
    if not seeds or args.options.cross_play:  # a round robin takes a stack's seeds at once
        _eval_one(args)
        return
    summaries, cycles = [], {}
    for d in seeds:
        console.rule(f"{Path(args.run_dir).name}: {d.name}")
        o = args.options
        out = o.out.with_stem(f"{o.out.stem}-{d.name}") if o.out else None
        gifs = o.gif_dir / d.name if o.gif_dir else None
        each = dataclasses.replace(o, out=out, gif_dir=gifs)
        report = _eval_one(dataclasses.replace(args, run_dir=d, options=each))
        summaries.append(report.summary)
        cycles[d.name] = report.cycle
    if len(set(cycles.values())) > 1:
        at = ", ".join(f"{name} @ cycle {c}" for name, c in cycles.items())
        console.print(
            f"note: the evaluated checkpoints come from different lengths of training ({at}): "
            "the mean over seeds below mixes them"
        )
    for key in summaries[0]:
        values = [s[key] for s in summaries if key in s]
        m, lo, hi = mean_ci(np.asarray(values))
        label = SUMMARY_LABELS.get(key, key.removeprefix("eval/"))
        console.print(
            f"over {len(values)} seeds: {label} {m:.3f} [{lo:.3f}, {hi:.3f}] "
            "(95% interval across seeds)"
        )


@dataclasses.dataclass(frozen=True)
class ExploitArgs:
    """Exploitability: train a fresh policy of one team (the exploiter) for a fixed budget
    against a run's other team, frozen at its trained parameters, then measure on held-out
    arenas how much it takes from the frozen team against what the run's own partner
    takes (`arenax.eval.exploit`)."""

    run_dir: tyro.conf.Positional[Path]
    """The run directory (one run: a seed's folder of a run of several)."""
    options: Annotated[ExploitOptions, tyro.conf.arg(name="")] = ExploitOptions()
    """How the exploiter trains and is measured (`arenax.eval.exploit.ExploitOptions`)."""

    def option_prefix(self, field: str) -> str:
        return "" if field == "options" else field

    def problems(self) -> Iterator[Problem]:
        from arenax.eval.exploit import run_problems as exploit_problems

        yield from run_problems(self.run_dir)
        yield from one_seed_problems(self.run_dir)
        cfg = run_config(self.run_dir) if (Path(self.run_dir) / "config.json").is_file() else None
        if cfg is not None:
            team = self.options.team or tuple(cfg.teams)[-1]
            yield from exploit_problems(cfg, team, Path(self.run_dir))
            out = Path(self.run_dir) / f"exploit-{team}"
            if out.exists() and not self.options.overwrite:
                yield Problem("run_dir", str(self.run_dir), f"{out} exists (an earlier exploiter): pass --overwrite to replace it")  # fmt: skip


def exploit_command(argv: Sequence[str]) -> None:
    """Train an exploiter against a run's frozen team and report its gains."""
    from arenax.eval.exploit import exploit

    args: ExploitArgs = parse(ExploitArgs, argv, "arenax exploit")
    check(args)
    exploit(args.run_dir, args.options, console)
