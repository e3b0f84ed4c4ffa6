"""The environment contract shared by every arenax family.

An environment is a *static* object (its constructor arguments are compile-time constants,
the object is hashable and can be passed to `jax.jit` as a static argument) exposing pure
functions over explicit state:

    obs, state = env.reset(key, level)
    obs, state, reward, terminated, truncated, info = env.step(key, state, action)

and the same over a batch of `N` envs (`env.steps(keys, states, actions)`, leading env
axis). `obs`, `action` and `reward` are dicts keyed by *team name*; every leaf carries a
leading agent axis `(n_agents, ...)` (a single-agent env is one team of one agent).
`terminated`/`truncated` are per-env boolean scalars. Environments never auto-reset
inside `step`; see `arenax.envs.wrappers`.

Each family splits `step`/`reset` into `reset_state`, `step_state` and `observe`
so that wrappers can select the post-reset state first and compute the observation once.
"""

from __future__ import annotations

from typing import Any, Generic, TypeVar

import jax
import jax.numpy as jnp
import numpy as np

Level = TypeVar("Level")
State = TypeVar("State")

Obs = dict[str, Any]
Action = dict[str, jax.Array]
Reward = dict[str, jax.Array]


class Environment(Generic[Level, State]):
    """Base class: subclasses implement `reset_state`, `step_state`, `observe`.

    Subclasses are frozen dataclasses of static parameters.
    """

    #: team names in a fixed order
    teams: tuple[str, ...] = ("agent",)
    #: scalar `info` counters that `EpisodeStats` sums per
    #: episode (Tag: `("tagged",)`)
    episode_sums: tuple[str, ...] = ()
    #: agents observe the step count, so the time limit is part of the state (a learner
    #: treats truncation as terminal by default)
    observes_time: bool = False
    #: `reset_state` ignores its key (the start is a function of the level alone), so
    #: auto-reset wrappers may build the starts of a batch of levels once, in advance
    reset_ignores_key: bool = False

    # --- to implement -----------------------------------------------------------------
    def reset_state(self, key: jax.Array, level: Level) -> State:
        """Initial state of an episode on `level`."""
        raise NotImplementedError

    def step_state(
        self, key: jax.Array, state: State, action: Action
    ) -> tuple[State, Reward, jax.Array, jax.Array, dict[str, Any]]:
        """Advance one step: `(state, reward, terminated, truncated, info)`."""
        raise NotImplementedError

    def observe(self, state: State) -> Obs:
        """Observation of every team from `state`."""
        raise NotImplementedError

    def observation_space(self, team: str) -> Any:
        """Space of one agent's observation in `team`."""
        raise NotImplementedError

    def action_space(self, team: str) -> Any:
        """Space of one agent's action in `team`."""
        raise NotImplementedError

    def num_agents(self, team: str) -> int:
        """Size of the leading agent axis of `team`."""
        return 1

    def generate(self, key: jax.Array) -> Level:
        """A level from the family's default (domain-randomisation) generator."""
        raise NotImplementedError

    def level_problems(self, level: Level) -> list[str]:
        """What is wrong with one concrete level handed in from outside (a file, an
        export's fixed levels), as short phrases; `[]` if nothing. The default finds
        non-finite numbers; families add their own rules (physics, positions)."""
        out = []
        for path, leaf in jax.tree_util.tree_leaves_with_path(level):
            a = np.asarray(leaf)
            if np.issubdtype(a.dtype, np.floating) and not np.all(np.isfinite(a)):
                out.append(f"{jax.tree_util.keystr(path).lstrip('.')} is not finite")
        return out

    def global_state(self, state: State) -> jax.Array:
        """The whole game as one vector `(S,) float32`, for centralised critics: by default
        every team's observations (teams in order, agents in order), flattened and
        concatenated; families override it with a compact description of the game."""
        obs = self.observe(state)
        leaves = [x for t in self.teams for x in jax.tree.leaves(obs[t])]
        return jnp.concatenate([jnp.ravel(x).astype(jnp.float32) for x in leaves])

    @property
    def time_limit(self) -> int:
        """Steps after which an episode is truncated: the family's `max_steps`
        (Gymnasium's and MiniGrid's name) or `episode_length` (WarpDrive's)."""
        for name in ("max_steps", "episode_length"):
            if isinstance(getattr(self, name, None), int):
                return int(getattr(self, name))
        raise NotImplementedError(f"{type(self).__name__} has no max_steps or episode_length")

    # --- composed API -----------------------------------------------------------------
    def reset(self, key: jax.Array, level: Level) -> tuple[Obs, State]:
        """Start an episode on `level`: `(obs, state)`."""
        state = self.reset_state(key, level)
        return self.observe(state), state

    def step(
        self, key: jax.Array, state: State, action: Action
    ) -> tuple[Obs, State, Reward, jax.Array, jax.Array, dict[str, Any]]:
        """One step, no auto-reset: `(obs, state, reward, terminated, truncated, info)`."""
        state, reward, terminated, truncated, info = self.step_state(key, state, action)
        return self.observe(state), state, reward, terminated, truncated, info

    # --- batches of envs ----------------------------------------------------------------
    def step_states(
        self, keys: jax.Array, states: State, actions: Action
    ) -> tuple[State, Reward, jax.Array, jax.Array, dict[str, Any]]:
        """`step_state` of `N` envs at once: every argument and result has a leading env
        axis (`keys (N,)`, `terminated (N,) bool`). By default `vmap(step_state)`;
        auto-reset wrappers override it to start new episodes only where one ended."""
        return jax.vmap(self.step_state)(keys, states, actions)

    def steps(
        self, keys: jax.Array, states: State, actions: Action
    ) -> tuple[Obs, State, Reward, jax.Array, jax.Array, dict[str, Any]]:
        """`step` of `N` envs at once (`step_states`, then every env's observation)."""
        states, reward, terminated, truncated, info = self.step_states(keys, states, actions)
        return jax.vmap(self.observe)(states), states, reward, terminated, truncated, info
