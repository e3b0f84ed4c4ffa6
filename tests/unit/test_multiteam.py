"""Multi-team PPO on Tag: multi-discrete distributions, the MLP policy, the multi-team
rollout against an independent replay, both presets, resume and device invariance, frozen
and shared policies, validation, and a short learning test."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from arenax import distributions as D
from arenax.envs.tag import GridTagEnv, TagEnv
from arenax.envs.tag.family import GridTagConfig, TagConfig
from arenax.envs.wrappers import AutoReplay, EpisodeStats
from arenax.nn.mlp import MLPPolicy
from arenax.rl.rollout import RolloutCarry, per_env_keys, reset_batch, team_rollout
from arenax.training import (
    PRESETS,
    ConfigError,
    DDPGConfig,
    MLPConfig,
    PPOConfig,
    TeamConfig,
    TrainConfig,
    validate,
)


# ---------------------------------------------------------------- distributions, policy
def test_multi_categorical_sums_heads_and_samples_each_head() -> None:
    dist = D.MultiCategorical((3, 2))
    logits = jnp.log(jnp.array([0.2, 0.3, 0.5, 0.9, 0.1]))
    action = jnp.array([2, 0])
    np.testing.assert_allclose(dist.log_prob(logits, action), np.log(0.5 * 0.9), rtol=1e-6)
    h = -(0.2 * np.log(0.2) + 0.3 * np.log(0.3) + 0.5 * np.log(0.5)) - (
        0.9 * np.log(0.9) + 0.1 * np.log(0.1)
    )
    np.testing.assert_allclose(dist.entropy(logits), h, rtol=1e-6)
    np.testing.assert_array_equal(dist.mode(logits), [2, 0])
    s = jax.vmap(dist.sample, (0, None))(jax.random.split(jax.random.key(0), 20000), logits)
    np.testing.assert_allclose(
        np.bincount(s[:, 0], minlength=3) / 20000, [0.2, 0.3, 0.5], atol=0.015
    )
    np.testing.assert_allclose(np.mean(s[:, 1] == 0), 0.9, atol=0.01)
    assert D.for_space(TagEnv().action_space("tagger")) == D.MultiCategorical((11, 11))
    assert D.for_space(GridTagEnv().action_space("tagger")) == D.CATEGORICAL


def test_mlp_policy_shapes_and_near_uniform_start() -> None:
    pol = MLPPolicy(dist=D.MultiCategorical((11, 11)), hidden=(16, 16))
    obs = jnp.ones((3, 5, 15))
    params = pol.init(jax.random.key(0), obs)
    carry, logits, value = pol.apply(params, obs, jnp.zeros((3, 5), bool), pol.initial_carry(5))
    assert carry == () and logits.shape == (3, 5, 22) and value.shape == (3, 5)
    assert float(jnp.max(jnp.abs(logits))) < 0.1  # output layer scaled by 0.01


# ---------------------------------------------------------------- rollout
def test_team_rollout_matches_an_independent_replay() -> None:
    """Replaying the recorded actions in the bare env gives the same obs, rewards, masks;
    a tagged runner's sequence ends at its tag (terminal), later steps are masked."""
    env = TagEnv(n_taggers=2, n_runners=5, episode_length=9, arena=3.0, tag_distance=0.15,
                 k_nearest=3)  # fmt: skip
    policy = MLPPolicy(dist=D.for_space(env.action_space("tagger")), hidden=(8,))
    params = jax.jit(policy.init)(jax.random.key(1), jnp.zeros((1, 1, env.obs_size)))
    wrapped = EpisodeStats(AutoReplay(env))
    n = 3
    ids = jnp.arange(n, dtype=jnp.int32)
    levels = jax.jit(jax.vmap(env.generate))(per_env_keys(jax.random.key(2), ids))
    obs, state = jax.jit(reset_batch, static_argnums=0)(wrapped, jax.random.key(3), levels, ids)
    start = RolloutCarry(state, obs, jnp.ones((n,), bool), {"tagger": (), "runner": ()})
    rollout = jax.jit(lambda ps, key, start, ids: team_rollout(
        wrapped, {"tagger": policy, "runner": policy}, ps, key, start, 20, ids,
        bootstrap_truncation=False,
    ))  # fmt: skip
    trajs, _, episodes = rollout(
        {"tagger": params, "runner": params}, jax.random.key(4), start, ids
    )
    tr, rr = jax.device_get(trajs["tagger"]), jax.device_get(trajs["runner"])
    assert tr.action.shape == (20, n * 2, 2) and rr.reward.shape == (20, n * 5)
    saw_tag = False
    # the env's own functions, compiled (op by op each call compiles and runs dozens of ops)
    reset_state, observe, step_state = map(jax.jit, (env.reset_state, env.observe, env.step_state))
    host_levels = jax.device_get(levels)  # indexed on the host (op by op: a program each)
    for e in range(n):
        lv = jax.tree.map(lambda x, e=e: x[e], host_levels)
        s = reset_state(None, lv)
        for t in range(20):
            o = observe(s)
            np.testing.assert_allclose(tr.obs[t, e * 2 : e * 2 + 2], o["tagger"], atol=1e-6)
            np.testing.assert_allclose(rr.obs[t, e * 5 : e * 5 + 5], o["runner"], atol=1e-6)
            act = {
                "tagger": tr.action[t, e * 2 : e * 2 + 2],
                "runner": rr.action[t, e * 5 : e * 5 + 5],
            }
            was_active = np.asarray(s.in_game)[2:]  # in the game during this step
            s, rew, term, trunc, _ = step_state(None, s, act)
            np.testing.assert_allclose(rr.reward[t, e * 5 : e * 5 + 5], rew["runner"], atol=1e-6)
            np.testing.assert_allclose(tr.reward[t, e * 2 : e * 2 + 2], rew["tagger"], atol=1e-6)
            np.testing.assert_array_equal(rr.mask[t, e * 5 : e * 5 + 5], was_active)
            out = was_active & ~np.asarray(s.in_game)[2:]  # left the game at this step
            done = bool(np.asarray(term) | np.asarray(trunc))
            np.testing.assert_array_equal(rr.terminated[t, e * 5 : e * 5 + 5], out | done)
            np.testing.assert_array_equal(tr.terminated[t, e * 2 : e * 2 + 2], done)
            saw_tag |= bool(out.any()) and not done
            if done:
                s = reset_state(None, lv)
    assert saw_tag, "the case should include a runner tagged mid-episode"
    assert bool(np.any(episodes["done"]))


