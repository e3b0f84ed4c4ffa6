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


def _compiled(env: SingleAgent, sample_level: Any, n: int, next_step: bool) -> tuple:
    """Three functions over `n` envs, each compiled once:

    * `reset(key) -> (key, obs, state)`; `reset_each(keys (n,)) -> (obs, state)` (one
      key per env: per-env seeds);
    * `step(key, state, action, ret, length, pending) -> (key, (obs, reward, terminated,
      truncated, final_obs, episode_return, episode_length), state, ret, length, pending)`
      where `ret` and `length` are the running episode totals and `pending (n,)`
      marks envs whose episode ended on the previous step. `SAME_STEP` (`next_step`
      false): an ended episode's env is reset in the same step (its observation is the new
      episode's first; `final_obs` the last one). `NEXT_STEP`: the step that ends an
      episode returns its last observation; the next step resets that env (its action is
      ignored; reward 0, no termination or truncation).
    """

    def reset_one(key: jax.Array) -> tuple[Any, Any]:
        return reset_on_sampled_level(env, sample_level, key)

    def where(c: jax.Array, a: Any, b: Any) -> Any:
        return jax.tree.map(lambda x, y: jnp.where(c, x, y), a, b)

    def step_one(key, state, action, ret, length, pending):
        k_step, k_new = jax.random.split(key)
        stepped, reward, terminated, truncated, _ = env.step_state(k_step, state, action)
        last_obs = env.observe(stepped)
        new_obs, new_state = reset_one(k_new)
        if next_step:  # envs that ended last step start their next episode now
            reward = jnp.where(pending, 0.0, reward)
            terminated, truncated = terminated & ~pending, truncated & ~pending
            done = terminated | truncated
            state, obs = where(pending, new_state, stepped), where(pending, new_obs, last_obs)
            ret = jnp.where(pending, 0.0, ret + reward)
            length = jnp.where(pending, 0, length + 1)
            out = (obs, reward, terminated, truncated, last_obs, ret, length)
            return out, state, ret, length, done
        done = terminated | truncated
        state, obs = where(done, new_state, stepped), where(done, new_obs, last_obs)
        ret, length = ret + reward, length + 1
        out = (obs, reward, terminated, truncated, last_obs, ret, length)
        return out, state, jnp.where(done, 0.0, ret), jnp.where(done, 0, length), pending

    @jax.jit
    def reset(key):
        key, k = jax.random.split(key)
        return (key, *jax.vmap(reset_one)(jax.random.split(k, n)))

    @jax.jit
    def reset_each(keys):
        return jax.vmap(reset_one)(keys)

    @jax.jit
    def step(key, state, action, ret, length, pending):
        key, k = jax.random.split(key)
        keys = jax.random.split(k, n)
        return (key, *jax.vmap(step_one)(keys, state, action, ret, length, pending))

    return reset, reset_each, step


