"""A PPO learner: a policy, its optimiser and hyperparameters, as pure functions.

The learner never knows which curriculum feeds it: it turns a `Trajectory` into new
parameters. Its state is a pytree (params + optax state) that lives in the train state.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import jax
import jax.numpy as jnp
import optax

from arenax.rl.gae import gae
from arenax.rl.policy import Policy
from arenax.rl.ppo import PPOConfig, Trajectory, ppo_update
from arenax.struct import pytree_dataclass


@pytree_dataclass
class LearnerState:
    """Parameters and optimiser state of one policy."""

    params: Any
    opt_state: Any


def make_optimizer(
    lr: float,
    max_grad_norm: float | None,
    adam_eps: float = 1e-5,
    schedule: str = "constant",
    total_updates: int = 1,
) -> tuple[optax.GradientTransformation, optax.Schedule]:
    """Global-norm clipping (none when `max_grad_norm` is None) then Adam; `schedule` `"constant"` or `"linear"` (from
    `lr` to 0 over `total_updates` gradient steps). Returns `(tx, lr_schedule)`."""
    if schedule == "linear":
        sched = optax.linear_schedule(lr, 0.0, max(int(total_updates), 1))
    elif schedule == "constant":
        sched = optax.constant_schedule(lr)
    else:
        raise ValueError(f"lr_schedule={schedule!r}: allowed 'constant', 'linear'")
    adam = optax.adam(sched, eps=adam_eps)
    if max_grad_norm is None:
        return optax.chain(adam), sched
    return optax.chain(optax.clip_by_global_norm(max_grad_norm), adam), sched


@dataclasses.dataclass(frozen=True)
class Learner:
    """PPO over a recurrent (or feed-forward) policy.

    Attributes:
        policy: a `Policy`.
        config: PPO and optimiser options.
        total_updates: gradient steps over the whole run (the linear schedule's length;
            1 for any other schedule).
    """

    policy: Policy
    config: PPOConfig = PPOConfig()
    total_updates: int = 1

    def __post_init__(self) -> None:
        # only a linear schedule has a length: any other learns the same for every budget
        # (one compiled program, `arenax.training.programs`)
        if self.config.lr_schedule != "linear":
            object.__setattr__(self, "total_updates", 1)

    @functools.cached_property
    def _optimizer(self) -> tuple[optax.GradientTransformation, optax.Schedule]:
        c = self.config
        return make_optimizer(c.lr, c.max_grad_norm, c.adam_eps, c.lr_schedule, self.total_updates)

    @property
    def tx(self) -> optax.GradientTransformation:
        """Clipping, then Adam with the learning-rate schedule."""
        return self._optimizer[0]

    @property
    def lr_schedule(self) -> optax.Schedule:
        """`count -> lr`, for logging."""
        return self._optimizer[1]

    def init(self, key: jax.Array, obs: Any) -> LearnerState:
        """Fresh parameters (from an example observation `(T, B, ...)`) and optimiser state."""
        params = self.policy.init(key, obs)
        return LearnerState(params=params, opt_state=self.tx.init(params))

    def update(
        self,
        state: LearnerState,
        traj: Trajectory,
        init_carry: Any,
        key: jax.Array,
        axis_name: str | None = None,
    ) -> tuple[LearnerState, dict[str, jax.Array]]:
        """GAE + PPO epochs on one rollout; returns the new state and mean loss statistics."""
        c = self.config
        reward = traj.reward if c.reward_scale == 1.0 else traj.reward * c.reward_scale
        adv, targets = gae(
            reward,
            traj.value,
            traj.next_value,
            traj.terminated,
            traj.done,
            c.gamma,
            c.gae_lambda,
        )
        count = _count(state.opt_state)
        params, opt_state, stats = ppo_update(
            self.policy,
            self.tx,
            c,
            state.params,
            state.opt_state,
            traj,
            adv,
            targets,
            init_carry,
            key,
            axis_name,
        )
        stats["lr"] = jnp.asarray(self.lr_schedule(count), jnp.float32)
        return LearnerState(params=params, opt_state=opt_state), stats


STAT_KEYS = (
    "loss",
    "pg_loss",
    "value_loss",
    "entropy",
    "approx_kl",
    "clip_frac",
    "grad_norm",
    "lr",
)


def no_update_stats() -> dict[str, jax.Array]:
    """The statistics of `Learner.update` as NaN, for cycles without an update."""
    return {k: jnp.full((), jnp.nan, jnp.float32) for k in STAT_KEYS}


def _count(opt_state: Any) -> jax.Array:
    """Adam's step counter inside the chained optax state."""
    for s in jax.tree.leaves(opt_state, is_leaf=lambda x: isinstance(x, optax.ScaleByAdamState)):
        if isinstance(s, optax.ScaleByAdamState):
            return s.count
    return jnp.zeros((), jnp.int32)
