"""The reference UED library's rules as options, the buffer fix of PLR∥ / ACCEL∥, and budgets
in PPO updates: each on a tiny case whose outcome is computed by hand."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from arenax.curricula import ACCELConfig, DRConfig, PairedConfig, PLRConfig
from arenax.curricula import buffer as B
from arenax.envs import AutoReplay, EpisodeStats
from arenax.envs.maze import MazeEditor, MazeEnv, MazeLevel
from arenax.envs.maze.family import MazeConfig
from arenax.nn import StudentPolicy
from arenax.rl.gae import gae
from arenax.rl.rollout import rollout, start_rollout
from arenax.training import PRESETS, ConfigError, TrainConfig, validate, with_compat
from arenax.training.build import make_curriculum
from arenax.training.parallel import jit_init
from arenax.training.saved import load_config, save_config
from helpers import tiny_preset

ROWS = ["#....", ".#...", "..#..", "...#.", "....#"]


def maze(i: int, direction: int = 0) -> MazeLevel:
    """Distinct 5 x 5 levels: the wall diagonal of ``ROWS`` with wall ``i`` removed."""
    rows = [list(r) for r in ROWS]
    rows[i][i] = "."
    rows[4 - (i == 4)][0] = ">v<^"[direction]
    rows[0][4] = "G"
    return MazeLevel.from_ascii("\n".join("".join(r) for r in rows))


def stack(levels: list[MazeLevel]) -> MazeLevel:
    return jax.tree.map(lambda *x: jnp.stack(x), *levels)


def small(preset: str, tmp_path: Path, **changes: object) -> TrainConfig:
    cfg = dataclasses.replace(tiny_preset(preset, tmp_path), n_steps=16, chunk=2,
                              checkpoint_every=2, total_steps=None, total_updates=4)  # fmt: skip
    return dataclasses.replace(cfg, **changes)


def four_slots(scores: list[float], **fields: object) -> B.LevelBuffer:
    """A full buffer of the levels ``maze(0..3)`` with these scores (and other fields)."""
    return B.create(maze(0), 4).replace(
        levels=stack([maze(i) for i in range(4)]),
        scores=jnp.array(scores, jnp.float32),
        filled=jnp.ones((4,), jnp.bool_),
        clock=jnp.int32(4),
        **fields,
    )


# ---------------------------------------------------------------------- the PLR∥ buffer fix
def test_parallel_rescoring_keeps_the_new_level_in_a_slot_it_just_took(tmp_path: Path) -> None:
    """Capacity 4, scores [.9, .8, .7, .1]; slot 3 was replayed this cycle. A new level with
    score .3 and best return 0 takes slot 3 (the lowest replay probability); the replay
    block's rescoring of slot 3 (score .2, best .95) must not land on the new level."""
    algo = make_curriculum(small("maze-pplr", tmp_path))
    algo = dataclasses.replace(
        algo, config=dataclasses.replace(algo.config, staleness_coef=0.0, buffer_size=4)
    )
    buf = B.create(maze(0), 4).replace(
        levels=stack([maze(i) for i in range(4)]),
        scores=jnp.array([0.9, 0.8, 0.7, 0.1], jnp.float32),
        max_returns=jnp.array([0.5, 0.5, 0.5, 0.6], jnp.float32),
        filled=jnp.ones((4,), jnp.bool_),
        clock=jnp.int32(4),
    )
    new, replayed = stack([maze(4)]), stack([maze(3)])
    idx = jnp.array([3], jnp.int32)
    scores = {"new": jnp.array([0.3]), "replay": jnp.array([0.2])}
    best = {"new": jnp.array([0.0]), "replay": jnp.array([0.95])}
    update = jax.jit(algo._update_buffer)  # both calls, one program (op by op: one per primitive)
    out, taken = update(
        buf, {"new": new, "replay": replayed}, idx, jnp.arange(1), scores, best, jnp.bool_(True)
    )
    assert float(taken) == 1.0
    assert bool(jnp.all(B._equal(jax.tree.map(lambda x: x[3:4], out.levels), maze(4))))
    assert float(out.scores[3]) == pytest.approx(0.3)
    assert float(out.max_returns[3]) == pytest.approx(0.0)
    np.testing.assert_allclose(out.scores[:3], [0.9, 0.8, 0.7])
    # a replayed slot that no new level took is rescored as before
    idx2 = jnp.array([0], jnp.int32)
    out2, taken2 = update(
        buf, {"new": new, "replay": stack([maze(0)])}, idx2, jnp.arange(1),
        {"new": jnp.array([-jnp.inf]), "replay": jnp.array([0.2])},
        {"new": jnp.array([-jnp.inf]), "replay": jnp.array([0.95])}, jnp.bool_(True),
    )  # fmt: skip
    assert float(taken2) == 0.0
    assert float(out2.scores[0]) == pytest.approx(0.2)
    assert float(out2.max_returns[0]) == pytest.approx(0.95)


