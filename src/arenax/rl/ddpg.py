"""DDPG and TD3 as pure functions: an on-device circular replay buffer, the critic and
actor updates, Polyak-averaged target networks.

The networks come in as `apply` functions (`arenax.nn` defines them):
`actor(params, obs (B, D)) -> action (B, A)` inside the action bounds and
`critic(params, obs (B, D), action (B, A)) -> Q (B,)`; TD3's two critics are one
parameter pytree stacked on a leading axis of 2 (DDPG: 1), applied with `vmap`.

One gradient step (`gradient_step`):

1. critic: `y = r + γ (1 - terminated) min_i Q'_i(s', μ'(s') [+ clipped noise: TD3])`;
   loss `mean_i (Q_i(s, a) - y)²`; only the critic's parameters change.
2. actor (every `actor_every`-th step: by default every step for DDPG, as its paper
   does, every second for TD3, its delayed policy update): loss `-Q_1(s, μ(s))`,
   differentiated with respect to the actor's parameters only — the critic's parameters
   are not touched by this step (the reference GPU framework's DDPG lets the actor loss
   move its critic; `tests/unit/test_ddpg.py` checks that here it does not).
3. targets: `θ' ← τ θ + (1 - τ) θ'` for the actor and the critics.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from typing import Annotated, Any, ClassVar, Literal

import jax
import jax.numpy as jnp
import optax

from arenax.envs import spaces
from arenax.options import NON_NEGATIVE, POSITIVE, UNIT, In, OrNone, Problem
from arenax.struct import pytree_dataclass

Actor = Callable[[Any, jax.Array], jax.Array]
Critic = Callable[[Any, jax.Array, jax.Array], jax.Array]


@dataclasses.dataclass(frozen=True)
class DDPGConfig:
    """DDPG (or TD3) options: buffer, optimisers, targets, exploration."""

    KIND: ClassVar[str] = "ddpg"
    #: learns from a replay buffer (its own off-policy cycle: DR's `off_policy_curriculum`)
    off_policy: ClassVar[bool] = True

    td3: bool = False
    """TD3: twin critics (the minimum in the target), target-policy smoothing noise, and
    delayed actor and target updates."""
    buffer_size: Annotated[int, POSITIVE] = 200_000
    """Transitions the circular replay buffer holds (on the device)."""
    batch_size: Annotated[int, POSITIVE] = 256
    """Transitions per gradient step, drawn uniformly from the filled part of the buffer."""
    update_to_data: Annotated[float, In(0.0, 1e6, lo_open=True)] = 1.0
    """Gradient steps per env step collected (the update-to-data ratio, UTD): a cycle of
    `n_envs × n_steps` transitions is followed by `UTD × n_envs × n_steps` gradient steps
    (a whole number, at least 1), all in the cycle's one compiled program."""
    learning_starts: Annotated[int, In(0, 1e9)] = 5_000
    """Env steps of uniformly random actions before the actor acts and learning starts."""
    actor_lr: Annotated[float, In(0.0, 1.0, lo_open=True)] = 1e-3
    """Adam learning rate of the actor."""
    critic_lr: Annotated[float, In(0.0, 1.0, lo_open=True)] = 1e-3
    """Adam learning rate of the critic(s)."""
    gamma: Annotated[float, UNIT] = 0.99
    """Discount."""
    tau: Annotated[float, UNIT] = 0.005
    """Polyak coefficient of the target networks."""
    noise: Literal["gaussian", "ou"] = "gaussian"
    """Exploration noise: independent Gaussian, or an Ornstein–Uhlenbeck process per env."""
    noise_std: Annotated[float, NON_NEGATIVE] = 0.1
    """Exploration noise scale, as a fraction of the action range's half-width."""
    ou_theta: Annotated[float, UNIT] = 0.15
    """Ornstein–Uhlenbeck mean reversion per step."""
    policy_noise: Annotated[float, NON_NEGATIVE] = 0.2
    """TD3: target-policy smoothing noise (fraction of the half-width)."""
    noise_clip: Annotated[float, NON_NEGATIVE] = 0.5
    """TD3: clip of the smoothing noise (fraction of the half-width)."""
    actor_every: Annotated[int | None, OrNone(POSITIVE)] = None
    """One actor and target update per this many critic updates (TD3's policy delay);
    `None`: the algorithm's own, 1 for DDPG (its paper) and 2 for TD3. CleanRL's DDPG
    uses 2."""
    hidden: tuple[int, ...] = (256, 256)
    """Hidden layers (ReLU) of the actor and of each critic."""

    def problems(self) -> Any:
        if self.batch_size > self.buffer_size:
            yield Problem(
                "batch_size", self.batch_size, f"must be <= buffer_size={self.buffer_size}"
            )
        if any(h <= 0 for h in self.hidden):
            yield Problem("hidden", self.hidden, "must be positive integers")

    def tiny(self) -> DDPGConfig:
        """The tests' sizes: a small buffer and batch, 4 gradient steps a cycle of 4 x 16."""
        return dataclasses.replace(
            self,
            buffer_size=256,
            batch_size=16,
            update_to_data=4 / 64,
            learning_starts=32,
            hidden=(16, 16),
        )

    def run_problems(self, run: Any, game: Any, team: str) -> Iterator[Problem]:
        """The rules DDPG sets on the run (`run`: the training config, duck-typed) whose team
        `team` learns with it: one team of one agent with continuous actions, fresh levels
        (DR), one device, a whole number of gradient steps a cycle."""
        if (
            len(run.teams) != 1
            or game.num_agents(team) != 1
            or not isinstance(game.action_space(team), spaces.Box)
        ):
            yield Problem(
                f"{team}.ddpg",
                "set",
                "needs one team of one agent with continuous actions (mountain-car-continuous, pendulum)",
            )
        kind = getattr(run.curriculum, "KIND", "")
        if kind != "dr":
            yield Problem("curriculum", kind, "DDPG trains with dr")
        if run.devices != 1:
            yield Problem("devices", run.devices, "DDPG runs on one device")
        try:
            self.updates_per_cycle(run.n_envs * run.n_steps)
        except ValueError:
            n = self.update_to_data * run.n_envs * run.n_steps
            yield Problem(
                f"{team}.ddpg.update_to_data",
                self.update_to_data,
                f"x n_envs={run.n_envs} x n_steps={run.n_steps} = {n:g} gradient steps a cycle: must be a whole number, at least 1",
            )

    @property
    def actor_period(self) -> int:
        """Critic updates per actor (and target) update: `actor_every`, or the
        algorithm's own (DDPG 1, TD3 2)."""
        if self.actor_every is not None:
            return self.actor_every
        return 2 if self.td3 else 1

    @property
    def n_critics(self) -> int:
        return 2 if self.td3 else 1

    def updates_per_cycle(self, transitions: int) -> int:
        """Gradient steps after a cycle of `transitions` env steps (`update_to_data ×
        transitions`); a `ValueError` unless that is a whole number, at least 1."""
        n = self.update_to_data * transitions
        if n < 1 or abs(n - round(n)) > 1e-9 * max(1.0, n):
            raise ValueError(
                f"update_to_data={self.update_to_data:g} x {transitions} env steps a cycle "
                f"= {n:g} gradient steps: must be a whole number, at least 1"
            )
        return round(n)


