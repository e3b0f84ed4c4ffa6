"""A cross-play round robin read by method: the statistics population play is reported
with (Agarwal et al. 2021's, over seeds), from the matchups of `arenax eval RUN
--cross-play` (`arenax.envs.tag.evaluation.round_robin`).

The round robin plays every run's taggers against every run's runners on each arena; a
method is a group of runs (its seeds). Here:

- `method_matrix`: method A's taggers against method B's runners, P(tag) averaged over
  A's and B's seeds and the arenas, with a 95% interval from a bootstrap that resamples
  A's seeds and B's seeds independently (the seeds are the random draws; the arenas are
  fixed);
- `method_scores`: each run's scores against a fixed pool — every run's runners (or
  taggers) on every arena, so every method is scored on the same tasks — as an `(R, T)`
  matrix per method (`R` seeds, `T` = pool runs × arenas): P(tag) as taggers, 1 − P(tag)
  as runners. The pool includes each run's own partner (its other team, trained with it)
  and its own method's other seeds: a method is partly scored against itself;
- `summary`: per method the mean and the IQM with 95% stratified-bootstrap intervals, and
  the worst case over co-players and arenas (each run's lowest task, one opponent run on
  one arena, averaged over the method's runs); `improvement`: the probability of
  improvement between methods.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any, Literal

import numpy as np

from arenax.eval import aggregate as A

Side = Literal["taggers", "runners"]


def method_of(member: str) -> str:
    """A round robin member's method: the run folder of a seed (`RUN/seed<s>` -> `RUN`),
    else the member itself."""
    head, _, tail = member.rpartition("/")
    return head if head and tail.startswith("seed") else member


@dataclasses.dataclass(frozen=True)
class MethodCell:
    """Method `taggers`' taggers against method `runners`' runners: P(tag) over their
    seeds and the arenas, 95% interval over the seeds (`crossplay_heatmap` draws these)."""

    taggers: str
    runners: str
    p_tag: float
    p_tag_lo: float
    p_tag_hi: float


@dataclasses.dataclass(frozen=True)
class MethodSummary:
    """One method on one side against the pool: `(point, lo, hi)` each (`worst`: each
    run's lowest task, averaged over the runs)."""

    method: str
    side: Side
    runs: int
    mean: tuple[float, float, float]
    iqm: tuple[float, float, float]
    worst: tuple[float, float, float]


def _grid(rows: Sequence[Any]) -> tuple[list[str], list[str], np.ndarray]:
    """`(members, arenas, P)`: `P[a, b, j]` the P(tag) of member a's taggers against
    member b's runners on arena j (`rows`: `MatchResult`s or dicts with `taggers`,
    `runners`, `arena`, `any_tag`). Every pair must have played every arena."""
    get = (lambda r, k: r[k]) if rows and isinstance(rows[0], dict) else getattr
    members = sorted({get(r, "taggers") for r in rows} | {get(r, "runners") for r in rows})
    arenas = list(dict.fromkeys(get(r, "arena") for r in rows))
    at = {m: i for i, m in enumerate(members)}
    p = np.full((len(members), len(members), len(arenas)), np.nan)
    for r in rows:
        j = arenas.index(get(r, "arena"))
        p[at[get(r, "taggers")], at[get(r, "runners")], j] = float(get(r, "any_tag"))
    if np.isnan(p).any():
        a, b, j = np.argwhere(np.isnan(p))[0]
        raise ValueError(
            f"round robin incomplete: {members[a]} taggers vs {members[b]} runners on "
            f"{arenas[j]} is missing"
        )
    return members, arenas, p


def _methods(members: list[str], of: Callable[[str], str]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for i, m in enumerate(members):
        out.setdefault(of(m), []).append(i)
    return out


def method_matrix(
    rows: Sequence[Any], of: Callable[[str], str] = method_of, reps: int = 2000, seed: int = 0
) -> list[MethodCell]:
    """Every method's taggers against every method's runners (see the module docstring),
    methods in order of first appearance among the sorted members."""
    members, _, p = _grid(rows)
    groups = _methods(members, of)
    per_pair = p.mean(axis=2)  # (members, members): each pair over the arenas
    rng = np.random.default_rng(seed)
    cells = []
    for ta, ia in groups.items():
        for rb, ib in groups.items():
            block = per_pair[np.ix_(ia, ib)]  # (seeds of A, seeds of B)
            ra = rng.integers(0, len(ia), size=(reps, len(ia)))
            rb_ = rng.integers(0, len(ib), size=(reps, len(ib)))
            boot = block[ra[:, :, None], rb_[:, None, :]].mean(axis=(1, 2))
            lo, hi = np.percentile(boot, [2.5, 97.5])
            cells.append(MethodCell(ta, rb, float(block.mean()), float(lo), float(hi)))
    return cells


def method_scores(
    rows: Sequence[Any], side: Side, of: Callable[[str], str] = method_of
) -> dict[str, np.ndarray]:
    """Each method's `(R, T)` scores against the pool (every run of the round robin on
    the other side, on every arena; tasks ordered pool-member-major): P(tag) for its
    taggers, 1 − P(tag) for its runners."""
    members, _, p = _grid(rows)
    if side == "runners":
        p = 1.0 - p.transpose(1, 0, 2)  # [runner member, tagger member, arena]
    return {m: p[idx].reshape(len(idx), -1) for m, idx in _methods(members, of).items()}


def summary(
    rows: Sequence[Any],
    side: Side,
    of: Callable[[str], str] = method_of,
    reps: int = 2000,
    seed: int = 0,
) -> list[MethodSummary]:
    """Per method on `side`: the mean and the IQM against the pool with their 95%
    stratified-bootstrap intervals over the method's seeds, and the worst case — each
    run's lowest task, averaged over the runs, its interval from resampling the runs (a
    statistic of the min over noisy tasks would fall below its own point estimate in a
    stratified bootstrap)."""

    out = []
    for m, s in method_scores(rows, side, of).items():
        out.append(MethodSummary(
            m, side, s.shape[0], A.interval(s, A.mean, reps, seed), A.interval(s, A.iqm, reps, seed),
            A.runs_interval(np.min(s, axis=1), reps, seed),
        ))  # fmt: skip
    return out


def improvement(
    rows: Sequence[Any],
    side: Side,
    of: Callable[[str], str] = method_of,
    reps: int = 2000,
    seed: int = 0,
) -> dict[tuple[str, str], tuple[float, float, float]]:
    """P(X > Y) on `side` against the pool for every ordered pair of methods (a run of X
    scores above a run of Y on a task, averaged over the tasks), with its 95% interval."""
    scores = method_scores(rows, side, of)
    return {
        (x, y): A.improvement_interval(scores[x], scores[y], reps, seed)
        for x in scores
        for y in scores
        if x != y
    }