class ArenaxVectorEnv(VectorEnv):
    """`n_envs` copies of a single-agent arenax environment as a Gymnasium
    `VectorEnv`, with Gymnasium's auto-reset modes.

    `NEXT_STEP` (the default, as Gymnasium 1.x's own vector envs): the step that ends an
    episode returns its last observation with `terminated` / `truncated`; the next
    `step` resets that env (its action is ignored) and returns the new episode's first
    observation with reward 0. Gymnasium's wrappers (`NormalizeObservation`,
    `RecordEpisodeStatistics`…) work with it. `SAME_STEP`: an env whose episode ended
    returns the first observation of its next episode in the same step;
    `infos["final_obs"]` holds the observations the episodes ended in (valid where
    `infos["_final_obs"]`) and `infos["episode"] = {"r": return, "l": length}` those
    episodes' totals (valid where `infos["_episode"]`). Observations: a Box space's
    arrays `(n_envs, ...)`, or for a Dict space (the maze) a dict of such arrays.
    `reset(seed=...)` takes one int for the batch or one per env.
    """

    def __init__(
        self, env: Environment, levels: LevelSource, n_envs: int, seed: int = 0,
        autoreset_mode: Any = "next_step",
    ) -> None:  # fmt: skip
        _require_gymnasium()
        if n_envs < 1:
            raise ValueError(f"n_envs={n_envs}: must be >= 1")
        self.env = _single(env)
        modes = {"nextstep": AutoresetMode.NEXT_STEP, "samestep": AutoresetMode.SAME_STEP}
        name = getattr(autoreset_mode, "value", autoreset_mode)
        mode = modes.get(str(name).replace("_", "").lower())
        if mode is None:
            raise ValueError(f"autoreset_mode={autoreset_mode!r}: allowed next_step, same_step")
        self.num_envs = n_envs
        self._obs_space = self.env.observation_space()
        self._act_space = self.env.action_space()
        self.single_observation_space = to_gym_space(self._obs_space)
        self.single_action_space = to_gym_space(self._act_space)
        self.observation_space = batch_space(self.single_observation_space, n_envs)
        self.action_space = batch_space(self.single_action_space, n_envs)
        self.metadata = {"autoreset_mode": mode, "render_modes": []}
        self.render_mode = None
        self._next_step = mode == AutoresetMode.NEXT_STEP
        sample = level_sampler(levels, self.env)
        self._reset_fn, self._reset_each_fn, self._step_fn = _compiled(
            self.env, sample, n_envs, self._next_step
        )
        self._key = seed_key(seed)
        self._state = None

    def reset(self, *, seed: Any = None, options: dict | None = None):
        """New levels and episodes for every env: `(obs, {})`. `seed`: one int for the
        batch, or a sequence of one int per env (env `i`'s first episode then depends on
        `seed[i]` alone)."""
        if seed is not None and not isinstance(seed, int | np.integer):
            seeds = list(seed) if isinstance(seed, list | tuple | np.ndarray) else None
            if seeds is None or len(seeds) != self.num_envs:
                raise TypeError(
                    f"seed={seed!r}: one int for all {self.num_envs} envs, or a list of "
                    f"{self.num_envs} ints (one per env)"
                )
            keys = jnp.stack([seed_key(s) for s in seeds])
            obs, self._state = self._reset_each_fn(keys)
            self._key = jax.random.fold_in(keys[0], self.num_envs)  # the batch's stream
        else:
            if seed is not None:
                self._key = seed_key(seed)
            self._key, obs, self._state = self._reset_fn(self._key)
        self._ret = jnp.zeros((self.num_envs,), jnp.float32)
        self._len = jnp.zeros((self.num_envs,), jnp.int32)
        self._pending = jnp.zeros((self.num_envs,), bool)
        return to_numpy_obs(jax.device_get(obs), self._obs_space), {}

    def step(self, actions: Any):
        """One step of every env: `(obs, rewards (n,), terminations (n,), truncations (n,),
        infos)`."""
        if self._state is None:
            raise RuntimeError("call reset() before step()")
        a = checked_actions(actions, self._act_space, (self.num_envs,), "env")
        self._key, out, self._state, self._ret, self._len, self._pending = self._step_fn(
            self._key, self._state, a, self._ret, self._len, self._pending
        )
        obs, r, te, tr, final, ret, length = jax.device_get(out)  # one transfer
        done = te | tr
        infos: dict[str, Any] = {}
        if done.any() and not self._next_step:
            infos["final_obs"] = to_numpy_obs(final, self._obs_space)
            infos["_final_obs"] = done
            infos["episode"] = {"r": ret, "l": length}
            infos["_episode"] = done
        return to_numpy_obs(obs, self._obs_space), r, te, tr, infos


class ArenaxGymEnv(gym.Env if gym is not None else object):
    """One copy of a single-agent arenax environment as a `gymnasium.Env`: `reset` draws
    a level from `levels`; no auto-reset (Gymnasium's single-env contract)."""

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
    env: Environment, levels: LevelSource, n_envs: int, seed: int = 0,
    autoreset_mode: Any = "next_step",
) -> ArenaxVectorEnv:  # fmt: skip
    """`n_envs` copies of `env` (one team of one agent) as a Gymnasium `VectorEnv`;
    every episode starts on a level from `levels` (a generator `key -> level` or a
    list / dict of levels); `autoreset_mode`: `"next_step"` (Gymnasium's default) or
    `"same_step"`. See `ArenaxVectorEnv`."""
    return ArenaxVectorEnv(env, levels, n_envs, seed, autoreset_mode)


def to_gymnasium_env(env: Environment, levels: LevelSource, seed: int = 0) -> ArenaxGymEnv:
    """One copy of `env` as a `gymnasium.Env` (for `gymnasium.utils.env_checker`
    and single-env code). See `ArenaxGymEnv`."""
    return ArenaxGymEnv(env, levels, seed)
