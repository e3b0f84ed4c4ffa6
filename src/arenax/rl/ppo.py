"""PPO: clipped surrogate, clipped value loss, entropy bonus, epochs x minibatches.

Works for recurrent policies: minibatches split the batch by *sequence* (environment, or
environment x agent), and the loss re-runs the network over each whole sequence from the
carry the rollout started with. Works under `shard_map`: every mean is a global mean
(sums and counts are `psum`-ed over `axis_name`), so 1 or N devices give the same
gradients up to float reduction order.

Masked batches (`Trajectory.mask`: a curriculum that trains on part of its environments,
agents out of the game): each epoch shuffles the sequences that hold data ahead of those
that hold none (a stable reordering of the shuffle: a batch where every sequence holds
data is shuffled as before), and a minibatch without data on any device takes no
optimiser step (Adam would still move the parameters on zero gradients) and computes no
gradient (`lax.cond`). So a quarter of the batch trains as full minibatches of real data,
not as every minibatch a quarter full, and costs about a quarter of an update.
"""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any, ClassVar, Literal

import jax
import jax.numpy as jnp
import optax

from arenax import distributions as D
from arenax.collectives import psum
from arenax.options import LEARNING_RATE, NON_NEGATIVE, POSITIVE, POSITIVE_REAL, UNIT
from arenax.struct import pytree_dataclass


@dataclasses.dataclass(frozen=True)
class PPOConfig:
    """PPO and its optimiser (global-norm clipping, then Adam)."""

    #: a team's learner by name (`--<team>.ppo.*`, `"kind"` in saved configs)
    KIND: ClassVar[str] = "ppo"
    #: learns from its own rollouts (a curriculum's `Players` drive it)
    off_policy: ClassVar[bool] = False

    lr: Annotated[float, LEARNING_RATE] = 1e-4
    """Adam learning rate."""
    lr_schedule: Literal["constant", "linear"] = "constant"
    """Learning-rate schedule: constant, or linear annealing to 0 over the run."""
    adam_eps: Annotated[float, LEARNING_RATE] = 1e-5
    """Adam epsilon."""
    max_grad_norm: Annotated[float, POSITIVE_REAL] = 0.5
    """Global-norm gradient clipping."""
    gamma: Annotated[float, UNIT] = 0.995
    """Discount."""
    gae_lambda: Annotated[float, UNIT] = 0.98
    """GAE lambda."""
    clip_eps: Annotated[float, POSITIVE_REAL] = 0.2
    """PPO ratio clipping (also clips the value loss)."""
    clip_value: bool = True
    """Use the clipped value loss (value changes clipped at `clip_eps` in the units of
    the scaled return)."""
    reward_scale: Annotated[float, POSITIVE_REAL] = 1.0
    """Rewards are multiplied by this before GAE, so the critic learns returns in scaled
    units (metrics report the unscaled rewards)."""
    ent_coef: Annotated[float, NON_NEGATIVE] = 1e-3
    """Entropy bonus coefficient."""
    vf_coef: Annotated[float, NON_NEGATIVE] = 0.5
    """Value loss coefficient."""
    epochs: Annotated[int, POSITIVE] = 5
    """Passes over each rollout."""
    minibatches: Annotated[int, POSITIVE] = 1
    """Minibatches per epoch (split by sequence: environment, or environment x agent)."""
    normalize_advantages: bool = True
    """Normalise advantages per minibatch (over all devices)."""
    bootstrap_truncation: bool | None = None
    """At a time-limit truncation, bootstrap the value target from the value of the state
    the episode was cut in (True), or treat the time limit as terminal (False: the reference
    UED library's rule). None: the environment's rule — bootstrap, unless its agents observe
    the time (Tag), which makes the limit part of the state."""
    carry_over: bool = False
    """Start each cycle's rollout from the recurrent state the previous cycle ended in, with
    no reset, although a new episode begins there (the reference UED library's rule for DR
    and PAIRED students and the teacher); False: a zero state at every episode start."""


