import jax
import numpy as np
import pytest

from arenax.envs.maze import (
    MazeEnv,
    MazeLevel,
    is_valid,
    levels_equal,
    pad_level,
    sample_dr_level,
    stack_levels,
    validate_level,
)

ASCII = """
..#..
.>#.G
..#..
.....
"""


def test_ascii_roundtrip_and_fields():
    lv = MazeLevel.from_ascii(ASCII)
    assert lv.walls.shape == (4, 5)
    assert tuple(np.asarray(lv.agent_pos)) == (1, 1)
    assert int(lv.agent_dir) == 0
    assert tuple(np.asarray(lv.goal_pos)) == (4, 1)
    assert int(lv.walls.sum()) == 3
    assert lv.to_ascii() == ASCII.strip()
    assert bool(levels_equal(MazeLevel.from_ascii(lv.to_ascii()), lv))


def test_json_roundtrip_random_levels():
    for i in range(20):
        lv = sample_dr_level(jax.random.key(i), 7, 9, 20)
        back = MazeLevel.from_json(lv.to_json())
        assert bool(levels_equal(back, lv))


@pytest.mark.parametrize(
    "text,message",
    [
        ("..\n.>", "no goal"),
        ("G.\n..", "no agent"),
        (">G.\n..", "row 1 has 2 characters"),
        (">G\nx.", "unknown character 'x'"),
        (">G\nG.", "two goals"),
    ],
)
def test_ascii_errors(text, message):
    with pytest.raises(ValueError, match=message):
        MazeLevel.from_ascii(text)


@pytest.mark.parametrize(
    "agent,goal,message",
    [
        ((0, 0), (0, 0), "share the cell"),
        ((1, 0), (2, 2), "agent_pos=\\(1, 0\\) is on a wall"),
        ((0, 0), (1, 0), "goal_pos=\\(1, 0\\) is on a wall"),
        ((3, 0), (2, 2), "out of bounds"),
        ((0, 0), (0, -1), "out of bounds"),
    ],
)
def test_validation_errors(agent, goal, message):
    walls = np.zeros((3, 3), bool)
    walls[0, 1] = True
    with pytest.raises(ValueError, match=message):
        MazeLevel.create(walls, agent, 0, goal)
    lv = MazeLevel.create(walls, agent, 0, goal, validate=False)
    assert not bool(is_valid(lv))


def test_bad_direction():
    with pytest.raises(ValueError, match="agent_dir=4"):
        MazeLevel.create(np.zeros((3, 3), bool), (0, 0), 4, (2, 2))


def test_levels_equal_distinguishes_each_field():
    lv = sample_dr_level(jax.random.key(0), 6, 6, 8)
    assert bool(levels_equal(lv, lv))
    occupied = {tuple(np.asarray(lv.agent_pos)), tuple(np.asarray(lv.goal_pos))}
    x, y = next((x, y) for y in range(6) for x in range(6) if (x, y) not in occupied)
    changed = [
        lv.replace(walls=lv.walls.at[y, x].set(~lv.walls[y, x])),
        lv.replace(agent_dir=(lv.agent_dir + 1) % 4),
        lv.replace(agent_pos=lv.agent_pos.at[0].add(100)),
        lv.replace(goal_pos=lv.goal_pos.at[1].add(100)),
    ]
    for other in changed:
        assert not bool(levels_equal(lv, other))


def test_padding_keeps_observations_and_dynamics():
    """A level padded with walls behaves exactly like the original."""
    key = jax.random.key(3)
    small_env, big_env = MazeEnv(height=7, width=9), MazeEnv(height=12, width=11)
    lv = sample_dr_level(key, 7, 9, 12)
    big = pad_level(lv, 12, 11)
    assert big.walls.shape == (12, 11)
    actions = jax.random.randint(key, (120,), 0, 3)

    def run(env, level):
        def step(s, a):
            obs, s, r, term, _trunc, _ = env.step(key, s, {"agent": a[None]})
            return s, (obs["agent"].image, r["agent"], term, s.agent_pos, s.agent_dir)

        _, s = env.reset(key, level)
        return jax.lax.scan(step, s, actions)[1]

    for a, b in zip(run(small_env, lv), run(big_env, big), strict=False):
        np.testing.assert_array_equal(a, b)


def test_stack_levels_pads_to_largest():
    a = sample_dr_level(jax.random.key(0), 5, 5, 3)
    b = sample_dr_level(jax.random.key(1), 7, 6, 3)
    s = stack_levels([a, b])
    assert s.walls.shape == (2, 7, 6)
    assert bool(s.walls[0, 5:, :].all()) and bool(s.walls[0, :, 5:].all())


def test_validate_level_rejects_batches():
    lv = jax.vmap(lambda k: sample_dr_level(k, 5, 5, 3))(jax.random.split(jax.random.key(0), 2))
    with pytest.raises(ValueError, match="must be \\(H, W\\)"):
        validate_level(lv)


def test_json_whose_declared_size_disagrees_with_its_rows_is_refused() -> None:
    import json

    text = json.loads(MazeLevel.from_ascii(">.G\n...\n...").to_json())
    with pytest.raises(ValueError, match=r"declares height=5, width=3 but its rows are 3 x 3"):
        MazeLevel.from_json(json.dumps({**text, "height": 5}))
    with pytest.raises(ValueError, match="non-empty list of row strings"):
        MazeLevel.from_json(json.dumps({**text, "ascii": []}))