@pytest.mark.parametrize(
    ("rule", "replay_score", "back"),
    [("higher_score", 0.5, True), ("higher_score", 0.2, False), ("keep_new", 0.5, False)],
)
def test_a_taken_slot_goes_back_to_a_replayed_level_that_scores_higher(
    tmp_path: Path, rule: str, replay_score: float, back: bool
) -> None:
    """The case above with the reference's rule (``--plr.taken-slot higher_score``): the
    replayed level (now scored ``replay_score``) competes for slot 3 against the new level
    (0.3) and takes it back when it scores at least as high, with its own best return
    (0.95) and mutation count (2); otherwise, or with arenax's rule, the new level stays."""
    algo = make_curriculum(small("maze-pplr", tmp_path))
    algo = dataclasses.replace(algo, config=dataclasses.replace(
        algo.config, staleness_coef=0.0, buffer_size=4, taken_slot=rule))  # fmt: skip
    buf = four_slots([0.9, 0.8, 0.7, 0.1], max_returns=jnp.array([0.5, 0.5, 0.5, 0.6]),
                     mutations=jnp.array([0, 0, 0, 2], jnp.int32))  # fmt: skip
    idx = jnp.array([3], jnp.int32)
    scores = {"new": jnp.array([0.3]), "replay": jnp.array([replay_score])}
    best = {"new": jnp.array([0.0]), "replay": jnp.array([0.95])}
    out, taken = algo._update_buffer(
        buf, {"new": stack([maze(4)]), "replay": stack([maze(3)])}, idx, jnp.arange(1), scores,
        best, jnp.bool_(True),
    )  # fmt: skip
    assert float(taken) == 1.0
    held = jax.tree.map(lambda x: x[3:4], out.levels)
    assert bool(jnp.all(B._equal(held, maze(3 if back else 4))))
    want = (replay_score, 0.95, 2) if back else (0.3, 0.0, 0)
    assert float(out.scores[3]) == pytest.approx(want[0])
    assert float(out.max_returns[3]) == pytest.approx(want[1])
    assert int(out.mutations[3]) == want[2]
    np.testing.assert_allclose(out.scores[:3], [0.9, 0.8, 0.7])


def _warm_cycle(tmp_path: Path, preset: str, **plr: object) -> tuple:
    """One compiled parallel cycle of a tiny preset whose buffer is already full (scores
    .5, distinct levels), and its starting state."""
    algo = make_curriculum(small(preset, tmp_path))
    algo = dataclasses.replace(algo, config=dataclasses.replace(algo.config, **plr))
    state = jit_init(algo)(jax.random.key(0))
    buf = state.curriculum
    cap = buf.capacity
    levels = jax.vmap(algo.generator)(jax.random.split(jax.random.key(1), cap))
    buf = buf.replace(levels=levels, scores=jnp.full((cap,), 0.5), max_returns=jnp.zeros((cap,)),
                      filled=jnp.ones((cap,), jnp.bool_), clock=jnp.int32(cap))  # fmt: skip
    state = state.next(state.learner, buf)
    ids = jnp.arange(algo.n_envs, dtype=jnp.int32)
    cycle = jax.jit(lambda st, k: algo.cycle(st, k, ids, None))
    return algo, state, cycle


