"""The maze student network of the UED literature (PAIRED, PLR, ACCEL, minimax).

`image (T, B, V, V, 3)` -> 3x3 conv, 16 filters, VALID, ReLU -> flatten;
`direction (T, B) int` -> embedding 4 -> 5; concatenate -> LSTM 256 (or GRU / a
feed-forward layer) -> policy head (32 tanh -> n_actions) and value head (32 tanh -> 1).
Orthogonal initialisation; the policy's last layer is scaled by 0.01 so the initial policy
is near uniform (`gate_init` and `policy_init` give minimax's initialisation instead). The
same network as minimax's `default_student_cnn`: `arenax.nn.minimax` maps its
parameters.
"""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any, ClassVar

import flax.linen as nn
import jax
import jax.numpy as jnp

from arenax.nn.layers import Embed, PatchConv, orthogonal
from arenax.nn.policy import InitConfig, LinenPolicy, actor_critic_heads
from arenax.nn.recurrent import CellKind, Core
from arenax.options import POSITIVE, fields_of


@dataclasses.dataclass(frozen=True)
class ModelConfig(InitConfig):
    """The maze student network (conv + direction embedding + recurrent core + heads), for
    observations with an egocentric `image` and a `direction`."""

    KIND: ClassVar[str] = "student"

    cell: CellKind = "lstm"
    """Recurrent core: LSTM, GRU, S5 (diagonal state space, parallel scan), or a feed-forward
    ReLU layer."""
    hidden: Annotated[int, POSITIVE] = 256
    """Units of the core."""
    conv_filters: Annotated[int, POSITIVE] = 16
    """Filters of the 3x3 VALID convolution over the view."""
    dir_embed: Annotated[int, POSITIVE] = 5
    """Size of the direction embedding."""
    head_hidden: Annotated[int, POSITIVE] = 32
    """Hidden units (tanh) of the policy and value heads."""

    def policy(self, observation_space: Any, action_space: Any) -> StudentPolicy:
        """The network for one team's spaces (a `Discrete` action space)."""
        return StudentPolicy.of(self, int(action_space.n))

    def tiny(self) -> ModelConfig:
        """The tests' size (16 units)."""
        return dataclasses.replace(self, hidden=16)

    def reference_rules(self) -> ModelConfig:
        """minimax's initialisation: one orthogonal block per LSTM gate, the policy's last
        layer constant."""
        return dataclasses.replace(self, gate_init="per_gate", policy_init="constant")


class MazeStudentNet(nn.Module):
    """Actor-critic over sequences `(T, B, ...)`; options from `spec` (a
    `StudentPolicy`); see the module docstring."""

    spec: Any

    @nn.compact
    def __call__(
        self,
        image: jax.Array,
        direction: jax.Array,
        first: jax.Array,
        carry: tuple[jax.Array, jax.Array],
    ) -> tuple[tuple[jax.Array, jax.Array], jax.Array, jax.Array]:
        """Returns `(carry, logits (T, B, n_actions), value (T, B))`."""
        s = self.spec
        t, b = image.shape[:2]
        x = image.reshape((t * b, *image.shape[2:])).astype(jnp.float32)
        x = PatchConv(s.conv_filters, (3, 3), kernel_init=orthogonal(2**0.5), name="Conv_0")(x)
        x = nn.relu(x).reshape((t, b, -1))
        d = Embed(4, s.dir_embed, embedding_init=orthogonal(), name="Embed_0")(
            direction.astype(jnp.int32)
        )
        x = jnp.concatenate([x, d], axis=-1)
        carry, h = Core(s.cell, s.hidden, s.gate_init, name="core")(x, first, carry)
        logits, value = actor_critic_heads(h, s.n_actions, s.head_hidden, s.policy_init)
        return carry, logits, value


@dataclasses.dataclass(frozen=True)
class StudentPolicy(ModelConfig, LinenPolicy):
    """The student under the `apply(params, obs, first, carry)` contract (hashable,
    static): the network's options plus its number of actions.

    `obs` is any pytree with `image (T, B, V, V, 3)` and `direction (T, B)` fields.
    """

    net_class: ClassVar[type[nn.Module]] = MazeStudentNet
    obs_fields: ClassVar[tuple[str, ...]] = ("image", "direction")

    n_actions: int = 7
    """Actions of the environment (MiniGrid's 7)."""

    @classmethod
    def of(cls, model: ModelConfig, n_actions: int = 7) -> StudentPolicy:
        """The policy with the network options `model`."""
        return cls(n_actions=n_actions, **fields_of(model))
