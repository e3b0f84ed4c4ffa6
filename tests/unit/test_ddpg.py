"""DDPG / TD3: the circular buffer, the TD target against a hand computation (twin
minimum and smoothing noise for TD3), the actor step leaving the critic untouched, Polyak
averaging, TD3's delay, a learning check on a one-step task, and the preset end to end."""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from arenax.rl import ddpg as Q


def test_buffer_wraps_and_samples_filled_slots() -> None:
    buf = Q.buffer_create(5, obs_dim=2, action_dim=1)

    def batch(start: int, m: int) -> dict:
        r = jnp.arange(start, start + m, dtype=jnp.float32)
        return {"obs": jnp.stack([r, r], 1), "action": r[:, None], "reward": r,
                "next_obs": jnp.stack([r, r], 1) + 1, "terminated": r > 100}  # fmt: skip

    add = jax.jit(Q.buffer_add)  # compiled (op by op, each primitive compiles on its own)
    buf = add(buf, batch(0, 3))
    assert int(buf.size) == 3 and int(buf.pos) == 3
    s = jax.jit(Q.buffer_sample, static_argnums=2)(buf, jax.random.key(0), 1000)
    assert set(np.asarray(s["reward"]).tolist()) == {0.0, 1.0, 2.0}  # only filled slots
    np.testing.assert_array_equal(s["obs"][:, 0], s["reward"])  # fields stay aligned
    buf = add(buf, batch(3, 4))  # 7 transitions into 5 slots: 0 and 1 overwritten
    assert int(buf.size) == 5 and int(buf.pos) == 2
    np.testing.assert_array_equal(buf.reward, [5.0, 6.0, 2.0, 3.0, 4.0])


# hand-written linear networks: actor tanh(w·obs), critic q = c0·sum(obs) + c1·a
def actor(p: dict, obs: jax.Array) -> jax.Array:
    return jnp.tanh(obs @ p["w"])


def critic(p: dict, obs: jax.Array, a: jax.Array) -> jax.Array:
    return p["c"][0] * obs.sum(-1) + p["c"][1] * a[:, 0]


def state(cfg: Q.DDPGConfig, n_critics: int) -> Q.DDPGState:
    a = {"w": jnp.asarray([[0.5], [-0.3]])}
    c = {"c": jnp.asarray([[1.0, 2.0], [0.5, 3.0]][:n_critics])}
    return Q.ddpg_init(cfg, a, c)


BATCH = {
    "obs": jnp.asarray([[1.0, 0.0], [0.0, 2.0]]), "action": jnp.asarray([[0.5], [-1.0]]),
    "reward": jnp.asarray([1.0, -1.0]), "next_obs": jnp.asarray([[2.0, 1.0], [1.0, 1.0]]),
    "terminated": jnp.asarray([False, True]),
}  # fmt: skip


def test_ddpg_td_target_by_hand() -> None:
    cfg = Q.DDPGConfig(gamma=0.9)
    s = state(cfg, 1)
    loss, _ = Q.critic_loss(cfg, actor, critic, s, s.critic, BATCH, jax.random.key(0), -1, 1)
    # next actions tanh(2*0.5 - 0.3) and tanh(0.5 - 0.3); Q' = 1*sum(s') + 2*a'
    a1 = np.tanh(0.7)
    y = np.array([1.0 + 0.9 * (3.0 + 2 * a1), -1.0])  # the terminal one does not bootstrap
    q = np.array([1.0 + 2 * 0.5, 2.0 + 2 * -1.0])
    assert float(loss) == pytest.approx(np.mean((q - y) ** 2), rel=1e-6)


def test_td3_target_takes_the_smaller_critic_and_clipped_noise() -> None:
    cfg = Q.DDPGConfig(td3=True, gamma=0.9, policy_noise=0.2, noise_clip=0.5)
    s = state(cfg, 2)
    key = jax.random.key(3)
    loss, _ = Q.critic_loss(cfg, actor, critic, s, s.critic, BATCH, key, -1.0, 1.0)
    eps = np.clip(0.2 * np.asarray(jax.random.normal(key, (2, 1))), -0.5, 0.5)[:, 0]
    a_next = np.clip(np.tanh(np.array([0.7, 0.2])) + eps, -1, 1)
    sums = np.array([3.0, 2.0])
    q_next = np.minimum(1.0 * sums + 2.0 * a_next, 0.5 * sums + 3.0 * a_next)
    y = np.array([1.0 + 0.9 * q_next[0], -1.0])
    q1 = np.array([1.0 + 2 * 0.5, 2.0 - 2.0])
    q2 = np.array([0.5 * 1.0 + 3 * 0.5, 0.5 * 2.0 - 3.0])
    expected = np.mean([(q1 - y) ** 2, (q2 - y) ** 2])
    assert float(loss) == pytest.approx(expected, rel=1e-5)


