"""`arenax compare RUN…`: runs grouped by method, their held-out scores per level and
aggregated with the statistics of Agarwal et al. (2021): mean, interquartile mean and the
CVaR of the worst levels with 95% stratified-bootstrap intervals, the probability of
improvement between methods, the peak against the final evaluation, performance
profiles and learning curves with intervals (`arenax.eval.aggregate`).

A run's scores are its family's evaluation rows: the periodic ones training wrote
(`eval.jsonl`, `--eval.every N`), or, with `eval_csv`, what `arenax eval RUN` wrote
(`eval_<NAME>.csv`, usually more episodes) for the final scores. A task is one row of
that table (the maze: a held-out maze; Tag: a matchup on an arena; named by the row's
text columns), a score one of its columns with an interval (`solved`, `ret`; Tag's
`tagged`, `any_tag`, …). Methods: a run of several seeds (`--seeds N`) is one; runs of one
seed whose configs are equal but for the seed and where they write are one; `LABEL=RUN`
names a method (runs given the same label are one). Reads files only: no JAX.
"""

from __future__ import annotations

import csv
import dataclasses
import json
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any

import numpy as np

from arenax.eval import aggregate as A
from arenax.options import UNIT, ConfigError, IntIn, Problem, check

#: a run's bookkeeping, not its method: where it writes, how it reports, its seed and
#: launch (configs that differ only here are runs of one method)
BOOKKEEPING = re.compile(
    r"^(seed|seeds|name|out_dir|overwrite|resume|tensorboard|wandb|wandb_project|progress|"
    r"devices|chunk|checkpoint_every|archive_every|time_limit|launch\..*|eval\..*)$"
)
#: the counters every evaluation row carries (not a task's name, not a score)
COUNTERS = ("cycle", "env_steps", "student_steps", "updates")


@dataclasses.dataclass(frozen=True)
class CompareOptions:
    """How `arenax compare` (and `arenax.compare`) compares runs."""

    metric: str | None = None
    """The score compared: a column of the evaluation that has an interval (the maze:
    solved, ret; Tag: tagged, any_tag, first_tag, return_tagger, return_runner; default:
    the evaluation's first)."""
    eval_csv: str | None = None
    """Final scores from `RUN/eval_<NAME>.csv` (what `arenax eval RUN` wrote, e.g.
    `SixteenRooms+FourRooms`) instead of each run's last periodic evaluation; learning
    curves and peaks still come from the periodic ones (`eval.jsonl`) where there are."""
    cvar_alpha: Annotated[float, UNIT] = 0.25
    """The CVaR's fraction of levels: the mean score of the worst `ceil(alpha · levels)`
    levels, cross-fitted (`arenax.eval.aggregate.cvar_of_levels`: chosen on half of a
    method's runs, scored on the other half)."""
    reps: Annotated[int, IntIn(100, 1_000_000)] = 2000
    """Bootstrap resamples per interval."""
    seed: Annotated[int, IntIn(0, 2**32 - 1)] = 0
    """Seed of the bootstrap's draws."""

    def problems(self) -> Iterator[Problem]:
        if self.cvar_alpha <= 0:
            yield Problem("cvar_alpha", self.cvar_alpha, "must be in (0, 1]")


@dataclasses.dataclass(frozen=True)
class RunScores:
    """One run's evaluation: its final scores per task and its periodic ones."""

    path: Path
    family: str
    config: dict[str, Any]
    """The run's config, flattened (`teams.agent.learner.lr`)."""
    metrics: tuple[str, ...]
    final: dict[str, float]
    """task -> the final score"""
    env_steps: float
    updates: float
    curve: tuple[tuple[float, dict[str, float]], ...]
    """`(env steps, {task: score})` per periodic evaluation, in order."""


@dataclasses.dataclass(frozen=True)
class Method:
    """Runs compared as one method."""

    label: str
    runs: tuple[RunScores, ...]
    differs: str = ""
    """What sets its config apart from the other methods' (`key=value, …`)."""

    def scores(self, tasks: Sequence[str]) -> np.ndarray:
        """`(runs, tasks)` final scores."""
        return np.array([[r.final[t] for t in tasks] for r in self.runs], np.float64)


