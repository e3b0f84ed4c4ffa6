"""Level scores (regret estimates) from a rollout in which each env replays one level, and
their registry: a score is one function of the rollout (`ScoreInputs -> (N,)`), registered
by name (`register_score`), and the replay curricula's `score` option chooses it.

All scores are per level (per env), averaged over the episodes that *ended* during the
rollout; the incomplete trailing episode is ignored. A level with no ended episode scores
`-inf` (never inserted into a buffer). With a `mask` (many-agent games: 1 where the
agent acted), only the steps an agent acted count: the stretch after an agent left the game
(a tagged runner) until the env's episode ends is not an episode of that agent.

The built-in scores:

* `pvl`  positive value loss: per episode, mean over its steps of `max(A_t, 0)` (GAE).
* `l1_vl` L1 value loss: per episode, mean of `|A_t|`.
* `max_mc` MaxMC: per episode, mean of `R_max - V(s_t)` where `R_max` is the level's
  best episodic return so far (the buffer's running best, updated with this rollout's
  returns; never decreasing).
* `oracle_regret`: optimal return (from the family's shortest path) minus the mean
  return of the ended episodes.
* `learnability`: `p (1 - p)`, `p` the share of the ended episodes the team won (the
  family's `team_success`; SFL's criterion, here as a replay score).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from arenax.options import Registered
from arenax.utils import gathers_are_cheap


def episode_ids(done: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Episode index of every step and whether that episode ended inside the rollout.

    `done (T, N) bool` -> `(ids (T, N) int32, complete (T, N) bool)`.
    """
    ended_before = jnp.cumsum(done, axis=0) - done  # dones strictly before t
    ids = ended_before.astype(jnp.int32)
    complete = ids < jnp.sum(done, axis=0)[None]
    return ids, complete


def _running_episode_sums(xs: tuple[jax.Array, ...], done: jax.Array) -> tuple[jax.Array, ...]:
    """Each of `xs`, arrays `(T, N)`, summed along `T` from each episode's first step to
    every step of it (the sum restarts after each `done (T, N)`): segmented prefix sums,
    `(T, N)` each, in `log2(T)` elementwise passes of one `lax.associative_scan`."""
    starts = jnp.concatenate([jnp.ones_like(done[:1]), done[:-1]], axis=0)

    def combine(a: tuple[jax.Array, ...], b: tuple[jax.Array, ...]) -> tuple[jax.Array, ...]:
        *sums_a, start_a = a
        *sums_b, start_b = b
        sums = (jnp.where(start_b, sb, sa + sb) for sa, sb in zip(sums_a, sums_b, strict=True))
        return (*sums, start_a | start_b)

    *sums, _ = jax.lax.associative_scan(combine, (*xs, starts), axis=0)
    return tuple(sums)


def _episode_sums(
    values: jax.Array, done: jax.Array, mask: jax.Array | None = None
) -> tuple[jax.Array, jax.Array]:
    """The sum of `values (T, N)` over the acting steps (`mask (T, N)`, default all) of
    every *ended* episode and their counts: `(sums, counts)`, both `(T, N)`, one row per
    episode and zero rows besides (an episode without an acting step has count 0).

    On the CPU row `k` of env `n` is its `k`-th episode (a scatter-add by episode index);
    off it the row of the step the episode ended at (a segmented prefix sum read where
    `done`): a scatter with a per-element index runs one element after another on a TPU.
    The callers reduce over the rows, so either layout gives their results (the sums in
    another order: the last bits may differ)."""
    if not gathers_are_cheap():
        acting = jnp.ones(values.shape, bool) if mask is None else mask > 0
        sums, counts = _running_episode_sums(
            (jnp.where(acting, values, 0.0), acting.astype(jnp.float32)), done
        )
        return jnp.where(done, sums, 0.0), jnp.where(done, counts, 0.0)
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