# ------------------------------------------------------------------ replay buffer
@pytree_dataclass
class ReplayBuffer:
    """A circular buffer of transitions (leading axis: capacity).

    Attributes:
        obs: `(C, D)`; action: `(C, A)`; reward: `(C,)`; next_obs: `(C, D)` (the
            observation the step led to — before any reset); terminated: `(C,) bool`.
        pos: `() int32` next slot to write; size: `() int32` filled slots.
    """

    obs: jax.Array
    action: jax.Array
    reward: jax.Array
    next_obs: jax.Array
    terminated: jax.Array
    pos: jax.Array
    size: jax.Array


def buffer_create(capacity: int, obs_dim: int, action_dim: int) -> ReplayBuffer:
    """An empty buffer."""
    z = jnp.zeros
    return ReplayBuffer(
        obs=z((capacity, obs_dim), jnp.float32),
        action=z((capacity, action_dim), jnp.float32),
        reward=z((capacity,), jnp.float32),
        next_obs=z((capacity, obs_dim), jnp.float32),
        terminated=z((capacity,), jnp.bool_),
        pos=jnp.int32(0),
        size=jnp.int32(0),
    )


def buffer_add(buf: ReplayBuffer, batch: dict[str, jax.Array]) -> ReplayBuffer:
    """Write `M` transitions (leading `M` in every field of `batch`) at the next
    slots, wrapping around and overwriting the oldest."""
    cap = buf.reward.shape[0]
    m = batch["reward"].shape[0]
    idx = (buf.pos + jnp.arange(m)) % cap
    new = {
        k: getattr(buf, k).at[idx].set(batch[k].astype(getattr(buf, k).dtype))
        for k in ("obs", "action", "reward", "next_obs", "terminated")
    }
    return buf.replace(**new, pos=(buf.pos + m) % cap, size=jnp.minimum(buf.size + m, cap))


def buffer_sample(buf: ReplayBuffer, key: jax.Array, n: int) -> dict[str, jax.Array]:
    """`n` transitions drawn uniformly (with replacement) from the filled slots."""
    idx = jax.random.randint(key, (n,), 0, jnp.maximum(buf.size, 1))
    return {k: getattr(buf, k)[idx] for k in ("obs", "action", "reward", "next_obs", "terminated")}


# ------------------------------------------------------------------ updates
@pytree_dataclass
class DDPGState:
    """Both networks, their targets and optimiser states, and the update count."""

    actor: Any
    critic: Any
    actor_target: Any
    critic_target: Any
    actor_opt: Any
    critic_opt: Any
    steps: jax.Array


def optimisers(
    cfg: DDPGConfig,
) -> tuple[optax.GradientTransformation, optax.GradientTransformation]:
    """Adam for the actor and for the critic(s)."""
    return optax.adam(cfg.actor_lr), optax.adam(cfg.critic_lr)


