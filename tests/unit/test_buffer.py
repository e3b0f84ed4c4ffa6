"""The level buffer: replay distribution vs a NumPy reference, insertion semantics, and
property-based invariants."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from arenax.curricula import buffer as B

# tiny "levels": one int32 vector per level, equality = same vector
LEVEL = {"x": jnp.zeros((2,), jnp.int32)}


def levels_of(values: list[int]) -> dict:
    v = jnp.asarray(values, jnp.int32)
    return {"x": jnp.stack([v, v * 7], -1)}


def filled_buffer(
    scores: list[float], last_seen: list[int], clock: int, capacity: int
) -> B.LevelBuffer:
    n = len(scores)
    buf = B.create(LEVEL, capacity)
    pad = capacity - n
    return buf.replace(
        levels=levels_of(list(range(capacity))),
        scores=jnp.asarray(scores + [0.0] * pad, jnp.float32),
        last_seen=jnp.asarray(last_seen + [0] * pad, jnp.int32),
        filled=jnp.asarray([True] * n + [False] * pad),
        clock=jnp.int32(clock),
    )


def np_replay(scores, last_seen, clock, rho, beta, mode="rank", k=1):
    s = np.asarray(scores, float)
    if mode == "rank":
        order = np.argsort(-s, kind="stable")
        ranks = np.empty(len(s))
        ranks[order] = np.arange(1, len(s) + 1)
        h = (1 / ranks) ** (1 / beta)
    elif mode == "proportional":
        h = np.maximum(s, 0) ** (1 / beta)
    else:
        h = (s >= np.sort(s)[::-1][k - 1]).astype(float)
    ps = h / h.sum() if h.sum() > 0 else np.full(len(s), 1 / len(s))
    age = clock - np.asarray(last_seen, float)
    pc = age / age.sum() if age.sum() > 0 else np.full(len(s), 1 / len(s))
    return (1 - rho) * ps + rho * pc


@pytest.mark.parametrize("mode", ["rank", "proportional", "topk"])
def test_replay_distribution_matches_numpy(mode: str) -> None:
    scores = [0.3, 1.2, 0.0, 0.7, 0.7]
    seen = [1, 4, 2, 9, 0]
    buf = filled_buffer(scores, seen, clock=10, capacity=8)
    p = np.asarray(B.replay_probs(buf, 0.3, 0.5, mode, topk=2))
    want = np_replay(scores, seen, 10, 0.3, 0.5, mode, k=2)
    np.testing.assert_allclose(p[:5], want, rtol=1e-5)
    assert np.all(p[5:] == 0)
    assert p.sum() == pytest.approx(1.0, abs=1e-6)


def test_all_zero_weights_fall_back_to_uniform() -> None:
    buf = filled_buffer([0.0, 0.0, 0.0], [5, 5, 5], clock=5, capacity=4)
    p = np.asarray(B.replay_probs(buf, 0.5, 1.0, "proportional"))
    np.testing.assert_allclose(p, [1 / 3, 1 / 3, 1 / 3, 0], rtol=1e-6)
    empty = np.asarray(B.replay_probs(B.create(LEVEL, 3), 0.5, 1.0))
    assert np.all(np.isfinite(empty)) and empty.sum() == 0


def test_sampling_stamps_ages() -> None:
    buf = filled_buffer([1.0, 2.0, 3.0], [0, 0, 0], clock=3, capacity=3)
    p = B.replay_probs(buf, 0.0, 1.0)
    new, idx = B.sample(buf, jax.random.key(0), 4, p)
    assert int(new.clock) == 7
    for i in np.asarray(idx):
        assert int(new.last_seen[i]) == 7
    untouched = set(range(3)) - set(np.asarray(idx).tolist())
    for i in untouched:
        assert int(new.last_seen[i]) == 0


def test_insert_fills_dedupes_and_replaces_lowest_probability() -> None:
    buf = B.create(LEVEL, 3)
    ins = lambda b, vals, sc: B.insert(  # noqa: E731
        b, levels_of(vals), jnp.asarray(sc, jnp.float32), jnp.asarray(sc, jnp.float32), 0.0, 1.0
    )
    buf, slots = ins(buf, [10, 11], [0.5, 0.2])
    assert slots.tolist() == [0, 1] and buf.filled.tolist() == [True, True, False]
    # a duplicate updates its entry; -inf / nan are never inserted
    buf, slots = ins(buf, [10, 12, 13], [0.9, -np.inf, np.nan])
    assert slots.tolist() == [0, -1, -1]
    assert buf.scores[0] == pytest.approx(0.9) and int(jnp.sum(buf.filled)) == 2
    buf, _ = ins(buf, [14], [0.3])
    assert bool(jnp.all(buf.filled))
    # full: 15 (score 0.25 >= lowest 0.2) replaces level 11; 16 (0.1 < 0.2 after that) does not
    buf, slots = ins(buf, [15, 16], [0.25, 0.1])
    assert slots.tolist() == [1, -1]
    assert sorted(np.asarray(buf.levels["x"][:, 0]).tolist()) == [10, 14, 15]
    # within-batch duplicates become one entry, the first copy's (the reference's rule)
    buf2, slots = ins(B.create(LEVEL, 4), [20, 20, 21], [0.1, 0.4, 0.2])
    assert slots.tolist() == [0, -1, 1] and int(jnp.sum(buf2.filled)) == 2
    assert buf2.scores[0] == pytest.approx(0.1) and buf2.max_returns[0] == pytest.approx(0.1)
    # a first copy without a score (no finished episode) does not count: the first scored
    # copy does (ACCEL's identical empty levels still enter the buffer)
    buf3, slots = ins(B.create(LEVEL, 4), [20, 20, 20], [-np.inf, 0.4, 0.9])
    assert slots.tolist() == [-1, 0, -1] and buf3.scores[0] == pytest.approx(0.4)
    # a duplicate of a stored level in one batch: only its first copy updates the entry
    buf4, slots = ins(buf2, [21, 21], [0.7, 0.9])
    assert slots.tolist() == [1, -1] and buf4.scores[1] == pytest.approx(0.7)


def np_ranks(values: np.ndarray) -> np.ndarray:
    """NumPy's stable sort of the negated values (NaN last, -0.0 equal to 0.0)."""
    order = np.argsort(-values, kind="stable")
    ranks = np.empty(len(values), np.int32)
    ranks[order] = np.arange(1, len(values) + 1)
    return ranks


