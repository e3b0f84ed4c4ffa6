"""Replay curricula over grid Tag arenas (``tag-grid-plr``, ``tag-grid-accel``): the
presets train end to end, the scoring team's regret scores arenas (by hand), the buffer of
arenas resumes bitwise exactly after SIGKILL, and bad combinations are refused."""

from __future__ import annotations

import dataclasses
import functools
import re
from pathlib import Path
from types import SimpleNamespace

import jax.numpy as jnp
import numpy as np
import pytest

from arenax.curricula import PairedConfig
from arenax.curricula.players import Played
from arenax.options import ConfigError
from arenax.training import PRESETS, validate
from arenax.training.build import make_curriculum
from arenax.training.parallel import jit_init
from helpers import tiny_preset


def test_the_scoring_teams_regret_scores_the_arena() -> None:
    """PVL by hand: 2 envs × 2 taggers, 3 steps; tagger 1 of env 1 ends no episode."""
    q = dataclasses.replace(PRESETS["tag-grid-plr"].curriculum, score="pvl")
    algo = make_curriculum(
        dataclasses.replace(tiny_preset("tag-grid-plr", Path("x")), curriculum=q)
    )
    adv = jnp.array([[1.0, -1.0, 2.0, 0.5], [3.0, 1.0, 0.0, 0.5], [0.0, 2.0, 4.0, 0.5]])
    done = jnp.array([[0, 0, 0, 0], [0, 0, 1, 0], [1, 1, 0, 0]], bool)
    reward = jnp.array([[0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 10.0, 0.0], [-1.0, 3.0, 0.0, 0.0]])
    tr = SimpleNamespace(reward=reward, value=jnp.zeros((3, 4)), done=done, mask=jnp.ones((3, 4)))
    played = Played({"tagger": tr}, None, {"tagger": adv}, {})
    scores, best = algo._score(played, None, jnp.full((2,), -jnp.inf))
    # env 0: tagger 0 mean(max(adv,0)) over its episode = (1+3+0)/3, tagger 1 (0+1+2)/3
    # env 1: tagger 0 episode of 2 steps (2+0)/2 (the third step's partial episode does
    # not count), tagger 1 no ended episode: only tagger 0 scores
    np.testing.assert_allclose(scores, [((4 / 3) + 1.0) / 2, 1.0], rtol=1e-6)
    np.testing.assert_allclose(best, [3.0, 10.0])


def test_one_best_return_per_arena_for_maxmc() -> None:
    """MaxMC by hand: 1 env × 2 taggers, 2 steps, one episode each; tagger 0 returns 1,
    tagger 1 returns 3, the stored best is 2. Both taggers are scored against the arena's
    best return 3 (not tagger 0 against its own 1 or the stored 2), the value the buffer
    stores: score = mean(mean(3 - v) per tagger)."""
    algo = make_curriculum(tiny_preset("tag-grid-plr", Path("x")))
    assert algo.config.score == "max_mc"
    reward = jnp.array([[0.0, 1.0], [1.0, 2.0]])
    value = jnp.array([[0.5, 1.0], [1.5, 2.0]])
    done = jnp.array([[0, 0], [1, 1]], bool)
    tr = SimpleNamespace(reward=reward, value=value, done=done, mask=jnp.ones((2, 2)))
    played = Played({"tagger": tr}, None, {"tagger": jnp.zeros((2, 2))}, {})
    scores, best = algo._score(played, None, jnp.array([2.0]))
    want = ((3 - 0.5 + 3 - 1.5) / 2 + (3 - 1.0 + 3 - 2.0) / 2) / 2
    np.testing.assert_allclose(scores, [want], rtol=1e-6)
    np.testing.assert_allclose(best, [3.0])


def test_a_tagged_runners_empty_tail_does_not_score_the_arena() -> None:
    """Runner-scored PVL over 1 env × 1 runner: tagged at step 1 (it leaves), the env's
    episode ends at step 3. Only the two steps it played count: (1 + 2) / 2, not a mean
    that includes the tail's empty episode (advantages 7, 7)."""
    q = dataclasses.replace(PRESETS["tag-grid-plr"].curriculum, score="pvl", score_team="runner")
    algo = make_curriculum(
        dataclasses.replace(tiny_preset("tag-grid-plr", Path("x")), curriculum=q)
    )
    assert algo.env.num_agents("runner") == 1
    done = jnp.array([[0], [1], [0], [1]], bool)
    tr = SimpleNamespace(reward=jnp.array([[0.0], [-1.0], [0.0], [0.0]]), value=jnp.zeros((4, 1)),
                         done=done, mask=jnp.array([[1.0], [1.0], [0.0], [0.0]]))  # fmt: skip
    adv = jnp.array([[1.0], [2.0], [7.0], [7.0]])
    played = Played({"runner": tr}, None, {"runner": adv}, {})
    scores, best = algo._score(played, None, jnp.full((1,), -jnp.inf))
    np.testing.assert_allclose(scores, [1.5])
    np.testing.assert_allclose(best, [-1.0])


