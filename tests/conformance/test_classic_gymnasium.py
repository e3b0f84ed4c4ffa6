"""Classic control against Gymnasium itself (the ``gymnasium`` package's classic-control
environments, through ``gymnasium.make`` with its time limit and checkers).

Every step starts arenax from Gymnasium's own state (Gymnasium integrates in float64,
arenax in float32, so last-bit differences must not accumulate through chaotic dynamics),
takes the same action and compares the observation, reward, terminated and truncated.
Episodes are played back to back through Gymnasium's resets, on the default level against
Gymnasium's env as shipped, and on a non-default level whose constants are written into
the Gymnasium env. Gymnasium is a dependency of the test environment: if it is missing, the test fails.
"""

from __future__ import annotations

import dataclasses
import math

import gymnasium
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import arenax
from arenax.envs.classic import FAMILIES, ClassicState
from arenax.envs.classic.physics import level_of, level_values

# where each level constant lives on Gymnasium's unwrapped env
GYM_NAMES = {
    "cartpole": {"gravity": "gravity", "masscart": "masscart", "masspole": "masspole",
                 "length": "length", "force_mag": "force_mag"},
    "acrobot": {"link_mass_1": "LINK_MASS_1", "link_mass_2": "LINK_MASS_2",
                "link_length_1": "LINK_LENGTH_1", "link_com_pos_1": "LINK_COM_POS_1",
                "link_com_pos_2": "LINK_COM_POS_2", "link_moi": "LINK_MOI"},
    "mountain-car": {"force": "force", "gravity": "gravity", "goal_position": "goal_position",
                     "goal_velocity": "goal_velocity"},
    "mountain-car-continuous": {"power": "power", "goal_position": "goal_position",
                                "goal_velocity": "goal_velocity"},
    "pendulum": {"g": "g", "m": "m", "l": "l"},
}  # fmt: skip

# a non-default level per family that Gymnasium can also be set to
OTHER = {
    "cartpole": {"masscart": 1.7, "masspole": 0.3, "length": 0.8, "force_mag": 7.0},
    "acrobot": {"link_mass_1": 1.4, "link_mass_2": 0.7, "link_length_1": 1.2,
                "link_com_pos_1": 0.4, "link_com_pos_2": 0.6, "link_moi": 0.8},
    "mountain-car": {"force": 0.0013, "gravity": 0.0022, "goal_position": 0.4},
    "mountain-car-continuous": {"power": 0.0018, "goal_position": 0.35},
    "pendulum": {"g": 7.0, "m": 1.6, "l": 0.7},
}  # fmt: skip

STEPS = {"cartpole": 600, "acrobot": 700, "mountain-car": 700, "mountain-car-continuous": 700,
         "pendulum": 500}  # fmt: skip
# short time limits, so that the replay also covers truncations
MAX_STEPS = {"cartpole": 40, "acrobot": 200, "mountain-car": 200, "mountain-car-continuous": 200,
             "pendulum": 200}  # fmt: skip


def gym_env(name: str, level: dict[str, float] | None, max_steps: int) -> gymnasium.Env:
    """Gymnasium's env, untouched (``level=None``) or with its constants set to ``level``."""
    env = gymnasium.make(FAMILIES[name][1], max_episode_steps=max_steps)
    if level is None:
        return env
    u = env.unwrapped
    for k, attr in GYM_NAMES[name].items():
        setattr(u, attr, level[k])
    if name == "cartpole":  # derived in CartPoleEnv.__init__
        u.total_mass = u.masspole + u.masscart
        u.polemass_length = u.masspole * u.length
    return env


def gym_state(env: gymnasium.Env) -> np.ndarray:
    return np.asarray(env.unwrapped.state, np.float64).reshape(-1)


def test_default_levels_are_gymnasiums_constants() -> None:
    for name, (cls, gid) in FAMILIES.items():
        u = gymnasium.make(gid).unwrapped
        ours = level_values(cls().default_level())
        for k, attr in GYM_NAMES[name].items():
            assert ours[k] == pytest.approx(getattr(u, attr), rel=1e-7), (name, k)
    # constants Gymnasium hard-codes (not attributes)
    assert level_values(FAMILIES["acrobot"][0]().default_level())["gravity"] == pytest.approx(9.8)
    mc = level_values(FAMILIES["mountain-car-continuous"][0]().default_level())
    assert mc["gravity"] == pytest.approx(0.0025)


