"""Learning-curve PNGs from a run directory's `metrics.csv` and `eval.csv`; for a run of
several seeds (`--seeds N`: folders `RUN/seed<s>`), each curve is the mean over seeds
with its 95% interval as a band."""

from __future__ import annotations

import csv
import json
import warnings
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from arenax.eval.mpl import pyplot as _pyplot


def _save(plt: Any, fig: Any, path: Path) -> Path:
    """Lay out `fig`, write it to `path` (its folder made) and close it: the comparison
    pictures' last step. Returns `path`."""
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


PANELS = (
    ("returns", "training episodes", (("return", "mean return"), ("solved", "solved rate"))),
    (
        "losses",
        "PPO",
        (
            ("value_loss", "value loss"),
            ("pg_loss", "policy loss"),
            ("entropy", "entropy"),
            ("approx_kl", "approx. KL"),
        ),
    ),
    (
        "levels",
        "training levels",
        (
            ("level/walls", "walls"),
            ("level/shortest_path", "shortest path"),
            ("level/solvable", "solvable"),
        ),
    ),
    (
        "teams",
        "Tag episodes",
        (
            ("return/tagger", "tagger return"),
            ("return/runner", "runner return"),
            ("tagged", "runners tagged / episode"),
            ("episode_length", "episode length"),
        ),
    ),
    (
        "buffer",
        "level buffer",
        (
            ("buffer/weighted_score", "replay-weighted score"),
            ("buffer/weighted_age", "replay-weighted age"),
            ("buffer/weighted_mutations", "replay-weighted edits"),
            ("buffer/fill", "fill ratio"),
        ),
    ),
)
ONLY_WITH = {"teams": "tagged"}
"""Panels drawn only when the run logs this column."""


def _read(path: Path) -> list[dict[str, str]]:
    if not path.exists():
        return []
    with path.open() as f:
        return list(csv.DictReader(f))


def _col(rows: list[dict[str, str]], key: str) -> np.ndarray:
    return np.array([float(r[key]) if r.get(key) not in (None, "") else np.nan for r in rows])


def smooth(y: np.ndarray, window: int) -> np.ndarray:
    """Moving average that skips NaNs (same length as `y`)."""
    if window <= 1 or len(y) == 0:
        return y
    ok = np.isfinite(y)
    v = np.where(ok, y, 0.0)
    k = np.ones(window)
    num = np.convolve(v, k, mode="full")[: len(y)]
    den = np.convolve(ok.astype(float), k, mode="full")[: len(y)]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.maximum(den, 1), np.nan)


def seed_dirs(run_dir: Path) -> list[Path]:
    """The seeds' folders of a run of several seeds (`[]` for a run of one seed)."""
    if (Path(run_dir) / "metrics.csv").exists():
        return []
    found = [p.parent for p in Path(run_dir).glob("seed*/metrics.csv")]
    return sorted(found, key=lambda p: int(p.name[4:]) if p.name[4:].isdigit() else -1)


def sweep_point_dirs(run_dir: Path) -> list[Path]:
    """The points' folders of a sweep's run folder (`--sweep`: `RUN/<point>`, in the
    sweep's order, as its config lists them); `[]` for any other folder."""
    try:
        saved = json.loads((Path(run_dir) / "config.json").read_text())
    except (OSError, ValueError):
        return []
    if not isinstance(saved, dict) or not saved.get("sweep"):
        return []
    points = [p for p in Path(run_dir).iterdir() if p.is_dir() and "-" in p.name]
    found = [p for p in points if (p / "config.json").is_file() or seed_dirs(p)]
    return sorted(found, key=lambda p: p.name)


