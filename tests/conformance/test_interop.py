"""Export to Gymnasium and PettingZoo: their own API checkers, and step-for-step agreement
with arenax's own environments under random actions."""

import re
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from pettingzoo.test import parallel_api_test

import arenax
from arenax.envs.classic import FAMILIES
from arenax.interop import to_gymnasium, to_gymnasium_env, to_pettingzoo

# what Gymnasium's checker says about arenax's (and Gymnasium's own) classic-control bounds
TOLERATED = ("infinity", "symmetric and normalized")


def checked(fn) -> None:
    """Run ``fn`` and fail on any warning except the tolerated remarks on bounds."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn()
    bad = [str(w.message) for w in caught if not any(t in str(w.message) for t in TOLERATED)]
    assert not bad, bad


@pytest.mark.parametrize("family", ["maze", *sorted(FAMILIES)])
def test_gymnasium_check_env(family: str) -> None:
    if family == "maze":
        env = arenax.make("maze", height=7, width=7, n_walls=5, max_steps=20)
        levels = env.generate
    else:
        env = arenax.make(family)
        levels = env.heldout_levels()  # a dict of named levels
    checked(lambda: check_env(to_gymnasium_env(env, levels), skip_render_check=True))


def test_vector_maze_equals_arenax_rollout_step_for_step() -> None:
    """One fixed level: the exported VectorEnv and arenax's own step/reset (driven here
    one env at a time) agree on every observation, reward, flag, final observation and
    episode total under the same random actions, through several auto-resets."""
    env = arenax.make("maze", height=6, width=6, n_walls=6, max_steps=9)
    level = env.generate(jax.random.key(3))
    n = 3
    vec = to_gymnasium(env, [level], n, autoreset_mode="same_step")
    obs, _ = vec.reset(seed=0)
    step = jax.jit(env.step)
    ref = [env.reset(jax.random.key(0), level)[1] for _ in range(n)]
    ret, length = np.zeros(n), np.zeros(n, int)
    rng = np.random.default_rng(0)
    ends = 0
    for _ in range(30):
        actions = rng.integers(0, 7, n)
        obs, r, te, tr, info = vec.step(actions)
        for i in range(n):
            o, ref[i], rew, t_i, c_i, _ = step(
                jax.random.key(0), ref[i], {"agent": jnp.asarray([actions[i]], jnp.int32)}
            )
            ret[i] += float(rew["agent"][0])
            length[i] += 1
            assert (te[i], tr[i]) == (bool(t_i), bool(c_i))
            assert r[i] == pytest.approx(float(rew["agent"][0]))
            if t_i or c_i:
                ends += 1
                np.testing.assert_array_equal(info["final_obs"]["image"][i], o["agent"].image[0])
                assert info["_final_obs"][i] and info["_episode"][i]
                assert info["episode"]["r"][i] == pytest.approx(ret[i])
                assert info["episode"]["l"][i] == length[i]
                o, ref[i] = env.reset(jax.random.key(0), level)
                ret[i], length[i] = 0.0, 0
            elif info:
                assert not info["_final_obs"][i]
            np.testing.assert_array_equal(obs["image"][i], o["agent"].image[0])
            assert obs["direction"][i] == int(o["agent"].direction[0])
    assert ends >= n  # every env auto-reset at least once


def test_next_step_autoreset_as_gymnasium_defines_it() -> None:
    """NEXT_STEP on one fixed level: the step that ends an episode returns its last
    observation (the one arenax's own step gives); the next step ignores the action and
    returns the level's first observation with reward 0 and no flags."""
    env = arenax.make("maze", height=6, width=6, n_walls=6, max_steps=4)
    level = env.generate(jax.random.key(3))
    vec = to_gymnasium(env, [level], 2)
    assert vec.metadata["autoreset_mode"].value == "NextStep"
    first, _ = vec.reset(seed=0)
    start = np.asarray(env.reset(jax.random.key(0), level)[0]["agent"].image[0])
    np.testing.assert_array_equal(first["image"][0], start)
    state = env.reset(jax.random.key(0), level)[1]
    for t in range(4):  # turning left never ends an episode before the time limit
        obs, r, te, tr, info = vec.step(np.zeros(2, int))
        o, state, *_ = env.step(jax.random.key(0), state, {"agent": jnp.zeros((1,), jnp.int32)})
        np.testing.assert_array_equal(obs["image"][0], o["agent"].image[0])
        assert list(tr) == [t == 3, t == 3] and not te.any() and info == {}
    obs, r, te, tr, _ = vec.step(np.array([2, 5]))  # the actions are ignored: a reset
    np.testing.assert_array_equal(obs["image"], np.stack([start, start]))
    assert list(r) == [0.0, 0.0] and not te.any() and not tr.any()
    with pytest.raises(ValueError, match="autoreset_mode='Disabled': allowed next_step, same_step"):
        to_gymnasium(env, [level], 2, autoreset_mode="Disabled")


def test_gymnasiums_wrappers_work_on_the_vector_export() -> None:
    """Gymnasium's own vector wrappers accept the export (NEXT_STEP): RecordEpisodeStatistics
    reports each episode's return and length as the step stream adds them up, and
    NormalizeObservation runs."""
    from gymnasium.wrappers.vector import NormalizeObservation, RecordEpisodeStatistics

    cart = arenax.make("cartpole", levels="default")
    vec = RecordEpisodeStatistics(NormalizeObservation(to_gymnasium(cart, cart.generate, 4)))
    vec.reset(seed=0)
    ret, length, pending, seen = np.zeros(4), np.zeros(4, int), np.zeros(4, bool), 0
    rng = np.random.default_rng(0)
    for _ in range(120):
        _, r, te, tr, info = vec.step(rng.integers(0, 2, 4))
        ret = np.where(pending, 0.0, ret + r)
        length = np.where(pending, 0, length + 1)
        done = te | tr
        if done.any():
            assert list(info["_episode"]) == list(done)
            np.testing.assert_allclose(info["episode"]["r"][done], ret[done], rtol=1e-5)
            np.testing.assert_array_equal(info["episode"]["l"][done], length[done])
            seen += int(done.sum())
        pending = done
    assert seen >= 4


def test_vector_reset_takes_one_seed_per_env() -> None:
    """``reset(seed=[...])``: env i's first observation depends on seed i alone."""
    cart = arenax.make("cartpole")
    vec = to_gymnasium(cart, cart.generate, 3)
    a, _ = vec.reset(seed=[1, 2, 3])
    b, _ = vec.reset(seed=[1, 7, 3])
    c, _ = vec.reset(seed=[1, 2, 3])
    np.testing.assert_array_equal(a, c)
    np.testing.assert_array_equal(a[[0, 2]], b[[0, 2]])
    assert not np.array_equal(a[1], b[1])
    with pytest.raises(TypeError, match="a list of 3 ints"):
        vec.reset(seed=[1, 2])


def test_vector_draws_levels_from_the_suite() -> None:
    env = arenax.make("maze", height=6, width=6, n_walls=6, max_steps=5)
    levels = [env.generate(jax.random.key(k)) for k in range(3)]
    starts = [np.asarray(env.reset(jax.random.key(0), lv)[0]["agent"].image[0]) for lv in levels]
    vec = to_gymnasium(env, levels, 8, autoreset_mode="same_step")
    obs, _ = vec.reset(seed=1)
    seen = set()
    for _ in range(3):
        for i in range(8):
            match = [k for k, s in enumerate(starts) if np.array_equal(obs["image"][i], s)]
            assert match, "a reset observation that no suite level gives"
            seen.add(match[0])
        for _ in range(5):  # every episode ends after max_steps = 5 steps
            obs, *_ = vec.step(np.zeros(8, int))
    assert len(seen) >= 2


def test_export_errors() -> None:
    tag = arenax.make("tag", n_taggers=1, n_runners=2)
    with pytest.raises(ValueError, match="one team of one agent"):
        to_gymnasium(tag, tag.generate, 2)
    maze = arenax.make("maze", height=5, width=5)
    with pytest.raises(ValueError, match="empty"):
        to_gymnasium(maze, [], 2)
    with pytest.raises(ValueError, match="n_envs=0"):
        to_gymnasium(maze, maze.generate, 0)
    p = to_pettingzoo(tag, tag.generate)
    p.reset(seed=0)
    with pytest.raises(ValueError, match="no action for live agent"):
        p.step({"tagger_0": np.zeros(2, int)})


def test_exports_refuse_actions_outside_their_spaces() -> None:
    """Out-of-range, fractional, non-finite or miscounted actions are a ValueError that
    names the env or agent (MiniGrid raises on an unknown action too), checked on the host
    before the step; the state is left as it was."""
    maze = arenax.make("maze", height=5, width=5)
    vec = to_gymnasium(maze, maze.generate, 4)
    vec.reset(seed=0)
    with pytest.raises(ValueError, match=r"env 0 has action 99, outside Discrete\(7\) \(0\.\.6\)"):
        vec.step(np.array([99, -1, 7, 3]))
    with pytest.raises(ValueError, match=r"env 2 has action 7"):
        vec.step(np.array([0, 1, 7, 3]))
    with pytest.raises(ValueError, match=r"env 1 has action -1"):
        vec.step(np.array([0, -1, 2, 3]))
    with pytest.raises(ValueError, match=r"env 3 has action 18446744073709551615"):
        vec.step(np.array([0, 1, 2, 2**64 - 1], np.uint64))
    vec.step(np.array([0, 1, 2, 3], np.uint8))  # any integer dtype in range
    for bad in (0, (8, 2), 2.5):
        with pytest.raises(
            ValueError, match=re.escape(f"reset_chunk={bad!r}: envs per pass, an int >= 1")
        ):
            to_gymnasium(maze, maze.generate, 4, reset_chunk=bad)
    with pytest.raises(ValueError, match=r"expected shape \(4,\) \(one per env\), got \(3,\)"):
        vec.step(np.array([0, 1, 2]))
    with pytest.raises(ValueError, match="whole numbers"):
        vec.step(np.array([0.5, 1, 2, 3]))
    obs, *_ = vec.step(np.array([0.0, 1, 2, 3]))  # whole floats are fine
    assert obs["image"].shape[0] == 4
    one = to_gymnasium_env(maze, maze.generate)
    one.reset(seed=0)
    with pytest.raises(ValueError, match=r"the action has action 9"):
        one.step(9)
    pend = to_gymnasium_env(arenax.make("pendulum"), arenax.make("pendulum").generate)
    pend.reset(seed=0)
    with pytest.raises(ValueError, match="non-finite"):
        pend.step(np.array([np.nan], np.float32))
    pend.step(np.array([5.0], np.float32))  # beyond the bound: clipped, as Gymnasium's
    tag = arenax.make("tag", n_taggers=1, n_runners=2)
    p = to_pettingzoo(tag, tag.generate)
    p.reset(seed=0)
    acts = {a: np.zeros(2, int) for a in p.agents}
    acts["runner_1"] = np.array([1000, 0])
    with pytest.raises(
        ValueError, match=r"agent 'runner_1' has action \[1000, 0\], outside MultiDiscrete"
    ):
        p.step(acts)
    acts["runner_1"] = np.zeros(3, int)
    with pytest.raises(ValueError, match=r"expected shape \(2,\), got \(3,\)"):
        p.step(acts)


def test_python_interfaces_refuse_bad_arguments_in_one_line() -> None:
    """A name instead of an environment, a seed JAX cannot take, an unsafe family name."""
    from arenax.envs.classic.cartpole import CartPoleEnv
    from arenax.registry import register

    with pytest.raises(
        TypeError,
        match=r"env: expected an arenax environment, got str \(build it first: arenax\.make\('maze'\)\)",
    ):
        to_gymnasium("maze", [], 2)
    with pytest.raises(TypeError, match="expected an arenax environment, got int"):
        to_pettingzoo(3, [])
    maze = arenax.make("maze", height=5, width=5)
    with pytest.raises(
        ValueError, match=r"seed=1180591620717411303424: must be an integer in \[0, 2\*\*32\)"
    ):
        to_gymnasium(maze, maze.generate, 2, seed=2**70)
    one = to_gymnasium_env(maze, maze.generate)
    with pytest.raises(ValueError, match=r"seed=1099511627776: must be an integer"):
        one.reset(seed=2**40)
    for bad in ("../evil name", "a/b", "", " x"):
        with pytest.raises(ValueError, match="letters, digits"):
            register(bad, CartPoleEnv)


def test_exports_refuse_impossible_fixed_levels() -> None:
    """Levels handed to an export are checked like generated ones: a CartPole without mass
    and with negative gravity (NaN states) and a maze of the wrong size are refused with
    the level and its problems named; every built-in held-out level passes."""
    from arenax.envs.maze.level import MazeLevel

    cart = arenax.make("cartpole")
    broken = cart.default_level().replace(
        masscart=jnp.float32(0.0), masspole=jnp.float32(0.0), gravity=jnp.float32(-9.8)
    )
    with pytest.raises(ValueError, match=r"levels\['moon-x'\]: gravity=-9.8 must be >= 0; "
                                         r"masscart=0 must be > 0; masspole=0 must be > 0"):  # fmt: skip
        to_gymnasium_env(cart, {"ok": cart.default_level(), "moon-x": broken})
    with pytest.raises(ValueError, match=r"levels\[0\]: length=nan is not finite"):
        to_gymnasium(cart, [cart.default_level().replace(length=jnp.float32(np.nan))], 2)
    for family in FAMILIES:
        env = arenax.make(family)
        for name, level in env.heldout_levels().items():
            assert env.level_problems(level) == [], (family, name)
    maze = arenax.make("maze", height=5, width=5)
    small = MazeLevel.from_ascii(">.G\n...\n...")
    with pytest.raises(ValueError, match=r"levels\[0\]: a \(3, 3\) maze for a 5x5 env"):
        to_gymnasium(maze, [small], 2)
    on_wall = MazeLevel.from_ascii(">#G\n...\n...").replace(goal_pos=jnp.array([1, 0], jnp.int32))
    assert arenax.make("maze", height=3, width=3).level_problems(on_wall) == [
        "goal_pos=(1, 0) is on a wall"
    ]


@pytest.mark.parametrize("game", ["tag", "grid-tag"])
def test_pettingzoo_state_is_the_games_global_state(game: str) -> None:
    """``state()`` (centralised critics) is the vector the centralised critic reads in
    training: for continuous Tag 7 numbers per agent and t / T, for grid Tag each agent's
    cell and t / T (checked against the agents' positions); its space holds it."""
    if game == "tag":
        env = arenax.make("tag", n_taggers=2, n_runners=3, episode_length=30)
    else:
        env = arenax.make("grid-tag", n_taggers=2, size=6, episode_length=30)
    p = to_pettingzoo(env, env.generate)
    p.reset(seed=0)
    per_agent = 7 if game == "tag" else 2
    agents = sum(env.num_agents(t) for t in env.teams)
    assert p.state_space.shape == (per_agent * agents + 1,)
    for t in range(3):
        s = p.state()
        np.testing.assert_allclose(s, np.asarray(env.global_state(p._state)), rtol=1e-6, atol=1e-6)
        assert p.state_space.contains(s)
        assert s[-1] == pytest.approx(t / 30)
        if game == "grid-tag":  # each agent's (x, y) / L, taggers then runners
            pos = np.asarray(p._state.pos).reshape(-1)
            np.testing.assert_allclose(s[:-1] * env.size, pos, atol=1e-5)
        p.step({a: p.action_space(a).sample() for a in p.agents})


def test_pettingzoo_state_without_a_familys_own_is_every_agents_observation() -> None:
    """A game without its own global state (grid Tag with the environment API's default)
    gives every agent's observation, flattened, in agent order."""
    import copy

    from arenax.envs.core import Environment

    env = copy.copy(arenax.make("grid-tag", n_taggers=2, size=6, episode_length=30))
    plain = type("Plain", (type(env),), {"global_state": Environment.global_state})
    object.__setattr__(env, "__class__", plain)
    p = to_pettingzoo(env, env.generate)
    obs, _ = p.reset(seed=0)
    for _ in range(3):
        flat = [np.concatenate([np.ravel(x) for x in (o.values() if isinstance(o, dict) else [o])])
                for o in (obs[a] for a in p.possible_agents)]  # fmt: skip
        np.testing.assert_allclose(p.state(), np.concatenate(flat).astype(np.float32))
        assert p.state_space.contains(p.state())
        obs, *_ = p.step({a: p.action_space(a).sample() for a in p.agents})


@pytest.mark.parametrize("game", ["tag", "grid-tag"])
def test_pettingzoo_parallel_api_test(game: str) -> None:
    if game == "tag":
        env = arenax.make("tag", n_taggers=2, n_runners=5, episode_length=30, tag_distance=0.2)
    else:
        env = arenax.make("grid-tag", n_taggers=3, size=6, episode_length=40)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # PettingZoo reports soft API problems as warnings
        parallel_api_test(to_pettingzoo(env, env.generate), num_cycles=60)


def test_pettingzoo_tag_equals_arenax_step_for_step() -> None:
    """Continuous Tag with runners leaving: per-agent observations and rewards equal
    arenax's team arrays, and a runner leaves ``agents`` exactly when arenax says it is out."""
    env = arenax.make("tag", n_taggers=3, n_runners=6, episode_length=40, tag_distance=0.25)
    level = env.generate(jax.random.key(5))
    p = to_pettingzoo(env, [level])
    obs, _ = p.reset(seed=0)
    state = env.reset_state(jax.random.key(0), level)
    ref_obs = env.observe(state)
    step = jax.jit(env.step)
    rng = np.random.default_rng(1)
    left = 0
    for _ in range(40):
        for a in p.agents:
            team, i = a.rsplit("_", 1)
            np.testing.assert_array_equal(obs[a], ref_obs[team][int(i)])
        team_act = {t: np.zeros((env.num_agents(t), 2), np.int32) for t in env.teams}
        actions = {}
        for a in p.agents:
            team, i = a.rsplit("_", 1)
            act = rng.integers(0, np.asarray(env.action_space(team).nvec))
            team_act[team][int(i)] = act
            actions[a] = act
        before = list(p.agents)
        obs, rew, term, trunc, _ = p.step(actions)
        ref_obs, state, ref_rew, te, tr, info = step(
            jax.random.key(0), state, {t: jnp.asarray(v) for t, v in team_act.items()}
        )
        assert set(obs) == set(rew) == set(term) == set(before)
        for a in before:
            team, i = a.rsplit("_", 1)
            assert rew[a] == pytest.approx(float(ref_rew[team][int(i)]))
            out = bool(info["out"][team][int(i)])
            assert term[a] == (bool(te) or out) and trunc[a] == bool(tr)
            left += out and not (te or tr)
        if not p.agents:
            break
    assert left > 0, "no runner left the game mid-episode; the test needs tags"


def test_packing_keeps_every_leaf_bit_for_bit() -> None:
    """The flat buffer of the exports' compiled step: floats (NaN, -0.0 included), ints,
    bools, uint8 and PRNG keys come back exactly, inside jit and as NumPy views."""
    from arenax.interop.packing import Packing

    tree = {
        "f": jnp.array([[1.5, -0.0], [jnp.nan, 3e38]], jnp.float32),
        "i": jnp.array([-7, 2**31 - 1], jnp.int32),
        "b": jnp.array([True, False, True]),
        "u8": jnp.array([[0, 255, 17]], jnp.uint8),
        "i8": jnp.array([-128, 5], jnp.int8),
        "key": jax.random.split(jax.random.key(4), 3),
    }
    packing = Packing.of(jax.eval_shape(lambda: tree))
    assert packing.size == 4 + 2 + 3 + 3 + 2 + 3 * 2
    buf = jax.jit(packing.pack)(tree)
    back = jax.jit(packing.unpack)(buf)
    for name in ("f", "i", "b", "u8", "i8"):
        assert back[name].dtype == tree[name].dtype
        np.testing.assert_array_equal(
            np.asarray(back[name]).view(np.uint8), np.asarray(tree[name]).view(np.uint8)
        )
    np.testing.assert_array_equal(
        jax.random.key_data(back["key"]), jax.random.key_data(tree["key"])
    )
    host = Packing.of({k: v for k, v in tree.items() if k != "key"})
    on_host = host.unpack_numpy(
        np.asarray(host.pack({k: v for k, v in tree.items() if k != "key"}))
    )
    for name in ("f", "i", "b", "u8", "i8"):
        assert on_host[name].dtype == tree[name].dtype
        np.testing.assert_array_equal(
            on_host[name].view(np.uint8), np.asarray(tree[name]).view(np.uint8)
        )
    # a strided or wider-typed copy of the buffer unpacks the same; a wrong size is refused
    words = np.asarray(host.pack({k: v for k, v in tree.items() if k != "key"}))
    strided = np.zeros((words.size, 2), np.uint32)
    strided[:, 0] = words
    again = host.unpack_numpy(strided[:, 0])
    wide = host.unpack_numpy(words.astype(np.uint64))
    for name in ("f", "i", "b", "u8", "i8"):
        np.testing.assert_array_equal(again[name].view(np.uint8), on_host[name].view(np.uint8))
        np.testing.assert_array_equal(wide[name].view(np.uint8), on_host[name].view(np.uint8))
    with pytest.raises(ValueError, match=r"expected \(14,\) words, got \(13,\)"):
        host.unpack_numpy(words[:-1])


def test_vector_export_resets_dear_episodes_in_small_passes() -> None:
    """The default `reset_chunk` follows XLA's estimate of one new episode's cost: the
    maze's generator is dear (passes of 8), a classic-control env's draw and a maze on
    fixed levels are cheap (passes of 64); a given value is kept."""
    from arenax.interop.gym import DEAR_RESET_BYTES, _single, reset_bytes
    from arenax.interop.levels import level_sampler

    maze = arenax.make("maze", height=13, width=13, n_walls=60)
    pole = arenax.make("cartpole")
    fixed = [maze.generate(jax.random.key(i)) for i in range(3)]
    for env, levels, chunk in ((maze, maze.generate, 8), (pole, pole.generate, 64),
                               (maze, fixed, 64)):  # fmt: skip
        cost = reset_bytes(_single(env), level_sampler(levels, _single(env)))
        assert (cost > DEAR_RESET_BYTES) == (chunk == 8), cost
        assert to_gymnasium(env, levels, 4).reset_chunk == chunk
    assert to_gymnasium(maze, fixed, 4, reset_chunk=3).reset_chunk == 3


def test_the_reset_chunk_the_docs_show_is_accepted() -> None:
    """Every `reset_chunk=` value docs/interop.md shows is one `to_gymnasium` takes (the
    docs once showed a pair, `(64, 8)`, that it refuses)."""
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "interop.md").read_text()
    shown = re.findall(r"to_gymnasium\([^)]*reset_chunk=([^)`]+)\)", doc)
    assert shown, "docs/interop.md no longer shows reset_chunk"
    maze = arenax.make("maze", height=5, width=5, n_walls=2)
    for value in shown:
        chunk = eval(value, {})  # a literal written in the docs
        assert to_gymnasium(maze, maze.generate, 4, reset_chunk=chunk).reset_chunk == chunk


