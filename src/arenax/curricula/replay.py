"""The replay curriculum: one cycle of PLR, robust PLR (PLR⊥), ACCEL, and PLR∥ / ACCEL∥
(their options: `arenax.curricula.plr`).

Sequential forms (PLR, PLR⊥, ACCEL), one cycle:

    if buffer warm (fill >= min_fill) and coin(replay_prob):          # replay cycle
        levels  <- sample the buffer (P = (1-ρ) P_score + ρ P_staleness)
        rollout <- the student replays each level (auto-reset to the same level)
        student <- PPO update
        buffer  <- rescore the replayed levels
        ACCEL:  children <- mutate replayed levels (n edits); rollout with the new student;
                buffer   <- insert children by score                   (no gradient)
    else:                                                             # new-level cycle
        levels  <- generate new levels (DR, or empty mazes for ACCEL)
        rollout <- the student plays them
        student <- PPO update, except for robust PLR / ACCEL
        buffer  <- insert levels by score

Parallel forms (PLR∥, ACCEL∥), one cycle:

    replay  <- buffer warm (and, with parallel_replay="coin", coin(replay_prob))
    blocks  <- [new | replayed | children of the replayed (ACCEL∥)], side by side
               (without replay, the replay block holds more new levels)
    rollout <- the student plays every block in one batch
    student <- PPO update on the replay block only (robust: only when it replayed)
    buffer  <- insert the new levels; rescore the replayed ones (or insert them when
               cold) except those whose slot a new level just took; insert the children

A level that equals a buffer entry is scored against that entry's best return (MaxMC).

Multi-device: the buffer is global and identical on every device. Levels are sampled and
generated from replicated keys, every device rolls out its slice of each block, and the
scores are all-gathered before the buffer update, so results do not depend on the device
count.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from arenax.collectives import all_gather
from arenax.curricula import buffer as B
from arenax.curricula.blocks import Blocks, take, where
from arenax.curricula.common import (
    Curriculum,
    TrainState,
    level_batch_metrics,
    level_values,
    per_env_return,
    replay_rollout,
)
from arenax.curricula.players import Played, Players
from arenax.curricula.sampler import LevelSampler
from arenax.utils import tree_bytes


@dataclasses.dataclass(frozen=True)
class ReplayCurriculum(Curriculum):
    """PLR / PLR⊥ / ACCEL and their parallel forms over `players.env`'s levels.

    Attributes:
        players: the policies and how they act and learn.
        n_envs: levels per block (global, over all devices).
        n_steps: rollout length.
        config: the replay options (`ACCELConfig`: replayed levels are mutated).
        generator: `key -> level` for new levels.
        mutator: `(key, level) -> level` applying `config.n_edits` edits (ACCEL).
        level_metrics: optional `level -> dict` of family metrics to log.
        score_parts: `{part: level -> ()}`, the family parts the level score reads
            (`optimal_return`: the oracle regret).
    """

    players: Players
    n_envs: int
    n_steps: int
    config: Any  # PLRConfig / ACCELConfig (arenax.curricula.plr)
    generator: Callable[[jax.Array], Any]
    mutator: Callable[[jax.Array, Any], Any] | None = None
    level_metrics: Callable[[Any], dict[str, jax.Array]] | None = None
    score_parts: dict[str, Callable[[Any], jax.Array]] = dataclasses.field(default_factory=dict)

    @property
    def accel(self) -> bool:
        return self.config.accel

    @property
    def sampler(self) -> LevelSampler:
        """The level buffer's rules (`PLRConfig.sampler`)."""
        return self.config.sampler

    @property
    def runs_in_turn(self) -> bool:
        """Stacked runs of a sequential robust PLR or ACCEL take their cycles in turn: each
        run's replay coin decides whether it trains (robust) and whether it plays mutated
        children (ACCEL), which `vmap` would run for every run on every cycle."""
        return not self.config.parallel and (self.config.robust or self.accel)

    # ------------------------------------------------------------------ state
    def init(self, key: jax.Array) -> TrainState:
        """Fresh policies and an empty level buffer."""
        k_params, k_level = jax.random.split(key)
        level = self.generator(k_level)
        obs, _ = self.env.reset(k_level, level)
        learners = self.players.init(k_params, obs)
        return TrainState.create(key, learners, self.sampler.create(level))

    # ------------------------------------------------------------------ pieces
    def _new_levels(self, key: jax.Array) -> Any:
        """`n_envs` new levels (global batch, same on every device)."""
        return jax.vmap(self.generator)(jax.random.split(key, self.n_envs))

    def _children(self, key: jax.Array, parents: Any, scores: jax.Array) -> tuple[Any, jax.Array]:
        """`n_envs` mutated children and the index of each child's parent in `parents`."""
        n, c = self.n_envs, self.config
        if c.mutation_criterion == "all":
            pick = jnp.arange(n)
        else:  # the k easiest / hardest parents (default: half), sharing the children
            k = min(c.mutation_parents or max(n // 2, 1), n)
            order = jnp.argsort(scores if c.mutation_criterion == "easy" else -scores)
            pick = order[jnp.arange(n) % k]
        kids = jax.vmap(self.mutator)(jax.random.split(key, n), take(parents, pick))
        return kids, pick

    def _play(self, states: dict[str, Any], key: jax.Array, levels: Any, ids: jax.Array) -> Played:
        """Every team plays this device's `levels` (leading `n_local`, global indices
        `ids`), each env replaying its level, with advantages per team."""
        trajs, carry0, episodes = replay_rollout(
            self.players, states, key, levels, ids, self.n_steps
        )
        return Played(trajs, carry0, self.players.advantages(trajs), episodes)

    def _score(self, played: Played, levels: Any, max_returns: jax.Array) -> tuple:
        """`(scores, best returns)` of the levels just played (`max_returns`: the best
        return seen on each level before; `-inf` for levels never played)."""
        parts = level_values(self.score_parts, levels)
        return self.players.level_scores(self.config.score, played, max_returns, parts)

    @property
    def _per_mutation(self) -> int:
        """What one mutation adds to a level's counter."""
        return self.config.n_edits if self.config.mutation_count == "edits" else 1

    def _sample(self, buf: B.LevelBuffer, key: jax.Array) -> tuple[B.LevelBuffer, jax.Array]:
        """`n_envs` replay slots (see `PLRConfig.sampling`); stamps them as seen."""
        return self.sampler.sample(buf, key, self.n_envs)

    def _best_before(self, buf: B.LevelBuffer, levels: Any) -> jax.Array:
        """Best return the buffer holds for each level that is already in it, else -inf."""
        return self.sampler.stored_best(buf, levels)

    def _probs(self, buf: B.LevelBuffer) -> jax.Array:
        return self.sampler.probs(buf)

    def _block(self, layout: Blocks, played: Played, name: str) -> Played:
        """Block `name`'s part of a parallel cycle's rollout."""
        return layout.played(played, name, {t: self.env.num_agents(t) for t in played.traj})

    def _train(
        self, states: dict[str, Any], played: Played, key: jax.Array, axis_name: str | None
    ) -> tuple[dict[str, Any], dict[str, jax.Array]]:
        return self.players.update(states, played.traj, played.carry0, key, axis_name)

    def _metrics(
        self,
        buf: B.LevelBuffer,
        episodes: dict,
        stats: dict,
        levels_local: Any,
        replay: jax.Array,
        updated: jax.Array,
        env_steps: jax.Array,
        axis_name: str | None,
    ) -> dict:
        return {
            **self.players.episode_metrics(episodes, axis_name),
            **stats,
            **level_batch_metrics(self.level_metrics, levels_local, axis_name),
            **self.sampler.metrics(buf),
            "buffer/bytes_per_level": jnp.float32(
                tree_bytes(jax.tree.map(lambda x: x[0], buf.levels))
            ),
            "replay": replay.astype(jnp.float32),
            "updated": updated.astype(jnp.float32),
            "env_steps": env_steps.astype(jnp.int32),
            "student_steps": jnp.where(updated, self.n_envs * self.n_steps, 0).astype(jnp.int32),
            "updates": updated.astype(jnp.int32),
        }

    def _update_buffer(
        self,
        buf: B.LevelBuffer,
        blocks: dict[str, Any],
        idx: jax.Array,
        parent: jax.Array,
        scores: dict[str, jax.Array],
        best: dict[str, jax.Array],
        replayed: jax.Array,
    ) -> tuple[B.LevelBuffer, jax.Array]:
        """A parallel cycle's buffer update: the new and replay blocks by
        `buffer.write_blocks` (`buf` as sampled; `replayed`: the replay block holds
        replayed levels), then the children of the replayed levels (`parent`: each child's
        index in the replay block). Returns the buffer and the fraction of replayed slots
        that new levels took."""
        c, sampler = self.config, self.sampler
        new, rep = ((blocks[k], scores[k], best[k]) for k in ("new", "replay"))
        sampled = buf
        buf, taken = sampler.write_blocks(buf, sampled, idx, new, rep, replayed)
        if "children" in blocks:
            mutated = replayed | (c.cold_children == "mutate")
            mutations = jnp.where(replayed, sampled.mutations[idx][parent], 0)
            mutations = mutations + jnp.where(mutated, self._per_mutation, 0)
            parents = jnp.where(replayed, idx[parent], -1)
            kids = (blocks["children"], scores["children"], best["children"])
            buf = sampler.insert(buf, *kids, mutations, parents)
        return buf, jnp.where(replayed, jnp.mean(taken.astype(jnp.float32)), 0.0)

    # ------------------------------------------------------------------ cycles
    def cycle(
        self, state: TrainState, key: jax.Array, env_ids: jax.Array, axis_name: str | None
    ) -> tuple[TrainState, dict[str, jax.Array]]:
        if self.config.parallel:
            return self._parallel_cycle(state, key, env_ids, axis_name)
        return self._sequential_cycle(state, key, env_ids, axis_name)

    def _sequential_cycle(
        self, state: TrainState, key: jax.Array, ids: jax.Array, axis_name: str | None
    ) -> tuple[TrainState, dict[str, jax.Array]]:
        c, n, t = self.config, self.n_envs, self.n_steps
        k_coin, k_levels, k_play, k_update, k_mutate, k_children = jax.random.split(key, 6)
        buf, student = state.curriculum, state.learner
        warm = B.fill_ratio(buf) >= c.min_fill
        replay = warm & (jax.random.uniform(k_coin) < c.replay_prob)

        # one rollout, one update and one scoring serve both kinds of cycle (so they are
        # compiled once): only choosing the levels and filing them in the buffer branch
        def pick_replayed(_: None) -> tuple:
            b, idx = self._sample(buf, k_levels)
            return b, idx, take(b.levels, idx)

        def pick_new(_: None) -> tuple:  # no slot: `idx` is read on replay cycles only
            return buf, jnp.zeros(n, jnp.int32), self._new_levels(k_levels)

        b, idx, levels = jax.lax.cond(replay, pick_replayed, pick_new, None)
        local = take(levels, ids)
        played = self._play(student, k_play, local, ids)
        if c.robust:  # PLR⊥: no update on new levels
            trained, stats = jax.lax.cond(
                replay,
                lambda _: self._train(student, played, k_update, axis_name),
                lambda _: (student, self.players.no_update_stats()),
                None,
            )
        else:
            trained, stats = self._train(student, played, k_update, axis_name)
        best_before = jax.lax.cond(
            replay,
            lambda _: b.max_returns[idx][ids],
            lambda _: self._best_before(buf, local),
            None,
        )
        scores, best = all_gather(self._score(played, local, best_before), axis_name)

        def file_replayed(_: None) -> tuple:
            new_buf = self.sampler.rescore(b, idx, scores, best)
            steps = jnp.int32(n * t)
            if self.accel:  # mutate, evaluate the children with the updated student, insert
                kids, parent = self._children(k_mutate, levels, scores)
                kids_local = take(kids, ids)
                kids_played = self._play(trained, k_children, kids_local, ids)
                kid_scores, kid_best = all_gather(
                    self._score(kids_played, kids_local, self._best_before(new_buf, kids_local)),
                    axis_name,
                )
                mutations = new_buf.mutations[idx][parent] + self._per_mutation
                new_buf = self.sampler.insert(
                    new_buf, kids, kid_scores, kid_best, mutations, idx[parent]
                )
                steps = steps + n * t
            return new_buf, steps

        def file_new(_: None) -> tuple:
            sampler = self.sampler
            new_buf = sampler.insert(sampler.age_without_replay(buf, n), levels, scores, best)
            return new_buf, jnp.int32(n * t)

        buf, steps = jax.lax.cond(replay, file_replayed, file_new, None)
        updated = replay | (not c.robust)
        metrics = self._metrics(
            buf, played.episodes, stats, local, replay, updated, steps, axis_name
        )
        return state.next(trained, buf), metrics

    def _parallel_cycle(
        self, state: TrainState, key: jax.Array, ids: jax.Array, axis_name: str | None
    ) -> tuple[TrainState, dict[str, jax.Array]]:
        c, n = self.config, self.n_envs
        k_new, k_more_new, k_sample, k_mutate, k_play, k_update = jax.random.split(key, 6)
        buf, student = state.curriculum, state.learner
        warm = B.fill_ratio(buf) >= c.min_fill
        replay = warm  # the replay block holds replayed levels (else fresh ones)
        if c.parallel_replay == "coin":
            replay = warm & (jax.random.uniform(jax.random.fold_in(key, 6)) < c.replay_prob)
        train = replay if c.robust else jnp.bool_(True)  # PLR∥ (not robust) always trains

        # 1. compose the blocks: new levels, replayed levels, (ACCEL∥) their children
        new = self._new_levels(k_new)
        sampled, idx = self._sample(buf, k_sample)
        # sampling stamps the replayed levels as seen
        buf = where(replay, sampled, self.sampler.age_without_replay(buf, n))
        replayed = where(replay, take(buf.levels, idx), self._new_levels(k_more_new))
        blocks = {"new": new, "replay": replayed}
        parent = jnp.arange(n)
        if self.accel:
            blocks["children"], parent = self._children(k_mutate, replayed, buf.scores[idx])
            if self.config.cold_children == "new":  # no replay: more fresh levels
                fresh = self._new_levels(jax.random.fold_in(k_mutate, 1))
                blocks["children"] = where(replay, blocks["children"], fresh)
        layout = Blocks(tuple(blocks), n, ids.shape[0])

        # 2. one rollout over every block; score each level (against its best return so far)
        local = layout.local(blocks, ids)
        played = self._play(student, k_play, local, layout.env_ids(ids))
        best_before = {b: self._best_before(buf, layout.part(local, b)) for b in layout.names}
        best_before["replay"] = jnp.where(replay, buf.max_returns[idx][ids], best_before["replay"])
        scores, best = self._score(played, local, layout.concat(best_before))
        scores, best = layout.gather(scores, axis_name), layout.gather(best, axis_name)

        # 3. train on the replay block only (robust: only when it holds replayed levels)
        replay_part = self._block(layout, played, "replay")
        student, stats = jax.lax.cond(
            train,
            lambda _: self._train(student, replay_part, k_update, axis_name),
            lambda _: (student, self.players.no_update_stats()),
            None,
        )

        # 4. update the buffer from every block
        buf, taken = self._update_buffer(buf, blocks, idx, parent, scores, best, replay)

        steps = jnp.int32(len(layout.names) * n * self.n_steps)
        metrics = self._metrics(
            buf,
            replay_part.episodes,
            stats,
            layout.part(local, "replay"),
            replay,
            train,
            steps,
            axis_name,
        )
        metrics["buffer/replayed_taken"] = taken
        # the episodes of every block (new, replayed, children), as the reference logs them
        every = self.players.episode_metrics(played.episodes, axis_name)
        if not self.players.several:  # minimax's `return`: every env weighs the same
            ep, team = played.episodes, self.players.teams[0]
            every["return_per_env"] = per_env_return(ep["done"], ep["returns"][team], axis_name)
        metrics.update({f"all_blocks/{k}": v for k, v in every.items()})
        return state.next(student, buf), metrics
