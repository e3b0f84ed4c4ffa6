"""The level buffer of PLR / robust PLR / ACCEL: pure functions over a pytree.

Replay distribution over the *filled* entries (Jiang et al., "Prioritized Level Replay"):

    P = (1 - rho) * P_S + rho * P_C
    P_S(i) = h(S_i)^(1/beta) / sum_j h(S_j)^(1/beta)     score prioritisation
        rank:         h(S_i) = 1 / rank(S_i)   (rank 1 = highest score)
        proportional: h(S_i) = S_i             (scores clipped at 0)
        topk:         uniform over the k highest scores
    P_C(i) = (c - C_i) / sum_j (c - C_j)                 staleness
             c: the buffer clock, C_i: clock when entry i was last sampled or scored

`P_S` falls back to uniform over the filled entries when all its weights are zero, `P_C`
to `P_S` when no filled entry is stale (every one just seen: the reference library's rule).
Sampling a batch advances the clock by the batch size and stamps the sampled entries;
each inserted level advances it by one (unless `tick=False`: the reference library ages
levels by replay draws only).

Insertion (`insert`): levels with a non-finite score (no finished episode) are never
inserted; a level equal to one already in the buffer updates that entry instead of adding a
copy; a level equal to an earlier one of the same batch that has a score is ignored (the
first scored copy counts, as the reference library's first copy; rescoring a slot sampled
twice keeps its first scored copy's too, on every backend); otherwise the level takes a free slot, or, when the buffer is full, replaces the entry of
lowest replay probability if its score is at least that entry's. An inserted level is
"just seen" (staleness 0), or inherits the staleness of the slot it takes
(`inherit_staleness`, the reference library's rule).

Equality compares every field of two levels, or every field but those named in `ignore`
(the reference library ignores the maze agent's direction).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from arenax.struct import pytree_dataclass
from arenax.utils import gathers_are_cheap

PRIORITIZATIONS = ("rank", "proportional", "topk")


@pytree_dataclass
class LevelBuffer:
    """A fixed-capacity buffer of `C` levels.

    Attributes:
        levels: level pytree, leaves `(C, ...)`.
        scores: `(C,) float32` regret estimates.
        last_seen: `(C,) int32` clock value when the entry was last sampled or scored.
        max_returns: `(C,) float32` best episodic return seen on the level (MaxMC).
        mutations: `(C,) int32` edits since the level's generated ancestor (ACCEL).
        parents: `(C,) int32` slot of the parent when inserted as a child, else `-1`.
        filled: `(C,) bool`.
        clock: `() int32`, levels sampled or scored so far.
    """

    levels: Any
    scores: jax.Array
    last_seen: jax.Array
    max_returns: jax.Array
    mutations: jax.Array
    parents: jax.Array
    filled: jax.Array
    clock: jax.Array

    @property
    def capacity(self) -> int:
        return self.scores.shape[0]


def create(example_level: Any, capacity: int) -> LevelBuffer:
    """An empty buffer shaped after one level (explicit dtypes: no weak types)."""
    levels = jax.tree.map(
        lambda x: jnp.zeros((capacity, *jnp.shape(x)), jnp.asarray(x).dtype), example_level
    )
    return LevelBuffer(
        levels=levels,
        scores=jnp.zeros((capacity,), jnp.float32),
        last_seen=jnp.zeros((capacity,), jnp.int32),
        max_returns=jnp.full((capacity,), -jnp.inf, jnp.float32),
        mutations=jnp.zeros((capacity,), jnp.int32),
        parents=jnp.full((capacity,), -1, jnp.int32),
        filled=jnp.zeros((capacity,), jnp.bool_),
        clock=jnp.zeros((), jnp.int32),
    )


def fill_ratio(buf: LevelBuffer) -> jax.Array:
    return jnp.mean(buf.filled.astype(jnp.float32))


def _normalise(w: jax.Array, filled: jax.Array) -> jax.Array:
    w = jnp.where(filled, w, 0.0)
    total = jnp.sum(w)
    uniform = filled.astype(jnp.float32) / jnp.maximum(jnp.sum(filled), 1)
    return jnp.where(total > 0, w / jnp.where(total > 0, total, 1.0), uniform)


def _ranked(buf: LevelBuffer) -> jax.Array:
    """The values the rank prioritisation orders: `(C,) float32`, the scores of filled
    slots and `-inf` for empty ones."""
    return jnp.where(buf.filled, buf.scores, -jnp.inf)


def score_ranks(buf: LevelBuffer) -> jax.Array:
    """`(C,) int32` ranks `1 … C`: 1 is the highest score, ties in slot order, empty slots
    after the filled ones (a stable sort of the negated scores; a NaN score last)."""
    s = _ranked(buf)
    order = jnp.argsort(-s, stable=True)  # highest score first
    if not gathers_are_cheap():
        # the inverse permutation by a second sort: a scatter of C indices runs one after
        # another on a TPU, a sort does not (the same ranks)
        return jnp.argsort(order).astype(order.dtype) + 1
    return jnp.empty_like(order).at[order].set(jnp.arange(1, s.shape[0] + 1, dtype=order.dtype))


def _comes_before(a: jax.Array, i: jax.Array, b: jax.Array, j: jax.Array) -> jax.Array:
    """Whether value `a` of slot `i` is ranked before value `b` of slot `j` in
    `score_ranks`' order (higher first, NaN last, ties and NaNs in slot order)."""
    nan_a, nan_b = jnp.isnan(a), jnp.isnan(b)
    tie = (a == b) | (nan_a & nan_b)
    return ((a > b) & ~nan_b) | (~nan_a & nan_b) | (tie & (i < j))


