"""Generators, mutators, editor and held-out suites: every level they make is valid."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from arenax.envs.maze import (
    HELDOUT_MAZES,
    SUITES,
    MazeEditor,
    empty_level,
    is_valid,
    level_metrics,
    mutate_level,
    resolve_suite,
    sample_dr_level,
    validate_level,
)
from arenax.envs.maze.suites import perfect_maze


def _batch(fn, n, seed=0):
    return jax.jit(jax.vmap(fn))(jax.random.split(jax.random.key(seed), n))


@functools.cache
def _dr_batch(h: int, w: int, n: int, replace: bool):
    """16 DR levels from a key (one compiled program per static shape)."""
    one = functools.partial(sample_dr_level, height=h, width=w, n_walls=n, replace=replace)
    return jax.jit(lambda key: jax.vmap(one)(jax.random.split(key, 16)))


@functools.cache
def _mutate(n_edits: int, move_agent: bool):
    return jax.jit(jax.vmap(lambda k, lv: mutate_level(k, lv, n_edits, 30, move_agent)))


@jax.jit
def _parents(key):
    return jax.vmap(lambda k: sample_dr_level(k, 7, 7, 15))(jax.random.split(key, 8))


@given(
    shape=st.sampled_from([(2, 2), (5, 7), (9, 9)]),  # a few fixed shapes: one compile each
    frac=st.sampled_from([0.0, 0.35, 1.0]),
    replace=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_dr_levels_valid_and_wall_counts(shape, frac, replace, seed):
    h, w = shape
    n = int(frac * (h * w - 2))
    levels = _dr_batch(h, w, n, replace)(jax.random.key(seed))
    assert bool(jax.vmap(is_valid)(levels).all())
    counts = np.asarray(levels.walls.sum(axis=(1, 2)))
    if replace:
        assert (counts <= n).all()
    else:
        assert (counts == n).all()


def test_dr_uniform_count_reaches_both_ends():
    n = 10
    levels = _batch(lambda k: sample_dr_level(k, 5, 5, n, replace=False, uniform_count=True), 400)
    counts = np.asarray(levels.walls.sum(axis=(1, 2)))
    assert counts.min() == 0 and counts.max() == n
    assert set(counts.tolist()) == set(range(n + 1))


def test_dr_agent_direction_and_positions_uniform_enough():
    levels = _batch(lambda k: sample_dr_level(k, 13, 13, 60), 4000)
    dirs = np.bincount(np.asarray(levels.agent_dir), minlength=4)
    assert (np.abs(dirs / 4000 - 0.25) < 0.03).all()
    xs = np.bincount(np.asarray(levels.agent_pos[:, 0]), minlength=13)
    assert xs.min() > 0.5 * 4000 / 13


def test_dr_rejects_bad_budget():
    with pytest.raises(ValueError, match="n_walls=24"):
        sample_dr_level(jax.random.key(0), 5, 5, 24)


@given(seed=st.integers(0, 2**16), n_edits=st.sampled_from([0, 5, 30]), move_agent=st.booleans())
def test_mutations_stay_valid(seed, n_edits, move_agent):
    key = jax.random.key(seed)
    parents = _parents(key)
    children = _mutate(n_edits, move_agent)(jax.random.split(key, 8), parents)
    assert bool(jax.vmap(is_valid)(children).all())
    # at most n_edits cells changed
    changed = np.asarray((children.walls != parents.walls).sum(axis=(1, 2)))
    assert (changed <= n_edits).all()
    if not move_agent:
        np.testing.assert_array_equal(children.agent_pos, parents.agent_pos)


def test_mutations_change_levels_and_zero_edits_is_identity():
    parents = _batch(lambda k: sample_dr_level(k, 13, 13, 60), 64)
    keys = jax.random.split(jax.random.key(9), 64)
    same = jax.vmap(lambda k, lv: mutate_level(k, lv, 0, 20))(keys, parents)
    for a, b in zip(jax.tree.leaves(same), jax.tree.leaves(parents), strict=False):
        np.testing.assert_array_equal(a, b)
    kids = jax.vmap(lambda k, lv: mutate_level(k, lv, 20))(keys, parents)
    moved_goal = np.any(np.asarray(kids.goal_pos != parents.goal_pos), axis=1)
    flipped = np.asarray((kids.walls != parents.walls).any(axis=(1, 2)))
    assert moved_goal.mean() > 0.5 and flipped.mean() > 0.9


@given(seed=st.integers(0, 2**16), cells=st.lists(st.integers(0, 24), min_size=8, max_size=8))
def test_editor_decodes_valid_levels(seed, cells):
    env = MazeEditor(height=5, width=5, n_walls=6, noise_dim=4, collisions="redirect")
    key = jax.random.key(seed)
    obs, s = env.reset(key, None)
    assert obs["teacher"].image.shape == (1, 7, 7, 3)
    assert obs["teacher"].noise.shape == (1, 4)
    for t, c in enumerate(cells):
        obs, s, r, term, _trunc, _ = env.step(
            jax.random.fold_in(key, t), s, {"teacher": jnp.array([c])}
        )
        assert float(r["teacher"][0]) == 0.0
        assert bool(term) == (t == env.episode_length - 1)
    validate_level(env.decode(s))
    assert int(obs["teacher"].time[0]) == 8
    # walls placed are exactly the distinct wall cells chosen
    assert int(s.walls.sum()) == len(set(cells[:6]))


def test_editor_redirects_collisions():
    env = MazeEditor(height=3, width=3, n_walls=7, noise_dim=0, collisions="redirect")
    _, s = env.reset(jax.random.key(0), None)
    # walls everywhere but cells 7 and 8; then goal and agent both chosen on walls
    for t, c in enumerate([0, 1, 2, 3, 4, 5, 6, 0, 0]):
        _, s, *_ = env.step(jax.random.key(t), s, {"teacher": jnp.array([c])})
    lv = env.decode(s)
    validate_level(lv)
    assert {tuple(np.asarray(lv.goal_pos)), tuple(np.asarray(lv.agent_pos))} == {(1, 2), (2, 2)}


def test_editor_rejects_bad_budget():
    with pytest.raises(ValueError, match="n_walls=24"):
        MazeEditor(height=5, width=5, n_walls=24)


@pytest.mark.parametrize("name", list(HELDOUT_MAZES))
def test_heldout_mazes_valid_and_solvable(name):
    maze = HELDOUT_MAZES[name]
    n = 2 if name == "PerfectMazeXL" else 16
    levels = _batch(maze.sample, n)
    assert levels.walls.shape[1:] == (maze.height, maze.width)
    for i in range(n):
        validate_level(jax.tree.map(lambda x, i=i: x[i], levels))
    assert bool(jax.vmap(level_metrics)(levels)["solvable"].all())
    env = maze.make_env()
    assert env.max_steps == maze.max_steps


def test_fixed_layout_facts():
    assert HELDOUT_MAZES["LargeCorridor"].height == 19
    assert HELDOUT_MAZES["FourRooms"].height == 17 and HELDOUT_MAZES["FourRooms"].max_steps == 250
    assert HELDOUT_MAZES["Crossing"].height == 9
    assert HELDOUT_MAZES["PerfectMazeXL"].width == 101
    assert HELDOUT_MAZES["SixteenRooms"].max_steps == 2 * 15 * 15
    sp = {
        n: int(level_metrics(HELDOUT_MAZES[n].sample(jax.random.key(0)))["shortest_path"])
        for n in SUITES["classic"]
    }
    assert sp["Labyrinth"] == sp["LabyrinthFlipped"]  # mirror images
    lv = HELDOUT_MAZES["Labyrinth"].sample(jax.random.key(0))
    assert tuple(np.asarray(lv.agent_pos)) == (0, 12) and tuple(np.asarray(lv.goal_pos)) == (6, 6)


@pytest.mark.parametrize(
    "name",
    [
        "SixteenRooms2",
        "Labyrinth2",
        "StandardMaze2",
        "StandardMaze3",
        "SmallCorridor",
        "LargeCorridor",
    ],
)
def test_random_direction_mazes_really_randomise(name):
    dirs = _batch(HELDOUT_MAZES[name].sample, 200).agent_dir
    assert set(np.asarray(dirs).tolist()) == {0, 1, 2, 3}


def test_fixed_direction_mazes_do_not():
    for name in ("SixteenRooms", "Labyrinth", "LabyrinthFlipped", "StandardMaze"):
        assert len(set(np.asarray(_batch(HELDOUT_MAZES[name].sample, 50).agent_dir).tolist())) == 1


def test_four_rooms_never_puts_agent_on_goal():
    levels = _batch(HELDOUT_MAZES["FourRooms"].sample, 3000)
    same = np.all(np.asarray(levels.agent_pos == levels.goal_pos), axis=1)
    assert not same.any()


def test_perfect_maze_is_a_tree():
    for seed in range(6):
        lv = perfect_maze(jax.random.key(seed), 13)
        free = ~np.asarray(lv.walls)
        nodes = free.sum()
        edges = (free[:, 1:] & free[:, :-1]).sum() + (free[1:, :] & free[:-1, :]).sum()
        assert edges == nodes - 1  # connected (solvable below) and acyclic
        assert free[::2, ::2].all()  # every cell visited
        assert bool(level_metrics(lv)["solvable"])


def test_resolve_suite():
    assert resolve_suite("classic") == SUITES["classic"]
    assert resolve_suite("FourRooms") == ("FourRooms",)
    with pytest.raises(ValueError, match="unknown maze suite 'nope'"):
        resolve_suite("nope")


def test_empty_level():
    lv = empty_level(jax.random.key(0), 13, 13)
    assert int(lv.walls.sum()) == 0
    validate_level(lv)
