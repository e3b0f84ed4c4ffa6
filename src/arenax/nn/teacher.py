"""The PAIRED teacher (adversary) network for the maze editor.

``image (T, B, H+2, W+2, 3)`` (the full map with border) -> 3x3 conv with 128 filters,
ReLU, flatten; ``time (T, B)`` -> embedding (``episode_length`` -> 10); ``noise (T, B, 50)``;
concatenate -> LSTM-256 -> policy head (32 tanh -> one logit per interior cell) and value
head (32 tanh -> 1). Orthogonal initialisation, the policy's last layer scaled by 0.01.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp

from arenax.nn.layers import PatchConv
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
        pi = nn.tanh(nn.Dense(self.head_hidden, kernel_init=_orth(2**0.5))(h))
        logits = nn.Dense(self.n_actions, kernel_init=_orth(0.01))(pi)
        v = nn.tanh(nn.Dense(self.head_hidden, kernel_init=_orth(2**0.5))(h))
        value = nn.Dense(1, kernel_init=_orth(1.0))(v)[..., 0]
        return carry, logits, value


@dataclasses.dataclass(frozen=True)
class TeacherPolicy:
    """``apply(params, obs, first, carry)`` over ``EditorObs`` (image, time, noise)."""

    n_actions: int
    episode_length: int
    cell: CellKind = "lstm"
    hidden: int = 256
    conv_filters: int = 128
    time_embed: int = 10
    head_hidden: int = 32

    @property
    def net(self) -> TeacherNet:
        return TeacherNet(**dataclasses.asdict(self))

    def initial_carry(self, batch: int) -> tuple[jax.Array, jax.Array]:
        z = jnp.zeros((batch, self.hidden), jnp.float32)
        return z, z

    def init(self, key: jax.Array, obs: Any) -> Any:
        b = obs.time.shape[1]
        first = jnp.ones(obs.time.shape, jnp.bool_)
        return self.net.init(key, obs.image, obs.time, obs.noise, first, self.initial_carry(b))

    def apply(self, params: Any, obs: Any, first: jax.Array, carry: Any) -> Any:
        return self.net.apply(params, obs.image, obs.time, obs.noise, first, carry)
