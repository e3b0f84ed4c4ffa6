"""Shortest paths against plain-Python breadth-first search references."""

from collections import deque

import jax
import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from arenax.envs.maze import (
    MazeEnv,
    action_distance_map,
    distance_map,
    level_metrics,
    optimal_steps,
    sample_dr_level,
)
from arenax.envs.maze.paths import UNREACHABLE


def bfs_cells(walls, goal):
    h, w = walls.shape
    d = np.full((h, w), UNREACHABLE)
    gx, gy = goal
    d[gy, gx] = 0
    q = deque([(gx, gy)])
    while q:
        x, y = q.popleft()
        for dx, dy in ((1, 0), (-1, 0), (0, 1), (0, -1)):
            nx, ny = x + dx, y + dy
            if 0 <= nx < w and 0 <= ny < h and not walls[ny, nx] and d[ny, nx] == UNREACHABLE:
                d[ny, nx] = d[y, x] + 1
                q.append((nx, ny))
    return d


def bfs_actions(level, env):
    """Fewest actions to success by BFS over (x, y, dir) using the env's own step."""
    step = jax.jit(env.step)
    _, s0 = env.reset(jax.random.key(0), level)
    start = (int(s0.agent_pos[0]), int(s0.agent_pos[1]), int(s0.agent_dir))
    seen = {start: 0}
    q = deque([(start, s0)])
    while q:
        pose, s = q.popleft()
        for a in (0, 1, 2):
            _, ns, _, term, _, _ = step(jax.random.key(0), s, {"agent": np.array([a])})
            if bool(term):
                return seen[pose] + 1
            npose = (int(ns.agent_pos[0]), int(ns.agent_pos[1]), int(ns.agent_dir))
            if npose not in seen:
                seen[npose] = seen[pose] + 1
                q.append((npose, ns.replace(time=s.time * 0)))
    return UNREACHABLE


@given(seed=st.integers(0, 2**20))
def test_distance_map_matches_bfs(seed):
    lv = sample_dr_level(jax.random.key(seed), 9, 11, 40)
    got = np.asarray(jax.jit(distance_map)(lv.walls, lv.goal_pos))
    np.testing.assert_array_equal(got, bfs_cells(np.asarray(lv.walls), np.asarray(lv.goal_pos)))


def test_action_distance_matches_bfs_with_turns():
    env = MazeEnv(height=6, width=7, max_steps=1000)
    f = jax.jit(optimal_steps)
    for seed in range(12):
        lv = sample_dr_level(jax.random.key(seed), 6, 7, 10)
        assert int(f(lv)) == bfs_actions(lv, env), seed


def test_action_distance_simple_case():
    walls = np.zeros((1, 4), bool)
    # agent at x=0 facing left (dir 2), goal at x=3: turn twice, forward x3
    d = np.asarray(action_distance_map(walls, np.array([3, 0])))
    assert d[2, 0, 0] == 5 and d[0, 0, 0] == 3 and d[0, 0, 2] == 1
    assert (d[:, 0, 3] == UNREACHABLE).all()  # nobody stands on the goal


def test_metrics_unsolvable_and_batched():
    walls = np.zeros((3, 3), bool)
    walls[:, 1] = True
    from arenax.envs.maze import MazeLevel

    lv = MazeLevel.create(walls, (0, 0), 0, (2, 2))
    m = jax.jit(level_metrics)(lv)  # compiled (op by op, each primitive compiles on its own)
    assert not bool(m["solvable"]) and int(m["shortest_path"]) == -1 and int(m["walls"]) == 3
    batch = jax.jit(jax.vmap(lambda k: sample_dr_level(k, 13, 13, 60)))(
        jax.random.split(jax.random.key(0), 64)
    )
    mb = jax.jit(jax.vmap(level_metrics))(batch)
    assert mb["shortest_path"].shape == (64,)
    assert 0 < float(mb["solvable"].mean()) < 1
