"""Training against a scripted opponent (``--runner.scripted`` / ``--tagger.scripted``): the
env with a scripted team steps exactly as the whole game driven by the script, the acting
team alone observes, acts and is rewarded; runs train and evaluate with the script as that
team's driver; bad combinations are refused."""

from __future__ import annotations

import dataclasses

import jax
import numpy as np
import pytest

from arenax.envs.tag import BENCHMARK, GridTagEnv, TagEnv
from arenax.envs.tag.scripted import ScriptedTeams, scripted_actions
from arenax.envs.wrappers import whole_game
from arenax.options import ConfigError
from arenax.training import PRESETS, validate


@pytest.mark.parametrize("game", ["grid", "continuous"])
@pytest.mark.parametrize("scripted", ["runner", "tagger"])
def test_a_scripted_team_plays_inside_the_env(game: str, scripted: str) -> None:
    """20 steps of the wrapped env under random actions of the acting team equal the whole
    game's steps with the script's actions for the scripted team: states, and the acting
    team's rewards and observations; the scripted team is absent from every per-team dict."""
    env = (GridTagEnv(n_taggers=3, size=6, random_start=True, max_obstacles=4) if game == "grid"
           else TagEnv(**{**BENCHMARK, "n_taggers": 3, "n_runners": 5, "k_nearest": 4, "max_obstacles": 4}))  # fmt: skip
    acting = "tagger" if scripted == "runner" else "runner"
    wrapped = ScriptedTeams(env, (scripted,))
    assert wrapped.teams == (acting,) and whole_game(wrapped) is env
    level = jax.jit(env.generate)(jax.random.key(0))
    s_w = s_g = jax.jit(env.reset_state)(None, level)
    step_w, step_g = jax.jit(wrapped.step_state), jax.jit(env.step_state)
    # compiled, as the steps are (op by op each call would compile and run dozens of ops)
    space, n_acting = env.action_space(acting), env.num_agents(acting)
    sample = jax.jit(lambda k: space.sample(jax.random.fold_in(k, 1), (n_acting,)))
    script = jax.jit(lambda s: scripted_actions(env, s, scripted))
    observe_w, observe_g = jax.jit(wrapped.observe), jax.jit(env.observe)
    for t in range(20):
        k = jax.random.key(t)
        a = sample(k)
        full = {acting: a, scripted: script(s_g)}
        s_w, r_w, term_w, trunc_w, info_w = step_w(k, s_w, {acting: a})
        s_g, r_g, term_g, trunc_g, _ = step_g(k, s_g, full)
        for x, y in zip(jax.tree.leaves(s_w), jax.tree.leaves(s_g), strict=True):
            np.testing.assert_array_equal(x, y)
        assert set(r_w) == {acting} and (bool(term_w), bool(trunc_w)) == (
            bool(term_g),
            bool(trunc_g),
        )
        np.testing.assert_array_equal(r_w[acting], r_g[acting])
        for v in info_w.values():
            if isinstance(v, dict):
                assert set(v) == {acting}
        obs = observe_w(s_w)
        assert set(obs) == {acting}
        np.testing.assert_array_equal(obs[acting], observe_g(s_g)[acting])
    with pytest.raises(ValueError, match="scripted teams \\['seeker'\\]"):
        ScriptedTeams(env, ("seeker",))
    with pytest.raises(ValueError, match="every team is scripted"):
        ScriptedTeams(env, ("tagger", "runner"))


@pytest.mark.parametrize(
    "preset, changes, message",
    [
        ("tag-grid", {"runner": {"scripted": True, "frozen": True}}, "runner.frozen=True: runner.scripted: a scripted team has no policy"),
        ("tag-grid", {"runner": {"scripted": True}}, "runner.policy='shared': runner.scripted: a scripted team has no policy"),
        ("tag-continuous", {"tagger": {"scripted": True}, "runner": {"scripted": True}}, "every team is scripted"),
        ("tag-continuous", {"tagger": {"frozen": True}, "runner": {"scripted": True}}, "every team is frozen or scripted"),
        ("tag-grid-plr", {"runner": {"scripted": True}, "plr": {"score_team": "runner"}}, "plr.score_team='runner': scores need the team's value estimates"),
        ("tag-grid-paired", {"tagger": {"scripted": True}}, "tagger.scripted=True: paired trains the taggers"),
        ("tag-grid-sfl", {"tagger": {"scripted": True, "policy": ""}}, "tagger.scripted=True: sfl trains the taggers"),
        ("cartpole-dr", {"agent": {"scripted": True}}, "agent.scripted=True: family 'cartpole' has no scripted players"),
    ],
)  # fmt: skip
def test_bad_combinations_are_refused(preset: str, changes: dict, message: str) -> None:
    cfg = PRESETS[preset]
    teams = {t: dataclasses.replace(tc, **changes.pop(t, {})) for t, tc in cfg.teams.items()}
    curriculum = dataclasses.replace(cfg.curriculum, **changes.pop("plr", {}))
    cfg = dataclasses.replace(cfg, teams=teams, curriculum=curriculum)
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        validate(cfg)
