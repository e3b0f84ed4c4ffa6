"""A feed-forward actor-critic for vector observations (the Tag games, classic control)."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any, ClassVar, Literal

import flax.linen as nn
import jax
import jax.numpy as jnp

from arenax.distributions import (
    CATEGORICAL,
    DETERMINISTIC,
    Deterministic,
    DiagGaussian,
    Distribution,
    MultiCategorical,
    for_space,
)
from arenax.nn.layers import orthogonal
from arenax.options import PositiveInts, fields_of


@dataclasses.dataclass(frozen=True)
class MLPConfig:
    """An MLP actor-critic (separate actor and critic, or one shared trunk; ReLU) for
    vector observations."""

    KIND: ClassVar[str] = "mlp"

    hidden: Annotated[tuple[int, ...], PositiveInts()] = (256, 256)
    """Hidden layers (ReLU) of the actor and of the critic MLP."""
    log_std: Literal["parameter", "network"] = "parameter"
    """Continuous actions: the Gaussian's log std is a learned parameter per action
    dimension (state-independent, initialised at 0), or an output of the actor."""
    squash: bool = False
    """Continuous actions: tanh-squash the Gaussian onto the action bounds (log-probs
    corrected for the change of variables); False: the env clips actions to its bounds."""
    shared_trunk: bool = False
    """One MLP under both the policy and the value head (WarpDrive's fully connected
    model); False: separate actor and critic MLPs."""
    critic: Literal["obs", "state"] = "obs"
    """What the critic reads: the agent's observation, or the game's global state and the
    agent's observation (a centralised critic, MAPPO's agent-specific state). The actor
    always reads the observation alone."""

    def policy(self, observation_space: Any, action_space: Any) -> MLPPolicy:
        """The network for one team's spaces (its action distribution from the action
        space: categorical, multi-discrete or Gaussian)."""
        state = observation_space["state"] if _with_state(observation_space) else None
        return MLPPolicy(
            dist=for_space(action_space, self.squash),
            n_actions=int(getattr(action_space, "n", 0)),
            state_size=0 if state is None else int(state.shape[0]),
            **fields_of(self, MLPConfig),
        )

    def tiny(self) -> MLPConfig:
        """The tests' size (two layers of 16)."""
        return dataclasses.replace(self, hidden=(16, 16))


def _with_state(space: Any) -> bool:
    """An observation space of `GlobalState`: `Dict(obs=..., state=...)`."""
    return hasattr(space, "spaces") and {n for n, _ in space.spaces} == {"obs", "state"}


class MLPNet(nn.Module):
    """Separate actor and critic MLPs, or one shared trunk (ReLU, orthogonal init; policy
    output scaled 0.01)."""

    n_logits: int
    hidden: tuple[int, ...] = (256, 256)
    shared_trunk: bool = False
    """One trunk under both heads (else one each)."""
    log_std_dim: int = 0
    """When > 0, a state-independent parameter `log_std (log_std_dim,)` (zeros) is
    appended to the actor's outputs (a Gaussian's mean then log std)."""

    @nn.compact
    def __call__(
        self, obs: jax.Array, critic_obs: jax.Array | None = None
    ) -> tuple[jax.Array, jax.Array]:
        """`(logits, value)`; the critic reads `critic_obs` when given (else `obs`)."""

        def trunk(x: jax.Array) -> jax.Array:
            for h in self.hidden:
                x = nn.relu(nn.Dense(h, kernel_init=orthogonal(2**0.5))(x))
            return x

        # each head is built before its trunk: the layers' names (Dense_0 = the policy
        # head...) and so their initial values are those of separate MLPs' parameters
        policy_head = nn.Dense(self.n_logits, kernel_init=orthogonal(0.01))
        features = trunk(obs)
        logits = policy_head(features)
        if self.log_std_dim:
            log_std = self.param("log_std", nn.initializers.zeros, (self.log_std_dim,))
            logits = jnp.concatenate([logits, jnp.broadcast_to(log_std, logits.shape)], -1)
        value_head = nn.Dense(1, kernel_init=orthogonal(1.0))
        critic_in = obs if critic_obs is None else critic_obs
        value = value_head(features if self.shared_trunk else trunk(critic_in))[..., 0]
        return logits, value


