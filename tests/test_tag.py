"""Continuous Tag against a plain NumPy (per-agent loop) reference of the game's rules."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from arenax.envs.tag import TagEnv, TagLevel


class Reference:
    """The rules, one agent at a time (own code, written from the issue's description).
    Float32 like the environment, so that "speed hits its maximum" is decided the same way."""

    def __init__(self, env: TagEnv, level: TagLevel) -> None:
        self.e = env
        self.a = env.n_agents
        self.nt = env.n_taggers
        f32 = np.float32
        self.pos = np.array(level.pos, f32)
        self.dir = np.array(level.direction, f32)
        self.speed = np.zeros(self.a, f32)
        self.acc = np.zeros(self.a, f32)
        self.active = np.ones(self.a, bool)
        self.t = 0
        self.L = np.float32(level.arena)
        self.td = np.float32(level.tag_distance)
        self.skill = [
            np.float32(level.skill[0] if i < self.nt else level.skill[1]) for i in range(self.a)
        ]

    def table(self, k: int, mx: float, i: int) -> np.float32:
        return np.float32(0.0 if i == 0 else np.linspace(-mx, mx, k)[i - 1])

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, bool, bool]:
        e, r = self.e, np.zeros(self.a)
        was_active = self.active.copy()
        for i in range(self.a):
            self.acc[i] += self.table(e.accel_levels, e.max_accel, actions[i, 0])
            if self.active[i]:
                self.dir[i] = np.mod(
                    self.dir[i] + self.table(e.turn_levels, e.max_turn, actions[i, 1]),
                    np.float32(2 * math.pi),
                )
            else:
                self.dir[i] = 0.0
            top = np.float32(e.max_speed) * self.skill[i]
            self.speed[i] = (
                np.clip(self.speed[i] + self.acc[i], np.float32(0), top) if self.active[i] else 0.0
            )
            if self.speed[i] <= 0.0 or self.speed[i] >= top:
                self.acc[i] = 0.0
            # cos/sin from XLA's float32 implementation: numpy's can differ in the last bit,
            # which decides whether an agent at a wall grazes it (an edge hit) or not
            heading = np.array([jnp.cos(self.dir[i]), jnp.sin(self.dir[i])], np.float32)
            new = self.pos[i] + self.speed[i] * heading
            clipped = np.clip(new, np.float32(0), self.L)
            if self.active[i] and np.any(clipped != new):
                r[i] += e.edge_reward
            self.pos[i] = clipped
        self.t += 1
        end = self.t >= e.episode_length
        for j in range(self.nt, self.a):
            if not was_active[j]:
                continue
            r[j] += e.runner_step_reward
            d = [np.linalg.norm(self.pos[j] - self.pos[k]) for k in range(self.nt)]
            k = int(np.argmin(d))
            if d[k] < self.td * self.L:
                r[j] += e.tag_penalty
                r[k] += e.tag_reward  # every tag is paid, several per tagger included
                self.active[j] = False
                self.speed[j] = 0.0
                self.acc[j] = 0.0
            elif end:
                r[j] += e.end_reward
        r[: self.nt] += e.tagger_step_reward
        return r, not self.active[self.nt :].any(), end

    def rank_key(self, i: int, j: int) -> int:
        """The env's nearness rule: float32 d², its low index-width bits dropped."""
        dx = np.float32(self.pos[j, 0] - self.pos[i, 0])
        dy = np.float32(self.pos[j, 1] - self.pos[i, 1])
        d2 = np.float32(dx * dx + dy * dy)
        return int(np.array(d2, np.float32).view(np.int32)) >> max(1, (self.a - 1).bit_length())

    def observe(self) -> np.ndarray:
        e, out = self.e, []
        scale = math.sqrt(2) * self.L
        for i in range(self.a):
            if not self.active[i]:
                out.append(np.zeros(e.obs_size))
                continue
            others = [j for j in range(self.a) if j != i]
            if e.k_nearest is not None:
                others = [j for j in others if self.active[j]]
                others.sort(key=lambda j: (self.rank_key(i, j), j))
                others = others[: e.k_nearest]
            rows = np.zeros((7, e.n_observed))
            for c, j in enumerate(others):
                rows[:, c] = [
                    (self.pos[j, 0] - self.pos[i, 0]) / scale,
                    (self.pos[j, 1] - self.pos[i, 1]) / scale,
                    (self.speed[j] - self.speed[i]) / e.max_speed,
                    (self.acc[j] - self.acc[i]) / e.max_speed,
                    (self.dir[j] - self.dir[i]) / (2 * math.pi),
                    1.0 if j < self.nt else 0.0,
                    1.0 if self.active[j] else 0.0,
                ]
            out.append(np.concatenate([rows.reshape(-1), [self.t / e.episode_length]]))
        return np.stack(out)


def run_both(env: TagEnv, level: TagLevel, steps: int, seed: int, actions_fn=None) -> int:
    ref = Reference(env, level)
    state = env.reset_state(None, level)
    step = jax.jit(env.step_state)
    observe = jax.jit(env.observe)
    rng = np.random.default_rng(seed)
    tags = 0
    for t in range(steps):
        obs = observe(state)
        got = np.concatenate([obs["tagger"], obs["runner"]])
        np.testing.assert_allclose(got, ref.observe(), atol=2e-5, err_msg=f"obs at t={t}")
        acts = (
            actions_fn(t, rng)
            if actions_fn
            else np.stack(
                [
                    rng.integers(0, env.accel_levels + 1, env.n_agents),
                    rng.integers(0, env.turn_levels + 1, env.n_agents),
                ],
                -1,
            )
        )
        action = {
            "tagger": jnp.asarray(acts[: env.n_taggers]),
            "runner": jnp.asarray(acts[env.n_taggers :]),
        }
        state, rew, term, trunc, info = step(None, state, action)
        r, rterm, rtrunc = ref.step(acts)
        np.testing.assert_allclose(np.asarray(state.pos), ref.pos, atol=2e-4, err_msg=f"pos t={t}")
        np.testing.assert_allclose(np.asarray(state.speed), ref.speed, atol=1e-5)
        np.testing.assert_array_equal(np.asarray(state.active), ref.active)
        np.testing.assert_allclose(
            np.concatenate([rew["tagger"], rew["runner"]]), r, atol=1e-5, err_msg=f"reward t={t}"
        )
        assert bool(term) == rterm and bool(trunc) == rtrunc
        tags += int(info["tagged"])
        if rterm or rtrunc:
            break
    return tags


@pytest.mark.parametrize("k_nearest", [2, None])
def test_matches_reference_on_random_actions(k_nearest: int | None) -> None:
    env = TagEnv(n_taggers=2, n_runners=6, episode_length=30, arena=4.0, tag_distance=0.08,
                 k_nearest=k_nearest, edge_reward=-0.5, runner_step_reward=0.01,
                 tagger_step_reward=-0.01)  # fmt: skip
    total = 0
    for seed in range(4):
        total += run_both(env, env.generate(jax.random.key(seed)), 30, seed)
    assert total > 0  # tags happened and were checked


def test_one_tagger_tags_several_runners_in_one_step_and_end_reward() -> None:
    env = TagEnv(
        n_taggers=1, n_runners=4, episode_length=3, arena=10.0, tag_distance=0.05, k_nearest=None
    )
    # three runners within 0.5 of the tagger, one far away
    pos = jnp.array([[5.0, 5.0], [5.2, 5.0], [5.0, 5.3], [4.8, 4.9], [9.0, 9.0]], jnp.float32)
    level = TagLevel(pos=pos, direction=jnp.zeros(5), skill=jnp.ones(2), arena=jnp.float32(10.0),
                     tag_distance=jnp.float32(0.05))  # fmt: skip
    still = lambda t, rng: np.zeros((5, 2), np.int64)  # noqa: E731
    assert run_both(env, level, 3, 0, still) == 3
    state = env.reset_state(None, level)
    noop = {"tagger": jnp.zeros((1, 2), jnp.int32), "runner": jnp.zeros((4, 2), jnp.int32)}
    state, rew, term, trunc, info = env.step_state(None, state, noop)
    assert float(rew["tagger"][0]) == 3.0 and int(info["tagged"]) == 3
    np.testing.assert_allclose(rew["runner"], [-1, -1, -1, 0])
    state, rew, *_ = env.step_state(None, state, noop)
    state, rew, term, trunc, _ = env.step_state(None, state, noop)
    np.testing.assert_allclose(rew["runner"], [0, 0, 0, 1.0])  # end-of-game reward at t = T
    assert bool(trunc) and not bool(term)
    # out-of-game runners see zeros; masks report who was in the game
    obs = env.observe(state)
    assert np.all(np.asarray(obs["runner"][:3]) == 0) and np.any(np.asarray(obs["runner"][3]) != 0)


def test_observation_layout_and_sizes() -> None:
    env = TagEnv(n_taggers=10, n_runners=100, k_nearest=10)
    assert env.obs_size == 71  # the benchmark's 7 x 10 + 1
    obs, _ = env.reset(jax.random.key(0), env.generate(jax.random.key(0)))
    assert obs["tagger"].shape == (10, 71) and obs["runner"].shape == (100, 71)
    assert env.action_space("runner").nvec == (11, 11)
    # fixed start: every copy starts the same
    fixed = TagEnv(random_start=False)
    a, b = fixed.generate(jax.random.key(1)), fixed.generate(jax.random.key(2))
    np.testing.assert_array_equal(a.pos, b.pos)
    with pytest.raises(ValueError, match="k_nearest"):
        TagEnv(n_taggers=1, n_runners=1, k_nearest=2)
