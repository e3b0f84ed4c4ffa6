"""The small commands: `arenax plot`, `arenax list`, `arenax bench`."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Annotated

import tyro
from rich.table import Table

from arenax.cli.common import console, dir_problem, parse, run_problems
from arenax.options import AtLeast, Problem, check


@dataclasses.dataclass(frozen=True)
class PlotArgs:
    """Write learning-curve PNGs of a run (`RUN_DIR/plots` by default)."""

    run_dir: tyro.conf.Positional[Path]
    """The run directory."""
    out: Path | None = None
    """Folder for the PNGs (default: `RUN_DIR/plots`)."""
    window: Annotated[int, AtLeast(0)] = 0
    """Moving-average window in cycles (0: about 1/50 of the run)."""
    arena_metric: str = ""
    """MAESTRO's `pairs.png`: the arena metric of its co-player × arena heatmap (a
    `level/<metric>` the run logs; default: `coverage` where logged)."""

    def problems(self) -> Iterator[Problem]:
        yield from run_problems(self.run_dir)
        run = Path(self.run_dir)
        if not (run / "metrics.csv").is_file() and not list(run.glob("seed*/metrics.csv")):
            yield Problem("run_dir", str(self.run_dir), "has no metrics.csv yet (nothing to plot)")
        yield from dir_problem(self.out or Path(self.run_dir) / "plots", "out")
        if self.arena_metric:  # before any picture is drawn
            from arenax.eval.pairs import read_pairs

            for d in [run, *sorted(run.glob("seed*"))]:
                pairs = read_pairs(d) if (d / "pairs.jsonl").is_file() else None
                if pairs is not None and f"level/{self.arena_metric}" not in pairs:
                    known = [k.removeprefix("level/") for k in pairs if k.startswith("level/")]
                    yield Problem("arena_metric", self.arena_metric,
                                  f"not an arena metric of {d}/pairs.jsonl: {', '.join(known)}")  # fmt: skip
                    return


def plot_command(argv: Sequence[str]) -> None:
    """Write a run's learning curves as PNGs."""
    from arenax.eval.plots import plot_run

    args: PlotArgs = parse(PlotArgs, argv, "arenax plot")
    check(args)
    for p in plot_run(args.run_dir, args.out, args.window, args.arena_metric):
        console.print(f"wrote {p}")


@dataclasses.dataclass(frozen=True)
class ListArgs:
    """List registered environments, generators, mutators, held-out suites, curricula, level
    scores, learners and presets."""


def list_command(argv: Sequence[str]) -> None:
    """List the registries and the presets."""
    import arenax
    from arenax.training.presets import all_presets

    parse(ListArgs, argv, "arenax list")
    table = Table(title="arenax registry")
    table.add_column("kind")
    table.add_column("names")
    for name in arenax.list_envs():
        table.add_row(f"environment {name}", arenax.registry.family(name).summary)
    table.add_row("generators", ", ".join(arenax.list_generators()))
    table.add_row("mutators", ", ".join(arenax.list_mutators()))
    for family, suites in arenax.registry.family_suites().items():
        for name, levels in suites.items():
            label = name if name.startswith(f"{family}/") else f"{name} ({family})"
            table.add_row(f"suite {label}", ", ".join(levels))
    for name, levels in arenax.registry.USER_SUITES.items():
        table.add_row(f"suite {name}", ", ".join(levels))
    from arenax.curricula.registry import CURRICULA, SCORES

    for kind, options in CURRICULA.items():
        table.add_row(f"curriculum {kind}", options.SUMMARY)
    for name, score in SCORES.items():
        table.add_row(f"level score {name}", score.summary)
    from arenax.cli.train import _learner_summary
    from arenax.rl.learners import LEARNERS

    for kind, options in LEARNERS.items():
        how = "off-policy" if options.off_policy else "on-policy"
        table.add_row(f"learner {kind}", f"({how}) {_learner_summary(options)}")
    table.add_row("presets", ", ".join(all_presets()))
    console.print(table)


def bench_command(argv: Sequence[str]) -> None:
    """Measure a family's env throughput (compile time apart from steady-state steps/s)."""
    from arenax.benchmarking import EnvBenchArgs, env_throughput

    args: EnvBenchArgs = parse(EnvBenchArgs, argv, "arenax bench")
    check(args)
    env_throughput(args, console)