@dataclasses.dataclass(frozen=True)
class Comparison:
    """The comparison's tables (rows as dicts, the CSVs' lines) and what to say about it."""

    metric: str
    family: str
    tasks: tuple[str, ...]
    methods: tuple[Method, ...]
    levels: list[dict[str, Any]]
    """Per method and task: the mean over runs and its 95% interval."""
    aggregate: list[dict[str, Any]]
    """Per method: mean, IQM, CVaR with intervals; the budget; final and peak."""
    improvement: list[dict[str, Any]]
    """Per ordered pair of methods: P(x > y) with its interval."""
    notes: tuple[str, ...]
    options: CompareOptions

    def markdown(self) -> str:
        """Every table as Markdown, with what the figures are."""
        o = self.options
        lines = [
            f"# Comparison: {self.metric} on {len(self.tasks)} held-out task(s) ({self.family})",
            "",
            f"95% intervals: percentile, {o.reps} stratified bootstrap resamples of the runs "
            "(Agarwal et al. 2021); IQM: the mean of the middle half of runs × tasks; "
            f"CVaR: the mean of the worst {o.cvar_alpha:g} of the tasks, chosen on half of a "
            "method's runs and scored on the other half, both ways (chosen and scored on the "
            "same means it is biased low; a method of one run has only that form). Peak: each "
            "run's best "
            "periodic evaluation (biased up: the maximum of noisy evaluations).",
            "",
            "## Methods",
            "",
        ]
        for m in self.methods:
            where = ", ".join(str(r.path) for r in m.runs)
            lines.append(f"- **{m.label}**: {len(m.runs)} run(s) ({where})"
                         + (f"; differs in {m.differs}" if m.differs else ""))  # fmt: skip
        lines += ["", "## Aggregate", "", *_markdown_table(self.aggregate_cells())]
        if self.improvement:
            lines += ["", "## Probability of improvement P(row > column)", "",
                      *_markdown_table(self.improvement_cells())]  # fmt: skip
        lines += ["", "## Per task", "", *_markdown_table(self.level_cells())]
        if self.notes:
            lines += ["", *(f"- {n}" for n in self.notes)]
        return "\n".join(lines) + "\n"

    def aggregate_cells(self) -> list[dict[str, str]]:
        cell = _cell
        return [
            {
                "method": r["method"],
                "runs": str(r["runs"]),
                "env steps": f"{r['env_steps']:,.0f}",
                "updates": f"{r['updates']:,.0f}",
                "mean": cell(r, "mean"),
                "IQM": cell(r, "iqm"),
                f"CVaR {self.options.cvar_alpha:g}": cell(r, "cvar"),
                "final (periodic)": cell(r, "final"),
                "peak": cell(r, "peak"),
            }
            for r in self.aggregate
        ]

    def improvement_cells(self) -> list[dict[str, str]]:
        labels = [m.label for m in self.methods]
        by_pair = {(r["x"], r["y"]): r for r in self.improvement}
        return [
            {"P(row > column)": x,
             **{y: "–" if x == y else _cell(by_pair[x, y], "p") for y in labels}}
            for x in labels
        ]  # fmt: skip

    def level_cells(self) -> list[dict[str, str]]:
        by = {(r["method"], r["task"]): r for r in self.levels}
        return [
            {"task": t, **{m.label: _cell(by[m.label, t], "mean") for m in self.methods}}
            for t in self.tasks
        ]

    def write(self, out: Path) -> list[Path]:
        """`compare.md`, `compare_aggregate.csv`, `compare_levels.csv`,
        `compare_improvement.csv` (two methods or more) and the pictures
        (`compare_profile.png`, `compare_levels.png`, `compare_curves.png` where there
        are periodic evaluations) in `out`."""
        from arenax.eval.plots import comparison_curves, level_bars, performance_profiles

        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        written = [out / "compare.md"]
        written[0].write_text(self.markdown())
        tables = {"aggregate": self.aggregate, "levels": self.levels,
                  "improvement": self.improvement}  # fmt: skip
        for name, rows in tables.items():
            if rows:
                written.append(_write_csv(rows, out / f"compare_{name}.csv"))
        written.append(performance_profiles(self, out / "compare_profile.png"))
        written.append(level_bars(self, out / "compare_levels.png"))
        curves = comparison_curves(self, out / "compare_curves.png")
        return written + ([curves] if curves else [])


