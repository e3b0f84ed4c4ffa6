"""PettingZoo export of many-agent arenax environments (Tag)."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from arenax.envs.core import Environment
from arenax.interop.levels import (
    LevelSource,
    action_dtype,
    checked_actions,
    level_sampler,
    require_environment,
    reset_on_sampled_level,
    seed_key,
    to_gym_space,
)

try:  # optional dependency: pip install -e ".[interop]"
    import gymnasium
    from pettingzoo import ParallelEnv
except ImportError:  # pragma: no cover - exercised only without pettingzoo
    ParallelEnv = None


class ArenaxParallelEnv(ParallelEnv if ParallelEnv is not None else object):
    """One arenax environment as a PettingZoo `ParallelEnv`.

    Agent names are `f"{team}_{i}"` in the env's team order (`possible_agents`). A step
    takes an action for every agent in `agents` (agents missing from `actions` are an
    error; out-of-game agents get no action) and returns observations, rewards,
    terminations, truncations and infos for the agents that were in `agents` before it.
    An agent leaves `agents` when its termination or truncation is true: the whole game
    ends (no runner left, Grid Tag's tag, or the time limit), or — continuous Tag with
    `runners_leave` — a runner is tagged (`info["out"]` of the arenax step). Observation
    and action spaces are the agent's team's (see the env's `observation_space`).

    One compiled function per `reset` and per `step`; the whole agent axis crosses to
    NumPy once per step.
    """

    metadata = {"name": "arenax", "render_modes": []}  # noqa: RUF012 - PettingZoo's attribute

    def __init__(self, env: Environment, levels: LevelSource, seed: int = 0):
        if ParallelEnv is None:
            raise ImportError('arenax.interop needs pettingzoo: pip install -e ".[interop]"')
        require_environment(env, "env")
        self.env = env
        self.render_mode = None
        self._index: dict[str, tuple[str, int]] = {}
        for team in env.teams:
            for i in range(env.num_agents(team)):
                self._index[f"{team}_{i}"] = (team, i)
        self.possible_agents = list(self._index)
        self.agents: list[str] = []
        self._obs_spaces = {t: to_gym_space(env.observation_space(t)) for t in env.teams}
        self._act_spaces = {t: to_gym_space(env.action_space(t)) for t in env.teams}
        self._dtypes = {t: action_dtype(env.action_space(t)) for t in env.teams}
        sample = level_sampler(levels, self.env)

        # the batch key is split inside each compiled call: one call per reset / step
        def reset(key):
            key, k = jax.random.split(key)
            return key, *reset_on_sampled_level(env, sample, k)

        def step(key, state, actions):
            key, k = jax.random.split(key)
            state, reward, terminated, truncated, info = env.step_state(k, state, actions)
            out = info.get("out", {t: jnp.zeros((env.num_agents(t),), bool) for t in env.teams})
            return key, state, (env.observe(state), reward, terminated, truncated, out)

        self._reset_fn, self._step_fn = jax.jit(reset), jax.jit(step)
        self._global_state = jax.jit(env.global_state)
        state = jax.eval_shape(reset, jax.random.key(0))[2]
        (size,) = jax.eval_shape(env.global_state, state).shape
        #: the global state's space (`state`)
        self.state_space = gymnasium.spaces.Box(-np.inf, np.inf, (size,), np.float32)
        self._key = seed_key(seed)
        self._state = None

    def state(self) -> np.ndarray:
        """The global state, for centralised critics (MAPPO): the vector the game's
        centralised critic reads in training, `env.global_state` — `(S,) float32`
        (`state_space`). Both Tag games give a compact description (every agent's position,
        motion and presence, and t / T); a family without its own gives every agent's
        observation, teams in order, agents in order, flattened and concatenated."""
        if self._state is None:
            raise RuntimeError("call reset() before state()")
        return np.asarray(self._global_state(self._state), np.float32)

    def observation_space(self, agent: str) -> Any:
        return self._obs_spaces[self._index[agent][0]]

    def action_space(self, agent: str) -> Any:
        return self._act_spaces[self._index[agent][0]]

    def _per_agent(self, team_values: dict[str, Any], agents: list[str]) -> dict[str, Any]:
        arrays = {t: np.asarray(v) for t, v in team_values.items()}
        return {a: arrays[self._index[a][0]][self._index[a][1]] for a in agents}

    def _checked(self, given: list[tuple[int, str, Any]], space: Any) -> np.ndarray:
        """One team's actions `[(index, agent, action)]` checked at once (one vectorised
        check for the whole team; the agent-by-agent check only to name a bad one)."""
        try:
            stacked = np.asarray([act for _, _, act in given])
            return checked_actions(stacked, space, (len(given),), "agent")
        except ValueError:
            pass
        return np.stack(
            [checked_actions(act, space, (), f"agent {name!r}") for _, name, act in given]
        )

    def reset(self, seed: int | None = None, options: dict | None = None):
        """A new level and episode: `(obs, infos)` for every agent."""
        if seed is not None:
            self._key = seed_key(seed)
        self._key, obs, self._state = self._reset_fn(self._key)
        obs = jax.device_get(obs)
        self.agents = list(self.possible_agents)
        return self._per_agent(obs, self.agents), {a: {} for a in self.agents}

    def step(self, actions: dict[str, Any]):
        """`(obs, rewards, terminations, truncations, infos)` keyed by the agents that were
        in the game before the step."""
        if self._state is None:
            raise RuntimeError("call reset() before step()")
        missing = [a for a in self.agents if a not in actions]  # (dead agents' are ignored)
        if missing:
            raise ValueError(f"no action for live agent(s) {', '.join(missing[:5])}")
        team_actions = {}
        given: dict[str, list[tuple[int, str, Any]]] = {t: [] for t in self.env.teams}
        for name, act in actions.items():
            if name not in self._index:
                raise ValueError(f"unknown agent {name!r}")
            t, i = self._index[name]
            given[t].append((i, name, act))
        for t in self.env.teams:
            space = self.env.action_space(t)
            a = np.zeros((self.env.num_agents(t), *space.shape), self._dtypes[t])
            if given[t]:
                rows = [i for i, _, _ in given[t]]
                a[rows] = self._checked(given[t], space)
            team_actions[t] = a
        self._key, self._state, results = self._step_fn(self._key, self._state, team_actions)
        obs, reward, te, tr, out = jax.device_get(results)  # one copy to the host
        live = self.agents
        ended, cut = bool(te), bool(tr)
        gone = self._per_agent(out, live)
        terminations = {a: ended or bool(gone[a]) for a in live}
        truncations = {a: cut for a in live}
        self.agents = [a for a in live if not (terminations[a] or truncations[a])]
        rewards = {a: float(r) for a, r in self._per_agent(reward, live).items()}
        return (
            self._per_agent(obs, live),
            rewards,
            terminations,
            truncations,
            {a: {} for a in live},
        )


def to_pettingzoo(env: Environment, levels: LevelSource, seed: int = 0) -> ArenaxParallelEnv:
    """`env` (e.g. `arenax.make("tag", ...)`) as a PettingZoo `ParallelEnv`; every
    episode starts on a level from `levels` (a generator or a list / dict of levels). See
    `ArenaxParallelEnv`."""
    return ArenaxParallelEnv(env, levels, seed)