def test_a_block_of_a_parallel_rollout_is_its_levels_played_alone(tmp_path: Path) -> None:
    """The replay block cut out of a 3-block rollout (each team's columns are its agents,
    env-major) equals the same levels rolled out alone under their global env indices."""
    import jax

    from arenax.curricula.blocks import Blocks

    cfg = tiny_preset("tag-grid-accel", tmp_path, curriculum=dataclasses.replace(
        tiny_preset("tag-grid-accel", tmp_path).curriculum, parallel=True))  # fmt: skip
    algo = make_curriculum(cfg)
    state = jit_init(algo)(jax.random.key(0))
    params = state.learner
    n = cfg.n_envs
    gen = jax.jit(jax.vmap(algo.generator))
    blocks = {b: gen(jax.random.split(jax.random.key(i + 1), n))
              for i, b in enumerate(("new", "replay", "children"))}  # fmt: skip
    layout = Blocks(tuple(blocks), n, n)
    ids = jnp.arange(n, dtype=jnp.int32)
    play = jax.jit(algo._play)
    whole = play(params, jax.random.key(9), layout.local(blocks, ids), layout.env_ids(ids))
    part = algo._block(layout, whole, "replay")
    alone = play(params, jax.random.key(9), blocks["replay"], ids + n)
    for t in ("tagger", "runner"):
        assert part.traj[t].reward.shape == (cfg.n_steps, n * algo.env.num_agents(t))
    for a, b in zip(jax.tree.leaves(part), jax.tree.leaves(alone), strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6)


def test_both_teams_scores_average_by_hand() -> None:
    """score_team=both with PVL: env 0's taggers score (4/3 + 1)/2 as above and its runner
    (one episode of 3 steps, advantages 2, -1, 1) 1: the level scores their mean; env 1's
    runner ends no episode, so only the taggers' score counts."""
    q = dataclasses.replace(PRESETS["tag-grid-plr"].curriculum, score="pvl", score_team="both")
    algo = make_curriculum(
        dataclasses.replace(tiny_preset("tag-grid-plr", Path("x")), curriculum=q)
    )
    adv = jnp.array([[1.0, -1.0, 2.0, 0.5], [3.0, 1.0, 0.0, 0.5], [0.0, 2.0, 4.0, 0.5]])
    done = jnp.array([[0, 0, 0, 0], [0, 0, 1, 0], [1, 1, 0, 0]], bool)
    taggers = SimpleNamespace(reward=jnp.zeros((3, 4)), value=jnp.zeros((3, 4)), done=done,
                              mask=jnp.ones((3, 4)))  # fmt: skip
    r_adv = jnp.array([[2.0, 5.0], [-1.0, 5.0], [1.0, 5.0]])
    r_done = jnp.array([[0, 0], [0, 0], [1, 0]], bool)
    runner = SimpleNamespace(reward=jnp.zeros((3, 2)), value=jnp.zeros((3, 2)), done=r_done,
                             mask=jnp.ones((3, 2)))  # fmt: skip
    played = Played({"tagger": taggers, "runner": runner}, None,
                    {"tagger": adv, "runner": r_adv}, {})  # fmt: skip
    scores, _ = algo._score(played, None, jnp.full((2,), -jnp.inf))
    np.testing.assert_allclose(scores, [(((4 / 3) + 1.0) / 2 + 1.0) / 2, 1.0], rtol=1e-6)
    with pytest.raises(ConfigError, match=r"plr\.score_team='both': both teams' scores combine"):
        validate(dataclasses.replace(PRESETS["tag-grid-plr"], curriculum=dataclasses.replace(
            PRESETS["tag-grid-plr"].curriculum, score_team="both")))  # fmt: skip


def test_bad_combinations_are_refused() -> None:
    cases = [
        (dataclasses.replace(PRESETS["tag-continuous"], curriculum=PairedConfig()),
         "teacher.n_walls=60: must be in [0, 0] (the game's max_obstacles)"),
        (dataclasses.replace(PRESETS["tag-sfl"], env=dataclasses.replace(
            PRESETS["tag-sfl"].env, runners_leave=False)),
         "env.runners_leave=False: SFL over continuous arenas counts each runner as one trial"),
        (dataclasses.replace(PRESETS["tag-grid-plr"], curriculum=PairedConfig()),
         "runner.policy='shared': must differ from the taggers' policy"),
        (dataclasses.replace(PRESETS["tag-grid-plr"], curriculum=dataclasses.replace(
            PRESETS["tag-grid-plr"].curriculum, score_team="x")),
         "plr.score_team='x': allowed: tagger, runner"),
        (dataclasses.replace(PRESETS["tag-grid-maestro"], curriculum=dataclasses.replace(
            PRESETS["tag-grid-maestro"].curriculum, parallel=True, edits=True)),
         "maestro.edits=True: MAESTRO∥ has no children block"),
    ]  # fmt: skip
    for cfg, message in cases:
        with pytest.raises(ConfigError, match=re.escape(message)):
            validate(cfg)


def tiny_sfl(tmp_path: Path, name: str, updates: int, **changes: object):
    cfg = tiny_preset("tag-grid-sfl", tmp_path, name=name, **changes)
    return dataclasses.replace(cfg, total_steps=None, total_updates=updates)


def test_sfl_success_is_the_scoring_teams_first_episode() -> None:
    """Taggers succeed when the runner is tagged, runners when an episode ends untagged;
    only each env's first episode counts."""
    from arenax.curricula.sfl import first_episode_success
    from arenax.envs.tag.family import team_success

    algo = make_curriculum(tiny_sfl(Path("x"), "x", 1))
    # 3 envs over 3 steps: env 0 tagged at t = 1, env 1 survives to the time limit at
    # t = 0 (then tagged), env 2 ends no episode
    done = jnp.array([[0, 1, 0], [1, 1, 0], [0, 0, 0]], bool)
    tagged = jnp.array([[0, 0, 0], [1, 1, 0], [0, 0, 0]], bool)
    ep = {"done": done, "success": tagged}
    runner = dataclasses.replace(algo, success=functools.partial(team_success, algo.env, "runner"))
    np.testing.assert_array_equal(first_episode_success(done, algo._success(ep)), [1, 0, 0])
    np.testing.assert_array_equal(first_episode_success(done, runner._success(ep)), [0, 1, 0])
