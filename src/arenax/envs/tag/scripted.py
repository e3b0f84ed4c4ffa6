"""Scripted Tag players (privileged: they read the env state), as evaluation opponents and,
through `ScriptedTeams`, as opponents during training.

* Taggers **chase**: each steers towards the nearest runner still in the game.
* Runners **flee**: each steers away from the nearest tagger.

Continuous Tag: the turn whose result points closest to the wanted heading, and full
acceleration (forward). Grid Tag: the move along the axis of larger distance (ties: x).
Every function maps `(env, state)` of one arena to the team's actions `(A_team, ...)`.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from arenax.envs.tag.continuous import TagEnv, TagState
from arenax.envs.tag.grid import GridTagEnv, GridTagState
from arenax.envs.wrappers import Scripted


def _nearest(src: jax.Array, dst: jax.Array, ok: jax.Array) -> jax.Array:
    """For each of `src (S, 2)`, the index of the nearest of `dst (D, 2)` among `ok`."""
    d = jnp.sum(jnp.square(src[:, None, :] - dst[None, :, :]), -1)
    return jnp.argmin(jnp.where(ok[None, :], d, jnp.inf), axis=1)


def _steer(env: TagEnv, state: TagState, me: jax.Array, target: jax.Array, away: bool) -> jax.Array:
    """Actions `(n, 2)` turning agents `me` towards (or away from) points `target`."""
    delta = target - state.pos[me]
    want = jnp.arctan2(delta[:, 1], delta[:, 0]) + (jnp.pi if away else 0.0)
    turns = np.concatenate([[0.0], np.linspace(env.min_turn, env.max_turn, env.turn_levels)])
    after = state.direction[me][:, None] + jnp.asarray(turns, jnp.float32)[None, :]
    err = jnp.abs(jnp.mod(after - want[:, None] + jnp.pi, 2 * jnp.pi) - jnp.pi)
    turn = jnp.argmin(err, axis=1)
    accels = np.concatenate([[0.0], np.linspace(env.min_accel, env.max_accel, env.accel_levels)])
    accel = jnp.full(me.shape, int(np.argmax(accels)), jnp.int32)
    return jnp.stack([accel, turn.astype(jnp.int32)], -1)


def continuous_actions(env: TagEnv, state: TagState, team: str) -> jax.Array:
    """The scripted team's actions in continuous Tag: chase (taggers) or flee (runners)."""
    nt, a = env.n_taggers, env.n_agents
    taggers, runners = jnp.arange(nt), jnp.arange(nt, a)
    if team == "tagger":
        prey = _nearest(state.pos[:nt], state.pos[nt:], state.in_game[nt:])
        return _steer(env, state, taggers, state.pos[nt:][prey], away=False)
    threat = _nearest(state.pos[nt:], state.pos[:nt], jnp.ones((nt,), jnp.bool_))
    return _steer(env, state, runners, state.pos[:nt][threat], away=True)


def grid_actions(env: GridTagEnv, state: GridTagState, team: str) -> jax.Array:
    """The scripted team's moves in grid Tag: chase (taggers) or flee (the runner)."""
    runner = state.pos[-1]
    if team == "tagger":
        delta = runner[None, :] - state.pos[:-1]
    else:
        t = _nearest(
            runner[None].astype(jnp.float32),
            state.pos[:-1].astype(jnp.float32),
            jnp.ones((env.n_taggers,), jnp.bool_),
        )[0]
        delta = (runner - state.pos[t])[None, :]  # away from the nearest tagger
    along_x = jnp.abs(delta[:, 0]) >= jnp.abs(delta[:, 1])
    # moves: 0 stay, 1 +x, 2 -x, 3 +y, 4 -y
    mx = jnp.where(delta[:, 0] > 0, 1, jnp.where(delta[:, 0] < 0, 2, 0))
    my = jnp.where(delta[:, 1] > 0, 3, jnp.where(delta[:, 1] < 0, 4, 0))
    return jnp.where(along_x, mx, my).astype(jnp.int32)


def scripted_actions(
    env: TagEnv | GridTagEnv, state: TagState | GridTagState, team: str
) -> jax.Array:
    """Scripted actions of `team` (chase or flee) in either Tag game."""
    if isinstance(env, GridTagEnv):
        return grid_actions(env, state, team)
    return continuous_actions(env, state, team)


def ScriptedTeams(env: TagEnv | GridTagEnv, scripted: tuple[str, ...] = ("runner",)) -> Scripted:
    """A Tag game whose `scripted` teams are played by the scripted players above (chase /
    flee, from the game state each step): `Scripted` with
    `scripted_actions`. Training against a scripted opponent is multi-team PPO over
    this env (`--runner.scripted`)."""
    return Scripted(env, scripted, scripted_actions)