def rerank(ranks: jax.Array, values: jax.Array, slot: jax.Array, new: jax.Array) -> jax.Array:
    """`score_ranks`' ranks `(C,) int32` of the ranked `values (C,)` after
    `values[slot]` becomes `new`, in `O(C)` rather than a sort: every other slot moves by
    whether `slot` came before it then and does now, and `slot`'s rank is one more than
    the count of slots before it."""
    c = values.shape[0]
    j = jnp.arange(c, dtype=ranks.dtype)
    old = values[slot]
    moved = _comes_before(new, slot, values, j).astype(ranks.dtype) - _comes_before(
        old, slot, values, j
    ).astype(ranks.dtype)
    ahead = _comes_before(values, j, new, slot) & (j != slot)
    return (ranks + moved).at[slot].set(1 + jnp.sum(ahead, dtype=ranks.dtype))


def score_weights(
    buf: LevelBuffer,
    temperature: float,
    prioritization: str = "rank",
    topk: int = 1,
    ranks: jax.Array | None = None,
) -> jax.Array:
    """`P_S`: `(C,) float32`, zero on empty slots. `ranks`: `score_ranks(buf)` where the
    caller keeps them (rank prioritisation), else they are computed."""
    s = _ranked(buf)
    if prioritization == "rank":
        ranks = score_ranks(buf) if ranks is None else ranks
        w = (1.0 / ranks.astype(jnp.float32)) ** (1.0 / temperature)
    elif prioritization == "proportional":
        w = jnp.maximum(jnp.where(buf.filled, buf.scores, 0.0), 0.0) ** (1.0 / temperature)
    elif prioritization == "topk":
        kth = jnp.sort(s)[::-1][min(topk, s.shape[0]) - 1]
        w = (s >= kth).astype(jnp.float32)
    else:
        raise ValueError(f"prioritization={prioritization!r}: allowed {', '.join(PRIORITIZATIONS)}")
    return _normalise(w, buf.filled)


def staleness_weights(buf: LevelBuffer, fallback: jax.Array | None = None) -> jax.Array:
    """`P_C`: `(C,) float32`, proportional to `clock - last_seen`; where no filled entry
    is stale (all just seen), `fallback` (`P_S`, the reference library's rule) or uniform."""
    age = jnp.where(buf.filled, (buf.clock - buf.last_seen).astype(jnp.float32), 0.0)
    p = _normalise(age, buf.filled)
    return p if fallback is None else jnp.where(jnp.sum(age) > 0, p, fallback)


def replay_probs(
    buf: LevelBuffer,
    staleness_coef: float,
    temperature: float,
    prioritization: str = "rank",
    topk: int = 1,
    ranks: jax.Array | None = None,
) -> jax.Array:
    """The replay distribution `P` over slots `(C,) float32` (zero on empty slots);
    `ranks` as for `score_weights`."""
    p_score = score_weights(buf, temperature, prioritization, topk, ranks)
    return (1.0 - staleness_coef) * p_score + staleness_coef * staleness_weights(buf, p_score)


