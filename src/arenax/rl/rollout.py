"""Roll a recurrent policy through a batch of environments inside one ``lax.scan``.

The environment batch is ``N`` envs; the learning team has ``A`` agents per env, and the
policy sees ``B = N * A`` sequences. Per-env randomness (env step, action sampling) derives
from the env's *global* index, so a batch sharded over devices draws the same numbers as
on one device.

Truncation bootstrap: the auto-reset wrappers put the final observation of an ended
episode in ``info["final_obs"]``; at a truncation the rollout evaluates its value with the
pre-reset carry (only on steps where some env truncates, under ``lax.cond``).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from arenax.rl import distributions as D
from arenax.rl.ppo import Trajectory
from arenax.struct import pytree_dataclass


@pytree_dataclass
class RolloutCarry:
    """What flows between steps: env state, current obs, episode-start flags, carry."""

    env_state: Any
    obs: Any
    first: jax.Array
    carry: Any


def _flat(x: jax.Array) -> jax.Array:
    """``(N, A, ...) -> (N*A, ...)``."""
    return x.reshape((x.shape[0] * x.shape[1], *x.shape[2:]))


def per_env_keys(key: jax.Array, env_ids: jax.Array) -> jax.Array:
    """One key per environment from its global index: ``(N,)`` keys."""
    return jax.vmap(jax.random.fold_in, (None, 0))(key, env_ids)


def reset_batch(env: Any, key: jax.Array, levels: Any, env_ids: jax.Array) -> tuple[Any, Any]:
    """``vmap``-ed reset of ``N`` envs (``levels`` with leading ``N``): ``(obs, state)``."""
    return jax.vmap(env.reset)(per_env_keys(key, env_ids), levels)


def rollout(
    env: Any,
    policy: Any,
    params: Any,
    key: jax.Array,
    start: RolloutCarry,
    n_steps: int,
    env_ids: jax.Array,
    team: str = "agent",
) -> tuple[Trajectory, RolloutCarry, dict[str, Any]]:
    """``n_steps`` steps of ``N`` envs with actions sampled from ``policy``.

    Args:
        env: a (wrapped) environment whose ``info`` has ``final_obs`` and ``episode``
            (``EpisodeStats`` over an auto-reset wrapper).
        policy: ``apply(params, obs, first, carry) -> (carry, logits, value)`` on ``(T, B)``.
        start: env states / obs with leading ``N``, ``first (B,)``, policy carry ``(B, ...)``.
        env_ids: ``(N,) int32`` global indices of these envs.
        team: the team the policy drives.

    Returns:
        ``(trajectory (T, B), end carry, episodes)`` where ``episodes`` holds, per step and
        env ``(T, N)``: ``done``, ``return`` (mean over the team's agents), ``success``,
        ``length``.
    """
    n_agents = env.num_agents(team)

    def team_obs(obs: Any) -> Any:
        return jax.tree.map(lambda x: _flat(x)[None], obs[team])  # (1, B, ...)

    def value_of(obs: Any, first: jax.Array, carry: Any) -> jax.Array:
        _, _, v = policy.apply(params, team_obs(obs), first[None], carry)
        return v[0]

    def step(c: RolloutCarry, t: jax.Array) -> tuple[RolloutCarry, Any]:
        keys = per_env_keys(jax.random.fold_in(key, t), env_ids)
        k_act, k_env = jnp.moveaxis(jax.vmap(jax.random.split)(keys), 1, 0)
        o = team_obs(c.obs)
        carry, logits, value = policy.apply(params, o, c.first[None], c.carry)
        logits, value = logits[0], value[0]
        lg = logits.reshape((-1, n_agents, logits.shape[-1]))
        action = jax.vmap(D.sample)(k_act, lg)  # (N, A)
        log_prob = D.log_prob(logits, action.reshape(-1))
        obs, env_state, reward, term, trunc, info = jax.vmap(env.step)(
            k_env, c.env_state, {team: action}
        )
        done = term | trunc
        rep = lambda x: jnp.repeat(x, n_agents)  # noqa: E731  (N,) -> (B,)
        boot = rep(trunc & ~term)
        final_value = jax.lax.cond(
            jnp.any(boot),
            lambda: value_of(info["final_obs"], jnp.zeros_like(boot), carry),
            lambda: jnp.zeros_like(value),
        )
        active = info.get("active")  # optional per-team (N, A) masks of agents in the game
        mask = jnp.ones_like(value) if active is None else _flat(active[team]).astype(jnp.float32)
        out = {
            "traj": dict(
                obs=jax.tree.map(lambda x: x[0], o),
                first=c.first,
                action=action.reshape(-1),
                log_prob=log_prob,
                value=value,
                reward=_flat(reward[team]),
                terminated=rep(term),
                done=rep(done),
                mask=mask,
            ),
            "final_value": final_value,
            "boot": boot,
            "episodes": {
                "done": done,
                "return": info["episode"]["returns"][team].mean(-1),
                "success": info["episode"]["success"] & done,
                "length": info["episode"]["length"],
            },
        }
        return RolloutCarry(env_state, obs, rep(done), carry), out

    end, out = jax.lax.scan(step, start, jnp.arange(n_steps))
    last_value = value_of(end.obs, end.first, end.carry)
    tr = out["traj"]
    next_value = jnp.concatenate([tr["value"][1:], last_value[None]], axis=0)
    next_value = jnp.where(out["boot"], out["final_value"], next_value)
    traj = Trajectory(next_value=next_value, **tr)
    return traj, end, out["episodes"]
