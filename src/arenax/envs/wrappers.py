"""Wrappers: auto-reset to levels, and episode statistics.

Auto-reset never generates a level inside a rollout: it either replays the level the
episode started from (`AutoReplay`, for curricula that score a level over several
episodes) or moves on to the next level of a batch sampled *before* the rollout
(`AutoResetFromBatch`). On the step that ends an episode, the returned observation
and state are those of the *new* episode; `reward`, `terminated`, `truncated` and
`info` describe the step that ended the old one, and `info["final_obs"]` is the
observation the old episode ended in (what a learner bootstraps from at a truncation; XLA
drops it when unused).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from arenax.envs import spaces
from arenax.envs.core import Environment
from arenax.selects import take_rows
from arenax.struct import pytree_dataclass
from arenax.utils import gathers_are_cheap

#: envs started per pass of `replace_where` (its passes: ceil(envs to reset / chunk))
RESET_CHUNK = 64


def _select(pred: jax.Array, on_true: Any, on_false: Any) -> Any:
    return jax.tree.map(lambda a, b: jnp.where(pred, a, b), on_true, on_false)


def _select_rows(pred: jax.Array, on_true: Any, on_false: Any) -> Any:
    """`_select` with `pred (N,)` choosing whole rows of `(N, ...)` leaves."""

    def pick(a: jax.Array, b: jax.Array) -> jax.Array:
        return jnp.where(pred.reshape(pred.shape + (1,) * (a.ndim - 1)), a, b)

    return jax.tree.map(pick, on_true, on_false)


def replace_where(
    need: jax.Array,
    fresh: Callable[[jax.Array | None], Any],
    current: Any,
    chunk: int | None = None,
    *,
    draw_all_when_small: bool = True,
) -> Any:
    """`current` (leaves `(N, ...)`) with row `i` replaced by `fresh(ids)`'s row for `i`
    wherever `need[i]`, where `fresh(ids (m,) int32)` returns the new rows of envs `ids`
    (leaves `(m, ...)`; a pure function of each id, as a `vmap` over ids is) and
    `fresh(None)` those of all `N` envs.

    The same numbers as `_select_rows(need, fresh(None), current)`, but only the rows
    that need it are computed: in passes of `chunk` envs (`fori_loop`, one pass per
    `chunk` rows needed), so a step on which a few of thousands of episodes end draws a
    few new starts, not thousands. With `N <= chunk`: one draw for every env and a select,
    unless `draw_all_when_small` is false (then passes of `N`: none on a step where no
    row needs one; for rows that are dear to draw, such as a generated maze). `chunk`
    defaults to `RESET_CHUNK`.
    """
    chunk = RESET_CHUNK if chunk is None else chunk
    if chunk < 1:
        raise ValueError(f"replace_where: chunk={chunk}; envs per pass must be >= 1")
    n = need.shape[0]
    if chunk >= n:
        if draw_all_when_small:
            return _select_rows(need, fresh(None), current)
        chunk = n
    need = need.astype(jnp.int32)

    def one_pass(i: jax.Array, carry: tuple[jax.Array, Any]) -> tuple[jax.Array, Any]:
        count, current = carry
        # count[k]: envs needing one up to k, worked out in the first pass only, so that a
        # step on which no episode ends pays for none of it
        count = jax.lax.cond(i == 0, lambda: jnp.cumsum(need), lambda: count)
        # the pass's envs: the (i·chunk + j)-th env that needs one, for j < chunk (n: none);
        # a search of the running count (jnp.nonzero's scatter costs more on a CPU)
        rank = i * chunk + jnp.arange(chunk, dtype=jnp.int32) + 1
        which = jnp.searchsorted(count, rank, side="left", method="scan_unrolled")
        rows = fresh(jnp.minimum(which, n - 1))
        return count, jax.tree.map(lambda a, b: a.at[which].set(b, mode="drop"), current, rows)

    passes = (need.sum() + chunk - 1) // chunk
    return jax.lax.fori_loop(0, passes, one_pass, (jnp.zeros_like(need), current))[1]


def _rows(tree: Any, ids: jax.Array | None) -> Any:
    """Rows `ids` of every `(N, ...)` leaf of `tree` (all of them for `None`)."""
    return tree if ids is None else jax.tree.map(lambda x: x[ids], tree)


def _reset_keys(keys: jax.Array) -> jax.Array:
    """The reset half of `split(key)` of each of `keys (m,)` (as `step_state` draws)."""
    return jax.vmap(lambda k: jax.random.split(k)[1])(keys)


def _step_keys(keys: jax.Array) -> jax.Array:
    """The step half of `split(key)` of each of `keys (N,)` (XLA drops it when unused)."""
    return jax.vmap(lambda k: jax.random.split(k)[0])(keys)


@dataclasses.dataclass(frozen=True)
class Wrapper(Environment):
    """Delegates everything to `env`; subclasses override what they change."""

    env: Environment

    @property
    def teams(self) -> tuple[str, ...]:  # type: ignore[override]
        return self.env.teams

    @property
    def episode_sums(self) -> tuple[str, ...]:  # type: ignore[override]
        return self.env.episode_sums

    @property
    def observes_time(self) -> bool:  # type: ignore[override]
        return self.env.observes_time

    @property
    def reset_ignores_key(self) -> bool:  # type: ignore[override]
        return self.env.reset_ignores_key

    def observation_space(self, team: str = "agent") -> Any:
        return self.env.observation_space(team)

    def action_space(self, team: str = "agent") -> Any:
        return self.env.action_space(team)

    def num_agents(self, team: str = "agent") -> int:
        return self.env.num_agents(team)

    def generate(self, key: jax.Array) -> Any:
        return self.env.generate(key)

    def level_problems(self, level: Any) -> list[str]:
        return self.env.level_problems(level)

    def reset_state(self, key: jax.Array, level: Any) -> Any:
        return self.env.reset_state(key, level)

    def step_state(self, key: jax.Array, state: Any, action: Any) -> Any:
        return self.env.step_state(key, state, action)

    def step_states(self, keys: jax.Array, states: Any, actions: Any) -> Any:
        if type(self).step_state is Wrapper.step_state:  # a pure delegate: the inner batch
            return self.env.step_states(keys, states, actions)
        return super().step_states(keys, states, actions)

    def observe(self, state: Any) -> Any:
        return self.env.observe(state)

    def __getattr__(self, name: str) -> Any:
        # reach static parameters of the wrapped env (`wrapped.max_steps`)
        if name == "env":
            raise AttributeError(name)
        return getattr(self.env, name)


@pytree_dataclass
class ReplayState:
    """State of `AutoReplay`: the inner state and the level being replayed."""

    inner: Any
    level: Any


@dataclasses.dataclass(frozen=True)
class AutoReplay(Wrapper):
    """When an episode ends, start a new one on the same level."""

    def reset_state(self, key: jax.Array, level: Any) -> ReplayState:
        return ReplayState(inner=self.env.reset_state(key, level), level=level)

    def step_state(self, key: jax.Array, state: ReplayState, action: Any) -> Any:
        k_step, k_reset = jax.random.split(key)
        inner, reward, terminated, truncated, info = self.env.step_state(
            k_step, state.inner, action
        )
        fresh = self.env.reset_state(k_reset, state.level)
        info = {**info, "final_obs": self.env.observe(inner)}
        inner = _select(terminated | truncated, fresh, inner)
        return state.replace(inner=inner), reward, terminated, truncated, info

    def step_states(self, keys: jax.Array, states: ReplayState, actions: Any) -> Any:
        """`vmap(step_state)`'s numbers, with new episodes started only where one ended."""
        inner, reward, terminated, truncated, info = self.env.step_states(
            _step_keys(keys), states.inner, actions
        )
        info = {**info, "final_obs": jax.vmap(self.env.observe)(inner)}
        done = terminated | truncated
        if self.env.reset_ignores_key and not gathers_are_cheap():
            # a start is a copy of the level: every env's, then a select (the passes of
            # `replace_where` gather and scatter rows, one env after another on a TPU)
            fresh_all = jax.vmap(self.env.reset_state)(keys, states.level)
            inner = _select_rows(done, fresh_all, inner)
            return states.replace(inner=inner), reward, terminated, truncated, info

        def fresh(ids: jax.Array | None) -> Any:
            return jax.vmap(self.env.reset_state)(
                _reset_keys(_rows(keys, ids)), _rows(states.level, ids)
            )

        inner = replace_where(done, fresh, inner)
        return states.replace(inner=inner), reward, terminated, truncated, info

    def observe(self, state: ReplayState) -> Any:
        return self.env.observe(state.inner)


