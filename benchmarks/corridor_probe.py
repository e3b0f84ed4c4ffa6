"""Why a maze student fails the corridor mazes: does it look into the side corridors?

SmallCorridor and LargeCorridor are a ring of one-wide hallways around rows of one-wide
dead-end side corridors (5 and 8 cells deep), the goal at the far end of one of them: a
student that cannot see the goal from the hallway must walk into corridors to find it.
For each run (a maze student; a stack of seeds: each seed) this plays `--episodes`
episodes of both mazes (sampled actions, as `arenax eval`) and prints per maze the solved
rate, the side corridors entered per episode (all episodes, and the unsolved ones), how
often the goal's corridor was entered, and the share of steps spent in side corridors.
From each run's final checkpoint it also prints how often its curriculum's level buffer
put the goal at the end of a one-wide dead end (`goal_depth` >= 1, 3, 5 cells) and how
many dead-end cells its levels hold, beside DR's generator (`--dr-levels` samples): what
the student trained on; and each student's solved rate on DR levels whose goal is at least 3
moves deep in a dead end, beside DR levels whose goal is on open floor (the same levels for
every student): dead ends in general, or the corridor mazes' hallways? `--heatmap PNG`
draws where each run's (first seed's) student steps on SmallCorridor.

    python benchmarks/corridor_probe.py runs/paper/paccel runs/paper/pplr --episodes 32 \
        --heatmap docs/images/paper/corridor_visits.png
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import tyro

MAZES = ("SmallCorridor", "LargeCorridor")


@dataclasses.dataclass(frozen=True)
class Args:
    runs: tyro.conf.Positional[tuple[Path, ...]]
    """Run folders of maze students (a stack: each of its seeds)."""
    episodes: int = 32
    """Episodes per corridor maze and seed."""
    dr_levels: int = 4000
    """DR levels sampled beside the buffers (0: none)."""
    dead_end_levels: int = 100
    """DR levels with the goal >= 3 deep in a dead end (and as many with it on open floor)
    each student plays (0: none)."""
    heatmap: Path | None = None
    """Also draw where each run's first seed steps on SmallCorridor (a PNG, a panel a run)."""

    def problems(self) -> Iterator[Any]:
        from arenax.options import Problem

        if not self.runs:
            yield Problem("runs", self.runs, "name at least one run folder")
        for run in self.runs:
            if not (run / "config.json").is_file():
                yield Problem("runs", str(run), "not a run folder (no config.json)")
        for field, low, high in (
            ("episodes", 1, 10_000),
            ("dr_levels", 0, 100_000),
            ("dead_end_levels", 0, 1_000),
        ):
            value = getattr(self, field)
            if not low <= value <= high:
                yield Problem(field, value, f"must be in [{low}, {high}]")


def goal_depth(walls: np.ndarray, goal: tuple[int, int]) -> int:
    """Moves from the goal `(x, y)` of `walls (H, W) bool` (outside the grid is wall)
    along a one-wide dead end to its first cell of three or more open neighbours (a
    junction or open floor): 0 where the goal is not at the closed end of a corridor."""
    h, w = walls.shape
    free = np.zeros((h + 2, w + 2), bool)
    free[1:-1, 1:-1] = ~walls

    def open_neighbours(x: int, y: int) -> list[tuple[int, int]]:
        steps = ((1, 0), (-1, 0), (0, 1), (0, -1))
        return [(x + dx, y + dy) for dx, dy in steps if free[y + 1 + dy, x + 1 + dx]]

    here, prev, depth = (int(goal[0]), int(goal[1])), None, 0
    while depth <= h * w:
        around = open_neighbours(*here)
        if len(around) != (1 if prev is None else 2):  # not (still) inside a dead end
            return depth
        here, prev = next(c for c in around if c != prev), here
        depth += 1
    return depth


def side_corridor(x: int, y: int, size: int) -> tuple[int, bool] | None:
    """The side corridor `(column, above the middle row)` that cell `(x, y)` of a
    corridor maze of `size` lies in, `None` for a hallway cell (the layout of
    `arenax.envs.maze.suites`: corridors in the even columns 2 … size − 3, above and below
    the wall row `size // 2`; hallways round the edge)."""
    mid = size // 2
    if x % 2 or not 2 <= x <= size - 3 or not 1 <= y <= size - 2 or y == mid:
        return None
    return x, y < mid


def student(run: Path) -> tuple[Any, Any, int, bool]:
    """`(policy, params, view size, normalized observations)` of a run's maze student."""
    from arenax.eval.report import load_players

    _, algo, policies, params, _ = load_players(run)
    return policies["agent"], params["agent"], algo.env.view_size, algo.env.normalize_obs


