"""A centralised critic (MAPPO): the Tag games' global states by hand, the `GlobalState`
wrapper, and a policy whose actor never reads the state."""

import dataclasses
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from arenax.envs import spaces
from arenax.envs.tag import GridTagEnv, TagEnv
from arenax.envs.wrappers import GlobalState, whole_game
from arenax.nn.mlp import MLPConfig
from arenax.options import ConfigError
from arenax.rl.ppo import PPOConfig, ppo_loss


def test_grid_tag_global_state_by_hand() -> None:
    env = GridTagEnv(n_taggers=2, size=10, episode_length=20)
    state = env.reset_state(None, env.generate(jax.random.key(0)))
    state = state.replace(pos=jnp.array([[1, 2], [3, 4], [5, 10]]), time=jnp.int32(5))
    expected = [0.1, 0.2, 0.3, 0.4, 0.5, 1.0, 5 / 20]
    np.testing.assert_allclose(np.asarray(env.global_state(state)), expected, rtol=1e-6)


def test_continuous_tag_global_state_by_hand() -> None:
    env = TagEnv(n_taggers=1, n_runners=1, arena=10.0, max_speed=2.0, episode_length=40)
    state = env.reset_state(jax.random.key(0), env.generate(jax.random.key(0)))
    state = state.replace(
        pos=jnp.array([[1.0, 5.0], [10.0, 0.0]]), speed=jnp.array([1.0, 2.0]),
        accel=jnp.array([0.5, -1.0]), direction=jnp.array([0.0, math.pi / 2]),
        active=jnp.array([True, True]), tagged=jnp.array([False, True]), time=jnp.int32(10),
    )  # fmt: skip
    expected = [
        0.1, 0.5, 0.5, 0.25, 1.0, 0.0, 1.0,  # the tagger
        1.0, 0.0, 1.0, -0.5, 0.0, 1.0, 0.0,  # the runner, tagged: out of the game
        10 / 40,
    ]  # fmt: skip
    np.testing.assert_allclose(np.asarray(env.global_state(state)), expected, atol=1e-6)


def test_the_wrapper_adds_the_state_to_the_chosen_teams_only() -> None:
    game = GridTagEnv(n_taggers=3, size=6)
    env = GlobalState(game, ("tagger",))
    space = env.observation_space("tagger")
    assert isinstance(space, spaces.Dict)
    assert space["obs"] == game.observation_space("tagger")
    assert space["state"].shape == (2 * 4 + 1,)
    assert env.observation_space("runner") == game.observation_space("runner")
    obs, state = env.reset(None, game.generate(jax.random.key(1)))
    plain = game.observe(state)
    np.testing.assert_array_equal(np.asarray(obs["tagger"]["obs"]), np.asarray(plain["tagger"]))
    g = np.asarray(game.global_state(state))
    np.testing.assert_array_equal(np.asarray(obs["tagger"]["state"]), np.tile(g, (3, 1)))
    np.testing.assert_array_equal(np.asarray(obs["runner"]), np.asarray(plain["runner"]))
    assert whole_game(env) is game


def _policy_and_obs():
    game = GridTagEnv(n_taggers=2, size=6)
    env = GlobalState(game, ("tagger",))
    pol = MLPConfig(hidden=(16, 16), critic="state").policy(
        env.observation_space("tagger"), env.action_space("tagger")
    )
    # compiled (op by op, every distinct primitive compiles on its own)
    obs, _ = jax.jit(env.reset)(None, jax.jit(game.generate)(jax.random.key(2)))
    seq = jax.tree.map(lambda x: x[None], obs["tagger"])  # (T=1, A=2, ...)
    params = jax.jit(pol.init)(jax.random.key(3), seq)
    return pol, params, seq


def test_the_actor_never_reads_the_state_and_the_critic_does() -> None:
    pol, params, seq = _policy_and_obs()

    def out(state: jax.Array) -> tuple[jax.Array, jax.Array]:
        _, logits, value = pol.apply(params, {**seq, "state": state}, None, ())
        return logits, value

    d_logits = jax.jit(jax.jacobian(lambda s: out(s)[0]))(seq["state"])
    d_value = jax.jit(jax.jacobian(lambda s: out(s)[1]))(seq["state"])
    assert not np.any(np.asarray(d_logits)) and np.any(np.asarray(d_value))
    # the critic reads the state, then the agent's own observation
    critic_in = params["params"]["Dense_4"]["kernel"].shape[0]
    assert critic_in == seq["state"].shape[-1] + seq["obs"].shape[-1]


def test_the_policy_gradient_does_not_depend_on_the_state() -> None:
    """PPO's loss without its value term: the same gradient (actor only) whatever the state."""
    pol, params, seq = _policy_and_obs()
    hp = PPOConfig(vf_coef=0.0, ent_coef=0.01)
    ones = jnp.ones((1, 2))
    action = jnp.array([[1, 3]])

    @jax.jit  # one program for both states
    def grads(state: jax.Array):
        def loss(p):
            _, logits, value = pol.apply(p, {**seq, "state": state}, None, ())
            adv, old = jnp.array([[0.5, -1.0]]), jax.lax.stop_gradient(value)
            args = (action, jnp.log(ones / 5), old, adv, old, ones, hp, jnp.float32(2.0))
            return ppo_loss(logits, value, *args)[0]

        return jax.grad(loss)(params)

    a = grads(seq["state"])
    b = grads(seq["state"] * 3.0 + 1.0)
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
    critic = [f"Dense_{i}" for i in (3, 4, 5)]  # the value head, then the critic's trunk
    assert not any(np.any(np.asarray(a["params"][n]["kernel"])) for n in critic)


def test_acting_on_the_observation_alone_gives_the_same_actions_and_no_value() -> None:
    pol, params, seq = _policy_and_obs()
    _, logits, value = pol.apply(params, seq, None, ())
    _, alone, no_value = pol.apply(params, seq["obs"], None, ())
    np.testing.assert_array_equal(np.asarray(alone), np.asarray(logits))
    assert np.all(np.isnan(np.asarray(no_value))) and np.all(np.isfinite(np.asarray(value)))


def test_a_centralised_critic_needs_its_own_trunk() -> None:
    from arenax.training import PRESETS, validate

    cfg = PRESETS["tag-grid"]
    net = dataclasses.replace(cfg.teams["tagger"].network, critic="state", shared_trunk=True)
    teams = {t: dataclasses.replace(tc, network=net) for t, tc in cfg.teams.items()}
    with pytest.raises(ConfigError, match="critic"):
        validate(dataclasses.replace(cfg, teams=teams))
