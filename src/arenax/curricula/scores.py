"""Level scores (regret estimates) from a rollout in which each env replays one level.

All scores are per level (per env), averaged over the episodes that *ended* during the
rollout; the incomplete trailing episode is ignored. A level with no ended episode scores
`-inf` (never inserted into a buffer). With a `mask` (many-agent games: 1 where the
agent acted), only the steps an agent acted count: the stretch after an agent left the game
(a tagged runner) until the env's episode ends is not an episode of that agent.

* `pvl`  positive value loss: per episode, mean over its steps of `max(A_t, 0)` (GAE).
* `l1_vl` L1 value loss: per episode, mean of `|A_t|`.
* `max_mc` MaxMC: per episode, mean of `R_max - V(s_t)` where `R_max` is the level's
  best episodic return so far (the buffer's running best, updated with this rollout's
  returns; never decreasing).
* `oracle_regret`: optimal return (from the family's shortest path) minus the mean
  return of the ended episodes.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

SCORES = ("max_mc", "pvl", "l1_vl", "oracle_regret")


def episode_ids(done: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Episode index of every step and whether that episode ended inside the rollout.

    `done (T, N) bool` -> `(ids (T, N) int32, complete (T, N) bool)`.
    """
    ended_before = jnp.cumsum(done, axis=0) - done  # dones strictly before t
    ids = ended_before.astype(jnp.int32)
    complete = ids < jnp.sum(done, axis=0)[None]
    return ids, complete


def _episode_sums(
    values: jax.Array, done: jax.Array, mask: jax.Array | None = None
) -> tuple[jax.Array, jax.Array]:
    """Per env and episode index, the sum of `values (T, N)` over the acting steps
    (`mask (T, N)`, default all) of *ended* episodes and their counts: `(sums, counts)`,
    both `(T, N)` (row = episode); an episode without an acting step has count 0."""
    t, n = values.shape
    ids, complete = episode_ids(done)
    if mask is not None:
        complete = complete & (mask > 0)
    w = complete.astype(jnp.float32)
    cols = jnp.broadcast_to(jnp.arange(n)[None], (t, n))
    sums = jnp.zeros((t, n)).at[ids, cols].add(jnp.where(complete, values, 0.0))
    counts = jnp.zeros((t, n)).at[ids, cols].add(w)
    return sums, counts


def _mean_over_episodes(per_episode: jax.Array, has: jax.Array) -> jax.Array:
    n_eps = jnp.sum(has, axis=0)
    total = jnp.sum(jnp.where(has, per_episode, 0.0), axis=0)
    return jnp.where(n_eps > 0, total / jnp.maximum(n_eps, 1), -jnp.inf)


def per_episode_mean(
    values: jax.Array, done: jax.Array, mask: jax.Array | None = None
) -> jax.Array:
    """Mean over ended episodes of the per-episode mean of `values (T, N)` over their
    acting steps -> `(N,)` (`-inf` where no episode ended)."""
    sums, counts = _episode_sums(values, done, mask)
    has = counts > 0
    return _mean_over_episodes(sums / jnp.maximum(counts, 1.0), has)


def episode_returns(
    rewards: jax.Array, done: jax.Array, mask: jax.Array | None = None
) -> tuple[jax.Array, jax.Array]:
    """`(mean, max)` undiscounted return over ended episodes with an acting step
    (`mask`), `(N,)` each (`-inf` when no episode ended)."""
    rets, counts = _episode_sums(rewards, done, mask)
    has = counts > 0
    return _mean_over_episodes(rets, has), jnp.max(jnp.where(has, rets, -jnp.inf), axis=0)


def finite_mean(x: jax.Array, axis: int, empty: float) -> jax.Array:
    """Mean over `axis` of the finite entries of `x`; `empty` where none is finite."""
    ok = jnp.isfinite(x)
    count = jnp.sum(ok, axis=axis)
    total = jnp.sum(jnp.where(ok, x, 0.0), axis=axis)
    return jnp.where(count > 0, total / jnp.maximum(count, 1), empty)


