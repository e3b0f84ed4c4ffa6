"""Roll a recurrent policy through a batch of environments inside one `lax.scan`.

The environment batch is `N` envs; the learning team has `A` agents per env, and the
policy sees `B = N * A` sequences. Per-env randomness (env step, action sampling) derives
from the env's *global* index, so a batch sharded over devices draws the same numbers as
on one device.

Truncation bootstrap: the auto-reset wrappers put the final observation of an ended
episode in `info["final_obs"]`; at a truncation the rollout evaluates its value with the
pre-reset carry (only on steps where some env truncates, under `lax.cond`).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from arenax.rl.ppo import Trajectory
from arenax.struct import pytree_dataclass
from arenax.utils import scan_unroll


@pytree_dataclass
class RolloutCarry:
    """What flows between steps: env states and obs (leading `N`), `first (N,)` (the
    env's episode starts at this step), the policy carry (per team in `team_rollout`)."""

    env_state: Any
    obs: Any
    first: jax.Array
    carry: Any


def _flat(x: jax.Array) -> jax.Array:
    """`(N, A, ...) -> (N*A, ...)`."""
    return x.reshape((x.shape[0] * x.shape[1], *x.shape[2:]))


def per_env_keys(key: jax.Array, env_ids: jax.Array) -> jax.Array:
    """One key per environment from its global index: `(N,)` keys."""
    return jax.vmap(jax.random.fold_in, (None, 0))(key, env_ids)


def step_keys(
    key: jax.Array, n_steps: int, env_ids: jax.Array, parts: int = 2
) -> tuple[jax.Array, ...]:
    """Every step's per-env keys of a rollout, drawn before its time loop: step `s` of env
    `i` gets `split(fold_in(fold_in(key, s), env_ids[i]), parts)`, returned as `parts`
    arrays of `(n_steps, N)` keys.

    The keys depend on neither the envs nor the policy, so one batched draw replaces a
    small one inside every step (on a CPU, XLA runs each Threefry draw as a loop of five
    rounds; at 2,000 envs the training chunk ran 6–12% faster). The numbers are those of
    the per-step draw."""

    def at(s: jax.Array) -> jax.Array:
        return jax.vmap(lambda k: jax.random.split(k, parts))(
            per_env_keys(jax.random.fold_in(key, s), env_ids)
        )

    keys = jax.vmap(at)(jnp.arange(n_steps))  # (T, N, parts)
    return tuple(jnp.moveaxis(keys, 2, 0))


def reset_batch(env: Any, key: jax.Array, levels: Any, env_ids: jax.Array) -> tuple[Any, Any]:
    """`vmap`-ed reset of `N` envs (`levels` with leading `N`): `(obs, state)`."""
    return jax.vmap(env.reset)(per_env_keys(key, env_ids), levels)


def start_rollout(
    env: Any, key: jax.Array, levels: Any, env_ids: jax.Array, carry: Any, reset_carry: bool = True
) -> RolloutCarry:
    """Reset `N` envs to `levels` (leading `N`); every env starts an episode, with the
    policy carry `carry` (the policy's initial carry, or per team in `team_rollout`).
    `reset_carry=False` keeps `carry` through the first step (no episode-start reset):
    a recurrent state carried over from an earlier rollout."""
    obs, state = reset_batch(env, key, levels, env_ids)
    return RolloutCarry(state, obs, jnp.full(env_ids.shape, reset_carry, jnp.bool_), carry)


def example_obs(env: Any, key: jax.Array, level: Any, team: str) -> Any:
    """One observation of `team` on `level` shaped as a policy input `(T=1, B=A, ...)`
    (`A` the team's agents): what a policy's parameters are initialised from."""
    obs, _ = env.reset(key, level)
    return jax.tree.map(lambda x: x[None], obs[team])


def rollout(
    env: Any,
    policy: Any,
    params: Any,
    key: jax.Array,
    start: RolloutCarry,
    n_steps: int,
    env_ids: jax.Array,
    team: str = "agent",
    bootstrap_truncation: bool = True,
) -> tuple[Trajectory, RolloutCarry, dict[str, Any]]:
    """`n_steps` steps of `N` envs with one team's actions sampled from `policy`.

    Args:
        env: a (wrapped) environment whose `info` has `final_obs` and `episode`
            (`EpisodeStats` over an auto-reset wrapper).
        policy: `apply(params, obs, first, carry) -> (carry, logits, value)` on `(T, B)`.
        start: env states / obs with leading `N`, `first (N,)`, policy carry `(B, ...)`.
        env_ids: `(N,) int32` global indices of these envs.
        team: the team the policy drives.
        bootstrap_truncation: see `team_rollout`.

    Returns:
        `(trajectory (T, B), end carry, episodes)` where `episodes` holds, per step and
        env `(T, N)`: `done`, `return` (mean over the team's agents), `success`,
        `length`.
    """
    trajs, end, episodes = team_rollout(
        env,
        {team: policy},
        {team: params},
        key,
        start.replace(carry={team: start.carry}),
        n_steps,
        env_ids,
        bootstrap_truncation,
    )
    episodes = {
        "done": episodes["done"],
        "return": episodes["returns"][team],
        "success": episodes["success"],
        "length": episodes["length"],
    }
    return trajs[team], end.replace(carry=end.carry[team]), episodes


def team_rollout(
    env: Any,
    policies: dict[str, Any],
    params: dict[str, Any],
    key: jax.Array,
    start: RolloutCarry,
    n_steps: int,
    env_ids: jax.Array,
    bootstrap_truncation: bool | dict[str, bool] = True,
) -> tuple[dict[str, Trajectory], RolloutCarry, dict[str, Any]]:
    """`n_steps` steps of `N` envs where every team in `policies` acts.

    Each team's agents are `B_team = N * A_team` sequences of its policy (parameters
    shared within the team; two teams may pass the same policy and parameters). Agents out
    of the game (`info["active"]`) are masked; an agent that leaves the game
    (`info["out"]`) ends its own sequence there (terminal for GAE).

    Args:
        env: a (wrapped) environment whose `info` has `episode` (`EpisodeStats`) and,
            with `bootstrap_truncation`, `final_obs`.
        policies, params: per team, `apply(params, obs, first, carry)` on `(T, B_team)`
            (and optionally `dist`, the action distribution) and its parameters.
        start: env states / obs with leading `N`, `first (N,)`, per-team carries.
        env_ids: `(N,) int32` global indices of these envs.
        bootstrap_truncation: bootstrap from `V(final obs)` at truncations; `False`
            treats the time limit as terminal (games whose agents observe `t/T`, or the
            reference UED library's rule); one flag, or one per team.

    Returns:
        `(trajectories {team: (T, B_team)}, end carry, episodes)`; `episodes` holds
        `(T, N)` arrays `done`, `success`, `length`, `returns {team: mean over the
        team's agents}` and `sums` (the env's per-episode counters, e.g. `tagged`).
    """
    teams = tuple(policies)
    n_agents = {t: env.num_agents(t) for t in teams}
    if isinstance(bootstrap_truncation, bool):
        bootstrap_truncation = {t: bootstrap_truncation for t in teams}
    booting = tuple(t for t in teams if bootstrap_truncation[t])
    dists = {t: policies[t].dist for t in teams}

    def team_obs(obs: Any, t: str) -> Any:
        return jax.tree.map(lambda x: _flat(x)[None], obs[t])  # (1, B, ...)

    def rep(x: jax.Array, t: str) -> jax.Array:
        return jnp.repeat(x, n_agents[t])  # (N,) -> (B,)

    def values_of(
        obs: Any, first: jax.Array, carry: Any, which: tuple[str, ...] = teams
    ) -> dict[str, jax.Array]:
        return {
            t: policies[t].apply(params[t], team_obs(obs, t), rep(first, t)[None], carry[t])[2][0]
            for t in which
        }

    k_act, k_env = step_keys(key, n_steps, env_ids)  # each (T, N)
    if len(teams) == 1:
        k_teams = {teams[0]: k_act}
    else:
        k_teams = {t: jax.vmap(jax.vmap(jax.random.fold_in, (0, None)), (0, None))(k_act, i)
                   for i, t in enumerate(teams)}  # fmt: skip

    def step(c: RolloutCarry, xs: tuple) -> tuple[RolloutCarry, Any]:
        k_team, k_env = xs
        actions, tr, carry = {}, {}, {}
        for t in teams:
            o = team_obs(c.obs, t)
            first = rep(c.first, t)
            carry[t], logits, value = policies[t].apply(params[t], o, first[None], c.carry[t])
            logits, value = logits[0], value[0]
            lg = logits.reshape((-1, n_agents[t], logits.shape[-1]))
            actions[t] = jax.vmap(dists[t].sample)(k_team[t], lg)  # (N, A) or (N, A, heads)
            action = _flat(actions[t])
            tr[t] = dict(
                obs=jax.tree.map(lambda x: x[0], o),
                first=first,
                action=action,
                log_prob=dists[t].log_prob(logits, action),
                value=value,
            )
        obs, env_state, reward, term, trunc, info = env.steps(k_env, c.env_state, actions)
        done = term | trunc
        active, out = info.get("active"), info.get("out")
        for t in teams:
            final = term if bootstrap_truncation[t] else done  # no bootstrap past these steps
            gone = rep(final, t) if out is None else rep(final, t) | _flat(out[t])
            tr[t].update(
                reward=_flat(reward[t]),
                terminated=gone,
                done=rep(done, t) | gone,
                mask=(
                    jnp.ones_like(tr[t]["value"])
                    if active is None
                    else _flat(active[t]).astype(jnp.float32)
                ),
            )
        boot = trunc & ~term
        zeros = {t: jnp.zeros_like(tr[t]["value"]) for t in teams}
        if booting:
            final_value = jax.lax.cond(
                jnp.any(boot),
                lambda: {
                    **zeros,
                    **values_of(info["final_obs"], jnp.zeros_like(boot), carry, booting),
                },
                lambda: zeros,
            )
        else:
            final_value = zeros
        ep = info["episode"]
        episodes = {
            "done": done,
            "returns": {t: ep["returns"][t].mean(-1) for t in teams},
            "success": ep["success"] & done,
            "length": ep["length"],
            "sums": ep.get("sums", {}),
        }
        out_ = {"traj": tr, "final_value": final_value, "boot": boot, "episodes": episodes}
        return RolloutCarry(env_state, obs, done, carry), out_

    end, out = jax.lax.scan(step, start, (k_teams, k_env), unroll=scan_unroll())
    last_value = values_of(end.obs, end.first, end.carry)
    trajs = {}
    for t in teams:
        tr = out["traj"][t]
        next_value = jnp.concatenate([tr["value"][1:], last_value[t][None]], axis=0)
        boot = jnp.repeat(out["boot"], n_agents[t], axis=1)
        next_value = jnp.where(boot, out["final_value"][t], next_value)
        trajs[t] = Trajectory(next_value=next_value, **tr)
    return trajs, end, out["episodes"]
