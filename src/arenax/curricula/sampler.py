"""The level sampler: a level buffer's rules in one object — capacity, prioritisation,
staleness, duplicates — and what the replay curricula do with a buffer: create it, draw
replay levels, insert scored levels, rescore replayed ones, write a parallel cycle's
blocks. PLR, PLR⊥, ACCEL, their parallel forms and MAESTRO (a buffer per co-player) compose
one; a curriculum of your own can too (jaxued's `LevelSampler` is the model).

    sampler = PLRConfig(...).sampler            # or LevelSampler(capacity=4000, ...)
    buf = sampler.create(level)                 # an empty buffer shaped after one level
    buf, idx = sampler.sample(buf, key, n)      # n replay slots (stamped as seen)
    buf = sampler.insert(buf, levels, scores, best)
    buf = sampler.rescore(buf, idx, scores, best)

Every method is a pure function of a `arenax.curricula.buffer.LevelBuffer` (its state
lives in the train state); the sampler itself is static (hashable options).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax

from arenax.curricula import buffer as B


@dataclasses.dataclass(frozen=True)
class LevelSampler:
    """The rules of one level buffer (see `arenax.curricula.buffer` for the formulas).

    Attributes:
        capacity: levels the buffer holds.
        staleness_coef: weight rho of the staleness distribution in the replay one.
        temperature: temperature beta of the score prioritisation.
        prioritization: `rank`, `proportional` or `topk`.
        topk: k of the top-k prioritisation.
        inserted_staleness: an inserted level's staleness: `zero`, or `inherit` the
            replaced entry's.
        staleness_clock: what ages levels: each level sampled or inserted (`levels`), or
            replay draws only (`draws`).
        duplicate_ignores: level fields that duplicate detection ignores.
        sampling: replay levels drawn as one `batch`, or `one_at_a_time`.
        taken_slot: a parallel cycle's replayed slot that a new level took: `keep_new`, or
            `higher_score` (it goes back to the replayed level if that scores as high).
    """

    capacity: int = 4000
    staleness_coef: float = 0.3
    temperature: float = 0.3
    prioritization: str = "rank"
    topk: int = 1
    inserted_staleness: str = "zero"
    staleness_clock: str = "levels"
    duplicate_ignores: tuple[str, ...] = ()
    sampling: str = "batch"
    taken_slot: str = "keep_new"

    @property
    def priority(self) -> tuple[float, float, str, int]:
        """The replay distribution's options: staleness weight, temperature,
        prioritisation, k."""
        return (self.staleness_coef, self.temperature, self.prioritization, self.topk)

    # ------------------------------------------------------------------ reading
    def create(self, level: Any) -> B.LevelBuffer:
        """An empty buffer of `capacity` levels shaped after one `level`."""
        return B.create(level, self.capacity)

    def probs(self, buf: B.LevelBuffer) -> jax.Array:
        """The replay distribution `(C,)` over the buffer's slots (0 on empty ones)."""
        return B.replay_probs(buf, *self.priority)

    def stored_best(self, buf: B.LevelBuffer, levels: Any) -> jax.Array:
        """`(n,)`: the best return the buffer holds for each of `levels` (leaves `(n, ...)`)
        that is already in it, `-inf` for the others."""
        return B.stored_best(buf, levels, self.duplicate_ignores)

    def metrics(self, buf: B.LevelBuffer) -> dict[str, jax.Array]:
        """Replay-weighted score, age and mutations, and the fill ratio."""
        return B.buffer_metrics(buf, self.probs(buf))

    @staticmethod
    def fill(buf: B.LevelBuffer) -> jax.Array:
        """The filled share of the buffer, `()`."""
        return B.fill_ratio(buf)

    # ------------------------------------------------------------------ writing
    def sample(self, buf: B.LevelBuffer, key: jax.Array, n: int) -> tuple[B.LevelBuffer, jax.Array]:
        """`n` replay slots `(n,) int32` (`sampling`: as one batch or one at a time), and
        the buffer with them stamped as seen. The buffer must hold a level."""
        if self.sampling == "one_at_a_time":
            return B.sample_one_at_a_time(buf, key, n, *self.priority)
        return B.sample(buf, key, n, self.probs(buf))

    def insert(
        self,
        buf: B.LevelBuffer,
        levels: Any,
        scores: jax.Array,
        best: jax.Array,
        mutations: jax.Array | None = None,
        parents: jax.Array | None = None,
    ) -> B.LevelBuffer:
        """`buf` with `levels` (leaves `(n, ...)`; `scores`, `best` `(n,)`) inserted one
        after another: a duplicate updates its entry, a level takes a free slot or, in a
        full buffer, the entry of lowest replay probability if it scores as high."""
        buf, _ = B.insert(
            buf,
            levels,
            scores,
            best,
            *self.priority,
            mutations,
            parents,
            inherit_staleness=self.inserted_staleness == "inherit",
            ignore=self.duplicate_ignores,
            tick=self.staleness_clock == "levels",
        )
        return buf

    def rescore(
        self,
        buf: B.LevelBuffer,
        idx: jax.Array,
        scores: jax.Array,
        best: jax.Array,
        skip: jax.Array | None = None,
    ) -> B.LevelBuffer:
        """The replayed slots `idx (n,)` rescored (`skip (n,) bool`: slots left as they
        are); best returns never decrease."""
        return B.update_scores(buf, idx, scores, best, skip)

    def age_without_replay(self, buf: B.LevelBuffer, n: int) -> B.LevelBuffer:
        """`buf` before a cycle without replay (`staleness_clock="draws"`: aged `n` draws)."""
        return buf if self.staleness_clock == "levels" else buf.replace(clock=buf.clock + n)

    def write_blocks(
        self,
        buf: B.LevelBuffer,
        sampled: B.LevelBuffer,
        idx: jax.Array,
        new: tuple,
        replay: tuple,
        replayed: jax.Array,
    ) -> tuple[B.LevelBuffer, jax.Array]:
        """A parallel cycle's write of a new block and a replay block (each `(levels,
        scores, best)`; `sampled`: the buffer as sampled; `replayed`: the replay block holds
        replayed levels): `arenax.curricula.buffer.write_blocks` with these rules. Returns
        the buffer and which replayed slots a new level took, `(n,) bool`."""
        back = self.taken_slot == "higher_score"
        return B.write_blocks(buf, sampled, idx, new, replay, replayed, self.insert, back)
