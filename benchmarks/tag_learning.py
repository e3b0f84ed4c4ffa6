"""Does a Tag preset learn? Train it with variants of its teams' PPO options at equal env
steps (over several seeds), then evaluate the trained taggers against random runners (and
the untrained policy and random taggers as floors) on held-out start levels: runners
tagged per episode and the fraction of episodes with a tag, with 95% intervals.

    python benchmarks/tag_learning.py --preset tag-grid --steps 400000 --seeds 0 1 2
    python benchmarks/tag_learning.py --preset tag-grid --steps 3000000 --grid-size 100 \
        --n-envs 256 --variants clipped        # the preset before it was changed
    python benchmarks/tag_learning.py --preset tag-continuous --steps 100000 --variants default

Variants of every team's PPO: ``default`` (the preset as shipped: no value clipping),
``clipped`` (value-loss clipping at the PPO ratio's ±0.2, in absolute return units: the old
default), ``unclipped`` (no value clipping), ``scaled`` / ``unclipped-scaled`` (the same with
rewards scaled by 0.1 before GAE, ``ppo.reward_scale``).
"""

from __future__ import annotations

import dataclasses
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated

import jax
from rich.console import Console
from rich.table import Table

from arenax.envs.tag.evaluation import evaluate_matchup
from arenax.options import POSITIVE, OrNone, Problem
from arenax.training import PRESETS, train
from arenax.training.program import Program


@dataclasses.dataclass(frozen=True)
class Args:
    preset: str = "tag-grid"
    """A Tag preset."""
    steps: Annotated[int, POSITIVE] = 2_000_000
    """Env steps per variant."""
    variants: tuple[str, ...] = ("clipped", "unclipped", "scaled", "unclipped-scaled")
    """PPO variants of every team: default, clipped, unclipped, scaled, unclipped-scaled."""
    episodes: Annotated[int, POSITIVE] = 400
    """Held-out start levels per evaluation."""
    seeds: tuple[int, ...] = (0,)
    """Training seeds (evaluation levels come from another key)."""
    n_envs: Annotated[int | None, OrNone(POSITIVE)] = None
    """Override the preset's number of envs."""
    grid_size: Annotated[int | None, OrNone(POSITIVE)] = None
    """Override grid Tag's size L (cells 0..L)."""

    def problems(self) -> Iterator[Problem]:
        tag = [n for n, c in PRESETS.items() if c.family.name in ("tag", "grid-tag")]
        if self.preset not in tag:
            yield Problem("preset", self.preset, f"a Tag preset: {', '.join(tag)}")
        bad = [v for v in self.variants if v != "default" and v not in VARIANTS]
        if not self.variants or bad:
            yield Problem("variants", self.variants, f"allowed: default, {', '.join(VARIANTS)}")


VARIANTS = {
    "clipped": dict(clip_value=True, reward_scale=1.0),
    "unclipped": dict(clip_value=False, reward_scale=1.0),
    "scaled": dict(clip_value=True, reward_scale=0.1),
    "unclipped-scaled": dict(clip_value=False, reward_scale=0.1),
}


def variant(cfg, name: str):
    def team(tc):
        if name == "default":
            return tc
        return dataclasses.replace(tc, learner=dataclasses.replace(tc.learner, **VARIANTS[name]))

    return dataclasses.replace(cfg, teams={t: team(tc) for t, tc in cfg.teams.items()})


def cells(r) -> tuple[str, str]:
    """Tags per episode (mean ± 95% half-width) and P(tag) (Wilson interval)."""
    return (
        f"{r.tagged:.3f} ±{r.tagged_hi - r.tagged:.3f}",
        f"{r.any_tag:.3f} ({r.any_tag_lo:.3f}–{r.any_tag_hi:.3f})",
    )


def configure(args: Args, name: str, seed: int, out_dir: Path):
    cfg = variant(PRESETS[args.preset], name)
    if args.n_envs is not None:
        cfg = dataclasses.replace(cfg, n_envs=args.n_envs)
    if args.grid_size is not None:
        cfg = dataclasses.replace(cfg, env=dataclasses.replace(cfg.env, size=args.grid_size))
    return dataclasses.replace(
        cfg, total_steps=args.steps, total_updates=None, out_dir=out_dir,
        name=f"{name}-s{seed}", progress=False, tensorboard=False, seed=seed,
        checkpoint_every=cfg.chunk * 1000, archive_every=0,
    )  # fmt: skip


def main(args: Args) -> None:
    console = Console()
    setup = f", {args.n_envs} envs" if args.n_envs else ""
    setup += f", L = {args.grid_size}" if args.grid_size else ""
    table = Table(title=f"{args.preset}{setup}: trained taggers vs random runners, "
                        f"{args.steps:,} env steps per run, {args.episodes} held-out starts")  # fmt: skip
    for col in ("variant", "seed", "taggers", "tags/ep", "P(tag)", "train s"):
        table.add_column(col, justify="right")
    with tempfile.TemporaryDirectory() as tmp:
        for seed in args.seeds:
            for i, name in enumerate(args.variants):
                program = Program.build(configure(args, name, seed, Path(tmp)))
                t0 = time.perf_counter()
                res = train(program, console=console)
                secs = time.perf_counter() - t0
                algo = program.curriculum
                env = algo.env
                policies = algo.team_policies()
                key = jax.random.key(12345)
                levels = jax.vmap(env.generate)(jax.random.split(key, args.episodes))
                runs = [("trained", res.state.learner)]
                if i == 0:  # the untrained policy of this seed (equal for every variant)
                    runs.append(("initial", algo.init(jax.random.key(seed)).learner))
                for label, learner in runs:
                    params = jax.device_get(algo.players.params(learner))
                    r, _ = evaluate_matchup(env, "trained", "random", policies, params, levels,
                                            jax.random.fold_in(key, 1))  # fmt: skip
                    table.add_row(name if label == "trained" else "-", str(seed), label, *cells(r),
                                  f"{secs:.0f}" if label == "trained" else "")  # fmt: skip
                console.print(table)
        r, _ = evaluate_matchup(env, "random", "random", {}, {}, levels, jax.random.fold_in(key, 1))
        table.add_row("-", "-", "random", *cells(r), "")
    console.print(table)


if __name__ == "__main__":
    from arenax.cli.common import script_main

    script_main(Args, main, "tag_learning.py", __doc__)