@dataclasses.dataclass(frozen=True)
class MLPPolicy(MLPConfig):
    """Feed-forward policy under the `apply(params, obs, first, carry)` contract.

    The carry is empty (`()`) and `first` is ignored, so the same rollout and PPO code
    serve recurrent and feed-forward policies.
    """

    dist: Distribution = CATEGORICAL
    """The action distribution (categorical, multi-discrete heads side by side, or a
    diagonal Gaussian)."""
    n_actions: int = 0
    """Actions of a categorical distribution (unused otherwise)."""
    state_size: int = 0
    """Size of the global state a centralised critic reads (0: none)."""

    @property
    def n_logits(self) -> int:
        """Outputs of the actor's last layer."""
        if isinstance(self.dist, MultiCategorical):
            return sum(self.dist.heads)
        if isinstance(self.dist, DiagGaussian):
            return self.dist.dim * (2 if self.log_std == "network" else 1)
        return self.n_actions

    @property
    def net(self) -> MLPNet:
        gaussian_param = isinstance(self.dist, DiagGaussian) and self.log_std == "parameter"
        return MLPNet(
            n_logits=self.n_logits,
            hidden=tuple(self.hidden),
            log_std_dim=self.dist.dim if gaussian_param else 0,
            shared_trunk=self.shared_trunk,
        )

    def _inputs(self, obs: Any) -> tuple[jax.Array, jax.Array | None]:
        """`(actor input, critic input or None)`: a centralised critic's observations are
        `{"obs", "state"}` (`arenax.envs.wrappers.GlobalState`); the critic reads the state
        then the observation, the actor the observation."""
        if not isinstance(obs, dict):
            return jnp.asarray(obs, jnp.float32), None
        own = jnp.asarray(obs["obs"], jnp.float32)
        if self.critic == "state":
            return own, jnp.concatenate([jnp.asarray(obs["state"], jnp.float32), own], -1)
        return own, None

    def initial_carry(self, batch: int) -> tuple[()]:
        """No recurrent state."""
        del batch
        return ()

    def init(self, key: jax.Array, obs: Any) -> Any:
        """Parameters, from an example observation `(T, B, D)` (a centralised critic's:
        `{"obs": (T, B, D), "state": (T, B, S)}`)."""
        return self.net.init(key, *self._inputs(obs))

    def apply(
        self, params: Any, obs: jax.Array, first: jax.Array, carry: Any
    ) -> tuple[tuple[()], jax.Array, jax.Array]:
        """`((), logits (T, B, n_logits), value (T, B))` for `obs (T, B, D)`. A centralised
        critic's policy given the observation alone (acting: evaluation, exports) returns
        NaN values: acting needs no state."""
        del first
        own, critic_in = self._inputs(obs)
        if self.critic == "state" and critic_in is None:
            blind = jnp.zeros((*own.shape[:-1], self.state_size + own.shape[-1]), jnp.float32)
            logits, _ = self.net.apply(params, own, blind)
            return carry, logits, jnp.full(logits.shape[:-1], jnp.nan, jnp.float32)
        logits, value = self.net.apply(params, own, critic_in)
        return carry, logits, value


# ---------------------------------------------------------------- DDPG / TD3 networks
class ActorNet(nn.Module):
    """Deterministic actor: MLP (ReLU) -> tanh -> the action bounds `[low, high]`."""

    action_dim: int
    low: float
    high: float
    hidden: tuple[int, ...] = (256, 256)

    @nn.compact
    def __call__(self, obs: jax.Array) -> jax.Array:
        x = obs
        for h in self.hidden:
            x = nn.relu(nn.Dense(h)(x))
        u = jnp.tanh(nn.Dense(self.action_dim)(x))
        return self.low + (u + 1.0) * (0.5 * (self.high - self.low))


class CriticNet(nn.Module):
    """Q-function: MLP (ReLU) over the observation and action, concatenated -> a scalar."""

    hidden: tuple[int, ...] = (256, 256)

    @nn.compact
    def __call__(self, obs: jax.Array, action: jax.Array) -> jax.Array:
        x = jnp.concatenate([obs, action], -1)
        for h in self.hidden:
            x = nn.relu(nn.Dense(h)(x))
        return nn.Dense(1)(x)[..., 0]


@dataclasses.dataclass(frozen=True)
class DeterministicPolicy:
    """A DDPG actor under the policy contract (what evaluation plays): the "logits" are the
    action itself and the value is 0."""

    actor: ActorNet
    dist: Deterministic = DETERMINISTIC

    def initial_carry(self, batch: int) -> tuple[()]:
        del batch
        return ()

    def init(self, key: jax.Array, obs: jax.Array) -> Any:
        return self.actor.init(key, jnp.asarray(obs, jnp.float32))

    def apply(
        self, params: Any, obs: jax.Array, first: jax.Array, carry: Any
    ) -> tuple[tuple[()], jax.Array, jax.Array]:
        """`((), action (T, B, A), zeros (T, B))`."""
        del first
        a = self.actor.apply(params, obs)
        return carry, a, jnp.zeros(a.shape[:-1], a.dtype)
