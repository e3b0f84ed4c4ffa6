"""What the maze student and the PAIRED teacher share: actor-critic heads and the
`apply(params, obs, first, carry)` policy contract over a Linen network.

The contract (`arenax.rl.policy.Policy`) is structural: `init(key, obs)`,
`initial_carry(batch)`, `apply(params, obs, first, carry) -> (carry, logits, value)` on
time-major `(T, B, ...)` inputs, and `dist`, the action distribution of the logits.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar, Literal

import flax.linen as nn
import jax
import jax.numpy as jnp

from arenax import distributions as D
from arenax.nn.layers import orthogonal
from arenax.nn.recurrent import GateInit

PolicyInit = Literal["orthogonal", "constant"]


@dataclasses.dataclass(frozen=True)
class InitConfig:
    """How the maze student's and the teacher's networks draw their first weights."""

    gate_init: GateInit = "joint"
    """LSTM / GRU kernels drawn orthogonal as one matrix over the stacked gates (`joint`,
    as `torch.nn.init.orthogonal_` on PyTorch's stacked LSTM weights) or one orthogonal
    block per gate (`per_gate`, minimax's flax cells: weights twice as large for an
    LSTM)."""
    policy_init: PolicyInit = "orthogonal"
    """The policy's last layer: orthogonal scaled by 0.01 (`orthogonal`) or every weight
    0.01 (`constant`, minimax's: an exactly uniform initial policy)."""


def actor_critic_heads(
    h: jax.Array, n_actions: int, head_hidden: int, policy_init: PolicyInit = "orthogonal"
) -> tuple[jax.Array, jax.Array]:
    """Policy and value heads (one tanh layer each) on core outputs `h (T, B, H)`:
    `(logits (T, B, n_actions), value (T, B))`. Call inside a `@nn.compact` method. The
    policy's last layer is orthogonal scaled by 0.01 (`"orthogonal"`: a near-uniform
    initial policy) or has every weight 0.01 (`"constant"`, minimax's: every logit equal,
    an exactly uniform initial policy)."""
    pi = nn.tanh(nn.Dense(head_hidden, kernel_init=orthogonal(2**0.5))(h))
    last = orthogonal(0.01) if policy_init == "orthogonal" else nn.initializers.constant(0.01)
    logits = nn.Dense(n_actions, kernel_init=last)(pi)
    v = nn.tanh(nn.Dense(head_hidden, kernel_init=orthogonal(2**0.5))(h))
    value = nn.Dense(1, kernel_init=orthogonal(1.0))(v)[..., 0]
    return logits, value


class LinenPolicy:
    """Mixin for frozen dataclasses that hold a network's options: the network
    `net_class(spec=self)` reads its options from the policy, takes the observation
    fields `obs_fields` (leaves `(T, B, ...)`), then `first` and the carry, and
    returns `(carry, logits, value)`. Actions are categorical."""

    net_class: ClassVar[type[nn.Module]]
    obs_fields: ClassVar[tuple[str, ...]]
    dist: ClassVar[D.Categorical] = D.CATEGORICAL
    hidden: int

    @property
    def net(self) -> nn.Module:
        return self.net_class(spec=self)

    def initial_carry(self, batch: int) -> tuple[jax.Array, jax.Array]:
        """Zero carry for `batch` sequences: `((B, hidden), (B, hidden)) float32`."""
        z = jnp.zeros((batch, self.hidden), jnp.float32)
        return z, z

    def _inputs(self, obs: Any) -> list[jax.Array]:
        return [getattr(obs, f) for f in self.obs_fields]

    def init(self, key: jax.Array, obs: Any) -> Any:
        """Parameters, from one example observation with leading `(T, B)` axes."""
        inputs = self._inputs(obs)
        tb = inputs[0].shape[:2]
        return self.net.init(key, *inputs, jnp.ones(tb, jnp.bool_), self.initial_carry(tb[1]))

    def apply(self, params: Any, obs: Any, first: jax.Array, carry: Any) -> Any:
        """`(carry, logits (T, B, A), value (T, B))` for observations `(T, B, ...)`."""
        return self.net.apply(params, *self._inputs(obs), first, carry)
