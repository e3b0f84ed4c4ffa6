"""The co-player population's pieces against hand-computed cases: the sampling rules
(self-play, FSP, PFSP, MAESTRO's regret), snapshots taken oldest-first every N updates,
the running returns per co-player, and the block-wise policy that plays several
co-players in one batch."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from arenax.curricula import buffer as B
from arenax.curricula import coplayers as C
from arenax.curricula.maestro import buffer_priority
from arenax.envs import spaces
from arenax.nn.mlp import MLPConfig


def _pop(filled, returns, played) -> C.Population:
    pop = C.create({"w": jnp.zeros((2,))}, len(filled))
    return pop.replace(
        filled=jnp.array(filled), returns=jnp.array(returns, jnp.float32),
        played=jnp.array(played),
    )  # fmt: skip


def test_slot_probs_follow_each_rule() -> None:
    # 3 snapshot slots (the third empty) and the live policy (last)
    pop = _pop([True, True, False], [1.0, 3.0, 0.0, 2.0], [True, True, False, False])
    close = np.testing.assert_allclose
    close(C.slot_probs(pop, "latest"), [0, 0, 0, 1])
    close(C.slot_probs(pop, "uniform", 0.0), [1 / 3, 1 / 3, 0, 1 / 3], rtol=1e-6)
    close(C.slot_probs(pop, "uniform", 0.5), [1 / 6, 1 / 6, 0, 4 / 6], rtol=1e-6)
    # PFSP: returns 1 and 3 scale to x = 0 and 1; the live policy, never played, counts as
    # the hardest (x = 0): weights (1 - x)^2 = 1, 0, -, 1
    close(C.slot_probs(pop, "pfsp", 0.0, 2.0), [0.5, 0, 0, 0.5], rtol=1e-6)
    # once played at return 2 (x = 0.5): weight 0.25
    played = pop.replace(played=jnp.array([True, True, False, True]))
    close(C.slot_probs(played, "pfsp", 0.0, 2.0), [0.8, 0, 0, 0.2], rtol=1e-6)
    # one return for all: uniform over the slots that hold a policy
    flat = pop.replace(returns=jnp.full((4,), 1.5), played=jnp.ones((4,), bool))
    close(C.slot_probs(flat, "pfsp", 0.0), [1 / 3, 1 / 3, 0, 1 / 3], rtol=1e-6)
    # MAESTRO's weights, an empty slot left out
    prio = jnp.array([2.0, 1.0, 5.0, 1.0])
    close(C.slot_probs(pop, "regret", 0.0, priority=prio), [0.5, 0.25, 0, 0.25], rtol=1e-6)


def test_buffer_priority_ranks_each_buffers_best_level() -> None:
    one = B.create({"x": jnp.zeros((), jnp.int32)}, 4)
    bufs = jax.tree.map(lambda x: jnp.stack([x] * 4), one)
    filled = jnp.array([[1, 1, 0, 0], [1, 0, 0, 0], [0, 0, 0, 0], [1, 1, 1, 0]], bool)
    scores = jnp.array([[0.2, 0.9, 0, 0], [0.5, 0, 0, 0], [0, 0, 0, 0], [0.9, 0.1, 0.3, 7.0]])
    bufs = bufs.replace(filled=filled, scores=scores)
    # best levels 0.9, 0.5, (empty), 0.9 (the 7.0 is an empty slot's): ranks 1, 3, -, 1;
    # temperature 0.5: (1 / rank)^2; an empty buffer weighs 1
    np.testing.assert_allclose(buffer_priority(bufs, 0.5), [1.0, 1 / 9, 1.0, 1.0], rtol=1e-6)


def test_snapshots_are_taken_every_n_updates_oldest_replaced_first() -> None:
    pop = C.create({"w": jnp.zeros(())}, 2)
    taken = []
    for step, trained in enumerate([True, True, False, True, True, True, True]):
        live = {"w": jnp.float32(step)}
        pop, slot = C.snapshot(pop, live, jnp.bool_(trained), every=2)
        taken.append(int(slot))
    # updates 1, 2 (slot 0), -, 3, 4 (slot 1), 5, 6 (slot 0 again)
    assert taken == [-1, 0, -1, -1, 1, -1, 0]
    assert int(pop.updates) == 6 and int(pop.next) == 1
    np.testing.assert_array_equal(pop.params["w"], [6.0, 4.0])  # the live values then
    np.testing.assert_array_equal(pop.born, [6, 4])
    np.testing.assert_array_equal(pop.filled, [True, True])


def test_a_new_snapshot_forgets_the_results_of_the_slot_it_takes() -> None:
    pop = _pop([True], [3.0, 1.0], [True, True])
    pop, slot = C.snapshot(pop, {"w": jnp.ones((2,))}, jnp.bool_(True), every=1)
    assert int(slot) == 0
    np.testing.assert_array_equal(pop.played, [False, True])
    np.testing.assert_array_equal(pop.returns, [0.0, 1.0])


def test_record_keeps_a_running_return_per_slot() -> None:
    pop = _pop([True, True], [4.0, 0.0, 0.0], [True, False, False])
    env_slot = jnp.array([0, 0, 1, 1])  # 2 envs against slot 0, 2 against slot 1
    done = jnp.array([[1, 0, 0, 0], [0, 1, 1, 0]], bool)  # (T, n): slot 1's env 3 never ends
    ret = jnp.array([[2.0, 9.0, 9.0, 9.0], [9.0, 4.0, 6.0, 9.0]])
    out = C.record(pop, env_slot, done, ret, ema=0.5, axis_name=None)
    # slot 0: played before (4), this cycle's mean (2 + 4) / 2 = 3 -> 0.5 * 4 + 0.5 * 3
    # slot 1: first results -> 6; the live slot: no episode ended, unchanged
    np.testing.assert_allclose(out.returns, [3.5, 6.0, 0.0])
    np.testing.assert_array_equal(out.played, [True, True, False])


def test_blockwise_runs_each_block_with_its_own_parameters() -> None:
    policy = MLPConfig(hidden=(8,)).policy(spaces.Box(-1.0, 1.0, (5,)), spaces.Discrete(3))
    obs = jax.random.normal(jax.random.key(0), (1, 6, 5))
    first = jnp.zeros((1, 6), bool)
    init, apply = jax.jit(policy.init), jax.jit(policy.apply)  # compiled, not op by op
    pa, pb = (init(jax.random.key(i), obs) for i in (1, 2))
    both = jax.tree.map(lambda a, b: jnp.stack([a, b]), pa, pb)
    carry = policy.initial_carry(6)
    _, logits, value = jax.jit(C.Blockwise(policy, 2).apply)(both, obs, first, carry)
    for i, p in enumerate((pa, pb)):
        sl = slice(3 * i, 3 * i + 3)
        _, lg, v = apply(p, obs[:, sl], first[:, sl], policy.initial_carry(3))
        np.testing.assert_allclose(logits[:, sl], lg, rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(value[:, sl], v, rtol=1e-6, atol=1e-6)
    assert not np.allclose(logits[:, :3], logits[:, 3:])  # the two blocks differ
