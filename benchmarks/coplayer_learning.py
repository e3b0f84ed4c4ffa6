"""Whom the taggers play, compared at equal PPO updates of the taggers on grid Tag arenas
with the evaluation protocol of population play: DR + self-play (`tag-grid-sp`), DR + FSP
(`tag-grid-fsp`), DR + PFSP (`tag-grid-pfsp`), PLR⊥ over arenas with self-play
(`tag-grid-plr` with a policy per team), MAESTRO (`tag-grid-maestro`), MAESTRO∥ and
MAESTRO with the paper's co-player rule, each over several seeds trained in one program
(`--seeds`). Then a cross-play round robin on the seven held-out arenas — every method ×
seed's taggers against every method × seed's runners (`arenax eval --cross-play`) — read
by method (`arenax.eval.crossplay`): the method matrix with intervals over both sides'
seeds; each method against the pool with mean, IQM and worst task and their 95%
stratified-bootstrap intervals; the probability of improvement between methods. Prints
markdown tables and JSON; writes the learning curves and the method heatmap as PNGs, the
round robin's cells and matchups as CSVs (`crossplay.csv`, ...).

    python benchmarks/coplayer_learning.py --updates 100 --seeds 3 --out outputs/coplayer_learning
    python benchmarks/coplayer_learning.py --train-only ...  # then --reuse to evaluate
    python benchmarks/coplayer_learning.py --reuse --exploit-updates 30  # and exploiters
    python benchmarks/coplayer_learning.py --reuse --methods sp maestro maestro-g1  # add one
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
from arenax.eval import crossplay as X
from arenax.eval.plots import crossplay_heatmap
from arenax.eval.report import evaluate_run, seed_runs
from arenax.options import POSITIVE, Problem
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
    exploit_updates: int = 0
    """Exploitability: an exploiter runner policy trained this many updates against each
    method's frozen taggers (`arenax exploit`), for the first `exploit_seeds` seeds (0: none)."""
    exploit_seeds: Annotated[int, POSITIVE] = 1
    """Seeds per method whose taggers an exploiter plays (seed 0, 1, ...)."""

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
    # the protocol: a round robin of every method x seed against every other, by method
    roots = [args.out / m for m in args.methods]
    t0 = time.perf_counter()
    report = evaluate_run(
        roots[0], "arenas", args.episodes, seed=1234, console=Console(quiet=True),
        cross_play=True, coplayers=tuple(roots[1:]), out=args.out / "crossplay.csv",
    )  # fmt: skip
    rows = [r for r in report.rows if r.arena in HELDOUT_ARENAS]
    protocol = {
        "eval_s": time.perf_counter() - t0,
        "matrix": [dataclasses.asdict(c) for c in X.method_matrix(rows)],
        "summary": [dataclasses.asdict(m) for side in ("taggers", "runners")
                    for m in X.summary(rows, side)],
        "improvement": {f"{x} > {y}": v for (x, y), v in X.improvement(rows, "taggers").items()},
    }  # fmt: skip
    if args.exploit_updates:
        protocol["exploit"] = exploit_all(args)
    results["protocol"] = protocol
    (args.out / "results.json").write_text(json.dumps(results))
    print(table(results, args))
    _plot(results, args)
    print("JSON:\n" + json.dumps(results))


def exploit_all(args: Args) -> dict[str, list[dict]]:
    """Per method, per exploited seed: the exploiter runners' mean and largest gain over the
    held-out arenas and the frozen taggers' worst case (`arenax.eval.exploit`)."""
    from arenax.eval.exploit import ExploitOptions, exploit

    out: dict[str, list[dict]] = {}
    for m in args.methods:
        for run in _runs(args, m)[: args.exploit_seeds]:
            o = ExploitOptions(team="runner", updates=args.exploit_updates, episodes=args.episodes,
                               seed=1234, overwrite=True)  # fmt: skip
            t0 = time.perf_counter()
            r = exploit(run, o, Console(quiet=True))
            out.setdefault(m, []).append({
                "seconds": time.perf_counter() - t0, "mean_gain": r.mean_gain,
                "max_gain": r.max_gain, "max_gain_arena": r.max_gain_arena, "worst": r.worst,
                "worst_arena": r.worst_arena, "worst_against": r.worst_against,
                "baseline": [x.baseline for x in r.rows], "exploited": [x.exploited for x in r.rows],
            })  # fmt: skip
    return out


def _cell(c: tuple[float, float, float] | list[float]) -> str:
    return f"{c[0]:.2f} [{c[1]:.2f}, {c[2]:.2f}]"