@pytest.mark.parametrize(
    "changes, message",
    [
        (dict(tagger=TeamConfig(learner=DDPGConfig()), runner=TeamConfig(learner=DDPGConfig())),
         "tagger.ddpg='set': needs one team of one agent with continuous actions"),
        (dict(env=TagConfig(n_taggers=1, n_runners=2, k_nearest=3)), "env.k_nearest=3"),
        (dict(env=TagConfig(n_runners=0)), "env.n_runners=0"),
        (dict(env=GridTagConfig(size=0)), "env.size=0"),
        (dict(tagger=TeamConfig(policy="p"), runner=TeamConfig(policy="p", frozen=True)),
         "runner.frozen=True: must equal tagger.frozen"),
        (dict(tagger=TeamConfig(frozen=True), runner=TeamConfig(frozen=True)), "every team is frozen"),
        (dict(tagger=TeamConfig(network=MLPConfig(hidden=()))), "tagger.hidden=()"),
        (dict(tagger=TeamConfig(learner=PPOConfig(minibatches=3))), "tagger.ppo.minibatches=3"),
        (dict(runner=TeamConfig(learner=PPOConfig(gamma=2.0))), "runner.ppo.gamma=2.0"),
    ],
)  # fmt: skip
def test_tag_config_validation(changes: dict, message: str) -> None:
    base = PRESETS["tag-continuous"]
    teams = {t: changes.pop(t, tc) for t, tc in base.teams.items()}
    cfg = dataclasses.replace(base, teams=teams, **changes)
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        validate(cfg)


def test_frames_colour_teams_and_grey_tagged_runners() -> None:
    from arenax.envs.tag import render as TR

    env = TagEnv(n_taggers=1, n_runners=2, arena=10.0, k_nearest=None)
    level = env.generate(jax.random.key(0)).replace(
        pos=jnp.array([[2.0, 2.0], [5.0, 5.0], [8.0, 8.0]], jnp.float32),
        direction=jnp.zeros((3,), jnp.float32),  # heading lines point right, along the row
    )
    s = env.reset_state(None, level)
    s = s.replace(active=jnp.array([True, True, False]))
    img = TR.frame(env, s, px=200)
    assert img.shape == (220, 200, 3)

    def colour_at(x: float, y: float) -> tuple[int, ...]:
        scale = 199 / 10.0
        row, col = round(199 - y * scale), round(x * scale)
        return tuple(int(c) for c in img[row + 1, col - 1])  # off the heading line

    assert colour_at(2, 2) == TR.TAGGER
    assert colour_at(5, 5) == TR.RUNNER
    assert colour_at(8, 8) == TR.TAGGED
    g = GridTagEnv(n_taggers=1, size=4)
    gs = g.reset_state(None, g.generate(jax.random.key(0)))  # tagger centre, runner corner
    gimg = TR.frame(g, gs, px=100)
    assert tuple(gimg[95, 2]) == TR.RUNNER  # cell (0, 0) is bottom-left
    assert tuple(gimg[50, 50]) == TR.TAGGER


def test_game_configs_mirror_the_environments_defaults() -> None:
    """``TagConfig``/``GridTagConfig`` repeat the env fields (they are the documented CLI
    options); their defaults must build the environments' defaults."""
    from arenax.training.build import make_env

    assert make_env(TrainConfig(env=TagConfig())) == TagEnv()
    assert make_env(TrainConfig(env=GridTagConfig())) == GridTagEnv()
    assert {f.name for f in dataclasses.fields(TagConfig)} == {
        f.name for f in dataclasses.fields(TagEnv)
    }
    assert {f.name for f in dataclasses.fields(GridTagConfig)} == {
        f.name for f in dataclasses.fields(GridTagEnv)
    }
