"""Where exported environments take their levels from, and space conversion."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from arenax.envs import spaces

LevelSource = Callable[[jax.Array], Any] | Sequence[Any] | Mapping[str, Any]
"""A generator `key -> level`, or fixed levels (a list, or a dict name -> level)."""


def seed_key(seed: Any) -> jax.Array:
    """The PRNG key of an export's `seed` (a whole number in `[0, 2**32)`, as a run's),
    or a `ValueError` saying so (JAX would raise `OverflowError` on a huge one)."""
    ok = isinstance(seed, int | np.integer) and not isinstance(seed, bool) and 0 <= seed < 2**32
    if not ok:
        raise ValueError(f"seed={seed!r}: must be an integer in [0, 2**32)")
    return jax.random.key(int(seed))


def require_environment(env: Any, what: str) -> None:
    """A `TypeError` unless `env` is an arenax environment (`arenax.make(name)`)."""
    from arenax.envs.core import Environment

    if not isinstance(env, Environment):
        hint = f" (build it first: arenax.make({env!r}))" if isinstance(env, str) else ""
        raise TypeError(f"{what}: expected an arenax environment, got {type(env).__name__}{hint}")


def level_sampler(source: LevelSource, env: Any = None) -> Callable[[jax.Array], Any]:
    """A `key -> level` function: the generator itself, or a uniform draw from the fixed
    levels (stacked once into arrays with a leading axis). Fixed levels are checked with
    `env.level_problems` first (a `ValueError` names the level and its problems)."""
    if callable(source):
        return source
    names = list(source) if isinstance(source, Mapping) else None
    levels = list(source.values()) if isinstance(source, Mapping) else list(source)
    if not levels:
        raise ValueError("levels: the list of fixed levels is empty")
    if env is not None and hasattr(env, "level_problems"):
        for i, level in enumerate(levels):
            problems = env.level_problems(level)
            if problems:
                which = f"levels[{names[i]!r}]" if names else f"levels[{i}]"
                raise ValueError(f"{which}: {'; '.join(problems)}")
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
    """`(obs, state)` of an episode on a level drawn by `sample` (keys split once)."""
    k_level, k_reset = jax.random.split(key)
    return reset_on_level_keys(env, sample, k_level, k_reset)


def reset_on_level_keys(
    env: Any, sample: Callable[[jax.Array], Any], k_level: jax.Array, k_reset: jax.Array
) -> tuple[Any, Any]:
    """`(obs, state)` of an episode on the level `sample(k_level)`, started with `k_reset`."""
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
        dtype = np.dtype(space.dtype)
        low, high = (
            np.broadcast_to(np.asarray(b, dtype), space.shape) for b in (space.low, space.high)
        )
        return gym.spaces.Box(low, high, space.shape, dtype)
    if isinstance(space, spaces.Dict):
        return gym.spaces.Dict({n: to_gym_space(s) for n, s in space.spaces})
    raise TypeError(f"no Gymnasium space for {type(space).__name__}")


def to_numpy_obs(obs: Any, space: Any) -> Any:
    """An observation as NumPy: a Dict space's fields become a dict of arrays (from a
    dataclass observation such as `MazeObs`); Discrete values `int64` (a scalar for one
    env); arrays as they are."""
    if isinstance(space, spaces.Dict):
        return {n: to_numpy_obs(_field(obs, n), s) for n, s in space.spaces}
    if isinstance(space, spaces.Discrete):
        return np.asarray(obs).astype(np.int64)[()]  # a NumPy int (or int64 array)
    return np.asarray(obs)


def _field(obs: Any, name: str) -> Any:
    return obs[name] if isinstance(obs, Mapping) else getattr(obs, name)


def action_dtype(space: Any) -> Any:
    """The dtype actions of `space` are handed to the environment in."""
    return np.float32 if isinstance(space, spaces.Box) else np.int32


def checked_actions(actions: Any, space: Any, batch: tuple[int, ...], what: str) -> np.ndarray:
    """`actions` as the array the environment takes, or a `ValueError` that says which
    one is wrong: the shape must be `batch + space.shape`; discrete actions whole numbers
    in `[0, n)` (per head); continuous ones finite (the environments clip them to their
    bounds, as Gymnasium's do). `what`: how to name entry `i` (`"env"`, `"agent
    'runner_3'"`). A few vectorised NumPy checks: cheap beside the step."""
    a = np.asarray(actions)
    want = (*batch, *space.shape)
    if (  # the common case in two reductions; a bad action falls through to the checks below
        a.dtype.kind in "iu"
        and a.shape == want
        and isinstance(space, spaces.Discrete)
        and (a.size == 0 or (int(a.max()) < space.n and int(a.min()) >= 0))
    ):
        return a.astype(np.int32, copy=False)
    if a.shape != want:
        one = " (one per env)" if batch else ""
        raise ValueError(f"actions: expected shape {want}{one}, got {a.shape}")
    if isinstance(space, spaces.Box):
        if not np.issubdtype(a.dtype, np.number) or not np.all(np.isfinite(a)):
            bad = _first_bad(~np.isfinite(a.astype(np.float64, copy=False)), batch)
            raise ValueError(f"actions: {_name(what, bad)} has a non-finite action")
        return a.astype(action_dtype(space), copy=False)
    high = np.asarray(space.n if isinstance(space, spaces.Discrete) else space.nvec)
    whole = np.issubdtype(a.dtype, np.integer) or np.issubdtype(a.dtype, np.bool_)
    if not whole and (not np.issubdtype(a.dtype, np.floating) or np.any(a != np.round(a))):
        raise ValueError(
            f"actions: discrete actions must be whole numbers, got {a.dtype} {a.ravel()[:4]}"
        )
    wrong = (a < 0) | (a >= high)
    if np.any(wrong):
        i = _first_bad(wrong, batch)
        value = a[i] if i else a
        kind = (
            f"Discrete({space.n}) (0..{space.n - 1})"
            if isinstance(space, spaces.Discrete)
            else f"MultiDiscrete({list(space.nvec)})"
        )
        raise ValueError(
            f"actions: {_name(what, i)} has action {np.asarray(value).tolist()}, outside {kind}"
        )
    return a.astype(np.int32, copy=False)


def _first_bad(mask: np.ndarray, batch: tuple[int, ...]) -> tuple[int, ...]:
    """The batch index of the first entry where `mask` holds (`()` without a batch)."""
    if not batch:
        return ()
    per = mask.reshape(*batch, -1).any(axis=-1) if mask.ndim > len(batch) else mask
    return tuple(int(x) for x in np.argwhere(per)[0])


def _name(what: str, index: tuple[int, ...]) -> str:
    return f"{what} {index[0]}" if index else what
