"""Learning targets of the classic-control presets: train each over several seeds and report
the env steps and wall time until the training return first reaches the target (a moving
mean over the last ``--window`` cycles that ended episodes), and the final zero-shot return on Gymnasium's physics (the
``default`` held-out level, 100 episodes, 95% interval).

    python benchmarks/classic_learning.py                    # cartpole-dr, pendulum-ppo
    python benchmarks/classic_learning.py --presets pendulum-ddpg --seeds 0 1 2
    python benchmarks/classic_learning.py --presets pendulum-ddpg --target -200 --utd 1 0.5 0.25
    python benchmarks/classic_learning.py --presets pendulum-ddpg --target -200 --actor-every 1 2

Targets: CartPole the maximum return 500; Pendulum −250 (mean over the window); `--target`
sets another. `--utd`: one row per update-to-data ratio of a DDPG preset; `--actor-every`:
one row per actor delay (`--agent.ddpg.actor-every`).
"""

from __future__ import annotations

import dataclasses
import itertools
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated

import jax
import numpy as np
from rich.console import Console
from rich.table import Table

from arenax.envs.evaluation import evaluate_levels
from arenax.options import POSITIVE, OrNone, Problem
from arenax.training import PRESETS, train
from arenax.training.build import make_env
from arenax.training.program import Program
from arenax.training.variants import tiny

TARGETS = {"cartpole": 500.0, "pendulum": -250.0}


@dataclasses.dataclass(frozen=True)
class Args:
    presets: tuple[str, ...] = ("cartpole-dr", "pendulum-ppo")
    """Classic-control presets."""
    seeds: tuple[int, ...] = (0, 1, 2)
    """Training seeds."""
    window: Annotated[int, POSITIVE] = 5
    """Cycles (that ended episodes) in the moving mean of the training return."""
    target: float | None = None
    """Return to reach (default: the family's, above)."""
    utd: tuple[float, ...] = ()
    """DDPG presets: train once per update-to-data ratio (default: the preset's)."""
    actor_every: tuple[int, ...] = ()
    """DDPG presets: train once per actor delay (critic steps per actor step; default: the
    preset's)."""
    steps: Annotated[int | None, OrNone(POSITIVE)] = None
    """Env steps per run (default: the preset's budget)."""
    tiny: bool = False
    """Every run at the test suite's small shapes (`arenax.training.variants.tiny`): a
    check that the script runs (give it a few `--steps`), not a result."""

    def problems(self) -> Iterator[Problem]:
        classic = [n for n, c in PRESETS.items() if c.family.name in TARGETS]
        unknown = [n for n in self.presets if n not in classic]
        if not self.presets or unknown:
            yield Problem(
                "presets", self.presets, f"classic presets with a target: {', '.join(classic)}"
            )
        elif self.utd or self.actor_every:
            no_ddpg = [
                n for n in self.presets if not next(iter(PRESETS[n].teams.values())).off_policy
            ]
            if no_ddpg:
                yield Problem(
                    "presets",
                    self.presets,
                    f"--utd / --actor-every: {', '.join(no_ddpg)} do not learn with DDPG",
                )
        if any(n < 1 for n in self.actor_every):
            yield Problem("actor_every", self.actor_every, "each must be a positive integer")
        if not self.seeds:
            yield Problem("seeds", self.seeds, "at least one seed")


def first_reach(rows: list[dict], target: float, window: int) -> tuple[int | None, float | None]:
    """Env steps and wall time at the first cycle where the mean return of the last
    ``window`` cycles that ended episodes reaches the target."""
    key = "return/agent" if "return/agent" in rows[0] else "return"
    seen: list[float] = []
    for r in rows:
        if np.isfinite(r[key]):
            seen.append(float(r[key]))
            if len(seen) >= window and np.mean(seen[-window:]) >= target:
                return int(r["env_steps"]), float(r["wall_time"])
    return None, None


def main(args: Args) -> None:
    console = Console(width=max(Console().width, 120))
    table = Table(title="classic control: steps and time to the target, zero-shot return on "
                        "Gymnasium's physics")  # fmt: skip
    for col in ("preset", "UTD", "actor every", "seed", "target", "steps to target", "time to target (s)",
                "budget", "train s", "default return"):  # fmt: skip
        table.add_column(col, justify="right")
    for name in args.presets:
        base = tiny(PRESETS[name]) if args.tiny else PRESETS[name]
        if args.steps is not None:
            base = dataclasses.replace(base, total_steps=args.steps, total_updates=None)
        target = TARGETS[base.family.name] if args.target is None else args.target
        team = next(iter(base.teams.values()))
        grid = itertools.product(args.utd or (None,), args.actor_every or (None,), args.seeds)
        for utd, every, seed in grid:
            if team.off_policy:
                ddpg = team.learner
                if utd is not None:
                    ddpg = dataclasses.replace(ddpg, update_to_data=utd)
                if every is not None:
                    ddpg = dataclasses.replace(ddpg, actor_every=every)
                base = dataclasses.replace(base, teams={"agent": dataclasses.replace(team, learner=ddpg)})  # fmt: skip
            with tempfile.TemporaryDirectory() as tmp:
                cfg = dataclasses.replace(base, seed=seed, out_dir=Path(tmp), name="run",
                                          progress=False, tensorboard=False)  # fmt: skip
                program = Program.build(cfg)
                t0 = time.perf_counter()
                res = train(program, console=console)
                secs = time.perf_counter() - t0
            steps, wall = first_reach(res.rows, target, args.window)
            algo = program.curriculum
            policy, params = algo.team_policies()["agent"], algo.team_params(res.state)["agent"]
            r = evaluate_levels(make_env(cfg), policy, params, 100, jax.random.key(seed))[0]
            learner = next(iter(cfg.teams.values())).learner
            ddpg_used = learner if learner.off_policy else None
            utd_shown = "-" if ddpg_used is None else f"{ddpg_used.update_to_data:g}"
            every_shown = "-" if ddpg_used is None else str(ddpg_used.actor_period)
            table.add_row(
                name, utd_shown, every_shown, str(seed), f"{target:g}", f"{steps:,}" if steps else "not reached",
                f"{wall:.0f}" if wall else "-", f"{res.rows[-1]['env_steps']:,}", f"{secs:.0f}",
                f"{r.ret:.1f} ±{r.ret_hi - r.ret:.1f}",
            )  # fmt: skip
            console.print(table)


if __name__ == "__main__":
    from arenax.cli.common import script_main

    script_main(Args, main, "classic_learning.py", __doc__)
