"""Replay-based autocurricula: PLR, robust PLR (PLR⊥), ACCEL, and PLR∥ / ACCEL∥.

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
import math
from collections.abc import Callable, Iterator
from typing import Annotated, Any, ClassVar, Literal

import jax
import jax.numpy as jnp

from arenax.collectives import all_gather
from arenax.curricula import buffer as B
from arenax.curricula.blocks import Blocks, take, where
from arenax.curricula.common import (
    Curriculum,
    CurriculumOptions,
    Setup,
    TrainState,
    level_batch_metrics,
    level_values,
    per_env_return,
    replay_rollout,
    score_team_problems,
)
from arenax.curricula.players import Played, Players
from arenax.curricula.sampler import LevelSampler
from arenax.curricula.scores import SCORE_NAME, SCORES
from arenax.options import POSITIVE, POSITIVE_REAL, UNIT, IntIn, Problem
from arenax.utils import tree_bytes


@dataclasses.dataclass(frozen=True)
class PLRConfig(CurriculumOptions):
    """Options of the replay curricula PLR, PLR⊥ and PLR∥ (`--plr.*`)."""

    KIND: ClassVar[str] = "plr"
    SUMMARY: ClassVar[str] = "PLR, robust PLR (PLR⊥) and PLR∥: replay the levels of highest regret"

    score: Annotated[str, SCORE_NAME] = "max_mc"
    """Level score, a registered one (`arenax list`): max_mc (MaxMC), pvl (positive value
    loss), l1_vl (L1 value loss), oracle_regret (the shortest-path oracle), learnability,
    or your own (`arenax.register_score`)."""
    replay_prob: Annotated[float, UNIT] = 0.5
    """Probability of a replay cycle once warm (parallel forms: with `parallel_replay="coin"`)."""
    buffer_size: Annotated[int, POSITIVE] = 4000
    """Level buffer capacity."""
    staleness_coef: Annotated[float, UNIT] = 0.3
    """Weight rho of the staleness distribution in the replay distribution."""
    temperature: Annotated[float, POSITIVE_REAL] = 0.3
    """Temperature beta of the score prioritisation."""
    prioritization: Literal["rank", "proportional", "topk"] = "rank"
    """Score prioritisation: rank (h = 1/rank), proportional, or uniform over the top k."""
    topk: Annotated[int, POSITIVE] = 1
    """k of the top-k prioritisation."""
    min_fill: Annotated[float, UNIT] = 0.5
    """Fill ratio from which the buffer is replayed."""
    robust: bool = True
    """Robust PLR: no gradient update on new-level cycles."""
    parallel: bool = False
    """PLR∥ / ACCEL∥: new, replayed (and mutated) levels side by side in one rollout."""
    new_levels: Literal["dr", "empty"] = "dr"
    """New levels: domain randomisation, or the family's empty levels (open fields: ACCEL)."""
    inserted_staleness: Literal["zero", "inherit"] = "zero"
    """An inserted level's staleness: zero, or the replaced entry's (the reference's rule)."""
    staleness_clock: Literal["levels", "draws"] = "levels"
    """What ages the levels: each level sampled or inserted, or replay draws only, a cycle
    without replay counting `n_envs` (the reference's ages: one cycle's levels age alike)."""
    duplicate_ignores: tuple[str, ...] = ()
    """Level fields duplicate detection ignores (the reference ignores `agent_dir`)."""
    sampling: Literal["batch", "one_at_a_time"] = "batch"
    """Replay levels drawn as one batch, or one at a time, each draw's staleness counted
    before the next (the reference's rule)."""
    parallel_replay: Literal["always", "coin"] = "always"
    """PLR∥ / ACCEL∥ once warm: replay (and train) on every cycle, as the reference does, or
    on a coin of `replay_prob` (an ablation: the other cycles play fresh levels only)."""
    taken_slot: Literal["keep_new", "higher_score"] = "keep_new"
    """PLR∥ / ACCEL∥: a replayed slot a new level took in the same cycle keeps it, or goes
    back to the replayed level if it now scores at least as high (the reference's rule)."""
    score_team: str = ""
    """Games of several teams: the team whose regret estimate scores levels (default: the
    first, Tag's taggers), or `both`: the mean of the teams' scores (`pvl` / `l1_vl`)."""

    @property
    def accel(self) -> bool:
        """Replayed levels are mutated (ACCEL)."""
        return False

    @property
    def blocks(self) -> int:
        """Level blocks rolled out side by side per cycle: 1, or 2 (PLR∥) / 3 (ACCEL∥)."""
        return 1 if not self.parallel else (3 if self.accel else 2)

    @property
    def sampler(self) -> LevelSampler:
        """The level buffer's rules these options set (capacity, prioritisation,
        staleness, duplicates, sampling, taken slots)."""
        return LevelSampler(
            capacity=self.buffer_size,
            staleness_coef=self.staleness_coef,
            temperature=self.temperature,
            prioritization=self.prioritization,
            topk=self.topk,
            inserted_staleness=self.inserted_staleness,
            staleness_clock=self.staleness_clock,
            duplicate_ignores=self.duplicate_ignores,
            sampling=self.sampling,
            taken_slot=self.taken_slot,
        )

    def curriculum(self, s: Setup) -> ReplayCurriculum:
        """The replay curriculum over the game; what it needs of the family: `empty`
        levels (`new_levels="empty"`), a `mutator` (ACCEL), the parts its level score
        reads (`optimal_return`: the oracle regret)."""
        f, game = s.family, s.game
        generator = game.generate
        if self.new_levels == "empty":
            generator = f.need("empty", f"{self.KIND}.new_levels='empty'")(game)
        mutator = f.need("mutator", "ACCEL")(game, self.n_edits) if self.accel else None
        parts = s.score_parts(self.score, f"{self.KIND}.score")
        return ReplayCurriculum(
            s.players, s.n_envs, s.n_steps, self, generator, mutator, s.level_metrics(), parts
        )

    def problems(self) -> Iterator[Problem]:
        ints = isinstance(self.topk, int) and isinstance(self.buffer_size, int)
        if ints and self.topk > self.buffer_size:
            yield Problem(
                "topk", self.topk, f"must be <= {self.KIND}.buffer_size={self.buffer_size}"
            )
        if (
            self.score_team == "both"
            and self.score in SCORES
            and not SCORES[self.score].combines_teams
        ):
            combine = ", ".join(n for n, s in SCORES.items() if s.combines_teams)
            yield Problem(
                "score_team",
                self.score_team,
                f"both teams' scores combine for {combine}, not {self.score} (it keeps one best return per level)",
            )

    def run_problems(self, run: Any, game: Any) -> Iterator[Problem]:
        """What replay needs of the family (empty levels, a mutator, the parts its score
        reads), a buffer that holds a cycle's levels, and a scoring team that acts by a
        policy."""
        yield from self.family_problems(run)
        if isinstance(self.buffer_size, int) and self.buffer_size < run.n_envs:
            yield Problem(
                f"{self.KIND}.buffer_size",
                self.buffer_size,
                f"must hold at least n_envs={run.n_envs} levels",
            )
        yield from score_team_problems(self.KIND, self.score_team, run)

    def family_problems(self, run: Any) -> Iterator[Problem]:
        """The family parts these options need: empty levels, a mutator, the parts the
        level score reads."""
        family, kind = run.family, self.KIND
        if self.new_levels == "empty" and family.empty is None:
            yield Problem(
                f"{kind}.new_levels", "empty", f"family {family.name!r} has no empty levels"
            )
        if self.accel and family.mutator is None:
            yield Problem(
                "curriculum",
                kind,
                f"ACCEL needs the family's mutator; family {family.name!r} has none",
            )
        if self.score in SCORES:
            for part in SCORES[self.score].needs:
                if getattr(family, part, None) is None:
                    yield Problem(
                        f"{kind}.score",
                        self.score,
                        f"needs the family's {part}; family {family.name!r} has none",
                    )

    def replay_distribution(self, state: Any) -> tuple[B.LevelBuffer, jax.Array] | None:
        """The level buffer (a PLR / ACCEL train state's curriculum state) and its replay
        distribution."""
        if not isinstance(state, B.LevelBuffer):
            return None
        return state, self.sampler.probs(state)

    def warm_up(self, run: Any) -> tuple[int, int] | None:
        """Robust replay trains no policy until `min_fill` of the buffer is filled; each
        cycle adds at most its new levels (`n_envs` a block)."""
        if not self.robust:
            return None
        need = math.ceil(self.min_fill * self.buffer_size)
        per_cycle = run.n_envs * (self.blocks if self.parallel else 1)
        return need, math.ceil(need / per_cycle)

    def tiny(self) -> PLRConfig:
        return dataclasses.replace(
            self, buffer_size=8, min_fill=0.5, **({"n_edits": 2} if self.accel else {})
        )

    def reference_rules(self) -> PLRConfig:
        """minimax's replay: an inserted level inherits the staleness of the slot it takes,
        levels age by replay draws only, duplicate mazes ignore the agent's direction, a
        slot a new level took goes back to the replayed level if it scores as high, replay
        levels are drawn one at a time."""
        return dataclasses.replace(
            self,
            inserted_staleness="inherit",
            staleness_clock="draws",
            duplicate_ignores=("agent_dir",),
            taken_slot="higher_score",
            sampling="one_at_a_time",
        )


