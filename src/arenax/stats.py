"""Small statistics of evaluation tables: intervals of means and rates, and the CVaR of
per-level success rates (robustness)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any

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
    """Mean and its 95% interval: Wilson's for 0/1 outcomes (a rate), else the normal
    approximation cut to the range of the values (a mean cannot leave it: no negative
    bound for non-negative returns)."""
    x = np.asarray(x, np.float64)
    m = float(np.mean(x))
    if len(x) < 2:
        return m, m, m
    if np.all((x == 0.0) | (x == 1.0)):
        lo, hi = wilson(int(x.sum()), len(x), z)
        return m, lo, hi
    half = z * float(np.std(x, ddof=1)) / math.sqrt(len(x))
    return m, max(m - half, float(x.min())), min(m + half, float(x.max()))


def cvar(values: np.ndarray, alpha: float) -> float:
    """Conditional value at risk: the mean of the worst `ceil(alpha · n)` values (the
    lowest success rates). `alpha = 1` is the plain mean."""
    x = np.sort(np.asarray(values, np.float64))
    if x.size == 0 or not 0.0 < alpha <= 1.0:
        raise ValueError(f"cvar: alpha={alpha} must be in (0, 1] and values non-empty")
    return float(x[: max(1, math.ceil(alpha * x.size))].mean())


@dataclasses.dataclass(frozen=True)
class Robustness:
    """Success rates over a batch of sampled levels: the mean, and the CVaR at `alpha`
    (mean success of the worst `alpha` fraction of levels) with a 95% bootstrap interval
    over those levels. As the SFL paper measures it (`two_pass_robustness`), one
    evaluation chooses the worst levels and a second, independent one measures them;
    `cvar_same` is the first evaluation's figure for them (biased low: the levels were
    chosen for failing in those very episodes)."""

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
    cvar_same: float = math.nan
    """The worst levels' success in the episodes that chose them (the biased estimate)."""
    solvable_only: bool = False
    """The levels were filtered to solvable ones before the evaluation."""


def rate_robustness(
    wins: np.ndarray, alpha: float, key: jax.Array, opponent: str = ""
) -> Robustness:
    """`Robustness` of per-episode successes `wins (n_levels, episodes)`; the
    bootstrap (1000 resamples of the levels) draws from `key`."""
    n_levels, episodes = wins.shape
    rate = np.asarray(wins, np.float64).mean(axis=1)
    rng = np.random.default_rng(int(jax.random.randint(key, (), 0, 2**31 - 1)))
    boot = [cvar(rate[rng.integers(0, n_levels, n_levels)], alpha) for _ in range(1000)]
    lo, hi = np.percentile(boot, [2.5, 97.5])
    return Robustness(
        n_levels,
        episodes,
        alpha,
        float(rate.mean()),
        cvar(rate, alpha),
        float(lo),
        float(hi),
        float(np.mean(rate == 0.0)),
        opponent,
    )


def two_pass_robustness(
    wins_of: Callable[[np.ndarray, jax.Array], np.ndarray],
    n_levels: int,
    alpha: float,
    key: jax.Array,
    opponent: str = "",
    solvable_only: bool = False,
) -> Robustness:
    """`Robustness` as the SFL paper measures it (Rutherford et al. 2024): every level
    is played once to rank the levels, the worst `ceil(alpha · n)` (lowest success rate;
    ties: the lower index) are played again with independent episodes, and the CVaR is
    their success rate in that second evaluation.

    Args:
        wins_of: `(level indices (k,), key) -> per-episode successes (k, episodes)`.
        n_levels: levels of the first evaluation.
        alpha: the worst fraction, in `(0, 1]`.
        key: the two evaluations' and the bootstrap's randomness.
    """
    if not 0.0 < alpha <= 1.0:
        raise ValueError(f"cvar: alpha={alpha} must be in (0, 1]")
    k_first, k_second, k_boot = jax.random.split(key, 3)
    first = np.asarray(wins_of(np.arange(n_levels), k_first), np.float64)
    rate = first.mean(axis=1)
    worst = np.argsort(rate, kind="stable")[: max(1, math.ceil(alpha * n_levels))]
    again = np.asarray(wins_of(worst, k_second), np.float64).mean(axis=1)
    rng = np.random.default_rng(int(jax.random.randint(k_boot, (), 0, 2**31 - 1)))
    boot = [again[rng.integers(0, again.size, again.size)].mean() for _ in range(1000)]
    lo, hi = np.percentile(boot, [2.5, 97.5])
    return Robustness(
        n_levels,
        first.shape[1],
        alpha,
        float(rate.mean()),
        float(again.mean()),
        float(lo),
        float(hi),
        float(np.mean(rate == 0.0)),
        opponent,
        float(rate[worst].mean()),
        solvable_only,
    )


def draw_levels(
    generator: Callable[[jax.Array], Any],
    n: int,
    key: jax.Array,
    keep: Callable[[Any], jax.Array] | None = None,
    max_rounds: int = 64,
) -> Any:
    """`n` levels of `generator` as NumPy arrays (leaves `(n, ...)`, on the host, where
    evaluations index them); with `keep` (`level -> () bool`), only levels it accepts,
    drawn in rounds of `2 n` until `n` are found."""
    # compiled once for all rounds: op by op, each of the generator's primitives would
    # compile on its own
    generate = jax.jit(jax.vmap(generator))
    if keep is None:
        return jax.device_get(generate(jax.random.split(key, n)))
    accepted = jax.jit(jax.vmap(keep))
    found: list[Any] = []
    count = 0
    for i in range(max_rounds):
        batch = generate(jax.random.split(jax.random.fold_in(key, i), 2 * n))
        ok = np.flatnonzero(np.asarray(accepted(batch)))
        found.append(jax.tree.map(lambda x, ok=ok: x[ok], jax.device_get(batch)))
        count += ok.size
        if count >= n:
            return jax.tree.map(lambda *x: np.concatenate(x)[:n], *found)
    raise ValueError(
        f"only {count} of {2 * n * max_rounds} generated levels were accepted: the generator "
        "rarely makes solvable levels (evaluate with --no-cvar-solvable)"
    )
