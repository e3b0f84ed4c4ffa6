"""`benchmarks/corridor_probe.py`: how deep a goal sits in a dead end, which side corridor
a cell of the corridor mazes lies in, and bad input refused."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import jax
import numpy as np

from arenax.envs.maze.suites import HELDOUT_MAZES
from helpers import benchmark_script

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "corridor_probe.py"
probe = benchmark_script("corridor_probe")


def test_the_corridor_mazes_goals_lie_at_the_end_of_their_corridors() -> None:
    # SmallCorridor (13 x 13): the goal one row from the middle wall row 6, at row 5 or 7:
    # 5 moves to the hallway row 0 or 12; LargeCorridor (19 x 19): 8 moves
    for name, depth, corridors in (("SmallCorridor", 5, 10), ("LargeCorridor", 8, 16)):
        maze = HELDOUT_MAZES[name]
        levels = jax.vmap(maze.sample)(jax.random.split(jax.random.key(0), 40))
        walls, goals = np.asarray(levels.walls), np.asarray(levels.goal_pos)
        assert {probe.goal_depth(walls[i], goals[i]) for i in range(40)} == {depth}
        # every goal at least 5 deep; the dead-end cells are the corridors' closed ends
        assert probe.depth_shares(levels) == (1.0, 1.0, 1.0, float(corridors), 40)
        size = maze.height
        free = [(x, y) for y in range(size) for x in range(size) if not walls[0][y, x]]
        ids = {probe.side_corridor(x, y, size) for x, y in free} - {None}
        assert len(ids) == corridors
        # every goal is in a corridor; the hallways round the edge are in none
        assert all(probe.side_corridor(int(x), int(y), size) for x, y in goals)
        edge = [(x, y) for x, y in free if x in (0, size - 1) or y in (0, size - 1)]
        assert edge and all(probe.side_corridor(x, y, size) is None for x, y in edge)


def test_a_goal_depth_by_hand() -> None:
    walls = np.zeros((5, 5), bool)
    assert probe.goal_depth(walls, (2, 2)) == 0  # open floor
    assert probe.goal_depth(walls, (0, 0)) == 0  # a corner of open floor: two neighbours
    # a one-wide L-shaped dead end: (0, 4) -> (0, 3) -> (0, 2) -> (1, 2), then open floor
    walls[2:, 1] = True
    walls[2, 1] = False
    walls[1, 0] = True
    walls[3:, 2:] = False
    assert probe.goal_depth(walls, (0, 4)) == 3
    assert probe.goal_depth(walls, (0, 3)) == 0  # inside the corridor, not at its end


def test_bad_input_is_one_error_line(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.json").write_text("{}")
    for args, line in (
        ([str(run), "--episodes", "0"], "error: episodes=0: must be in [1, 10000]"),
        (
            [str(run), "--dead-end-levels", "5000"],
            "error: dead_end_levels=5000: must be in [0, 1000]",
        ),
        ([str(tmp_path)], f"error: runs={str(tmp_path)!r}: not a run folder (no config.json)"),
        (
            [str(run), "--heatmap", str(tmp_path / "x.jpg")],
            f"error: heatmap={str(tmp_path / 'x.jpg')!r}: must end with .png",
        ),
    ):
        done = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True)
        assert (done.returncode, done.stderr.strip().splitlines()[-1]) == (2, line)