@dataclasses.dataclass(frozen=True)
class ScoreInputs:
    """What a level score reads of a rollout in which each env replays one level: one
    column per agent sequence (`N`: the levels' agents, env-major).

    Attributes:
        rewards: `(T, N) float32`.
        values: `(T, N) float32` value estimates.
        advantages: `(T, N) float32` (from GAE).
        done: `(T, N) bool`, the steps that end an episode.
        mask: `(T, N)`, 1 where the agent acted (`None`: every step).
        best: `(N,)` best episodic return of the level so far, this rollout's included
            (MaxMC's reference; `-inf` where none ended).
        mean_return: `(N,)` mean return of the episodes that ended (`-inf`: none).
        success: `(T, N)` in [0, 1], the team's outcome of the episodes ending at each
            step (scores registered with `success=True`; else `None`).
        level: `{part: (N,)}` the values of the family parts the score needs (e.g.
            `optimal_return`), per level.
    """

    rewards: jax.Array
    values: jax.Array
    advantages: jax.Array
    done: jax.Array
    mask: jax.Array | None
    best: jax.Array
    mean_return: jax.Array
    success: jax.Array | None = None
    level: dict[str, jax.Array] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class LevelScore:
    """A registered level score.

    Attributes:
        name: its name (the `score` option's value).
        fn: `ScoreInputs -> (N,) float32`, `-inf` for a level with no ended episode.
        needs: family parts, each `env -> (level -> ())`, whose values per level the
            score reads in `ScoreInputs.level` (`oracle_regret`: `optimal_return`).
        success: reads the team's episode outcomes (`ScoreInputs.success`).
        combines_teams: the mean of several teams' scores of a level means something
            (`score_team="both"`); MaxMC keeps one best return per level: no.
        summary: one line for `arenax list`.
    """

    name: str
    fn: Callable[[ScoreInputs], jax.Array]
    needs: tuple[str, ...] = ()
    success: bool = False
    combines_teams: bool = True
    summary: str = ""


#: every registered level score, by name
SCORES: dict[str, LevelScore] = {}
#: the rule of a `score` option: a registered score's name
SCORE_NAME = Registered(lambda: SCORES)


