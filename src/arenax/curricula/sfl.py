"""Sampling for learnability (SFL; Rutherford et al., "No Regrets: Investigating and
Improving Regret Approximations for Curriculum Discovery", 2024).

Instead of a regret estimate, SFL keeps the levels whose success rate `p` under the
current policy is closest to one half: their *learnability* `p (1 − p)` is highest.
One cycle:

    every refresh_every cycles (and on the first):
        new     <- sample_levels fresh levels (the generator: DR)
        played  <- the student plays `episodes` copies of each for eval_steps steps
                   (default: the env's max_steps, so every copy ends its first episode),
                   in sample_chunks chunks one after another
        p       <- the fraction solved of each copy's first counted_episodes finished
                   episodes (default 1: the first episode), per level
        buffer  <- the buffer_size levels of highest p (1 − p)
    levels  <- replay_fraction · n_envs drawn uniformly from the buffer, the rest fresh
    rollout <- the student plays them (each env replays its level), n_steps steps
    student <- PPO update

Success is the environment's `info["success"]` (the maze: the goal reached; grid Tag:
the runner tagged: a family's `team_success`). Multi-device:
the sampled levels and the buffer are global (replicated keys); every device plays its
slice of the sampled levels and the success rates are all-gathered before the selection.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterator
from typing import Annotated, Any, ClassVar

import jax
import jax.numpy as jnp

from arenax.collectives import all_gather
from arenax.curricula.blocks import take
from arenax.curricula.common import (
    Curriculum,
    CurriculumOptions,
    Setup,
    TrainState,
    level_batch_metrics,
    replay_rollout,
    score_team_problems,
)
from arenax.curricula.players import Played, Players
from arenax.options import POSITIVE, UNIT, IntIn, Problem
from arenax.struct import pytree_dataclass
from arenax.utils import tree_bytes


@dataclasses.dataclass(frozen=True)
class SFLConfig(CurriculumOptions):
    """Options of sampling for learnability (`--sfl.*`)."""

    KIND: ClassVar[str] = "sfl"
    SUMMARY: ClassVar[str] = "sampling for learnability: train on levels of success rate near 1/2"

    def curriculum(self, s: Setup) -> SFLCurriculum:
        """SFL over the game; a level's success rate is the scoring team's (the family's
        `team_success`)."""
        players, family = s.players, s.family
        success = functools.partial(family.success, players.env, players.scorer)
        return SFLCurriculum(
            players,
            s.n_envs,
            s.n_steps,
            self,
            s.game.generate,
            success,
            s.level_metrics(),
            s.n_devices,
        )

    def problems(self) -> Iterator[Problem]:
        ints = isinstance(self.buffer_size, int) and isinstance(self.sample_levels, int)
        if ints and self.buffer_size > self.sample_levels:
            yield Problem(
                "buffer_size",
                self.buffer_size,
                f"must be <= sfl.sample_levels={self.sample_levels} (the kept levels are sampled ones)",
            )

    def run_problems(self, run: Any, game: Any) -> Iterator[Problem]:
        """SFL trains the first team (its success rates score the levels); the sampled
        levels' episodes split evenly over the devices and chunks."""
        yield from score_team_problems(self.KIND, "", run)
        if (self.sample_levels * self.episodes) % (run.devices * self.sample_chunks):
            chunks = (
                f" times sfl.sample_chunks={self.sample_chunks}" if self.sample_chunks > 1 else ""
            )
            yield Problem(
                "sfl.sample_levels",
                self.sample_levels,
                f"times sfl.episodes={self.episodes} must be divisible by devices={run.devices}{chunks}",
            )

    def tiny(self) -> SFLConfig:
        return dataclasses.replace(
            self,
            buffer_size=4,
            sample_levels=8,
            episodes=2,
            refresh_every=2,
            eval_steps=min(self.eval_steps, 20),
            sample_chunks=min(self.sample_chunks, 2),
        )

    buffer_size: Annotated[int, POSITIVE] = 100
    """Levels kept: those of highest learnability p (1 − p)."""
    sample_levels: Annotated[int, POSITIVE] = 256
    """Fresh levels evaluated per refresh (`sample_levels × episodes` divisible by the
    devices)."""
    episodes: Annotated[int, POSITIVE] = 4
    """Episodes (parallel copies) per sampled level that estimate its success rate p."""
    refresh_every: Annotated[int, POSITIVE] = 50
    """Cycles between refreshes of the buffer (the first cycle refreshes)."""
    replay_fraction: Annotated[float, UNIT] = 0.5
    """Fraction of each cycle's environments that play buffer levels (the rest: fresh)."""
    eval_steps: Annotated[int, IntIn(0, 1_000_000)] = 0
    """Steps each copy plays to estimate p (0: the env's time limit, so that every copy ends
    its first episode; the paper: 2,000, one copy, up to 10 episodes)."""
    counted_episodes: Annotated[int, POSITIVE] = 1
    """Finished episodes of each copy that count toward p (the first ones; the paper: 10).
    A level with no finished episode has p = 0."""
    sample_chunks: Annotated[int, POSITIVE] = 1
    """The sampled levels are played in this many chunks one after another, to bound
    memory (the paper: 5 chunks of 5,000; `sample_levels × episodes` divisible by it
    times the devices)."""