def table(results: dict, args: Args) -> str:
    proto, methods = results["protocol"], args.methods
    at = {(c["taggers"], c["runners"]): c for c in proto["matrix"]}
    lines = [
        f"Cross-play round robin after {args.updates} PPO updates of the taggers per seed: "
        f"every method x seed ({args.seeds} seeds) against every other, {args.episodes} "
        "episodes per pair on each of the 7 held-out arenas; P(tag) (a win of the taggers: "
        "an episode with a tag) of the row method's taggers against the column method's "
        "runners, over both methods' seeds and the arenas, 95% interval from resampling both "
        "sides' seeds",
        "",
        "| taggers \\ runners | " + " | ".join(methods) + " |",
        "|---|" + "---|" * len(methods),
    ]
    for t in methods:
        cells = [at[t, r] for r in methods]
        lines.append(f"| {t} | " + " | ".join(_cell((c["p_tag"], c["p_tag_lo"], c["p_tag_hi"])) for c in cells) + " |")  # fmt: skip
    lines += [
        "",
        "Each method against the pool (every run's runners, or taggers, on every arena: "
        f"{len(methods) * args.seeds} runs x 7 arenas = the same {len(methods) * args.seeds * 7} "
        "tasks for every method); as taggers P(tag), as runners 1 - P(tag); 95% "
        "stratified-bootstrap intervals over the method's seeds; worst: each run's lowest "
        "task (one opponent run on one arena), mean over the method's runs, interval from "
        "resampling them",
        "",
        "| method | taggers: mean | IQM | worst | runners: mean | IQM | worst |",
        "|---|---|---|---|---|---|---|",
    ]
    by = {(m["method"], m["side"]): m for m in proto["summary"]}
    for m in methods:
        t, r = by[m, "taggers"], by[m, "runners"]
        cells = [_cell(x[k]) for x in (t, r) for k in ("mean", "iqm", "worst")]
        lines.append(f"| {m} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "Probability of improvement as taggers, P(row's run scores above column's on a task), "
        "95% interval",
        "",
        "| P(row > column) | " + " | ".join(methods) + " |",
        "|---|" + "---|" * len(methods),
    ]
    for x in methods:
        cells = ["–" if x == y else _cell(proto["improvement"][f"{x} > {y}"]) for y in methods]
        lines.append(f"| {x} | " + " | ".join(cells) + " |")
    if "exploit" in proto:
        ex = proto["exploit"]
        n = len(next(iter(ex.values())))
        lines += [
            "",
            f"Exploitability: a fresh runner policy trained {args.exploit_updates} updates "
            f"against each method's frozen taggers ({n} seed{'s' if n > 1 else ''} each), "
            "measured on the 7 held-out arenas against the taggers' own runners; the frozen "
            "taggers' P(tag) (mean over arenas) against their partner and against the "
            "exploiter, the exploiter's mean and largest gain, the taggers' worst case over "
            "both co-players and every arena (means over the exploited seeds)",
            "",
            "| taggers of | vs partner | vs exploiter | mean gain | largest gain | worst case |",
            "|---|---|---|---|---|---|",
        ]
        for m in methods:
            means = {k: float(np.mean([np.mean(r[k]) for r in ex[m]]))
                     for k in ("baseline", "exploited", "mean_gain", "max_gain", "worst")}  # fmt: skip
            lines.append(f"| {m} | {means['baseline']:.2f} | {means['exploited']:.2f} | "
                         f"{means['mean_gain']:+.2f} | {means['max_gain']:+.2f} | "
                         f"{means['worst']:.2f} |")  # fmt: skip
    lines.append("")
    for m in methods:
        r = results[m]
        steps = ", ".join(f"{e:,}" for e in r["env_steps"])
        lines.append(f"{m}: trained in {r['train_s']:.0f} s ({r['steps_per_s']:,.0f} env steps/s), env steps per seed {steps}")  # fmt: skip
    lines.append(f"round robin: {proto['eval_s']:.0f} s")
    return "\n".join(lines)


def _plot(results: dict, args: Args) -> None:
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

    cells = [X.MethodCell(**c) for c in results["protocol"]["matrix"]]
    crossplay_heatmap(
        cells, args.out / "coplayer_crossplay.png",
        f"cross-play by method after {args.updates} updates: P(tag), {args.seeds} seeds each "
        "(95% interval over both sides' seeds)",
    )  # fmt: skip


if __name__ == "__main__":
    from arenax.cli.common import script_main

    script_main(Args, main, "coplayer_learning.py", __doc__)