def team_episode_returns(
    rewards: jax.Array, done: jax.Array, agents: int, mask: jax.Array | None = None
) -> tuple[jax.Array, jax.Array]:
    """Per level, a team's `(mean, best)` undiscounted episode return, `(n,)` each, from
    its agents' `(T, n·agents)` rewards, flags and `mask` (env-major): the mean over the
    agents that ended an episode of their mean returns, and the best of their best returns;
    0 for both when none of them ended an episode."""
    mean, best = episode_returns(rewards, done, mask)
    n = mean.shape[0] // agents
    best = jnp.max(best.reshape(n, agents), axis=1)  # -inf where no agent ended one
    return finite_mean(mean.reshape(n, agents), 1, 0.0), jnp.where(jnp.isfinite(best), best, 0.0)


def level_scores(
    kind: str,
    rewards: jax.Array,
    values: jax.Array,
    advantages: jax.Array,
    done: jax.Array,
    max_returns: jax.Array | None = None,
    optimal_returns: jax.Array | None = None,
    mask: jax.Array | None = None,
) -> tuple[jax.Array, jax.Array]:
    """Score of each env's level.

    Args:
        kind: one of `SCORES`.
        rewards, values, advantages: `(T, N) float32` (advantages from GAE).
        done: `(T, N) bool`.
        max_returns: `(N,)` running best returns of the levels (`-inf` for new levels).
        optimal_returns: `(N,)` optimal returns (`oracle_regret` only).
        mask: `(T, N)`, 1 where the agent acted (default: every step).

    Returns:
        `(scores (N,), best returns (N,))`; the best returns include this rollout's.
    """
    mean_ret, best_ret = episode_returns(rewards, done, mask)
    prev = jnp.full_like(best_ret, -jnp.inf) if max_returns is None else max_returns
    best = jnp.maximum(prev, best_ret)
    if kind == "pvl":
        s = per_episode_mean(jnp.maximum(advantages, 0.0), done, mask)
    elif kind == "l1_vl":
        s = per_episode_mean(jnp.abs(advantages), done, mask)
    elif kind == "max_mc":
        s = per_episode_mean(best[None] - values, done, mask)
    elif kind == "oracle_regret":
        if optimal_returns is None:
            raise ValueError("oracle_regret needs the optimal returns of the levels")
        s = jnp.where(jnp.isfinite(mean_ret), optimal_returns - mean_ret, -jnp.inf)
    else:
        raise ValueError(f"score={kind!r}: allowed {', '.join(SCORES)}")
    return s, best


# ------------------------------------------------------------------ teacher scores
TEACHER_SCORES = ("paired", "mean_relative", "population", "neg_return")


def teacher_score(kind: str, mean_returns: jax.Array, best_returns: jax.Array) -> jax.Array:
    """Regret estimate of each level from its students' returns.

    Args:
        kind: `paired`: antagonist's (student 1) best episodic return − protagonist's
            (student 0) mean return, clipped at 0; `mean_relative`: antagonist's mean −
            protagonist's mean, clipped at 0; `population`: max over students of their best
            return − mean over students of their mean return; `neg_return`: − mean return
            over students (the minimax adversary).
        mean_returns, best_returns: `(S, N)` per student and level, over the episodes that
            ended (use 0 for a student with no ended episode).

    Returns:
        `(N,) float32`.
    """
    if kind == "paired":
        return jnp.maximum(best_returns[1] - mean_returns[0], 0.0)
    if kind == "mean_relative":
        return jnp.maximum(mean_returns[1] - mean_returns[0], 0.0)
    if kind == "population":
        return jnp.max(best_returns, axis=0) - jnp.mean(mean_returns, axis=0)
    if kind == "neg_return":
        return -jnp.mean(mean_returns, axis=0)
    raise ValueError(f"teacher score={kind!r}: allowed {', '.join(TEACHER_SCORES)}")