def sample(
    buf: LevelBuffer, key: jax.Array, n: int, probs: jax.Array
) -> tuple[LevelBuffer, jax.Array]:
    """Draw `n` slots from `probs` (with replacement); stamp them as just seen.

    Returns `(buffer, indices (n,) int32)`. The buffer must have a filled entry.
    """
    idx = jax.random.choice(key, buf.capacity, (n,), replace=True, p=probs).astype(jnp.int32)
    clock = buf.clock + n
    return buf.replace(clock=clock, last_seen=buf.last_seen.at[idx].set(clock)), idx


def sample_one_at_a_time(
    buf: LevelBuffer,
    key: jax.Array,
    n: int,
    staleness_coef: float,
    temperature: float,
    prioritization: str = "rank",
    topk: int = 1,
) -> tuple[LevelBuffer, jax.Array]:
    """Draw `n` slots one after another, each from the replay distribution as the
    previous draws left it (a drawn slot is just seen, so its staleness weight drops to 0
    for the next draws): the reference library's sampling. Returns `(buffer, indices
    (n,) int32)`; the clock advances by `n` as with `sample`."""
    p_score = score_weights(buf, temperature, prioritization, topk)

    def draw(b: LevelBuffer, k: jax.Array) -> tuple[LevelBuffer, jax.Array]:
        p = (1.0 - staleness_coef) * p_score + staleness_coef * staleness_weights(b, p_score)
        i = jax.random.choice(k, b.capacity, (), p=p).astype(jnp.int32)
        clock = b.clock + 1
        return b.replace(clock=clock, last_seen=b.last_seen.at[i].set(clock)), i

    return jax.lax.scan(draw, buf, jax.random.split(key, n))


def update_scores(
    buf: LevelBuffer,
    idx: jax.Array,
    scores: jax.Array,
    max_returns: jax.Array,
    skip: jax.Array | None = None,
) -> LevelBuffer:
    """Rescore replayed slots `idx (n,)`; non-finite scores keep the old one. The running
    best returns never decrease. `skip (n,) bool` leaves those slots untouched (a slot
    that another level took since it was sampled). A slot sampled several times is
    rescored by its first copy only (deterministic on every backend)."""
    ok = jnp.isfinite(scores)
    keep = jnp.zeros_like(ok) if skip is None else skip
    new_scores = jnp.where(ok & ~keep, scores, buf.scores[idx])
    best = jnp.where(keep, buf.max_returns[idx], jnp.maximum(buf.max_returns[idx], max_returns))
    write = jnp.where(first_copies(idx, ok), idx, buf.capacity)  # later copies: dropped
    return buf.replace(
        scores=buf.scores.at[write].set(new_scores, mode="drop"),
        max_returns=buf.max_returns.at[write].set(best, mode="drop"),
    )


def put_back(
    buf: LevelBuffer,
    idx: jax.Array,
    levels: Any,
    scores: jax.Array,
    max_returns: jax.Array,
    mutations: jax.Array,
    parents: jax.Array,
    taken: jax.Array,
) -> LevelBuffer:
    """The reference library's rule for a replayed slot that a new level took in the same
    cycle: the replayed level competes for it again and takes it back when its new score
    is at least the new level's (finite scores, first copy of each slot).

    Args:
        idx: `(n,) int32` the replayed slots; `levels` (leaves `(n, ...)`),
            `scores`, `max_returns` `(n,) float32`, `mutations`, `parents`
            `(n,) int32`: the replayed levels, their new scores and what they held.
        taken: `(n,) bool`, a new level took the slot since it was sampled.
    """
    ok = jnp.isfinite(scores)
    back = taken & first_copies(idx, ok) & ok & (scores >= buf.scores[idx])
    slot = jnp.where(back, idx, buf.capacity)  # the others: out of range, dropped
    put = lambda a, v: a.at[slot].set(v, mode="drop")  # noqa: E731
    return buf.replace(
        levels=jax.tree.map(put, buf.levels, levels),
        scores=put(buf.scores, scores),
        max_returns=put(buf.max_returns, max_returns),
        mutations=put(buf.mutations, mutations),
        parents=put(buf.parents, parents),
    )


