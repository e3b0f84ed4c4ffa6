"""Hand-written categorical distributions over the last axis of ``logits``.

Everything works on unnormalised logits of shape ``(..., n)`` and is safe with ``-inf``
logits (masked actions). Multi-discrete actions are a tuple of heads: log-probs and
entropies add up over heads.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np


def log_softmax(logits: jax.Array) -> jax.Array:
    """Normalised log-probabilities ``(..., n)``."""
    return jax.nn.log_softmax(logits, axis=-1)


def log_prob(logits: jax.Array, action: jax.Array) -> jax.Array:
    """``log p(action)``: logits ``(..., n)``, action ``(...) int`` -> ``(...) float32``."""
    logp = log_softmax(logits)
    return jnp.take_along_axis(logp, action[..., None].astype(jnp.int32), axis=-1)[..., 0]


def entropy(logits: jax.Array) -> jax.Array:
    """``-sum_a p(a) log p(a)`` over the last axis: ``(..., n) -> (...)``.

    Actions with zero probability contribute 0 (not ``0 * -inf = nan``).
    """
    logp = log_softmax(logits)
    p = jnp.exp(logp)
    return -jnp.sum(jnp.where(p > 0, p * logp, 0.0), axis=-1)


def sample(key: jax.Array, logits: jax.Array) -> jax.Array:
    """One action per row by the Gumbel-max trick: ``(..., n) -> (...) int32``."""
    g = jax.random.gumbel(key, logits.shape, logits.dtype)
    return jnp.argmax(logits + g, axis=-1).astype(jnp.int32)


def mode(logits: jax.Array) -> jax.Array:
    """Greedy action (lowest index on ties): ``(..., n) -> (...) int32``."""
    return jnp.argmax(logits, axis=-1).astype(jnp.int32)


def kl(logits_p: jax.Array, logits_q: jax.Array) -> jax.Array:
    """``KL(p || q)`` over the last axis: ``(...)``."""
    lp, lq = log_softmax(logits_p), log_softmax(logits_q)
    p = jnp.exp(lp)
    return jnp.sum(jnp.where(p > 0, p * (lp - lq), 0.0), axis=-1)


# ---------------------------------------------------------------- multi-discrete
def multi_log_prob(logits: Sequence[jax.Array], action: jax.Array) -> jax.Array:
    """Sum of head log-probs: ``logits[i] (..., n_i)``, ``action (..., n_heads)``."""
    return sum(log_prob(lg, action[..., i]) for i, lg in enumerate(logits))


def multi_entropy(logits: Sequence[jax.Array]) -> jax.Array:
    """Sum of head entropies ``(...)``."""
    return sum(entropy(lg) for lg in logits)


def multi_sample(key: jax.Array, logits: Sequence[jax.Array]) -> jax.Array:
    """Independent sample per head: ``(..., n_heads) int32``."""
    keys = jax.random.split(key, len(logits))
    return jnp.stack([sample(k, lg) for k, lg in zip(keys, logits, strict=True)], axis=-1)


def multi_mode(logits: Sequence[jax.Array]) -> jax.Array:
    """Greedy action per head: ``(..., n_heads) int32``."""
    return jnp.stack([mode(lg) for lg in logits], axis=-1)


# ---------------------------------------------------------------- distribution objects
@dataclasses.dataclass(frozen=True)
class Categorical:
    """One categorical head over all of ``logits (..., n)``; actions ``(...) int32``."""

    def sample(self, key: jax.Array, logits: jax.Array) -> jax.Array:
        return sample(key, logits)

    def log_prob(self, logits: jax.Array, action: jax.Array) -> jax.Array:
        return log_prob(logits, action)

    def entropy(self, logits: jax.Array) -> jax.Array:
        return entropy(logits)

    def mode(self, logits: jax.Array) -> jax.Array:
        return mode(logits)


@dataclasses.dataclass(frozen=True)
class MultiCategorical:
    """Independent heads of sizes ``heads`` laid side by side in ``logits (..., sum(heads))``;
    actions ``(..., len(heads)) int32``. Log-probs and entropies add up over heads."""

    heads: tuple[int, ...]

    def split(self, logits: jax.Array) -> list[jax.Array]:
        return jnp.split(logits, np.cumsum(self.heads)[:-1].tolist(), axis=-1)

    def sample(self, key: jax.Array, logits: jax.Array) -> jax.Array:
        return multi_sample(key, self.split(logits))

    def log_prob(self, logits: jax.Array, action: jax.Array) -> jax.Array:
        return multi_log_prob(self.split(logits), action)

    def entropy(self, logits: jax.Array) -> jax.Array:
        return multi_entropy(self.split(logits))

    def mode(self, logits: jax.Array) -> jax.Array:
        return multi_mode(self.split(logits))


CATEGORICAL = Categorical()


def for_space(space: Any) -> Categorical | MultiCategorical:
    """The action distribution of a ``Discrete`` or ``MultiDiscrete`` space."""
    nvec = getattr(space, "nvec", None)
    if nvec is not None:
        return MultiCategorical(tuple(int(n) for n in np.asarray(nvec).reshape(-1)))
    return CATEGORICAL
