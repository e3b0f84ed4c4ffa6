"""Gymnasium export of single-agent arenax environments (maze, classic control).

Per step the exported environments run one compiled function (the step, then, for episodes
that ended, a new level and its reset, selected per env), then copy observations, rewards
and flags to NumPy: one dispatch plus one device-to-host transfer of the batch.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from arenax.envs.core import Environment
from arenax.envs.wrappers import SingleAgent
from arenax.interop.levels import (
    LevelSource,
    checked_actions,
    level_sampler,
    require_environment,
    reset_on_sampled_level,
    seed_key,
    to_gym_space,
    to_numpy_obs,
)

try:  # optional dependency: pip install -e ".[interop]"
    import gymnasium as gym
    from gymnasium.vector import AutoresetMode, VectorEnv
    from gymnasium.vector.utils import batch_space
except ImportError:  # pragma: no cover - exercised only without gymnasium
    gym = None
    VectorEnv = object


def _require_gymnasium() -> None:
    if gym is None:
        raise ImportError('arenax.interop needs gymnasium: pip install -e ".[interop]"')


def _single(env: Environment) -> SingleAgent:
    require_environment(env, "env")
    if isinstance(env, SingleAgent):
        return env
    if len(env.teams) != 1 or env.num_agents(env.teams[0]) != 1:
        raise ValueError(
            f"{type(env).__name__}: Gymnasium export needs one team of one agent (teams "
            f"{env.teams}); export many-agent environments with to_pettingzoo"
        )
    return SingleAgent(env, env.teams[0])


def _compiled(env: SingleAgent, sample_level: Any, n: int) -> tuple[Any, Any]:
    """Two functions over ``n`` envs, each compiled once:

    * ``reset(key) -> (key, obs, state)``;
    * ``step(key, state, action, ret, length) -> (key, (obs, reward, terminated, truncated,
      final_obs, episode_return, episode_length), state, ret, length)`` where ``ret`` and
      ``length`` are the running episode totals (zeroed where an episode ended).
    """

    def reset_one(key: jax.Array) -> tuple[Any, Any]:
        return reset_on_sampled_level(env, sample_level, key)

    def step_one(key, state, action, ret, length):
        k_step, k_new = jax.random.split(key)
        state, reward, terminated, truncated, _ = env.step_state(k_step, state, action)
        done = terminated | truncated
        final_obs = env.observe(state)
        new_obs, new_state = reset_one(k_new)
        state = jax.tree.map(lambda a, b: jnp.where(done, a, b), new_state, state)
        obs = jax.tree.map(lambda a, b: jnp.where(done, a, b), new_obs, final_obs)
        ret, length = ret + reward, length + 1
        out = (obs, reward, terminated, truncated, final_obs, ret, length)
        return out, state, jnp.where(done, 0.0, ret), jnp.where(done, 0, length)

    @jax.jit
    def reset(key):
        key, k = jax.random.split(key)
        return (key, *jax.vmap(reset_one)(jax.random.split(k, n)))

    @jax.jit
    def step(key, state, action, ret, length):
        key, k = jax.random.split(key)
        return (key, *jax.vmap(step_one)(jax.random.split(k, n), state, action, ret, length))

    return reset, step


class ArenaxVectorEnv(VectorEnv):
    """``n_envs`` copies of a single-agent arenax environment as a Gymnasium
    ``VectorEnv`` (auto-reset mode ``SAME_STEP``).

    ``step`` returns, for an env whose episode ended, the first observation of its next
    episode; ``infos["final_obs"]`` holds the batch of observations the episodes ended in
    (valid where ``infos["_final_obs"]``) and ``infos["episode"] = {"r": return, "l":
    length}`` those episodes' totals (valid where ``infos["_episode"]``), as Gymnasium's
    ``RecordEpisodeStatistics`` reports them. Observations: a Box space's arrays
    ``(n_envs, ...)``, or for a Dict space (the maze) a dict of such arrays.
    """

    def __init__(self, env: Environment, levels: LevelSource, n_envs: int, seed: int = 0):
        _require_gymnasium()
        if n_envs < 1:
            raise ValueError(f"n_envs={n_envs}: must be >= 1")
        self.env = _single(env)
        self.num_envs = n_envs
        self._obs_space = self.env.observation_space()
        self._act_space = self.env.action_space()
        self.single_observation_space = to_gym_space(self._obs_space)
        self.single_action_space = to_gym_space(self._act_space)
        self.observation_space = batch_space(self.single_observation_space, n_envs)
        self.action_space = batch_space(self.single_action_space, n_envs)
        self.metadata = {"autoreset_mode": AutoresetMode.SAME_STEP, "render_modes": []}
        self.render_mode = None
        self._reset_fn, self._step_fn = _compiled(self.env, level_sampler(levels, self.env), n_envs)
        self._key = seed_key(seed)
        self._state = None

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """New levels and episodes for every env: ``(obs, {})``."""
        if seed is not None:
            if not isinstance(seed, int | np.integer):
                raise TypeError(f"seed={seed!r}: one int seeds all {self.num_envs} envs")
            self._key = seed_key(seed)
        self._key, obs, self._state = self._reset_fn(self._key)
        self._ret = jnp.zeros((self.num_envs,), jnp.float32)
        self._len = jnp.zeros((self.num_envs,), jnp.int32)
        return to_numpy_obs(jax.device_get(obs), self._obs_space), {}

    def step(self, actions: Any):
        """One step of every env: ``(obs, rewards (n,), terminations (n,), truncations (n,),
        infos)``."""
        if self._state is None:
            raise RuntimeError("call reset() before step()")
        a = checked_actions(actions, self._act_space, (self.num_envs,), "env")
        self._key, out, self._state, self._ret, self._len = self._step_fn(
            self._key, self._state, a, self._ret, self._len
        )
        obs, r, te, tr, final, ret, length = jax.device_get(out)  # one transfer
        done = te | tr
        infos: dict[str, Any] = {}
        if done.any():
            infos["final_obs"] = to_numpy_obs(final, self._obs_space)
            infos["_final_obs"] = done
            infos["episode"] = {"r": ret, "l": length}
            infos["_episode"] = done
        return to_numpy_obs(obs, self._obs_space), r, te, tr, infos


class ArenaxGymEnv(gym.Env if gym is not None else object):
    """One copy of a single-agent arenax environment as a ``gymnasium.Env``: ``reset`` draws
    a level from ``levels``; no auto-reset (Gymnasium's single-env contract)."""

    metadata = {"render_modes": []}  # noqa: RUF012 - Gymnasium's class attribute

    def __init__(self, env: Environment, levels: LevelSource, seed: int = 0):
        _require_gymnasium()
        self.env = _single(env)
        self._obs_space = self.env.observation_space()
        self._act_space = self.env.action_space()
        self.observation_space = to_gym_space(self._obs_space)
        self.action_space = to_gym_space(self._act_space)
        self.render_mode = None
        sample = level_sampler(levels, self.env)
        e = self.env

        def reset(key):
            key, k_level, k_reset = jax.random.split(key, 3)
            state = e.reset_state(k_reset, sample(k_level))
            return key, e.observe(state), state

        def step(key, state, action):
            key, k = jax.random.split(key)
            state, reward, terminated, truncated, _ = e.step_state(k, state, action)
            return key, (e.observe(state), reward, terminated, truncated), state

        self._reset_fn, self._step_fn = jax.jit(reset), jax.jit(step)
        self._key = seed_key(seed)
        self._state = None

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        if seed is not None:
            self._key = seed_key(seed)
        self._key, obs, self._state = self._reset_fn(self._key)
        return to_numpy_obs(jax.device_get(obs), self._obs_space), {}

    def step(self, action: Any):
        if self._state is None:
            raise RuntimeError("call reset() before step()")
        a = checked_actions(action, self._act_space, (), "the action")
        self._key, out, self._state = self._step_fn(self._key, self._state, a)
        obs, r, te, tr = jax.device_get(out)
        return to_numpy_obs(obs, self._obs_space), float(r), bool(te), bool(tr), {}


def to_gymnasium(
    env: Environment, levels: LevelSource, n_envs: int, seed: int = 0
) -> ArenaxVectorEnv:
    """``n_envs`` copies of ``env`` (one team of one agent) as a Gymnasium ``VectorEnv``;
    every episode starts on a level from ``levels`` (a generator ``key -> level`` or a
    list / dict of levels). See :class:`ArenaxVectorEnv`."""
    return ArenaxVectorEnv(env, levels, n_envs, seed)


def to_gymnasium_env(env: Environment, levels: LevelSource, seed: int = 0) -> ArenaxGymEnv:
    """One copy of ``env`` as a ``gymnasium.Env`` (for ``gymnasium.utils.env_checker``
    and single-env code). See :class:`ArenaxGymEnv`."""
    return ArenaxGymEnv(env, levels, seed)
