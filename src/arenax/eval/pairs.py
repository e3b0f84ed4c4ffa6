"""MAESTRO's co-player × arena picture: which pairs the curriculum chose, over time, and
the regret it found in each (`pairs.png`, drawn by `arenax plot` from a run's
`pairs.jsonl`).

Each cycle every group of environments plays one co-player on its arenas; MAESTRO logs,
per cycle and group (`arenax.curricula.maestro`): the co-player's version (`coplayer`:
the live runners' update count when its snapshot was taken, the count at the time for
the live runners themselves), its age (`age`: the runners' updates since then, 0 for the
live runners), whether it is the live policy (`live`), whether the group
replayed arenas from that co-player's buffer (`replay`), the mean regret score of the
group's arenas (`score`) and their mean family metrics (`level/<metric>`, e.g.
`level/coverage`).

The picture has two panels: left, every (cycle, group) as a point at (update of the
learners' team, version of the co-player played), coloured by the regret score — the
live runners lie on the diagonal, older snapshots below it; right, a heatmap of the mean
score over co-player age (updates since its snapshot, binned) × an arena metric
(binned), each cell with its count of groups.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from arenax.training.logging import read_jsonl

PREFERRED = ("coverage", "walls")
"""The heatmap's arena metric unless told: the first of these the family logs (else its
first metric)."""


def read_pairs(run_dir: Path) -> dict[str, np.ndarray] | None:
    """A run's `pairs.jsonl` as arrays: `cycle (C,)` and every column `(C, groups)`;
    `None` if the run has none (not a MAESTRO run, or one from before pairs were logged)."""
    rows = read_jsonl(Path(run_dir) / "pairs.jsonl")
    if not rows:
        return None
    out = {"cycle": np.array([r["cycle"] for r in rows])}
    for k in rows[0]:
        if k != "cycle":
            out[k] = np.array([r[k] for r in rows], dtype=np.float64)
    return out


def edges(x: np.ndarray, bins: int) -> np.ndarray:
    """At most `bins` bins over `x`'s range: `bins + 1` equal-width edges, fewer for
    integer data with fewer distinct values (one bin per value: edges at half-integers)."""
    x = np.asarray(x, dtype=np.float64)
    lo, hi = float(np.min(x)), float(np.max(x))
    if np.all(x == np.round(x)) and hi - lo + 1 <= bins:
        return np.arange(lo - 0.5, hi + 1.0)
    if hi == lo:
        return np.array([lo - 0.5, hi + 0.5])
    return np.linspace(lo, hi, bins + 1)


def pair_grid(
    age: np.ndarray,
    arena: np.ndarray,
    score: np.ndarray,
    age_edges: np.ndarray,
    arena_edges: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Mean `score` and count of the pairs in each (arena bin, age bin) cell: two
    `(len(arena_edges) - 1, len(age_edges) - 1)` arrays (mean NaN where the count is 0).
    Bins are closed on the left, the last also on the right."""

    def index(x: np.ndarray, e: np.ndarray) -> np.ndarray:
        return np.clip(np.searchsorted(e, x, side="right") - 1, 0, len(e) - 2)

    i, j = index(np.ravel(arena), arena_edges), index(np.ravel(age), age_edges)
    shape = (len(arena_edges) - 1, len(age_edges) - 1)
    count = np.zeros(shape)
    total = np.zeros(shape)
    np.add.at(count, (i, j), 1.0)
    np.add.at(total, (i, j), np.ravel(score))
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(count > 0, total / np.maximum(count, 1.0), np.nan)
    return mean, count


def plot_pairs(run_dir: Path, out_dir: Path, metric: str = "", bins: int = 8) -> Path | None:
    """Write `pairs.png` (see the module docstring) into `out_dir` from `run_dir`'s
    `pairs.jsonl`; `metric`: the arena metric of the heatmap (default: the first of
    `PREFERRED` the family logs, e.g. Tag's `coverage`). Returns the path, `None` where the run has no pairs."""
    pairs = read_pairs(run_dir)
    if pairs is None:
        return None
    from arenax.eval.mpl import pyplot

    plt = pyplot()
    metrics = [k.removeprefix("level/") for k in pairs if k.startswith("level/")]
    if metric and metric not in metrics:
        raise ValueError(f"no arena metric {metric!r} in {run_dir}/pairs.jsonl; it has {metrics}")
    metric = metric or next((m for m in PREFERRED if m in metrics), metrics[0] if metrics else "")
    coplayer, age, score = pairs["coplayer"], pairs["age"], pairs["score"]
    now = coplayer + age

    fig, axes = plt.subplots(
        1, 2 if metric else 1, figsize=(12 if metric else 6, 4.4), squeeze=False
    )
    ax = axes[0][0]
    live = np.ravel(pairs["live"]) > 0
    lo, hi = np.percentile(score, [2, 98])  # a few outliers would wash out the colours
    for mask, marker, label in ((live, "o", "the live runners"), (~live, "^", "a snapshot")):
        pts = ax.scatter(np.ravel(now)[mask], np.ravel(coplayer)[mask], c=np.ravel(score)[mask],
                         s=10, marker=marker, cmap="magma", vmin=lo, vmax=hi, label=label)  # fmt: skip
    ax.set_xlabel("runners' updates so far (training time)")
    ax.set_ylabel("co-player played (runners' version)")
    ax.set_title("co-players chosen, per cycle and group (live: the diagonal)", fontsize=9)
    ax.legend(fontsize=7, loc="upper left", markerscale=1.5)
    fig.colorbar(pts, ax=ax, label="regret score of the group's arenas")
    if metric:
        arena = pairs[f"level/{metric}"]
        ae, me = edges(age, bins), edges(arena, bins)
        mean, count = pair_grid(age, arena, score, ae, me)
        ax = axes[0][1]
        im = ax.imshow(mean, origin="lower", aspect="auto", cmap="magma",
                       extent=(ae[0], ae[-1], me[0], me[-1]))  # fmt: skip
        for i in range(count.shape[0]):
            for j in range(count.shape[1]):
                if count[i, j]:
                    x, y = (ae[j] + ae[j + 1]) / 2, (me[i] + me[i + 1]) / 2
                    ax.text(x, y, f"{int(count[i, j])}", ha="center", va="center", fontsize=6,
                            color="white" if mean[i, j] < np.nanmean(mean) else "black")  # fmt: skip
        ax.set_xlabel("co-player's age (runners' updates since its snapshot; 0: live)")
        ax.set_ylabel(f"arena {metric}")
        ax.set_title("mean regret score per co-player age × arena (count of groups)", fontsize=9)
        fig.colorbar(im, ax=ax, label="mean regret score")
    fig.suptitle(f"{Path(run_dir).name}: MAESTRO's co-player × arena pairs")
    fig.tight_layout()
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "pairs.png"
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
