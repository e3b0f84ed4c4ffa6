"""Grid Tag against a NumPy reference of its rules, and hand-checked cases."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from arenax.envs.tag import GridTagEnv, GridTagLevel

MOVES = {0: (0, 0), 1: (1, 0), 2: (-1, 0), 3: (0, 1), 4: (0, -1)}


def ref_step(env: GridTagEnv, pos: np.ndarray, t: int, acts: np.ndarray):
    pos = pos.copy()
    r = np.zeros(len(pos))
    for i, a in enumerate(acts):
        want = pos[i] + MOVES[int(a)]
        got = np.clip(want, 0, env.size)
        if np.any(got != want):
            r[i] += env.wall_reward
        pos[i] = got
    tagged = any((pos[i] == pos[-1]).all() for i in range(len(pos) - 1))
    r[:-1] += env.tag_reward if tagged else env.tagger_step_reward
    r[-1] += -env.tag_penalty if tagged else env.runner_step_reward
    return pos, r, tagged, t + 1 >= env.episode_length


def ref_obs(env: GridTagEnv, pos: np.ndarray, t: int) -> np.ndarray:
    a = len(pos)
    types = np.array([1.0] * (a - 1) + [0.0])
    out = []
    for i in range(a):
        if env.partial:
            if i < a - 1:
                target = pos[-1]
            else:
                d = [abs(pos[k] - pos[-1]).sum() for k in range(a - 1)]
                target = pos[int(np.argmin(d))]
            out.append([*pos[i] / env.size, *target / env.size, types[i], t / env.episode_length])
        else:
            onehot = np.eye(a)[i]
            out.append(
                [
                    *(pos[:, 0] / env.size),
                    *(pos[:, 1] / env.size),
                    *types,
                    *onehot,
                    t / env.episode_length,
                ]
            )
    return np.array(out)


@pytest.mark.parametrize("partial", [False, True])
def test_matches_reference_on_random_actions(partial: bool) -> None:
    env = GridTagEnv(n_taggers=3, size=4, episode_length=40, partial=partial, random_start=True)
    step = jax.jit(env.step_state)
    observe = jax.jit(env.observe)
    tags = walls = 0
    for seed in range(6):
        rng = np.random.default_rng(seed)
        level = env.generate(jax.random.key(seed))
        state = env.reset_state(None, level)
        pos = np.array(level.pos)
        for t in range(40):
            o = observe(state)
            np.testing.assert_allclose(
                np.concatenate([o["tagger"], o["runner"]]), ref_obs(env, pos, t), atol=1e-6
            )
            acts = rng.integers(0, 5, env.n_agents)
            state, rew, term, trunc, _ = step(
                None, state, {"tagger": jnp.asarray(acts[:-1]), "runner": jnp.asarray(acts[-1:])}
            )
            pos, r, rterm, rtrunc = ref_step(env, pos, t, acts)
            np.testing.assert_array_equal(np.asarray(state.pos), pos)
            np.testing.assert_allclose(np.concatenate([rew["tagger"], rew["runner"]]), r, atol=1e-6)
            assert bool(term) == rterm and bool(trunc) == rtrunc
            walls += int(np.any(np.isclose(r, env.wall_reward + env.tagger_step_reward)))
            if rterm or rtrunc:
                tags += int(rterm)
                break
    assert tags > 0 and walls > 0  # both rules were exercised


def test_hand_cases_and_layout() -> None:
    env = GridTagEnv(n_taggers=2, size=10, tag_penalty=5.0)
    level = env.generate(jax.random.key(0))  # default: taggers at the centre, runner at (0, 0)
    np.testing.assert_array_equal(level.pos, [[5, 5], [5, 5], [0, 0]])
    # the runner walks into the wall (-x), a tagger steps next to it: no tag
    s = env.reset_state(None, GridTagLevel(pos=jnp.array([[2, 0], [9, 9], [0, 0]], jnp.int32)))
    s, r, term, _, _ = env.step_state(
        None, s, {"tagger": jnp.array([2, 0]), "runner": jnp.array([2])}
    )
    np.testing.assert_allclose(r["runner"], [0.01 - 0.1])
    np.testing.assert_allclose(r["tagger"], [-0.01, -0.01])
    assert not bool(term)
    # the tagger steps onto the runner: every tagger +10, runner -5, terminated
    s, r, term, _, _ = env.step_state(
        None, s, {"tagger": jnp.array([2, 0]), "runner": jnp.array([0])}
    )
    np.testing.assert_allclose(r["tagger"], [10.0, 10.0])
    np.testing.assert_allclose(r["runner"], [-5.0])
    assert bool(term)
    assert env.obs_size == 13 and GridTagEnv(partial=True).obs_size == 6
    obs = env.observe(s)
    assert obs["tagger"].shape == (2, 13) and obs["runner"].shape == (1, 13)
