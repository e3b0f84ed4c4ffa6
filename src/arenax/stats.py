"""Small statistics of evaluation tables: intervals of means and rates, and the CVaR of
per-level success rates (robustness)."""

from __future__ import annotations

import dataclasses
import math

import jax
import numpy as np


def wilson(successes: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """95% Wilson score interval of a proportion."""
    if n == 0:
        return (math.nan, math.nan)
    p = successes / n
    den = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return (max(0.0, centre - half), min(1.0, centre + half))


def mean_ci(x: np.ndarray, z: float = 1.96) -> tuple[float, float, float]:
    """Mean and its 95% normal-approximation interval."""
    m = float(np.mean(x))
    if len(x) < 2:
        return m, m, m
    half = z * float(np.std(x, ddof=1)) / math.sqrt(len(x))
    return m, m - half, m + half


def cvar(values: np.ndarray, alpha: float) -> float:
    """Conditional value at risk: the mean of the worst ``ceil(alpha · n)`` values (the
    lowest success rates). ``alpha = 1`` is the plain mean."""
    x = np.sort(np.asarray(values, np.float64))
    if x.size == 0 or not 0.0 < alpha <= 1.0:
        raise ValueError(f"cvar: alpha={alpha} must be in (0, 1] and values non-empty")
    return float(x[: max(1, math.ceil(alpha * x.size))].mean())


@dataclasses.dataclass(frozen=True)
class Robustness:
    """Success rates over a batch of sampled levels: the mean, and the CVaR at ``alpha``
    (mean of the worst ``alpha`` fraction of levels) with a 95% bootstrap interval over
    levels."""

    levels: int
    episodes: int
    alpha: float
    mean: float
    cvar: float
    cvar_lo: float
    cvar_hi: float
    unsolved: float
    """Fraction of levels never solved in any episode."""
    opponent: str = ""
    """Many-agent games: the driver of the opposing team (success: the evaluated team's)."""


def rate_robustness(
    wins: np.ndarray, alpha: float, key: jax.Array, opponent: str = ""
) -> Robustness:
    """:class:`Robustness` of per-episode successes ``wins (n_levels, episodes)``; the
    bootstrap (1000 resamples of the levels) draws from ``key``."""
    n_levels, episodes = wins.shape
    rate = np.asarray(wins, np.float64).mean(axis=1)
    rng = np.random.default_rng(int(jax.random.randint(key, (), 0, 2**31 - 1)))
    boot = [cvar(rate[rng.integers(0, n_levels, n_levels)], alpha) for _ in range(1000)]
    lo, hi = np.percentile(boot, [2.5, 97.5])
    return Robustness(n_levels, episodes, alpha, float(rate.mean()), cvar(rate, alpha),
                      float(lo), float(hi), float(np.mean(rate == 0.0)), opponent)  # fmt: skip