@dataclasses.dataclass(frozen=True)
class ACCELConfig(PLRConfig):
    """Options of ACCEL and ACCEL∥ (`--accel.*`): replay as PLR⊥, and edit replayed
    levels into new ones (the family's mutator)."""

    n_edits: Annotated[int, POSITIVE] = 20
    """Edits per mutation."""
    mutation_criterion: Literal["all", "easy", "hard"] = "all"
    """Mutate every replayed level, or the easiest / hardest half (two children each)."""
    cold_children: Literal["mutate", "new"] = "mutate"
    """ACCEL∥ before the buffer is warm: the third block holds mutations of fresh levels, or
    more fresh levels (the reference's rule)."""
    mutation_parents: Annotated[int, IntIn(0, 2**31 - 1)] = 0
    """Easy / hard: how many replayed levels are mutated (sharing the batch); 0: half of
    them, two children each (the reference's `mutation_subsample_size` is 4)."""
    mutation_count: Literal["edits", "mutations"] = "edits"
    """A level's mutation counter (`buffer/weighted_mutations`, the gallery's `m`) counts
    edits since its generated ancestor, or mutations (the reference's counter: +1 each)."""

    KIND: ClassVar[str] = "accel"
    SUMMARY: ClassVar[str] = "ACCEL and ACCEL∥: replay, and edit the replayed levels into new ones"

    @property
    def accel(self) -> bool:
        return True

    def reference_rules(self) -> ACCELConfig:
        """PLR's, and: ACCEL∥'s third block holds fresh levels when it does not replay,
        easy / hard mutation picks 4 parents, the mutation counter counts mutations."""
        return dataclasses.replace(
            super().reference_rules(),
            cold_children="new",
            mutation_parents=4,
            mutation_count="mutations",
        )


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
    config: PLRConfig
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