def write_blocks(
    buf: LevelBuffer,
    sampled: LevelBuffer,
    idx: jax.Array,
    new: tuple,
    replay: tuple,
    replayed: jax.Array,
    insert: Callable[..., LevelBuffer],
    back_if_higher: bool,
) -> tuple[LevelBuffer, jax.Array]:
    """A parallel cycle's write of a new block and a replay block (each `(levels, scores,
    best)`) with `insert(buf, levels, scores, best)`: insert the new levels; then rescore
    the replayed slots `idx (n,)` — a slot a new level took since `sampled` (the buffer as
    sampled) keeps the new level, or with `back_if_higher` goes back to the replayed level
    if it scores at least as high (`put_back`) — or, where the replay block holds no
    replayed levels (`replayed` false), insert it as more new levels. Returns the buffer
    and `taken (n,) bool`."""
    levels, scores, best = replay
    buf = insert(buf, *new)
    taken = changed_slots(sampled, buf)[idx]
    buf = jax.lax.cond(
        replayed,
        lambda u: update_scores(u, idx, scores, best, skip=taken),
        lambda u: insert(u, levels, scores, best),
        buf,
    )
    if back_if_higher:
        back = (idx, levels, scores, best, sampled.mutations[idx], sampled.parents[idx], taken)
        buf = jax.lax.cond(replayed, lambda u: put_back(u, *back), lambda u: u, buf)
    return buf, taken


def first_copies(idx: jax.Array, valid: jax.Array | None = None) -> jax.Array:
    """`(n,) bool`: entry `i` of `idx (n,)` is the first with its value among the
    `valid (n,) bool` entries (default: all)."""
    n = idx.shape[0]
    same = idx[:, None] == idx[None, :]
    if valid is not None:
        same = same & valid[None, :]
    return ~jnp.any(same & (jnp.arange(n)[None, :] < jnp.arange(n)[:, None]), axis=1)


def _compared(level: Any, ignore: tuple[str, ...]) -> list[jax.Array]:
    """The leaves of `level` that equality compares (all, or all fields but `ignore`)."""
    if ignore and dataclasses.is_dataclass(level):
        return jax.tree.leaves(
            [getattr(level, f.name) for f in dataclasses.fields(level) if f.name not in ignore]
        )
    return jax.tree.leaves(level)


def _equal(levels: Any, level: Any, ignore: tuple[str, ...] = ()) -> jax.Array:
    """`(C,) bool`: which buffer levels equal `level` (every compared leaf identical)."""
    eq = [
        jnp.all((a == b[None]).reshape(a.shape[0], -1), axis=1)
        for a, b in zip(_compared(levels, ignore), _compared(level, ignore), strict=True)
    ]
    out = eq[0]
    for e in eq[1:]:
        out = out & e
    return out


def stored_best(buf: LevelBuffer, levels: Any, ignore: tuple[str, ...] = ()) -> jax.Array:
    """The best return the buffer holds for each of `levels` (leaves `(n, ...)`) that
    equals one of its entries, `-inf` for the others: `(n,) float32`. A level already in
    the buffer is scored against its running best, not as if never played."""

    def one(level: Any) -> jax.Array:
        dup = _equal(buf.levels, level, ignore) & buf.filled
        return jnp.where(jnp.any(dup), buf.max_returns[jnp.argmax(dup)], -jnp.inf)

    return jax.vmap(one)(levels)


def changed_slots(before: LevelBuffer, after: LevelBuffer) -> jax.Array:
    """`(C,) bool`: slots whose level differs between two states of a buffer (a new level
    took them)."""
    return ~jax.vmap(lambda a, b: jnp.all(_equal(jax.tree.map(lambda x: x[None], a), b)))(
        before.levels, after.levels
    )


