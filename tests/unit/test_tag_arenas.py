"""Grid Tag arenas with obstacles: the movement and observation rules by hand, generators
and mutators that keep levels valid, validation errors, metrics by hand, JSON, rendering,
and training on generated arenas."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from arenax import make_generator, make_mutator
from arenax.envs.tag import GridTagEnv, GridTagLevel
from arenax.envs.tag import arenas as A

STAY, PX, MX, PY, MY = range(5)


def arena(rows: list[str], pos: list[list[int]]) -> GridTagLevel:
    """Rows listed from y = L down to y = 0 (as drawn), '#' blocked."""
    blocked = np.array([[c == "#" for c in row] for row in reversed(rows)])
    return GridTagLevel(pos=jnp.asarray(pos, jnp.int32), blocked=jnp.asarray(blocked))


def test_a_blocked_cell_refuses_a_move_like_the_border() -> None:
    env = GridTagEnv(n_taggers=2, size=3)
    level = arena(["....", "....", ".#..", "...."], [[0, 1], [3, 3], [2, 0]])
    s = env.reset_state(None, level)
    # tagger 0 walks into the obstacle at (1, 1); tagger 1 into the border; runner moves
    s, r, term, _, _ = env.step_state(
        None, s, {"tagger": jnp.array([PX, PX]), "runner": jnp.array([PY])}
    )
    np.testing.assert_array_equal(s.pos, [[0, 1], [3, 3], [2, 1]])
    np.testing.assert_allclose(r["tagger"], [-0.01 - 0.1, -0.01 - 0.1])
    np.testing.assert_allclose(r["runner"], [0.01])
    assert not bool(term)
    # the runner bumps into the obstacle from the other side
    s, r, term, _, _ = env.step_state(
        None, s, {"tagger": jnp.array([MY, STAY]), "runner": jnp.array([MX])}
    )
    np.testing.assert_array_equal(s.pos, [[0, 0], [3, 3], [2, 1]])
    np.testing.assert_allclose(r["runner"], [0.01 - 0.1])
    assert not bool(term)
    s, r, term, _, _ = env.step_state(
        None, s, {"tagger": jnp.array([PX, STAY]), "runner": jnp.array([STAY])}
    )  # tagger 0 from (0, 0) to (1, 0); no tag yet
    s, r, term, _, _ = env.step_state(
        None, s, {"tagger": jnp.array([PX, STAY]), "runner": jnp.array([MY])}
    )  # both reach (2, 0)
    assert bool(term) and float(r["tagger"][0]) == 10.0


def test_occupancy_patch_by_hand() -> None:
    env = GridTagEnv(n_taggers=1, size=3, partial=True, view=1)
    level = arena(["....", "....", ".#..", "...."], [[0, 0], [2, 2]])
    obs = env.observe(env.reset_state(None, level))
    tagger, runner = np.asarray(obs["tagger"][0, 6:]), np.asarray(obs["runner"][0, 6:])
    # tagger at (0, 0): rows y = -1, 0, 1, each x = -1, 0, 1; off the grid and (1, 1) are 1
    np.testing.assert_array_equal(tagger, [1, 1, 1, 1, 0, 0, 1, 0, 1])
    # runner at (2, 2): only (1, 1) is blocked around it
    np.testing.assert_array_equal(runner, [1, 0, 0, 0, 0, 0, 0, 0, 0])
    assert env.obs_size == 6 + 9 and obs["tagger"].shape == (1, 15)


def test_open_field_is_warpdrives_game() -> None:
    """Without obstacles nothing changes: generated levels are WarpDrive's starts and the
    observations keep WarpDrive's size (tests/conformance/test_tag_warpdrive.py replays the rest)."""
    env = GridTagEnv(n_taggers=3, size=10)
    level = env.generate(jax.random.key(0))
    assert not bool(level.blocked.any()) and level.blocked.shape == (11, 11)
    assert env.obs_size == 4 * 4 + 1


@pytest.mark.parametrize("name", ["empty", "dr", "rooms", "pillars", "corridors"])
def test_generators_make_valid_arenas(name: str) -> None:
    gen = make_generator(f"grid-tag/{name}", size=12, n_taggers=5)
    levels = jax.jit(jax.vmap(gen))(jax.random.split(jax.random.key(1), 32))
    metrics = jax.jit(jax.vmap(A.level_metrics))(levels)
    host = jax.device_get(levels)  # indexed in NumPy (op by op: a program per primitive)
    for i in range(32):
        level = jax.tree.map(lambda x, i=i: x[i], host)
        A.validate_level(level, 12, 6)
        blocked = np.asarray(level.blocked)
        if name == "empty":
            assert not blocked.any()
        if name == "dr":
            assert blocked.sum() <= 16
        if name == "rooms":  # 13 + 13 - 1 wall cells, four doors
            assert blocked.sum() == 25 - 4 and not blocked[6, :].all() and not blocked[:, 6].all()
        if name == "pillars":  # 8 isolated cells on the even lattice
            ys, xs = np.nonzero(blocked)
            assert len(ys) == 8 and (ys % 2 == 0).all() and (xs % 2 == 0).all()
        if name == "corridors":  # one gap in each wall row 2, 5, 8, 11
            assert [int((~blocked[y]).sum()) for y in (2, 5, 8, 11)] == [1, 1, 1, 1]
        if name != "dr":  # these layouts keep the free space in one piece
            assert float(metrics["connectivity"][i]) == 1.0


