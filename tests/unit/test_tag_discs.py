"""Continuous Tag arenas with disc obstacles: the bump rule and the observation by hand,
WarpDrive's game unchanged without discs, generators and mutators that keep levels valid,
validation errors, metrics by hand, JSON, rendering."""

from __future__ import annotations

import dataclasses
import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from arenax import make_generator, make_mutator
from arenax.envs.tag import BENCHMARK, TagEnv, TagLevel
from arenax.envs.tag import discs as D
from arenax.envs.tag.obstacles import crosses_discs
from arenax.envs.tag.render import frame

# action heads with 1 level in [1, 1] (accelerate by 1) / [0, 0] (no turn): index 1
GO = {"accel_levels": 1, "min_accel": 1.0, "max_accel": 1.0, "turn_levels": 1,
      "min_turn": 0.0, "max_turn": 0.0}  # fmt: skip


def level(pos, discs, arena=10.0, margin=0.1, direction=None) -> TagLevel:
    a = len(pos)
    return TagLevel(
        pos=jnp.asarray(pos, jnp.float32),
        direction=jnp.zeros(a, jnp.float32) if direction is None else jnp.asarray(direction),
        skill=jnp.ones(2, jnp.float32), arena=jnp.float32(arena), tag_margin=jnp.float32(margin),
        obstacles=jnp.asarray(discs, jnp.float32),
    )  # fmt: skip


def test_a_move_into_a_disc_is_refused_and_stops_the_agent() -> None:
    """One tagger heading +x at (1, 5) toward a disc of radius 1 at (3, 5); a runner far
    away heading +y. Speed 1 per step (top speed): step 1 reaches (2, 5), on the rim (not
    inside); step 2 would reach (3, 5): refused, speed 0, edge reward."""
    env = TagEnv(n_taggers=1, n_runners=1, max_obstacles=2, edge_reward=-0.5, **GO)
    lv = level([[1.0, 5.0], [8.0, 1.0]], [[3.0, 5.0, 1.0], [0.0, 0.0, 0.0]],
               direction=[0.0, math.pi / 2])  # fmt: skip
    s = jax.jit(env.reset_state)(None, lv)
    step = jax.jit(env.step_state)  # one program for the three steps, not op by op
    go = {"tagger": jnp.array([[1, 0]]), "runner": jnp.array([[1, 0]])}
    s, r, *_ = step(None, s, go)
    np.testing.assert_allclose(s.pos, [[2.0, 5.0], [8.0, 2.0]], atol=1e-6)
    assert float(s.speed[0]) == 1.0 and float(r["tagger"][0]) == 0.0
    s, r, *_ = step(None, s, go)
    np.testing.assert_allclose(s.pos, [[2.0, 5.0], [8.0, 3.0]], atol=1e-6)
    assert float(s.speed[0]) == 0.0 and float(s.accel[0]) == 0.0
    assert float(r["tagger"][0]) == -0.5 and float(r["runner"][0]) == 0.0
    # turning away, it moves on
    s, r, *_ = step(None, s.replace(direction=s.direction.at[0].set(math.pi / 2)), go)
    np.testing.assert_allclose(s.pos[0], [2.0, 6.0], atol=1e-6)


def test_a_move_that_cuts_across_a_disc_is_refused() -> None:
    """From (1, 5.9) at speed 3 heading +x the move would end at (4, 5.9): both ends lie
    outside the disc of radius 1 at (2.5, 5) (distance 1.75), but the path passes 0.9 from
    its centre: refused. The same move 1.1 above the centre goes through."""
    env = TagEnv(n_taggers=1, n_runners=1, max_obstacles=1, max_speed=3.0, edge_reward=-0.5, **GO)
    reset, step = jax.jit(env.reset_state), jax.jit(env.step_state)  # not op by op
    for y, through in ((5.9, False), (6.1, True)):
        lv = level([[1.0, y], [8.0, 1.0]], [[2.5, 5.0, 1.0]], direction=[0.0, math.pi / 2])
        s = reset(None, lv).replace(speed=jnp.array([2.0, 0.0]))
        s, r, *_ = step(None, s, {"tagger": jnp.array([[1, 0]]), "runner": jnp.array([[1, 0]])})
        want = [4.0, y] if through else [1.0, y]
        np.testing.assert_allclose(s.pos[0], want, atol=1e-5)
        assert (float(s.speed[0]) == 0.0) != through
        assert float(r["tagger"][0]) == (0.0 if through else -0.5)
    # by hand: end points outside, segment through; a zero-length move inside; unused slots
    discs = jnp.array([[2.5, 5.0, 1.0], [0.0, 0.0, 0.0]])
    start = jnp.array([[1.0, 5.9], [2.5, 5.2], [1.0, 7.0], [0.0, 0.0]])
    end = jnp.array([[4.0, 5.9], [2.5, 5.2], [4.0, 7.0], [0.0, 0.0]])
    assert jax.jit(crosses_discs)(start, end, discs).tolist() == [True, True, False, False]


