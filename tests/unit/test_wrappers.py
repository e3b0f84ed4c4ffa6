import jax
import jax.numpy as jnp
import numpy as np
import pytest

from arenax.envs import AutoReplay, AutoResetFromBatch, EpisodeStats, wrappers
from arenax.envs.classic import CartPoleEnv
from arenax.envs.maze import MazeEnv, MazeLevel

L1 = MazeLevel.from_ascii(">G.\n...")
L2 = MazeLevel.from_ascii("...\nG.<")
KEY = jax.random.key(0)
FWD = {"agent": jnp.array([2])}
LEFT = {"agent": jnp.array([0])}


def test_auto_replay_restarts_same_level():
    env = AutoReplay(MazeEnv(height=2, width=3, max_steps=3))
    _, s = env.reset(KEY, L1)
    obs, s, r, term, trunc, _ = env.step(KEY, s, FWD)
    assert bool(term) and float(r["agent"][0]) > 0
    # state and observation are of the fresh episode on the same level
    assert int(s.inner.time) == 0 and tuple(np.asarray(s.inner.agent_pos)) == (0, 0)
    fresh, _ = MazeEnv(height=2, width=3).reset(KEY, L1)
    np.testing.assert_array_equal(obs["agent"].image, fresh["agent"].image)
    # truncation also resets
    for _t in range(3):
        _, s, _, term, trunc, _ = env.step(KEY, s, LEFT)
    assert bool(trunc) and int(s.inner.time) == 0 and int(s.inner.agent_dir) == 0


def test_auto_reset_from_batch_cycles_levels():
    env = AutoResetFromBatch(MazeEnv(height=2, width=3, max_steps=2))
    levels = jax.tree.map(lambda a, b: jnp.stack([a, b]), L1, L2)
    _, s = env.reset(KEY, levels)
    assert int(s.cursor) == 0
    _, s, _, term, _, _ = env.step(KEY, s, FWD)  # solves L1
    assert bool(term) and int(s.cursor) == 1
    assert tuple(np.asarray(s.inner.agent_pos)) == (2, 1) and int(s.inner.agent_dir) == 2
    _, s, _, _, trunc, _ = env.step(KEY, s, LEFT)
    _, s, _, _, trunc, _ = env.step(KEY, s, LEFT)
    assert bool(trunc) and int(s.cursor) == 0  # wraps around
    assert tuple(np.asarray(s.inner.agent_pos)) == (0, 0)


def test_episode_stats():
    env = EpisodeStats(AutoReplay(MazeEnv(height=2, width=3, max_steps=10)))
    _, s = env.reset(KEY, L1)
    _, s, _, _, _, info = env.step(KEY, s, LEFT)
    assert not bool(info["episode"]["done"])
    _, s, _, _, _, info = env.step(KEY, s, LEFT)
    _, s, _, _, _, info = env.step(KEY, s, LEFT)
    _, s, _, _, _, info = env.step(KEY, s, LEFT)  # facing right again
    _, s, _r, _term, _, info = env.step(KEY, s, FWD)
    ep = info["episode"]
    assert bool(ep["done"]) and bool(ep["success"]) and int(ep["length"]) == 5
    np.testing.assert_allclose(ep["returns"]["agent"], [1 - 0.9 * 5 / 10], rtol=1e-6)
    assert int(s.length) == 0 and float(s.returns["agent"][0]) == 0.0


def test_wrappers_vmap_jit_and_delegate():
    base = MazeEnv(height=5, width=5)
    env = EpisodeStats(AutoReplay(base))
    assert env.max_steps == base.max_steps and env.teams == ("agent",)
    assert env.action_space("agent").n == 7
    levels = jax.jit(jax.vmap(base.generate))(jax.random.split(KEY, 4))
    _, s = jax.jit(jax.vmap(env.reset))(jax.random.split(KEY, 4), levels)
    step = jax.jit(jax.vmap(env.step))
    for t in range(300):
        a = {"agent": jax.random.randint(jax.random.key(t), (4, 1), 0, 3)}
        obs, s, _r, _term, _trunc, _info = step(jax.random.split(jax.random.key(t), 4), s, a)
    assert obs["agent"].image.shape == (4, 1, 5, 5, 3)
    # the replayed level never changes
    np.testing.assert_array_equal(s.inner.level.walls, levels.walls)


