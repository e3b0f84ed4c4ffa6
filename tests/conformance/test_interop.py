"""Export to Gymnasium and PettingZoo: their own API checkers, and step-for-step agreement
with arenax's own environments under random actions."""

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
    vec = to_gymnasium(env, [level], n)
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


def test_vector_draws_levels_from_the_suite() -> None:
    env = arenax.make("maze", height=6, width=6, n_walls=6, max_steps=5)
    levels = [env.generate(jax.random.key(k)) for k in range(3)]
    starts = [np.asarray(env.reset(jax.random.key(0), lv)[0]["agent"].image[0]) for lv in levels]
    vec = to_gymnasium(env, levels, 8)
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