def test_observation_appends_every_disc_after_warpdrives_numbers() -> None:
    env = TagEnv(n_taggers=1, n_runners=2, max_obstacles=2)
    plain = TagEnv(n_taggers=1, n_runners=2)
    lv = level([[1.0, 1.0], [5.0, 5.0], [9.0, 2.0]], [[3.0, 4.0, 0.5], [0.0, 0.0, 0.0]])
    obs = env.observe(env.reset_state(None, lv))
    ref = plain.observe(plain.reset_state(None, lv.replace(obstacles=None)))
    assert env.obs_size == plain.obs_size + 6
    diag = math.sqrt(2.0) * 10.0
    for team in ("tagger", "runner"):
        np.testing.assert_array_equal(obs[team][:, : plain.obs_size], ref[team])
    tail = np.asarray(obs["runner"][0, plain.obs_size :])  # runner at (5, 5)
    np.testing.assert_allclose(tail, [-2 / diag, 0, -1 / diag, 0, 0.05, 0], atol=1e-6)


def test_the_cpu_kernel_writes_the_disc_features_as_the_jax_path(monkeypatch) -> None:
    """With the k-nearest observation on CPUs one kernel pass writes the discs' numbers too;
    they equal the JAX path's bit for bit, batched under vmap, with unused slots and agents
    out of the game."""
    from arenax.envs.tag import kernels

    assert kernels.cpu_kernel_available(), "the suite checks the CPU kernel"
    env = TagEnv(**{**BENCHMARK, "max_obstacles": 16})
    lv = jax.jit(jax.vmap(env.generate))(jax.random.split(jax.random.key(0), 6))
    assert 0 < int(jnp.sum(lv.obstacles[..., 2] == 0)) < 6 * 16  # some unused slots
    s = jax.jit(jax.vmap(lambda x: env.reset_state(None, x)))(lv)
    s = s.replace(active=s.active.at[:, 3].set(False).at[0, 50].set(False))
    got = jax.jit(jax.vmap(env.observe))(s)
    monkeypatch.setattr(kernels, "cpu_kernel_available", lambda: False)
    want = jax.jit(jax.vmap(env.observe))(s)
    for team in ("tagger", "runner"):
        assert got[team].shape[-1] == 7 * 10 + 1 + 48
        np.testing.assert_array_equal(np.asarray(got[team]), np.asarray(want[team]))
    assert not np.any(np.asarray(got["tagger"][:, 3]))  # out of the game: zeros


def test_without_discs_the_game_is_warpdrives() -> None:
    """max_obstacles=0 (the default, which the WarpDrive replay tests use) adds nothing to
    levels and states."""
    env = TagEnv(**BENCHMARK)
    lv = env.generate(jax.random.key(0))
    # no obstacle array at all (checkpoints cannot store zero-size arrays)
    assert lv.obstacles is None and env.obs_size == 7 * 10 + 1
    assert env.reset_state(None, lv).obstacles is None
    with pytest.raises(ValueError, match=r"obstacles: shape \(2, 3\), the env holds none"):
        env.reset_state(None, lv.replace(obstacles=jnp.ones((2, 3))))


