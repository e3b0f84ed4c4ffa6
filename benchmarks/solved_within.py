"""Held-out solved rates under another episode cap than the maze's own: how a trained
student compares with a peer that evaluates shorter episodes.

    python benchmarks/solved_within.py runs/paper/dr runs/paper/plr --steps 250

arenax's named mazes follow minimax: an episode may last `2 (h + 2) (w + 2)` steps (450 on
the 13 × 13 mazes); jaxued's example evaluates `max_steps_in_episode` = 250. Each maze is
played as `arenax eval` plays it (same key, sampled actions, `--episodes` per seed) to the
maze's own cap, and an episode counts as solved within N steps when it reached the goal in
at most N: up to step N the episode is the one a cap of N would have played. Prints per
maze the mean over a run's seeds of both rates. A run of several seeds is its seeds.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def seeds_of(run: Path) -> list[Path]:
    """The run folders of a run (`seed*` of a stack, else the run itself)."""
    found = sorted(p for p in run.glob("seed*") if (p / "config.json").is_file())
    return found or [run]


def rates(run: Path, suite: str, episodes: int, steps: int) -> dict[str, tuple[float, float]]:
    """`{maze: (solved within its own cap, solved within `steps`)}` of one run folder."""
    import jax
    import numpy as np

    from arenax.envs.maze.evaluation import play
    from arenax.envs.maze.suites import HELDOUT_MAZES, resolve_mazes
    from arenax.eval.report import load_players

    _, algo, policies, params, _ = load_players(run)
    env = algo.env
    key = jax.random.key(0)  # as `arenax eval` (seed 0): maze i uses fold_in(key, i)
    out = {}
    for i, name in enumerate(resolve_mazes(suite)):
        maze = HELDOUT_MAZES[name]
        maze_env = maze.make_env(view_size=env.view_size, normalize_obs=env.normalize_obs)
        k_levels, k_play = jax.random.split(jax.random.fold_in(key, i))
        levels = jax.vmap(maze.sample)(jax.random.split(k_levels, episodes))
        res = jax.device_get(play(maze_env, policies["agent"], params["agent"], levels, k_play))
        success, length = np.asarray(res["success"]), np.asarray(res["length"])
        out[name] = (float(success.mean()), float((success & (length <= steps)).mean()))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", type=Path, nargs="+", help="run folders (maze students)")
    parser.add_argument("--steps", type=int, default=250, help="the other cap (jaxued: 250)")
    parser.add_argument("--suite", default="classic", help="held-out mazes (arenax list)")
    parser.add_argument("--episodes", type=int, default=100, help="episodes per maze per seed")
    args = parser.parse_args()
    if args.steps < 1 or args.episodes < 1:
        parser.exit(2, "error: --steps and --episodes must be >= 1\n")
    for run in args.runs:
        if not (run / "config.json").is_file():
            parser.exit(2, f"error: {run}: not a run folder (no config.json)\n")
    from arenax.envs.maze.suites import resolve_mazes

    try:
        resolve_mazes(args.suite)
    except ValueError as exc:
        parser.exit(2, f"error: --suite: {exc}\n")
    cols = [f"{run.name}: own cap / ≤ {args.steps}" for run in args.runs]
    table: dict[str, list[str]] = {}
    means: list[tuple[float, float]] = []
    for run in args.runs:
        per_seed = [rates(s, args.suite, args.episodes, args.steps) for s in seeds_of(run)]
        mazes = list(per_seed[0])
        own = {m: sum(r[m][0] for r in per_seed) / len(per_seed) for m in mazes}
        cap = {m: sum(r[m][1] for r in per_seed) / len(per_seed) for m in mazes}
        for m in mazes:
            table.setdefault(m, []).append(f"{own[m]:.3f} / {cap[m]:.3f}")
        means.append((sum(own.values()) / len(mazes), sum(cap.values()) / len(mazes)))
    print(f"| maze | {' | '.join(cols)} |")
    print(f"|---|{'---|' * len(cols)}")
    for m, cells in table.items():
        print(f"| {m} | {' | '.join(cells)} |")
    print(f"| mean | {' | '.join(f'{a:.3f} / {b:.3f}' for a, b in means)} |")


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        raise SystemExit(130) from None
