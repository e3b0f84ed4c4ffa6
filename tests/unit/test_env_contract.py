"""The environment contract, for every registered family (``arenax.list_envs()``).

For each environment: ``reset`` and ``step`` trace once under ``jit`` (a second call with
the returned state does not recompile: no weak types), every observation of a random-action
episode lies in its team's space with the space's dtype, rewards are finite with one value
per agent, ``terminated``/``truncated`` are boolean scalars, and the auto-reset wrappers keep
every shape and dtype of the state and the observation from step to step.
"""

from __future__ import annotations

import dataclasses

import examples.corridor  # noqa: F401 — the example user family is held to the contract too
import jax
import numpy as np
import pytest

import arenax
from arenax.envs import AutoReplay, AutoResetFromBatch, EpisodeStats, spaces

# small static parameters of the built-in families (odd shapes on purpose: a maze wider
# than high, 5 runners in a small arena…; the contract holds for any valid ones); every
# other registered family is checked at its tests' sizes (`Family.tiny`) or its defaults
ODD = {
    "maze": dict(height=5, width=6, max_steps=12),
    "maze-editor": dict(height=4, width=5, n_walls=6, noise_dim=3),
    "tag": dict(n_taggers=2, n_runners=5, episode_length=12, arena=3.0, tag_distance=0.2),
    "grid-tag": dict(n_taggers=3, size=4, episode_length=12, partial=True),
    "cartpole": dict(max_steps=12),
    "acrobot": dict(max_steps=12),
    "mountain-car": dict(max_steps=12),
    "mountain-car-continuous": dict(max_steps=12),
    "pendulum": dict(max_steps=12),
}
STEPS = 30


def _params(name: str) -> dict:
    if name in ODD:
        return ODD[name]
    f = arenax.registry.family(name)
    if f.options is None:
        return {}
    opts = f.options() if f.tiny is None else f.tiny(f.options())
    return {fl.name: getattr(opts, fl.name) for fl in dataclasses.fields(opts) if fl.init}


#: every registered family (the example plugin's among them), with its parameters
PARAMS = {name: _params(name) for name in arenax.list_envs()}


def test_every_family_is_covered() -> None:
    """The families come from the registry: a new one is checked without editing this file
    (the example plugin family proves it)."""
    assert "corridor" in PARAMS and set(ODD) < set(PARAMS)


def _leaves_of(obs: object, space: object) -> list[tuple[np.ndarray, object]]:
    """``(array, space)`` pairs of one team's observation (a ``Dict`` space names fields)."""
    if isinstance(space, spaces.Dict):
        return [(np.asarray(getattr(obs, n)), s) for n, s in space.spaces]
    return [(np.asarray(obs), space)]


def _check_obs(env: arenax.envs.Environment, obs: dict, where: str) -> None:
    assert set(obs) == set(env.teams), where
    for team in env.teams:
        for x, space in _leaves_of(obs[team], env.observation_space(team)):
            n = env.num_agents(team)
            assert x.shape == (n, *space.shape), (where, team, x.shape, space)
            assert x.dtype == np.dtype(space.dtype), (where, team, x.dtype, space)
            assert space.contains(x), (where, team, x.min(), x.max(), space)
            if np.issubdtype(x.dtype, np.floating):
                assert np.all(np.isfinite(x)), (where, team)


def _random_action(env: arenax.envs.Environment, key: jax.Array) -> dict:
    keys = jax.random.split(key, len(env.teams))
    return {
        t: env.action_space(t).sample(k, (env.num_agents(t),))
        for t, k in zip(env.teams, keys, strict=True)
    }


def _structure(tree: object) -> list[tuple[tuple[int, ...], np.dtype]]:
    return [(np.shape(x), np.asarray(x).dtype) for x in jax.tree.leaves(tree)]


@pytest.mark.parametrize("name", sorted(PARAMS))
def test_contract(name: str) -> None:
    env = arenax.make(name, **PARAMS[name])
    key = jax.random.key(0)
    level = env.generate(key) if name != "maze-editor" else None
    reset = jax.jit(env.reset)
    step = jax.jit(env.step)
    obs, state = reset(key, level)
    _check_obs(env, obs, "reset")
    for t in range(STEPS):
        k = jax.random.fold_in(key, t)
        obs, new, reward, term, trunc, _ = step(k, state, _random_action(env, k))
        _check_obs(env, obs, f"step {t}")
        assert _structure(new) == _structure(state), t  # same shapes and dtypes, no weak types
        assert not any(getattr(x, "weak_type", False) for x in jax.tree.leaves(new))
        for team in env.teams:
            r = np.asarray(reward[team])
            assert r.shape == (env.num_agents(team),) and r.dtype == np.float32
            assert np.all(np.isfinite(r))
        assert np.shape(term) == () and np.shape(trunc) == ()
        assert np.asarray(term).dtype == np.bool_ and np.asarray(trunc).dtype == np.bool_
        state = new
        if bool(term | trunc):
            break
    assert step._cache_size() == 1  # traced once: the state's signature never changes


@pytest.mark.parametrize("name", ["maze", "tag", "grid-tag"])
@pytest.mark.parametrize("wrapper", ["replay", "batch"])
def test_auto_reset_wrappers_keep_shapes(name: str, wrapper: str) -> None:
    base = arenax.make(name, **PARAMS[name])
    key = jax.random.key(1)
    # compiled (op by op, each distinct primitive compiles on its own; jit keeps weak types)
    if wrapper == "batch":
        env = EpisodeStats(AutoResetFromBatch(base))
        level = jax.jit(jax.vmap(base.generate))(jax.random.split(key, 3))
    else:
        env = EpisodeStats(AutoReplay(base))
        level = jax.jit(base.generate)(key)
    obs, state = jax.jit(env.reset)(key, level)
    step = jax.jit(env.step)
    first = _structure((obs, state))
    ended = 0
    for t in range(STEPS):  # longer than an episode: auto-resets happen
        k = jax.random.fold_in(key, t)
        obs, state, _, term, trunc, info = step(k, state, _random_action(base, k))
        assert _structure((obs, state)) == first, t
        _check_obs(base, obs, f"{wrapper} step {t}")
        ended += int(np.asarray(term) | np.asarray(trunc))
        assert set(info["episode"]) >= {"done", "returns", "length", "success", "sums"}
    assert ended >= 1
    assert step._cache_size() == 1


def test_options_of_an_env_are_its_fields() -> None:
    """The training config of a family is built from the env's own options (one definition)."""
    from arenax.envs.maze.family import MazeConfig
    from arenax.envs.tag.family import GridTagConfig, TagConfig

    for cfg, cls in ((MazeConfig, arenax.envs.maze.MazeEnv),
                     (TagConfig, arenax.envs.tag.TagEnv),
                     (GridTagConfig, arenax.envs.tag.GridTagEnv)):  # fmt: skip
        assert issubclass(cfg, cls)
        assert [f.name for f in dataclasses.fields(cfg)] == [
            f.name for f in dataclasses.fields(cls)
        ]
