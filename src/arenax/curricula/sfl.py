"""Sampling for learnability (SFL; Rutherford et al., "No Regrets: Investigating and
Improving Regret Approximations for Curriculum Discovery", 2024).

Instead of a regret estimate, SFL keeps the levels whose success rate ``p`` under the
current policy is closest to one half: their *learnability* ``p (1 − p)`` is highest.
One cycle::

    every refresh_every cycles (and on the first):
        new     <- sample_levels fresh levels (the generator: DR)
        played  <- the student plays `episodes` copies of each for the env's max_steps,
                   so every copy ends its first episode
        p       <- the fraction of those first episodes solved, per level
        buffer  <- the buffer_size levels of highest p (1 − p)
    levels  <- replay_fraction · n_envs drawn uniformly from the buffer, the rest fresh
    rollout <- the student plays them (each env replays its level), n_steps steps
    student <- PPO update

Success is the environment's ``info["success"]`` (the maze: the goal reached; grid Tag:
the runner tagged, see :class:`~arenax.curricula.teams.TeamSFLCurriculum`). Multi-device:
the sampled levels and the buffer are global (replicated keys); every device plays its
slice of the sampled levels and the success rates are all-gathered before the selection.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Annotated, Any

import jax
import jax.numpy as jnp

from arenax.collectives import all_gather
from arenax.curricula.common import (
    STUDENT,
    Curriculum,
    OneStudent,
    TrainState,
    level_batch_metrics,
    replay_rollout,
)
from arenax.curricula.plr import Played
from arenax.envs.core import Environment
from arenax.options import POSITIVE, UNIT
from arenax.rl.learner import Learner, LearnerState
from arenax.rl.rollout import example_obs
from arenax.struct import pytree_dataclass


@dataclasses.dataclass(frozen=True)
class SFLConfig:
    """Options of sampling for learnability (``--algorithm sfl``)."""

    buffer_size: Annotated[int, POSITIVE] = 100
    """Levels kept: those of highest learnability p (1 − p)."""
    sample_levels: Annotated[int, POSITIVE] = 256
    """Fresh levels evaluated per refresh (``sample_levels × episodes`` divisible by the
    devices)."""
    episodes: Annotated[int, POSITIVE] = 4
    """Episodes (parallel copies) per sampled level that estimate its success rate p."""
    refresh_every: Annotated[int, POSITIVE] = 50
    """Cycles between refreshes of the buffer (the first cycle refreshes)."""
    replay_fraction: Annotated[float, UNIT] = 0.5
    """Fraction of each cycle's environments that play buffer levels (the rest: fresh)."""


@pytree_dataclass
class SFLBuffer:
    """The selected levels ``(K, ...)``, their success rates and learnability ``(K,)``."""

    levels: Any
    success: jax.Array
    learnability: jax.Array


def learnability(success: jax.Array) -> jax.Array:
    """``p (1 − p)``: 1/4 at p = 1/2, 0 for levels always or never solved."""
    return success * (1.0 - success)


def first_episode_success(done: jax.Array, success: jax.Array) -> jax.Array:
    """Per env ``(N,)``: the outcome of the first episode of a rollout's ``(T, N)`` flags
    — 1 if it ended solved, else 0 (also when it did not end); ``success`` may also be a
    fraction in [0, 1] (many-agent games: the share of independent trials won, see
    :class:`~arenax.curricula.teams.TeamSFLCurriculum`). Only first episodes count, so a
    copy that solves fast and starts again does not weigh more than one that fails."""
    first = done & (jnp.cumsum(done.astype(jnp.int32), axis=0) == 1)
    return jnp.sum(jnp.where(first, success, 0), axis=0).astype(jnp.float32)


def select(levels: Any, success: jax.Array, k: int) -> SFLBuffer:
    """The ``k`` levels of highest learnability (ties: the lower index), as a buffer."""
    score = learnability(success)
    _, idx = jax.lax.top_k(score, k)
    return SFLBuffer(jax.tree.map(lambda x: x[idx], levels), success[idx], score[idx])


def _take(tree: Any, idx: jax.Array) -> Any:
    return jax.tree.map(lambda x: x[idx], tree)


