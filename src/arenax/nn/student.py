"""The maze student network of the UED literature (PAIRED, PLR, ACCEL, minimax).

``image (T, B, V, V, 3)`` -> 3x3 conv, 16 filters, VALID, ReLU -> flatten;
``direction (T, B) int`` -> embedding 4 -> 5; concatenate -> LSTM 256 (or GRU / a
feed-forward layer) -> policy head (32 tanh -> n_actions) and value head (32 tanh -> 1).
Orthogonal initialisation; the policy's last layer is scaled by 0.01 so the initial policy
is near uniform.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import flax.linen as nn
import jax
import jax.numpy as jnp

from arenax.nn.layers import PatchConv
from arenax.nn.policy import LinenPolicy, actor_critic_heads
from arenax.nn.recurrent import CellKind, Core, _orth


class MazeStudentNet(nn.Module):
    """Actor-critic over sequences ``(T, B, ...)``; see the module docstring."""

    n_actions: int = 7
    cell: CellKind = "lstm"
    hidden: int = 256
    conv_filters: int = 16
    dir_embed: int = 5
    head_hidden: int = 32

    @nn.compact
    def __call__(
        self,
        image: jax.Array,
        direction: jax.Array,
        first: jax.Array,
        carry: tuple[jax.Array, jax.Array],
    ) -> tuple[tuple[jax.Array, jax.Array], jax.Array, jax.Array]:
        """Returns ``(carry, logits (T, B, n_actions), value (T, B))``."""
        t, b = image.shape[:2]
        x = image.reshape((t * b, *image.shape[2:])).astype(jnp.float32)
        x = PatchConv(self.conv_filters, (3, 3), kernel_init=_orth(2**0.5), name="Conv_0")(x)
        x = nn.relu(x).reshape((t, b, -1))
        d = nn.Embed(4, self.dir_embed, embedding_init=_orth())(direction.astype(jnp.int32))
        x = jnp.concatenate([x, d], axis=-1)
        carry, h = Core(self.cell, self.hidden, name="core")(x, first, carry)
        logits, value = actor_critic_heads(h, self.n_actions, self.head_hidden)
        return carry, logits, value


@dataclasses.dataclass(frozen=True)
class StudentPolicy(LinenPolicy):
    """The ``apply(params, obs, first, carry)`` contract the learner uses (hashable, static).

    ``obs`` is any pytree with ``image (T, B, V, V, 3)`` and ``direction (T, B)`` fields.
    """

    net_class: ClassVar[type[nn.Module]] = MazeStudentNet
    obs_fields: ClassVar[tuple[str, ...]] = ("image", "direction")

    n_actions: int = 7
    cell: CellKind = "lstm"
    hidden: int = 256
    conv_filters: int = 16
    dir_embed: int = 5
    head_hidden: int = 32