@pytest.mark.slow  # compiles whole cycles
@pytest.mark.parametrize(("rule", "prob", "replays"),
                         [("always", 0.0, True), ("coin", 0.0, False), ("coin", 1.0, True)])  # fmt: skip
def test_parallel_replay_on_every_cycle_or_on_a_coin(
    tmp_path: Path, rule: str, prob: float, replays: bool
) -> None:
    """A warm PLR∥ buffer: arenax replays (and trains) on every cycle whatever
    ``replay_prob``, as the reference does (its PLR runner sets ``replay_prob = 1.0`` for
    the parallel forms); with ``--plr.parallel-replay coin`` (an ablation) a cycle replays
    with probability ``replay_prob`` and otherwise neither samples nor trains (robust)."""
    _, state, cycle = _warm_cycle(tmp_path, "maze-pplr", parallel_replay=rule, replay_prob=prob)
    new, m = cycle(state, jax.random.key(3))
    assert float(m["replay"]) == float(replays) and float(m["updated"]) == float(replays)
    moved = jax.tree.leaves(jax.tree.map(lambda a, b: bool(jnp.any(a != b)),
                                         new.learner, state.learner))  # fmt: skip
    assert any(moved) == replays


@pytest.mark.slow  # compiles whole cycles
def test_parallel_plr_that_is_not_robust_trains_before_warm_up(tmp_path: Path) -> None:
    """PLR∥ without ``robust`` trains on every cycle, as sequential PLR does: on a cold
    buffer the replay block holds new levels and the student learns on them; robust PLR∥
    does not train until the buffer is warm."""
    for robust in (False, True):
        algo = make_curriculum(small("maze-pplr", tmp_path))
        algo = dataclasses.replace(algo, config=dataclasses.replace(algo.config, robust=robust))
        state = jit_init(algo)(jax.random.key(0))
        ids = jnp.arange(algo.n_envs, dtype=jnp.int32)
        _, m = jax.jit(lambda st, k: algo.cycle(st, k, ids, None))(state, jax.random.key(3))  # noqa: B023
        assert float(m["replay"]) == 0.0
        assert float(m["updated"]) == float(not robust)
        assert 0.0 <= float(m["all_blocks/return_per_env"]) <= 1.0  # minimax's figure


def test_the_reference_training_return_weighs_every_env_the_same() -> None:
    """minimax's training ``return``: per env, the mean of its last ``window`` episodes
    ended in the rollout (0 where none ended), then the mean over envs; by hand on 3 envs
    × 6 steps, window 2: env 0 ends 3 episodes (0.5, 0.7, 0.9: keeps 0.7 and 0.9), env 1
    none, env 2 one (0.2) → (0.8 + 0 + 0.2) / 3, where the mean over the ended episodes
    is (0.5 + 0.7 + 0.9 + 0.2) / 4."""
    from arenax.curricula.common import ended_means, per_env_return

    done = np.zeros((6, 3), bool)
    ret = np.zeros((6, 3), np.float32)
    for t, env, r in [(1, 0, 0.5), (3, 0, 0.7), (5, 0, 0.9), (4, 2, 0.2)]:
        done[t, env], ret[t, env] = True, r
    got = per_env_return(jnp.asarray(done), jnp.asarray(ret), None, window=2)
    np.testing.assert_allclose(float(got), (0.8 + 0.0 + 0.2) / 3, rtol=1e-6)
    _, means = ended_means(jnp.asarray(done), {"r": jnp.asarray(ret)}, None)
    np.testing.assert_allclose(float(means["r"]), 2.3 / 4, rtol=1e-6)


