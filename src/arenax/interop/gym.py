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

from arenax.envs import wrappers
from arenax.envs.core import Environment
from arenax.envs.wrappers import SingleAgent, replace_where
from arenax.interop.levels import (
    LevelSource,
    action_dtype,
    checked_actions,
    level_sampler,
    require_environment,
    reset_on_sampled_level,
    seed_key,
    to_gym_space,
    to_numpy_obs,
)
from arenax.interop.packing import Packing

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


#: XLA's estimate of the bytes one new episode touches (a level drawn, the env reset on
#: it) above which the export's default starts new episodes in passes of
#: `DEAR_RESET_CHUNK` envs, drawing none on a step where no episode ended (the maze's
#: generator: about 340 KB at 13 x 13); below it (classic control: about 10 KB; a maze on
#: fixed levels: about 60 KB, its walls packed into bits and its first view read), in passes
#: of `wrappers.RESET_CHUNK`, for every env at once in a batch no larger
DEAR_RESET_BYTES = 150_000
DEAR_RESET_CHUNK = 8


def reset_bytes(env: SingleAgent, sample_level: Any) -> float | None:
    """XLA's estimate (its cost analysis of the lowered program, no compile) of the bytes
    one new episode touches: a level from `sample_level` and the env's reset on it; None
    where the backend gives none."""
    lowered = jax.jit(lambda k: reset_on_sampled_level(env, sample_level, k)).lower(
        jax.random.key(0)
    )
    cost = lowered.cost_analysis()
    cost = cost[0] if isinstance(cost, list | tuple) and cost else cost
    value = cost.get("bytes accessed") if isinstance(cost, dict) else None
    return None if value is None else float(value)