def insert(
    buf: LevelBuffer,
    levels: Any,
    scores: jax.Array,
    max_returns: jax.Array,
    staleness_coef: float,
    temperature: float,
    prioritization: str = "rank",
    topk: int = 1,
    mutations: jax.Array | None = None,
    parents: jax.Array | None = None,
    inherit_staleness: bool = False,
    ignore: tuple[str, ...] = (),
    tick: bool = True,
) -> tuple[LevelBuffer, jax.Array]:
    """Insert a batch of `n` levels one after another (see the module docstring).

    Args:
        levels: leaves `(n, ...)`.
        scores, max_returns: `(n,) float32`.
        mutations, parents: `(n,) int32` (default 0 and -1).
        inherit_staleness: a level that takes an occupied slot keeps that slot's staleness,
            and an updated duplicate keeps its own (default: both are just seen).
        ignore: level fields that equality ignores.
        tick: each inserted level advances the clock by one (else only draws do, as
            the reference library counts a level's age).

    Returns:
        `(buffer, slots (n,) int32)`: where each level went, `-1` if it was not inserted.
    """
    n = scores.shape[0]
    mutations = jnp.zeros((n,), jnp.int32) if mutations is None else mutations
    parents = jnp.full((n,), -1, jnp.int32) if parents is None else parents

    # the rank prioritisation's ranks, sorted once and then kept up to date level by level
    # (a sort of the whole buffer for every inserted level cost more than the rest)
    by_rank = prioritization == "rank"

    # which batch level equals which: every buffer slot (kept up to date as levels take
    # slots) and every other batch level, each compared once for the whole batch (the
    # comparisons inside the loop, one batch level at a time, were most of a TPU cycle)
    same = jax.vmap(lambda level: _equal(levels, level, ignore))(levels)  # (n, n), symmetric
    in_buffer = jax.vmap(lambda level: _equal(buf.levels, level, ignore))(levels)  # (n, C)

    def one(carry: tuple, x: tuple) -> tuple[tuple, jax.Array]:
        b, ranks, equal = carry
        i, level, score, best, mut, parent, same_i = x
        # a copy of this level earlier in the batch that has a score took its place
        earlier = same_i & (jnp.arange(n) < i) & jnp.isfinite(scores)
        valid = jnp.isfinite(score) & ~jnp.any(earlier)
        dup = equal[i] & b.filled
        is_dup = jnp.any(dup)
        dup_slot = jnp.argmax(dup)
        free_slot = jnp.argmin(b.filled)  # first empty slot
        full = jnp.all(b.filled)
        p = replay_probs(b, staleness_coef, temperature, prioritization, topk, ranks)
        worst = jnp.argmin(jnp.where(b.filled, p, jnp.inf))
        replace_ok = score >= b.scores[worst]
        slot = jnp.where(is_dup, dup_slot, jnp.where(full, worst, free_slot))
        write = valid & (is_dup | ~full | replace_ok)
        clock = b.clock + (valid.astype(jnp.int32) if tick else 0)
        put = lambda arr, v: arr.at[slot].set(jnp.where(write, v, arr[slot]))  # noqa: E731
        new_best = jnp.where(is_dup, jnp.maximum(b.max_returns[slot], best), best)
        seen = clock
        if inherit_staleness:  # an occupied slot (or a duplicate) keeps its staleness
            seen = jnp.where(is_dup | full, b.last_seen[slot], clock)
        before = b
        b = b.replace(
            levels=jax.tree.map(
                lambda a, v: a.at[slot].set(jnp.where(write & ~is_dup, v, a[slot])), b.levels, level
            ),
            scores=put(b.scores, score),
            last_seen=put(b.last_seen, seen),
            max_returns=put(b.max_returns, new_best),
            mutations=put(b.mutations, jnp.where(is_dup, b.mutations[slot], mut)),
            parents=put(b.parents, jnp.where(is_dup, b.parents[slot], parent)),
            filled=put(b.filled, True),
            clock=clock,
        )
        if by_rank:
            new_value = jnp.where(b.filled[slot], b.scores[slot], -jnp.inf)  # _ranked's
            ranks = rerank(ranks, _ranked(before), slot, new_value)
        # the slot now holds this level: the batch's levels equal it where they equal this one
        equal = equal.at[:, slot].set(jnp.where(write & ~is_dup, same_i, equal[:, slot]))
        return (b, ranks, equal), jnp.where(write, slot, -1).astype(jnp.int32)

    xs = (jnp.arange(n), levels, scores, max_returns, mutations, parents, same)
    carry = (buf, score_ranks(buf) if by_rank else None, in_buffer)
    (buf, _, _), slots = jax.lax.scan(one, carry, xs)
    return buf, slots


def buffer_metrics(buf: LevelBuffer, probs: jax.Array) -> dict[str, jax.Array]:
    """Replay-weighted score, age and mutation count, and the fill ratio."""
    age = (buf.clock - buf.last_seen).astype(jnp.float32)
    return {
        "buffer/weighted_score": jnp.sum(probs * jnp.where(buf.filled, buf.scores, 0.0)),
        "buffer/weighted_age": jnp.sum(probs * age),
        "buffer/weighted_mutations": jnp.sum(probs * buf.mutations.astype(jnp.float32)),
        "buffer/fill": fill_ratio(buf),
    }
