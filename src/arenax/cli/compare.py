"""`arenax compare RUN…`: runs grouped by method, compared with the field's statistics
(`arenax.eval.compare`); tables on the terminal, Markdown, CSVs and pictures in `--out`."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Annotated

import tyro
from rich.table import Table

from arenax.cli.common import console, dir_problem, parse
from arenax.eval.compare import CompareOptions, Comparison, compare
from arenax.options import Problem, check


@dataclasses.dataclass(frozen=True)
class CompareArgs:
    """Compare runs of one game on their held-out evaluations: per level and aggregated
    (mean, interquartile mean, CVaR of the worst levels, each with a 95% stratified
    bootstrap interval), the probability of improvement between methods, peak against
    final, performance profiles and learning curves (Agarwal et al. 2021). A run of several
    seeds is one method; runs of one seed with equal configs (but for the seed) are one;
    LABEL=RUN names a method (the same label twice: one method)."""

    runs: Annotated[tyro.conf.Positional[tuple[str, ...]], tyro.conf.arg(metavar="RUN [RUN ...]")]
    """Run folders (RUN or LABEL=RUN)."""
    options: Annotated[CompareOptions, tyro.conf.arg(name="")] = CompareOptions()
    """How they are compared (`arenax.eval.compare.CompareOptions`)."""
    out: Path = Path("outputs/compare")
    """Folder for compare.md, the CSVs and the pictures."""

    def option_prefix(self, field: str) -> str:
        """The comparison's options are top-level ones (`--metric`)."""
        return "" if field == "options" else field

    def problems(self) -> Iterator[Problem]:
        yield from dir_problem(self.out, "out")


def _table(title: str, rows: list[dict[str, str]]) -> Table:
    table = Table(title=title, title_justify="left")
    for i, head in enumerate(rows[0]):
        table.add_column(head, justify="left" if i == 0 else "right")
    for r in rows:
        table.add_row(*r.values())
    return table


def show(c: Comparison) -> None:
    """The comparison's tables on the terminal (the per-task one up to 30 tasks)."""
    o = c.options
    console.print(f"{c.metric} on {len(c.tasks)} held-out task(s) of {c.family}; 95% intervals "
                  f"from {o.reps} stratified bootstrap resamples of the runs")  # fmt: skip
    for m in c.methods:
        differs = f": {m.differs}" if m.differs else ""
        console.print(f"  {m.label}: {len(m.runs)} run(s){differs}", highlight=False)
    console.print(_table("aggregate", c.aggregate_cells()))
    if c.improvement:
        console.print(_table("probability of improvement P(row > column)", c.improvement_cells()))
    if len(c.tasks) <= 30:
        console.print(_table("per task: mean over runs", c.level_cells()))
    else:
        console.print(f"({len(c.tasks)} tasks: the per-task table is in compare_levels.csv)")
    for note in c.notes:
        console.print(f"note: {note}", highlight=False)


def compare_command(argv: Sequence[str]) -> None:
    """Compare runs with aggregate statistics and intervals."""
    args: CompareArgs = parse(CompareArgs, argv, "arenax compare")
    check(args)
    comparison = compare(args.runs, args.options)
    show(comparison)
    for path in comparison.write(args.out):
        console.print(f"wrote {path}")
