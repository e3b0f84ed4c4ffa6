"""A2C as WarpDrive trains its Tag games: discounted returns, advantage = return − value,
one gradient step per rollout.

The loss follows WarpDrive's definition (`warp_drive/training/algorithms/policygradient/
a2c.py`), over a rollout `(T, B)` (`B` = environments × agents of one policy):

1. returns, backwards over time: `R_t = r_t + γ R_{t+1}` inside an episode; at the end of
   an episode `R_t = r_t` (plus `γ V(s')` at a truncation that bootstraps); after the
   rollout's last step, `tail="bootstrap"` continues with `r + γ V(s_T)` (textbook n-step
   A2C) and `tail="warpdrive"` takes WarpDrive's rule, `R_{T-1} = V(s_{T-1})` (that step's
   reward is dropped);
2. optionally returns normalised per time step over the batch (`normalize_returns`);
3. `vf = mean((R - V)²)`, `A = R - stopgrad(V)`, optionally normalised per time step;
4. `loss = -mean(log π(a|s) A) + vf_coef vf - ent_coef mean(H(π))`, then gradient-norm
   clipping and Adam.

Means are over the steps an agent acted (`mask`); WarpDrive's also count the zero-reward
steps of runners that left the game (here their sequence ended when they were tagged).
Under `shard_map` every mean and normalisation is global (sums `psum`-ed).
"""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any, ClassVar, Literal

import jax
import jax.numpy as jnp
import optax

from arenax import distributions as D
from arenax.collectives import psum
from arenax.options import LEARNING_RATE, NON_NEGATIVE, POSITIVE_REAL, UNIT, OrNone
from arenax.rl.learner import Learner, LearnerState, _count
from arenax.rl.ppo import Trajectory

_EPS = 1e-10  # WarpDrive's guard in its normalisations


@dataclasses.dataclass(frozen=True)
class A2CConfig:
    """A2C and its optimiser (WarpDrive's trainer: Adam, optional gradient-norm clipping)."""

    KIND: ClassVar[str] = "a2c"
    off_policy: ClassVar[bool] = False

    lr: Annotated[float, LEARNING_RATE] = 1e-3
    """Adam learning rate."""
    lr_schedule: Literal["constant", "linear"] = "constant"
    """Learning-rate schedule: constant, or linear annealing to 0 over the run."""
    adam_eps: Annotated[float, LEARNING_RATE] = 1e-8
    """Adam epsilon (PyTorch's default, WarpDrive's optimiser)."""
    max_grad_norm: Annotated[float | None, OrNone(POSITIVE_REAL)] = 0.5
    """Global-norm gradient clipping (None: no clipping)."""
    gamma: Annotated[float, UNIT] = 0.98
    """Discount."""
    vf_coef: Annotated[float, NON_NEGATIVE] = 1.0
    """Value loss coefficient."""
    ent_coef: Annotated[float, NON_NEGATIVE] = 0.05
    """Entropy bonus coefficient."""
    normalize_returns: bool = False
    """Normalise returns per time step over the batch before the value loss."""
    normalize_advantages: bool = False
    """Normalise advantages per time step over the batch."""
    tail: Literal["bootstrap", "warpdrive"] = "bootstrap"
    """Return after the rollout's last step: `r + γ V(s_T)`, or WarpDrive's `V(s_{T-1})`."""
    bootstrap_truncation: bool | None = None
    """At a time-limit truncation, bootstrap from the cut state's value (True) or treat the
    limit as terminal (False); None: the environment's rule (see `PPOConfig`)."""
    carry_over: bool = False
    """Start each cycle's rollout from the previous cycle's recurrent state (see `PPOConfig`)."""

    # what the rest of arenax reads from an on-policy learner's options
    @property
    def epochs(self) -> int:
        """One pass over each rollout."""
        return 1

    @property
    def minibatches(self) -> int:
        """The whole rollout is one batch."""
        return 1

    @property
    def gae_lambda(self) -> float:
        """Monte-Carlo returns (GAE with λ = 1), for the scores of replay curricula."""
        return 1.0