@pytest.mark.parametrize("name", ["empty", "dr", "pillars", "ring"])
def test_generators_make_valid_arenas(name: str) -> None:
    env = TagEnv(**{**BENCHMARK, "max_obstacles": 16})
    gen = jax.jit(jax.vmap(make_generator(f"tag/{name}", env=env)))
    levels = gen(jax.random.split(jax.random.key(0), 64))
    for i in range(64):
        D.validate_level(jax.tree.map(lambda x, i=i: x[i], levels), env)
    used = np.asarray(levels.obstacles[..., 2] > 0).sum(axis=1)
    if name == "empty":
        assert used.max() == 0
    elif name == "dr":
        assert used.min() < used.max() <= 16
    else:
        assert set(used.tolist()) == {16}
    if name == "ring":  # runners inside the ring, taggers outside
        d = np.linalg.norm(np.asarray(levels.pos) - 10.0, axis=-1)
        assert np.all(d[:, 10:] < 0.3 * 20) and np.all(d[:, :10] > 0.3 * 20)


@pytest.mark.parametrize("name", ["corridors", "rooms"])
def test_wall_generators(name: str) -> None:
    """corridors: two walls of 8 slots at y = L/3 and 2L/3, one disc left out of each;
    rooms: a cross through the centre, one disc left out of each half of each line. Discs
    overlap along a wall (centres 1.4 r apart), so the walls are solid on the raster too."""
    env = TagEnv(**{**BENCHMARK, "max_obstacles": 16})
    L = env.arena
    levels = jax.jit(jax.vmap(make_generator(f"tag/{name}", env=env)))(
        jax.random.split(jax.random.key(0), 32))  # fmt: skip
    r = L / (2 + 1.4 * 7)
    for i in range(32):
        lv = jax.tree.map(lambda x, i=i: x[i], levels)
        D.validate_level(lv, env)
        d = np.asarray(lv.obstacles)
        used = d[d[:, 2] > 0]
        np.testing.assert_allclose(used[:, 2], r, rtol=1e-4)
        if name == "corridors":
            rows = np.round(used[:, 1] / (L / 3)).astype(int)
            assert sorted(np.bincount(rows).tolist()) == [0, 7, 7]
            np.testing.assert_allclose(used[:, 1], rows * L / 3, rtol=1e-5)
        else:
            on_h = np.isclose(used[:, 1], L / 2) & ~np.isclose(used[:, 0], L / 2)
            on_v = np.isclose(used[:, 0], L / 2)
            assert on_h.sum() == 6 and on_v.sum() == 6
            for along, line in ((used[on_h, 0], "h"), (used[on_v, 1], "v")):
                assert (along < L / 2).sum() == 3 and (along > L / 2).sum() == 3, line
    # the first (horizontal) wall: neighbours 1.4 r apart, or a multiple across a gap
    first = np.asarray(levels.obstacles[0, :8])
    steps = np.diff(np.sort(first[first[:, 2] > 0, 0])) / (1.4 * r)
    np.testing.assert_allclose(steps, np.round(steps), atol=1e-3)
    assert np.all(np.round(steps) >= 1)


MUTATED_ENV = TagEnv(n_taggers=2, n_runners=5, arena=10.0, max_obstacles=6,
                     obstacle_radius=(0.05, 0.2))  # fmt: skip


@functools.cache
def _generate_and_mutate(edits: int):
    mutate = make_mutator("tag/edits")
    return jax.jit(lambda k, k2: mutate(k2, MUTATED_ENV.generate(k), edits))


@given(seed=st.integers(0, 2**31 - 1), edits=st.sampled_from([1, 4, 12]))  # static: few shapes
def test_mutations_stay_valid(seed: int, edits: int) -> None:
    out = _generate_and_mutate(edits)(jax.random.key(seed), jax.random.key(seed + 1))
    D.validate_level(out, MUTATED_ENV)


def test_bad_levels_are_one_line_naming_the_field() -> None:
    env = TagEnv(n_taggers=1, n_runners=1, max_obstacles=1)
    ok = level([[1.0, 1.0], [5.0, 5.0]], [[3.0, 3.0, 1.0]])
    D.validate_level(ok, env)
    cases = [
        (ok.replace(pos=jnp.asarray([[3.2, 3.0], [5.0, 5.0]])), r"pos\[0\]=\(3.2, 3\): inside obstacles\[0\]"),
        (ok.replace(pos=jnp.asarray([[1.0, 1.0], [11.0, 5.0]])), r"pos\[1\]=\(11, 5\): outside the arena"),
        (ok.replace(obstacles=jnp.asarray([[0.5, 3.0, 1.0]])), r"obstacles\[0\]=\(0.5, 3, r=1\): not inside the arena"),
        (ok.replace(obstacles=jnp.zeros((2, 3))), r"obstacles: shape \(2, 3\), the env holds \(1, 3\)"),
        (ok.replace(skill=jnp.asarray([1.0, 0.0])), r"skill=\[1.0, 0.0\]: must be two positive"),
        (ok.replace(pos=jnp.zeros((3, 2))), r"pos: must be \(2, 2\)"),
    ]  # fmt: skip
    for bad, message in cases:
        with pytest.raises(ValueError, match=message):
            D.validate_level(bad, env)


