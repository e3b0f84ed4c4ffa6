"""A level buffer per co-player slot (MAESTRO): `P + 1` PLR buffers stacked on a leading
slot axis (leaves `(P + 1, C, ...)`; slot `P` is the live co-player's), and a cycle's
reads and writes of them, one group of `q` environments at a time (each group plays one
co-player; several groups may draw the same one, so the writes run in group order).

`sampler` is the buffers' rules (`arenax.curricula.sampler.LevelSampler`: how levels are
sampled, inserted and compared), one for every slot."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from arenax.curricula import buffer as B
from arenax.curricula.sampler import LevelSampler


def create(sampler: LevelSampler, level: Any, slots: int) -> B.LevelBuffer:
    """`slots` empty buffers of the sampler's capacity shaped after `level`."""
    one = sampler.create(level)
    return jax.tree.map(lambda x: jnp.stack([x] * slots), one)


def get(bufs: B.LevelBuffer, i: jax.Array) -> B.LevelBuffer:
    """Slot `i`'s buffer."""
    return jax.tree.map(lambda x: x[i], bufs)


def put(bufs: B.LevelBuffer, i: jax.Array, buf: B.LevelBuffer) -> B.LevelBuffer:
    """The buffers with slot `i`'s replaced by `buf`."""
    return jax.tree.map(lambda x, y: x.at[i].set(y), bufs, buf)


def buffer_priority(bufs: B.LevelBuffer, temperature: float) -> jax.Array:
    """MAESTRO's co-player weights `(P + 1,)`: `(1 / rank)^(1 / beta)` of each buffer's
    highest score (equal scores share a rank), 1 for an empty buffer."""
    top = jnp.max(jnp.where(bufs.filled, bufs.scores, -jnp.inf), axis=1)
    empty = ~jnp.any(bufs.filled, axis=1)
    higher = jnp.sum((top[None, :] > top[:, None]) & ~empty[None, :], axis=1)
    w = (1.0 / (1.0 + higher).astype(jnp.float32)) ** (1.0 / temperature)
    return jnp.where(empty, 1.0, w)


def highest(bufs: B.LevelBuffer) -> jax.Array:
    """The paper's co-player weights `(P + 1,)`: 1 for the buffers that hold the
    highest-scored level of all (ties share it) and for empty buffers (their regret is
    unknown), 0 for the others."""
    top = jnp.max(jnp.where(bufs.filled, bufs.scores, -jnp.inf), axis=1)
    empty = ~jnp.any(bufs.filled, axis=1)
    best = jnp.max(jnp.where(empty, -jnp.inf, top))
    return jnp.where(empty | (top == best), 1.0, 0.0)


def stored_best(
    sampler: LevelSampler, bufs: B.LevelBuffer, slots: jax.Array, levels: Any
) -> jax.Array:
    """`(g, q)`: the best return each group's co-player's buffer holds for each of the
    group's `levels` (leaves `(g, q, ...)`), `-inf` for a level not in it."""
    return jax.vmap(lambda s, lv: sampler.stored_best(get(bufs, s), lv))(slots, levels)


def sample(
    sampler: LevelSampler,
    bufs: B.LevelBuffer,
    slots: jax.Array,
    replay: jax.Array,
    key: jax.Array,
    q: int,
) -> tuple[B.LevelBuffer, jax.Array]:
    """`q` replay slots `(g, q)` per group from its co-player's buffer, stamped as seen
    where the group replays (`replay (g,)`)."""

    def draw(bufs: B.LevelBuffer, xs: tuple) -> tuple[B.LevelBuffer, jax.Array]:
        slot, rep, k = xs
        buf = get(bufs, slot)
        sampled, idx = sampler.sample(buf, k, q)
        buf = jax.tree.map(lambda a, b: jnp.where(rep, a, b), sampled, buf)
        return put(bufs, slot, buf), idx

    return jax.lax.scan(draw, bufs, (slots, replay, jax.random.split(key, slots.shape[0])))


def rescore_then_insert(
    sampler: LevelSampler,
    bufs: B.LevelBuffer,
    slots: jax.Array,
    replay: jax.Array,
    idx: jax.Array,
    levels: Any,
    scores: jax.Array,
    best: jax.Array,
) -> B.LevelBuffer:
    """The sequential cycle's write: first every replaying group rescores its replayed
    slots `idx (g, q)`, then every other group inserts its new `levels` (leaves
    `(g, q, ...)`; `scores`, `best` `(g, q)`), each in its co-player's buffer.

    Rescoring first keeps each score with its level: had a group inserted its new levels
    before a later group with the same co-player rescored the slots it had sampled, a new
    level that took one of those slots would be given the replayed level's score and best
    return. (As if the replaying groups' episodes ended first; the parallel form's
    `buffer.write_blocks` skips such slots instead.)"""

    def rescore(bufs: B.LevelBuffer, xs: tuple) -> tuple[B.LevelBuffer, None]:
        slot, rep, i, s, b = xs
        buf = jax.lax.cond(rep, lambda u: sampler.rescore(u, i, s, b), lambda u: u, get(bufs, slot))
        return put(bufs, slot, buf), None

    def insert(bufs: B.LevelBuffer, xs: tuple) -> tuple[B.LevelBuffer, None]:
        slot, rep, lv, s, b = xs
        buf = jax.lax.cond(rep, lambda u: u, lambda u: sampler.insert(u, lv, s, b), get(bufs, slot))
        return put(bufs, slot, buf), None

    bufs = jax.lax.scan(rescore, bufs, (slots, replay, idx, scores, best))[0]
    return jax.lax.scan(insert, bufs, (slots, replay, levels, scores, best))[0]


def insert_blocks(
    sampler: LevelSampler,
    bufs: B.LevelBuffer,
    sampled: B.LevelBuffer,
    slots: jax.Array,
    replay: jax.Array,
    idx: jax.Array,
    new: tuple,
    old: tuple,
) -> B.LevelBuffer:
    """The parallel cycle's write, per group, in its co-player's buffer: the new block
    `new` and the replay block `old` (each `(levels, scores, best)`, leaves `(g, q, ...)`)
    by `buffer.write_blocks` (`sampled`: the buffers as sampled, before any group's
    insertions)."""

    def write(bufs: B.LevelBuffer, xs: tuple) -> tuple[B.LevelBuffer, None]:
        slot, rep, i, new, old = xs
        buf, _ = sampler.write_blocks(get(bufs, slot), get(sampled, slot), i, new, old, rep)
        return put(bufs, slot, buf), None

    return jax.lax.scan(write, bufs, (slots, replay, idx, new, old))[0]


def insert_children(
    sampler: LevelSampler,
    bufs: B.LevelBuffer,
    slots: jax.Array,
    kids: Any,
    scores: jax.Array,
    best: jax.Array,
    mutations: jax.Array,
    parents: jax.Array,
) -> B.LevelBuffer:
    """Per group, insert its `kids` (leaves `(g, q, ...)`; `scores`, `best`, `mutations`
    and parent slots `parents` `(g, q)`) in its co-player's buffer."""

    def write(bufs: B.LevelBuffer, xs: tuple) -> tuple[B.LevelBuffer, None]:
        slot, lv, s, b, m, i = xs
        return put(bufs, slot, sampler.insert(get(bufs, slot), lv, s, b, m, i)), None

    return jax.lax.scan(write, bufs, (slots, kids, scores, best, mutations, parents))[0]