def test_ranks_kept_up_to_date_equal_a_fresh_sort() -> None:
    """`rerank` (one slot's value changed, O(C)) against NumPy's stable sort after every
    change, over values with ties, -0.0 and 0.0, -inf (empty slots) and NaN."""
    rng = np.random.default_rng(0)
    pool = np.array([-np.inf, np.nan, -0.0, 0.0, 0.5, 0.5, 1.0, 2.0, -1.0], np.float32)
    values = rng.choice(pool, 12)
    buf = B.create(LEVEL, 12).replace(scores=jnp.asarray(values), filled=jnp.ones(12, bool))
    ranks = B.score_ranks(buf)
    np.testing.assert_array_equal(np.asarray(ranks), np_ranks(values))
    rerank = jax.jit(B.rerank)
    for _ in range(300):
        slot, new = int(rng.integers(12)), rng.choice(pool)
        ranks = rerank(ranks, jnp.asarray(values), jnp.int32(slot), jnp.float32(new))
        values[slot] = new
        np.testing.assert_array_equal(np.asarray(ranks), np_ranks(values))


@pytest.mark.parametrize("form", ["cheap", "dear"])
def test_fresh_ranks_equal_numpys_in_both_forms(form: str, monkeypatch) -> None:
    """`score_ranks` by a scatter (the CPU) or, off it, by sorting the permutation again
    (`ARENAX_GATHERS=dear`): the same ranks as NumPy's stable sort, over ties, -0.0 and
    0.0, -inf (empty slots) and NaN."""
    monkeypatch.setenv("ARENAX_GATHERS", form)
    rng = np.random.default_rng(2)
    pool = np.array([-np.inf, np.nan, -0.0, 0.0, 0.5, 0.5, 1.0, 2.0, -1.0], np.float32)
    for cap in (1, 5, 64):
        values = rng.choice(pool, cap)
        filled = rng.random(cap) < 0.8
        buf = B.create(LEVEL, cap).replace(scores=jnp.asarray(values), filled=jnp.asarray(filled))
        ranks = jax.jit(lambda b: B.score_ranks(b))(buf)  # a new function: traced in this form
        assert ranks.dtype == jnp.int32
        np.testing.assert_array_equal(
            np.asarray(ranks), np_ranks(np.where(filled, values, -np.inf))
        )