@pytree_dataclass
class SFLBuffer:
    """The selected levels `(K, ...)`, their success rates and learnability `(K,)`."""

    levels: Any
    success: jax.Array
    learnability: jax.Array


def learnability(success: jax.Array) -> jax.Array:
    """`p (1 − p)`: 1/4 at p = 1/2, 0 for levels always or never solved."""
    return success * (1.0 - success)


def first_episode_success(done: jax.Array, success: jax.Array) -> jax.Array:
    """Per env `(N,)`: the outcome of the first episode of a rollout's `(T, N)` flags
    — 1 if it ended solved, else 0 (also when it did not end); `success` may also be a
    fraction in [0, 1] (many-agent games: the share of independent trials won, see
    a family's `team_success`). Only first episodes count, so a
    copy that solves fast and starts again does not weigh more than one that fails."""
    first = done & (jnp.cumsum(done.astype(jnp.int32), axis=0) == 1)
    return jnp.sum(jnp.where(first, success, 0), axis=0).astype(jnp.float32)


def counted_success(done: jax.Array, success: jax.Array, k: int) -> tuple[jax.Array, jax.Array]:
    """Per env `(N,)`: the successes among the first `k` finished episodes of a
    rollout's `(T, N)` flags (`success` may be a fraction, see
    `first_episode_success`) and how many finished, at most `k`."""
    counted = done & (jnp.cumsum(done.astype(jnp.int32), axis=0) <= k)
    wins = jnp.sum(jnp.where(counted, success, 0), axis=0).astype(jnp.float32)
    return wins, jnp.sum(counted, axis=0).astype(jnp.float32)


def select(levels: Any, success: jax.Array, k: int) -> SFLBuffer:
    """The `k` levels of highest learnability (ties: the lower index), as a buffer."""
    score = learnability(success)
    _, idx = jax.lax.top_k(score, k)
    return SFLBuffer(jax.tree.map(lambda x: x[idx], levels), success[idx], score[idx])