def _compiled(
    env: SingleAgent,
    sample_level: Any,
    n: int,
    next_step: bool,
    reset_chunk: int,
    draw_all_when_small: bool,
) -> tuple:
    """`(reset, reset_each, step, carry, out)` over `n` envs, each function compiled once.

    What stays on the device between calls, the *carry* `(key, state, ret, length,
    pending)`, and what a step hands to the host, *out* `(obs, reward, terminated,
    truncated)` (under `SAME_STEP` also `final_obs, episode_return, episode_length` for
    its infos), each travel as one flat buffer (:class:`~arenax.interop.packing.Packing`
    s `carry` and `out`): a compiled call on a CPU costs about as much per returned array
    as a small batch's step.

    * `reset(key) -> (carry, obs)`; `reset_each(keys (n,)) -> (carry, obs)` (one key per
      env: per-env seeds; the batch's key stream then continues from `keys[0]`);
    * `step(carry, action) -> (carry, out)`. `ret` and `length` are the running episode
      totals, `pending (n,)` marks envs whose episode ended on the previous step.
      `SAME_STEP` (`next_step` false): an ended episode's env is reset in the same step
      (its observation is the new episode's first; `final_obs` the last one).
      `NEXT_STEP`: the step that ends an episode returns its last observation; the next
      step resets that env (its action is ignored; reward 0, no termination or
      truncation).
    """

    def reset_one(key: jax.Array) -> tuple[Any, Any]:
        return reset_on_sampled_level(env, sample_level, key)

    def resets(need: jax.Array, k_reset: jax.Array, obs: Any, state: Any) -> tuple[Any, Any]:
        """`(obs, state)` with a new episode (on a newly drawn level) for every env where
        `need (n,)`; env `i`'s key is `fold_in(k_reset, i)`, so it does not depend on which
        other envs reset. Only the envs that need one pay for it (`replace_where`):
        drawing a level, its start and their keys is most of a step's work, and few
        episodes end on any one step."""

        def fresh(ids: jax.Array | None) -> tuple[Any, Any]:
            ids = jnp.arange(n) if ids is None else ids
            return jax.vmap(lambda i: reset_one(jax.random.fold_in(k_reset, i)))(ids)

        return replace_where(
            need, fresh, (obs, state), reset_chunk, draw_all_when_small=draw_all_when_small
        )

    def zeros() -> tuple[jax.Array, jax.Array, jax.Array]:
        return jnp.zeros((n,), jnp.float32), jnp.zeros((n,), jnp.int32), jnp.zeros((n,), bool)

    def batch_step(key, state, action, ret, length, pending):
        # keys are drawn only where they are used: the step's per env (none are computed
        # for an env whose step ignores its key), new episodes' per env that starts one
        key, k_step, k_reset = jax.random.split(key, 3)
        stepped, reward, terminated, truncated, _ = jax.vmap(env.step_state)(
            jax.random.split(k_step, n), state, action
        )
        last_obs = jax.vmap(env.observe)(stepped)
        if next_step:  # envs that ended last step start their next episode now
            obs, state = resets(pending, k_reset, last_obs, stepped)
            reward = jnp.where(pending, 0.0, reward)
            terminated, truncated = terminated & ~pending, truncated & ~pending
            ret = jnp.where(pending, 0.0, ret + reward)
            length = jnp.where(pending, 0, length + 1)
            out = (obs, reward, terminated, truncated)  # no infos in this mode
            return (key, state, ret, length, terminated | truncated), out
        done = terminated | truncated
        obs, state = resets(done, k_reset, last_obs, stepped)
        ret, length = ret + reward, length + 1
        out = (obs, reward, terminated, truncated, last_obs, ret, length)
        return (key, state, jnp.where(done, 0.0, ret), jnp.where(done, 0, length), pending), out

    def batch_reset(key):
        key, k = jax.random.split(key)
        obs, state = jax.vmap(reset_one)(jax.random.split(k, n))
        return (key, state, *zeros()), obs

    def batch_reset_each(keys):
        obs, state = jax.vmap(reset_one)(keys)
        return (jax.random.fold_in(keys[0], n), state, *zeros()), obs

    carry_shape, _ = jax.eval_shape(batch_reset, jax.random.key(0))
    carry = Packing.of(carry_shape)
    action = jax.ShapeDtypeStruct((n, *env.action_space().shape), action_dtype(env.action_space()))
    out = Packing.of(jax.eval_shape(batch_step, *carry_shape[:2], action, *carry_shape[2:])[1])

    @jax.jit
    def reset(key):
        c, obs = batch_reset(key)
        return carry.pack(c), obs

    @jax.jit
    def reset_each(keys):
        c, obs = batch_reset_each(keys)
        return carry.pack(c), obs

    @jax.jit
    def step(buf, action):
        key, state, ret, length, pending = carry.unpack(buf)
        c, o = batch_step(key, state, action, ret, length, pending)
        return carry.pack(c), out.pack(o)

    return reset, reset_each, step, carry, out


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

    `reset_chunk`: envs started per pass of a step's resets (no pass on a step where no
    episode ended). By default it follows XLA's estimate of what one new episode costs
    (`reset_bytes`): above `DEAR_RESET_BYTES` (the maze's generator), passes of
    `DEAR_RESET_CHUNK` (8); below it (classic control, fixed levels), passes of
    `wrappers.RESET_CHUNK` (64), and a batch of at most 64 envs draws for every env and
    keeps what it needs. The numbers are the same for any value; only the speed differs.
    `self.reset_chunk` is the value used.

    Stepped from Python on a CPU, a `step()` costs about half as much with JAX's
    asynchronous CPU dispatch off: `jax.config.update("jax_cpu_enable_async_dispatch",
    False)` before the first JAX array (docs/interop.md).
    """

    def __init__(
        self,
        env: Environment,
        levels: LevelSource,
        n_envs: int,
        seed: int = 0,
        autoreset_mode: Any = "next_step",
        reset_chunk: int | None = None,
    ) -> None:
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
        if reset_chunk is None:
            dear = (reset_bytes(self.env, sample) or 0.0) > DEAR_RESET_BYTES
            chunk = DEAR_RESET_CHUNK if dear else wrappers.RESET_CHUNK
        elif isinstance(reset_chunk, int | np.integer) and reset_chunk >= 1:
            chunk, dear = int(reset_chunk), True
        else:
            raise ValueError(f"reset_chunk={reset_chunk!r}: envs per pass, an int >= 1")
        self.reset_chunk = chunk
        self._reset_fn, self._reset_each_fn, self._step_fn, _, self._out = _compiled(
            self.env, sample, n_envs, self._next_step, chunk, draw_all_when_small=not dear
        )
        self._key = seed_key(seed)
        self._carry = None  # key, states, episode totals: one buffer on the device

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
            self._carry, obs = self._reset_each_fn(keys)
        else:
            if seed is not None:
                self._key = seed_key(seed)
            self._carry, obs = self._reset_fn(self._key)
        return to_numpy_obs(jax.device_get(obs), self._obs_space), {}

    def step(self, actions: Any):
        """One step of every env: `(obs, rewards (n,), terminations (n,), truncations (n,),
        infos)`."""
        if self._carry is None:
            raise RuntimeError("call reset() before step()")
        a = checked_actions(actions, self._act_space, (self.num_envs,), "env")
        self._carry, out = self._step_fn(self._carry, a)
        infos: dict[str, Any] = {}
        if self._next_step:
            obs, r, te, tr = self._out.unpack_numpy(np.asarray(out))
            return to_numpy_obs(obs, self._obs_space), r, te, tr, infos
        obs, r, te, tr, final, ret, length = self._out.unpack_numpy(np.asarray(out))
        done = te | tr
        if done.any():
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
    env: Environment,
    levels: LevelSource,
    n_envs: int,
    seed: int = 0,
    autoreset_mode: Any = "next_step",
    reset_chunk: int | None = None,
) -> ArenaxVectorEnv:
    """`n_envs` copies of `env` (one team of one agent) as a Gymnasium `VectorEnv`;
    every episode starts on a level from `levels` (a generator `key -> level` or a
    list / dict of levels); `autoreset_mode`: `"next_step"` (Gymnasium's default) or
    `"same_step"`; `reset_chunk`: envs started per pass of a step's resets (by default
    from what a new episode costs). See `ArenaxVectorEnv`."""
    return ArenaxVectorEnv(env, levels, n_envs, seed, autoreset_mode, reset_chunk)


def to_gymnasium_env(env: Environment, levels: LevelSource, seed: int = 0) -> ArenaxGymEnv:
    """One copy of `env` as a `gymnasium.Env` (for `gymnasium.utils.env_checker`
    and single-env code). See `ArenaxGymEnv`."""
    return ArenaxGymEnv(env, levels, seed)
