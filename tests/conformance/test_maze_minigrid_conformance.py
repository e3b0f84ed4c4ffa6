"""Conformance with the real MiniGrid package (gymnasium).

The same levels are built in MiniGrid (outer wall added, our cell (x, y) is MiniGrid's
(x + 1, y + 1)) and long random action sequences are replayed in both. Compared per step:
the observation image (ours is MiniGrid's ``obs["image"]`` transposed ``(1, 0, 2)``: we are
row-major), the direction, the reward and both episode-end flags. The observation returned
together with ``terminated`` is not compared: MiniGrid moves the agent onto the goal, ours
stays in front of it (the arenax convention; that observation is never learned from).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from minigrid.core.grid import Grid
from minigrid.core.mission import MissionSpace
from minigrid.core.world_object import Goal, Wall
from minigrid.minigrid_env import MiniGridEnv

from arenax.envs.maze import MazeEnv, MazeLevel, sample_dr_level


class LevelGrid(MiniGridEnv):
    """A MiniGrid env that builds one arenax level."""

    def __init__(self, level: MazeLevel, view_size: int, max_steps: int):
        self.level = level
        h, w = level.walls.shape
        super().__init__(
            mission_space=MissionSpace(mission_func=lambda: "get to the green goal square"),
            width=w + 2,
            height=h + 2,
            max_steps=max_steps,
            see_through_walls=True,
            agent_view_size=view_size,
        )

    def _gen_grid(self, width, height):
        self.grid = Grid(width, height)
        self.grid.wall_rect(0, 0, width, height)
        walls = np.asarray(self.level.walls)
        for y, x in zip(*np.nonzero(walls), strict=False):
            self.grid.set(int(x) + 1, int(y) + 1, Wall())
        gx, gy = (int(v) + 1 for v in np.asarray(self.level.goal_pos))
        self.put_obj(Goal(), gx, gy)
        ax, ay = (int(v) + 1 for v in np.asarray(self.level.agent_pos))
        self.agent_pos = (ax, ay)
        self.agent_dir = int(self.level.agent_dir)
        self.mission = "get to the green goal square"


def _rollout(env: MazeEnv, level: MazeLevel, actions: jax.Array):
    def step(state, a):
        obs, state, r, term, trunc, _ = env.step(jax.random.key(0), state, {"agent": a[None]})
        return state, (obs["agent"].image[0], obs["agent"].direction[0], r["agent"][0], term, trunc)

    obs0, state = env.reset(jax.random.key(0), level)
    _, traj = jax.lax.scan(step, state, actions)
    return obs0["agent"].image[0], obs0["agent"].direction[0], traj


_rollout_jit = jax.jit(_rollout, static_argnums=0)


def _border_level(key, h, w):
    """A random level whose agent stands on a border cell (views reach outside the grid)."""
    lv = sample_dr_level(key, h, w, n_walls=(h * w) // 5)
    k1, k2 = jax.random.split(jax.random.fold_in(key, 1))
    side = int(jax.random.randint(k1, (), 0, 4))
    t = int(jax.random.randint(k2, (), 0, max(h, w)))
    x, y = [(0, t % h), (w - 1, t % h), (t % w, 0), (t % w, h - 1)][side]
    walls = lv.walls.at[y, x].set(False)
    goal = lv.goal_pos
    if (int(goal[0]), int(goal[1])) == (x, y):
        free = np.argwhere(~np.asarray(walls))
        free = [p for p in free if (p[1], p[0]) != (x, y)]
        goal = jnp.array([free[0][1], free[0][0]], jnp.int32)
    return MazeLevel.create(walls, (x, y), lv.agent_dir, goal)


CASES = [(5, 5, 5, 40), (7, 9, 5, 60), (13, 13, 5, 250), (6, 11, 7, 80)]


@pytest.mark.parametrize(
    "h,w,view,max_steps,gathers",
    [(*case, "cheap") for case in CASES] + [(13, 13, 5, 250, "dear"), (6, 11, 7, 80, "dear")],
)
def test_matches_minigrid(monkeypatch, h, w, view, max_steps, gathers):
    """`gathers="dear"`: the forms arenax compiles for accelerators (the view by compares
    and selects, `arenax.utils.gathers_are_cheap`), run on the CPU."""
    monkeypatch.setenv("ARENAX_GATHERS", gathers)
    if gathers == "dear":  # read when traced: no trace of the other form may be reused
        jax.clear_caches()
    rollout = _rollout_jit if gathers == "cheap" else jax.jit(_rollout, static_argnums=0)
    env = MazeEnv(height=h, width=w, view_size=view, max_steps=max_steps)
    n_levels, horizon = 12, max_steps + 5
    episodes = successes = truncations = 0
    for i in range(n_levels):
        key = jax.random.key(1000 * h + 10 * w + i)
        k_level, k_act = jax.random.split(key)
        if i % 3 == 0:
            level = _border_level(k_level, h, w)
        else:
            level = sample_dr_level(k_level, h, w, n_walls=(h * w) // 4)
        # forward-heavy random actions over all 7 MiniGrid actions
        probs = jnp.array([0.2, 0.2, 0.45, 0.04, 0.04, 0.04, 0.03])
        actions = jax.random.choice(k_act, 7, (horizon,), p=probs)
        img0, dir0, (imgs, dirs, rews, terms, truncs) = jax.device_get(rollout(env, level, actions))
        ref = LevelGrid(level, view, max_steps)
        obs, _ = ref.reset(seed=0)
        np.testing.assert_array_equal(img0, obs["image"].transpose(1, 0, 2))
        assert dir0 == obs["direction"]
        for t, a in enumerate(np.asarray(actions)):
            obs, r, term, trunc, _ = ref.step(int(a))
            assert bool(terms[t]) == term, (i, t)
            assert bool(truncs[t]) == trunc, (i, t)
            np.testing.assert_allclose(rews[t], r, rtol=1e-6, atol=1e-7)
            if term:
                successes += 1
            if not term:
                np.testing.assert_array_equal(
                    imgs[t], obs["image"].transpose(1, 0, 2), err_msg=f"level {i} step {t}"
                )
                assert dirs[t] == obs["direction"]
            if term or trunc:
                truncations += int(trunc)
                episodes += 1
                break
    assert episodes == n_levels
    # the comparison must have covered both kinds of episode end
    assert successes > 0 and truncations > 0, (successes, truncations)