def test_a_batch_inserts_as_its_levels_one_by_one() -> None:
    """`insert` keeps the rank prioritisation's ranks up to date through a batch instead
    of sorting the buffer for every level: a batch of distinct levels (new ones, copies of
    stored ones, tied scores, no score) leaves the buffer it leaves inserted one by one,
    each insert sorting afresh."""
    rng = np.random.default_rng(1)
    insert = jax.jit(B.insert, static_argnums=range(4, 11))  # a few compiles, not many ops
    for trial in range(4):
        cap = 6
        buf = filled_buffer(
            rng.choice([0.1, 0.2, 0.2, 0.5], cap).tolist(), rng.integers(0, 5, cap).tolist(),
            clock=8, capacity=cap,
        )  # fmt: skip
        vals = rng.permutation(np.arange(3, 12))[:7].tolist()  # distinct; 3..5: stored copies
        sc = rng.choice([0.05, 0.1, 0.2, 0.3, 0.5, 0.9, -np.inf], 7).astype(np.float32)
        args = (0.3, 0.5, "rank", 1, None, None, trial % 2 == 1)
        batch, slots = insert(buf, levels_of(vals), jnp.asarray(sc), jnp.asarray(sc), *args)
        one, each = buf, []
        for v, x in zip(vals, sc, strict=True):
            one, slot = insert(one, levels_of([v]), jnp.asarray([x]), jnp.asarray([x]), *args)
            each.append(int(slot[0]))
        assert slots.tolist() == each
        for a, b in zip(jax.tree.leaves(batch), jax.tree.leaves(one), strict=True):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_update_scores_keeps_old_on_nonfinite_and_best_never_decreases() -> None:
    buf = filled_buffer([1.0, 2.0], [0, 0], clock=2, capacity=2).replace(
        max_returns=jnp.array([0.5, 0.8], jnp.float32)
    )
    new = B.update_scores(buf, jnp.array([0, 1]), jnp.array([3.0, -jnp.inf]), jnp.array([0.2, 0.9]))
    np.testing.assert_allclose(new.scores, [3.0, 2.0])
    np.testing.assert_allclose(new.max_returns, [0.5, 0.9])


def test_a_slot_sampled_twice_is_rescored_by_its_first_copy() -> None:
    """Slot 0 sampled three times in one batch: the first copy's score (0.1) and best return
    (0.6) land, not whichever scatter write a backend lets win; with the first copy skipped
    (a new level took the slot) the slot keeps its values."""
    buf = filled_buffer([1.0, 2.0], [0, 0], clock=2, capacity=2).replace(
        max_returns=jnp.array([0.5, 0.8], jnp.float32)
    )
    idx = jnp.array([0, 1, 0, 0])
    sc, best = jnp.array([0.1, 3.0, 0.7, 0.9]), jnp.array([0.6, 0.9, 2.0, 3.0])
    new = jax.jit(B.update_scores)(buf, idx, sc, best)
    np.testing.assert_allclose(new.scores, [0.1, 3.0])
    np.testing.assert_allclose(new.max_returns, [0.6, 0.9])
    assert B.first_copies(idx).tolist() == [True, True, False, False]
    # a first copy without a score does not count: the next scored copy rescores the slot
    unscored = B.update_scores(buf, idx, jnp.array([-jnp.inf, 3.0, 0.7, 0.9]), best)
    np.testing.assert_allclose(unscored.scores, [0.7, 3.0])
    np.testing.assert_allclose(unscored.max_returns, [2.0, 0.9])
    skipped = B.update_scores(buf, idx, sc, best, skip=jnp.array([True, False, True, True]))
    np.testing.assert_allclose(skipped.scores, [1.0, 3.0])
    np.testing.assert_allclose(skipped.max_returns, [0.5, 0.9])


