"""The co-player population's pieces against hand-computed cases: the sampling rules
(self-play, FSP, PFSP, MAESTRO's regret), snapshots taken oldest-first every N updates,
the running returns per co-player, and the block-wise policy that plays several
co-players in one batch."""

from __future__ import annotations

import dataclasses

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


def test_sequential_maestro_keeps_each_score_with_its_level() -> None:
    """Two groups with the same co-player: group 0 inserts new levels, group 1 rescores
    the slots it sampled. A new level that takes one of those slots must not be given the
    replayed level's score and best return (issue 60's case: one co-player, a full
    4-slot buffer)."""
    from arenax.curricula import slot_buffers as SB
    from arenax.curricula.plr import PLRConfig

    one = B.create(jnp.zeros((), jnp.int32), 4)
    one = one.replace(
        levels=jnp.arange(4, dtype=jnp.int32),
        scores=jnp.array([0.9, 0.8, 0.7, 0.1], jnp.float32),
        max_returns=jnp.ones((4,), jnp.float32),
        filled=jnp.ones((4,), bool),
        last_seen=jnp.array([10, 2, 2, 10], jnp.int32),  # group 1 just sampled slots 3, 0
        clock=jnp.int32(10),
    )
    bufs = jax.tree.map(lambda x: x[None], one)  # one co-player
    slots = jnp.array([0, 0])
    replay = jnp.array([False, True])
    idx = jnp.array([[0, 0], [3, 0]], jnp.int32)  # group 0's draw is not used
    levels = jnp.array([[10, 11], [3, 0]], jnp.int32)
    scores = jnp.array([[0.5, 0.4], [0.05, 0.95]], jnp.float32)
    best = jnp.array([[-1.0, -1.0], [7.0, 7.0]], jnp.float32)
    write = jax.jit(SB.rescore_then_insert, static_argnums=0)
    out = jax.device_get(write(PLRConfig().sampler, bufs, slots, replay, idx, levels, scores, best))
    # what each level was given: the replayed levels their new score (best 7), the new
    # levels theirs (best -1), the others what they held
    given = {0: (0.95, 7.0), 1: (0.8, 1.0), 2: (0.7, 1.0), 3: (0.05, 7.0),
             10: (0.5, -1.0), 11: (0.4, -1.0)}  # fmt: skip
    held = out.levels[0].tolist()
    assert 0 in held  # the replayed level of highest score stays
    assert 10 in held  # the new level of score .5 replaces the rescored level 3 (.05)
    for slot, level in enumerate(held):
        np.testing.assert_allclose(
            (out.scores[0, slot], out.max_returns[0, slot]), given[level], rtol=1e-6,
            err_msg=f"slot {slot} holds level {level}",
        )  # fmt: skip


def test_pfsp_floor_keeps_every_coplayer_playable() -> None:
    # as in test_slot_probs_follow_each_rule: f_hard gives the best-scored snapshot 0
    pop = _pop([True, True, False], [1.0, 3.0, 0.0, 2.0], [True, True, False, False])
    hard = np.array([0.5, 0, 0, 0.5])
    uniform = np.array([1 / 3, 1 / 3, 0, 1 / 3])
    p = C.slot_probs(pop, "pfsp", 0.0, 2.0, floor=0.1)
    np.testing.assert_allclose(p, 0.9 * hard + 0.1 * uniform, rtol=1e-6)
    assert float(p[1]) > 0  # the co-player the learners beat most still plays
    # latest_prob 0 and the live co-player the best-scored: without a floor it never plays
    live_best = _pop([True, True], [1.0, 2.0, 3.0], [True, True, True])
    assert float(C.slot_probs(live_best, "pfsp", 0.0, 2.0)[-1]) == 0.0
    np.testing.assert_allclose(
        C.slot_probs(live_best, "pfsp", 0.0, 2.0, floor=0.2)[-1], 0.2 / 3, rtol=1e-6
    )


def test_pfsp_reads_win_rates_unscaled() -> None:
    # win rates 0.25, 1 (never lost), -, 0.5: f_hard (1 - x)^2 = 0.5625, 0, -, 0.25
    pop = _pop([True, True, False], [0.25, 1.0, 0.0, 0.5], [True, True, False, True])
    np.testing.assert_allclose(C.pfsp_x(pop, win_rates=True), [0.25, 1.0, 0.0, 0.5])
    w = np.array([0.5625, 0.0, 0.0, 0.25]) / 0.8125
    np.testing.assert_allclose(C.slot_probs(pop, "pfsp", 0.0, 2.0, win_rates=True), w, rtol=1e-6)
    # returns of the same values would be scaled over the slots played: 0.25 -> 0
    np.testing.assert_allclose(C.pfsp_x(pop), [0.0, 1.0, 0.0, 1 / 3], rtol=1e-6)


