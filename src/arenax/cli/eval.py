"""`arenax eval`: a run's checkpoint through its family's evaluation (table + CSV)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

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
from arenax.options import SEED, UNIT, AtLeast, IntIn, OrNone, Problem, check


@dataclasses.dataclass(frozen=True)
class EvalArgs:
    """Evaluate a run's checkpoint with its family's evaluation: a maze student on held-out
    mazes, Tag teams against trained, random and scripted opponents, a one-team game on its
    held-out levels (table + CSV, optional GIFs)."""

    run_dir: tyro.conf.Positional[Path]
    """The run directory (holds config.json and checkpoints/)."""
    suite: str = ""
    """Held-out levels or suites, comma-separated (`arenax list`; default: the family's —
    every held-out maze; Tag: starts of the run's own generator)."""
    opponents: tuple[Literal["trained", "random", "scripted"], ...] = (
        "trained",
        "random",
        "scripted",
    )
    """Games of several teams: the drivers the trained teams meet."""
    coplayers: tuple[Path, ...] = ()
    """Games of several teams: other runs of the same game whose latest policies the
    trained teams also meet (cross-play; each named by its folder)."""
    snapshots: bool = False
    """Co-player runs (population, maestro): the trained teams also meet each snapshot of
    the run's own co-player population (past policies of the co-player team)."""
    episodes: Annotated[int, IntIn(1, 100_000)] = 100
    """Episodes per level, or per matchup (1 to 100,000)."""
    greedy: bool = False
    """Greedy (argmax) actions instead of sampling."""
    seed: Annotated[int, SEED] = 0
    """PRNG seed of the evaluation."""
    checkpoint: Annotated[int | None, OrNone(AtLeast(0))] = None
    """Cycle of the checkpoint to load (default: the latest)."""
    out: Path | None = None
    """CSV to write (default: `RUN_DIR/eval_<name>.csv`)."""
    gif_dir: Path | None = None
    """Also write one episode GIF per level (or matchup) into this folder."""
    cvar_alpha: Annotated[float, UNIT] = 0.0
    """Also the success rate on the worst alpha fraction (CVaR) of --cvar-levels levels
    drawn from the run's training distribution (0: off): the worst levels are chosen on
    one evaluation and measured on a second, independent one (the SFL paper's method)."""
    cvar_levels: Annotated[int, IntIn(1, 1_000_000)] = 1000
    """Levels of the robustness evaluation (the SFL paper: 10,000 for JaxNav, 1,000 for
    the maze)."""
    cvar_episodes: Annotated[int, IntIn(1, 1000)] = 4
    """Episodes per level in each of the two evaluations (the SFL paper: 10)."""
    cvar_solvable: bool = True
    """Only solvable levels (the maze: a path from the agent to the goal exists; Tag
    arenas are not filtered: an unreachable runner is an outcome of the game)."""

    def problems(self) -> Iterator[Problem]:
        yield from run_problems(self.run_dir)
        cfg = run_config(self.run_dir) if (Path(self.run_dir) / "config.json").is_file() else None
        if cfg is not None and self.suite:
            family = cfg.family
            if family.heldout is None:
                yield Problem("suite", self.suite, f"family {family.name!r} has no held-out levels")
            else:
                try:
                    family.heldout(cfg.game(), self.suite)
                except ValueError as exc:
                    yield Problem("suite", self.suite, str(exc))
        if self.snapshots and cfg is not None and not hasattr(cfg.curriculum, "coplayer_team"):
            yield Problem(
                "snapshots",
                True,
                f"curriculum {cfg.curriculum.KIND!r} keeps no population of co-players (population, maestro)",
            )
        for run in self.coplayers:
            yield from one_seed_problems(run, "coplayers")
            yield from run_problems(run, "coplayers")
        yield from file_problem(self.out, "out", (".csv",))
        yield from dir_problem(self.gif_dir, "gif_dir")
        if self.out is None and (Path(self.run_dir) / "config.json").is_file():
            yield from dir_problem(self.run_dir, "run_dir")


def _eval_one(args: EvalArgs) -> Any:
    from arenax.eval.report import evaluate_run

    return evaluate_run(
        args.run_dir,
        args.suite,
        args.episodes,
        args.greedy,
        args.seed,
        args.checkpoint,
        args.out,
        args.gif_dir,
        console,
        tuple(args.opponents),
        args.cvar_alpha,
        args.cvar_levels,
        args.cvar_episodes,
        args.cvar_solvable,
        args.coplayers,
        args.snapshots,
    )


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
    if not seeds:
        _eval_one(args)
        return
    summaries, cycles = [], {}
    for d in seeds:
        console.rule(f"{Path(args.run_dir).name}: {d.name}")
        out = args.out.with_stem(f"{args.out.stem}-{d.name}") if args.out else None
        gifs = args.gif_dir / d.name if args.gif_dir else None
        report = _eval_one(dataclasses.replace(args, run_dir=d, out=out, gif_dir=gifs))
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