def play_corridors(agent: tuple[Any, Any, int, bool], name: str, episodes: int) -> dict[str, Any]:
    """Solved rate and side-corridor visits of `episodes` episodes of maze `name` by
    `agent` (`student`'s), and the steps spent on each cell over them (`visits (H, W)`)
    with the maze's `walls`."""
    import jax

    from arenax.envs.maze.evaluation import play
    from arenax.envs.maze.suites import HELDOUT_MAZES

    policy, params, view_size, normalize_obs = agent
    maze = HELDOUT_MAZES[name]
    env = maze.make_env(view_size=view_size, normalize_obs=normalize_obs)
    k_levels, k_play = jax.random.split(jax.random.key(0))
    levels = jax.vmap(maze.sample)(jax.random.split(k_levels, episodes))

    def one(level: Any, key: jax.Array) -> dict[str, jax.Array]:  # record: every step's cell
        single = jax.tree.map(lambda x: x[None], level)
        return play(env, policy, params, single, key, record=True)

    res = jax.device_get(jax.jit(jax.vmap(one))(levels, jax.random.split(k_play, episodes)))
    goals = np.asarray(levels.goal_pos)
    entered, goal_entered, share = [], [], []
    visits = np.zeros((maze.height, maze.width))
    for e in range(episodes):
        trace = res["trace"][e]
        cells = [(int(x), int(y)) for x, y, _ in trace if x >= 0]
        for x, y in cells:
            visits[y, x] += 1
        visited = [side_corridor(x, y, maze.height) for x, y in cells]
        seen = {c for c in visited if c is not None}
        entered.append(len(seen))
        goal_entered.append(side_corridor(*map(int, goals[e]), maze.height) in seen)
        share.append(np.mean([c is not None for c in visited]))
    solved = np.asarray(res["success"]).reshape(-1)
    entered_a = np.asarray(entered, float)
    return {
        "solved": float(solved.mean()),
        "entered": float(entered_a.mean()),
        "entered_unsolved": float(entered_a[~solved].mean()) if (~solved).any() else float("nan"),
        "goal_corridor": float(np.mean(goal_entered)),
        "share": float(np.mean(share)),
        "corridors": 2 * len(range(2, maze.height - 2, 2)),
        "visits": visits,
        "walls": np.asarray(levels.walls[0]),
    }


def depth_shares(levels: Any, mask: np.ndarray | None = None) -> tuple[float, ...]:
    """Shares of `levels` (leaves `(N, ...)`) whose goal is >= 1, 3 and 5 moves deep in a
    dead end, the mean count of dead-end cells (open cells of one open neighbour) per
    level, and the number of levels."""
    walls, goals = np.asarray(levels.walls), np.asarray(levels.goal_pos)
    rows = np.arange(len(walls)) if mask is None else np.flatnonzero(mask)
    depths = np.array([goal_depth(walls[i], goals[i]) for i in rows])
    free = np.pad(~walls[rows], ((0, 0), (1, 1), (1, 1))).astype(np.int32)
    around = free[:, :-2, 1:-1] + free[:, 2:, 1:-1] + free[:, 1:-1, :-2] + free[:, 1:-1, 2:]
    dead_ends = ((around == 1) & (free[:, 1:-1, 1:-1] == 1)).sum(axis=(1, 2))
    shares = [float((depths >= d).mean()) for d in (1, 3, 5)]
    return (*shares, float(dead_ends.mean()), len(depths))


def dead_end_levels(count: int, min_depth: int) -> tuple[Any, Any]:
    """`count` solvable DR levels (13 × 13, 60 walls) whose goal is at least `min_depth`
    moves deep in a one-wide dead end, and `count` whose goal is on open floor (depth 0):
    the same levels for every student."""
    import jax

    import arenax
    from arenax.envs.maze.paths import level_metrics

    gen = arenax.make_generator("maze/dr", height=13, width=13, n_walls=60)
    levels = jax.vmap(gen)(jax.random.split(jax.random.key(1), 200 * count))
    solvable = np.asarray(jax.vmap(level_metrics)(levels)["solvable"])
    walls, goals = np.asarray(levels.walls), np.asarray(levels.goal_pos)
    depths = np.array(
        [goal_depth(walls[i], goals[i]) if solvable[i] else -1 for i in range(len(walls))]
    )
    deep, open_floor = np.flatnonzero(depths >= min_depth), np.flatnonzero(depths == 0)
    if len(deep) < count:
        from arenax.options import ConfigError

        raise ConfigError(f"only {len(deep)} of {len(depths)} DR levels are {min_depth} deep")
    take = lambda rows: jax.tree.map(lambda x: x[rows[:count]], levels)  # noqa: E731
    return take(deep), take(open_floor)