def with_replay_level(state: Any, level: Any) -> Any:
    """`state` with the level of its `AutoReplay` layer replaced: episodes that
    start from now on start from `level`. Walks through outer wrappers' states
    (`.inner`); works on batched states too."""
    if isinstance(state, ReplayState):
        return state.replace(level=level)
    if not hasattr(state, "inner"):
        raise TypeError(f"{type(state).__name__}: no AutoReplay layer in this state")
    return state.replace(inner=with_replay_level(state.inner, level))


@pytree_dataclass
class BatchResetState:
    """State of `AutoResetFromBatch`.

    Attributes:
        inner: the wrapped env's state.
        levels: `(K, ...)` levels to play in order (wrapping around after the last); for
            an env whose reset ignores its key (`reset_ignores_key`), their start states,
            built once when the batch is given.
        cursor: `() int32` index of the level being played.
    """

    inner: Any
    levels: Any
    cursor: jax.Array


@dataclasses.dataclass(frozen=True)
class AutoResetFromBatch(Wrapper):
    """When an episode ends, start the next level of a pre-sampled batch.

    `reset(key, levels)` takes a stack of `K` levels (leading axis) per environment;
    episode `i` plays level `i mod K`. Where the env's reset ignores its key
    (`reset_ignores_key`), the `K` start states are built at this reset and a new episode
    is a copy of one (selected for every env at once); otherwise new episodes are started
    only where one ended (`replace_where`).
    """

    def reset_state(self, key: jax.Array, levels: Any) -> BatchResetState:
        if self.env.reset_ignores_key:
            levels = jax.vmap(self.env.reset_state, (None, 0))(key, levels)
            inner = jax.tree.map(lambda x: x[0], levels)
        else:
            inner = self.env.reset_state(key, jax.tree.map(lambda x: x[0], levels))
        return BatchResetState(inner=inner, levels=levels, cursor=jnp.zeros((), jnp.int32))

    def step_state(self, key: jax.Array, state: BatchResetState, action: Any) -> Any:
        k_step, k_reset = jax.random.split(key)
        inner, reward, terminated, truncated, info = self.env.step_state(
            k_step, state.inner, action
        )
        done = terminated | truncated
        k = jax.tree.leaves(state.levels)[0].shape[0]
        cursor = jnp.where(done, (state.cursor + 1) % k, state.cursor)
        nxt = jax.tree.map(lambda x: x[cursor], state.levels)
        fresh = nxt if self.env.reset_ignores_key else self.env.reset_state(k_reset, nxt)
        info = {**info, "final_obs": self.env.observe(inner)}
        inner = _select(done, fresh, inner)
        return state.replace(inner=inner, cursor=cursor), reward, terminated, truncated, info

    def step_states(self, keys: jax.Array, states: BatchResetState, actions: Any) -> Any:
        """`vmap(step_state)`'s numbers, with new episodes started only where one ended."""
        inner, reward, terminated, truncated, info = self.env.step_states(
            _step_keys(keys), states.inner, actions
        )
        done = terminated | truncated
        k = jax.tree.leaves(states.levels)[0].shape[1]
        cursor = jnp.where(done, (states.cursor + 1) % k, states.cursor)
        info = {**info, "final_obs": jax.vmap(self.env.observe)(inner)}
        if self.env.reset_ignores_key:  # the starts are built: copy each env's next one
            fresh = jax.tree.map(lambda x: take_rows(x, cursor), states.levels)
            inner = _select_rows(done, fresh, inner)
            return states.replace(inner=inner, cursor=cursor), reward, terminated, truncated, info

        def fresh_rows(ids: jax.Array | None) -> Any:
            if ids is None:  # each env's next level in its own batch
                levels = jax.tree.map(lambda x: take_rows(x, cursor), states.levels)
            else:
                levels = jax.tree.map(lambda x: x[ids, cursor[ids]], states.levels)
            return jax.vmap(self.env.reset_state)(_reset_keys(_rows(keys, ids)), levels)

        inner = replace_where(done, fresh_rows, inner)
        return states.replace(inner=inner, cursor=cursor), reward, terminated, truncated, info

    def observe(self, state: BatchResetState) -> Any:
        return self.env.observe(state.inner)


