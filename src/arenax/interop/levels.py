"""Where exported environments take their levels from, and space conversion."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from arenax.envs import spaces

LevelSource = Callable[[jax.Array], Any] | Sequence[Any] | Mapping[str, Any]
"""A generator ``key -> level``, or fixed levels (a list, or a dict name -> level)."""


def level_sampler(source: LevelSource) -> Callable[[jax.Array], Any]:
    """A ``key -> level`` function: the generator itself, or a uniform draw from the fixed
    levels (stacked once into arrays with a leading axis)."""
    if callable(source):
        return source
    levels = list(source.values()) if isinstance(source, Mapping) else list(source)
    if not levels:
        raise ValueError("levels: the list of fixed levels is empty")
    try:
        stacked = jax.tree.map(lambda *xs: jnp.stack([jnp.asarray(x) for x in xs]), *levels)
    except ValueError as e:
        raise ValueError(f"levels: fixed levels must have equal shapes ({e})") from None
    n = len(levels)

    def sample(key: jax.Array) -> Any:
        i = jax.random.randint(key, (), 0, n)
        return jax.tree.map(lambda x: x[i], stacked)

    return sample


def reset_on_sampled_level(
    env: Any, sample: Callable[[jax.Array], Any], key: jax.Array
) -> tuple[Any, Any]:
    """``(obs, state)`` of an episode on a level drawn by ``sample`` (keys split once)."""
    k_level, k_reset = jax.random.split(key)
    state = env.reset_state(k_reset, sample(k_level))
    return env.observe(state), state


def to_gym_space(space: Any) -> Any:
    """The Gymnasium space of an arenax space (Discrete, MultiDiscrete, Box, Dict)."""
    import gymnasium as gym

    if isinstance(space, spaces.Discrete):
        return gym.spaces.Discrete(space.n)
    if isinstance(space, spaces.MultiDiscrete):
        return gym.spaces.MultiDiscrete(np.asarray(space.nvec, np.int64))
    if isinstance(space, spaces.Box):
        return gym.spaces.Box(space.low, space.high, space.shape, np.dtype(space.dtype))
    if isinstance(space, spaces.Dict):
        return gym.spaces.Dict({n: to_gym_space(s) for n, s in space.spaces})
    raise TypeError(f"no Gymnasium space for {type(space).__name__}")


def to_numpy_obs(obs: Any, space: Any) -> Any:
    """An observation as NumPy: a Dict space's fields become a dict of arrays (from a
    dataclass observation such as ``MazeObs``); Discrete values ``int64`` (a scalar for one
    env); arrays as they are."""
    if isinstance(space, spaces.Dict):
        return {n: to_numpy_obs(_field(obs, n), s) for n, s in space.spaces}
    if isinstance(space, spaces.Discrete):
        return np.asarray(obs).astype(np.int64)[()]  # a NumPy int (or int64 array)
    return np.asarray(obs)


def _field(obs: Any, name: str) -> Any:
    return obs[name] if isinstance(obs, Mapping) else getattr(obs, name)


def action_dtype(space: Any) -> Any:
    """The dtype actions of ``space`` are handed to the environment in."""
    return np.float32 if isinstance(space, spaces.Box) else np.int32