def test_observation_spaces_are_gymnasiums() -> None:
    """Bounds, shape and dtype of every game's observation, through the Gymnasium export's
    space conversion (Pendulum ``[1, 1, 8]``, CartPole ``inf`` only for velocities...)."""
    from arenax.interop.levels import to_gym_space

    for name, (cls, gid) in FAMILIES.items():
        ours = to_gym_space(cls().observation_space("agent"))
        theirs = gymnasium.make(gid).observation_space
        assert ours == theirs, (name, ours, theirs)
        assert all(np.isfinite(ours.high)) or name == "cartpole", name


def _action(env: gymnasium.Env, name: str, rng: np.random.Generator, episode: int) -> object:
    """Random actions; in every other episode, where random play never reaches the goal,
    energy pumping instead (acrobot: torque with the second joint's velocity; mountain
    car: push with the velocity), so that episodes end by termination as well as by the
    time limit."""
    space = env.action_space
    s = gym_state(env)
    pump = {"acrobot": s[3] if len(s) == 4 else 0.0, "mountain-car": s[-1],
            "mountain-car-continuous": s[-1]}.get(name)  # fmt: skip
    if pump is not None and episode % 2 == 0:
        if name == "mountain-car-continuous":
            return np.array([1.0 if pump >= 0 else -1.0], np.float32)
        return 2 if pump >= 0 else 0
    if isinstance(space, gymnasium.spaces.Discrete):
        return int(rng.integers(space.n))
    # beyond the bounds too: Gymnasium clips, and the mountain car's cost uses the raw action
    return (rng.uniform(-1.3, 1.3, space.shape) * space.high).astype(np.float32)


@pytest.mark.parametrize("which", ["default", "other"])
@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_replays_gymnasium_step_by_step(name: str, which: str) -> None:
    cls = FAMILIES[name][0]
    ours = cls(max_steps=MAX_STEPS[name])
    values = level_values(ours.default_level())
    if which == "other":
        values.update(OTHER[name])
    level = level_of(cls.level_cls, values)
    env = gym_env(name, values if which == "other" else None, MAX_STEPS[name])
    step = jax.jit(ours.step)
    observe = jax.jit(ours.observe)
    rng = np.random.default_rng(0)
    obs, _ = env.reset(seed=0)
    time, episodes, terminations, truncations = 0, 0, 0, 0
    for t in range(STEPS[name]):
        state = ClassicState(s=jnp.asarray(gym_state(env), jnp.float32), time=jnp.int32(time),
                             level=level)  # fmt: skip
        if time == 0:  # the reset observation
            np.testing.assert_allclose(observe(state)["agent"][0], obs, rtol=1e-5, atol=1e-6)
        a = _action(env, name, rng, episodes)
        obs, reward, term, trunc, _ = env.step(a)
        act = jnp.asarray(np.asarray(a)[None], jnp.float32 if name.endswith(("continuous", "pendulum")) else jnp.int32)  # fmt: skip
        o, _, r, te, tr, _ = step(jax.random.key(t), state, {"agent": act})
        where = f"{name} ({which}) step {t}, episode {episodes}, t={time}"
        np.testing.assert_allclose(o["agent"][0], obs, rtol=1e-5, atol=1e-5, err_msg=where)
        assert ours.observation_space("agent").contains(o["agent"][0]), where
        np.testing.assert_allclose(r["agent"][0], reward, rtol=1e-5, atol=1e-5, err_msg=where)
        assert bool(te) == term, where
        assert bool(tr) == trunc, where
        time += 1
        if term or trunc:
            terminations += term
            truncations += trunc and not term
            episodes += 1
            obs, _ = env.reset(seed=1000 + episodes)
            time = 0
    # the replay covered episode ends of both kinds where the game has them
    if name != "pendulum":
        assert terminations > 0, name
    assert truncations > 0, name


