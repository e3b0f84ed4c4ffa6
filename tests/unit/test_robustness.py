"""Robustness evaluation (CVaR of per-level success rates) for mazes and Tag arenas: the
statistic by hand, and scripted policies whose per-level outcome is known."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from arenax import distributions as D
from arenax.envs.maze import MazeEnv, MazeLevel
from arenax.envs.maze.evaluation import robustness
from arenax.stats import cvar


def test_cvar_hand_computed() -> None:
    x = np.array([0.1, 0.9, 0.5, 0.0, 1.0])
    assert cvar(x, 0.4) == pytest.approx(0.05)  # worst 2 of 5: 0.0 and 0.1
    assert cvar(x, 1.0) == pytest.approx(0.5)
    assert cvar(x, 0.01) == 0.0  # at least one level
    with pytest.raises(ValueError):
        cvar(x, 0.0)


@dataclasses.dataclass(frozen=True)
class Forward:
    """A policy that always moves forward (MiniGrid action 2)."""

    dist = D.CATEGORICAL

    def initial_carry(self, batch: int) -> tuple:
        return ()

    def apply(self, params, obs, first, carry):
        t, b = first.shape
        logits = jnp.full((t, b, 7), -10.0).at[..., 2].set(10.0)
        return carry, logits, jnp.zeros((t, b))


OPEN = MazeLevel.from_ascii(">.G\n...\n...")  # forward reaches the goal
BLOCKED = MazeLevel.from_ascii(">#G\n...\n...")  # forward hits a wall forever


def half_blocked(key: jax.Array) -> MazeLevel:
    return jax.tree.map(lambda a, b: jnp.where(jax.random.bernoulli(key), a, b), OPEN, BLOCKED)


def test_robustness_of_a_scripted_policy() -> None:
    env = MazeEnv(height=3, width=3, n_walls=0, max_steps=6, normalize_obs=True)
    r = robustness(Forward(), None, env, half_blocked, n_levels=64, episodes=3, alpha=0.25,
                   key=jax.random.key(0), greedy=True, batch=50)  # fmt: skip
    # every level is solved always (open) or never (blocked): success rates are 0 or 1
    assert r.mean + r.unsolved == pytest.approx(1.0)
    assert 0.2 < r.mean < 0.8  # both kinds were drawn
    assert r.cvar == 0.0 and r.cvar_lo == 0.0 and r.cvar_hi == 0.0  # > 25% never solved
    assert (r.levels, r.episodes, r.alpha) == (64, 3, 0.25)
    full = robustness(Forward(), None, env, half_blocked, 64, 3, 1.0, jax.random.key(0), True, 50)
    assert full.cvar == pytest.approx(full.mean)


@dataclasses.dataclass(frozen=True)
class Always:
    """A team policy that always takes grid Tag move ``move`` (0 stay, 1 is +x)."""

    move: int
    dist = D.CATEGORICAL

    def apply(self, params, obs, first, carry):
        t, b = obs.shape[:2]
        return carry, jnp.full((t, b, 5), -10.0).at[..., self.move].set(10.0), jnp.zeros((t, b))


def test_arena_robustness_of_scripted_teams() -> None:
    """Grid Tag, one tagger standing at (2, 0), the runner at (0, 0) always moving +x: it
    runs into the tagger on step 2 of an open arena, and never in an arena where (1, 0) is
    blocked. The taggers' per-arena tag rate is 1 or 0, as for mazes; the random runners
    (another matchup) are drawn as well."""
    from arenax.envs.tag import GridTagEnv
    from arenax.envs.tag.evaluation import arena_robustness
    from arenax.envs.tag.grid import GridTagLevel

    env = GridTagEnv(n_taggers=1, size=3, episode_length=5)
    start = jnp.array([[2, 0], [0, 0]], jnp.int32)

    def generator(key: jax.Array) -> GridTagLevel:
        wall = jax.random.bernoulli(key)
        return GridTagLevel(start, jnp.zeros((4, 4), bool).at[0, 1].set(wall))

    policies = {"tagger": Always(0), "runner": Always(1)}
    params = {"tagger": None, "runner": None}
    r = arena_robustness(env, policies, params, generator, 40, 3, 0.25, jax.random.key(0),
                         runners="trained", greedy=True, batch=32)  # fmt: skip
    assert r.mean + r.unsolved == pytest.approx(1.0)  # tagged always (open) or never
    assert 0.2 < r.mean < 0.8
    assert r.cvar == 0.0 and r.cvar_hi == 0.0 and r.opponent == "trained"
    assert (r.levels, r.episodes, r.alpha) == (40, 3, 0.25)
    full = arena_robustness(env, policies, params, generator, 40, 3, 1.0, jax.random.key(0),
                            runners="trained", greedy=True, batch=32)  # fmt: skip
    assert full.cvar == pytest.approx(full.mean) == pytest.approx(r.mean)
    rnd = arena_robustness(env, policies, params, generator, 40, 3, 0.25, jax.random.key(0),
                           runners="random")  # fmt: skip
    assert 0.0 <= rnd.cvar <= rnd.mean <= 1.0 and rnd.opponent == "random"


def test_two_pass_cvar_by_hand() -> None:
    """Four levels; the first evaluation's rates are [.5, 0, 1, .25], so with alpha = .5 the
    worst two are levels 1 and 3; the second evaluation (other episodes) gives them 1/2 and
    1, so the CVaR is .75 while the choosing episodes said (0 + .25) / 2."""
    from arenax.stats import two_pass_robustness

    first = np.array([[1, 0, 1, 0], [0, 0, 0, 0], [1, 1, 1, 1], [1, 0, 0, 0]], bool)
    second = {1: [1, 0, 1, 0], 3: [1, 1, 1, 1]}
    calls = []

    def wins_of(idx: np.ndarray, key: jax.Array) -> np.ndarray:
        calls.append(idx.tolist())
        return first[idx] if len(calls) == 1 else np.array([second[i] for i in idx], bool)

    r = two_pass_robustness(wins_of, 4, 0.5, jax.random.key(0))
    assert calls == [[0, 1, 2, 3], [1, 3]]
    assert r.mean == pytest.approx(0.4375) and r.unsolved == pytest.approx(0.25)
    assert r.cvar == pytest.approx(0.75) and r.cvar_same == pytest.approx(0.125)
    assert r.cvar_lo <= r.cvar <= r.cvar_hi and (r.levels, r.episodes) == (4, 4)


SEALED = MazeLevel.from_ascii(">#G\n.#.\n.#.")  # a wall column cuts the goal off


def half_sealed(key: jax.Array) -> MazeLevel:
    return jax.tree.map(lambda a, b: jnp.where(jax.random.bernoulli(key), a, b), OPEN, SEALED)


def test_robustness_on_solvable_levels_only() -> None:
    """Open mazes or mazes with no path to the goal: asked for solvable levels only, every
    level drawn is the open one, so the forward policy always succeeds (without the filter,
    the sealed ones are drawn too and never solved)."""
    env = MazeEnv(height=3, width=3, n_walls=0, max_steps=6, normalize_obs=True)
    r = robustness(Forward(), None, env, half_sealed, n_levels=16, episodes=2, alpha=0.25,
                   key=jax.random.key(0), greedy=True, solvable_only=True)  # fmt: skip
    assert r.solvable_only and r.levels == 16
    assert r.mean == 1.0 and r.cvar == 1.0 and r.unsolved == 0.0
    every = robustness(Forward(), None, env, half_sealed, 16, 2, 0.25, jax.random.key(0), True)
    assert not every.solvable_only and 0.0 < every.unsolved < 1.0 and every.cvar == 0.0
    from arenax.stats import draw_levels

    with pytest.raises(ValueError, match="rarely makes solvable levels"):
        draw_levels(lambda k: BLOCKED, 4, jax.random.key(0), lambda lv: jnp.bool_(False), 3)


def test_intervals_stay_inside_what_the_values_can_be() -> None:
    """0/1 outcomes get Wilson's interval (inside [0, 1]); other means the normal one cut to
    the values' range: 1 tag in 12 episodes is not "−0.08–0.25", non-negative returns give
    no negative bound."""
    from arenax.stats import mean_ci, wilson

    tags = np.array([1] + [0] * 11)
    m, lo, hi = mean_ci(tags)
    assert (lo, hi) == wilson(1, 12) and 0.0 < lo < m < hi < 1.0
    returns = np.array([0.0] * 9 + [0.9])
    m, lo, hi = mean_ci(returns)
    assert (
        lo == 0.0
        and m == pytest.approx(0.09)
        and hi == pytest.approx(0.09 + 1.96 * np.std(returns, ddof=1) / np.sqrt(10))
    )
    assert mean_ci(np.array([2.0, 2.0, 2.0])) == (2.0, 2.0, 2.0)
    assert mean_ci(np.array([3.0])) == (3.0, 3.0, 3.0)
