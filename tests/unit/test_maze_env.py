import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import arenax
from arenax.envs.maze import Actions, MazeEnv, MazeLevel

KEY = jax.random.key(0)

# 3 x 4 interior:  agent at (0, 1) facing right, wall at (1, 0), goal at (3, 1)
LEVEL = MazeLevel.from_ascii(
    """
.#..
>..G
....
"""
)


def act(env, state, a):
    return env.step(KEY, state, {"agent": jnp.array([a])})


def test_turns_and_forward_and_goal_reward():
    env = MazeEnv(height=3, width=4, max_steps=20)
    obs, s = env.reset(KEY, LEVEL)
    assert obs["agent"].image.shape == (1, 5, 5, 3) and obs["agent"].image.dtype == jnp.uint8
    # left: facing up; forward blocked by wall at (0, 0)? no: (0, 0) is free -> moves
    _, s, r, term, trunc, _ = act(env, s, Actions.LEFT)
    assert int(s.agent_dir) == 3 and not bool(term) and float(r["agent"][0]) == 0.0
    _, s, *_ = act(env, s, Actions.FORWARD)
    assert tuple(np.asarray(s.agent_pos)) == (0, 0)
    _, s, *_ = act(env, s, Actions.FORWARD)  # border: stays
    assert tuple(np.asarray(s.agent_pos)) == (0, 0)
    _, s, *_ = act(env, s, Actions.RIGHT)  # facing right, wall ahead
    _, s, *_ = act(env, s, Actions.FORWARD)
    assert tuple(np.asarray(s.agent_pos)) == (0, 0) and int(s.agent_dir) == 0
    for a in (Actions.PICKUP, Actions.DROP, Actions.TOGGLE, Actions.DONE):  # no effect
        _, s2, *_ = act(env, s, a)
        assert tuple(np.asarray(s2.agent_pos)) == (0, 0) and int(s2.agent_dir) == 0
    s = s2
    _, s, *_ = act(env, s, Actions.RIGHT)  # down
    _, s, *_ = act(env, s, Actions.FORWARD)  # (0, 1)
    _, s, *_ = act(env, s, Actions.LEFT)  # right
    _, s, *_ = act(env, s, Actions.FORWARD)  # (1, 1)
    _, s, *_ = act(env, s, Actions.FORWARD)  # (2, 1)
    t_before = int(s.time)
    _, s, r, term, trunc, info = act(env, s, Actions.FORWARD)  # into goal
    assert bool(term) and not bool(trunc) and bool(info["success"])
    assert tuple(np.asarray(s.agent_pos)) == (2, 1)  # never stands on the goal
    np.testing.assert_allclose(float(r["agent"][0]), 1 - 0.9 * (t_before + 1) / 20, rtol=1e-6)


def test_truncation_at_max_steps():
    env = MazeEnv(height=3, width=4, max_steps=5)
    _, s = env.reset(KEY, LEVEL)
    for t in range(5):
        _, s, _r, term, trunc, _ = act(env, s, Actions.LEFT)
        assert bool(trunc) == (t == 4) and not bool(term)


def test_observation_hand_computed():
    """Agent at (0, 1) facing right in LEVEL; the 5x5 view, row 0 farthest ahead."""
    env = MazeEnv(height=3, width=4)
    obs, _ = env.reset(KEY, LEVEL)
    obj = np.asarray(obs["agent"].image[0, ..., 0])
    # view cell (r, c) -> world x = 0 + (4 - r), y = 1 + (c - 2)
    expected = np.empty((5, 5), int)
    walls = np.pad(np.asarray(LEVEL.walls), 1, constant_values=True)  # border included
    for r in range(5):
        for c in range(5):
            x, y = 4 - r, 1 + (c - 2)
            if not (-1 <= x <= 4 and -1 <= y <= 3):
                expected[r, c] = 2
            elif (x, y) == (3, 1):
                expected[r, c] = 8
            else:
                expected[r, c] = 2 if walls[y + 1, x + 1] else 1
    np.testing.assert_array_equal(obj, expected)
    assert obj[4, 2] == 1  # own cell reads empty
    colors = np.asarray(obs["agent"].image[0, ..., 1])
    np.testing.assert_array_equal(colors, np.select([obj == 2, obj == 8], [5, 1], 0))
    assert int(obs["agent"].direction[0]) == 0