def test_mutation_parents_and_the_mutation_counter(tmp_path: Path) -> None:
    """Hard criterion with 3 parents out of 8 replayed levels: the children come from the 3
    highest scores, in turn; the counter adds one per mutation (the reference) or
    ``n_edits``."""
    cfg = small("maze-paccel", tmp_path)
    algo = make_curriculum(cfg)
    algo = dataclasses.replace(algo, n_envs=8, config=dataclasses.replace(
        algo.config, mutation_criterion="hard", mutation_parents=3))  # fmt: skip
    parents = stack([maze(i % 5) for i in range(8)])
    scores = jnp.array([0.1, 0.9, 0.3, 0.8, 0.0, 0.7, 0.2, 0.05])
    _, pick = algo._children(jax.random.key(0), parents, scores)
    assert pick.tolist() == [1, 3, 5, 1, 3, 5, 1, 3]
    half = dataclasses.replace(algo, config=dataclasses.replace(algo.config, mutation_parents=0))
    assert half._children(jax.random.key(0), parents, scores)[1].tolist() == [
        1,
        3,
        5,
        2,
        1,
        3,
        5,
        2,
    ]
    for count, step in (("mutations", 1), ("edits", algo.config.n_edits)):
        a = dataclasses.replace(algo, n_envs=1, config=dataclasses.replace(
            algo.config, mutation_count=count, staleness_coef=0.0))  # fmt: skip
        buf = four_slots([0.9, 0.8, 0.5, 0.1], mutations=jnp.array([0, 0, 3, 0], jnp.int32))
        blocks = {"new": stack([maze(4)]), "replay": stack([maze(2)]),
                  "children": stack([maze(2, direction=1)])}  # fmt: skip
        out, _ = a._update_buffer(
            buf, blocks, jnp.array([2], jnp.int32), jnp.arange(1),
            {"new": jnp.array([-jnp.inf]), "replay": jnp.array([0.5]), "children": jnp.array([0.9])},
            {"new": jnp.array([-jnp.inf]), "replay": jnp.array([0.0]), "children": jnp.array([0.0])},
            jnp.bool_(True),
        )  # fmt: skip
        kid = int(jnp.argmax(B._equal(out.levels, maze(2, direction=1))))
        assert int(out.mutations[kid]) == 3 + step and int(out.parents[kid]) == 2


@pytest.mark.parametrize("last", [True, False])
def test_the_teachers_step_embedding_rows(tmp_path: Path, last: bool) -> None:
    """A 4-wall editing episode has 6 steps: 7 embedding rows with a row for its last
    observation (arenax), 6 without (the reference's table)."""
    cfg = small("maze-paired", tmp_path)
    c = cfg.curriculum
    cfg = dataclasses.replace(cfg, curriculum=dataclasses.replace(
        c, teacher=dataclasses.replace(c.teacher, embed_last_step=last)))  # fmt: skip
    algo = make_curriculum(cfg)
    assert algo.editor.episode_length == 6
    state = jax.eval_shape(algo.init, jax.random.key(0))
    shapes = [x.shape for p, x in jax.tree_util.tree_leaves_with_path(state.curriculum.params)
              if "Embed" in jax.tree_util.keystr(p)]  # fmt: skip
    assert shapes == [(7 if last else 6, c.teacher.time_embed)]


def test_published_presets_budget_30000_updates() -> None:
    """minimax's maze configs train 30,000 updates; the SFL paper's 3e8 steps of 256 x 256
    (4,577 updates)."""
    for name, cfg in PRESETS.items():
        if isinstance(cfg.env, MazeConfig):
            want = 300_000_000 // (256 * 256) if name == "maze-sfl-paper" else 30_000
            assert (cfg.total_updates, cfg.total_steps) == (want, None), name
            assert cfg.update_rounds == want


