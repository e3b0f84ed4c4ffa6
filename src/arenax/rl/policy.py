"""The policy contract the rollout and the learners use.

A policy is a static, hashable object (a frozen dataclass of its network's options) whose
parameters live outside it. Sequences are time-major: `(T, B, ...)` with `B` sequences
(environments, or environments x agents). The recurrent carry is reset to the initial
carry wherever `first` is True; feed-forward policies carry `()` and ignore `first`.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import jax

from arenax.distributions import Distribution


@runtime_checkable
class Policy(Protocol):
    """What `arenax.rl` needs of a network (`arenax.nn` implements it)."""

    @property
    def dist(self) -> Distribution:
        """The action distribution of the logits."""
        ...

    def init(self, key: jax.Array, obs: Any) -> Any:
        """Parameters from an example observation with leading `(T, B)` axes."""
        ...

    def initial_carry(self, batch: int) -> Any:
        """The carry of `batch` sequences at an episode start."""
        ...

    def apply(
        self, params: Any, obs: Any, first: jax.Array, carry: Any
    ) -> tuple[Any, jax.Array, jax.Array]:
        """`(carry, logits (T, B, n_logits), value (T, B))` for `obs (T, B, ...)` and
        `first (T, B) bool`."""
        ...