def _view_cell_by_cell(walls, goal, agent, d, v):
    """The view read one cell at a time, as MiniGrid defines it: row ``r`` is ``v-1-r``
    cells ahead, column ``c`` is ``c - v//2`` cells to the right; off the grid is wall."""
    h, w = walls.shape
    f = np.array([[1, 0], [0, 1], [-1, 0], [0, -1]])[d]
    right = np.array([-f[1], f[0]])
    obj = np.zeros((v, v), np.uint8)
    col = np.zeros((v, v), np.uint8)
    for r in range(v):
        for c in range(v):
            x, y = np.asarray(agent) + (v - 1 - r) * f + (c - v // 2) * right
            if not (0 <= x < w and 0 <= y < h) or walls[y, x]:
                obj[r, c], col[r, c] = 2, 5
            elif (x, y) == tuple(goal):
                obj[r, c], col[r, c] = 8, 1
            else:
                obj[r, c] = 1
    return np.stack([obj, col, np.zeros_like(obj)], -1)


@pytest.mark.parametrize("h,w,v", [(13, 13, 5), (4, 7, 3), (9, 5, 7), (3, 3, 7)])
def test_observation_equals_the_view_read_cell_by_cell(h, w, v):
    """Random walls, agents in every direction, goals on and off the grid (the editor's
    unplaced goal): the sliced and turned view is the cell-by-cell one."""
    rng = np.random.default_rng(h * 100 + w * 10 + v)
    env = MazeEnv(height=h, width=w, view_size=v)
    observe = jax.jit(env.observe)
    for _ in range(40):
        walls = rng.random((h, w)) < 0.4
        agent = (int(rng.integers(w)), int(rng.integers(h)))
        goal = (int(rng.integers(-1, w + 1)), int(rng.integers(-1, h + 1)))
        d = int(rng.integers(4))
        state = env.reset_state(
            KEY,
            MazeLevel(
                walls=jnp.asarray(walls),
                goal_pos=jnp.array(goal),
                agent_pos=jnp.array(agent),
                agent_dir=jnp.int32(d),
            ),
        )
        image = np.asarray(observe(state)["agent"].image[0])
        np.testing.assert_array_equal(image, _view_cell_by_cell(walls, goal, agent, d, v))


def test_normalized_observation():
    env = MazeEnv(height=3, width=4, normalize_obs=True)
    raw = MazeEnv(height=3, width=4)
    o1, _ = env.reset(KEY, LEVEL)
    o2, _ = raw.reset(KEY, LEVEL)
    assert o1["agent"].image.dtype == jnp.float32
    np.testing.assert_allclose(o1["agent"].image, o2["agent"].image / 10.0)


def test_jit_vmap_and_no_recompile_on_second_call():
    env = arenax.make("maze", height=7, width=7)
    levels = jax.jit(jax.vmap(env.generate))(jax.random.split(KEY, 8))
    step = jax.jit(jax.vmap(env.step))
    # compiled (jit keeps weak types, so the dtype check below still sees them)
    _, s = jax.jit(jax.vmap(env.reset))(jax.random.split(KEY, 8), levels)
    keys = jax.random.split(KEY, 8)
    a = {"agent": jnp.zeros((8, 1), jnp.int32) + 2}
    _, s1, *_ = step(keys, s, a)
    _, _s2, *_ = step(keys, s1, a)
    assert step._cache_size() == 1
    # every leaf of the initial state has an explicit (strong) dtype
    for leaf in jax.tree.leaves(s):
        assert not getattr(leaf, "weak_type", False)


def test_spaces():
    env = MazeEnv(height=5, width=5, view_size=7, normalize_obs=True)
    space = env.observation_space("agent")
    assert space["image"].shape == (7, 7, 3) and space["image"].dtype == jnp.float32
    assert env.action_space("agent").n == 7
    obs, _ = jax.jit(env.reset)(KEY, jax.jit(env.generate)(KEY))
    assert space["image"].contains(np.asarray(obs["agent"].image))


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"view_size": 4}, "view_size=4 must be odd"),
        ({"height": 0}, "height=0"),
        ({"height": 3, "width": 3, "n_walls": 8}, "n_walls=8 must be in \\[0, 7\\]"),
    ],
)
def test_bad_params(kwargs, message):
    with pytest.raises(ValueError, match=message):
        MazeEnv(**kwargs)


