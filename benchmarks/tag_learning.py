"""Does a Tag preset learn? Train it with variants of its teams' PPO options at equal env
steps, then evaluate the trained taggers against random runners (and random taggers as the
floor) on held-out start levels: runners tagged per episode and the fraction of episodes
with a tag, with 95% intervals.

    python benchmarks/tag_learning.py --preset tag-grid --steps 2000000
    python benchmarks/tag_learning.py --preset tag-continuous --steps 100000 --variants default

Variants: ``default`` (the preset as shipped), ``clipped`` (value-loss clipping at the PPO
ratio's ±0.2, in absolute return units), ``unclipped`` (no value clipping).
"""

from __future__ import annotations

import dataclasses
import tempfile
import time
from pathlib import Path

import jax
import tyro
from rich.console import Console
from rich.table import Table

from arenax.eval.teams import evaluate_matchup
from arenax.train import PRESETS, train
from arenax.train.build import make_algorithm


@dataclasses.dataclass(frozen=True)
class Args:
    preset: str = "tag-grid"
    """A Tag preset."""
    steps: int = 2_000_000
    """Env steps per variant."""
    variants: tuple[str, ...] = ("clipped", "unclipped")
    """PPO variants of every team: default, clipped, unclipped."""
    episodes: int = 200
    """Held-out start levels per evaluation."""
    seed: int = 0
    """Training seed (evaluation levels come from another key)."""


def variant(cfg, name: str):
    def team(tc):
        if name == "default":
            return tc
        return dataclasses.replace(
            tc, ppo=dataclasses.replace(tc.ppo, clip_value=name == "clipped")
        )

    return dataclasses.replace(cfg, tagger=team(cfg.tagger), runner=team(cfg.runner))


def main(args: Args) -> None:
    console = Console()
    table = Table(title=f"{args.preset}: trained taggers vs random runners, {args.steps:,} env "
                        f"steps per variant, {args.episodes} held-out starts")  # fmt: skip
    for col in ("variant", "taggers", "tagged / ep", "95% CI", "P(tag)", "95% CI", "train s"):
        table.add_column(col, justify="right")
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.variants:
            cfg = dataclasses.replace(
                variant(PRESETS[args.preset], name), total_steps=args.steps, total_updates=None,
                out_dir=Path(tmp), name=name, progress=False, tensorboard=False, seed=args.seed,
                checkpoint_every=PRESETS[args.preset].chunk * 1000, archive_every=0,
            )  # fmt: skip
            t0 = time.perf_counter()
            res = train(cfg, console=console)
            secs = time.perf_counter() - t0
            algo = make_algorithm(cfg)
            env = algo.env
            policies = {t: algo.learners[algo.team_policy[t]].policy for t in algo.teams}
            init = algo.init(jax.random.key(cfg.seed)).learner
            key = jax.random.key(12345)
            levels = jax.vmap(env.generate)(jax.random.split(key, args.episodes))
            for label, learner in (("trained", res.state.learner), ("initial", init)):
                params = {
                    t: jax.device_get(learner[algo.team_policy[t]].params) for t in algo.teams
                }
                r, _ = evaluate_matchup(env, "trained", "random", policies, params, levels,
                                        jax.random.fold_in(key, 1))  # fmt: skip
                table.add_row(name, label, f"{r.tagged:.3f}", f"{r.tagged_lo:.3f}–{r.tagged_hi:.3f}",
                              f"{r.any_tag:.3f}", f"{r.any_tag_lo:.2f}–{r.any_tag_hi:.2f}",
                              f"{secs:.0f}" if label == "trained" else "")  # fmt: skip
            console.print(table)
        r, _ = evaluate_matchup(env, "random", "random", {}, {}, levels, jax.random.fold_in(key, 1))
        table.add_row("-", "random", f"{r.tagged:.3f}", f"{r.tagged_lo:.3f}–{r.tagged_hi:.3f}",
                      f"{r.any_tag:.3f}", f"{r.any_tag_lo:.2f}–{r.any_tag_hi:.2f}", "")  # fmt: skip
    console.print(table)


if __name__ == "__main__":
    main(tyro.cli(Args))