@given(seed=st.integers(0, 2**31 - 1), edits=st.sampled_from([0, 3, 12]))  # static: few shapes
def test_mutations_stay_valid(seed: int, edits: int) -> None:
    level = A.rooms(jax.random.key(seed), 8, 3)
    mutate = make_mutator("grid-tag/edits")
    child = jax.jit(mutate, static_argnums=2)(jax.random.key(seed + 1), level, edits)
    A.validate_level(child, 8, 4)
    changed = int(np.sum(np.asarray(child.blocked) != np.asarray(level.blocked)))
    moved = int(np.sum(np.any(np.asarray(child.pos) != np.asarray(level.pos), axis=-1)))
    assert changed + moved <= edits


def test_bad_levels_are_one_line_naming_the_field() -> None:
    ok = ["....", "....", ".#..", "...."]
    cases = [
        (arena(ok, [[1, 1], [0, 0]]), "pos[0]=(1, 1): on an obstacle"),
        (arena(ok, [[0, 0], [4, 0]]), "pos[1]=(4, 0): outside the arena (cells 0..3)"),
        (arena(ok, [[0, 0]]), "pos: must be (2, 2)"),
        (arena(["####"] * 4, [[0, 0], [1, 0]]), "pos[0]=(0, 0): on an obstacle"),
        (GridTagLevel(pos=jnp.zeros((2, 2), jnp.int32), blocked=jnp.ones((4, 4), bool)),
         "pos[0]=(0, 0): on an obstacle"),
        (GridTagLevel(pos=jnp.zeros((2, 2), jnp.int32), blocked=jnp.zeros((3, 3), bool)),
         "blocked: must be a (4, 4) bool array"),
    ]  # fmt: skip
    for level, message in cases:
        with pytest.raises(ValueError) as info:
            A.validate_level(level, 3, 2)
        assert str(info.value).startswith(message) and "\n" not in str(info.value)
    with pytest.raises(ValueError, match="max_obstacles=16 must leave a free cell"):
        GridTagEnv(size=3, max_obstacles=16)


def test_metrics_by_hand() -> None:
    # a wall column at x = 2 splits a 5x5 arena: runner at (0, 0), taggers at (4, 4), (1, 3)
    rows = ["..#.."] * 5
    m = A.level_metrics(arena(rows, [[4, 4], [1, 3], [0, 0]]))
    assert float(m["coverage"]) == pytest.approx(5 / 25)
    assert float(m["connectivity"]) == pytest.approx(10 / 20)
    assert float(m["taggers_reach"]) == pytest.approx(0.5)
    assert float(m["start_distance"]) == pytest.approx((np.sqrt(32) + np.sqrt(10)) / 2)


def test_json_round_trip_and_errors() -> None:
    level = A.corridors(jax.random.key(3), 9, 2)
    text = A.to_json(level)
    assert A.levels_equal(A.from_json(text), level)
    with pytest.raises(ValueError, match="not a grid Tag arena"):
        A.from_json('{"pos": [[0, 0]]}')
    with pytest.raises(ValueError, match="on an obstacle"):
        A.from_json('{"size": 1, "pos": [[0, 0], [1, 1]], "blocked": ["#.", ".."]}')


@pytest.mark.parametrize("size", [8, 14])
def test_heldout_arenas_are_valid_and_fixed(size: int) -> None:
    for name in A.HELDOUT_ARENAS:
        a, b = (A.heldout_arena(name, jax.random.key(k), size, 3) for k in (0, 1))
        A.validate_level(a, size, 4)
        A.validate_level(b, size, 4)
        np.testing.assert_array_equal(a.blocked, b.blocked)  # the layout is the arena's
        assert float(A.level_metrics(a)["connectivity"]) == 1.0, name
        pos = np.asarray(a.pos)
        if name == "crowded-start":
            assert np.abs(pos - size // 2).max() <= 1
        if name == "cornered":  # the runner in its pocket, every tagger outside it
            k = max(2, (size + 1) // 4)
            assert pos[-1].tolist() == [0, 0]
            assert all(x > k or y > k for x, y in pos[:-1].tolist())
    assert A.resolve_arenas("rooms, arenas")[0] == "rooms"
    with pytest.raises(ValueError, match="unknown arena 'x'"):
        A.resolve_arenas("x")


def test_both_tag_games_list_their_own_held_out_arenas():
    """Both Tag games call their held-out suite ``arenas``: the registry lists each under
    its family (neither hides the other), and ``render`` finds either by ``family/arenas``."""
    import arenax
    from arenax.cli.render import _levels_of
    from arenax.envs.tag import discs

    suites = arenax.list_suites()
    assert suites["grid-tag/arenas"] == A.HELDOUT_ARENAS and "maze" in A.HELDOUT_ARENAS
    assert suites["tag/arenas"] == discs.HELDOUT_ARENAS and "ring" in discs.HELDOUT_ARENAS
    assert "arenas" not in suites
    assert arenax.registry.family_suites()["grid-tag"] == {"arenas": A.HELDOUT_ARENAS}
    assert _levels_of("grid-tag/arenas")[0].name == "grid-tag"
    assert _levels_of("tag/arenas")[0].name == "tag"