def _cell(row: Mapping[str, Any], key: str) -> str:
    if key not in row or row[key] is None or (isinstance(row[key], float) and math.isnan(row[key])):
        return "–"
    return f"{row[key]:.3f} [{row[f'{key}_lo']:.3f}, {row[f'{key}_hi']:.3f}]"


def _markdown_table(rows: list[dict[str, str]]) -> list[str]:
    if not rows:
        return []
    head = list(rows[0])
    return [
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
        *("| " + " | ".join(r[h] for h in head) + " |" for r in rows),
    ]


def _write_csv(rows: list[dict[str, Any]], path: Path) -> Path:
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return path


def _flatten(d: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, Mapping):
            out.update(_flatten(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def _number(v: Any) -> float | None:
    """A row's value as a number (CSV cells are text); None for text and flags."""
    if isinstance(v, bool) or v in ("True", "False"):
        return None
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def _task_and_scores(row: Mapping[str, Any]) -> tuple[str, dict[str, float]]:
    """`(task, {metric: score})` of one evaluation row: the task is its text columns
    joined by `/`, the metrics its numbers that have `_lo` and `_hi` beside them."""
    names = [str(v) for k, v in row.items() if k not in COUNTERS and _number(v) is None
             and not isinstance(v, bool) and v not in ("True", "False")]  # fmt: skip
    scores = {
        k: float(v)
        for k, v in row.items()
        if k not in COUNTERS and f"{k}_lo" in row and f"{k}_hi" in row and _number(v) is not None
    }
    return "/".join(names), scores


def read_run(path: Path, options: CompareOptions) -> RunScores:
    """One run folder's scores (`ConfigError` in one line where it has none)."""
    from arenax.training.logging import read_jsonl

    path = Path(path)
    if not (path / "config.json").is_file():
        raise ConfigError(f"{path}: not a run folder (no config.json)")
    config = json.loads((path / "config.json").read_text())
    family = str(config.get("env", {}).get("kind", "?"))
    periodic = read_jsonl(path / "eval.jsonl")
    by_cycle: dict[int, dict[str, dict[str, Any]]] = {}
    for row in periodic:  # (a resumed run may repeat a cycle's rows: the last ones count)
        by_cycle.setdefault(int(row["cycle"]), {})[_task_and_scores(row)[0]] = row
    curve_rows = [list(by_cycle[c].values()) for c in sorted(by_cycle)]
    if options.eval_csv is not None:
        csv_path = path / f"eval_{options.eval_csv}.csv"
        if not csv_path.is_file():
            there = sorted(p.name for p in path.glob("eval_*.csv"))
            raise ConfigError(
                f"{path} has no {csv_path.name} (arenax eval {path} writes it)"
                + (f"; it has {', '.join(there)}" if there else "")
            )
        with csv_path.open(newline="") as f:
            final_rows = list(csv.DictReader(f))
        steps = float(curve_rows[-1][0]["env_steps"]) if curve_rows else math.nan
        updates = float(curve_rows[-1][0].get("updates", math.nan)) if curve_rows else math.nan
    elif curve_rows:
        final_rows = curve_rows[-1]
        steps = float(final_rows[0]["env_steps"])
        updates = float(final_rows[0].get("updates", math.nan))
    else:
        raise ConfigError(
            f"{path} has no evaluation: train with --eval.every N (periodic evaluations), or "
            f"run arenax eval {path} and compare with --eval-csv NAME"
        )
    parsed = [_task_and_scores(r) for r in final_rows]
    metrics = tuple(parsed[0][1]) if parsed else ()
    metric = options.metric or (metrics[0] if metrics else "")
    if metric not in metrics:
        raise ConfigError(
            f"metric {metric!r}: not a score of {path}'s evaluation; its scores: "
            f"{', '.join(metrics) or 'none'}"
        )
    curve = tuple(
        (float(rows[0]["env_steps"]),
         {t: s[metric] for t, s in map(_task_and_scores, rows) if metric in s})
        for rows in curve_rows
    )  # fmt: skip
    return RunScores(
        path=path, family=family, config=_flatten(config), metrics=metrics,
        final={t: s[metric] for t, s in parsed}, env_steps=steps, updates=updates, curve=curve,
    )  # fmt: skip


def _members(path: Path) -> list[Path]:
    """A run folder's runs: its seeds' folders (`--seeds N`) or itself."""
    from arenax.eval.plots import seed_dirs

    return seed_dirs(path) or [path]


def _method_key(run: RunScores) -> str:
    return json.dumps(
        {k: v for k, v in run.config.items() if not BOOKKEEPING.match(k)}, sort_keys=True
    )


def _common_label(paths: Sequence[Path]) -> str:
    names = [p.name for p in paths]
    prefix = names[0]
    for name in names[1:]:  # the names' common start (character by character)
        while not name.startswith(prefix):
            prefix = prefix[:-1]
    stripped = re.sub(r"([-_.]?(s|seed)?\d*)$", "", prefix)
    return stripped or prefix or names[0]


def group_methods(specs: Sequence[str | Path], options: CompareOptions) -> list[Method]:
    """The methods of `RUN` / `LABEL=RUN` arguments (see the module docstring)."""
    from arenax.eval.plots import sweep_point_dirs

    labelled: dict[str, list[RunScores]] = {}
    stacks: list[tuple[str, list[RunScores]]] = []
    singles: dict[str, list[RunScores]] = {}
    seen: dict[Path, str] = {}
    for spec in specs:
        text = str(spec)
        label, _, where = text.rpartition("=") if "=" in text else ("", "", text)
        path = Path(where)
        if not path.exists():
            raise ConfigError(f"{path}: no such run folder")
        resolved = path.resolve()
        if resolved in seen:
            raise ConfigError(f"{path}: named twice ({seen[resolved]} and {text})")
        seen[resolved] = text
        points = sweep_point_dirs(path)
        if points:  # a sweep: each point a method (its seeds its runs)
            if label:
                raise ConfigError(
                    f"{text}: a sweep of {len(points)} points is one method per point; "
                    "name the sweep's folder without a label"
                )
            for point in points:
                stacks.append((point.name, [read_run(p, options) for p in _members(point)]))
            continue
        runs = [read_run(p, options) for p in _members(path)]
        if label:
            labelled.setdefault(label, []).extend(runs)
        elif len(runs) > 1:
            stacks.append((path.name, runs))
        else:
            singles.setdefault(_method_key(runs[0]), []).extend(runs)
    groups = [*labelled.items(), *stacks]
    groups += [(_common_label([r.path for r in runs]), runs) for runs in singles.values()]
    taken: dict[str, int] = {}
    methods = []
    for label, runs in groups:
        taken[label] = taken.get(label, 0) + 1
        name = label if taken[label] == 1 else f"{label} ({taken[label]})"
        methods.append(Method(name, tuple(runs)))
    return _with_differences(methods)


def _with_differences(methods: list[Method]) -> list[Method]:
    """Each method with the config values that set it apart (its first run's, where not
    every method's first run has the same)."""
    configs = [
        {k: v for k, v in m.runs[0].config.items() if not BOOKKEEPING.match(k)} for m in methods
    ]
    keys = sorted(set().union(*configs))
    differing = [k for k in keys if len({json.dumps(c.get(k)) for c in configs}) > 1]
    out = []
    for m, c in zip(methods, configs, strict=True):
        shown = [f"{k}={c[k]}" for k in differing if k in c]
        out.append(dataclasses.replace(m, differs=", ".join(shown[:6])
                                       + (f", … ({len(shown)} in all)" if len(shown) > 6 else "")))  # fmt: skip
    return out


def _check_same_game(methods: Sequence[Method]) -> tuple[str, tuple[str, ...]]:
    """The runs' family and tasks; `ConfigError` where they are not all the same."""
    first = methods[0].runs[0]
    for m in methods:
        for r in m.runs:
            if r.family != first.family:
                raise ConfigError(
                    f"runs of different games: {first.path} is {first.family}, {r.path} is "
                    f"{r.family} (compare runs of one game)"
                )
            missing = sorted(set(first.final) - set(r.final))
            extra = sorted(set(r.final) - set(first.final))
            if missing or extra:
                said = "; ".join(
                    f"{what} {', '.join(ts[:5])}{' …' if len(ts) > 5 else ''}"
                    for what, ts in (("lacks", missing), ("also has", extra)) if ts
                )  # fmt: skip
                raise ConfigError(
                    f"{r.path} was not evaluated on {first.path}'s tasks: it {said} (compare "
                    "runs evaluated on one suite, or give --eval-csv)"
                )
    return first.family, tuple(first.final)


def _named(name: str, estimate: tuple[float, float, float]) -> dict[str, float]:
    """`{name: point, name_lo: lo, name_hi: hi}`."""
    point, lo, hi = estimate
    return {name: point, f"{name}_lo": lo, f"{name}_hi": hi}


def compare(runs: Sequence[str | Path] | str | Path, options: CompareOptions | None = None,
            **overrides: Any) -> Comparison:  # fmt: skip
    """Compare runs (`RUN` or `LABEL=RUN` each; a `--seeds N` folder counts as its seeds, a
    sweep's folder as its points): see the module docstring.
    `arenax.compare(["runs/a", "runs/b"], metric="solved")`, or one folder
    `arenax.compare("runs/sweep")`; `.write(folder)` writes the tables and pictures."""
    if isinstance(runs, str | Path):  # one folder (a string is not a list of its letters)
        runs = [runs]
    options = dataclasses.replace(options or CompareOptions(), **overrides)
    check(options)
    if not runs:
        raise ConfigError("no runs to compare")
    methods = group_methods(runs, options)
    family, tasks = _check_same_game(methods)
    metric = options.metric or methods[0].runs[0].metrics[0]
    options = dataclasses.replace(options, metric=metric)
    o = options
    levels, aggregate, notes = [], [], []
    cvar = A.cvar_of_levels(o.cvar_alpha)
    for m in methods:
        s = m.scores(tasks)
        if len(m.runs) == 1:
            notes.append(f"{m.label} has one run: its intervals resample that one run (zero width)")
        for j, t in enumerate(tasks):
            point, lo, hi = A.runs_interval(s[:, j], o.reps, o.seed)
            levels.append({"method": m.label, "task": t, "runs": len(m.runs),
                           "mean": point, "mean_lo": lo, "mean_hi": hi})  # fmt: skip
        row: dict[str, Any] = {"method": m.label, "runs": len(m.runs),
                               "env_steps": float(np.mean([r.env_steps for r in m.runs])),
                               "updates": float(np.mean([r.updates for r in m.runs]))}  # fmt: skip
        for name, stat in (("mean", A.mean), ("iqm", A.iqm), ("cvar", cvar)):
            row.update(_named(name, A.interval(s, stat, o.reps, o.seed)))
        curves = [[np.mean(list(c.values())) for _, c in r.curve if c] for r in m.runs]
        if all(curves):
            finals = np.array([c[-1] for c in curves])
            peaks = np.array([max(c) for c in curves])
            row.update(_named("final", A.runs_interval(finals, o.reps, o.seed)))
            row.update(_named("peak", A.runs_interval(peaks, o.reps, o.seed)))
        else:
            row.update(_named("final", (math.nan,) * 3), **_named("peak", (math.nan,) * 3))
        aggregate.append(row)
    budgets = {
        m.label: (r["env_steps"], r["updates"]) for m, r in zip(methods, aggregate, strict=True)
    }
    if len({b[0] for b in budgets.values()}) > 1 and len({b[1] for b in budgets.values()}) > 1:
        notes.append("the methods' final evaluations are at different env steps and updates: "
                     "not a comparison at equal compute")  # fmt: skip
    improvement = []
    for x in methods:
        for y in methods:
            if x is not y:
                p = A.improvement_interval(x.scores(tasks), y.scores(tasks), o.reps, o.seed)
                improvement.append({"x": x.label, "y": y.label, **_named("p", p)})
    return Comparison(metric, family, tasks, tuple(methods), levels, aggregate, improvement,
                      tuple(notes), options)  # fmt: skip