def ddpg_init(cfg: DDPGConfig, actor_params: Any, critic_params: Any) -> DDPGState:
    """Targets start as copies of the networks."""
    a_tx, c_tx = optimisers(cfg)
    return DDPGState(
        actor=actor_params,
        critic=critic_params,
        actor_target=actor_params,
        critic_target=critic_params,
        actor_opt=a_tx.init(actor_params),
        critic_opt=c_tx.init(critic_params),
        steps=jnp.int32(0),
    )


def polyak(target: Any, online: Any, tau: float) -> Any:
    """`tau * online + (1 - tau) * target`, leaf by leaf."""
    return jax.tree.map(lambda t, o: (1 - tau) * t + tau * o, target, online)


def critic_loss(
    cfg: DDPGConfig,
    actor: Actor,
    critic: Critic,
    state: DDPGState,
    critic_params: Any,
    batch: dict[str, jax.Array],
    key: jax.Array,
    low: float,
    high: float,
) -> tuple[jax.Array, dict[str, jax.Array]]:
    """Mean over critics of the squared TD error against the target networks."""
    next_a = actor(state.actor_target, batch["next_obs"])
    if cfg.td3:  # target-policy smoothing
        half = 0.5 * (high - low)
        eps = jnp.clip(
            cfg.policy_noise * half * jax.random.normal(key, next_a.shape),
            -cfg.noise_clip * half,
            cfg.noise_clip * half,
        )
        next_a = jnp.clip(next_a + eps, low, high)
    q_next = jax.vmap(critic, (0, None, None))(state.critic_target, batch["next_obs"], next_a)
    y = batch["reward"] + cfg.gamma * (1.0 - batch["terminated"]) * jnp.min(q_next, axis=0)
    y = jax.lax.stop_gradient(y)
    q = jax.vmap(critic, (0, None, None))(critic_params, batch["obs"], batch["action"])
    loss = jnp.mean(jnp.square(q - y[None]))
    return loss, {"critic_loss": loss, "q": jnp.mean(q[0])}


def actor_loss(
    actor: Actor, critic: Critic, actor_params: Any, critic_params: Any, obs: jax.Array
) -> jax.Array:
    """`-mean Q_1(s, μ(s))`; differentiate it with respect to `actor_params` only."""
    first = jax.tree.map(lambda x: x[0], critic_params)
    return -jnp.mean(critic(first, obs, actor(actor_params, obs)))


def critic_step(
    cfg: DDPGConfig,
    actor: Actor,
    critic: Critic,
    state: DDPGState,
    batch: dict[str, jax.Array],
    key: jax.Array,
    low: float,
    high: float,
) -> tuple[DDPGState, dict[str, jax.Array]]:
    """One Adam step of the critic(s) on the TD loss; nothing else changes (but the count)."""
    _, c_tx = optimisers(cfg)
    (_, stats), grad = jax.value_and_grad(
        lambda p: critic_loss(cfg, actor, critic, state, p, batch, key, low, high), has_aux=True
    )(state.critic)
    upd, critic_opt = c_tx.update(grad, state.critic_opt, state.critic)
    new = state.replace(
        critic=optax.apply_updates(state.critic, upd), critic_opt=critic_opt, steps=state.steps + 1
    )
    return new, stats


def actor_step(
    cfg: DDPGConfig, actor: Actor, critic: Critic, state: DDPGState, obs: jax.Array
) -> tuple[DDPGState, jax.Array]:
    """One Adam step of the actor on `-Q_1(s, μ(s))` (gradients reach the actor's
    parameters only: the critic and its optimiser state are left as they are), then the
    targets' Polyak step."""
    a_tx, _ = optimisers(cfg)
    loss, grad = jax.value_and_grad(lambda p: actor_loss(actor, critic, p, state.critic, obs))(
        state.actor
    )
    upd, actor_opt = a_tx.update(grad, state.actor_opt, state.actor)
    actor_params = optax.apply_updates(state.actor, upd)
    new = state.replace(
        actor=actor_params,
        actor_opt=actor_opt,
        actor_target=polyak(state.actor_target, actor_params, cfg.tau),
        critic_target=polyak(state.critic_target, state.critic, cfg.tau),
    )
    return new, loss


def gradient_step(
    cfg: DDPGConfig,
    actor: Actor,
    critic: Critic,
    state: DDPGState,
    batch: dict[str, jax.Array],
    key: jax.Array,
    low: float,
    high: float,
) -> tuple[DDPGState, dict[str, jax.Array]]:
    """A critic step, then (every `actor_period`-th step: every step for DDPG, every
    second for TD3, unless `actor_every` says otherwise) an actor step with the targets'
    Polyak step."""
    state, stats = critic_step(cfg, actor, critic, state, batch, key, low, high)

    def act(s: DDPGState) -> tuple[DDPGState, jax.Array]:
        return actor_step(cfg, actor, critic, s, batch["obs"])

    if cfg.actor_period > 1:
        state, a_loss = jax.lax.cond(
            state.steps % cfg.actor_period == 0, act, lambda s: (s, jnp.float32(jnp.nan)), state
        )
    else:
        state, a_loss = act(state)
    return state, {**stats, "actor_loss": a_loss}
