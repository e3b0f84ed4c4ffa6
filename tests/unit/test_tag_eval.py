"""Evaluation of Tag teams: episode statistics against a step-by-step replay, scripted
chasers and fleers, intervals."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from arenax.envs.tag import GridTagEnv, TagEnv
from arenax.envs.tag.evaluation import (
    MatchResult,
    evaluate_matchup,
    play_episodes,
    summarize,
    team_actor,
    worst_cases,
)
from arenax.envs.tag.scripted import scripted_actions


def test_episode_statistics_match_a_step_by_step_replay() -> None:
    env = TagEnv(n_taggers=2, n_runners=5, episode_length=15, arena=3.0, tag_distance=0.15,
                 k_nearest=3)  # fmt: skip
    act = team_actor(env, {"tagger": "scripted", "runner": "random"}, {}, {}, False)
    levels = jax.vmap(env.generate)(jax.random.split(jax.random.key(0), 4))
    key = jax.random.key(1)
    out = jax.device_get(play_episodes(env, act, levels, key))
    # the env's own functions, compiled (op by op each call compiles and runs dozens of ops)
    reset_state = jax.jit(env.reset_state)
    step = jax.jit(lambda k, s: env.step_state(k, s, act(s, env.observe(s), k)))
    for e in range(4):
        s = reset_state(None, jax.tree.map(lambda x, e=e: x[e], levels))
        tagged, first, ret_t, length = 0.0, 0, 0.0, 0
        for t in range(env.episode_length):
            k = jax.random.split(jax.random.fold_in(key, t), 4)[e]
            s, r, term, trunc, info = step(k, s)
            tagged += float(info["tagged"])
            first = t + 1 if first == 0 and int(info["tagged"]) > 0 else first
            ret_t += float(np.mean(r["tagger"]))
            length += 1
            if bool(term | trunc):
                break
        assert out["tagged"][e] == tagged and out["first"][e] == first
        assert out["length"][e] == length
        np.testing.assert_allclose(out["return_tagger"][e], ret_t, rtol=1e-5, atol=1e-5)


def test_scripted_chasers_tag_and_fleers_escape_more_than_random() -> None:
    env = GridTagEnv(n_taggers=1, size=8, episode_length=30, random_start=True)
    levels = jax.vmap(env.generate)(jax.random.split(jax.random.key(2), 200))
    rate, first = {}, {}
    for tg, rn in (("scripted", "random"), ("random", "random"), ("scripted", "scripted")):
        res, _ = evaluate_matchup(env, tg, rn, {}, {}, levels, jax.random.key(3))
        rate[tg, rn], first[tg, rn] = res.any_tag, res.first_tag
        assert 0.0 <= res.any_tag_lo <= res.any_tag <= res.any_tag_hi <= 1.0
    assert rate["scripted", "random"] > rate["random", "random"] + 0.3
    assert first["scripted", "scripted"] > first["scripted", "random"]  # fleeing delays it
    # continuous Tag: chasing beats random taggers
    cont = TagEnv(n_taggers=2, n_runners=6, episode_length=40, arena=5.0, tag_distance=0.05,
                  k_nearest=3)  # fmt: skip
    lv = jax.vmap(cont.generate)(jax.random.split(jax.random.key(4), 64))
    chase, _ = evaluate_matchup(cont, "scripted", "random", {}, {}, lv, jax.random.key(5))
    rand, _ = evaluate_matchup(cont, "random", "random", {}, {}, lv, jax.random.key(5))
    assert chase.tagged > rand.tagged + 0.5


def _result(taggers: str, runners: str, any_tag: float, arena: str = "") -> MatchResult:
    nan = float("nan")
    return MatchResult(taggers, runners, arena, 10, *[nan] * 3, any_tag, *[nan] * 12)


def test_worst_cases_over_opponents_and_arenas_by_hand() -> None:
    results = [
        _result("trained", "trained", 0.9, "a"),  # their own partners: not an opponent
        _result("trained", "random", 0.8, "a"),
        _result("trained", "other", 0.4, "b"),
        _result("trained", "scripted", 0.6, "b"),
        _result("scripted", "trained", 0.7, "a"),
        _result("other", "trained", 0.2, "b"),
        _result("random", "random", 0.0, "a"),  # nobody's
    ]
    worst = worst_cases(results)
    assert worst["tagger"][0] == 0.4 and worst["tagger"][1].runners == "other"
    assert worst["runner"][0] == pytest.approx(0.3) and worst["runner"][1].taggers == "scripted"
    summary = summarize(results)
    assert summary["eval/worst/tagger"] == 0.4
    assert summary["eval/worst/runner"] == pytest.approx(0.3)


def test_a_coplayer_drives_its_team_with_its_own_parameters() -> None:
    """The same policy with another run's parameters: the co-player's actions are those
    of its parameters, not the trained run's; a team a co-player run scripted is scripted."""
    from arenax.nn.mlp import MLPConfig

    env = GridTagEnv(n_taggers=2, size=6, episode_length=10)
    pol = MLPConfig(hidden=(8,)).policy(env.observation_space("runner"), env.action_space("runner"))
    # every function compiled (op by op, each distinct primitive compiles on its own)
    obs, state = jax.jit(env.reset)(None, jax.jit(env.generate)(jax.random.key(0)))
    seq = obs["runner"][None]
    init = jax.jit(pol.init)
    mine, theirs = init(jax.random.key(1), seq), init(jax.random.key(2), seq)
    policies = {"runner": pol}
    coplayers = {"other": (policies, {"runner": theirs}), "scripter": ({}, {})}

    def runner_actions(driver: str) -> np.ndarray:
        act = team_actor(env, {"tagger": "random", "runner": driver}, policies,
                         {"runner": mine}, True, coplayers)  # fmt: skip
        return np.asarray(jax.jit(act)(state, obs, jax.random.key(3))["runner"])

    mode = jax.jit(lambda p: pol.dist.mode(pol.apply(p, seq, None, ())[1][0]))
    greedy = lambda p: np.asarray(mode(p))  # noqa: E731
    np.testing.assert_array_equal(runner_actions("trained"), greedy(mine))
    np.testing.assert_array_equal(runner_actions("other"), greedy(theirs))
    scripted = np.asarray(jax.jit(lambda s: scripted_actions(env, s, "runner"))(state))
    np.testing.assert_array_equal(runner_actions("scripter"), scripted)