def a2c_returns(
    reward: jax.Array,
    value: jax.Array,
    next_value: jax.Array,
    terminated: jax.Array,
    done: jax.Array,
    gamma: float,
    tail: str = "bootstrap",
) -> jax.Array:
    """Discounted returns `(T, B)` of a rollout (all arguments `(T, B)`, as in
    `arenax.rl.gae.gae`); see the module docstring for the rules."""
    not_term = 1.0 - terminated.astype(jnp.float32)
    done_f = done.astype(jnp.float32)
    ended = reward + gamma * not_term * next_value  # an episode's last step
    if tail == "warpdrive":
        last = done_f[-1] * ended[-1] + (1.0 - done_f[-1]) * value[-1]
    elif tail == "bootstrap":
        last = ended[-1]
    else:
        raise ValueError(f"tail={tail!r}: allowed 'bootstrap', 'warpdrive'")

    def back(after: jax.Array, x: tuple[jax.Array, ...]) -> tuple[jax.Array, jax.Array]:
        r, end, d = x
        ret = d * end + (1.0 - d) * (r + gamma * after)
        return ret, ret

    _, earlier = jax.lax.scan(back, last, (reward[:-1], ended[:-1], done_f[:-1]), reverse=True)
    return jnp.concatenate([earlier, last[None]], axis=0)


def normalize_per_step(x: jax.Array, mask: jax.Array, axis_name: str | None = None) -> jax.Array:
    """`(x - mean_t) / (std_t + 1e-10)` per time step `t` over the batch axis of `x (T, B)`
    (steps with `mask` 0 left out; the unbiased std, as PyTorch's `std`)."""
    n = psum(jnp.sum(mask, axis=1), axis_name)
    mean = psum(jnp.sum(mask * x, axis=1), axis_name) / jnp.maximum(n, 1.0)
    sq = psum(jnp.sum(mask * jnp.square(x - mean[:, None]), axis=1), axis_name)
    std = jnp.sqrt(sq / jnp.maximum(n - 1.0, 1.0))
    return (x - mean[:, None]) / (std[:, None] + _EPS)


def a2c_loss(
    logits: jax.Array,
    value: jax.Array,
    action: jax.Array,
    returns: jax.Array,
    mask: jax.Array,
    hp: A2CConfig,
    count: jax.Array,
    dist: Any = D.CATEGORICAL,
    axis_name: str | None = None,
) -> tuple[jax.Array, dict[str, jax.Array]]:
    """The A2C objective (arrays `(T, B)`, logits `(T, B, n_logits)`); means are
    `sum(mask * x) / count` with `count` the global number of acting steps."""
    if hp.normalize_returns:
        returns = normalize_per_step(returns, mask, axis_name)
    adv = returns - jax.lax.stop_gradient(value)
    if hp.normalize_advantages:
        adv = normalize_per_step(adv, mask, axis_name)

    def mean(x: jax.Array) -> jax.Array:
        return jnp.sum(mask * x) / count

    pg = mean(-dist.log_prob(logits, action) * adv)
    vf = mean(jnp.square(returns - value))
    ent = mean(dist.entropy(logits))
    loss = pg + hp.vf_coef * vf - hp.ent_coef * ent
    return loss, {"loss": loss, "pg_loss": pg, "value_loss": vf, "entropy": ent}


@dataclasses.dataclass(frozen=True)
class A2CLearner(Learner):
    """A2C over a (feed-forward or recurrent) policy: one gradient step per rollout."""

    config: A2CConfig = A2CConfig()  # type: ignore[assignment]

    def update(
        self,
        state: LearnerState,
        traj: Trajectory,
        init_carry: Any,
        key: jax.Array,
        axis_name: str | None = None,
    ) -> tuple[LearnerState, dict[str, jax.Array]]:
        """Returns, then one gradient step on the whole rollout; `approx_kl` and `clip_frac`
        (PPO's) are NaN."""
        del key
        c = self.config
        returns = a2c_returns(
            traj.reward, traj.value, traj.next_value, traj.terminated, traj.done, c.gamma, c.tail
        )
        count = jnp.maximum(psum(jnp.sum(traj.mask), axis_name), 1.0)

        def loss_fn(p: Any) -> tuple[jax.Array, Any]:
            _, logits, value = self.policy.apply(p, traj.obs, traj.first, init_carry)
            return a2c_loss(
                logits,
                value,
                traj.action,
                returns,
                traj.mask,
                c,
                count,
                self.policy.dist,
                axis_name,
            )

        grads, stats = jax.grad(loss_fn, has_aux=True)(state.params)
        grads, stats = psum(grads, axis_name), psum(stats, axis_name)
        lr = self.lr_schedule(_count(state.opt_state))
        updates, opt_state = self.tx.update(grads, state.opt_state, state.params)
        params = optax.apply_updates(state.params, updates)
        nan = jnp.full((), jnp.nan, jnp.float32)
        stats = {
            **stats,
            "approx_kl": nan,
            "clip_frac": nan,
            "grad_norm": optax.tree.norm(grads),
            "lr": jnp.asarray(lr, jnp.float32),
        }
        return LearnerState(params=params, opt_state=opt_state), stats
