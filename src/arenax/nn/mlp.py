"""A feed-forward actor-critic for vector observations (the Tag games)."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any

import flax.linen as nn
import jax
import jax.numpy as jnp

from arenax.distributions import CATEGORICAL, Categorical, MultiCategorical
from arenax.nn.layers import orthogonal
from arenax.options import PositiveInts


@dataclasses.dataclass(frozen=True)
class MLPConfig:
    """An MLP actor-critic (separate actor and critic, ReLU)."""

    hidden: Annotated[tuple[int, ...], PositiveInts()] = (256, 256)
    """Hidden layers (ReLU) of the actor and of the critic MLP."""


class MLPNet(nn.Module):
    """Separate actor and critic MLPs (ReLU, orthogonal init; policy output scaled 0.01)."""

    n_logits: int
    hidden: tuple[int, ...] = (256, 256)

    @nn.compact
    def __call__(self, obs: jax.Array) -> tuple[jax.Array, jax.Array]:
        def trunk(x: jax.Array) -> jax.Array:
            for h in self.hidden:
                x = nn.relu(nn.Dense(h, kernel_init=orthogonal(2**0.5))(x))
            return x

        logits = nn.Dense(self.n_logits, kernel_init=orthogonal(0.01))(trunk(obs))
        value = nn.Dense(1, kernel_init=orthogonal(1.0))(trunk(obs))[..., 0]
        return logits, value


@dataclasses.dataclass(frozen=True)
class MLPPolicy(MLPConfig):
    """Feed-forward policy under the ``apply(params, obs, first, carry)`` contract.

    The carry is empty (``()``) and ``first`` is ignored, so the same rollout and PPO code
    serve recurrent and feed-forward policies.
    """

    dist: Categorical | MultiCategorical = CATEGORICAL
    """The action distribution (categorical, or multi-discrete heads side by side)."""
    n_actions: int = 0
    """Actions of a categorical distribution (unused for multi-discrete)."""

    @property
    def n_logits(self) -> int:
        return sum(self.dist.heads) if isinstance(self.dist, MultiCategorical) else self.n_actions

    @property
    def net(self) -> MLPNet:
        return MLPNet(n_logits=self.n_logits, hidden=tuple(self.hidden))

    def initial_carry(self, batch: int) -> tuple[()]:
        """No recurrent state."""
        del batch
        return ()

    def init(self, key: jax.Array, obs: jax.Array) -> Any:
        """Parameters, from an example observation ``(T, B, D)``."""
        return self.net.init(key, jnp.asarray(obs, jnp.float32))

    def apply(
        self, params: Any, obs: jax.Array, first: jax.Array, carry: Any
    ) -> tuple[tuple[()], jax.Array, jax.Array]:
        """``((), logits (T, B, n_logits), value (T, B))`` for ``obs (T, B, D)``."""
        del first
        logits, value = self.net.apply(params, obs)
        return carry, logits, value
