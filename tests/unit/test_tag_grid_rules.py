"""Rules carried by grid Tag levels (per-team skill, tagging distance, episode length within
the static maximum): each rule by hand, WarpDrive's game when a level carries none (and
the same game at the rules' defaults), generated and mutated levels valid, validation,
JSON, and ACCEL over arenas whose rules vary."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arenax.envs.tag import GridTagEnv, GridTagLevel
from arenax.envs.tag import arenas as A

STAY, PX, MX, PY, MY = range(5)


def open_level(pos: list[list[int]], size: int = 6, **rules) -> GridTagLevel:
    level = GridTagLevel.open_field(pos, size)
    types = {"skill": jnp.float32, "tag_distance": jnp.int32, "episode_length": jnp.int32}
    return level.replace(**{f: jnp.asarray(v, types[f]) for f, v in rules.items()})


def act(taggers: list[int], runner: int) -> dict[str, jax.Array]:
    return {"tagger": jnp.asarray(taggers, jnp.int32), "runner": jnp.asarray([runner], jnp.int32)}


def test_tag_distance_is_manhattan_after_the_move() -> None:
    """Tagger at (0, 0), runner at (3, 1). The tagger steps +x to (1, 0): Manhattan distance
    3 tags at d = 3, not at d = 2 (nor at the default d = 0: WarpDrive's same-cell rule)."""
    env = GridTagEnv(n_taggers=1, size=6)
    for d, want in ((None, False), (2, False), (3, True)):
        rules = {} if d is None else {"tag_distance": d}
        s = env.reset_state(None, open_level([[0, 0], [3, 1]], **rules))
        _, r, term, _, info = env.step_state(jax.random.key(0), s, act([PX], STAY))
        assert bool(term) == want and int(info["tagged"]) == want
        assert float(r["tagger"][0]) == pytest.approx(10.0 if want else -0.01)


def test_a_levels_episode_length_truncates_and_is_observed() -> None:
    """A level of 3 steps in an env whose maximum is 10: truncated after step 3, and the
    observation's t/T is over 3 (the partial observation's last number)."""
    env = GridTagEnv(n_taggers=1, size=6, episode_length=10, partial=True)
    s = env.reset_state(None, open_level([[0, 0], [6, 6]], episode_length=3))
    for t in range(1, 4):
        s, _, term, trunc, _ = env.step_state(jax.random.key(t), s, act([STAY], STAY))
        assert not bool(term) and bool(trunc) == (t == 3)
        np.testing.assert_allclose(env.observe(s)["tagger"][0, -1], t / 3, rtol=1e-6)
    # without the field: the env's 10 steps
    s = env.reset_state(None, open_level([[0, 0], [6, 6]]))
    s, *_, trunc, _ = env.step_state(None, s.replace(time=jnp.int32(8)), act([STAY], STAY))
    assert not bool(trunc) and float(env.observe(s)["tagger"][0, -1]) == pytest.approx(0.9)


def test_skill_is_each_teams_probability_of_moving() -> None:
    """Taggers' skill 0.3, the runner's 1: over 400 steps of 5 taggers all pressing +x or
    -x, the fraction of moves carried out is 0.3 within 5 standard errors; the runner
    always moves."""
    env = GridTagEnv(n_taggers=5, size=20)
    level = open_level([[10, 10]] * 5 + [[0, 0]], size=20, skill=[0.3, 1.0])
    s0 = env.reset_state(None, level)
    step = jax.jit(env.step_state)
    moved, runner_moved, s = 0, 0, s0
    for t in range(400):
        way = PX if t % 2 == 0 else MX
        before = np.asarray(s.pos)
        s, *_ = step(jax.random.key(t), s, act([way] * 5, PY if t % 2 == 0 else MY))
        after = np.asarray(s.pos)
        moved += int(np.sum(np.any(after[:-1] != before[:-1], axis=-1)))
        runner_moved += int(np.any(after[-1] != before[-1]))
        s = s.replace(time=jnp.int32(0))
    n = 400 * 5
    assert abs(moved / n - 0.3) < 5 * np.sqrt(0.3 * 0.7 / n)
    assert runner_moved == 400


def test_default_rules_play_warpdrives_game() -> None:
    """A level at the rules' defaults (skill 1, distance 0, the env's length) plays exactly
    as the same level without rules (which is WarpDrive's game)."""
    env = GridTagEnv(n_taggers=3, size=5, episode_length=12, random_start=True,
                     skill_range=(0.5, 1.0), tag_distance_range=(0, 2),
                     episode_length_range=(4, 12))  # fmt: skip
    plain = GridTagLevel.open_field(env.generate(jax.random.key(1)).pos, 5)
    ruled = env.with_default_rules(plain)
    assert all(getattr(plain, f) is None for f in GridTagLevel.RULES)
    assert all(getattr(ruled, f) is not None for f in GridTagLevel.RULES)
    rng = np.random.default_rng(0)
    sa, sb = env.reset_state(None, plain), env.reset_state(None, ruled)
    for t in range(12):
        a = act(rng.integers(0, 5, 3).tolist(), int(rng.integers(0, 5)))
        sa, ra, ta, ua, _ = env.step_state(None, sa, a)
        sb, rb, tb, ub, _ = env.step_state(jax.random.key(t), sb, a)
        np.testing.assert_array_equal(sa.pos, sb.pos)
        assert (bool(ta), bool(ua)) == (bool(tb), bool(ub))
        for team in env.teams:
            np.testing.assert_array_equal(ra[team], rb[team])
            np.testing.assert_array_equal(env.observe(sa)[team], env.observe(sb)[team])


RULES_ENV = GridTagEnv(n_taggers=2, size=6, episode_length=30, max_obstacles=8,
                       skill_range=(0.4, 0.9), tag_distance_range=(1, 3),
                       episode_length_range=(10, 25))  # fmt: skip
GENERATE = jax.jit(RULES_ENV.generate)


@functools.cache
def _mutate(edits: int):
    return jax.jit(lambda k, lv: A.mutate(k, lv, edits, env=RULES_ENV))


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), edits=st.sampled_from([0, 4, 12]))  # static: few shapes
def test_generated_and_mutated_rules_stay_valid(seed: int, edits: int) -> None:
    level = GENERATE(jax.random.key(seed))
    child = _mutate(edits)(jax.random.key(seed + 1), level)
    for lv in (level, child):
        A.validate_level(lv, 6, 3, 30)
        assert float(lv.skill.min()) >= 0.4 and float(lv.skill.max()) <= 0.9
        assert 1 <= int(lv.tag_distance) <= 3 and 10 <= int(lv.episode_length) <= 25
    # each edit changes one thing: a cell, a start or one rule value
    changes = (
        int(np.sum(np.asarray(child.blocked) != np.asarray(level.blocked)))
        + int(np.sum(np.any(np.asarray(child.pos) != np.asarray(level.pos), axis=-1)))
        + int(np.sum(np.asarray(child.skill) != np.asarray(level.skill)))
        + int(child.tag_distance != level.tag_distance)
        + int(child.episode_length != level.episode_length)
    )
    assert changes <= edits


