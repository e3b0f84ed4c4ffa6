"""Curricula over grid Tag arenas at equal env steps: DR (fresh random arenas every
cycle), PLR⊥, ACCEL and SFL (``tag-grid-dr`` below, ``tag-grid-plr``, ``tag-grid-accel``,
``tag-grid-sfl``: the
same arenas — 15 x 15 cells, up to 40 obstacles, a 5 x 5 occupancy patch — and the same
shared self-play policy), each over several seeds trained in one program (``--seeds``),
then the trained taggers evaluated against scripted runners (and random ones) on the seven
held-out arenas: the fraction of episodes with a tag, per arena and on average, with 95%
intervals across seeds. Prints a markdown table and JSON; writes a PNG.

    python benchmarks/arena_learning.py --steps 1000000 --seeds 3 --out outputs/arena_learning
    python benchmarks/arena_learning.py --updates 123 --seeds 2   # at equal PPO updates
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated

import numpy as np
from rich.console import Console

from arenax.envs.tag.arenas import HELDOUT_ARENAS
from arenax.envs.tag.evaluation import DRIVERS
from arenax.eval.report import evaluate_run, seed_runs
from arenax.options import POSITIVE, Problem
from arenax.stats import mean_ci
from arenax.training import PRESETS, train
from arenax.training.logging import read_jsonl
from arenax.training.variants import tiny


@dataclasses.dataclass(frozen=True)
class Args:
    steps: Annotated[int, POSITIVE] = 1_000_000
    """Env steps per seed and method."""
    updates: int | None = None
    """Budget in PPO updates per seed and method instead of env steps (every method makes
    the same number of policy updates; the replay curricula then use more env steps)."""
    seeds: int = 3
    """Seeds per method (0 .. seeds − 1, trained together)."""
    methods: tuple[str, ...] = ("dr", "plr", "accel", "sfl")
    """Curricula: dr, plr (PLR⊥), accel, sfl."""
    episodes: Annotated[int, POSITIVE] = 100
    """Evaluation episodes per arena and matchup."""
    opponents: tuple[str, ...] = ("scripted", "random")
    """Runner drivers the trained taggers meet."""
    tiny: bool = False
    """Every run at the test suite's small shapes (`arenax.training.variants.tiny`): a
    check that the script runs (give it a few updates), not a result."""
    out: Path = Path("outputs/arena_learning")
    """Folder for the runs, the PNG and results.json."""

    def problems(self) -> Iterator[Problem]:
        known = ["dr", *(n[len("tag-grid-") :] for n in PRESETS if n.startswith("tag-grid-"))]
        if not self.methods or any(m not in known for m in self.methods):
            yield Problem("methods", self.methods, f"allowed: {', '.join(known)}")
        if not self.opponents or any(o not in DRIVERS for o in self.opponents):
            yield Problem("opponents", self.opponents, f"allowed: {', '.join(DRIVERS)}")
        from arenax.cli.common import dir_problem

        yield from dir_problem(self.out, "out")  # before hours of training, not after


def config(method: str, args: Args):
    base = PRESETS["tag-grid-plr"]
    if method == "dr":  # the same arenas, drawn fresh every cycle
        cfg = dataclasses.replace(PRESETS["tag-grid"], env=base.env)
    else:
        cfg = PRESETS[f"tag-grid-{method}"]
    budget = dict(total_steps=args.steps) if args.updates is None else dict(
        total_steps=None, total_updates=args.updates)  # fmt: skip
    cfg = tiny(cfg) if args.tiny else cfg
    return dataclasses.replace(
        cfg, **budget, seeds=args.seeds, out_dir=args.out, name=method,
        overwrite=True, progress=False, tensorboard=False,
    )  # fmt: skip


def main(args: Args) -> None:
    results: dict[str, dict] = {}
    for method in args.methods:
        t0 = time.perf_counter()
        res = train(config(method, args))
        train_s = time.perf_counter() - t0
        per_seed: dict[str, list[float]] = {}
        budget: dict[str, list[int]] = {"updates": [], "env_steps": []}
        for run in seed_runs(args.out / method) or [args.out / method]:  # (one seed: no seed<s>)
            last = read_jsonl(run / "metrics.jsonl")[-1]
            for k in budget:
                budget[k].append(int(last[k]))
            report = evaluate_run(
                run, "arenas", args.episodes, seed=1234,
                console=Console(quiet=True), opponents=args.opponents,
            )  # fmt: skip
            for r in report.rows:
                if r.taggers == "trained" and r.runners in args.opponents:
                    per_seed.setdefault(f"{r.runners}/{r.arena}", []).append(r.any_tag)
        results[method] = {"train_s": train_s, "steps_per_s": res.steady_sps,
                           "p_tag": per_seed, **budget}  # fmt: skip
        args.out.mkdir(parents=True, exist_ok=True)  # what is done so far survives a stop
        (args.out / "results.json").write_text(json.dumps(results))
    lines = [f"Taggers' P(tag) on held-out arenas after {_budget(args)} per seed "
             f"({args.seeds} seeds, {args.episodes} episodes per arena; mean and 95% interval "
             "across seeds)", ""]  # fmt: skip
    for opp in args.opponents:
        lines += [f"vs {opp} runners", "",
                  "| arena | " + " | ".join(args.methods) + " |",
                  "|---|" + "---|" * len(args.methods)]  # fmt: skip
        for arena in (*HELDOUT_ARENAS, "mean"):
            cells = []
            for m in args.methods:
                p = results[m]["p_tag"]
                if arena == "mean":
                    x = np.mean([p[f"{opp}/{a}"] for a in HELDOUT_ARENAS], axis=0)
                else:
                    x = np.asarray(p[f"{opp}/{arena}"])
                mean, lo, hi = mean_ci(x)
                cells.append(f"{mean:.2f} [{lo:.2f}, {hi:.2f}]")
            lines.append(f"| {arena} | " + " | ".join(cells) + " |")
        lines.append("")
    for m in args.methods:
        r = results[m]
        lines.append(
            f"{m}: trained in {r['train_s']:.0f} s ({r['steps_per_s']:,.0f} env steps/s); "
            f"per seed {', '.join(f'{u} updates / {e:,} steps' for u, e in zip(r['updates'], r['env_steps'], strict=True))}"
        )
    print("\n".join(lines))
    _plot(results, args)
    (args.out / "results.json").write_text(json.dumps(results))
    print("JSON:\n" + json.dumps(results))


def _budget(args: Args) -> str:
    return f"{args.steps:,} env steps" if args.updates is None else f"{args.updates} PPO updates"


def _plot(results: dict, args: Args) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    opp = args.opponents[0]
    fig, ax = plt.subplots(figsize=(10, 3.6))
    width = 0.8 / len(args.methods)
    xs = np.arange(len(HELDOUT_ARENAS) + 1)
    for i, m in enumerate(args.methods):
        p = results[m]["p_tag"]
        vals = [np.asarray(p[f"{opp}/{a}"]) for a in HELDOUT_ARENAS]
        vals.append(np.mean(vals, axis=0))
        stats = [mean_ci(v) for v in vals]
        means = [s[0] for s in stats]
        err = [[s[0] - s[1] for s in stats], [s[2] - s[0] for s in stats]]
        ax.bar(xs + (i - (len(args.methods) - 1) / 2) * width, means, width, yerr=err,
               capsize=2, label=m)  # fmt: skip
    ax.set_xticks(xs, [*HELDOUT_ARENAS, "mean"], rotation=20)
    ax.set_ylabel(f"P(tag) vs {opp} runners")
    ax.set_title(f"grid Tag arenas, {_budget(args)}, {args.seeds} seeds (95% intervals)")
    ax.legend()
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(args.out / "arena_learning.png", dpi=100)
    plt.close(fig)


if __name__ == "__main__":
    from arenax.cli.common import script_main

    script_main(Args, main, "arena_learning.py", __doc__)