# compiled once per shape (the property test calls them many times)
INSERT = jax.jit(lambda buf, levels, sc, best: B.insert(buf, levels, sc, best, 0.3, 0.5))
PROBS = jax.jit(lambda buf: B.replay_probs(buf, 0.3, 0.5))
SAMPLE = jax.jit(lambda buf, k, p: B.sample(buf, k, 3, p))


@given(
    seed=st.integers(0, 2**31 - 1),
    capacity=st.sampled_from([1, 5, 12]),  # a few fixed shapes: one compile each
    batches=st.lists(
        st.sampled_from([1, 3, 6]).flatmap(
            lambda size: st.lists(
                st.tuples(
                    st.integers(0, 15),
                    st.sampled_from([0.0, 0.1, 0.5, 1.0, 2.0, -np.inf, np.nan]),
                ),
                min_size=size,
                max_size=size,
            )
        ),
        min_size=1,
        max_size=4,
    ),
)
def test_buffer_invariants(seed: int, capacity: int, batches: list) -> None:
    buf = B.create(LEVEL, capacity)
    key = jax.random.key(seed)
    for batch in batches:
        vals = [v for v, _ in batch]
        sc = jnp.asarray([s for _, s in batch], jnp.float32)
        before = int(jnp.sum(buf.filled))
        buf, slots = INSERT(buf, levels_of(vals), sc, sc)
        filled = np.asarray(buf.filled)
        # capacity and monotone filling
        assert filled.sum() <= capacity and filled.sum() >= before
        # no duplicates among filled entries
        xs = np.asarray(buf.levels["x"][:, 0])[filled]
        assert len(set(xs.tolist())) == len(xs)
        # non-finite scores never enter
        assert np.all(np.isfinite(np.asarray(buf.scores)[filled]))
        for s, slot in zip(np.asarray(sc), np.asarray(slots), strict=True):
            if not np.isfinite(s):
                assert slot == -1
        p = np.asarray(PROBS(buf))
        if filled.any():
            assert p.sum() == pytest.approx(1.0, abs=1e-5)
            assert np.all(p[~filled] == 0) and np.all(p >= 0)
            key, k = jax.random.split(key)
            new, idx = SAMPLE(buf, k, jnp.asarray(p))
            assert np.all(filled[np.asarray(idx)])
            ages = np.asarray(new.clock - new.last_seen)
            assert np.all(ages[filled] >= 0)
            buf = new


def test_one_at_a_time_sampling_counts_each_draws_staleness() -> None:
    """Pure staleness (rho = 1) over two slots seen at the same time: drawn one at a time,
    the second draw can never repeat the first (its staleness is 0 after it); drawn as one
    batch, repeats happen. The first draw follows the replay distribution, and the clock
    and stamps advance one per draw."""
    buf = filled_buffer([0.5, 0.1], [0, 0], clock=4, capacity=2)
    seq = jax.jit(lambda b, k: B.sample_one_at_a_time(b, k, 2, 1.0, 0.3))
    batch = jax.jit(lambda b, k: B.sample(b, k, 2, B.replay_probs(b, 1.0, 0.3)))
    keys = jax.random.split(jax.random.key(0), 64)
    pairs = [np.asarray(seq(buf, k)[1]).tolist() for k in keys]
    assert all(a != b for a, b in pairs)
    assert sum(a == b for a, b in (np.asarray(batch(buf, k)[1]).tolist() for k in keys)) > 10
    new, idx = seq(buf, keys[0])
    assert int(new.clock) == 6
    assert int(new.last_seen[idx[0]]) == 5 and int(new.last_seen[idx[1]]) == 6
    # rho = 0.5 over scores [0.5, 0.1] (rank, beta 0.3): P(slot 0 first) = replay_probs[0]
    buf3 = filled_buffer([0.5, 0.1, 0.3], [0, 0, 0], clock=3, capacity=3)
    p0 = float(B.replay_probs(buf3, 0.5, 0.3)[0])
    one = jax.jit(lambda k: B.sample_one_at_a_time(buf3, k, 1, 0.5, 0.3)[1][0])
    firsts = np.asarray(jax.vmap(one)(jax.random.split(jax.random.key(1), 4000)))
    assert np.mean(firsts == 0) == pytest.approx(p0, abs=0.03)