def band(curves: np.ndarray, z: float = 1.96) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`(mean, lo, hi)` over the seeds (rows of `curves`, `(seeds, T)`): the mean and
    its 95% normal-approximation interval, NaNs skipped."""
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns stay NaN
        n = np.sum(np.isfinite(curves), axis=0)
        mean = np.nanmean(curves, axis=0)
        sd = np.nanstd(curves, axis=0, ddof=1) if len(curves) > 1 else np.zeros_like(mean)
        half = np.where(n > 1, z * sd / np.sqrt(np.maximum(n, 1)), 0.0)
    return mean, mean - half, mean + half


def plot_run(
    run_dir: Path, out_dir: Path | None = None, window: int = 0, arena_metric: str = ""
) -> list[Path]:
    """Write `returns.png`, `losses.png`, `levels.png`, `buffer.png` (replay curricula),
    `teams.png` and `losses-<policy>.png` (Tag), `pairs.png` (MAESTRO; a run of several
    seeds: `seed<s>/pairs.png`; `arena_metric`: its heatmap's) and (if evaluated) `eval.png`
    into `out_dir` (default `run_dir/plots`); returns the paths written. A run of
    several seeds gets the mean over seeds with a 95% band (per cycle; env steps are the
    seeds' mean)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    run_dir = Path(run_dir)
    seeds = seed_dirs(run_dir)
    runs = [_read(d / "metrics.csv") for d in seeds] or [_read(run_dir / "metrics.csv")]
    length = min(len(r) for r in runs)
    if not length:
        raise FileNotFoundError(
            f"{run_dir / 'metrics.csv'} is missing or empty: not a run directory?"
        )
    runs = [r[:length] for r in runs]  # every seed's first cycles
    rows = runs[0]
    out_dir = Path(out_dir) if out_dir else run_dir / "plots"
    out_dir.mkdir(parents=True, exist_ok=True)
    x = np.mean([_col(r, "env_steps") for r in runs], axis=0)
    window = window or max(1, len(rows) // 50)
    written = []
    # many-agent runs: one loss panel per policy (metrics "<policy>/value_loss", ...)
    policies = sorted(k.split("/")[0] for k in rows[0] if k.endswith("/value_loss"))
    panels = list(PANELS) + [
        (f"losses-{p}", f"PPO of policy {p!r}", tuple((f"{p}/{k}", lab) for k, lab in PANELS[1][2]))
        for p in policies
    ]
    for fname, title, series in panels:
        if fname in ONLY_WITH and ONLY_WITH[fname] not in rows[0]:
            continue  # e.g. no Tag panel for a maze run, which also logs episode_length
        series = [(k, lab) for k, lab in series if k in rows[0]]
        if not series:
            continue
        fig, axes = plt.subplots(1, len(series), figsize=(4 * len(series), 3.2), squeeze=False)
        for ax, (k, lab) in zip(axes[0], series, strict=True):
            if len(runs) == 1:
                y = _col(rows, k)
                ax.plot(x, y, alpha=0.25, color="C0")
                ax.plot(x, smooth(y, window), color="C0")
            else:
                mean, lo, hi = band(np.stack([smooth(_col(r, k), window) for r in runs]))
                ax.fill_between(x, lo, hi, alpha=0.25, color="C0", lw=0)
                ax.plot(x, mean, color="C0", label=f"mean of {len(runs)} seeds, 95% band")
                if ax is axes[0][0]:
                    ax.legend(fontsize=7)
            ax.set_title(lab)
            ax.set_xlabel("env steps")
            ax.grid(alpha=0.3)
        fig.suptitle(f"{run_dir.name}: {title}")
        fig.tight_layout()
        path = out_dir / f"{fname}.png"
        fig.savefig(path, dpi=100)
        plt.close(fig)
        written.append(path)
    from arenax.eval.pairs import plot_pairs

    for d in seeds or [run_dir]:  # MAESTRO: the co-player × arena pairs, per seed
        own = out_dir if d == run_dir else out_dir / d.name
        path = plot_pairs(d, own, arena_metric)
        written += [path] if path else []
    if seeds:
        path = _plot_seed_evals(plt, run_dir, seeds, out_dir)
        return written + ([path] if path else [])
    evals = _read(run_dir / "eval.csv")
    if evals:
        by_maze: dict[str, list[dict[str, str]]] = defaultdict(list)
        for r in evals:
            by_maze[r.get("maze") or r.get("level") or ""].append(r)
        fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
        for name, rs in by_maze.items():
            ex = _col(rs, "env_steps")
            axes[0].plot(ex, _col(rs, "solved"), marker="o", ms=3, label=name)
            axes[1].plot(ex, _col(rs, "ret"), marker="o", ms=3, label=name)
        for ax, lab in zip(axes, ("held-out solved rate", "held-out return"), strict=True):
            ax.set_title(lab)
            ax.set_xlabel("env steps")
            ax.grid(alpha=0.3)
        axes[1].legend(fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5))
        fig.suptitle(f"{run_dir.name}: zero-shot evaluation")
        fig.tight_layout()
        path = out_dir / "eval.png"
        fig.savefig(path, dpi=100)
        plt.close(fig)
        written.append(path)
    return written


def _plot_seed_evals(plt: Any, run_dir: Path, seeds: list[Path], out_dir: Path) -> Path | None:
    """`eval.png` of a run of several seeds: the held-out solved rate and return averaged
    over the suite's mazes, mean over seeds with a 95% band."""
    per_seed = [_read(d / "eval.csv") for d in seeds]
    if not all(per_seed):
        return None
    curves: dict[str, list[np.ndarray]] = {"solved": [], "ret": []}
    x = None
    for rows in per_seed:
        by_cycle: dict[str, list[dict[str, str]]] = defaultdict(list)
        for r in rows:
            by_cycle[r["cycle"]].append(r)
        cycles = sorted(by_cycle, key=int)
        for k in curves:
            curves[k].append(np.array([np.mean(_col(by_cycle[c], k)) for c in cycles]))
        steps = np.array([float(by_cycle[c][0]["env_steps"]) for c in cycles])
        x = steps if x is None or len(steps) < len(x) else x
    assert x is not None
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    for ax, (k, lab) in zip(
        axes, (("solved", "held-out solved rate"), ("ret", "held-out return")), strict=True
    ):
        mean, lo, hi = band(np.stack([c[: len(x)] for c in curves[k]]))
        ax.fill_between(x, lo, hi, alpha=0.25, color="C0", lw=0)
        ax.plot(
            x, mean, marker="o", ms=3, color="C0", label=f"mean of {len(seeds)} seeds, 95% band"
        )
        ax.set_title(f"{lab} (mean over mazes)")
        ax.set_xlabel("env steps")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7)
    fig.suptitle(f"{run_dir.name}: zero-shot evaluation")
    fig.tight_layout()
    path = out_dir / "eval.png"
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def crossplay_heatmap(cells: list[Any], path: Path, title: str = "") -> Path:
    """A cross-play round robin as a heatmap (`CrossPlayCell`s: rows the taggers' runs,
    columns the runners'; each cell its P(tag) and 95% interval). Returns `path`."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(dict.fromkeys(c.taggers for c in cells))
    at = {(c.taggers, c.runners): c for c in cells}
    grid = np.array([[at[t, r].p_tag for r in names] for t in names])
    side = 1.0 + 0.9 * len(names)
    fig, ax = plt.subplots(figsize=(side + 1.5, side))
    im = ax.imshow(grid, vmin=0.0, vmax=1.0, cmap="viridis")
    for i, t in enumerate(names):
        for j, r in enumerate(names):
            c = at[t, r]
            ax.text(j, i, f"{c.p_tag:.2f}\n[{c.p_tag_lo:.2f}, {c.p_tag_hi:.2f}]",
                    ha="center", va="center", fontsize=7,
                    color="black" if c.p_tag > 0.6 else "white")  # fmt: skip
    ax.set_xticks(range(len(names)), names, rotation=45, ha="right", fontsize=8)
    ax.set_yticks(range(len(names)), names, fontsize=8)
    ax.set_xlabel("runners of run")
    ax.set_ylabel("taggers of run")
    ax.set_title(title or "cross-play: P(tag)", fontsize=9, wrap=True)
    fig.colorbar(im, ax=ax, label="P(tag) (95% interval in brackets)")
    return _save(plt, fig, path)


def level_bars(comparison: Any, path: Path) -> Path:
    """Per task, each method's mean final score over its runs (a bar) with its 95%
    interval (`Comparison.levels`) and each run's own score (dots): where a method is
    ahead, level or behind, maze by maze. Returns `path`."""
    plt = _pyplot()
    methods = comparison.methods
    tasks = list(comparison.tasks)
    by = {(r["method"], r["task"]): r for r in comparison.levels}
    width = 0.8 / len(methods)
    fig, ax = plt.subplots(figsize=(max(6.4, 0.45 * len(tasks) * max(1, len(methods))), 4.0))
    x = np.arange(len(tasks))
    for i, m in enumerate(methods):
        at = x - 0.4 + width * (i + 0.5)
        rows = [by[m.label, t] for t in tasks]
        mean = np.array([r["mean"] for r in rows])
        err = np.array([[r["mean"] - r["mean_lo"] for r in rows],
                        [r["mean_hi"] - r["mean"] for r in rows]])  # fmt: skip
        ax.bar(at, mean, width, yerr=err, color=f"C{i}", alpha=0.75, capsize=2,
               label=f"{m.label} ({len(m.runs)} runs)")  # fmt: skip
        runs = m.scores(comparison.tasks)  # (runs, tasks)
        for r in runs:
            ax.plot(at, r, "o", mfc="white", mec="k", ms=3.5, mew=0.8)
    ax.set_xticks(x, tasks, rotation=45, ha="right", fontsize=8)
    ax.set_ylabel(comparison.metric)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title("final score per task: mean over runs (bars, 95% intervals), each run (dots)",
                 fontsize=9)  # fmt: skip
    return _save(plt, fig, path)


def performance_profiles(comparison: Any, path: Path, points: int = 101) -> Path:
    """Performance profiles of a `Comparison`: per method, the fraction of its runs ×
    tasks whose final score exceeds each threshold, with a 95% stratified-bootstrap band
    (Agarwal et al. 2021). Returns `path`."""
    from arenax.eval import aggregate as A

    plt = _pyplot()
    o = comparison.options
    every = np.concatenate([m.scores(comparison.tasks).ravel() for m in comparison.methods])
    lo, hi = float(every.min()), float(every.max())
    if hi <= lo:
        lo, hi = lo - 0.5, hi + 0.5
    taus = np.linspace(lo, hi, points)
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    for i, m in enumerate(comparison.methods):
        profile, band_lo, band_hi = A.profile_band(
            m.scores(comparison.tasks), taus, reps=min(o.reps, 1000), seed=o.seed
        )
        ax.fill_between(taus, band_lo, band_hi, color=f"C{i}", alpha=0.2, lw=0)
        ax.plot(taus, profile, color=f"C{i}", label=f"{m.label} ({len(m.runs)} runs)")
    ax.set_xlabel(f"{comparison.metric} threshold τ")
    ax.set_ylabel(f"fraction of runs × tasks with {comparison.metric} > τ")
    ax.set_ylim(-0.02, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title(f"performance profiles, {len(comparison.tasks)} task(s), 95% bands", fontsize=9)
    return _save(plt, fig, path)


def comparison_curves(comparison: Any, path: Path) -> Path | None:
    """Learning curves of a `Comparison` from the runs' periodic evaluations: per method,
    the IQM over runs × tasks at each evaluation its runs share, with a 95%
    stratified-bootstrap band, against env steps. The tasks are the compared ones that
    every periodic evaluation has (final scores from a larger `arenax eval` table: the
    suite the runs evaluated while training). None when no method has periodic
    evaluations."""
    from arenax.eval import aggregate as A

    o = comparison.options
    # the tasks every periodic evaluation has: the compared ones, or (final scores from a
    # larger `arenax eval` table) the suite the runs evaluated while they trained
    evaluated = [set(c) for m in comparison.methods for r in m.runs for _, c in r.curve if c]
    shared = set.intersection(*evaluated) if evaluated else set()
    tasks = [t for t in comparison.tasks if t in shared] or sorted(shared)
    lines = []
    for m in comparison.methods:
        n = min(len(r.curve) for r in m.runs)
        if n == 0 or not tasks:
            continue
        xs, points = [], []
        for i in range(n):
            at = [r.curve[i][1] for r in m.runs]
            if any(set(tasks) - set(a) for a in at):
                continue  # (an evaluation of other tasks: not comparable)
            scores = np.array([[a[t] for t in tasks] for a in at])
            xs.append(float(np.mean([r.curve[i][0] for r in m.runs])))
            points.append(A.interval(scores, A.iqm, reps=min(o.reps, 500), seed=o.seed))
        if xs:
            lines.append((m, np.array(xs), np.array(points)))
    if not lines:
        return None
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    for i, (m, xs, pts) in enumerate(lines):
        ax.fill_between(xs, pts[:, 1], pts[:, 2], color=f"C{i}", alpha=0.2, lw=0)
        ax.plot(xs, pts[:, 0], color=f"C{i}", marker="o", ms=3,
                label=f"{m.label} ({len(m.runs)} runs)")  # fmt: skip
    ax.set_xlabel("env steps")
    some = (
        ""
        if set(tasks) == set(comparison.tasks)
        else f", the {len(tasks)} tasks evaluated in training"
    )
    ax.set_ylabel(f"IQM of {comparison.metric}{some}")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title("held-out evaluations during training, IQM over runs × tasks, 95% bands",
                 fontsize=9)  # fmt: skip
    return _save(plt, fig, path)
