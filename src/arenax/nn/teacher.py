"""The PAIRED teacher (adversary) network for the maze editor.

`image (T, B, H+2, W+2, 3)` (the full map with border) -> 3x3 conv with 128 filters,
ReLU, flatten; `time (T, B)` -> embedding (`episode_length` -> 10); `noise (T, B, 50)`;
concatenate -> LSTM-256 -> policy head (32 tanh -> one logit per interior cell) and value
head (32 tanh -> 1). Orthogonal initialisation, the policy's last layer scaled by 0.01
(`gate_init` and `policy_init` give minimax's initialisation instead).
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
class TeacherNetConfig(InitConfig):
    """The teacher network (conv over the full map + step embedding + noise + recurrent
    core + heads)."""

    cell: CellKind = "lstm"
    """Recurrent core of the teacher (lstm, gru, s5, ff)."""
    hidden: Annotated[int, POSITIVE] = 256
    """Units of the teacher's core."""
    conv_filters: Annotated[int, POSITIVE] = 128
    """Filters of the 3x3 convolution over the full map."""
    time_embed: Annotated[int, POSITIVE] = 10
    """Size of the step-count embedding."""
    embed_last_step: bool = True
    """The step embedding has a row for the editing episode's last observation
    (`episode_length + 1` rows, 63 for 60 walls); without it, one row per step the
    teacher acts on (62, the reference's table)."""
    head_hidden: Annotated[int, POSITIVE] = 32
    """Hidden units of the teacher's policy and value heads."""


class TeacherNet(nn.Module):
    """Actor-critic over editor observations `(T, B, ...)`; options from `spec` (a
    `TeacherPolicy`)."""

    spec: Any

    @nn.compact
    def __call__(
        self,
        image: jax.Array,
        time: jax.Array,
        noise: jax.Array,
        first: jax.Array,
        carry: tuple[jax.Array, jax.Array],
    ) -> tuple[tuple[jax.Array, jax.Array], jax.Array, jax.Array]:
        s = self.spec
        t, b = image.shape[:2]
        x = image.reshape((t * b, *image.shape[2:])).astype(jnp.float32) / 10.0
        x = PatchConv(s.conv_filters, (3, 3), kernel_init=orthogonal(2**0.5), name="Conv_0")(x)
        x = nn.relu(x).reshape((t, b, -1))
        rows = s.episode_length + 1 if s.embed_last_step else s.episode_length
        e = Embed(rows, s.time_embed, embedding_init=orthogonal(), name="Embed_0")(
            jnp.clip(time.astype(jnp.int32), 0, rows - 1)
        )
        x = jnp.concatenate([x, e, noise.astype(jnp.float32)], axis=-1)
        carry, h = Core(s.cell, s.hidden, s.gate_init, name="core")(x, first, carry)
        logits, value = actor_critic_heads(h, s.n_actions, s.head_hidden, s.policy_init)
        return carry, logits, value


@dataclasses.dataclass(frozen=True)
class TeacherPolicy(TeacherNetConfig, LinenPolicy):
    """`apply(params, obs, first, carry)` over `EditorObs` (image, time, noise)."""

    net_class: ClassVar[type[nn.Module]] = TeacherNet
    obs_fields: ClassVar[tuple[str, ...]] = ("image", "time", "noise")

    n_actions: int = dataclasses.field(default=0, kw_only=True)
    """One action per interior cell."""
    episode_length: int = dataclasses.field(default=0, kw_only=True)
    """Steps of an editing episode (size of the step embedding)."""

    @classmethod
    def of(cls, net: TeacherNetConfig, n_actions: int, episode_length: int) -> TeacherPolicy:
        """The policy with the network options `net` (a config that may hold more)."""
        options = fields_of(net, TeacherNetConfig)
        return cls(n_actions=n_actions, episode_length=episode_length, **options)