@dataclasses.dataclass(frozen=True)
class SFLCurriculum(Curriculum):
    """SFL over `players.env`'s levels (see the module docstring).

    Attributes:
        players: the policies and how they act and learn.
        n_envs: environments per cycle (global, over all devices).
        n_steps: rollout length.
        config: the SFL options.
        generator: `key -> level` for fresh levels.
        success: `episodes -> (T, N)`: the scoring team's outcome of the episodes ending
            at each step, in [0, 1] (default: `episodes["success"]`; many-agent games:
            the family's `team_success`).
        level_metrics: optional `level -> dict` of family metrics to log.
        n_devices: devices the sampled levels are split over.
    """

    players: Players
    n_envs: int
    n_steps: int
    config: SFLConfig
    generator: Callable[[jax.Array], Any]
    success: Callable[[dict[str, Any]], jax.Array] | None = None
    level_metrics: Callable[[Any], dict[str, jax.Array]] | None = None
    n_devices: int = 1

    @property
    def runs_in_turn(self) -> bool:
        """Stacked runs take their cycles in turn: a refresh is due on a run's own cycle
        count, and `vmap` would run it (thousands of levels played) on every cycle."""
        return True

    @property
    def n_buffer(self) -> int:
        """Environments per cycle that play buffer levels."""
        return round(self.config.replay_fraction * self.n_envs)

    def init(self, key: jax.Array) -> TrainState:
        """Fresh policies and a placeholder buffer (the first cycle fills it)."""
        k_params, k_level = jax.random.split(key)
        level = self.generator(k_level)
        k = self.config.buffer_size
        buf = SFLBuffer(
            levels=jax.tree.map(lambda x: jnp.broadcast_to(x, (k, *jnp.shape(x))), level),
            success=jnp.zeros((k,), jnp.float32),
            learnability=jnp.zeros((k,), jnp.float32),
        )
        obs, _ = self.env.reset(k_level, level)
        return TrainState.create(key, self.players.init(k_params, obs), buf)

    def _play(self, states: Any, key: jax.Array, levels: Any, ids: jax.Array, steps: int) -> Played:
        """This device's `levels` played `steps` steps by every team, each env replaying
        its level (`advantages` unused: `None`)."""
        trajs, carry0, episodes = replay_rollout(self.players, states, key, levels, ids, steps)
        return Played(trajs, carry0, None, episodes)

    def _success(self, episodes: dict[str, Any]) -> jax.Array:
        return episodes["success"] if self.success is None else self.success(episodes)

    @property
    def eval_steps(self) -> int:
        """Steps of a refresh's rollout: `eval_steps`, or the env's time limit (every copy
        ends its first episode)."""
        return self.config.eval_steps or self.env.time_limit

    def _refresh(self, states: Any, key: jax.Array, axis_name: str | None) -> SFLBuffer:
        c = self.config
        k_levels, k_play = jax.random.split(key)
        new = jax.vmap(self.generator)(jax.random.split(k_levels, c.sample_levels))
        n_copies = c.sample_levels * c.episodes  # copy j plays level j // episodes
        n_local = n_copies // self.n_devices
        first = jax.lax.axis_index(axis_name) * n_local if axis_name else 0
        ids = first + jnp.arange(n_local, dtype=jnp.int32)

        def play(chunk: jax.Array, k: jax.Array) -> tuple[jax.Array, jax.Array]:
            levels = take(new, chunk // c.episodes)
            ep = self._play(states, k, levels, chunk, self.eval_steps).episodes
            success = self._success(ep)
            if c.counted_episodes == 1 and not c.eval_steps:  # every copy ends its first
                return first_episode_success(ep["done"], success), jnp.ones(chunk.shape)
            return counted_success(ep["done"], success, c.counted_episodes)

        if c.sample_chunks == 1:
            wins, ended = play(ids, k_play)
        else:
            chunks = ids.reshape(c.sample_chunks, -1)
            keys = jax.vmap(lambda i: jax.random.fold_in(k_play, i))(jnp.arange(c.sample_chunks))
            wins, ended = jax.lax.map(lambda x: play(*x), (chunks, keys))
            wins, ended = wins.reshape(-1), ended.reshape(-1)
        wins, ended = all_gather((wins, ended), axis_name)
        if c.counted_episodes == 1 and not c.eval_steps:
            success = jnp.mean(wins.reshape(c.sample_levels, c.episodes), axis=1)
        else:
            wins = jnp.sum(wins.reshape(c.sample_levels, c.episodes), axis=1)
            ended = jnp.sum(ended.reshape(c.sample_levels, c.episodes), axis=1)
            success = jnp.where(ended > 0, wins / jnp.maximum(ended, 1.0), 0.0)
        return select(new, success, c.buffer_size)

    def cycle(
        self, state: TrainState, key: jax.Array, env_ids: jax.Array, axis_name: str | None
    ) -> tuple[TrainState, dict[str, jax.Array]]:
        c, p = self.config, self.players
        k_refresh, k_pick, k_fresh, k_play, k_update = jax.random.split(key, 5)
        states = state.learner
        refresh = state.cycle % c.refresh_every == 0
        buf = jax.lax.cond(
            refresh,
            lambda b: self._refresh(states, k_refresh, axis_name),
            lambda b: b,
            state.curriculum,
        )
        picked = take(buf.levels, jax.random.randint(k_pick, (self.n_buffer,), 0, c.buffer_size))
        fresh = jax.vmap(self.generator)(jax.random.split(k_fresh, self.n_envs - self.n_buffer))
        levels = jax.tree.map(lambda a, b: jnp.concatenate([a, b]), picked, fresh)
        local = take(levels, env_ids)
        played = self._play(states, k_play, local, env_ids, self.n_steps)
        states, stats = p.update(states, played.traj, played.carry0, k_update, axis_name)
        steps = self.n_envs * self.n_steps
        eval_steps = c.sample_levels * c.episodes * self.eval_steps
        metrics = {
            **p.episode_metrics(played.episodes, axis_name),
            **stats,
            **level_batch_metrics(self.level_metrics, local, axis_name),
            "sfl/learnability": jnp.mean(buf.learnability),
            "sfl/success": jnp.mean(buf.success),
            "sfl/refresh": refresh.astype(jnp.float32),
            "buffer/bytes_per_level": jnp.float32(
                tree_bytes(jax.tree.map(lambda x: x[0], buf.levels))
            ),
            "env_steps": (steps + jnp.where(refresh, eval_steps, 0)).astype(jnp.int32),
            "student_steps": jnp.int32(steps),
            "updates": jnp.int32(1),
        }
        return state.next(states, buf), metrics