def register_score(
    name: str,
    fn: Callable[[ScoreInputs], jax.Array],
    *,
    needs: tuple[str, ...] = (),
    success: bool = False,
    combines_teams: bool = True,
    summary: str = "",
    overwrite: bool = False,
) -> LevelScore:
    """Register the level score `fn(inputs: ScoreInputs) -> (N,)` under `name`; every
    replay curriculum's `score` option (`--plr.score NAME`) can then choose it. Returns
    the record."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"score name {name!r}: must be a non-empty string")
    if name in SCORES and not overwrite:
        raise ValueError(f"score {name!r} is already registered (pass overwrite=True)")
    if not callable(fn):
        raise TypeError(f"register_score({name!r}, ...): the score must be a function")
    record = LevelScore(name, fn, tuple(needs), success, combines_teams, summary)
    SCORES[name] = record
    return record


def level_score(name: str) -> LevelScore:
    """The registered score `name` (a one-line `ValueError` naming the others)."""
    if name not in SCORES:
        raise ValueError(f"score={name!r}: allowed {', '.join(SCORES)}")
    return SCORES[name]


def level_scores(
    kind: str,
    rewards: jax.Array,
    values: jax.Array,
    advantages: jax.Array,
    done: jax.Array,
    max_returns: jax.Array | None = None,
    optimal_returns: jax.Array | None = None,
    mask: jax.Array | None = None,
    success: jax.Array | None = None,
    level: dict[str, jax.Array] | None = None,
) -> tuple[jax.Array, jax.Array]:
    """Score of each env's level by the registered score `kind`.

    Args:
        kind: a registered score's name (`SCORES`).
        rewards: `(T, N) float32`.
        values: `(T, N) float32` value estimates.
        advantages: `(T, N) float32` (from GAE).
        done: `(T, N) bool`.
        max_returns: `(N,)` running best returns of the levels (`-inf` for new levels).
        optimal_returns: `(N,)` optimal returns (`oracle_regret` only; the same as
            `level={"optimal_return": ...}`).
        mask: `(T, N)`, 1 where the agent acted (default: every step).
        success: `(T, N)` the outcomes of the episodes ending at each step (scores that
            read them).
        level: `{part: (N,)}` per-level values of the family parts the score needs.

    Returns:
        `(scores (N,), best returns (N,))`; the best returns include this rollout's.
    """
    score = level_score(kind)
    mean_ret, best_ret = episode_returns(rewards, done, mask)
    prev = jnp.full_like(best_ret, -jnp.inf) if max_returns is None else max_returns
    best = jnp.maximum(prev, best_ret)
    parts = dict(level or {})
    if optimal_returns is not None:
        parts["optimal_return"] = optimal_returns
    missing = [p for p in score.needs if p not in parts]
    if missing:
        raise ValueError(f"{kind} needs the levels' {', '.join(missing)}")
    if score.success and success is None:
        raise ValueError(f"{kind} needs the episodes' outcomes (success)")
    inputs = ScoreInputs(rewards, values, advantages, done, mask, best, mean_ret, success, parts)
    check_score(score)
    return _call(score, inputs), best


def _call(score: LevelScore, inputs: ScoreInputs) -> jax.Array:
    """`score.fn(inputs)`, its signature and result's shape checked (one-line errors
    naming the score)."""
    n = inputs.rewards.shape[1]
    try:
        out = score.fn(inputs)
    except TypeError as exc:
        raise TypeError(
            f"score {score.name!r}: calling it failed ({exc}); a score is "
            "fn(inputs: arenax.curricula.ScoreInputs) -> (N,) float"
        ) from exc
    if jnp.shape(out) != (n,):
        raise ValueError(
            f"score {score.name!r} returned shape {jnp.shape(out)} for {n} levels; a score "
            f"returns one number per level: ({n},)"
        )
    return jnp.asarray(out, jnp.float32)


_CHECKED: set[int] = set()


def check_score(score: LevelScore) -> None:
    """On a score's first use, run it once on a small made-up rollout (8 steps of 4
    levels, each with an ended episode; every part it needs at 1, outcomes alternating)
    and refuse, naming it, a score that returns NaN there, or +inf: a NaN score never
    ranks a level, so a replay curriculum silently never replays (one such run made 0
    updates). `-inf` (not scored) is allowed."""
    if id(score) in _CHECKED:
        return
    rng = np.random.default_rng(0)
    t, n = 8, 4
    with jax.ensure_compile_time_eval():
        rewards = jnp.asarray(rng.uniform(0, 1, (t, n)), jnp.float32)
        done = jnp.asarray(np.arange(t)[:, None] % 3 == (np.arange(n)[None, :] % 3))
        mean_ret, best_ret = episode_returns(rewards, done, None)
        inputs = ScoreInputs(
            rewards=rewards,
            values=jnp.asarray(rng.normal(0, 1, (t, n)), jnp.float32),
            advantages=jnp.asarray(rng.normal(0, 1, (t, n)), jnp.float32),
            done=done,
            mask=None,
            best=best_ret,
            mean_return=mean_ret,
            success=jnp.asarray(np.arange(t * n).reshape(t, n) % 2, jnp.float32)
            if score.success
            else None,
            level={part: jnp.ones((n,), jnp.float32) for part in score.needs},
        )
        out = np.asarray(_call(score, inputs))
    if np.isnan(out).any() or np.isposinf(out).any():
        raise ValueError(
            f"score {score.name!r} returned {out.tolist()} on a made-up rollout of {n} levels "
            "that each ended an episode: a score is a finite number per level (higher: "
            "replay sooner), -inf for a level with no ended episode"
        )
    _CHECKED.add(id(score))


def _pvl(x: ScoreInputs) -> jax.Array:
    return per_episode_mean(jnp.maximum(x.advantages, 0.0), x.done, x.mask)


def _l1_vl(x: ScoreInputs) -> jax.Array:
    return per_episode_mean(jnp.abs(x.advantages), x.done, x.mask)


def _max_mc(x: ScoreInputs) -> jax.Array:
    return per_episode_mean(x.best[None] - x.values, x.done, x.mask)


def _oracle_regret(x: ScoreInputs) -> jax.Array:
    ok = jnp.isfinite(x.mean_return)
    return jnp.where(ok, x.level["optimal_return"] - x.mean_return, -jnp.inf)


def _learnability(x: ScoreInputs) -> jax.Array:
    ended = x.done if x.mask is None else x.done & (x.mask > 0)
    n = jnp.sum(ended, axis=0)
    p = jnp.sum(jnp.where(ended, x.success, 0.0), axis=0) / jnp.maximum(n, 1)
    return jnp.where(n > 0, p * (1.0 - p), -jnp.inf)


register_score("max_mc", _max_mc, combines_teams=False,
               summary="MaxMC: the level's best return so far minus the value, per step")  # fmt: skip
register_score("pvl", _pvl, summary="positive value loss: mean of max(GAE, 0)")
register_score("l1_vl", _l1_vl, summary="L1 value loss: mean of |GAE|")
register_score("oracle_regret", _oracle_regret, needs=("optimal_return",),
               summary="the optimal return (the family's) minus the mean return")  # fmt: skip
register_score("learnability", _learnability, success=True,
               summary="p (1 - p), p the share of episodes won (SFL's criterion)")  # fmt: skip


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