def solved_on(agent: tuple[Any, Any, int, bool], levels: Any) -> float:
    """Solved rate of `agent` (`student`'s) on `levels` (13 × 13; one episode each,
    sampled actions, the 13 × 13 named mazes' step cap of 450)."""
    import jax

    from arenax.envs.maze.evaluation import play
    from arenax.envs.maze.suites import HELDOUT_MAZES

    policy, params, view_size, normalize_obs = agent
    env = HELDOUT_MAZES["SmallCorridor"].make_env(view_size, normalize_obs)  # 13 x 13, 450 steps
    return float(np.asarray(play(env, policy, params, levels, jax.random.key(2))["success"]).mean())


def draw_visits(panels: list[tuple[str, dict[str, Any]]], path: Path) -> None:
    """One panel per `(title, play_corridors result)`: the share of steps on each cell
    (log colour scale), walls black, cells never stepped on white."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import LogNorm

    fig, axes = plt.subplots(1, len(panels), figsize=(3.4 * len(panels), 4.0), squeeze=False)
    for ax, (title, r) in zip(axes[0], panels, strict=True):
        share = np.ma.masked_where(r["walls"] | (r["visits"] == 0), r["visits"] / r["visits"].sum())
        ax.imshow(np.where(r["walls"], 0.0, 1.0), cmap="gray", vmin=0, vmax=1)
        image = ax.imshow(share, cmap="viridis", norm=LogNorm(vmin=1e-4, vmax=1e-1))
        ax.set_title(f"{title}\nsolved {r['solved']:.2f}\nside corridors entered {r['entered']:.1f}",
                     fontsize=9)  # fmt: skip
        ax.set_xticks([])
        ax.set_yticks([])
    fig.colorbar(image, ax=axes[0].tolist(), shrink=0.8, label="share of steps on the cell")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)


def main(args: Args) -> None:
    import jax
    from solved_within import seeds_of  # a stack's seeds (this folder is on the path)

    import arenax
    from arenax.training.rundir import check_writable_file

    if args.heatmap is not None:  # before minutes of play, not after
        check_writable_file(args.heatmap, "heatmap", (".png",))
    seeds = [
        (seed.name if seed == run else f"{run.name}/{seed.name}", run, seed)
        for run in args.runs
        for seed in seeds_of(run)
    ]
    agents = {seed: student(seed) for _, _, seed in seeds}
    print("| run | maze | solved | side corridors entered (of n) | in unsolved episodes "
          "| entered the goal's | share of steps in side corridors |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    buffers, panels, drawn = [], [], set()
    for label, run, seed in seeds:
        for name in MAZES:
            r = play_corridors(agents[seed], name, args.episodes)
            if name == MAZES[0] and run not in drawn:  # a run's first seed
                drawn.add(run)
                panels.append((label, r))
            print(
                f"| {label} | {name} | {r['solved']:.2f} | {r['entered']:.1f} "
                f"(of {r['corridors']}) | {r['entered_unsolved']:.1f} | "
                f"{r['goal_corridor']:.2f} | {r['share']:.2f} |"
            )
        curriculum = arenax.load_run(seed).state.curriculum
        if hasattr(curriculum, "levels") and hasattr(curriculum, "filled"):
            buffers.append((label, depth_shares(curriculum.levels, np.asarray(curriculum.filled))))
    if args.dr_levels:
        gen = arenax.make_generator("maze/dr", height=13, width=13, n_walls=60)
        keys = jax.random.split(jax.random.key(0), args.dr_levels)
        buffers.append(("DR's generator (60 walls)", depth_shares(jax.vmap(gen)(keys))))
    print()
    print("| levels | goal in a dead end | >= 3 deep | >= 5 deep | dead-end cells per level "
          "| levels |")  # fmt: skip
    print("|---|---|---|---|---|---|")
    for label, (d1, d3, d5, cells, n) in buffers:
        print(f"| {label} | {d1:.3f} | {d3:.3f} | {d5:.4f} | {cells:.1f} | {n} |")
    if args.dead_end_levels:
        deep, open_floor = dead_end_levels(args.dead_end_levels, 3)
        n = args.dead_end_levels
        print()
        print(f"| student | {n} DR levels, goal >= 3 deep in a dead end: solved "
              f"| {n} DR levels, goal on open floor: solved |")  # fmt: skip
        print("|---|---|---|")
        for label, _, seed in seeds:
            agent = agents[seed]
            print(
                f"| {label} | {solved_on(agent, deep):.2f} | {solved_on(agent, open_floor):.2f} |"
            )
    if args.heatmap is not None:
        draw_visits(panels, args.heatmap)
        print(f"wrote {args.heatmap}")


if __name__ == "__main__":
    from arenax.cli.common import script_main

    script_main(Args, main, "corridor_probe.py", __doc__)