@pytest.mark.parametrize("chunk", [1, 3, 5, 64])
@pytest.mark.parametrize("draw_all_when_small", [True, False])
def test_replace_where_equals_drawing_every_row_and_selecting(chunk, draw_all_when_small):
    """`replace_where` in passes (any chunk, the small-batch loop included) gives exactly
    the rows of drawing for every env and selecting (worked out by hand), with none, some
    and all rows needed."""
    n = 5
    current = {"x": jnp.arange(n, dtype=jnp.float32) * -1.0, "y": jnp.zeros((n, 2), jnp.int32)}

    def fresh(ids):
        ids = jnp.arange(n) if ids is None else ids
        return {"x": 100.0 + ids.astype(jnp.float32), "y": jnp.stack([ids, 2 * ids], axis=1)}

    run = jax.jit(lambda need: wrappers.replace_where(
        need, fresh, current, chunk=chunk, draw_all_when_small=draw_all_when_small))  # fmt: skip
    for need in ([0, 0, 0, 0, 0], [0, 1, 0, 0, 1], [1, 1, 1, 1, 1], [1, 0, 0, 0, 0]):
        need = jnp.asarray(need, bool)
        want = {  # by hand: row i is fresh's row for i where need[i], else current's
            "x": np.where(need, 100.0 + np.arange(n), np.asarray(current["x"])),
            "y": np.where(need[:, None], np.stack([np.arange(n), 2 * np.arange(n)], 1), 0),
        }
        got = run(need)
        np.testing.assert_array_equal(np.asarray(got["x"]), want["x"])
        np.testing.assert_array_equal(np.asarray(got["y"]), want["y"])


@pytest.mark.parametrize(
    "kind,chunk,family,gathers",
    [(kind, chunk, "cartpole", "cheap") for kind in ("replay", "batch") for chunk in (3, 64)]
    + [("batch", 64, "maze", "cheap"), ("batch", 64, "maze", "dear")],
)
def test_batched_auto_reset_equals_vmap_of_step(
    monkeypatch, kind: str, chunk: int, family: str, gathers: str
) -> None:
    """`env.steps` (new episodes started only where one ended, in passes of `chunk` envs;
    for the maze, whose reset ignores its key, a copy of each env's next start state built
    at reset) gives `vmap(env.step)`'s numbers bit for bit: observations, states, rewards,
    flags and `info` (final observations, episode totals), on steps where no episode, one,
    or more than a pass's worth end (a time limit of 16 steps: many of the 12 envs
    truncate together). `gathers="dear"`: the accelerator forms, run on the CPU."""
    monkeypatch.setattr(wrappers, "RESET_CHUNK", chunk)
    monkeypatch.setenv("ARENAX_GATHERS", gathers)
    jax.clear_caches()  # the form is chosen when traced: no trace of the other may be reused
    if family == "maze":  # small mazes, few walls: goals are reached, so ends are uneven
        base = MazeEnv(height=3, width=4, max_steps=16, n_walls=1)
    else:
        base = CartPoleEnv(max_steps=16)  # DR physics: every env its own level
    n = 12
    keys = jax.random.split(KEY, n)
    if kind == "replay":
        env = EpisodeStats(AutoReplay(base))
        levels = jax.vmap(base.generate)(keys)
    else:
        env = EpisodeStats(AutoResetFromBatch(base))
        levels = jax.vmap(jax.vmap(base.generate))(jax.random.split(KEY, (n, 3)))
    _, s1 = jax.vmap(env.reset)(keys, levels)
    s2 = s1
    per_env, batched = jax.jit(jax.vmap(env.step)), jax.jit(env.steps)
    ends = []
    for t in range(40):
        k = jax.random.split(jax.random.key(t), n)
        a = {
            "agent": jax.random.randint(
                jax.random.key(100 + t), (n, 1), 0, 2 if family == "cartpole" else 3
            )
        }
        *out1, s1_next = (lambda o, s, *r: (o, *r, s))(*per_env(k, s1, a))
        *out2, s2_next = (lambda o, s, *r: (o, *r, s))(*batched(k, s2, a))
        for x, y in zip(jax.tree.leaves((out1, s1_next)), jax.tree.leaves((out2, s2_next)),
                        strict=True):  # fmt: skip
            np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
        ends.append(int(np.sum(np.asarray(out1[2]) | np.asarray(out1[3]))))
        s1, s2 = s1_next, s2_next
    assert min(ends) == 0 and 1 in ends and max(ends) > 3, ends  # every kind of step seen