# ---------------------------------------------------------------------- time limits
@pytest.mark.parametrize("boot", [True, False])
def test_time_limit_bootstrapped_or_terminal(boot: bool) -> None:
    """One env, max_steps 2, the agent only turns: step 2 truncates. Bootstrapped, the
    target there is γ V(final obs); terminal, it is 0 (no reward)."""
    env = MazeEnv(height=5, width=5, max_steps=2, normalize_obs=True)
    wrapped = EpisodeStats(AutoReplay(env))
    pol = StudentPolicy(cell="ff", hidden=8)
    # compiled (op by op the set-up alone compiles and runs over a hundred ops)
    obs, _ = jax.jit(env.reset)(jax.random.key(0), maze(0))
    params = jax.jit(pol.init)(jax.random.key(1), jax.tree.map(lambda x: x[None], obs["agent"]))
    ids = jnp.arange(1, dtype=jnp.int32)
    start = jax.jit(start_rollout, static_argnums=0)(
        wrapped, jax.random.key(2), stack([maze(0)]), ids, pol.initial_carry(1)
    )
    play = jax.jit(rollout, static_argnums=(0, 1, 5), static_argnames="bootstrap_truncation")
    traj, _, _ = play(wrapped, pol, params, jax.random.key(3), start, 2, ids,
                      bootstrap_truncation=boot)  # fmt: skip
    assert bool(traj.done[1, 0])
    assert bool(traj.terminated[1, 0]) == (not boot)
    gamma = 0.9
    _, targets = gae(
        traj.reward, traj.value, traj.next_value, traj.terminated, traj.done, gamma, 1.0
    )
    if boot:  # the target bootstraps from the value of the state the episode was cut in
        assert float(traj.next_value[1, 0]) != 0.0
        assert float(targets[1, 0]) == pytest.approx(gamma * float(traj.next_value[1, 0]))
    else:
        assert float(targets[1, 0]) == pytest.approx(0.0)


# ---------------------------------------------------------------------- editor collisions
def _build(editor: MazeEditor, cells: list[int]) -> MazeLevel:
    state = editor.reset_state(jax.random.key(0), None)
    for t, c in enumerate(cells):
        state = editor.step_state(jax.random.key(t), state, {"teacher": jnp.int32(c)})[0]
    return editor.decode(state)


def test_editor_keeps_or_redirects_the_teachers_cells() -> None:
    """3 x 3, walls at cells 0 and 4, then the goal on cell 4 (a wall), the agent on cell 0
    (a wall). ``keep`` (the reference): goal (1, 1), agent (0, 0), both walls removed;
    ``redirect``: both moved to free cells, the walls stay."""
    keep = _build(MazeEditor(height=3, width=3, n_walls=2, noise_dim=0), [0, 4, 4, 0])
    assert tuple(np.asarray(keep.goal_pos)) == (1, 1)
    assert tuple(np.asarray(keep.agent_pos)) == (0, 0)
    assert int(jnp.sum(keep.walls)) == 0
    red = _build(
        MazeEditor(height=3, width=3, n_walls=2, noise_dim=0, collisions="redirect"), [0, 4, 4, 0]
    )
    assert bool(red.walls[0, 0]) and bool(red.walls[1, 1])
    for pos in (red.goal_pos, red.agent_pos):
        x, y = np.asarray(pos)
        assert not bool(red.walls[y, x])
    # an agent chosen on the goal moves to a free cell under both rules
    for rule in ("keep", "redirect"):
        lv = _build(
            MazeEditor(height=3, width=3, n_walls=1, noise_dim=0, collisions=rule), [0, 4, 4]
        )
        assert tuple(np.asarray(lv.goal_pos)) == (1, 1)
        assert tuple(np.asarray(lv.agent_pos)) != (1, 1)
        x, y = np.asarray(lv.agent_pos)
        assert not bool(lv.walls[y, x])


# ---------------------------------------------------------------------- buffer rules
def _full_buffer() -> B.LevelBuffer:
    return B.create(maze(0), 2).replace(
        levels=stack([maze(0), maze(1)]),
        scores=jnp.array([0.5, 0.1], jnp.float32),
        last_seen=jnp.array([7, 3], jnp.int32),
        max_returns=jnp.array([0.4, 0.8], jnp.float32),
        filled=jnp.ones((2,), jnp.bool_),
        clock=jnp.int32(10),
    )


