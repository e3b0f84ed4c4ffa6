"""Hand-written action distributions: categorical over the last axis of `logits`,
multi-discrete heads, and a diagonal Gaussian for continuous (`Box`) actions.

Categoricals work on unnormalised logits of shape `(..., n)` and are safe with `-inf`
logits (masked actions). Multi-discrete actions are a tuple of heads: log-probs and
entropies add up over heads. The Gaussian reads `(..., 2d)` parameters (mean, log std).
Every distribution object has `sample`, `log_prob`, `entropy` and `mode` over its
parameters (called `logits` throughout, whatever they parameterise).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from arenax.selects import pick


def log_softmax(logits: jax.Array) -> jax.Array:
    """Normalised log-probabilities `(..., n)`."""
    return jax.nn.log_softmax(logits, axis=-1)


def log_prob(logits: jax.Array, action: jax.Array) -> jax.Array:
    """`log p(action)`: logits `(..., n)`, action `(...) int` -> `(...) float32`."""
    return pick(log_softmax(logits), action)


def entropy(logits: jax.Array) -> jax.Array:
    """`-sum_a p(a) log p(a)` over the last axis: `(..., n) -> (...)`.

    Actions with zero probability contribute 0 (not `0 * -inf = nan`).
    """
    logp = log_softmax(logits)
    p = jnp.exp(logp)
    return -jnp.sum(jnp.where(p > 0, p * logp, 0.0), axis=-1)


def sample(key: jax.Array, logits: jax.Array) -> jax.Array:
    """One action per row by the Gumbel-max trick: `(..., n) -> (...) int32`."""
    g = jax.random.gumbel(key, logits.shape, logits.dtype)
    return jnp.argmax(logits + g, axis=-1).astype(jnp.int32)


def mode(logits: jax.Array) -> jax.Array:
    """Greedy action (lowest index on ties): `(..., n) -> (...) int32`."""
    return jnp.argmax(logits, axis=-1).astype(jnp.int32)


def kl(logits_p: jax.Array, logits_q: jax.Array) -> jax.Array:
    """`KL(p || q)` over the last axis: `(...)`."""
    lp, lq = log_softmax(logits_p), log_softmax(logits_q)
    p = jnp.exp(lp)
    return jnp.sum(jnp.where(p > 0, p * (lp - lq), 0.0), axis=-1)


# ---------------------------------------------------------------- multi-discrete
def multi_log_prob(logits: Sequence[jax.Array], action: jax.Array) -> jax.Array:
    """Sum of head log-probs: `logits[i] (..., n_i)`, `action (..., n_heads)`."""
    return sum(log_prob(lg, action[..., i]) for i, lg in enumerate(logits))


def multi_entropy(logits: Sequence[jax.Array]) -> jax.Array:
    """Sum of head entropies `(...)`."""
    return sum(entropy(lg) for lg in logits)


def multi_sample(key: jax.Array, logits: Sequence[jax.Array]) -> jax.Array:
    """Independent sample per head: `(..., n_heads) int32`."""
    keys = jax.random.split(key, len(logits))
    return jnp.stack([sample(k, lg) for k, lg in zip(keys, logits, strict=True)], axis=-1)


def multi_mode(logits: Sequence[jax.Array]) -> jax.Array:
    """Greedy action per head: `(..., n_heads) int32`."""
    return jnp.stack([mode(lg) for lg in logits], axis=-1)


# ---------------------------------------------------------------- distribution objects
@dataclasses.dataclass(frozen=True)
class Categorical:
    """One categorical head over all of `logits (..., n)`; actions `(...) int32`."""

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
    """Independent heads of sizes `heads` laid side by side in `logits (..., sum(heads))`;
    actions `(..., len(heads)) int32`. Log-probs and entropies add up over heads."""

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


LOG_2PI = float(np.log(2 * np.pi))


@dataclasses.dataclass(frozen=True)
class DiagGaussian:
    """A diagonal Gaussian over actions `(..., dim) float32`; parameters
    `(..., 2 dim)`: the mean, then the log standard deviation (clipped to
    `[min_log_std, max_log_std]`).

    With `squash`, the action is `low + (tanh(u) + 1) (high - low) / 2` for a Gaussian
    `u`, and its log-density carries the change of variables:
    `log p(a) = log N(u) - Σ log(1 - tanh(u)²) - dim · log((high - low) / 2)`, with
    `u = atanh(y)` recovered from the action (`y` clipped to `±(1 - 1e-6)`). Without it
    the action is `u` itself (the environment clips it to its bounds, as Gymnasium's do).
    `entropy` is the Gaussian's, `Σ (log σ + ½ log 2πe)` (with `squash`: of `u`,
    before the squashing; the squashed entropy has no closed form).
    """

    dim: int
    squash: bool = False
    low: float = -1.0
    high: float = 1.0
    min_log_std: float = -20.0
    max_log_std: float = 2.0

    @property
    def n_params(self) -> int:
        return 2 * self.dim

    def split(self, logits: jax.Array) -> tuple[jax.Array, jax.Array]:
        """`(mean, log_std)`, each `(..., dim)`."""
        mean, log_std = logits[..., : self.dim], logits[..., self.dim :]
        return mean, jnp.clip(log_std, self.min_log_std, self.max_log_std)

    def _to_action(self, u: jax.Array) -> jax.Array:
        if not self.squash:
            return u
        return self.low + (jnp.tanh(u) + 1.0) * (0.5 * (self.high - self.low))

    def sample(self, key: jax.Array, logits: jax.Array) -> jax.Array:
        mean, log_std = self.split(logits)
        u = mean + jnp.exp(log_std) * jax.random.normal(key, mean.shape, mean.dtype)
        return self._to_action(u)

    def log_prob(self, logits: jax.Array, action: jax.Array) -> jax.Array:
        mean, log_std = self.split(logits)
        if self.squash:
            half = 0.5 * (self.high - self.low)
            y = jnp.clip((action - self.low) / half - 1.0, -1.0 + 1e-6, 1.0 - 1e-6)
            u = jnp.arctanh(y)
            # log(1 - tanh(u)^2), written stably: 2 (log 2 - u - softplus(-2u))
            log_det = 2.0 * (np.log(2.0) - u - jax.nn.softplus(-2.0 * u)) + np.log(half)
        else:
            u, log_det = action, 0.0
        z = (u - mean) * jnp.exp(-log_std)
        return jnp.sum(-0.5 * z**2 - log_std - 0.5 * LOG_2PI - log_det, axis=-1)

    def entropy(self, logits: jax.Array) -> jax.Array:
        _, log_std = self.split(logits)
        return jnp.sum(log_std + 0.5 * (LOG_2PI + 1.0), axis=-1)

    def mode(self, logits: jax.Array) -> jax.Array:
        return self._to_action(self.split(logits)[0])

    def kl(self, logits_p: jax.Array, logits_q: jax.Array) -> jax.Array:
        """`KL(p || q)` of the Gaussians (of `u`: squashing does not change it)."""
        mp, lp = self.split(logits_p)
        mq, lq = self.split(logits_q)
        var_ratio = jnp.exp(2 * (lp - lq))
        return jnp.sum(lq - lp + 0.5 * (var_ratio + ((mp - mq) * jnp.exp(-lq)) ** 2 - 1), -1)


@dataclasses.dataclass(frozen=True)
class Deterministic:
    """A deterministic policy's "distribution": the parameters are the action itself
    (DDPG / TD3 actors; exploration noise is added by the learner, not sampled here)."""

    def sample(self, key: jax.Array, logits: jax.Array) -> jax.Array:
        del key
        return logits

    def log_prob(self, logits: jax.Array, action: jax.Array) -> jax.Array:
        return jnp.zeros(logits.shape[:-1], logits.dtype)

    def entropy(self, logits: jax.Array) -> jax.Array:
        return jnp.zeros(logits.shape[:-1], logits.dtype)

    def mode(self, logits: jax.Array) -> jax.Array:
        return logits


CATEGORICAL = Categorical()
DETERMINISTIC = Deterministic()

Distribution = Categorical | MultiCategorical | DiagGaussian | Deterministic


def for_space(space: Any, squash: bool = False) -> Distribution:
    """The action distribution of a `Discrete`, `MultiDiscrete` or float `Box` space
    (a diagonal Gaussian over its elements; `squash`: tanh onto the box's bounds)."""
    nvec = getattr(space, "nvec", None)
    if nvec is not None:
        return MultiCategorical(tuple(int(n) for n in np.asarray(nvec).reshape(-1)))
    if hasattr(space, "low") and jnp.issubdtype(space.dtype, jnp.floating):
        dim = int(np.prod(space.shape))
        return DiagGaussian(dim, squash, float(space.low), float(space.high))
    return CATEGORICAL