def test_registry_errors():
    with pytest.raises(ValueError, match=r"unknown environment 'mase'; available: .*maze"):
        arenax.make("mase")
    with pytest.raises(ValueError, match="unknown parameter\\(s\\) hieght"):
        arenax.make("maze", hieght=3)
    with pytest.raises(ValueError, match="unknown generator"):
        arenax.make_generator("maze/nope")
    assert "maze/dr" in arenax.list_generators()
    assert "maze/edits" in arenax.list_mutators()
    assert "SixteenRooms" in arenax.list_suites()["classic"]


@pytest.mark.parametrize("width", [1, 13, 32, 33, 70, 101])
def test_wall_bits_round_trip_and_cells_off_the_grid(width):
    """`pack_walls` / `unpack_walls` invert each other (one word per 32 columns), and
    `walls_at` reads every cell as the bool grid does, cells off the grid as walls."""
    from arenax.envs.maze.env import pack_walls, unpack_walls, walls_at, words_per_row

    h = 7
    walls = np.asarray(jax.random.bernoulli(jax.random.key(width), 0.4, (3, h, width)))
    bits = pack_walls(walls)
    assert bits.shape == (3, h * words_per_row(width)) and bits.dtype == jnp.uint32
    np.testing.assert_array_equal(np.asarray(unpack_walls(bits, width)), walls)
    ys, xs = np.meshgrid(np.arange(-2, h + 2), np.arange(-2, width + 2), indexing="ij")
    padded = np.pad(walls, ((0, 0), (2, 2), (2, 2)), constant_values=True)
    for gathers in ("cheap", "dear"):
        os.environ["ARENAX_GATHERS"] = gathers
        try:
            got = jax.vmap(lambda b: walls_at(b, width, jnp.asarray(xs), jnp.asarray(ys)))(bits)
        finally:
            del os.environ["ARENAX_GATHERS"]
        np.testing.assert_array_equal(np.asarray(got), padded, err_msg=gathers)


def test_accelerator_forms_have_no_batched_gather(monkeypatch):
    """With gathers dear (as on a TPU) a batch of maze steps and observations compiles to
    no gather, scatter, sort, dynamic slice or loop, and DR's level generation to no
    scatter or sort: each would run one env after another there. (An auto-reset wrapper
    adds one plain gather of whole rows, its next start state per env.)"""
    monkeypatch.setenv("ARENAX_GATHERS", "dear")
    jax.clear_caches()
    env = base = MazeEnv()
    n = 8
    levels = jax.vmap(base.generate)(jax.random.split(KEY, n))
    _, states = jax.vmap(env.reset)(jax.random.split(KEY, n), levels)
    actions = {"agent": jnp.full((n, 1), Actions.FORWARD)}
    keys = jax.random.split(KEY, n)
    hlo = jax.jit(env.steps).lower(keys, states, actions).as_text()
    for op in ("gather", "scatter", "sort", "dynamic_slice", "dynamic_update_slice", "while"):
        assert f"stablehlo.{op}" not in hlo, op
    # the same for a batch of fresh DR levels
    hlo = jax.jit(jax.vmap(base.generate)).lower(keys).as_text()
    for op in ("scatter", "sort", "dynamic_slice"):
        assert f"stablehlo.{op}" not in hlo, op
    jax.clear_caches()