@pytest.mark.parametrize("inherit", [False, True])
def test_staleness_of_an_inserted_level(inherit: bool) -> None:
    """A new level (score .3) replaces slot 1 (score .1, last seen at 3, clock 10)."""
    buf, slots = B.insert(
        _full_buffer(), stack([maze(2)]), jnp.array([0.3]), jnp.array([0.0]), 0.0, 1.0,
        inherit_staleness=inherit,
    )  # fmt: skip
    assert slots.tolist() == [1]
    assert int(buf.clock) == 11
    assert int(buf.last_seen[1]) == (3 if inherit else 11)  # age 8 kept, or 0


def test_staleness_falls_back_to_the_score_distribution_when_nothing_is_stale() -> None:
    """Both entries just seen (the reference's first cycle, `ages` all 0): the staleness
    part is the score part (`plr.py`: "If no solutions are stale, do not sample from
    staleness dist"), not uniform. Rank, temperature 1: P_S = (1, 1/2) / 1.5."""
    buf = _full_buffer().replace(last_seen=jnp.array([10, 10], jnp.int32))
    p_score = np.array([2 / 3, 1 / 3])
    np.testing.assert_allclose(B.replay_probs(buf, 0.5, 1.0), p_score, rtol=1e-6)
    np.testing.assert_allclose(B.staleness_weights(buf), [0.5, 0.5])  # no fallback given
    stale = buf.replace(last_seen=jnp.array([7, 10], jnp.int32))  # entry 0 is 3 old
    np.testing.assert_allclose(B.replay_probs(stale, 0.5, 1.0), 0.5 * p_score + [0.5, 0.0])


@pytest.mark.parametrize("clock", ["levels", "draws"])
def test_what_ages_the_levels(clock: str) -> None:
    """Two cycles without replay, two new levels each, into an empty buffer of 4. The
    reference ages every filled level by the batch size on such a cycle and not on
    insertion (`plr.py`: `ages = (ages + n) * filled` in `sample`; `update` leaves ages
    alone): ages [2, 2, 0, 0]. arenax's clock counts each inserted level: [3, 2, 1, 0]."""
    c = PLRConfig(staleness_clock=clock, staleness_coef=0.5).sampler
    buf = B.create(maze(0), 4)
    for cycle in range(2):
        buf = c.age_without_replay(buf, 2)
        levels = stack([maze(2 * cycle), maze(2 * cycle + 1)])
        buf = c.insert(buf, levels, jnp.array([0.2, 0.4]), jnp.zeros(2))
    ages = (buf.clock - buf.last_seen).tolist()
    assert ages == ([2, 2, 0, 0] if clock == "draws" else [3, 2, 1, 0])
    # the staleness distribution: the newest cycle's levels are not stale at all (draws)
    expected = [0.5, 0.5, 0.0, 0.0] if clock == "draws" else [0.5, 1 / 3, 1 / 6, 0.0]
    np.testing.assert_allclose(B.staleness_weights(buf), expected, rtol=1e-6)
    # a replay draw ages every filled level by one and makes the drawn one just seen
    buf, idx = B.sample_one_at_a_time(buf, jax.random.key(0), 1, *c.priority)
    ages_after = np.asarray(ages) + 1
    ages_after[int(idx[0])] = 0
    assert (buf.clock - buf.last_seen).tolist() == ages_after.tolist()


@pytest.mark.parametrize("ignore", [(), ("agent_dir",)])
def test_duplicates_with_or_without_the_direction(ignore: tuple) -> None:
    """Level 0 facing down instead of right: a new level, or the same maze (its entry is
    rescored instead of a copy being added)."""
    buf = B.create(maze(0), 3)
    buf, _ = B.insert(buf, stack([maze(0)]), jnp.array([0.5]), jnp.array([0.1]), 0.0, 1.0)
    buf, slots = B.insert(
        buf, stack([maze(0, direction=1)]), jnp.array([0.7]), jnp.array([0.2]), 0.0, 1.0,
        ignore=ignore,
    )  # fmt: skip
    if ignore:
        assert slots.tolist() == [0] and int(jnp.sum(buf.filled)) == 1
        assert float(buf.scores[0]) == pytest.approx(0.7)
    else:
        assert slots.tolist() == [1] and int(jnp.sum(buf.filled)) == 2
    best = B.stored_best(buf, stack([maze(0, direction=1), maze(3)]), ignore)
    assert float(best[0]) == pytest.approx(0.2) and float(best[1]) == -np.inf