@dataclasses.dataclass(frozen=True)
class SFLCurriculum(OneStudent, Curriculum):
    """SFL over ``env``'s levels (see the module docstring).

    Attributes:
        env: the (unwrapped) environment family.
        learner: the student's PPO learner.
        n_envs: environments per cycle (global, over all devices).
        n_steps: rollout length.
        config: the SFL options.
        generator: ``key -> level`` for fresh levels.
        level_metrics: optional ``level -> dict`` of family metrics to log.
        n_devices: devices the sampled levels are split over.
    """

    env: Environment
    learner: Learner
    n_envs: int
    n_steps: int
    config: SFLConfig
    generator: Callable[[jax.Array], Any]
    level_metrics: Callable[[Any], dict[str, jax.Array]] | None = None
    n_devices: int = 1

    @property
    def n_buffer(self) -> int:
        """Environments per cycle that play buffer levels."""
        return round(self.config.replay_fraction * self.n_envs)

    def init(self, key: jax.Array) -> TrainState:
        """Fresh learner(s) and a placeholder buffer (the first cycle fills it)."""
        k_params, k_level = jax.random.split(key)
        level = self.generator(k_level)
        k = self.config.buffer_size
        buf = SFLBuffer(
            levels=jax.tree.map(lambda x: jnp.broadcast_to(x, (k, *jnp.shape(x))), level),
            success=jnp.zeros((k,), jnp.float32),
            learnability=jnp.zeros((k,), jnp.float32),
        )
        return TrainState.create(key, self._init_learners(k_params, k_level, level), buf)

    # ------------------------------------------------------------------ who learns
    # (one student, :class:`OneStudent`'s hooks and these; :class:`TeamSFLCurriculum`
    # overrides them for the policies of a many-agent game)
    def _init_learners(
        self, key: jax.Array, level_key: jax.Array, level: Any
    ) -> dict[str, LearnerState]:
        obs = example_obs(self.env, level_key, level, "agent")
        return {STUDENT: self.learner.init(key, obs)}

    def _success(self, episodes: dict) -> jax.Array:
        """``(T, N)`` flags: the episode ending at that step was a success."""
        return episodes["success"]

    def _train(
        self, agents: Any, played: Played, key: jax.Array, axis_name: str | None
    ) -> tuple[Any, dict[str, jax.Array]]:
        return self.learner.update(agents, played.traj, played.carry0, key, axis_name)

    def _play(self, params: Any, key: jax.Array, levels: Any, ids: jax.Array, steps: int) -> Played:
        """This device's ``levels`` played ``steps`` steps, each env replaying its level
        (``advantages`` unused: ``None``)."""
        traj, carry0, episodes = replay_rollout(
            self.env, self.learner, params, key, levels, ids, steps
        )
        return Played(traj, carry0, None, episodes)

    @property
    def eval_steps(self) -> int:
        """Steps of a refresh's rollout: the env's time limit (every copy ends its first
        episode)."""
        return int(self.env.max_steps)

    def _refresh(self, params: Any, key: jax.Array, axis_name: str | None) -> SFLBuffer:
        c = self.config
        k_levels, k_play = jax.random.split(key)
        new = jax.vmap(self.generator)(jax.random.split(k_levels, c.sample_levels))
        n_copies = c.sample_levels * c.episodes  # copy j plays level j // episodes
        n_local = n_copies // self.n_devices
        first = jax.lax.axis_index(axis_name) * n_local if axis_name else 0
        ids = first + jnp.arange(n_local, dtype=jnp.int32)
        local = _take(new, ids // c.episodes)
        ep = self._play(params, k_play, local, ids, self.eval_steps).episodes
        solved = all_gather(first_episode_success(ep["done"], self._success(ep)), axis_name)
        success = jnp.mean(solved.reshape(c.sample_levels, c.episodes), axis=1)
        return select(new, success, c.buffer_size)

    def cycle(
        self, state: TrainState, key: jax.Array, env_ids: jax.Array, axis_name: str | None
    ) -> tuple[TrainState, dict[str, jax.Array]]:
        c = self.config
        k_refresh, k_pick, k_fresh, k_play, k_update = jax.random.split(key, 5)
        agents = self._agents(state)
        refresh = state.cycle % c.refresh_every == 0
        buf = jax.lax.cond(
            refresh, lambda b: self._refresh(self._params(agents), k_refresh, axis_name),
            lambda b: b, state.curriculum,
        )  # fmt: skip
        picked = _take(buf.levels, jax.random.randint(k_pick, (self.n_buffer,), 0, c.buffer_size))
        fresh = jax.vmap(self.generator)(jax.random.split(k_fresh, self.n_envs - self.n_buffer))
        levels = jax.tree.map(lambda a, b: jnp.concatenate([a, b]), picked, fresh)
        local = _take(levels, env_ids)
        played = self._play(self._params(agents), k_play, local, env_ids, self.n_steps)
        agents, stats = self._train(agents, played, k_update, axis_name)
        steps = self.n_envs * self.n_steps
        eval_steps = c.sample_levels * c.episodes * self.eval_steps
        metrics = {
            **self._episode_metrics(played.episodes, axis_name),
            **stats,
            **level_batch_metrics(self.level_metrics, local, axis_name),
            "sfl/learnability": jnp.mean(buf.learnability),
            "sfl/success": jnp.mean(buf.success),
            "sfl/refresh": refresh.astype(jnp.float32),
            "env_steps": (steps + jnp.where(refresh, eval_steps, 0)).astype(jnp.int32),
            "student_steps": jnp.int32(steps),
            "updates": jnp.int32(1),
        }
        return state.next(self._learners(agents), buf), metrics