def test_rule_edits_happen() -> None:
    """Over 64 mutations of 4 edits each, every rule gets redrawn somewhere."""
    env = GridTagEnv(n_taggers=2, size=6, episode_length=30, skill_range=(0.1, 1.0),
                     tag_distance_range=(0, 5), episode_length_range=(1, 30))  # fmt: skip
    level = env.with_default_rules(GridTagLevel.open_field([[0, 0], [1, 1], [6, 6]], 6))
    keys = jax.random.split(jax.random.key(0), 64)
    kids = jax.vmap(lambda k: A.mutate(k, level, 4, env=env))(keys)
    assert np.any(np.asarray(kids.skill[:, 0]) != 1.0) and np.any(
        np.asarray(kids.skill[:, 1]) != 1.0
    )
    assert np.any(np.asarray(kids.tag_distance) != 0)
    assert np.any(np.asarray(kids.episode_length) != 30)


def test_bad_rules_are_one_line_naming_the_field() -> None:
    base = GridTagLevel.open_field([[0, 0], [1, 1]], 3)
    cases = [
        (base.replace(skill=jnp.asarray([0.0, 1.0])), "skill: must be 2 probabilities in (0, 1]"),
        (base.replace(skill=jnp.asarray([0.5])), "skill: must be 2 probabilities"),
        (base.replace(tag_distance=jnp.int32(-1)), "tag_distance: must be an integer >= 0"),
        (base.replace(tag_distance=jnp.float32(1.5)), "tag_distance: must be an integer"),
        (base.replace(episode_length=jnp.int32(0)), "episode_length: must be an integer in 1..20"),
        (base.replace(episode_length=jnp.int32(21)), "episode_length: must be an integer in 1..20"),
    ]  # fmt: skip
    for level, message in cases:
        with pytest.raises(ValueError) as info:
            A.validate_level(level, 3, 2, 20)
        assert str(info.value).startswith(message) and "\n" not in str(info.value)
    for bad, field in (({"skill_range": (0.0, 0.5)}, "skill_range"),
                       ({"tag_distance_range": (2, 1)}, "tag_distance_range"),
                       ({"episode_length_range": (5, 101)}, "episode_length_range")):  # fmt: skip
        with pytest.raises(ValueError, match=field):
            GridTagEnv(**bad)
    with pytest.raises(ValueError, match="tag_distance: must be an integer"):
        A.from_json('{"size": 3, "pos": [[0, 0], [1, 1]], "blocked": ["....", "....", "....", "...."], "tag_distance": 1.5}')  # fmt: skip


def test_json_round_trip_with_rules() -> None:
    env = GridTagEnv(n_taggers=2, size=5, max_obstacles=4, skill_range=(0.2, 0.8),
                     tag_distance_range=(0, 2), episode_length_range=(20, 100))  # fmt: skip
    level = env.generate(jax.random.key(4))
    back = A.from_json(A.to_json(level))
    assert A.levels_equal(back, level)
    assert not A.levels_equal(back.replace(tag_distance=back.tag_distance + 1), level)
    assert not A.levels_equal(back.replace(episode_length=None), level)
