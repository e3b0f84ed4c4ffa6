"""Whom the taggers play, compared at equal PPO updates on grid Tag arenas: DR + self-play
(`tag-grid-sp`), DR + FSP (`tag-grid-fsp`), DR + PFSP (`tag-grid-pfsp`), PLR⊥ over arenas
with self-play (`tag-grid-plr` with a policy per team) and MAESTRO (`tag-grid-maestro`),
each over several seeds trained in one program (`--seeds`). Then a cross-play table: every
method's final taggers against every method's final runners (same seed), scripted and
random runners, on the seven held-out arenas — P(tag) averaged over arenas, with 95%
intervals across seeds — and the worst case of each method's taggers over those runner
drivers and arenas; learning curves (the taggers' training return against updates).
Prints markdown tables and JSON; writes two PNGs.

    python benchmarks/coplayer_learning.py --updates 100 --seeds 2 --out outputs/coplayer_learning
    python benchmarks/coplayer_learning.py --reuse --methods sp maestro maestro-g1  # add one
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated

import jax
import numpy as np
from rich.console import Console

from arenax.envs.tag.arenas import HELDOUT_ARENAS
from arenax.eval.report import evaluate_run, seed_runs
from arenax.options import POSITIVE, Problem
from arenax.stats import mean_ci
from arenax.training import PRESETS, train
from arenax.training.logging import read_jsonl
from arenax.training.variants import tiny


@dataclasses.dataclass(frozen=True)
class Args:
    updates: Annotated[int, POSITIVE] = 100
    """PPO updates of the taggers per seed and method (the replay curricula use more env
    steps for them: PLR⊥ and MAESTRO do not update on new arenas)."""
    seeds: Annotated[int, POSITIVE] = 2
    """Seeds per method (0 .. seeds − 1, trained together)."""
    methods: tuple[str, ...] = ("sp", "fsp", "pfsp", "plr-sp", "maestro", "maestro-g1")
    """sp, fsp, pfsp (DR arenas), plr-sp (PLR⊥ arenas, self-play), maestro, maestro-g1
    (MAESTRO with one co-player a cycle, so every update trains on the whole batch),
    maestro-uniform (MAESTRO's per-co-player buffers, co-players drawn uniformly),
    maestro-par (MAESTRO∥: a new and a replay block each cycle, trained on the replay block),
    maestro-max (the paper's co-player rule: `--maestro.coplayer-sampling max_regret
    --maestro.latest-prob 0`)."""
    episodes: Annotated[int, POSITIVE] = 50
    """Evaluation episodes per arena and matchup."""
    out: Path = Path("outputs/coplayer_learning")
    """Folder for the runs, the PNGs and results.json."""
    tiny: bool = False
    """Every run at the test suite's small shapes (`arenax.training.variants.tiny`): a
    check that the script runs (give it a few updates), not a result."""
    train_only: bool = False
    """Train the methods (and save results.json) without evaluating: a later `--reuse`
    evaluates them."""
    reuse: bool = False
    """Reuse the runs an earlier call left in `out` (its results.json): train only the
    methods it lacks, then evaluate every method."""

    def problems(self) -> Iterator[Problem]:
        known = [n[len("tag-grid-") :] for n in PRESETS if n.startswith("tag-grid-")]
        known += ["plr-sp", "maestro-g1", "maestro-par", "maestro-uniform", "maestro-max"]
        if not self.methods or any(m not in known for m in self.methods):
            yield Problem("methods", self.methods, f"allowed: {', '.join(known)}")
        from arenax.cli.common import dir_problem

        yield from dir_problem(self.out, "out")  # before hours of training, not after


def config(method: str, args: Args):
    if method == "plr-sp":  # the arenas of the co-player presets, both teams' live policies
        cfg = dataclasses.replace(PRESETS["tag-grid-plr"], teams=PRESETS["tag-grid-maestro"].teams)
    elif method == "maestro-g1":
        m = PRESETS["tag-grid-maestro"]
        cfg = dataclasses.replace(m, curriculum=dataclasses.replace(m.curriculum, groups=1))
    elif method == "maestro-par":
        m = PRESETS["tag-grid-maestro"]
        cfg = dataclasses.replace(m, curriculum=dataclasses.replace(m.curriculum, parallel=True))
    elif method == "maestro-max":  # the paper's co-player rule, alone (no live-runner share)
        m = PRESETS["tag-grid-maestro"]
        c = dataclasses.replace(m.curriculum, coplayer_sampling="max_regret", latest_prob=0.0)
        cfg = dataclasses.replace(m, curriculum=c)
    elif method == "maestro-uniform":
        m = PRESETS["tag-grid-maestro"]
        c = dataclasses.replace(m.curriculum, coplayer_sampling="uniform")
        cfg = dataclasses.replace(m, curriculum=c)
    else:
        cfg = PRESETS[f"tag-grid-{method}"]
    cfg = tiny(cfg) if args.tiny else cfg
    return dataclasses.replace(
        cfg, total_steps=None, total_updates=args.updates, seeds=args.seeds, out_dir=args.out,
        name=method, overwrite=True, progress=False, tensorboard=False,
    )  # fmt: skip


def _runs(args: Args, method: str) -> list[Path]:
    """The method's seeds' run folders (`RUN/seed<s>`; one seed: `RUN` itself)."""
    return seed_runs(args.out / method) or [args.out / method]


def main(args: Args) -> None:
    results: dict[str, dict] = {}
    if args.reuse:
        results = json.loads((args.out / "results.json").read_text())
    for method in args.methods:
        if method in results:
            continue
        t0 = time.perf_counter()
        res = train(config(method, args))
        curves = [read_jsonl(run / "metrics.jsonl") for run in _runs(args, method)]
        results[method] = {
            "train_s": time.perf_counter() - t0,
            "steps_per_s": res.steady_sps,
            "env_steps": [int(c[-1]["env_steps"]) for c in curves],
            "curve": [[(r["updates"], r.get("return/tagger", float("nan"))) for r in c] for c in curves],
        }  # fmt: skip
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "results.json").write_text(json.dumps(results))
    if args.train_only:
        return
    # cross-play: the runs' seed folders under distinct names (a co-player is named by its folder)
    names = {}
    for m in args.methods:
        for s in range(args.seeds):
            link = args.out / "xplay" / f"{m}-s{s}"
            link.parent.mkdir(parents=True, exist_ok=True)
            if link.is_symlink() or link.exists():
                link.unlink()
            link.symlink_to(_runs(args, m)[s].resolve())
            names[m, s] = link
    drivers = ("scripted", "random", *args.methods)
    p_tag: dict[str, dict[str, list[float]]] = {m: {d: [] for d in drivers} for m in args.methods}
    worst: dict[str, list[float]] = {m: [] for m in args.methods}
    for m in args.methods:
        for s in range(args.seeds):
            others = [names[o, s] for o in args.methods if o != m]
            report = evaluate_run(
                names[m, s], "arenas", args.episodes, seed=1234, console=Console(quiet=True),
                opponents=("trained", "scripted", "random"), coplayers=others,
            )  # fmt: skip
            per: dict[str, list[float]] = {}
            for r in report.rows:
                if r.taggers == "trained" and r.arena in HELDOUT_ARENAS:
                    d = r.runners.rsplit("-s", 1)[0] if r.runners not in ("trained", "scripted", "random") else r.runners  # fmt: skip
                    per.setdefault(m if d == "trained" else d, []).append(r.any_tag)
            jax.clear_caches()  # each matchup compiled its own program: free them
            for d, v in per.items():
                p_tag[m][d].append(float(np.mean(v)))
            worst[m].append(float(min(min(v) for v in per.values())))
        results[m]["p_tag"] = p_tag[m]
        results[m]["worst"] = worst[m]
    (args.out / "results.json").write_text(json.dumps(results))
    print(table(results, args, drivers))
    _plot(results, args, drivers)
    print("JSON:\n" + json.dumps(results))


def _cell(x: list[float]) -> str:
    if not x:
        return "–"
    mean, lo, hi = mean_ci(np.asarray(x))
    return f"{mean:.2f} [{lo:.2f}, {hi:.2f}]"


def table(results: dict, args: Args, drivers: tuple[str, ...]) -> str:
    lines = [
        f"Taggers' P(tag) on the held-out arenas (mean over the 7 arenas) after {args.updates} "
        f"PPO updates of the taggers per seed ({args.seeds} seeds, {args.episodes} episodes per "
        "arena; 95% intervals across seeds); rows: whose taggers, columns: whose runners",
        "",
        "| taggers \\ runners | " + " | ".join(drivers) + " | worst case |",
        "|---|" + "---|" * (len(drivers) + 1),
    ]
    for m in args.methods:
        cells = [_cell(results[m]["p_tag"][d]) for d in drivers]
        lines.append(f"| {m} | " + " | ".join(cells) + f" | {_cell(results[m]['worst'])} |")
    lines.append("")
    for m in args.methods:
        r = results[m]
        steps = ", ".join(f"{e:,}" for e in r["env_steps"])
        lines.append(f"{m}: trained in {r['train_s']:.0f} s ({r['steps_per_s']:,.0f} env steps/s), env steps per seed {steps}")  # fmt: skip
    return "\n".join(lines)


def _plot(results: dict, args: Args, drivers: tuple[str, ...]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.6))
    for m in args.methods:
        per_seed = []
        for c in results[m]["curve"]:  # rows by update count: cycles without one share it
            by_update = np.full(args.updates + 1, np.nan)
            for u in range(args.updates + 1):
                v = [r for up, r in c if up == u and np.isfinite(r)]
                by_update[u] = np.mean(v) if v else np.nan
            per_seed.append(by_update)
        mean = np.nanmean(np.asarray(per_seed), axis=0)
        w = max(1, args.updates // 20)  # centred moving average, shorter at the ends
        smooth = [np.nanmean(mean[max(0, i - w) : i + w + 1]) for i in range(len(mean))]
        ax.plot(np.arange(args.updates + 1), smooth, label=m)
    ax.set_xlabel("taggers' PPO updates")
    ax.set_ylabel("taggers' training return")
    ax.set_title(f"grid Tag, {args.seeds} seeds (mean; the co-players differ per method)")
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(args.out / "coplayer_curves.png", dpi=100)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(8, 3.6))
    width = 0.8 / len(args.methods)
    xs = np.arange(len(drivers))
    for i, m in enumerate(args.methods):
        stats = [mean_ci(np.asarray(results[m]["p_tag"][d])) for d in drivers]
        means = [s[0] for s in stats]
        err = [[s[0] - s[1] for s in stats], [s[2] - s[0] for s in stats]]
        ax.bar(xs + (i - (len(args.methods) - 1) / 2) * width, means, width, yerr=err,
               capsize=2, label=f"{m} taggers")  # fmt: skip
    ax.set_xticks(xs, [f"vs {d}" for d in drivers], rotation=15)
    ax.set_ylabel("P(tag), held-out arenas")
    ax.set_title(f"cross-play after {args.updates} updates, {args.seeds} seeds (95% intervals)")
    ax.legend(fontsize=7)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(args.out / "coplayer_crossplay.png", dpi=100)
    plt.close(fig)


if __name__ == "__main__":
    from arenax.cli.common import script_main

    script_main(Args, main, "coplayer_learning.py", __doc__)
