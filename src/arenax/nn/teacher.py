"""The PAIRED teacher (adversary) network for the maze editor.

``image (T, B, H+2, W+2, 3)`` (the full map with border) -> 3x3 conv with 128 filters,
ReLU, flatten; ``time (T, B)`` -> embedding (``episode_length`` -> 10); ``noise (T, B, 50)``;
concatenate -> LSTM-256 -> policy head (32 tanh -> one logit per interior cell) and value
head (32 tanh -> 1). Orthogonal initialisation, the policy's last layer scaled by 0.01.
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


class TeacherNet(nn.Module):
    """Actor-critic over editor observations ``(T, B, ...)``."""

    n_actions: int
    episode_length: int
    cell: CellKind = "lstm"
    hidden: int = 256
    conv_filters: int = 128
    time_embed: int = 10
    head_hidden: int = 32

    @nn.compact
    def __call__(
        self,
        image: jax.Array,
        time: jax.Array,
        noise: jax.Array,
        first: jax.Array,
        carry: tuple[jax.Array, jax.Array],
    ) -> tuple[tuple[jax.Array, jax.Array], jax.Array, jax.Array]:
        t, b = image.shape[:2]
        x = image.reshape((t * b, *image.shape[2:])).astype(jnp.float32) / 10.0
        x = PatchConv(self.conv_filters, (3, 3), kernel_init=_orth(2**0.5), name="Conv_0")(x)
        x = nn.relu(x).reshape((t, b, -1))
        e = nn.Embed(self.episode_length + 1, self.time_embed, embedding_init=_orth())(
            jnp.clip(time.astype(jnp.int32), 0, self.episode_length)
        )
        x = jnp.concatenate([x, e, noise.astype(jnp.float32)], axis=-1)
        carry, h = Core(self.cell, self.hidden, name="core")(x, first, carry)
        logits, value = actor_critic_heads(h, self.n_actions, self.head_hidden)
        return carry, logits, value


@dataclasses.dataclass(frozen=True)
class TeacherPolicy(LinenPolicy):
    """``apply(params, obs, first, carry)`` over ``EditorObs`` (image, time, noise)."""

    net_class: ClassVar[type[nn.Module]] = TeacherNet
    obs_fields: ClassVar[tuple[str, ...]] = ("image", "time", "noise")

    n_actions: int
    episode_length: int
    cell: CellKind = "lstm"
    hidden: int = 256
    conv_filters: int = 128
    time_embed: int = 10
    head_hidden: int = 32
