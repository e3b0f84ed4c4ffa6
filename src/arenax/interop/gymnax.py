"""Any gymnax environment as an arenax level family whose **level is its env params**.

`GymnaxFamily("CartPole-v1", ranges=(("length", 0.25, 1.0),))` is an arenax environment
(one team `"agent"` of one agent) over gymnax's own dynamics (`reset_env` /
`step_env`, `is_truncated`), where a level is a gymnax `EnvParams`:

* `generate(key)`: gymnax's default params with every field named in `ranges` drawn
  uniformly from its range (DR over params); `derive` (optional) then recomputes derived
  fields (CartPole's `total_mass` and `polemass_length` from the masses and length);
* `mutate(key, level, n_edits)`: `n_edits` times, one ranged field moved by up to
  `±mutation_scale` of its range, clipped to it (ACCEL's edits);
* `default_level()` is gymnax's default params, `heldout_levels()` the named changes in
  `heldout` plus `"default"`, and `in_range(level)` says whether DR could draw it.

Register it to train it with arenax's curricula:

    arenax.register("gx-cartpole", lambda: GymnaxFamily("CartPole-v1", ranges=...))
    train(dataclasses.replace(all_presets()["gx-cartpole-plr"], total_steps=...))

Observations are gymnax's, flattened to `(D,) float32`; Box bounds become the scalar
extremes of gymnax's bounds. gymnax is optional (`pip install gymnax`; it pins an older
Gymnasium — the Makefile installs it without its dependencies).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from arenax.envs import spaces
from arenax.envs.core import Environment
from arenax.struct import pytree_dataclass

Ranges = tuple[tuple[str, float, float], ...]


@pytree_dataclass
class GymnaxState:
    """The gymnax state, its last observation `(D,)` and the level (env params)."""

    inner: Any
    obs: jax.Array
    level: Any


@functools.cache
def _gymnax(env_id: str) -> tuple[Any, Any]:
    try:
        import gymnax
    except ImportError as e:
        raise ImportError(f"GymnaxFamily needs gymnax (pip install gymnax): {e}") from None
    return gymnax.make(env_id)


def _space(space: Any) -> Any:
    name = type(space).__name__
    if name == "Discrete":
        return spaces.Discrete(int(space.n))
    if name == "Box":
        low, high = float(np.min(space.low)), float(np.max(space.high))
        return spaces.Box(low, high, tuple(space.shape) or (1,), jnp.float32)
    raise TypeError(f"gymnax space {name}: only Discrete and Box are supported")


@dataclasses.dataclass(frozen=True)
class GymnaxFamily(Environment):
    """A gymnax environment whose env params are the level (see the module docstring)."""

    env_id: str = "CartPole-v1"
    """The gymnax id (`gymnax.make(env_id)`)."""
    ranges: Ranges = ()
    """`(field, low, high)` of the params DR draws (uniformly) and mutation edits."""
    heldout: tuple[tuple[str, tuple[tuple[str, float], ...]], ...] = ()
    """Named held-out levels: `(name, ((field, value), ...))` changes to the defaults."""
    derive: Callable[[Any], Any] | None = None
    """Recomputes derived fields after fields were set (`params -> params`)."""
    mutation_scale: float = 0.1
    """An edit moves one ranged field by up to this fraction of its range."""

    def __post_init__(self) -> None:
        params = _gymnax(self.env_id)[1]
        fields = {f.name for f in dataclasses.fields(params)}
        for name, low, high in self.ranges:
            if name not in fields:
                raise ValueError(
                    f"{self.env_id}: no env param {name!r}; params: {', '.join(sorted(fields))}"
                )
            if not low <= high:
                raise ValueError(f"range of {name!r}: low={low} > high={high}")
        if not self.ranges:
            raise ValueError("ranges: name at least one env param to draw")

    # --- the wrapped environment ------------------------------------------------------
    @property
    def gymnax_env(self) -> Any:
        return _gymnax(self.env_id)[0]

    @property
    def max_steps(self) -> int:
        """The default params' `max_steps_in_episode` (a static bound of evaluation)."""
        return int(_gymnax(self.env_id)[1].max_steps_in_episode)

    def observation_space(self, team: str = "agent") -> spaces.Box:
        env, params = _gymnax(self.env_id)
        space = env.observation_space(params)
        return spaces.Box(
            float(np.min(space.low)),
            float(np.max(space.high)),
            (int(np.prod(space.shape)),),
            jnp.float32,
        )

    def action_space(self, team: str = "agent") -> Any:
        env, params = _gymnax(self.env_id)
        return _space(env.action_space(params))

    # --- levels -------------------------------------------------------------------------
    def _with(self, values: dict[str, Any]) -> Any:
        params = _gymnax(self.env_id)[1]
        fields = {f.name: getattr(params, f.name) for f in dataclasses.fields(params)}
        # every field an array of gymnax's dtype, so that levels stack and vmap
        typed = {k: jnp.asarray(values.get(k, v), jnp.asarray(v).dtype) for k, v in fields.items()}
        level = params.replace(**typed)
        return self.derive(level) if self.derive else level

    def default_level(self) -> Any:
        """gymnax's default params (fields as arrays, so levels stack)."""
        params = _gymnax(self.env_id)[1]
        return self._with({n: getattr(params, n) for n, _, _ in self.ranges})

    def generate(self, key: jax.Array) -> Any:
        keys = jax.random.split(key, len(self.ranges))
        return self._with(
            {
                name: jax.random.uniform(k, (), jnp.float32, low, high)
                for k, (name, low, high) in zip(keys, self.ranges, strict=True)
            }
        )

    def mutate(self, key: jax.Array, level: Any, n_edits: int = 1) -> Any:
        lows = jnp.asarray([lo for _, lo, _ in self.ranges], jnp.float32)
        highs = jnp.asarray([hi for _, _, hi in self.ranges], jnp.float32)

        def edit(values: jax.Array, k: jax.Array) -> tuple[jax.Array, None]:
            k_which, k_by = jax.random.split(k)
            i = jax.random.randint(k_which, (), 0, len(self.ranges))
            step = jax.random.uniform(k_by, (), jnp.float32, -1.0, 1.0)
            moved = values.at[i].add(step * self.mutation_scale * (highs[i] - lows[i]))
            return jnp.clip(moved, lows, highs), None

        start = jnp.stack([jnp.asarray(getattr(level, n), jnp.float32) for n, _, _ in self.ranges])
        values, _ = jax.lax.scan(edit, start, jax.random.split(key, n_edits))
        return self._with({n: values[j] for j, (n, _, _) in enumerate(self.ranges)})

    def heldout_levels(self) -> dict[str, Any]:
        out = {"default": self.default_level()}
        for name, changes in self.heldout:
            base = {n: getattr(self.default_level(), n) for n, _, _ in self.ranges}
            out[name] = self._with({**base, **dict(changes)})
        return out

    def in_range(self, level: Any) -> bool:
        return all(lo - 1e-6 <= float(getattr(level, n)) <= hi + 1e-6 for n, lo, hi in self.ranges)

    # --- dynamics -------------------------------------------------------------------------
    def reset_state(self, key: jax.Array, level: Any) -> GymnaxState:
        obs, inner = self.gymnax_env.reset_env(key, level)
        return GymnaxState(inner=inner, obs=jnp.ravel(obs).astype(jnp.float32), level=level)

    def step_state(self, key: jax.Array, state: GymnaxState, action: dict[str, jax.Array]):
        env = self.gymnax_env
        a = jnp.asarray(action["agent"])[0]
        obs, inner, reward, terminated, _ = env.step_env(key, state.inner, a, state.level)
        truncated = env.is_truncated(inner, state.level) & ~terminated
        new = GymnaxState(inner=inner, obs=jnp.ravel(obs).astype(jnp.float32), level=state.level)
        reward = jnp.asarray(reward, jnp.float32)[None]
        return (
            new,
            {"agent": reward},
            jnp.asarray(terminated, bool),
            jnp.asarray(truncated, bool),
            {},
        )

    def observe(self, state: GymnaxState) -> dict[str, jax.Array]:
        return {"agent": state.obs[None]}


def cartpole_derive(params: Any) -> Any:
    """CartPole's derived params from its masses and pole length."""
    return params.replace(
        total_mass=params.masscart + params.masspole,
        polemass_length=params.masspole * params.length,
    )
