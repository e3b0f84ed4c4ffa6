"""Generalised advantage estimation with terminations and truncations kept apart.

At a *termination* the episode really ended: nothing is bootstrapped. At a *truncation*
(time limit, or the end of the rollout) the return continues: the target bootstraps from
the value of the state the episode was cut in (the final observation of the old episode,
not the first of the next one). In both cases the λ-chain stops: the next step belongs to
another episode.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from arenax.utils import scan_unroll


def gae(
    rewards: jax.Array,
    values: jax.Array,
    next_values: jax.Array,
    terminated: jax.Array,
    done: jax.Array,
    gamma: float,
    lam: float,
) -> tuple[jax.Array, jax.Array]:
    """Advantages and value targets, computed backwards over time.

    Args:
        rewards: `(T, B) float32`, reward of step `t`.
        values: `(T, B) float32`, `V(s_t)`.
        next_values: `(T, B) float32`, value of the state reached by step `t`: `V(s_{t+1})`
            inside an episode, the value of the final observation at a truncation (ignored
            at a termination), the bootstrap value after the last step.
        terminated: `(T, B) bool`, step `t` ended the episode for real.
        done: `(T, B) bool`, step `t` ended the episode (terminated or truncated).
        gamma: discount.
        lam: GAE λ.

    Returns:
        `(advantages, targets)`, both `(T, B) float32`; `targets = advantages + values`.
    """
    not_term = 1.0 - terminated.astype(jnp.float32)
    not_done = 1.0 - done.astype(jnp.float32)
    deltas = rewards + gamma * not_term * next_values - values

    def back(carry: jax.Array, x: tuple[jax.Array, jax.Array]) -> tuple[jax.Array, jax.Array]:
        delta, cont = x
        adv = delta + gamma * lam * cont * carry
        return adv, adv

    _, adv = jax.lax.scan(
        back, jnp.zeros_like(values[0]), (deltas, not_done), reverse=True, unroll=scan_unroll()
    )
    return adv, adv + values