@pytree_dataclass
class StatsState:
    """State of `EpisodeStats`: running per-team return `(n_agents,)` and length."""

    inner: Any
    returns: dict[str, jax.Array]
    length: jax.Array
    sums: dict[str, jax.Array]


@dataclasses.dataclass(frozen=True)
class EpisodeStats(Wrapper):
    """Adds `info["episode"]`: for the step that ends an episode, its per-team return
    `(n_agents,) float32`, `length () int32`, `success () bool` and `sums`: the
    episode totals of the scalar `info` entries the env names in `episode_sums` (e.g.
    Tag's `tagged`), with `done` marking the steps where these are meaningful. Place it
    outside the auto-reset wrapper.
    """

    @property
    def _sum_keys(self) -> tuple[str, ...]:
        return tuple(self.env.episode_sums)

    def reset_state(self, key: jax.Array, level: Any) -> StatsState:
        returns = {t: jnp.zeros((self.env.num_agents(t),), jnp.float32) for t in self.env.teams}
        return StatsState(
            inner=self.env.reset_state(key, level),
            returns=returns,
            length=jnp.zeros((), jnp.int32),
            sums={k: jnp.zeros((), jnp.float32) for k in self._sum_keys},
        )

    def step_state(self, key: jax.Array, state: StatsState, action: Any) -> Any:
        return self._count(state, *self.env.step_state(key, state.inner, action))

    def step_states(self, keys: jax.Array, states: StatsState, actions: Any) -> Any:
        return jax.vmap(self._count)(states, *self.env.step_states(keys, states.inner, actions))

    def _count(
        self,
        state: StatsState,
        inner: Any,
        reward: Any,
        terminated: jax.Array,
        truncated: jax.Array,
        info: dict[str, Any],
    ) -> Any:
        """One env's step result with this step added to its episode's totals."""
        done = terminated | truncated
        returns = {t: state.returns[t] + reward[t] for t in state.returns}
        length = state.length + 1
        sums = {k: state.sums[k] + info[k].astype(jnp.float32) for k in self._sum_keys}
        info = dict(info)
        info["episode"] = {
            "done": done,
            "returns": returns,
            "length": length,
            "success": jnp.asarray(info.get("success", terminated), jnp.bool_),
            "sums": sums,
        }
        new = StatsState(
            inner=inner,
            returns={t: jnp.where(done, 0.0, r) for t, r in returns.items()},
            length=jnp.where(done, 0, length),
            sums={k: jnp.where(done, 0.0, v) for k, v in sums.items()},
        )
        return new, reward, terminated, truncated, info

    def observe(self, state: StatsState) -> Any:
        return self.env.observe(state.inner)