@pytree_dataclass
class Trajectory:
    """A rollout of `T` steps over `B` sequences (env x agent), time-major.

    Attributes:
        obs: observation pytree, leaves `(T, B, ...)`.
        first: `(T, B) bool`, step `t` starts an episode (the carry is reset before it).
        action: `(T, B) int32` (or `(T, B, heads)` for multi-discrete).
        log_prob: `(T, B) float32` of `action` under the behaviour policy.
        value: `(T, B) float32`.
        reward: `(T, B) float32`.
        terminated: `(T, B) bool`.
        done: `(T, B) bool`, terminated or truncated.
        next_value: `(T, B) float32`, bootstrap value of the state step `t` reached
            (see `arenax.rl.gae.gae`).
        mask: `(T, B) float32`, 1 where the agent acted (0 for agents out of the game).
    """

    obs: Any
    first: jax.Array
    action: jax.Array
    log_prob: jax.Array
    value: jax.Array
    reward: jax.Array
    terminated: jax.Array
    done: jax.Array
    next_value: jax.Array
    mask: jax.Array


def bootstraps(config: PPOConfig, env: Any) -> bool:
    """Whether value targets bootstrap through `env`'s time-limit truncations."""
    if config.bootstrap_truncation is not None:
        return config.bootstrap_truncation
    return not env.observes_time


def ppo_loss(
    logits: jax.Array,
    value: jax.Array,
    action: jax.Array,
    old_log_prob: jax.Array,
    old_value: jax.Array,
    advantages: jax.Array,
    targets: jax.Array,
    mask: jax.Array,
    hp: PPOConfig,
    count: jax.Array,
    dist: Any = D.CATEGORICAL,
) -> tuple[jax.Array, dict[str, jax.Array]]:
    """The PPO objective over one minibatch (all arrays `(T, B)`, logits `(T, B, A)`).

    `loss = pg + vf_coef * vf - ent_coef * entropy` where, with `r = exp(logp - old_logp)`,
    `pg = -mean(min(r A, clip(r, 1-ε, 1+ε) A))`,
    `vf = 0.5 * mean(max((v - R)^2, (old_v + clip(v - old_v, -ε, ε) - R)^2))` (or the plain
    squared error with `clip_value=False`). Means are `sum(mask * x) / count`: pass the
    global count of valid samples so that summing gradients over devices gives the mean.
    `dist` is the action distribution (`MultiCategorical`
    for multi-discrete actions `(T, B, heads)`: head log-probs and entropies add up).
    """
    logp = dist.log_prob(logits, action)
    ratio = jnp.exp(logp - old_log_prob)
    pg1 = ratio * advantages
    pg2 = jnp.clip(ratio, 1.0 - hp.clip_eps, 1.0 + hp.clip_eps) * advantages
    pg = -jnp.minimum(pg1, pg2)
    vf = jnp.square(value - targets)
    if hp.clip_value:
        v_clip = old_value + jnp.clip(value - old_value, -hp.clip_eps, hp.clip_eps)
        vf = jnp.maximum(vf, jnp.square(v_clip - targets))
    vf = 0.5 * vf
    ent = dist.entropy(logits)

    def mean(x: jax.Array) -> jax.Array:
        return jnp.sum(mask * x) / count

    pg_l, vf_l, ent_l = mean(pg), mean(vf), mean(ent)
    loss = pg_l + hp.vf_coef * vf_l - hp.ent_coef * ent_l
    stats = {
        "loss": loss,
        "pg_loss": pg_l,
        "value_loss": vf_l,
        "entropy": ent_l,
        "approx_kl": mean((ratio - 1.0) - (logp - old_log_prob)),
        "clip_frac": mean((jnp.abs(ratio - 1.0) > hp.clip_eps).astype(jnp.float32)),
    }
    return loss, stats