def test_metrics_by_hand() -> None:
    # a disc of radius 2.5 at the centre of a 10 x 10 arena: the raster cells (32 a side)
    # whose centres lie inside it; 2 runners at distances 3 and 4 from the nearest tagger
    lv = level([[0.0, 0.0], [10.0, 10.0], [3.0, 0.0], [10.0, 6.0]], [[5.0, 5.0, 2.5]])
    metrics = jax.jit(D.level_metrics, static_argnames="n_taggers")  # one program, not op by op
    m = metrics(lv, n_taggers=2)
    c = (np.arange(32) + 0.5) * 10 / 32
    inside = ((c[None, :] - 5) ** 2 + (c[:, None] - 5) ** 2 < 2.5**2).sum()
    assert float(m["coverage"]) == pytest.approx(inside / 1024)
    assert float(m["start_distance"]) == pytest.approx((3 + 4) / 2 / 10)
    assert float(m["connectivity"]) == 1.0  # one disc does not split the arena
    wall = level([[0.0, 0.0], [1.0, 1.0]], [[5.0, y, 0.8] for y in np.arange(0.8, 9.3, 1.2)])
    split = metrics(wall, n_taggers=1)  # a line of discs from bottom to top
    assert float(split["connectivity"]) < 0.6


def test_json_round_trip_and_errors() -> None:
    env = TagEnv(**{**BENCHMARK, "max_obstacles": 4})
    lv = env.generate(jax.random.key(3))
    assert D.levels_equal(D.from_json(D.to_json(lv), env), lv)
    with pytest.raises(ValueError, match="not a continuous Tag arena"):
        D.from_json('{"pos": []}', env)


def test_frames_draw_the_discs() -> None:
    env = TagEnv(n_taggers=1, n_runners=1, max_obstacles=1)
    lv = level([[1.0, 1.0], [9.0, 9.0]], [[5.0, 5.0, 2.0]])
    img = frame(env, env.reset_state(None, lv), px=101)
    assert tuple(img[50, 50]) == (110, 110, 110)  # the disc's centre is grey
    assert tuple(img[50, 5]) != (110, 110, 110)


def test_heldout_continuous_arenas_are_valid() -> None:
    env = TagEnv(n_taggers=3, n_runners=6, arena=10.0, max_obstacles=9)
    for name in D.HELDOUT_ARENAS:
        for s in range(5):
            D.validate_level(D.heldout_arena(name, jax.random.key(s), env), env)
    cornered = D.heldout_arena("cornered", jax.random.key(0), env)
    assert np.all(np.asarray(cornered.pos[3:]) <= 1.5) and np.all(np.asarray(cornered.pos[:3]) >= 5)
    with pytest.raises(ValueError, match="arena 'x': allowed open-field"):
        D.heldout_arena("x", jax.random.key(0), env)


def test_a_levels_episode_length_truncates_and_is_observed() -> None:
    """A level of 4 steps in an env whose maximum is 10: truncated after step 4 (runners
    still in the game get the end reward then), t/T over 4 in both observation paths."""
    for k in (None, 1):
        env = TagEnv(n_taggers=1, n_runners=1, episode_length=10, k_nearest=k, end_reward=3.0)
        lv = level([[1.0, 1.0], [8.0, 8.0]], np.zeros((0, 3))).replace(
            obstacles=None, episode_length=jnp.int32(4)
        )
        s = env.reset_state(None, lv)
        still = {"tagger": jnp.array([[0, 0]]), "runner": jnp.array([[0, 0]])}
        for t in range(1, 5):
            s, r, term, trunc, _ = env.step_state(None, s, still)
            assert bool(trunc) == (t == 4) and not bool(term)
            assert float(env.observe(s)["runner"][0, -1]) == pytest.approx(t / 4)
        assert float(r["runner"][0]) == pytest.approx(3.0)