# ---------------------------------------------------------------------- the switch
def test_compat_minimax_sets_every_reference_rule(tmp_path: Path) -> None:
    for name in ("maze-dr", "maze-pplr", "maze-paccel", "maze-paired"):
        cfg = with_compat(PRESETS[name], "minimax")
        c, ppo = cfg.curriculum, cfg.teams["agent"].learner
        assert ppo.bootstrap_truncation is False
        if isinstance(c, PairedConfig):
            assert c.teacher.ppo.bootstrap_truncation is False
            assert c.teacher.collisions == "keep"
            assert c.teacher.embed_last_step is False
        if isinstance(c, PLRConfig):
            assert c.inserted_staleness == "inherit"
            assert c.staleness_clock == "draws"
            assert c.duplicate_ignores == ("agent_dir",)
            assert c.taken_slot == "higher_score"
            assert c.sampling == "one_at_a_time"
            # the reference replays on every warm cycle of PLR∥ / ACCEL∥ (its runner sets
            # replay_prob = 1.0 for them), which is arenax's default: no coin
            assert c.parallel_replay == "always"
        if isinstance(c, ACCELConfig):
            assert c.cold_children == "new"
            assert (c.mutation_parents, c.mutation_count) == (4, "mutations")
        assert ppo.carry_over == isinstance(c, DRConfig | PairedConfig)
        # minimax's initialisation (flax's per-gate LSTM kernels, a constant last policy
        # layer) for the student and the teacher
        nets = [cfg.teams["agent"].network] + ([c.teacher] if isinstance(c, PairedConfig) else [])
        for net in nets:
            assert (net.gate_init, net.policy_init) == ("per_gate", "constant")
        validate(cfg)
        # the options are in config.json, and a reloaded config is the same
        save_config(cfg, tmp_path / "c.json")
        assert json.loads((tmp_path / "c.json").read_text())["compat"] == "minimax"
        assert load_config(tmp_path / "c.json") == cfg
    # the Python API applies the rules as the CLI does (it only set the field until this
    # fix), before the other options, which still win
    import arenax

    cfg = arenax.configure("maze-pplr", compat="minimax")
    assert cfg == with_compat(PRESETS["maze-pplr"], "minimax")
    cfg = arenax.configure("maze-pplr", compat="minimax", plr={"sampling": "batch"})
    assert (cfg.curriculum.sampling, cfg.curriculum.taken_slot) == ("batch", "higher_score")
    with pytest.raises(ConfigError, match="compat='paper'"):
        arenax.configure("maze-pplr", compat="paper")
    # arenax's own defaults differ from the reference in each of these
    base = PRESETS["maze-paccel"]
    ppo, c = base.teams["agent"].learner, base.curriculum
    assert ppo.bootstrap_truncation is None and not ppo.carry_over
    assert (c.inserted_staleness, c.duplicate_ignores, c.cold_children) == ("zero", (), "mutate")
    assert (c.taken_slot, c.staleness_clock) == ("keep_new", "levels")
    net = base.teams["agent"].network
    assert (net.gate_init, net.policy_init) == ("joint", "orthogonal")
    with pytest.raises(ConfigError, match=r"ppo\.carry_over=True: applies to dr and paired"):
        agent = dataclasses.replace(
            base.teams["agent"], learner=dataclasses.replace(ppo, carry_over=True)
        )
        validate(dataclasses.replace(base, teams={"agent": agent}))
