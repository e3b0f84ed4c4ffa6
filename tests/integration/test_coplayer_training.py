"""Co-player curricula over grid Tag end to end: self-play, FSP, PFSP and MAESTRO train and
count their steps, the live co-player learns only where it played, MAESTRO files each
arena under the co-player it was played with (and its edits' children), a resumed run
equals an uninterrupted one bitwise, 2 devices agree with 1 and each of 2 stacked seeds
trains what its own run trains."""

from __future__ import annotations

import csv
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from arenax import cli
from arenax.curricula import buffer as B
from arenax.curricula.coplayers import slot_probs
from arenax.curricula.maestro import buffer_priority
from arenax.eval.pairs import read_pairs
from arenax.eval.plots import plot_run
from arenax.training import PRESETS, train, validate
from arenax.training.build import make_curriculum
from arenax.training.parallel import jit_init
from helpers import assert_close, assert_same, learning_rows, tiny_preset


@pytest.mark.slow
# FSP differs from PFSP only in its sampling rule (tests/unit/test_coplayers.py)
# tag-maestro: the same curriculum over continuous Tag's disc arenas
@pytest.mark.parametrize(
    "preset", ["tag-grid-sp", "tag-grid-pfsp", "tag-grid-maestro", "tag-maestro"]
)
def test_coplayer_presets_train_and_count_their_steps(
    tmp_path: Path, preset: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    validate(PRESETS[preset])
    cfg = tiny_preset(preset, tmp_path, 6)
    rows = train(cfg).rows
    n_t = cfg.n_envs * cfg.n_steps
    assert [r["env_steps"] for r in rows] == [n_t * (i + 1) for i in range(6)]
    for r in rows:
        # the live runners learn exactly on the cycles they played a group
        assert r["runner/updated"] == float(r["coplayers/latest_share"] > 0)
        assert np.isfinite(r["runner/loss"]) == (r["runner/updated"] > 0)
        assert 0 <= r["coplayers/snapshots"] <= 2
    # every update of the live runners is snapshotted (snapshot_every=1 at tiny shapes)
    assert rows[0]["coplayers/snapshots"] == 1 and rows[-1]["coplayers/snapshots"] == 2
    if preset == "tag-grid-sp":
        assert all(r["coplayers/latest_share"] == 1.0 and r["coplayers/age"] == 0 for r in rows)
    if preset == "tag-grid-pfsp":  # PFSP reads the taggers' win (tag) rate per co-player
        rates = [r["coplayers/worst_win_rate"] for r in rows]
        assert all(0.0 <= x <= 1.0 or x == np.inf for x in rates) and min(rates) <= 1.0
    if preset == "tag-grid-pfsp":  # the trained taggers meet each snapshot of the runners
        monkeypatch.setattr("sys.argv", ["arenax", "eval", str(cfg.run_dir), "--snapshots",
                                         "--episodes", "2", "--opponents", "scripted"])  # fmt: skip
        cli.main()
        with (cfg.run_dir / "eval_tag.csv").open() as f:
            table = list(csv.DictReader(f))
        snaps = [r for r in table if "snapshot@" in r["runners"] + r["taggers"]]
        # a snapshot after each update of the live runners, 2 slots: the last two, oldest first
        u = int(sum(r["runner/updated"] for r in rows))
        assert [(r["taggers"], r["runners"]) for r in snaps] == [
            ("trained", f"snapshot@{u - 1}"),
            ("trained", f"snapshot@{u}"),
        ]
    if preset.endswith("maestro"):  # robust: the taggers learn on replayed groups only
        assert all(r["tagger/updated"] == float(r["replay"] > 0) for r in rows)
        assert all(r["student_steps"] >= 0 for r in rows) and rows[-1]["buffer/fill"] > 0
    else:
        assert all(np.isfinite(r["tagger/loss"]) for r in rows)


@pytest.mark.slow
def test_maestro_files_each_arena_under_its_coplayer(tmp_path: Path) -> None:
    """Cycle 1: only the live runners exist, so every new arena enters their buffer; the
    snapshot taken after the update copies that buffer. Cycle 2: exactly the buffers of
    the co-players the cycle drew from its key change."""
    cfg = tiny_preset("tag-grid-maestro", tmp_path, 2)
    cur = make_curriculum(cfg)
    ids = jnp.arange(cfg.n_envs, dtype=jnp.int32)
    cycle = jax.jit(lambda s, k: cur.cycle(s, k, ids, None))
    state0 = jit_init(cur)(jax.random.key(0))
    state1, _ = cycle(state0, jax.random.key(1))
    pop, bufs = state1.curriculum["population"], state1.curriculum["buffers"]
    live = pop.size
    assert np.asarray(pop.filled).tolist() == [True, False]
    assert int(jnp.sum(bufs.filled[live])) > 0  # the new arenas (with a finished episode)
    assert int(jnp.sum(bufs.filled[1])) == 0
    for a in jax.tree.leaves(bufs):
        np.testing.assert_array_equal(a[0], a[live])  # the snapshot inherits the buffer
    for a, b in zip(jax.tree.leaves(pop.params), jax.tree.leaves(state1.learner["runner"].params), strict=True):  # fmt: skip
        np.testing.assert_array_equal(a[0], b)  # the snapshot is the live policy

    key = jax.random.key(2)
    state2, _ = cycle(state1, key)
    c = cur.config
    probs = slot_probs(pop, "regret", c.latest_prob, priority=buffer_priority(bufs, c.temperature))
    drawn = set(np.asarray(cur.plan.draw(jax.random.split(key, 6)[0], probs)).tolist())
    after = state2.curriculum["buffers"]
    pop2 = state2.curriculum["population"]
    for s in range(live + 1):
        same = all(np.array_equal(a[s], b[s]) for a, b in zip(jax.tree.leaves(bufs), jax.tree.leaves(after), strict=True))  # fmt: skip
        copied = int(np.asarray(pop2.next)) != int(np.asarray(pop.next)) and s == int(np.asarray(pop.next))  # fmt: skip
        if not copied:  # (a slot a new snapshot took holds the live buffer instead)
            assert same == (s not in drawn), (s, drawn)
    assert B.fill_ratio(jax.tree.map(lambda x: x[live], after)) > 0


def check_pairs(run_dir: Path, rows: list[dict], groups: int, parallel: bool = False) -> dict:
    """The run's `pairs.jsonl` (MAESTRO's co-player × arena pairs, per cycle and group)
    agrees with its metrics rows: one row per cycle, `groups` entries each; the live
    runners are of age 0, their share `coplayers/latest_share`; every group's
    co-player version + age is the live runners' update count before the cycle (the
    `runner/updated` flags of earlier cycles); the replaying share is `replay`; a
    sequential cycle's group means of the arena metrics average to its `level/*` (the
    groups are equal). Returns the pairs (`read_pairs`)."""
    pairs = read_pairs(run_dir)
    assert pairs is not None and pairs["cycle"].tolist() == [r["cycle"] for r in rows]
    assert pairs["score"].shape == (len(rows), groups)
    before = np.cumsum([0] + [r["runner/updated"] for r in rows])[:-1]
    np.testing.assert_array_equal(
        pairs["coplayer"] + pairs["age"], before[:, None] + 0 * pairs["age"]
    )
    # the live runners are of age 0 (so is a snapshot taken since their last update)
    assert (pairs["age"][pairs["live"] > 0] == 0).all()
    assert (pairs["age"] >= 0).all() and np.isfinite(pairs["score"]).all()
    np.testing.assert_allclose(pairs["live"].mean(1), [r["coplayers/latest_share"] for r in rows])
    np.testing.assert_allclose(pairs["replay"].mean(1), [r["replay"] for r in rows])
    metrics = [k for k in pairs if k.startswith("level/")]
    assert "level/coverage" in metrics
    if not parallel:
        for k in metrics:
            np.testing.assert_allclose(pairs[k].mean(1), [r[k] for r in rows], rtol=1e-5, err_msg=k)
    return pairs


@pytest.mark.slow
def test_maestro_resumes_bitwise_and_devices_agree(tmp_path: Path) -> None:
    full = train(tiny_preset("tag-grid-maestro", tmp_path / "full", 6))
    train(tiny_preset("tag-grid-maestro", tmp_path / "half", 3))
    resumed = train(
        tiny_preset("tag-grid-maestro", tmp_path / "x", 6), resume=tmp_path / "half" / "tag-grid-maestro"
    )  # fmt: skip
    assert_same(learning_rows(full.rows)[3:], learning_rows(resumed.rows))
    groups = tiny_preset("tag-grid-maestro", tmp_path, 1).curriculum.groups
    pairs = check_pairs(full.run_dir, full.rows, groups)
    assert pairs["age"].max() > 0  # snapshots were played, not only the live runners
    # the resumed run's pairs (rows after the checkpoint dropped, then appended) are the
    # uninterrupted run's, bitwise
    assert (full.run_dir / "pairs.jsonl").read_text() == (
        resumed.run_dir / "pairs.jsonl"
    ).read_text()
    for a, b in zip(jax.tree.leaves(full.state), jax.tree.leaves(resumed.state), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    two = train(tiny_preset("tag-grid-maestro", tmp_path / "two", 6, devices=2))
    for a, b in zip(learning_rows(full.rows), learning_rows(two.rows), strict=True):
        for k in a:
            np.testing.assert_allclose(a[k], b[k], rtol=2e-4, atol=1e-5, err_msg=k)
    pop1, pop2 = full.state.curriculum["population"], two.state.curriculum["population"]
    np.testing.assert_array_equal(pop1.filled, pop2.filled)
    np.testing.assert_array_equal(pop1.born, pop2.born)
    same_pairs(pairs, check_pairs(two.run_dir, two.rows, groups))
    # seeds 0 and 1 trained in one program: seed 0 trains what its own run trains
    stack = train(tiny_preset("tag-grid-maestro", tmp_path / "stack", 6, seeds=2))
    assert_close(learning_rows(stack.seed_rows[0]), learning_rows(full.rows))
    seed0 = stack.run_dir / "seed0"
    same_pairs(pairs, check_pairs(seed0, stack.seed_rows[0], groups))
    # `arenax plot` draws each seed's pairs
    picture = stack.run_dir / "plots" / "seed0" / "pairs.png"
    assert picture in plot_run(stack.run_dir) and picture.stat().st_size > 10_000


def same_pairs(a: dict, b: dict) -> None:
    """Two runs chose the same co-players and replays, and found the same scores."""
    for k in a:
        if k == "score" or k.startswith("level/"):
            np.testing.assert_allclose(a[k], b[k], rtol=2e-4, atol=1e-5, err_msg=k)
        else:
            np.testing.assert_array_equal(a[k], b[k], err_msg=k)


@pytest.mark.slow
def test_maestro_parallel_plays_new_and_replayed_arenas_side_by_side(tmp_path: Path) -> None:
    """`--maestro.parallel` (MAESTRO∥): every cycle each group plays a block of new arenas
    and a block replayed from its co-player's buffer (fresh while it is cold) against the
    same co-player, twice the env steps; the taggers learn on the replayed groups only;
    the first cycle files both blocks' arenas under the live runners; 2 devices agree."""
    import dataclasses

    cfg = tiny_preset("tag-grid-maestro", tmp_path / "one", 4)
    par = dataclasses.replace(cfg.curriculum, parallel=True)
    cfg = dataclasses.replace(cfg, curriculum=par, total_steps=2 * cfg.total_steps)
    validate(cfg)
    rows = train(cfg).rows
    n_t = cfg.n_envs * cfg.n_steps
    # cycle 1: both blocks' arenas enter the live runners' buffer (the snapshot copies it)
    cap = cfg.curriculum.buffer_size
    assert rows[0]["buffer/fill"] == min(2 * cfg.n_envs, cap) / cap
    assert [r["env_steps"] for r in rows] == [2 * n_t * (i + 1) for i in range(4)]
    prev = 0
    for r in rows:
        assert r["tagger/updated"] == float(r["replay"] > 0)
        assert r["student_steps"] - prev == r["replay"] * n_t  # the replayed groups' steps
        prev = r["student_steps"]
    assert rows[0]["replay"] == 0 and any(r["replay"] > 0 for r in rows)
    assert "all_blocks/return/tagger" in rows[0]
    pairs = check_pairs(cfg.run_dir, rows, cfg.curriculum.groups, parallel=True)
    two = train(dataclasses.replace(cfg, out_dir=tmp_path / "two", devices=2))
    for a, b in zip(learning_rows(rows), learning_rows(two.rows), strict=True):
        for k in a:
            np.testing.assert_allclose(a[k], b[k], rtol=2e-4, atol=1e-5, err_msg=k)
    same_pairs(pairs, check_pairs(two.run_dir, two.rows, cfg.curriculum.groups, parallel=True))


@pytest.mark.slow
def test_maestro_edits_insert_children_of_replayed_arenas(tmp_path: Path) -> None:
    """`--maestro.edits`: a cycle that replays plays the children too (twice the env
    steps); children enter the buffers with the parent's slot and one more mutation."""
    import dataclasses

    cfg = tiny_preset("tag-grid-maestro", tmp_path, 6)
    cfg = dataclasses.replace(cfg, curriculum=dataclasses.replace(cfg.curriculum, edits=True, n_edits=2))  # fmt: skip
    validate(cfg)
    res = train(cfg)
    n_t, prev = cfg.n_envs * cfg.n_steps, 0
    for r in res.rows:
        assert r["env_steps"] - prev == (2 * n_t if r["replay"] > 0 else n_t)
        prev = r["env_steps"]
    assert any(r["replay"] > 0 for r in res.rows)
    bufs = res.state.curriculum["buffers"]
    children = np.asarray(bufs.filled) & (np.asarray(bufs.parents) >= 0)
    assert children.any()
    muts = np.asarray(bufs.mutations)[children]
    assert np.all(muts % 2 == 0) and np.all(muts >= 2)  # n_edits per mutation
    assert np.all(
        np.asarray(bufs.mutations)[np.asarray(bufs.filled) & (np.asarray(bufs.parents) < 0)] == 0
    )