def test_episode_lengths_generated_mutated_and_written() -> None:
    env = TagEnv(n_taggers=2, n_runners=3, arena=10.0, episode_length=50, max_obstacles=4,
                 episode_length_range=(10, 30))  # fmt: skip
    levels = jax.jit(jax.vmap(env.generate))(jax.random.split(jax.random.key(0), 32))
    lengths = np.asarray(levels.episode_length)
    assert lengths.min() >= 10 and lengths.max() <= 30 and len(set(lengths.tolist())) > 5
    # the other generators carry the full length; the mutator redraws it within the range
    for name in ("empty", "pillars", "ring"):
        assert int(make_generator(f"tag/{name}", env=env)(jax.random.key(1)).episode_length) == 50
    one = jax.tree.map(lambda x: x[0], levels)
    kids = jax.jit(jax.vmap(lambda k: D.mutate(k, one, 3, episode_length_range=(10, 30))))(
        jax.random.split(jax.random.key(2), 64))  # fmt: skip
    assert np.any(np.asarray(kids.episode_length) != int(one.episode_length))
    host = jax.device_get(kids)  # indexed in NumPy (op by op: a program per primitive)
    for i in range(64):
        D.validate_level(jax.tree.map(lambda x, i=i: x[i], host), env)
    back = D.from_json(D.to_json(one), env)
    assert D.levels_equal(back, one) and not D.levels_equal(back.replace(episode_length=None), one)
    with pytest.raises(ValueError, match=r"episode_length: must be an integer in 1\.\.50"):
        D.validate_level(one.replace(episode_length=jnp.int32(51)), env)
    with pytest.raises(ValueError, match="episode_length_range"):
        TagEnv(episode_length=20, episode_length_range=(5, 21))


def test_sfl_outcome_is_the_share_of_runners_tagged() -> None:
    """With 3 runners each runner is one trial: env 0's first episode ends (t = 1) with 2
    of 3 tagged, env 1's (t = 0) with none (its second, 3 tagged, does not count), env 2
    ends none. Taggers' p: 2/3, 0, 0; runners': 1/3, 1, 0."""
    from arenax.curricula.sfl import first_episode_success
    from arenax.envs.tag.family import team_success
    from arenax.training import PRESETS
    from arenax.training.build import make_curriculum
    from helpers import tiny_preset

    cfg = tiny_preset("tag-sfl", "x")
    cfg = dataclasses.replace(cfg, env=dataclasses.replace(
        cfg.env, n_taggers=2, n_runners=3, episode_length=8, max_obstacles=3, k_nearest=None))  # fmt: skip
    algo = make_curriculum(cfg)
    done = jnp.array([[0, 1, 0], [1, 0, 0], [0, 1, 0]], bool)
    tagged = jnp.array([[0, 0, 0], [2, 0, 0], [0, 3, 0]], jnp.float32)  # episode totals
    ep = {"done": done, "success": done & (tagged == 3), "sums": {"tagged": tagged}}
    runner = dataclasses.replace(algo, success=functools.partial(team_success, algo.env, "runner"))
    np.testing.assert_allclose(first_episode_success(done, algo._success(ep)), [2 / 3, 0, 0])
    np.testing.assert_allclose(first_episode_success(done, runner._success(ep)), [1 / 3, 1, 0])
    assert PRESETS["tag-sfl"].env.runners_leave


@pytest.mark.parametrize("m", [0, 1, 2, 3, 5, 9])
def test_every_layout_is_valid_for_any_number_of_slots(m: int) -> None:
    """Generators and held-out arenas stay inside the arena with few slots too (with one
    slot, the ring's disc used to cross the edge)."""
    env = TagEnv(n_taggers=3, n_runners=6, arena=10.0, max_obstacles=m)
    for name in ("empty", "dr", "pillars", "ring", "corridors", "rooms"):
        for s in range(3):
            D.validate_level(make_generator(f"tag/{name}", env=env)(jax.random.key(s)), env)
    for name in D.HELDOUT_ARENAS:
        D.validate_level(D.heldout_arena(name, jax.random.key(0), env), env)
