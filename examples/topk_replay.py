"""A curriculum and a level score written outside arenax, each registered in one line.

**The level score** ``return_gap``: a level's best episodic return so far minus the mean
return of the episodes that ended in this rollout — a regret estimate that reads no value
function (MaxMC's reference, without the critic).

**The curriculum** ``topk`` (top-k replay): a level buffer (arenax's level sampler,
`arenax.curricula.sampler.LevelSampler`) keeps the levels of highest score; once it holds ``min_fill`` of its capacity,
every cycle plays ``replay_fraction`` of the environments on levels drawn uniformly from
its ``k`` best entries and the others on fresh levels, and the policies learn from every
environment (no robust filtering). One cycle::

    levels  <- warm: k-best buffer levels | fresh levels;  cold: fresh levels only
    rollout <- every team plays its env's level (replayed within the cycle)
    update  <- PPO of each learning policy on every environment
    scores  <- each level by `score` (a registered level score: return_gap by default)
    buffer  <- rescore the replayed levels, then insert the fresh ones by score

It runs on any family (the maze, grid Tag: levels scored by the first team's results),
one device or several (levels are drawn from replicated keys, scores all-gathered).

Importing this module registers both::

    ARENAX_PLUGINS=examples.topk_replay arenax train maze-dr --curriculum topk --topk.k 32
    ARENAX_PLUGINS=examples.topk_replay arenax train tag-grid-plr --curriculum topk

    import examples.topk_replay, arenax
    run = arenax.train("maze-dr", curriculum={"kind": "topk", "score": "return_gap"})

See ``docs/extending.md``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from typing import Annotated, Any, ClassVar

import jax
import jax.numpy as jnp

import arenax
from arenax.collectives import all_gather
from arenax.curricula.common import (
    Curriculum,
    CurriculumOptions,
    Setup,
    TrainState,
    level_batch_metrics,
    level_values,
    replay_rollout,
    score_team_problems,
)
from arenax.curricula.players import Played, Players
from arenax.curricula.sampler import LevelSampler
from arenax.curricula.scores import SCORE_NAME, ScoreInputs
from arenax.options import POSITIVE, UNIT, Problem


# ---------------------------------------------------------------------- the level score
def return_gap(x: ScoreInputs) -> jax.Array:
    """`(N,)`: best return so far minus the mean return of the ended episodes (`-inf`
    where none ended: the level is not scored)."""
    return jnp.where(jnp.isfinite(x.mean_return), x.best - x.mean_return, -jnp.inf)


# ---------------------------------------------------------------------- the options
@dataclasses.dataclass(frozen=True)
class TopKConfig(CurriculumOptions):
    """Top-k replay (`--topk.*`): replay levels drawn from the k best of a level buffer
    beside fresh ones, and learn from both."""

    KIND: ClassVar[str] = "topk"
    SUMMARY: ClassVar[str] = (
        "top-k replay (examples/topk_replay.py): the k best levels beside fresh ones"
    )

    score: Annotated[str, SCORE_NAME] = "return_gap"
    """Level score, a registered one (`arenax list`)."""
    buffer_size: Annotated[int, POSITIVE] = 1000
    """Levels the buffer holds."""
    k: Annotated[int, POSITIVE] = 100
    """Replayed levels are drawn uniformly from this many best-scored ones."""
    replay_fraction: Annotated[float, UNIT] = 0.5
    """Share of the environments that replay buffer levels once it is warm."""
    min_fill: Annotated[float, UNIT] = 0.1
    """Fill ratio from which the buffer is replayed."""

    def curriculum(self, s: Setup) -> TopKReplay:
        parts = s.score_parts(self.score, "topk.score")
        return TopKReplay(s.players, s.n_envs, s.n_steps, self, s.game.generate,
                          s.level_metrics(), parts)  # fmt: skip

    def problems(self) -> Iterator[Problem]:
        ints = isinstance(self.k, int) and isinstance(self.buffer_size, int)
        if ints and self.k > self.buffer_size:
            yield Problem("k", self.k, f"must be <= topk.buffer_size={self.buffer_size}")

    def run_problems(self, run: Any, game: Any) -> Iterator[Problem]:
        yield from score_team_problems(self.KIND, "", run)  # it scores the first team's results

    def tiny(self) -> TopKConfig:
        return dataclasses.replace(self, buffer_size=8, k=4, min_fill=0.5)


# ---------------------------------------------------------------------- the curriculum
@dataclasses.dataclass(frozen=True)
class TopKReplay(Curriculum):
    """Top-k replay over `players.env`'s levels (see the module docstring)."""

    players: Players
    n_envs: int
    n_steps: int
    config: TopKConfig
    generator: Callable[[jax.Array], Any]
    level_metrics: Callable[[Any], dict[str, jax.Array]] | None = None
    score_parts: dict[str, Callable[[Any], jax.Array]] = dataclasses.field(default_factory=dict)

    @property
    def n_replay(self) -> int:
        return round(self.config.replay_fraction * self.n_envs)

    @property
    def keep(self) -> LevelSampler:
        """The buffer's rules: a new level replaces the lowest-scored one (rank, no
        staleness)."""
        return LevelSampler(self.config.buffer_size, staleness_coef=0.0, temperature=1.0)

    @property
    def draw(self) -> LevelSampler:
        """Replay draws: uniform over the k best."""
        k = min(self.config.k, self.config.buffer_size)
        return dataclasses.replace(self.keep, prioritization="topk", topk=k)

    def init(self, key: jax.Array) -> TrainState:
        k_params, k_level = jax.random.split(key)
        level = self.generator(k_level)
        obs, _ = self.env.reset(k_level, level)
        learners = self.players.init(k_params, obs)
        return TrainState.create(key, learners, self.keep.create(level))

    def cycle(
        self, state: TrainState, key: jax.Array, env_ids: jax.Array, axis_name: str | None
    ) -> tuple[TrainState, dict[str, jax.Array]]:
        c, p, n, m = self.config, self.players, self.n_envs, self.n_replay
        k_new, k_sample, k_play, k_update = jax.random.split(key, 4)
        buf = state.curriculum
        warm = self.keep.fill(buf) >= c.min_fill
        take = lambda tree, i: jax.tree.map(lambda x: x[i], tree)  # noqa: E731

        # 1. levels: the first m envs draw from the k best once warm; the others (all while
        #    cold) play fresh levels
        fresh = jax.vmap(self.generator)(jax.random.split(k_new, n))
        sampled, idx = self.draw.sample(buf, k_sample, m)  # (used only once warm)
        replay = jnp.arange(n) < jnp.where(warm, m, 0)  # (n,)
        slot = jnp.concatenate([idx, jnp.zeros(n - m, jnp.int32)])
        levels = jax.tree.map(
            lambda a, b: jnp.where(replay.reshape((-1,) + (1,) * (a.ndim - 1)), a, b),
            take(sampled.levels, slot),
            fresh,
        )
        buf = jax.tree.map(lambda a, b: jnp.where(warm, a, b), sampled, buf)  # stamped as seen

        # 2. every team plays its env's level; 3. every learning policy learns from every env
        local = take(levels, env_ids)
        trajs, carry0, episodes = replay_rollout(p, state.learner, k_play, local, env_ids,
                                                 self.n_steps)  # fmt: skip
        played = Played(trajs, carry0, p.advantages(trajs), episodes)
        learners, stats = p.update(state.learner, trajs, carry0, k_update, axis_name)

        # 4. each level's score, against its best return so far
        before = jnp.where(replay, buf.max_returns[slot], self.keep.stored_best(buf, levels))
        scores, best = p.level_scores(c.score, played, before[env_ids],
                                      level_values(self.score_parts, local))  # fmt: skip
        scores, best = all_gather((scores, best), axis_name)

        # 5. rescore the replayed levels; then insert the fresh ones, each replacing the
        #    lowest-scored entry of a full buffer if it scores at least as high
        buf = self.keep.rescore(buf, idx, scores[:m], best[:m], skip=~replay[:m])
        new_scores = jnp.where(replay, -jnp.inf, scores)  # -inf: not inserted
        buf = self.keep.insert(buf, levels, new_scores, best)

        steps = jnp.int32(n * self.n_steps)
        metrics = {
            **p.episode_metrics(played.episodes, axis_name),
            **stats,
            **level_batch_metrics(self.level_metrics, local, axis_name),
            **self.draw.metrics(buf),
            "replay": jnp.mean(replay.astype(jnp.float32)),
            "env_steps": steps,
            "student_steps": steps,
            "updates": jnp.int32(1),
        }
        return state.next(learners, buf), metrics


# ---------------------------------------------------------------------- registration
arenax.register_score("return_gap", return_gap, summary="best minus mean return (examples/)")
arenax.register_curriculum(TopKConfig)
