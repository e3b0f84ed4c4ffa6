"""MAESTRO (Samvelyan et al., ICLR 2023): a joint curriculum over arenas and co-players.

The co-player team's population (`arenax.curricula.coplayers`: the live policy and its
snapshots) gives every co-player slot its own level buffer (PLR's buffer: rank or
proportional scores, temperature, staleness). One cycle, the sequential (robust) form:

    slots   <- one co-player per group, by the regret its buffer holds: rank of its
               highest level score, temperature beta (`coplayer_sampling="regret"`), or
               the paper's rule: the co-player whose buffer holds the highest score, each
               floored at λ / N (`"max_regret"`); a slot whose buffer is empty counts as
               the highest (its regret is unknown); `latest_prob` kept for the live one
    levels  <- per group: if its co-player's buffer is warm and coin(replay_prob), levels
               sampled from that buffer, else fresh levels from the generator
    rollout <- every team plays; the co-player team by each group's slot
    score   <- each level by the learners' regret estimate against the co-player it was
               played with (MaxMC, positive value loss, ...)
    update  <- the learners on the replayed groups only (robust; every group without
               `robust`); the live co-player on the groups it played
    buffers <- rescore each replayed level in its co-player's buffer; then insert the new
               levels into the buffer of the co-player they were played with
    edits   <- (`edits`, ACCEL-style) mutate the replayed levels, play the children with the
               updated learners against the same co-player, insert them in its buffer
    snapshot<- every `snapshot_every` co-player updates the live policy joins the
               population, its slot taking a copy of the live policy's buffer (levels
               scored against that very policy)

The parallel form (`parallel`, MAESTRO∥) plays, per group, a block of new levels and a
block replayed from its co-player's buffer side by side against the same co-player; the
learners train on the replay block only (see `MaestroCurriculum._parallel_cycle`).

What the paper does and this does not (see `docs/curricula.md`): the paper's games are
symmetric, the co-players past copies of the student itself; Tag is not, so the
co-players are snapshots of the other team's live policy, which trains by self-play on the
groups it plays.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from typing import Annotated, Any, ClassVar, Literal

import jax
import jax.numpy as jnp

from arenax.collectives import all_gather
from arenax.curricula import buffer as B
from arenax.curricula import slot_buffers as SB
from arenax.curricula.blocks import Blocks
from arenax.curricula.common import (
    Curriculum,
    Setup,
    TrainState,
    level_means,
    level_values,
    score_team_problems,
)
from arenax.curricula.coplayers import (
    CoplayerOptions,
    Coplayers,
    coplayers_of,
    population_metrics,
    slot_probs,
)
from arenax.curricula.players import Played, Players
from arenax.curricula.plr import PLRConfig
from arenax.curricula.slot_buffers import buffer_priority
from arenax.options import POSITIVE, UNIT, Problem


@dataclasses.dataclass(frozen=True)
class MaestroConfig(PLRConfig, CoplayerOptions):
    """MAESTRO's options (`--maestro.*`): the replay options of PLR⊥ for each co-player's
    level buffer (one `LevelSampler`'s rules for every buffer), the edits of its ACCEL-style
    form, and the co-player population's."""

    edits: bool = False
    """ACCEL-style: mutate every replayed level (`n_edits` edits) and insert the children,
    played by the updated learners against the same co-player, in that co-player's buffer."""
    n_edits: Annotated[int, POSITIVE] = 5
    """Edits per mutation (with `edits`)."""
    mutation_count: Literal["edits", "mutations"] = "edits"
    """With `edits`: a level's mutation counter counts edits since its generated ancestor,
    or mutations (the reference's counter: +1 each)."""
    coplayer_sampling: Literal["regret", "max_regret", "uniform"] = "regret"
    """How a group's co-player is drawn: by the rank of the best score its buffer holds
    (`regret`, temperature β: arenax's rule), the paper's rule (`max_regret`: the co-player
    whose buffer holds the highest-scored level, every co-player floored at
    `coplayer_floor` / N), or uniformly over the population — an ablation that keeps the
    per-co-player buffers without the joint choice. `latest_prob` applies to each (the
    paper has no live co-player: set it to 0 for the paper's rule alone)."""
    coplayer_floor: Annotated[float, UNIT] = 0.1
    """λ of the paper's rule (`max_regret`): the share of the mass spread uniformly over
    the co-players."""

    KIND: ClassVar[str] = "maestro"
    #: measured not to gain from a split batch on 2 cores (tag-grid-maestro 11,700 / 10,916
    #: env steps/s on one / two devices; tag-maestro 268 / 278): one device
    SPLITS_ON_CPU: ClassVar[bool] = False
    SUMMARY: ClassVar[str] = "MAESTRO: arenas and co-players chosen jointly by the learners' regret"

    @property
    def accel(self) -> bool:
        return self.edits

    def curriculum(self, s: Setup) -> MaestroCurriculum:
        players, plan = coplayers_of(s, self)
        f, game = s.family, s.game
        generator = game.generate
        if self.new_levels == "empty":
            generator = f.need("empty", f"{self.KIND}.new_levels='empty'")(game)
        parts = s.score_parts(self.score, f"{self.KIND}.score")
        mutator = f.need("mutator", "maestro.edits")(game, self.n_edits) if self.edits else None
        return MaestroCurriculum(
            players, s.n_envs, s.n_steps, self, plan, generator, s.level_metrics(), parts, mutator
        )

    def tiny(self) -> MaestroConfig:
        return dataclasses.replace(super().tiny(), **self.tiny_population())

    def reference_rules(self) -> MaestroConfig:
        """PLR's, and the mutation counter counts mutations (ACCEL's)."""
        return dataclasses.replace(super().reference_rules(), mutation_count="mutations")

    def run_problems(self, run: Any, game: Any) -> Iterator[Problem]:
        yield from self.family_problems(run)
        yield from score_team_problems(self.KIND, self.score_team, run, trains_first=False)
        yield from self.coplayer_problems(run, game, self.KIND)
        paper = self.coplayer_sampling == "max_regret"
        if paper and self.coplayer_floor == 0 and self.latest_prob == 0:
            yield Problem(
                "maestro.coplayer_floor",
                0.0,
                "with latest_prob=0 the paper's rule without a floor plays only the co-player of the highest-scored buffer; the live one may never play, train or take a snapshot: set coplayer_floor > 0 (the paper's 0.1) or latest_prob > 0",
            )
        if self.parallel and self.edits:
            yield Problem(
                "maestro.edits",
                True,
                "MAESTRO∥ has no children block: edits run with the sequential form (drop --maestro.parallel)",
            )
        if self.score_team == "both":
            yield Problem(
                "maestro.score_team",
                "both",
                "levels are scored by the learners' regret against their co-player: name a learning team",
            )
        elif self.score_team and self.score_team == (self.coplayer_team or tuple(game.teams)[-1]):
            yield Problem(
                "maestro.score_team",
                self.score_team,
                "is the co-player team: levels are scored by the learners' regret",
            )
        if isinstance(self.groups, int) and run.n_envs % self.groups == 0:
            per = run.n_envs // self.groups
            if self.buffer_size < per:
                yield Problem(
                    "maestro.buffer_size",
                    self.buffer_size,
                    f"must hold a group's {per} levels (n_envs / groups)",
                )


@dataclasses.dataclass(frozen=True)
class MaestroCurriculum(Curriculum):
    """MAESTRO over `players.env`'s levels (see the module docstring).

    Attributes:
        players: the policies and how they act and learn.
        n_envs: environments (global).
        n_steps: rollout length.
        config: the options.
        plan: how the population is played.
        generator: `key -> level` for new levels.
        level_metrics: optional `level -> dict` of family metrics to log.
        score_parts: `{part: level -> ()}`, the family parts the level score reads
            (`optimal_return`: the oracle regret).
        mutator: `(key, level) -> level` applying `config.n_edits` edits (`edits` only).
    """

    players: Players
    n_envs: int
    n_steps: int
    config: MaestroConfig
    plan: Coplayers
    generator: Callable[[jax.Array], Any]
    level_metrics: Callable[[Any], dict[str, jax.Array]] | None = None
    score_parts: dict[str, Callable[[Any], jax.Array]] = dataclasses.field(default_factory=dict)
    mutator: Callable[[jax.Array, Any], Any] | None = None

    def init(self, key: jax.Array) -> TrainState:
        """Fresh policies, an empty population and one empty level buffer per slot."""
        k_params, k_level = jax.random.split(key)
        level = self.generator(k_level)
        obs, _ = self.env.reset(k_level, level)
        learners = self.players.init(k_params, obs)
        bufs = SB.create(self.config.sampler, level, self.config.population + 1)
        return TrainState.create(
            key, learners, {"population": self.plan.init(learners), "buffers": bufs}
        )

    def _edit(
        self,
        bufs: B.LevelBuffer,
        state: TrainState,
        learners: dict[str, Any],
        pop: Any,
        slots: jax.Array,
        replay: jax.Array,
        idx: jax.Array,
        levels: Any,
        parent_mutations: jax.Array,
        key: jax.Array,
        env_ids: jax.Array,
        axis_name: str | None,
    ) -> B.LevelBuffer:
        """ACCEL-style edits: children of every replayed level `levels (g, q, ...)` (slots
        `idx (g, q)` of their groups' co-players' buffers as sampled, holding
        `parent_mutations (g, q)` mutations then), played by the updated `learners` against
        the same co-players, inserted in those buffers (the children of groups that did
        not replay are dropped)."""
        c, plan, p = self.config, self.plan, self.players
        g, q = c.groups, plan.group_size
        k_mutate, k_play = jax.random.split(key)
        flat = jax.tree.map(lambda x: x.reshape((g * q, *x.shape[2:])), levels)
        kids = jax.vmap(self.mutator)(jax.random.split(k_mutate, self.n_envs), flat)
        kids = jax.tree.map(lambda x: x.reshape((g, q, *x.shape[1:])), kids)
        best_before = SB.stored_best(c.sampler, bufs, slots, kids).reshape(-1)
        local = jax.tree.map(lambda x: x.reshape((g * q, *x.shape[2:]))[env_ids], kids)
        played = plan.rollout(
            state.replace(learner=learners), pop, slots, k_play, local, env_ids, self.n_steps
        )
        parts = level_values(self.score_parts, local)
        scores, best = p.level_scores(c.score, played, best_before[env_ids], parts)
        scores, best = all_gather((scores, best), axis_name)
        scores = jnp.where(jnp.repeat(replay, q), scores, jnp.nan).reshape((g, q))
        per = c.n_edits if c.mutation_count == "edits" else 1
        mutations = parent_mutations + per
        return SB.insert_children(
            c.sampler, bufs, slots, kids, scores, best.reshape((g, q)), mutations, idx
        )

    def cycle(
        self, state: TrainState, key: jax.Array, env_ids: jax.Array, axis_name: str | None
    ) -> tuple[TrainState, dict[str, jax.Array]]:
        if self.config.parallel:
            return self._parallel_cycle(state, key, env_ids, axis_name)
        return self._sequential_cycle(state, key, env_ids, axis_name)

    # ------------------------------------------------------------------ pieces
    def _pick(
        self, pop: Any, bufs: B.LevelBuffer, keys: tuple, coin: bool
    ) -> tuple[jax.Array, jax.Array, B.LevelBuffer, jax.Array]:
        """A co-player per group, by the regret its buffer holds; whether each group
        replays (its co-player's buffer warm, and with `coin` a coin of `replay_prob`)
        and the slots it replays `(g, q)` (stamped as seen where it replays). `keys`:
        `(pick, coin, sample)`. Returns `(slots (g,), replay (g,), bufs, idx)`."""
        c, plan = self.config, self.plan
        k_pick, k_coin, k_sample = keys
        if c.coplayer_sampling == "max_regret":
            priority = SB.highest(bufs)
        else:
            priority = buffer_priority(bufs, c.temperature)
        probs = slot_probs(
            pop, c.coplayer_sampling, c.latest_prob, priority=priority, floor=c.coplayer_floor
        )
        slots = plan.draw(k_pick, probs)
        replay = (jax.vmap(B.fill_ratio)(bufs) >= c.min_fill)[slots]
        if coin:
            replay = replay & (jax.random.uniform(k_coin, (c.groups,)) < c.replay_prob)
        bufs, idx = SB.sample(c.sampler, bufs, slots, replay, k_sample, plan.group_size)
        return slots, replay, bufs, idx

    def _pairs(
        self, pop: Any, slots: jax.Array, replay: jax.Array, scores: jax.Array, levels: dict
    ) -> dict[str, jax.Array]:
        """Which co-player × arenas each group played this cycle and the regret it found,
        `(g,)` each (logged per cycle to `pairs.jsonl`, drawn by `arenax plot` as
        `pairs.png`): `pairs/coplayer` the co-player's version (the live policy's update
        count when its snapshot was taken; the live policy's count now for the live one),
        `pairs/age` (the live policy's updates since then), `pairs/live`, `pairs/replay`, `pairs/score` the mean score of the group's levels,
        `pairs/level/<metric>` their mean family metrics. `scores` `(g, k)`: the group's
        levels' scores; `levels`: `{metric: (g, k)}`. `pop`: before this cycle's update."""
        born = jnp.concatenate([pop.born, pop.updates[None]])
        out = {
            "pairs/coplayer": born[slots],
            "pairs/age": pop.updates - born[slots],
            "pairs/live": slots == pop.size,
            "pairs/replay": replay,
            "pairs/score": jnp.mean(scores, axis=1),
        }
        out.update({f"pairs/level/{k}": jnp.mean(v, axis=1) for k, v in levels.items()})
        return out

    def _level_values(self, local: Any, axis_name: str | None) -> dict[str, jax.Array]:
        """Every level's family metrics, `{metric: (N,) float32}` over the whole batch
        from this device's levels (leading `N_local`; without `axis_name` this device's
        own, `(N_local,)`), `{}` without metrics."""
        if self.level_metrics is None:
            return {}
        m = jax.vmap(self.level_metrics)(local)
        return all_gather({k: v.astype(jnp.float32) for k, v in m.items()}, axis_name)

    def _fresh(self, key: jax.Array) -> Any:
        """`n_envs` new levels from the generator, grouped: leaves `(g, q, ...)`."""
        g, q = self.config.groups, self.plan.group_size
        levels = jax.vmap(self.generator)(jax.random.split(key, self.n_envs))
        return jax.tree.map(lambda x: x.reshape((g, q, *x.shape[1:])), levels)

    def _best_before(
        self, bufs: B.LevelBuffer, slots: jax.Array, replay: jax.Array, idx: jax.Array, levels: Any
    ) -> jax.Array:
        """`(g, q)`: each level's best return so far in its co-player's buffer (a replayed
        level's own slot where its group replays; `-inf` for a level not in it)."""
        stored = SB.stored_best(self.config.sampler, bufs, slots, levels)
        return jnp.where(replay[:, None], bufs.max_returns[slots[:, None], idx], stored)

    def _learn(
        self,
        state: TrainState,
        pop: Any,
        slots: jax.Array,
        replay: jax.Array,
        played: Played,
        env_ids: jax.Array,
        key: jax.Array,
        axis_name: str | None,
    ) -> tuple[dict[str, Any], dict[str, jax.Array], jax.Array, jax.Array]:
        """The learners on the replayed groups of `played` (robust; all of it without
        `robust`), the live co-player on the groups it played. Returns the policies, the
        update's statistics, whether the learners and the live co-player trained."""
        c, plan, p = self.config, self.plan, self.players
        env_slot = plan.env_slots(slots, env_ids)
        live_played = jnp.any(slots == pop.size)
        trained = jnp.any(replay) if c.robust else jnp.bool_(True)
        focus = replay[env_ids // plan.group_size] if c.robust else None
        learning = plan.learning_masks(played, env_slot, focus)
        trains = {p.team_policy[t]: trained for t in plan.learners if t in p.team_policy}
        trains[plan.policy] = live_played
        learners, stats = p.update(
            state.learner, learning.traj, learning.carry0, key, axis_name, trains=trains
        )
        return learners, stats, trained, live_played

    def _finish(
        self,
        state: TrainState,
        learners: dict[str, Any],
        pop: Any,
        bufs: B.LevelBuffer,
        taken: jax.Array,
        slots: jax.Array,
        replay: jax.Array,
        trained: jax.Array,
        metrics: dict[str, jax.Array],
        env_steps: jax.Array,
    ) -> tuple[TrainState, dict[str, jax.Array]]:
        """The next state — the snapshot taken this cycle (`taken`, `-1`: none) takes a
        copy of the live policy's buffer — and the cycle's metrics: `metrics` (episodes,
        update, levels) with the population's, the buffers' and the step counts."""
        c, q = self.config, self.plan.group_size
        bufs = jax.lax.cond(
            taken >= 0, lambda b: SB.put(b, taken, SB.get(b, pop.size)), lambda b: b, bufs
        )
        n_replay = jnp.sum(replay.astype(jnp.int32))
        learner_steps = jnp.where(c.robust, n_replay * q, self.n_envs) * self.n_steps
        fill = jax.vmap(B.fill_ratio)(bufs)
        probs = jax.vmap(c.sampler.probs)(bufs)
        weighted = jnp.sum(probs * jnp.where(bufs.filled, bufs.scores, 0.0), axis=1)
        ok = jnp.concatenate([pop.filled, jnp.ones((1,), jnp.bool_)])
        metrics = {
            **metrics,
            **population_metrics(pop, slots),
            "buffer/fill": jnp.sum(jnp.where(ok, fill, 0.0)) / jnp.sum(ok),
            "buffer/weighted_score": jnp.sum(jnp.where(ok, weighted, 0.0)) / jnp.sum(ok),
            "replay": jnp.mean(replay.astype(jnp.float32)),
            "updated": trained.astype(jnp.float32),
            "env_steps": env_steps.astype(jnp.int32),
            "student_steps": learner_steps.astype(jnp.int32),
            "updates": trained.astype(jnp.int32),
        }
        return state.next(learners, {"population": pop, "buffers": bufs}), metrics

    # ------------------------------------------------------------------ cycles
    def _sequential_cycle(
        self, state: TrainState, key: jax.Array, env_ids: jax.Array, axis_name: str | None
    ) -> tuple[TrainState, dict[str, jax.Array]]:
        c, plan, p = self.config, self.plan, self.players
        g, q = c.groups, plan.group_size
        k_pick, k_coin, k_new, k_sample, k_play, k_update, k_edit = jax.random.split(key, 7)
        pop, bufs = state.curriculum["population"], state.curriculum["buffers"]
        grouped = lambda x: x.reshape((g, q, *x.shape[1:]))  # noqa: E731
        flat = lambda x: x.reshape((g * q, *x.shape[2:]))  # noqa: E731

        # 1. a co-player per group, by the regret its buffer holds; replay or new levels
        slots, replay, bufs, idx = self._pick(pop, bufs, (k_pick, k_coin, k_sample), coin=True)
        new = self._fresh(k_new)
        old = jax.tree.map(lambda x: x[slots[:, None], idx], bufs.levels)
        levels = jax.tree.map(
            lambda a, b: jnp.where(replay.reshape((g,) + (1,) * (a.ndim - 1)), a, b), old, new
        )  # (g, q, ...)
        best_before = self._best_before(bufs, slots, replay, idx, levels)

        # 2. every team plays its group's levels with its group's co-player
        local = jax.tree.map(lambda x: flat(x)[env_ids], levels)
        played = plan.rollout(state, pop, slots, k_play, local, env_ids, self.n_steps)

        # 3. each level's regret estimate against its co-player
        parts = level_values(self.score_parts, local)
        scores, best = p.level_scores(c.score, played, flat(best_before)[env_ids], parts)
        scores, best = all_gather((scores, best), axis_name)

        # 4. the learners on the replayed groups (robust), the live co-player where it played
        learners, stats, trained, live_played = self._learn(
            state, pop, slots, replay, played, env_ids, k_update, axis_name
        )

        # 5. each buffer: rescore its replayed levels, insert the new ones played against it
        # (the parents' mutation counts as sampled: a new level may take a replayed slot)
        parent_mutations = bufs.mutations[slots[:, None], idx]
        bufs = SB.rescore_then_insert(
            c.sampler, bufs, slots, replay, idx, levels, grouped(scores), grouped(best)
        )
        edited = jnp.bool_(False)
        if c.edits:  # ACCEL-style children of the replayed levels, against the same co-players
            edited = jnp.any(replay)
            edit = (slots, replay, idx, levels, parent_mutations, k_edit, env_ids, axis_name)
            bufs = jax.lax.cond(
                edited,
                lambda b: self._edit(b, state, learners, pop, *edit),
                lambda b: b,
                bufs,
            )

        # 6. results against each co-player, a snapshot when due
        values = self._level_values(local, axis_name)
        pairs = self._pairs(
            pop, slots, replay, grouped(scores), {k: grouped(v) for k, v in values.items()}
        )
        env_slot = plan.env_slots(slots, env_ids)
        pop, taken = plan.after_update(
            pop, learners, slots, env_slot, played, live_played, axis_name
        )
        metrics = {
            **p.episode_metrics(played.episodes, axis_name),
            **stats,
            **level_means(values),
            **p.agent_steps(played.traj, self.n_envs, self.n_steps, axis_name),
            **pairs,
        }
        steps = self.n_envs * self.n_steps * (1 + edited.astype(jnp.int32))
        return self._finish(
            state, learners, pop, bufs, taken, slots, replay, trained, metrics, steps
        )

    def _parallel_cycle(
        self, state: TrainState, key: jax.Array, env_ids: jax.Array, axis_name: str | None
    ) -> tuple[TrainState, dict[str, jax.Array]]:
        """MAESTRO∥: every group plays a block of new levels and a block of levels replayed
        from its co-player's buffer (fresh ones while that buffer is cold) side by side,
        against the same co-player; the learners train on the replay block only."""
        c, plan, p = self.config, self.plan, self.players
        g, q, n = c.groups, plan.group_size, self.n_envs
        k_pick, k_coin, k_new, k_more, k_sample, k_play, k_update = jax.random.split(key, 7)
        pop, bufs = state.curriculum["population"], state.curriculum["buffers"]
        grouped = lambda x: x.reshape((g, q, *x.shape[1:]))  # noqa: E731
        flat = lambda x: x.reshape((g * q, *x.shape[2:]))  # noqa: E731

        # 1. a co-player per group; its replay block from its buffer where that is warm
        coin = c.parallel_replay == "coin"
        slots, replay, bufs, idx = self._pick(pop, bufs, (k_pick, k_coin, k_sample), coin)
        sampled = bufs  # the buffers as sampled, before this cycle's insertions
        stored = jax.tree.map(lambda x: x[slots[:, None], idx], bufs.levels)
        blocks = {
            "new": self._fresh(k_new),
            "replay": jax.tree.map(
                lambda a, b: jnp.where(replay.reshape((g,) + (1,) * (a.ndim - 1)), a, b),
                stored,
                self._fresh(k_more),
            ),
        }  # (g, q, ...) each
        best_before = {
            "new": SB.stored_best(c.sampler, bufs, slots, blocks["new"]),
            "replay": self._best_before(bufs, slots, replay, idx, blocks["replay"]),
        }

        # 2. one rollout over both blocks, each group against its co-player in both
        layout = Blocks(("new", "replay"), n, env_ids.shape[0])
        local = layout.local({b: jax.tree.map(flat, x) for b, x in blocks.items()}, env_ids)
        both = dataclasses.replace(
            plan, n_envs=2 * n, options=dataclasses.replace(plan.options, groups=2 * g)
        )
        both_slots, both_ids = jnp.concatenate([slots, slots]), layout.env_ids(env_ids)
        played = both.rollout(state, pop, both_slots, k_play, local, both_ids, self.n_steps)

        # 3. each level's regret estimate against its co-player
        parts = level_values(self.score_parts, local)
        before = layout.concat({b: flat(x)[env_ids] for b, x in best_before.items()})
        scores, best = p.level_scores(c.score, played, before, parts)
        scores, best = layout.gather(scores, axis_name), layout.gather(best, axis_name)

        # 4. the learners on the replay block's replayed groups, the live co-player there
        agents = {t: self.env.num_agents(t) for t in played.traj}
        replay_part = layout.played(played, "replay", agents)
        learners, stats, trained, live_played = self._learn(
            state, pop, slots, replay, replay_part, env_ids, k_update, axis_name
        )

        # 5. each buffer: insert the new levels played against it; rescore its replayed
        # levels, or insert the replay block's fresh ones where the group did not replay
        per_group = lambda b: tuple(grouped(x[b]) for x in (scores, best))  # noqa: E731
        new = (blocks["new"], *per_group("new"))
        old = (blocks["replay"], *per_group("replay"))
        bufs = SB.insert_blocks(c.sampler, bufs, sampled, slots, replay, idx, new, old)

        # 6. results against each co-player (both blocks), a snapshot when due
        both_groups = lambda x: jnp.concatenate(  # noqa: E731
            [grouped(x["new"]), grouped(x["replay"])], axis=1
        )  # (g, 2q): a group's levels of both blocks
        values = {
            k: layout.gather(v, axis_name) for k, v in self._level_values(local, None).items()
        }
        pairs = self._pairs(
            pop, slots, replay, both_groups(scores), {k: both_groups(v) for k, v in values.items()}
        )
        pop, taken = plan.after_update(
            pop,
            learners,
            slots,
            both.env_slots(both_slots, both_ids),
            played,
            live_played,
            axis_name,
        )
        metrics = {
            **p.episode_metrics(replay_part.episodes, axis_name),
            **stats,
            **level_means({k: v["replay"] for k, v in values.items()}),
            **p.agent_steps(played.traj, 2 * n, self.n_steps, axis_name),
            **pairs,
        }
        steps = jnp.int32(2 * n * self.n_steps)
        state, metrics = self._finish(
            state, learners, pop, bufs, taken, slots, replay, trained, metrics, steps
        )
        # the episodes of both blocks (the replay block's are the ones trained on)
        every = p.episode_metrics(played.episodes, axis_name)
        return state, {**metrics, **{f"all_blocks/{k}": v for k, v in every.items()}}