@dataclasses.dataclass(frozen=True)
class SingleAgent(Wrapper):
    """The single-agent view of a one-agent team: observations, actions and rewards
    without the team key and the agent axis.

    `obs = obs[team][0]` (e.g. a `MazeObs` with `image (V, V, 3)`), actions are the
    agent's own (`() int32`), rewards `() float32`; states, `terminated`,
    `truncated` and `info` pass through. Use it outermost (the wrappers inside it see
    the team-keyed API). `vmap` it like any environment.
    """

    team: str = "agent"

    def __post_init__(self) -> None:
        if self.team not in self.env.teams or self.env.num_agents(self.team) != 1:
            raise ValueError(f"SingleAgent: team {self.team!r} must be a team of one agent")

    def observation_space(self, team: str | None = None) -> Any:
        return self.env.observation_space(self.team)

    def action_space(self, team: str | None = None) -> Any:
        return self.env.action_space(self.team)

    def step_state(self, key: jax.Array, state: Any, action: Any) -> Any:
        act = {self.team: jnp.asarray(action)[None]}
        state, reward, terminated, truncated, info = self.env.step_state(key, state, act)
        return state, reward[self.team][0], terminated, truncated, info

    def observe(self, state: Any) -> Any:
        return jax.tree.map(lambda x: x[0], self.env.observe(state)[self.team])