def test_mountain_car_reaches_its_goal_like_gymnasium() -> None:
    """Random actions never reach the flag; a bang-bang policy (push with the velocity)
    does: both envs terminate at the same step with the same rewards."""
    for name in ("mountain-car", "mountain-car-continuous"):
        cls = FAMILIES[name][0]
        ours = cls()
        values = level_values(ours.default_level())
        env = gym_env(name, None, ours.max_steps)
        level = level_of(cls.level_cls, values)
        obs, _ = env.reset(seed=3)
        step = jax.jit(ours.step)
        total = 0.0
        for t in range(ours.max_steps):
            state = ClassicState(s=jnp.asarray(gym_state(env), jnp.float32), time=jnp.int32(t),
                                 level=level)  # fmt: skip
            right = obs[1] >= 0
            a = (2 if right else 0) if name == "mountain-car" else np.array([1.0 if right else -1.0], np.float32)  # fmt: skip
            obs, reward, term, _, _ = env.step(a)
            act = jnp.asarray(np.asarray(a)[None])
            o, _, r, te, _, _ = step(jax.random.key(t), state, {"agent": act})
            np.testing.assert_allclose(o["agent"][0], obs, rtol=1e-5, atol=1e-6)
            assert float(r["agent"][0]) == pytest.approx(reward, abs=1e-5)
            assert bool(te) == term
            total += reward
            if term:
                break
        assert term, name  # the goal was reached within the time limit


def test_reset_distributions_are_gymnasiums() -> None:
    keys = jax.random.split(jax.random.key(0), 4096)
    bounds = {
        "cartpole": ([-0.05] * 4, [0.05] * 4),
        "acrobot": ([-0.1] * 4, [0.1] * 4),
        "mountain-car": ([-0.6, 0.0], [-0.4, 0.0]),
        "mountain-car-continuous": ([-0.6, 0.0], [-0.4, 0.0]),
        "pendulum": ([-math.pi, -1.0], [math.pi, 1.0]),
    }
    for name, (lo, hi) in bounds.items():
        env = FAMILIES[name][0]()
        s = np.asarray(jax.vmap(env.reset_state, (0, None))(keys, env.default_level()).s)
        lo, hi = np.asarray(lo, np.float32), np.asarray(hi, np.float32)
        assert np.all(s >= lo) and np.all(s <= hi), name
        width = hi - lo
        # uniform: the extremes of 4096 draws come within 1% of the bounds
        np.testing.assert_allclose(s.min(0), lo, atol=0.01 * width.max() + 1e-9, err_msg=name)
        np.testing.assert_allclose(s.max(0), hi, atol=0.01 * width.max() + 1e-9, err_msg=name)


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_generator_mutator_and_heldout_levels(name: str) -> None:
    env = arenax.make(name)
    consts = env.CONSTANTS
    levels = jax.vmap(env.generate)(jax.random.split(jax.random.key(1), 2000))
    for k, c in consts.items():
        v = np.asarray(getattr(levels, k))
        assert np.all((v >= np.float32(c.low)) & (v <= np.float32(c.high))), k
        if c.high > c.low:  # uniform over the documented range
            assert abs(v.mean() - (c.low + c.high) / 2) < 0.05 * (c.high - c.low), k
    base = env.default_level()
    mutate = jax.jit(env.mutate, static_argnums=2)
    for n_edits in (1, 3):
        for i in range(20):
            child = mutate(jax.random.key(i), base, n_edits)
            changed = [k for k in consts if float(getattr(child, k)) != float(getattr(base, k))]
            assert 1 <= len(changed) <= n_edits, changed
            assert env.in_range(child)
            for k in changed:
                c = consts[k]
                moved = abs(float(getattr(child, k)) - float(getattr(base, k)))
                assert moved <= 0.1 * n_edits * (c.high - c.low) + 1e-6, (k, moved)
    held = env.heldout_levels()
    assert "default" in held and len(held) >= 4
    outside = [n for n, lv in held.items() if n != "default" and not env.in_range(lv)]
    assert outside, "held-out levels should include physics DR never draws"
    # every held-out level runs: a random-action episode stays finite
    for lv in held.values():
        _, state = env.reset(jax.random.key(0), lv)
        for t in range(20):
            a = env.action_space().sample(jax.random.key(t), (1,))
            o, state, r, _, _, _ = env.step(jax.random.key(t), state, {"agent": a})
        assert np.all(np.isfinite(np.asarray(o["agent"]))) and np.isfinite(float(r["agent"][0]))


def test_options_are_checked() -> None:
    with pytest.raises(ValueError, match="cartpole: max_steps=0"):
        FAMILIES["cartpole"][0](max_steps=0)
    with pytest.raises(ValueError, match=r"pendulum: dt=-0\.1"):
        FAMILIES["pendulum"][0](dt=-0.1)
    assert dataclasses.replace(FAMILIES["acrobot"][0](), book_or_nips="nips").book_or_nips == "nips"