def ppo_update(
    policy: Any,
    tx: optax.GradientTransformation,
    hp: PPOConfig,
    params: Any,
    opt_state: Any,
    traj: Trajectory,
    advantages: jax.Array,
    targets: jax.Array,
    init_carry: Any,
    key: jax.Array,
    axis_name: str | None = None,
) -> tuple[Any, Any, dict[str, jax.Array]]:
    """`hp.epochs` passes over the batch in `hp.minibatches` minibatches of sequences.

    Args:
        policy: object with `apply(params, obs, first, carry) -> (carry, logits, value)`
            and `dist`, its action distribution (`Policy`).
        tx: optax transformation (clipping + Adam + schedule).
        traj: the rollout, `(T, B)` (`B` local to this device under `shard_map`).
        advantages, targets: `(T, B)` from `arenax.rl.gae.gae`.
        init_carry: the recurrent carry the rollout started from, leaves `(B, ...)`.
        key: shuffles sequences into minibatches (per device).
        axis_name: mesh axis to reduce over, `None` outside `shard_map`.

    Returns:
        `(params, opt_state, stats)`; stats are averaged over all gradient steps and
        include `grad_norm` (before clipping).
    """
    b = traj.first.shape[1]
    if b % hp.minibatches:
        raise ValueError(f"ppo: {b} sequences do not split into {hp.minibatches} minibatches")
    mb = b // hp.minibatches
    dist = policy.dist

    def grad_step(carry: tuple[Any, Any], idx: jax.Array) -> tuple[tuple[Any, Any], Any]:
        params, opt_state = carry
        take = lambda x: jnp.take(x, idx, axis=1)  # noqa: E731
        batch = jax.tree.map(take, traj)
        adv, tgt = take(advantages), take(targets)
        mask = batch.mask
        total = psum(jnp.sum(mask), axis_name)
        count = jnp.maximum(total, 1.0)
        if hp.normalize_advantages:
            mu = psum(jnp.sum(mask * adv), axis_name) / count
            var = psum(jnp.sum(mask * jnp.square(adv - mu)), axis_name) / count
            adv = (adv - mu) / (jnp.sqrt(var) + 1e-8)
        carry0 = jax.tree.map(lambda x: jnp.take(x, idx, axis=0), init_carry)

        def loss_fn(p: Any) -> tuple[jax.Array, Any]:
            _, logits, value = policy.apply(p, batch.obs, batch.first, carry0)
            return ppo_loss(
                logits,
                value,
                batch.action,
                batch.log_prob,
                batch.value,
                adv,
                tgt,
                mask,
                hp,
                count,
                dist,
            )

        # a minibatch without data on any device (`total` is the sum over devices, so every
        # device agrees) takes no step and computes no gradient
        took = total > 0
        grad_fn = jax.grad(loss_fn, has_aux=True)
        grads, stats = jax.lax.cond(
            took,
            grad_fn,
            lambda p: jax.tree.map(jnp.zeros_like, jax.eval_shape(grad_fn, p)),
            params,
        )
        grads = psum(grads, axis_name)
        stats = psum(stats, axis_name)
        stats["grad_norm"] = optax.tree.norm(grads)
        updates, new_opt = tx.update(grads, opt_state, params)
        new_params = optax.apply_updates(params, updates)
        keep = lambda new, old: jax.tree.map(lambda a, b: jnp.where(took, a, b), new, old)  # noqa: E731
        stats["took"] = took.astype(jnp.float32)
        return (keep(new_params, params), keep(new_opt, opt_state)), stats

    has_data = jnp.any(traj.mask > 0, axis=0)  # (B,) sequences with data (this device)

    def epoch(carry: tuple[Any, Any], k: jax.Array) -> tuple[tuple[Any, Any], Any]:
        if hp.minibatches == 1:
            perm = jnp.arange(b)
        else:  # shuffled; the sequences with data first, in their shuffled order
            perm = jax.random.permutation(k, b)
            perm = perm[jnp.argsort(~has_data[perm], stable=True)]
        return jax.lax.scan(grad_step, carry, perm.reshape(hp.minibatches, mb))

    (params, opt_state), stats = jax.lax.scan(
        epoch, (params, opt_state), jax.random.split(key, hp.epochs)
    )
    took = stats.pop("took")
    steps = jnp.maximum(jnp.sum(took), 1.0)

    def mean(x: jax.Array) -> jax.Array:  # over the steps taken
        return jnp.where(jnp.all(took > 0), jnp.mean(x), jnp.sum(x * took) / steps)

    return params, opt_state, jax.tree.map(mean, stats)