@dataclasses.dataclass(frozen=True)
class Scripted(Wrapper):
    """A game whose `scripted` teams are played inside the env by `act(env, state, team)
    -> actions (A, ...)` (a family's scripted players, reading the game state each step):
    its `teams` are the others, which alone observe, act and are rewarded. Training
    against a scripted opponent is ordinary training over this env."""

    scripted: tuple[str, ...] = ()
    act: Callable[[Any, Any, str], jax.Array] | None = None

    def __post_init__(self) -> None:
        unknown = sorted(set(self.scripted) - set(self.env.teams))
        if unknown:
            raise ValueError(
                f"scripted teams {unknown}: the game's teams are {', '.join(self.env.teams)}"
            )
        if not self.teams:
            raise ValueError("every team is scripted: no team would act by a policy")
        if self.act is None:
            raise ValueError("Scripted needs the family's scripted players (act)")

    @property
    def teams(self) -> tuple[str, ...]:  # type: ignore[override]
        return tuple(t for t in self.env.teams if t not in self.scripted)

    @property
    def game(self) -> Environment:
        """The whole game (every team acting by its own driver)."""
        return self.env

    def _own(self, per_team: Any) -> Any:
        """A `{team: ...}` dict restricted to the acting teams (other values as they are)."""
        if isinstance(per_team, dict) and set(per_team) == set(self.env.teams):
            return {t: per_team[t] for t in self.teams}
        return per_team

    def step_state(self, key: jax.Array, state: Any, action: dict[str, jax.Array]) -> Any:
        full = dict(action)
        for team in self.scripted:
            full[team] = self.act(self.env, state, team)
        state, reward, term, trunc, info = self.env.step_state(key, state, full)
        return state, self._own(reward), term, trunc, {k: self._own(v) for k, v in info.items()}

    def observe(self, state: Any) -> dict[str, jax.Array]:
        return self._own(self.env.observe(state))

    def global_state(self, state: Any) -> jax.Array:
        """The whole game's (scripted teams included)."""
        return self.env.global_state(state)


@dataclasses.dataclass(frozen=True)
class GlobalState(Wrapper):
    """Each agent of the `teams` observes `{"obs": its observation, "state": the game's
    global state}` (`env.global_state`, the same vector for every agent of an env): what
    a centralised critic reads. Other teams observe as before."""

    teams_with_state: tuple[str, ...] = ()

    def observation_space(self, team: str = "agent") -> Any:
        own = self.env.observation_space(team)
        if team not in self.teams_with_state:
            return own
        size = jax.eval_shape(self.env.global_state, self._example_state()).shape[0]
        state = spaces.Box(-jnp.inf, jnp.inf, (size,), jnp.float32)
        return spaces.Dict((("obs", own), ("state", state)))

    def _example_state(self) -> Any:
        return jax.eval_shape(
            lambda k: self.env.reset_state(k, self.env.generate(k)), jax.random.key(0)
        )

    def observe(self, state: Any) -> Any:
        obs = self.env.observe(state)
        if not self.teams_with_state:
            return obs
        g = self.env.global_state(state)
        out = dict(obs)
        for t in self.teams_with_state:
            n = self.env.num_agents(t)
            out[t] = {"obs": obs[t], "state": jnp.broadcast_to(g, (n, *g.shape))}
        return out


def whole_game(env: Any) -> Any:
    """The game behind `env` with every team and the game's own observations (`GlobalState`
    and `Scripted` unwrapped)."""
    env = env.env if isinstance(env, GlobalState) else env
    return env.game if isinstance(env, Scripted) else env