def test_maestro_papers_rule_picks_the_highest_regret_buffer_floored() -> None:
    """The paper's co-player choice: the co-player whose buffer holds the highest-regret
    level, every co-player floored at λ/N; with 8 snapshots and the live one (N = 9),
    λ = 0.1: 0.9 + 0.1/9 for the top one (arenax's rank rule gives it less)."""
    from arenax.curricula import slot_buffers as SB

    one = B.create(jnp.zeros((), jnp.int32), 2)
    bufs = jax.tree.map(lambda x: jnp.stack([x] * 9), one)
    top = jnp.arange(1, 10, dtype=jnp.float32) / 10  # buffer 6 holds the highest, 0.7 + ...
    top = top.at[6].set(5.0)
    bufs = bufs.replace(
        filled=jnp.ones((9, 2), bool), scores=jnp.stack([top, jnp.zeros(9)], axis=1)
    )
    pop = _pop([True] * 8, [0.0] * 9, [False] * 9)
    prio = SB.highest(bufs)
    np.testing.assert_array_equal(prio, [0, 0, 0, 0, 0, 0, 1, 0, 0])
    p = C.slot_probs(pop, "max_regret", 0.0, priority=prio, floor=0.1)
    expected = np.full(9, 0.1 / 9)
    expected[6] += 0.9
    np.testing.assert_allclose(p, expected, rtol=1e-6)
    np.testing.assert_allclose(float(p[6]), 0.9111, atol=1e-4)
    # arenax's rule with the presets' latest_prob 0.5 (issue 60's 0.44): ranks 1 … 9
    rank = C.slot_probs(pop, "regret", 0.5, priority=buffer_priority(bufs, 0.3))
    by_rank = 0.5 / sum((1 / k) ** (1 / 0.3) for k in range(1, 10))
    np.testing.assert_allclose(float(rank[6]), by_rank, rtol=1e-5)
    np.testing.assert_allclose(float(rank[6]), 0.44, atol=0.005)
    # ties share the top; an empty buffer counts as the highest (its regret is unknown)
    tied = bufs.replace(scores=bufs.scores.at[2, 0].set(5.0), filled=bufs.filled.at[4].set(False))
    np.testing.assert_array_equal(SB.highest(tied), [0, 0, 1, 0, 1, 0, 1, 0, 0])


def test_population_options_that_freeze_the_population_are_refused() -> None:
    import re

    import pytest

    from arenax.options import ConfigError
    from arenax.training import PRESETS, validate

    def with_(preset: str, **changes: object) -> object:
        cfg = PRESETS[preset]
        return dataclasses.replace(cfg, curriculum=dataclasses.replace(cfg.curriculum, **changes))

    cases = [
        (with_("tag-grid-pfsp", pfsp_floor=0.0, latest_prob=0.0),
         "population.pfsp_floor=0.0: with latest_prob=0 PFSP can give the live co-player probability 0"),
        (with_("tag-grid-maestro", coplayer_sampling="max_regret", coplayer_floor=0.0,
               latest_prob=0.0),
         "maestro.coplayer_floor=0.0: with latest_prob=0 the paper's rule without a floor"),
    ]  # fmt: skip
    for cfg, message in cases:
        with pytest.raises(ConfigError, match=re.escape(message)):
            validate(cfg)
    validate(with_("tag-grid-pfsp", pfsp_floor=0.0))  # the live one keeps latest_prob
    validate(with_("tag-grid-pfsp", latest_prob=0.0))  # the floor keeps it playable
    validate(with_("tag-grid-maestro", coplayer_sampling="max_regret", latest_prob=0.0))


def test_a_population_run_saved_before_the_floor_resumes_as_it_ran(tmp_path) -> None:
    import json

    from arenax.training import PRESETS
    from arenax.training.saved import load_config, save_config

    save_config(PRESETS["tag-grid-pfsp"], tmp_path / "config.json")
    data = json.loads((tmp_path / "config.json").read_text())
    assert data["curriculum"]["pfsp_floor"] == 0.1 and data["curriculum"]["result"] == "win"
    for k in ("pfsp_floor", "result"):
        del data["curriculum"][k]
    (tmp_path / "config.json").write_text(json.dumps(data))
    old = load_config(tmp_path / "config.json").curriculum
    assert (old.pfsp_floor, old.result) == (0.0, "return")