def test_actor_step_leaves_the_critic_untouched() -> None:
    cfg = Q.DDPGConfig(actor_lr=0.1, tau=0.5)
    s = state(cfg, 1)
    # make the targets differ from the networks, to see the Polyak step
    s = s.replace(critic_target={"c": s.critic["c"] - 1.0}, actor_target={"w": s.actor["w"] + 1.0})
    new, _ = Q.actor_step(cfg, actor, critic, s, BATCH["obs"])
    np.testing.assert_array_equal(new.critic["c"], s.critic["c"])
    assert jax.tree.all(
        jax.tree.map(lambda a, b: bool(jnp.all(a == b)), new.critic_opt, s.critic_opt)
    )
    assert not np.array_equal(new.actor["w"], s.actor["w"])
    # the actor moved up Q's gradient: dQ/da = 2 > 0, so actions grow
    assert float(actor(new.actor, BATCH["obs"]).sum()) > float(actor(s.actor, BATCH["obs"]).sum())
    # Polyak: θ' ← τ θ + (1 − τ) θ'
    np.testing.assert_allclose(
        new.critic_target["c"], 0.5 * s.critic["c"] + 0.5 * s.critic_target["c"]
    )
    np.testing.assert_allclose(
        new.actor_target["w"], 0.5 * new.actor["w"] + 0.5 * s.actor_target["w"]
    )


@pytest.mark.parametrize(
    ("td3", "every", "moved"),
    [
        (True, None, [False, True, False, True]),  # TD3's own delay: 2
        (True, 3, [False, False, True, False, False, True]),
        (False, None, [True] * 6),  # DDPG's paper: every step
        (False, 2, [False, True] * 3),  # CleanRL's DDPG
    ],
)
def test_actor_updates_every_actor_every_critic_steps(td3: bool, every, moved) -> None:
    cfg = Q.DDPGConfig(td3=td3, actor_every=every, actor_lr=0.1)
    s = state(cfg, 2 if td3 else 1)
    actors, targets = [s.actor["w"]], [s.critic_target["c"]]
    for i in range(len(moved)):
        s, st = Q.gradient_step(cfg, actor, critic, s, BATCH, jax.random.key(i), -1.0, 1.0)
        actors.append(s.actor["w"])
        targets.append(s.critic_target["c"])
        assert np.isnan(float(st["actor_loss"])) == (not moved[i])
    assert [not np.array_equal(a, b) for a, b in itertools.pairwise(actors)] == moved
    # the targets' Polyak step comes with the actor's
    assert [not np.array_equal(a, b) for a, b in itertools.pairwise(targets)] == moved


def test_update_to_data_sets_the_gradient_steps_of_a_cycle(tmp_path) -> None:
    """UTD × transitions a cycle, a whole number or a one-line refusal; a run saved with the
    old `updates_per_cycle` loads as the UTD it meant."""
    import dataclasses
    import json

    from arenax.training import PRESETS, ConfigError, validate
    from arenax.training.saved import load_config, save_config, to_dict

    assert Q.DDPGConfig(update_to_data=1.0).updates_per_cycle(64) == 64
    assert Q.DDPGConfig(update_to_data=0.25).updates_per_cycle(64) == 16
    assert Q.DDPGConfig(update_to_data=4.0).updates_per_cycle(3) == 12
    for utd, n in ((0.3, 64), (1 / 128, 64)):
        with pytest.raises(ValueError, match="must be a whole number, at least 1"):
            Q.DDPGConfig(update_to_data=utd).updates_per_cycle(n)
    cfg = PRESETS["pendulum-ddpg"]  # 4 envs x 16 steps
    team = cfg.teams["agent"]
    bad = dataclasses.replace(team, learner=dataclasses.replace(team.learner, update_to_data=0.1))
    with pytest.raises(ConfigError, match=r"agent.ddpg.update_to_data=0.1: x n_envs=4 x "
                       r"n_steps=16 = 6.4 gradient steps a cycle"):  # fmt: skip
        validate(dataclasses.replace(cfg, teams={"agent": bad}))

    def saved_then(cfg: object) -> dict:  # as run folders of that time held it: no `learner`
        data = to_dict(cfg)
        team = data["teams"]["agent"]
        ddpg = {k: v for k, v in team.pop("learner").items() if k != "kind"}
        team.update(ppo={}, ddpg=ddpg, a2c=None)
        return data

    data = saved_then(cfg)
    del data["teams"]["agent"]["ddpg"]["update_to_data"]
    data["teams"]["agent"]["ddpg"]["updates_per_cycle"] = 16
    (tmp_path / "config.json").write_text(json.dumps(data))
    old = load_config(tmp_path / "config.json")
    assert old.teams["agent"].learner.update_to_data == 0.25
    # saved when `policy_delay` was TD3's alone (DDPG stepped its actor every step)
    for td3, delay, every in ((False, 2, None), (True, 3, 3)):
        data = saved_then(cfg)
        ddpg = data["teams"]["agent"]["ddpg"]
        del ddpg["actor_every"]
        ddpg.update(td3=td3, policy_delay=delay)
        (tmp_path / "config.json").write_text(json.dumps(data))
        assert load_config(tmp_path / "config.json").teams["agent"].learner.actor_every == every
    save_config(cfg, tmp_path / "new.json")
    assert load_config(tmp_path / "new.json") == dataclasses.replace(cfg, resume=None)