@pytest.mark.parametrize("mode", ["next_step", "same_step"])
def test_vector_resets_drawn_in_passes_equal_drawing_for_every_env(monkeypatch, mode) -> None:
    """The vector export draws new episodes only for the envs that need one, in passes of
    `reset_chunk` envs (`wrappers.replace_where`): bit for bit what drawing for every env
    and selecting gives (the export's `replace_where` replaced by exactly that), here with
    passes of 4, of all 70 CartPoles and of the default (64), whose episodes end in
    bursts."""
    from arenax.envs import wrappers
    from arenax.interop import gym as gym_export

    env = arenax.make("cartpole")

    def rollout(**kwargs) -> list:
        vec = to_gymnasium(env, env.generate, 70, autoreset_mode=mode, **kwargs)
        rng = np.random.default_rng(1)
        steps = [vec.reset(seed=2)[0]]
        for _ in range(120):
            steps.append(vec.step(rng.integers(0, 2, 70))[:4])
        return steps

    runs = [rollout(reset_chunk=4), rollout(), rollout(reset_chunk=70)]
    with monkeypatch.context() as m:
        m.setattr(gym_export, "replace_where", lambda need, fresh, current, *_, **__: (
            wrappers._select_rows(need, fresh(None), current)))  # fmt: skip
        reference = rollout()
    ends = sum(int(np.sum(s[2] | s[3])) for s in reference[1:])
    assert ends > 70  # many passes of 4 happened
    for run in runs:
        for a, b in zip(jax.tree.leaves(run), jax.tree.leaves(reference), strict=True):
            np.testing.assert_array_equal(a, b)
